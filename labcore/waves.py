"""Waves and memory-bound time: how CTAs are dealt to the SMs of a GPU and what their HBM bytes cost.

Two layers:

1. the wave arithmetic that the decode time model (lecture §6.4), the megakernel timeline (§8.1, §8.4) and the
   exercises use: ``waves = ceil(blocks / SMs)``, the utilisation of the last wave, the time lost to it, and
   :func:`waves_time` (equal CTAs in waves, with the lecture's ``"full"`` last-wave charge or the ``"shared"`` one);
2. the physical rule for memory-bound time (:data:`MEMORY_RULES` ``"shared"``), the default of every model that
   reproduces no lecture figure: HBM bandwidth shared by the CTAs that are running, each capped at a per-CTA rate
   (:func:`per_cta_bandwidth_cap`, Little's law on the generation's pipeline), with as many CTAs per SM as the
   kernel's resources allow (:func:`kernel_occupancy`). :func:`shared_bandwidth_schedule` deals CTAs of any sizes
   by that rule; :func:`kernel_time` is the one call on a GPU preset.

Sources: the wave-quantisation argument of the lecture §6.4/§8.1; Hazy Research, "Look Ma, No Bubbles!" (2025), 512
blocks on 148 SMs; Little's law; the CUDA C++ Programming Guide's per-SM limits; flash-attn's kernels (commit
0251105a) for the bytes a CTA keeps in flight.
"""
from __future__ import annotations

import numpy as np

from .checks import MAX_ITEMS, at_most, cdiv, choice, positive_float, positive_int, real_array
from .hardware import get_gpu
from .scheduler import Schedule, dispatch_order

__all__ = ["wave_count", "wave_utilization", "idle_sms_last_wave", "tail_time", "LAST_WAVE_RULES", "waves_time",
           "MEMORY_RULES", "SM_LIMITS", "DRAM_LATENCY", "PIPELINE_BYTES_IN_FLIGHT", "per_cta_bandwidth_cap",
           "kernel_occupancy", "shared_bandwidth_schedule", "kernel_time"]

#: The two rules for charging the last wave of :func:`waves_time`.
LAST_WAVE_RULES = ("full", "shared")



def wave_count(blocks: int, sms: int) -> int:
    """Number of waves ``ceil(blocks / sms)`` when each SM runs one block at a time.

    Args:
        blocks, sms: ints >= 1.
    Raises:
        TypeError/ValueError for non-integers or values < 1.
    Source:
        the wave-quantisation argument of the lecture §8.1 (tail effects) and §6.4.
    """
    blocks = positive_int(blocks, "blocks")
    sms = positive_int(sms, "sms")
    return cdiv(blocks, sms)


def wave_utilization(blocks: int, sms: int) -> float:
    """Average SM utilisation ``blocks / (waves x sms)`` of equal blocks, one per SM at a time.

    192 blocks on 132 SMs: 2 waves, 192 / 264 = 73%; 128 blocks: 97% (lecture exercise 12).
    Raises: TypeError/ValueError as :func:`wave_count` (zero SMs is an error).
    """
    return positive_int(blocks, "blocks") / (wave_count(blocks, sms) * positive_int(sms, "sms"))


def idle_sms_last_wave(blocks: int, sms: int) -> int:
    """SMs with nothing to do in the last wave: ``waves x sms - blocks``.

    Hazy's example: 512 blocks on a B200's 148 SMs = 3 x 148 + 68, so 80 SMs idle in the last wave.
    """
    return wave_count(blocks, sms) * positive_int(sms, "sms") - positive_int(blocks, "blocks")


def tail_time(blocks: int, sms: int, block_time: float) -> float:
    """Seconds lost to the last partial wave: ``(waves - blocks / sms) x block_time``.

    ``block_time`` is the seconds one block takes on one SM (> 0). Zero when ``blocks`` is a multiple
    of ``sms``.
    """
    block_time = positive_float(block_time, "block_time")
    return (wave_count(blocks, sms) - blocks / sms) * block_time


def _cta_time(t_c, by, share):
    """``max(t_c, by / share)`` with one full-size temporary (the decode split search calls it on big grids)."""
    t = by / share
    same = np.ndim(t) and t.shape == np.broadcast_shapes(t.shape, np.shape(t_c))
    return np.maximum(t_c, t, out=t if same else None)


def waves_time(blocks, sms: int, compute_time, block_bytes, bandwidth: float, *,
               per_sm_bandwidth_cap: float | None = None, last_wave: str = "full") -> dict:
    """Time of ``blocks`` equal CTAs dealt to ``sms`` SMs in waves, each CTA bound by compute or by its HBM share.

    A CTA takes ``max(compute_time, block_bytes / b)`` where ``b`` is its share of the HBM bandwidth,
    ``b = min(per_sm_bandwidth_cap, bandwidth / running)``. Which ``running`` count a wave uses is the
    explicit last-wave rule:

    - ``"full"`` (the lecture's charge, §6.4): every wave, the last one included, is charged as a full wave:
      ``running = min(blocks, sms)`` for all ``waves = ceil(blocks / sms)`` waves. A mostly empty last wave
      costs as much as a full one, and its CTAs get no more bandwidth than in a full wave.
    - ``"shared"``: the bandwidth is shared among the CTAs actually running in each wave: full waves use
      ``running = sms``, the last wave ``running = blocks - (waves - 1) x sms``, so a lone CTA in the last
      wave gets ``min(cap, bandwidth)`` (the §6 argument that one CTA can pull tens of GB/s).

    Both rules keep each wave as long as its slowest CTA (the CTAs are equal, so every CTA of a wave ends
    together); neither lets the next wave's CTAs start early.

    Args:
        blocks: CTAs (int >= 1 or an int array).
        sms: SMs (int >= 1).
        compute_time: seconds of compute of one CTA (float >= 0 or array broadcasting with ``blocks``).
        block_bytes: HBM bytes one CTA moves (float >= 0 or array).
        bandwidth: HBM bytes/s of the GPU (> 0).
        per_sm_bandwidth_cap: most bytes/s one SM can pull (None: no cap).
        last_wave: ``"full"`` or ``"shared"``.
    Returns:
        dict of arrays (scalars become 0-d arrays): ``waves``, ``running_full`` (CTAs in a full wave),
        ``running_last`` (CTAs in the last wave), ``cta_time_full``, ``cta_time_last`` (s), ``total`` (s).
    Raises:
        TypeError/ValueError: blocks or sms not integers >= 1, negative times or bytes, bandwidth <= 0,
            an unknown ``last_wave``.
    Source:
        lecture §6.4 (CTAs in waves, per-SM bandwidth share); flashbook issue on the shared wave machinery (the two
        last-wave rules).
    """
    last_wave = choice(last_wave, "last_wave", LAST_WAVE_RULES)
    sms = positive_int(sms, "sms")
    bandwidth = positive_float(bandwidth, "bandwidth")
    cap = np.inf if per_sm_bandwidth_cap is None else positive_float(per_sm_bandwidth_cap, "per_sm_bandwidth_cap")
    b = np.asarray(blocks)
    if b.dtype.kind not in "iu" and not (b.dtype.kind == "f" and np.all(b == np.round(b))):
        raise TypeError(f"blocks must be integers, got dtype {b.dtype}")
    b = b.astype(np.int64)
    if np.any(b < 1):
        raise ValueError(f"blocks must be >= 1, got min {int(b.min())}")
    t_c = np.asarray(compute_time, dtype=float)
    by = np.asarray(block_bytes, dtype=float)
    if np.any(t_c < 0) or np.any(by < 0) or not (np.all(np.isfinite(t_c)) and np.all(np.isfinite(by))):
        raise ValueError("compute_time and block_bytes must be finite and >= 0")
    waves = cdiv(b, sms)
    run_full = np.minimum(b, sms)
    run_last = b - (waves - 1) * sms
    t_full = _cta_time(t_c, by, np.minimum(cap, bandwidth / run_full))
    # "full": waves x t_full, computed as such (bit for bit the lecture's product, no rounding of a sum)
    total = waves * t_full
    if last_wave == "full":
        t_last = t_full
    else:
        t_last = _cta_time(t_c, by, np.minimum(cap, bandwidth / run_last))
        # (waves - 1) x t_full + t_last; where the last wave costs a full one, the "full" product itself, and
        # never above it (a sum can round one ulp above the product)
        total = np.where(t_last == t_full, total, np.minimum(total, (waves - 1) * t_full + t_last))
    return {"waves": waves, "running_full": run_full, "running_last": run_last,
            "cta_time_full": t_full, "cta_time_last": t_last, "total": total}


# ------------------------------------------------------------------------------------------------------------------
# The physical memory-bound rule: bandwidth shared by the CTAs that are running, each capped at a per-CTA rate
# ------------------------------------------------------------------------------------------------------------------

#: The two rules for charging HBM time that the book's models offer. ``"lecture"``: every CTA gets a full wave's
#: share ``min(cap, B / SMs)`` whether or not the other SMs are busy (the lecture's §6.4 charge, kept where a
#: lecture figure is reproduced). ``"shared"``: the HBM bandwidth is shared by the CTAs that are running at each
#: moment, each capped at the per-CTA rate of :func:`per_cta_bandwidth_cap`, with as many CTAs per SM as the
#: kernel's resources allow (:func:`kernel_occupancy`): the default of every model that reproduces no lecture figure.
MEMORY_RULES = ("lecture", "shared")

#: Per-SM limits on resident CTAs (compute capabilities 8.0, 9.0 and 10.0 alike): resident threads, resident CTAs,
#: 32-bit registers, the most registers a thread can hold, and the shared memory the runtime reserves per CTA.
#: Source: CUDA C++ Programming Guide, "Compute Capabilities", Table "Technical Specifications per Compute
#: Capability" (2048 threads, 32 blocks, 64 K registers per SM, 255 per thread; 1 KiB of shared memory per block
#: reserved for system use on 8.x and later).
SM_LIMITS = dict(max_threads=2048, max_ctas=32, registers=65536, max_registers_per_thread=255,
                 smem_reserved_per_cta=1024)

#: One DRAM round trip under load, in seconds: the latency of the Little's-law estimate of the per-CTA cap and of
#: each wave's pipeline fill in :mod:`labcore.decode_time` (an assumption of the book's, the same on every GPU).
DRAM_LATENCY = 0.8e-6

#: Bytes one CTA of each generation's decode (split-KV) attention kernel can have in flight from HBM at once: its
#: shared-memory ring of K and V tiles, at d = 128 in BF16. Each value with its source:
#:
#: - ``"ampere"``: 65,536 B (64 KiB): flash-attn 2.x's split-KV kernel on sm80 loads one K and one V tile of
#:   128 keys with ``cp.async``, one tile pair ahead (``csrc/flash_attn/src/flash_fwd_launch_template.h``,
#:   ``run_mha_fwd_splitkv_dispatch``: kBlockN = 128 at d = 128; ``flash_fwd_kernel.h``);
#: - ``"hopper"``: 180,224 B (176 KiB): FlashAttention-3 keeps ``kStages = 2`` stages of K and of V, tiles of
#:   176 keys at d = 128 without a causal mask, fetched by TMA (``hopper/flash_fwd_launch_template.h``,
#:   ``hopper/tile_size.h`` ``tile_size_fwd_sm90``);
#: - ``"blackwell"``: 163,840 B (160 KiB): FlashAttention-4's split-KV forward shares Q's and O's shared memory
#:   and fills the rest of its 224 KiB with ``kv_stage = 5`` stages of 128 x 128 BF16 K or V tiles
#:   (``flash_attn/cute/flash_fwd_sm100.py``, ``overlap_sO_sQ`` and ``kv_stage``).
#:
#: All three at flash-attn commit 0251105a (2026-08-15).
PIPELINE_BYTES_IN_FLIGHT = {"ampere": 65536, "hopper": 180224, "blackwell": 163840}


def per_cta_bandwidth_cap(gpu, *, bytes_in_flight: float | None = None, latency: float | None = None) -> float:
    """Most HBM bytes/s one CTA can pull: Little's law, bytes in flight over one DRAM round trip.

    A CTA streams through a ring of shared-memory tiles; it cannot have more bytes in flight than that ring holds,
    and each byte takes a round trip to arrive, so it reads at most ``bytes_in_flight / latency``. The ring is the
    generation's decode kernel's (:data:`PIPELINE_BYTES_IN_FLIGHT`): an A100 CTA with ``cp.async`` keeps one K and
    V tile pair in flight (64 KiB, about 82 GB/s at 0.8 µs, the lecture's 80 GB/s); a Hopper CTA with TMA and two
    stages keeps 176 KiB (about 225 GB/s); a Blackwell CTA 160 KiB. Left out: the SM's own port to L2, which may
    bind before Little's law does; no source in hand states it.

    Args:
        gpu: preset name or :class:`labcore.hardware.GPU` (its ``architecture``).
        bytes_in_flight: bytes (> 0) to use instead of the generation's ring.
        latency: seconds (> 0); default :data:`DRAM_LATENCY`.
    Returns:
        float bytes/s.
    Raises:
        ValueError: an unknown GPU, a GPU without a known architecture, or a value <= 0.
    Source:
        Little's law; :data:`PIPELINE_BYTES_IN_FLIGHT` (flash-attn kernels at commit 0251105a).
    """
    g = get_gpu(gpu)
    if bytes_in_flight is None:
        if g.architecture not in PIPELINE_BYTES_IN_FLIGHT:
            raise ValueError(f"{g.name} has no known architecture; pass bytes_in_flight= explicitly")
        bytes_in_flight = PIPELINE_BYTES_IN_FLIGHT[g.architecture]
    by = positive_float(bytes_in_flight, "bytes_in_flight")
    lat = DRAM_LATENCY if latency is None else positive_float(latency, "latency")
    return by / lat


def kernel_occupancy(gpu, *, smem_per_cta: int, threads_per_cta: int = 128,
                     registers_per_thread: int = SM_LIMITS["max_registers_per_thread"]) -> dict:
    """How many CTAs of a kernel fit on one SM of ``gpu`` at once, and which resource limits them.

    Each limit of :data:`SM_LIMITS` is divided by what one CTA holds: its shared memory plus the 1 KiB the runtime
    reserves per CTA, against ``gpu.smem_per_sm`` (0 if one CTA exceeds ``gpu.smem_per_block``); its threads against
    2048; its registers (allocated per thread in units of 8, at most 256) against 65,536; and 32 CTAs.

    Args:
        gpu: preset name or :class:`labcore.hardware.GPU`.
        smem_per_cta: bytes of shared memory one CTA uses (int >= 0).
        threads_per_cta: int >= 1 (a multiple of 32 in real kernels).
        registers_per_thread: int in [1, 255] (the compiler's maximum, 255, is an upper bound).
    Returns:
        dict: ``ctas_per_sm`` (int >= 0), ``smem_per_cta``, ``threads_per_cta``, ``registers_per_cta``, the count each
        limit allows (``by_smem``, ``by_threads``, ``by_registers``, ``by_ctas``) and ``limit`` (the binding one).
    Raises:
        TypeError/ValueError: an unknown GPU, sizes that are not integers in range.
    Source:
        :data:`SM_LIMITS` (CUDA C++ Programming Guide, technical specifications per compute capability).
    """
    g, lim = get_gpu(gpu), SM_LIMITS
    smem = positive_int(smem_per_cta, "smem_per_cta", minimum=0)
    threads = positive_int(threads_per_cta, "threads_per_cta")
    rpt = positive_int(registers_per_thread, "registers_per_thread", maximum=lim["max_registers_per_thread"])
    regs = threads * min(-(-rpt // 8) * 8, 256)            # allocated in units of 8 registers per thread
    by = dict(smem=g.smem_per_sm // (smem + lim["smem_reserved_per_cta"]) if smem <= g.smem_per_block else 0,
              threads=lim["max_threads"] // threads, registers=lim["registers"] // regs, ctas=lim["max_ctas"])
    return dict(ctas_per_sm=int(min(by.values())), smem_per_cta=int(smem), threads_per_cta=threads,
                registers_per_cta=int(regs), **{f"by_{k}": int(v) for k, v in by.items()},
                limit=min(by, key=by.get))


def _water_fill(caps: np.ndarray, total: float) -> np.ndarray:
    """Max-min fair shares of ``total`` among consumers each capped at ``caps`` (inf allowed): the smallest caps are
    met in full and the rest split what is left equally."""
    if caps.size == 0:
        return caps
    # Caps near the largest float64 (a per-CTA cap of 1e308) sum to inf: that only says "more than total", which is
    # what the comparisons below need, so numpy's overflow warning is silenced rather than shown to a reader.
    with np.errstate(over="ignore", invalid="ignore"):
        if np.all(np.isfinite(caps)) and caps.sum() <= total:
            return caps.copy()
        order = np.argsort(caps, kind="stable")
        c = caps[order]
        n = c.size
        spent = np.concatenate([[0.0], np.cumsum(np.where(np.isfinite(c), c, 0.0))[:-1]])
        level = (total - spent) / (n - np.arange(n))             # the equal share if consumers k.. are uncapped
    k = int(np.argmax(c >= level))                              # the first consumer the level does not satisfy
    out = np.empty(n)
    out[:k] = c[:k]
    out[k:] = level[k]
    res = np.empty(n)
    res[order] = out
    return res


def shared_bandwidth_schedule(item_bytes, *, slots: int, bandwidth: float, per_cta_cap: float | None = None,
                              compute_time=0.0, sms: int | None = None, order="launch"):
    """CTAs of unequal size on ``slots`` slots, the HBM bandwidth shared by the CTAs that are running.

    The fluid form of the physical rule (:data:`MEMORY_RULES` ``"shared"``). CTAs are dispatched in ``order`` to the
    lowest free slot as slots free up (the hardware block scheduler with a grid, or a persistent kernel's tile
    counter); slot ``s`` sits on SM ``s mod sms``. At every moment each running CTA may read at most
    ``min(per_cta_cap, bytes / (compute_time x CTAs on its SM))`` bytes/s (its pipeline, and its share of its SM's
    tensor cores: a CTA streams its bytes no faster than it computes on them), and the running CTAs share
    ``bandwidth`` max-min fairly within those caps (the capped ones take their cap, the others split the rest
    equally). A CTA ends when its bytes are read; the time advances from one CTA's end to the next. For equal CTAs
    this gives :func:`waves_time` with ``last_wave="shared"`` exactly when one CTA runs per SM; when ``sms < slots``
    it is never slower (CTAs that share an SM with fewer others end sooner). Left out: which SMs' tensor cores idle
    while a CTA waits for bytes (each running CTA is charged an equal share of its SM).

    Args:
        item_bytes: (n,) HBM bytes each CTA moves (finite, >= 0).
        slots: resident CTA slots, SMs x CTAs per SM (int >= 1).
        bandwidth: HBM bytes/s of the GPU (> 0).
        per_cta_cap: most bytes/s one CTA can pull (> 0), or None for no cap (:func:`per_cta_bandwidth_cap`).
        compute_time: seconds of compute of each CTA alone on an SM (float >= 0 or an (n,) array).
        sms: SMs the slots spread over (int in [1, slots]; default ``slots``: one CTA per SM).
        order: ``"launch"``, ``"longest_first"``, ``"lpt"`` or a permutation of ``range(n)``
            (:func:`labcore.scheduler.dispatch_order`, sorted by each CTA's time alone).
    Returns:
        :class:`labcore.scheduler.Schedule` (``costs``: each CTA's time alone on a GPU of its own,
        ``max(compute_time, bytes / min(cap, bandwidth))``; ``start``, ``end`` as simulated; ``makespan``).
    Raises:
        TypeError/ValueError: bytes or times not finite and >= 0, sizes < 1, ``sms > slots``, bandwidth <= 0, an
            unknown order.
    Source:
        Little's law and max-min fair sharing of one memory channel (processor sharing); the block scheduler's dispatch
        as :func:`labcore.scheduler.list_schedule` (Graham 1969).
    """
    by = real_array(item_bytes, "item_bytes", ndim=1, allow_empty=True)
    if np.any(by < 0):
        raise ValueError("item_bytes must be >= 0")
    at_most(by.size, "item_bytes", MAX_ITEMS, "items")
    n = by.size
    slots = positive_int(slots, "slots")
    sms = slots if sms is None else positive_int(sms, "sms", maximum=slots)
    bw = positive_float(bandwidth, "bandwidth")
    cap = np.inf if per_cta_cap is None else positive_float(per_cta_cap, "per_cta_cap")
    tc = np.broadcast_to(np.asarray(compute_time, dtype=float), by.shape).copy() if n else np.zeros(0)
    if tc.shape != by.shape or np.any(~np.isfinite(tc)) or np.any(tc < 0):
        raise ValueError(f"compute_time must be a finite float >= 0 or an array of {n} of them")
    alone = np.maximum(tc, by / min(cap, bw))
    seq = dispatch_order(alone, order).tolist()
    slot_of, start, end = np.zeros(n, np.int64), np.zeros(n), np.zeros(n)
    left = np.ones(n)                                        # share of each CTA's work still to do
    free = list(range(slots))                                # free slots, lowest first
    running: list[int] = []
    t, nxt = 0.0, 0
    while nxt < n or running:
        while free and nxt < n:                              # fill every free slot, lowest index first
            free.sort()
            s = free.pop(0)
            i = seq[nxt]
            nxt += 1
            slot_of[i], start[i] = s, t
            running.append(i)
        r = np.asarray(running)
        on_sm = np.bincount(slot_of[r] % sms, minlength=sms)[slot_of[r] % sms]
        t_min = tc[r] * on_sm                                 # the CTA's compute at its share of its SM
        rate_cap = np.where(t_min > 0, np.minimum(cap, by[r] / np.where(t_min > 0, t_min, 1.0)), cap)
        share = _water_fill(np.where(by[r] > 0, rate_cap, 0.0), bw)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(by[r] > 0, share / by[r], np.where(t_min > 0, 1.0 / t_min, np.inf))
        dt_each = np.where(np.isinf(rate), 0.0, left[r] / rate)
        dt = float(dt_each.min())
        done = dt_each <= dt * (1 + 1e-12) + 1e-300
        t += dt
        left[r] = np.where(done, 0.0, left[r] - np.where(np.isinf(rate), 0.0, rate) * dt)
        for i in r[done].tolist():
            end[i] = t
            running.remove(i)
            free.append(int(slot_of[i]))
    return Schedule.from_times(alone, slots, np.asarray(seq, np.int64), slot_of, start, end)


def kernel_time(gpu, item_bytes, *, compute_time=0.0, ctas_per_sm=1, smem_per_cta: int | None = None,
                threads_per_cta: int = 128, per_cta_cap: float | None = None, order="launch") -> dict:
    """The physical memory-bound rule on a GPU preset: one kernel's CTAs, bandwidth shared by the running ones.

    The one call a model makes to charge a kernel by the rule :data:`MEMORY_RULES` ``"shared"`` names: the slots are
    ``gpu.num_sms x`` CTAs per SM (``ctas_per_sm``, or derived from the kernel's shared memory and threads by
    :func:`kernel_occupancy` when ``ctas_per_sm="derived"``), each CTA capped at :func:`per_cta_bandwidth_cap` of the
    GPU's generation unless ``per_cta_cap`` is given, and :func:`shared_bandwidth_schedule` deals the CTAs.

    Args:
        gpu: preset name or :class:`labcore.hardware.GPU`.
        item_bytes: (n,) HBM bytes of each CTA (>= 0).
        compute_time: seconds of compute of each CTA alone on an SM (float or (n,) array, >= 0).
        ctas_per_sm: int >= 1, or ``"derived"`` (needs ``smem_per_cta``).
        smem_per_cta: bytes of shared memory one CTA uses (for ``"derived"``).
        threads_per_cta: threads of one CTA (for ``"derived"``; default 128, four warps).
        per_cta_cap: bytes/s (> 0); default the generation's (:func:`per_cta_bandwidth_cap`).
        order: dispatch order (as :func:`shared_bandwidth_schedule`).
    Returns:
        dict ``total`` (s, the makespan), ``schedule`` (:class:`labcore.scheduler.Schedule`), ``ctas_per_sm``,
        ``slots``, ``per_cta_cap`` (bytes/s), ``floor`` (all bytes at full bandwidth, s).
    Raises:
        TypeError/ValueError: as :func:`shared_bandwidth_schedule`; ``"derived"`` without ``smem_per_cta``; a kernel
            whose CTA does not fit on an SM.
    Source:
        as :func:`shared_bandwidth_schedule`, :func:`kernel_occupancy` and :func:`per_cta_bandwidth_cap`.
    """
    g = get_gpu(gpu)
    if isinstance(ctas_per_sm, str):
        if ctas_per_sm != "derived":
            raise ValueError(f"ctas_per_sm must be an int >= 1 or 'derived', got {ctas_per_sm!r}")
        if smem_per_cta is None:
            raise ValueError("ctas_per_sm='derived' needs smem_per_cta (bytes of shared memory one CTA uses)")
        occ = kernel_occupancy(g, smem_per_cta=smem_per_cta, threads_per_cta=threads_per_cta)["ctas_per_sm"]
        if occ < 1:
            raise ValueError(f"one CTA of {smem_per_cta} bytes of shared memory does not fit on an SM of {g.name}")
    else:
        occ = positive_int(ctas_per_sm, "ctas_per_sm")
    cap = per_cta_bandwidth_cap(g) if per_cta_cap is None else positive_float(per_cta_cap, "per_cta_cap")
    s = shared_bandwidth_schedule(item_bytes, slots=g.num_sms * occ, bandwidth=g.hbm_bandwidth, per_cta_cap=cap,
                                  compute_time=compute_time, sms=g.num_sms, order=order)
    return {"total": s.makespan, "schedule": s, "ctas_per_sm": occ, "slots": g.num_sms * occ, "per_cta_cap": cap,
            "floor": float(np.sum(np.asarray(item_bytes, dtype=float))) / g.hbm_bandwidth}
