"""Decode-time attention, the performance model: CTAs x waves (lecture §6.3-§6.4).

:func:`decode_attention_time` estimates one decode-attention call (the kernels of :mod:`labcore.decode`)
on a GPU preset as ``waves x per-CTA time + kernels x launch cost``, where a CTA's time is the larger of
its padded tensor-core FLOPs and its HBM bytes, each over the SM's share of the machine, and
``waves = ceil(CTAs / SMs)``. The waves are dealt by the one wave machinery of the book,
:func:`labcore.waves.waves_time`, and how the last wave is charged is the explicit assumption
``last_wave`` (``"full"``, the lecture's charge and the default; or ``"shared"``). Every parameter is a named keyword with its
justification, defaults in :data:`MODEL_DEFAULTS`. ``variant="refined"`` adds three costs the base model
leaves out (partial-output traffic and the combine kernel's reads, a pipeline-fill latency per wave, and
the HBM bandwidth a real kernel can reach); their values are fixed in advance from independent sources,
never fitted to the measurements. :func:`decode_time_grid` evaluates the same model on whole
(batch, seqlen) grids with numpy broadcasting; :func:`best_num_splits` is the model's argmin over splits.

flash-attn's split heuristic lives in :mod:`labcore.splits`; the model shapes and the published A100
micro-benchmark in :mod:`labcore.decode_model`.

Sources: dao2023flashdecoding (PyTorch blog, 2023-10-13); FlashAttention-2 (Dao 2023) for the 128-row Q
tile and the 50-73% efficiency.
"""
from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass

import numpy as np

from .checks import cdiv, choice, int_array, positive_int, resolve_params
from .decode import MAX_SPLITS, kv_cache_bytes
from .hardware import GPU, get_gpu
from .splits import MAX_BATCH, MAX_SEQLEN, decode_shape, flash_attn_block_n, flash_attn_splits
from .waves import DRAM_LATENCY, LAST_WAVE_RULES, SM_LIMITS, kernel_occupancy, waves_time

__all__ = ["MODEL_DEFAULTS", "DecodeEstimate", "DECODE_METHODS", "DECODE_VARIANTS", "SPLIT_MODES",
           "SM_LIMITS", "KERNEL_RESOURCES", "decode_ctas_per_sm",
           "decode_attention_time", "decode_time_grid", "best_num_splits"]

DECODE_METHODS = ("fa2", "flash_decoding")
DECODE_VARIANTS = ("base", "refined")
#: The named split rules :func:`decode_attention_time` accepts besides an int: the model's argmin, and
#: flash-attn's heuristic before / since 2.5.7 (which doubles the SM count).
SPLIT_MODES = ("best", "heuristic", "heuristic-2.5.7")

#: Defaults of every model assumption of :func:`decode_attention_time` (keyword -> value, SI units), each with
#: its justification in a comment here and in that function's docstring. Read-only by convention: pass
#: overrides as keywords (``decode_attention_time(..., efficiency=0.6)``); the §6 page reads the values.
MODEL_DEFAULTS = dict(
    efficiency=0.7,  # FlashAttention-2 forward reaches 50-73% of A100 peak (Dao 2023): take 0.7
    per_sm_bandwidth_cap=80e9,  # Little's law: ~64 KiB (65,536 B) in flight per SM / ~0.8 us DRAM latency = 80 GB/s
    kernel_overhead=5e-6,  # launch + prologue + tail of one kernel, ~5 us: the lecture's (§6.3), assumed, not measured;
    # Hazy: 2.1 us bare launch on a stream, 1.3 us in a CUDA graph; xformers' decode benchmark replays in a graph
    ctas_per_sm=1,  # CTAs resident per SM in a wave: the lecture's 1; "derived" = decode_ctas_per_sm (2 on an A100)
    fa2_block_m=128,  # FlashAttention-2 forward kernel Q tile (rows) on A100 for d = 128
    fa2_block_n=64,  # FlashAttention-2 (v2.0.9) forward kernel KV tile on A100 for d = 128 (its shared memory)
    fd_block_m=64,  # flash-attn split-KV kernel Q tile; the GQA group is packed and padded to it
    block_n=None,  # KV tile length; None -> flash-attn's rule (256 if d <= 64, 128 if d <= 128, else 64)
    max_splits=128,  # flash-attn caps splits at 128
    dtype_bytes=2,  # FP16/BF16 K, V, q, O
    # refined variant only:
    partial_dtype_bytes=4,  # flash-attn stores per-split o_s and lse_s in FP32 (ElementAccum = float)
    wave_latency=DRAM_LATENCY,  # one DRAM round trip to fill each wave's pipeline (the latency in Little's law)
    bandwidth_efficiency=0.9,  # best streaming kernels reach ~88-90% of A100 datasheet HBM bandwidth
    # both variants:
    last_wave="full",  # the lecture's charge: a partial last wave costs a full one (labcore.waves.waves_time)
)


@dataclass(frozen=True)
class DecodeEstimate:
    """One decode-attention time estimate (all times in seconds, bytes in bytes, FLOPs in FLOP).

    Attributes:
        gpu, method, variant: what was modelled. batch, seqlen, num_q_heads, num_kv_heads, head_dim: shape.
        num_splits: splits per (sequence, KV head) (1 for FlashAttention-2).
        num_ctas: CTAs of the main kernel. num_sms: SMs of the GPU. ctas_per_sm: CTAs resident per SM (the
            ``ctas_per_sm`` assumption, resolved). waves: ``ceil(num_ctas / (num_sms x ctas_per_sm))``.
        active_sms: SMs busy in a full wave, ``min(num_ctas, num_sms)``.
        rows_real, rows_padded: query rows per CTA that are real / that the tensor cores compute.
        keys_per_cta: keys of the longest split. flops_per_cta: padded tensor-core FLOPs per CTA.
        bytes_per_cta: HBM bytes one CTA moves. flops_per_sm: effective FLOP/s of one SM (x efficiency).
        bandwidth_per_sm: bytes/s one SM gets. compute_time, memory_time: per-CTA terms; cta_time their max.
        num_kernels: 1, or 2 with the combine kernel. launch_time: ``num_kernels x kernel_overhead``.
        combine_time: the combine kernel's traffic time (refined only; 0 in base).
        latency_time: ``waves x wave_latency`` (refined only). total: the estimate.
        bound: ``"compute"`` or ``"memory"`` (which per-CTA term is larger).
        kv_bytes: bytes of K and V for the whole batch (the floor: read the cache once).
        useful_flops: FLOPs on real rows only (``4 x batch x H_q x seqlen x d``).
        last_wave: the last-wave rule used (``"full"`` or ``"shared"``, see :func:`labcore.waves.waves_time`).
        running_last: CTAs running in the last wave. cta_time_last: a CTA's time in the last wave (s); equal
            to ``cta_time`` under ``"full"``, at most ``cta_time`` under ``"shared"``. ``bandwidth_per_sm``,
            ``memory_time``, ``cta_time`` and ``bound`` are those of a full wave.
    """

    gpu: str
    method: str
    variant: str
    batch: int
    seqlen: int
    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    num_splits: int
    num_ctas: int
    num_sms: int
    waves: int
    active_sms: int
    rows_real: int
    rows_padded: int
    keys_per_cta: int
    flops_per_cta: float
    bytes_per_cta: float
    flops_per_sm: float
    bandwidth_per_sm: float
    compute_time: float
    memory_time: float
    cta_time: float
    num_kernels: int
    launch_time: float
    combine_time: float
    latency_time: float
    total: float
    bound: str
    kv_bytes: float
    useful_flops: float
    last_wave: str = "full"
    running_last: int = 0
    cta_time_last: float = 0.0
    ctas_per_sm: int = 1

    @property
    def total_us(self) -> float:
        """``total`` in microseconds (display only)."""
        return self.total * 1e6

    @property
    def wave_efficiency(self) -> float:
        """Fraction of CTA slots busy over all waves: ``num_ctas / (waves x num_sms x ctas_per_sm)``."""
        return self.num_ctas / (self.waves * self.num_sms * self.ctas_per_sm)

    @property
    def padding_waste(self) -> float:
        """Fraction of tensor-core rows that are padding: ``1 - rows_real / rows_padded``."""
        return 1.0 - self.rows_real / self.rows_padded

    def as_dict(self) -> dict:
        """All fields as a plain dict."""
        return asdict(self)




#: What one CTA of each decode kernel holds: its Q tile (``block_m`` keyword), its KV tile (``block_n`` keyword
#: or flash-attn's rule), its warps, and its registers per thread (not published: the compiler's maximum, an
#: upper bound). Shared memory = (Q tile + K tile + V tile) x d x 2 bytes (no Q/K sharing at decode).
#: Sources: flash-attn v2.0.9 ``flash_fwd_launch_template.h`` (``run_mha_fwd_hdim128``: 128 x 64 tile, 4 warps on
#: sm80, 64 KiB = 65,536 B); flash-attn >= 2.2 ``run_mha_fwd_splitkv_dispatch`` (kBlockM 64, kBlockN 256/128/64,
#: 4 warps: 80 KiB = 81,920 B at d = 128); flash-attn >= 2.5.7 ``flash_api.cpp``, "We multiply number of SMs by 2 to hard-code the
#: fact that we're using 128 threads per block".
KERNEL_RESOURCES = {
    "fa2": dict(block_m="fa2_block_m", block_n="fa2_block_n", warps=4, registers_per_thread=255),
    "flash_decoding": dict(block_m="fd_block_m", block_n="block_n", warps=4, registers_per_thread=255),
}


def _occupancy(gpu: GPU, method: str, d: int, p: dict) -> dict:
    """CTAs per SM that the kernel's shared memory, threads and registers allow on ``gpu`` (see decode_ctas_per_sm)."""
    k = KERNEL_RESOURCES[method]
    bm = p[k["block_m"]]
    bn = p[k["block_n"]] or flash_attn_block_n(d)
    return kernel_occupancy(gpu, smem_per_cta=(bm + 2 * bn) * d * p["dtype_bytes"], threads_per_cta=32 * k["warps"],
                            registers_per_thread=k["registers_per_thread"])


def decode_ctas_per_sm(gpu, *, method, head_dim, **assumptions) -> dict:
    """How many CTAs of a decode kernel fit on one SM of ``gpu`` at once (its occupancy), and what limits it.

    Each limit of :data:`SM_LIMITS` is divided by what one CTA of the kernel holds (:data:`KERNEL_RESOURCES`):
    shared memory ``(block_m + 2 block_n) x d x dtype_bytes`` plus the 1 KiB (1,024 B) the runtime reserves per CTA, against
    ``gpu.smem_per_sm``; 128 threads against 2048; 128 x 256 registers (255 per thread, the compiler's
    maximum, an upper bound: flash-attn does not publish its count) against 65,536; and 32 CTAs. On an A100
    (164 KiB per SM) at d = 128 both FlashAttention-2's 128 x 64 kernel (64 KiB, 65,536 B) and the split kernel
    (64 x 128, 80 KiB, 81,920 B) fit two CTAs per SM, the factor flash-attn >= 2.5.7 hard-codes into its split heuristic.

    Args:
        gpu: preset name or :class:`labcore.hardware.GPU`.
        method: ``"fa2"`` or ``"flash_decoding"``.
        head_dim: int >= 1.
        assumptions: overrides of :data:`MODEL_DEFAULTS` (``fa2_block_m``, ``fa2_block_n``, ``fd_block_m``,
            ``block_n``, ``dtype_bytes``).
    Returns:
        dict: ``ctas_per_sm`` (int >= 0; 0 if one CTA's tiles exceed ``gpu.smem_per_block``), ``smem_per_cta``
        (bytes), ``threads_per_cta``, ``registers_per_cta``, the count each limit allows (``by_smem``,
        ``by_threads``, ``by_registers``, ``by_ctas``) and ``limit`` (the name of the binding one).
    Raises:
        ValueError for an unknown GPU or method or a bad assumption; TypeError for an unknown keyword.
    Source:
        :data:`SM_LIMITS` (CUDA C++ Programming Guide); :data:`KERNEL_RESOURCES` (flash-attn source).
    """
    gpu = get_gpu(gpu)
    method = choice(method, "method", DECODE_METHODS)
    p = _params(assumptions)
    return _occupancy(gpu, method, positive_int(head_dim, "head_dim"), p)


def _params(assumptions: dict) -> dict:
    """:data:`MODEL_DEFAULTS` with the caller's overrides, checked (``ctas_per_sm``: an int >= 1 or "derived")."""
    p = resolve_params(assumptions, MODEL_DEFAULTS, _RULES)
    if not (isinstance(p["ctas_per_sm"], str) and p["ctas_per_sm"] == "derived"):
        if isinstance(p["ctas_per_sm"], str):
            raise ValueError(f"ctas_per_sm must be an int >= 1 or 'derived', got {p['ctas_per_sm']!r}")
        p["ctas_per_sm"] = positive_int(p["ctas_per_sm"], "ctas_per_sm")
    return p


#: How each assumption of :data:`MODEL_DEFAULTS` is checked (rules of :data:`labcore.checks.PARAM_RULES`).
_RULES = {"efficiency": "fraction", "bandwidth_efficiency": "fraction", "last_wave": LAST_WAVE_RULES,
          **dict.fromkeys(("per_sm_bandwidth_cap", "dtype_bytes", "partial_dtype_bytes"), "positive"),
          **dict.fromkeys(("kernel_overhead", "wave_latency"), "non-negative"),
          **dict.fromkeys(("fa2_block_m", "fa2_block_n", "fd_block_m", "max_splits"), "count"),
          "block_n": "count or None"}


def _core(gpu: GPU, batch, seqlen, splits, hq, hkv, d, method, variant, p, lean=False):
    """Vectorised model: batch, seqlen, splits broadcast together. Returns a dict of arrays keyed as the fields
    of :class:`DecodeEstimate` that the model computes.

    ``lean=True`` returns only ``total`` (the split search over a whole grid uses it).
    """
    refined = variant == "refined"
    g = hq // hkv
    db, pb = p["dtype_bytes"], p["partial_dtype_bytes"]
    bw = gpu.hbm_bandwidth * (p["bandwidth_efficiency"] if refined else 1.0)
    batch = np.asarray(batch, dtype=np.int64)
    seqlen = np.asarray(seqlen, dtype=np.int64)
    splits = np.asarray(splits, dtype=np.int64)
    if method == "fa2":
        splits = np.ones_like(splits)
        rows_real, rows_pad, m_blocks = 1, p["fa2_block_m"], 1
        ctas = batch * hq
        keys = seqlen
        writes = rows_real * d * db
    else:
        m_blocks = cdiv(g, p["fd_block_m"])
        rows_real, rows_pad = min(g, p["fd_block_m"]), p["fd_block_m"]
        ctas = batch * hkv * m_blocks * splits
        keys = cdiv(seqlen, splits)  # the longest split sets the wave's time
        writes = np.where(splits > 1, rows_real * (d + 1) * pb, rows_real * d * db)
    flops = 4.0 * rows_pad * keys * d  # QK^T and PV, 2 FLOP per multiply-add, padded rows included
    bytes_ = 2.0 * keys * d * db + rows_real * d * db  # K, V of the split + the real q rows
    if refined:
        bytes_ = bytes_ + writes
    f_sm = gpu.tensor_flops_per_sm * p["efficiency"]
    t_c = flops / f_sm
    # occupancy: a wave has SMs x CTAs-per-SM slots; co-resident CTAs share their SM's tensor cores, so a CTA's
    # compute time is t_c x the CTAs on the busiest SM; the per-SM bandwidth cap is each CTA's own pipeline
    occ = p["ctas_per_sm"]
    occ = max(1, _occupancy(gpu, method, d, p)["ctas_per_sm"]) if occ == "derived" else occ
    sms, slots, cap = gpu.num_sms, gpu.num_sms * occ, p["per_sm_bandwidth_cap"]
    k_full = cdiv(np.minimum(ctas, slots), sms)
    # the CTAs in waves, the last one charged by the ``last_wave`` rule (the one wave machinery)
    w = waves_time(ctas, slots, t_c * k_full if occ > 1 else t_c, bytes_, bw, per_sm_bandwidth_cap=cap,
                   last_wave=p["last_wave"])
    if occ > 1 and p["last_wave"] == "shared":   # the last wave's CTAs also share fewer SMs' tensor cores
        run_last, t_full = w["running_last"], w["cta_time_full"]
        t_last = np.maximum(t_c * cdiv(run_last, sms), bytes_ / np.minimum(cap, bw / run_last))
        full_total = w["waves"] * t_full
        w["cta_time_last"] = t_last
        w["total"] = np.where(t_last >= t_full, full_total, np.minimum(full_total, (w["waves"] - 1) * t_full + t_last))
    waves, active = w["waves"], np.minimum(w["running_full"], sms)
    n_k = np.where(splits > 1, 2, 1) if method == "flash_decoding" else np.ones_like(splits)
    launch = n_k * p["kernel_overhead"]
    # terms that do not depend on seqlen stay small (no broadcast over the whole grid)
    if refined and method == "flash_decoding":
        comb_bytes = batch * hq * (splits * (d + 1) * pb + d * db)
        combine = np.where(splits > 1, comb_bytes / bw, 0.0)
    else:
        combine = np.zeros(np.broadcast(batch, splits).shape)
    latency = waves * p["wave_latency"] if refined else np.zeros(np.shape(waves))
    extra = launch + combine + latency
    total = w["total"]  # a fresh array: add the fixed costs in place when the shapes allow
    same = np.ndim(total) and total.shape == np.broadcast_shapes(total.shape, np.shape(extra))
    total = np.add(total, extra, out=total if same else None)
    if lean:
        return {"total": total}
    b_sm = np.minimum(cap, bw / w["running_full"])  # a CTA's share in a full wave (for display)
    # keys named as the fields of DecodeEstimate
    return dict(num_splits=splits, num_ctas=ctas, waves=waves, active_sms=active, ctas_per_sm=occ,
                rows_real=rows_real, rows_padded=rows_pad, keys_per_cta=keys, flops_per_cta=flops,
                bytes_per_cta=bytes_, flops_per_sm=f_sm, bandwidth_per_sm=b_sm, compute_time=t_c * k_full,
                memory_time=bytes_ / b_sm, cta_time=w["cta_time_full"], running_last=w["running_last"],
                cta_time_last=w["cta_time_last"], num_kernels=n_k, launch_time=launch, combine_time=combine,
                latency_time=latency, total=total)


def _max_model_splits(seqlen, block_n, max_splits):
    """Largest split count the model searches: a split holds at least one KV block."""
    return np.minimum(max_splits, cdiv(np.asarray(seqlen), block_n))


def _best_grid(gpu, batch, seqlen, hq, hkv, d, variant, p):
    """Argmin over splits 1..max of the model time, vectorised; returns (best_splits, best_total).

    ``batch`` and ``seqlen`` keep their own (broadcastable) shapes so that per-batch and per-seqlen terms
    are computed once, not once per grid cell.
    """
    bn = p["block_n"] or flash_attn_block_n(d)
    batch, seqlen = _lift(np.asarray(batch), np.asarray(seqlen))
    smax = _max_model_splits(seqlen, bn, p["max_splits"])
    top = int(np.max(smax))
    s = np.arange(1, top + 1).reshape((top,) + (1,) * batch.ndim)
    t = _core(gpu, batch[None], seqlen[None], s, hq, hkv, d, "flash_decoding", variant, p, lean=True)["total"]
    t += np.where(s <= smax[None], 0.0, np.inf)  # a split holds at least one KV tile
    i = np.argmin(t, axis=0)
    return i + 1, np.take_along_axis(t, i[None], axis=0)[0]


def _lift(a, b):
    """Give two arrays the same number of dimensions (leading 1s) without broadcasting their sizes."""
    nd = max(a.ndim, b.ndim)
    return a.reshape((1,) * (nd - a.ndim) + a.shape), b.reshape((1,) * (nd - b.ndim) + b.shape)


def _resolve_splits(gpu, num_splits, batch, seqlen, hq, hkv, d, method, variant, p):
    if method == "fa2":
        if isinstance(num_splits, (bool, np.bool_)) or not (
                num_splits is None or (isinstance(num_splits, (str, numbers.Integral)) and num_splits in (1, "best"))):
            raise ValueError("method 'fa2' does not split the KV sequence; num_splits must be None, 1 or 'best', "
                             f"got {num_splits!r}")
        return np.ones(np.broadcast(batch, seqlen).shape, dtype=np.int64)
    if num_splits is None or (isinstance(num_splits, str) and num_splits == "best"):
        return _best_grid(gpu, batch, seqlen, hq, hkv, d, variant, p)[0]
    if isinstance(num_splits, str):
        choice(num_splits, "num_splits", SPLIT_MODES)
        return flash_attn_splits(gpu, batch, seqlen, hq, hkv, d, sm_doubling=(num_splits == "heuristic-2.5.7"))
    splits = int_array(num_splits, "num_splits", maximum=MAX_SPLITS)
    s_b, n_b = np.broadcast_arrays(splits, seqlen)
    over = s_b > n_b
    if np.any(over):
        raise ValueError(f"num_splits must not exceed seqlen (every split needs at least one key); got "
                         f"num_splits={int(s_b[over].flat[0])} for seqlen={int(n_b[over].flat[0])}")
    return splits


#: The integer fields of :class:`DecodeEstimate` that the model computes (the others are floats).
_COUNT_FIELDS = ("num_splits", "num_ctas", "waves", "active_sms", "ctas_per_sm", "rows_real", "rows_padded",
                 "keys_per_cta", "num_kernels", "running_last")


def decode_attention_time(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim, method,
                          num_splits=None, variant="base", **assumptions) -> DecodeEstimate:
    """CTA x wave time model of one decode-attention call (one new query per sequence, one layer).

    Model (lecture §6.3), for the main kernel:

    - per-CTA time = max(padded FLOPs / (tensor FLOP/s per SM x ``efficiency``),
      bytes / per-SM bandwidth);
    - per-SM bandwidth = min(``per_sm_bandwidth_cap``, HBM bandwidth / SMs active in a full wave);
    - total = waves x per-CTA time + kernels x ``kernel_overhead``, waves = ceil(CTAs / SMs).

    The waves come from :func:`labcore.waves.waves_time`; the last bullet is its ``last_wave="full"`` rule,
    the lecture's charge. With ``last_wave="shared"`` the last wave's CTAs share the HBM bandwidth among
    themselves only (a lone CTA gets up to ``per_sm_bandwidth_cap``), so total = (waves - 1) x per-CTA time
    + the last wave's per-CTA time + kernels x ``kernel_overhead``; never more than under ``"full"``.

    ``method="fa2"`` (FlashAttention-2 at decode): one CTA per (sequence, query head), each reading its
    KV head's whole cache and computing a ``fa2_block_m``-row Q tile of which 1 row is real.
    ``method="flash_decoding"``: one CTA per (sequence, KV head, split); the g = H_q/H_kv query heads of
    a group are packed as rows of a ``fd_block_m``-row tile (padded); with more than one split a second
    (combine) kernel merges the partial results.

    ``variant="refined"`` adds, with values fixed in advance (not fitted to any measurement):
    the bytes each CTA writes (``partial_dtype_bytes`` FP32 ``o_s`` and ``lse_s`` per split, or the FP16
    output); the combine kernel's traffic (read every partial, write O) at HBM bandwidth; one
    ``wave_latency`` per wave (each wave's pipelines start empty: the first K/V tile is a full DRAM round
    trip away); and HBM bandwidth derated to ``bandwidth_efficiency`` of the datasheet value.

    Assumptions (keywords; defaults in :data:`MODEL_DEFAULTS`):

    - ``efficiency=0.7``: fraction of tensor-core peak a CTA sustains; FlashAttention-2 reaches 50-73% of A100 peak (Dao 2023).
    - ``per_sm_bandwidth_cap=80e9 B/s``: Little's law, ~64 KiB (65,536 B) in flight per SM over ~0.8 us latency
      (the lecture's A100 figure; :func:`labcore.waves.per_cta_bandwidth_cap` gives each generation's).
    - ``kernel_overhead=5e-6 s``: launch, prologue and tail of one kernel.
    - ``fa2_block_m=128``: FlashAttention-2's Q tile rows (A100, d = 128).
    - ``fd_block_m=64``: flash-attn's split-KV kernel Q tile; flash-decoding pads the GQA group to it.
    - ``block_n=None``: KV tile length (None: flash-attn's rule, :func:`flash_attn_block_n`); the model's split search keeps at least one KV tile per split.
    - ``max_splits=128``: flash-attn's cap on splits. dtype_bytes=2: FP16/BF16.
    - ``partial_dtype_bytes=4 (refined)``: flash-attn keeps ``o_s`` and ``lse_s`` in FP32.
    - ``wave_latency=0.8e-6 s (refined)``: the DRAM latency of the Little's-law estimate.
    - ``last_wave="full"``: how the last wave is charged (:data:`labcore.waves.LAST_WAVE_RULES`). ``"full"`` (the
      lecture's charge, default; every figure of the lecture uses it): a partial last wave costs a full one and
      its CTAs get a full wave's bandwidth share. ``"shared"``: the CTAs of the last wave share the bandwidth
      among themselves (§6's argument that a lone CTA can pull tens of GB/s). Neither lets the next wave start early.
    - ``bandwidth_efficiency=0.9 (refined)``: the best streaming kernels reach ~88-90% of the A100's datasheet bandwidth (NVIDIA developer forum, "Trouble to reach peak bandwidth of A100", quoting a GTC measurement; Nsight Compute agrees).

    Args:
        gpu: preset name (``"A100"``, ``"H100"``, ...) or :class:`labcore.hardware.GPU`.
        batch, seqlen: ints >= 1 (sequences; keys in the cache).
        num_q_heads, num_kv_heads, head_dim: ints >= 1, ``H_q`` a multiple of ``H_kv``.
        method: ``"fa2"`` or ``"flash_decoding"``.
        num_splits: int >= 1; None or ``"best"`` (the model's argmin, :func:`best_num_splits`);
            ``"heuristic"`` (flash-attn 2.x's heuristic with the real SM count, as before 2.5.7) or
            ``"heuristic-2.5.7"`` (SM count doubled). Must be None or 1 for ``"fa2"``.
        variant: ``"base"`` or ``"refined"``.
        **assumptions: keyword overrides of :data:`MODEL_DEFAULTS` (listed above).
    Returns:
        :class:`DecodeEstimate`.
    Raises:
        ValueError: unknown GPU, method, variant, split mode or ``last_wave`` rule; sizes < 1; ``H_q`` not a multiple of
        ``H_kv``; ``num_splits`` given for ``"fa2"``, or more splits than keys (``num_splits > seqlen``).
        TypeError: unknown assumption keyword, non-integers.
    Source: lecture §6.3; dao2023flashdecoding; Dao 2023 (FlashAttention-2) for the tile and efficiency.
    """
    gpu = get_gpu(gpu)
    method = choice(method, "method", DECODE_METHODS)
    variant = choice(variant, "variant", DECODE_VARIANTS)
    batch = positive_int(batch, "batch", maximum=MAX_BATCH)
    seqlen = positive_int(seqlen, "seqlen", maximum=MAX_SEQLEN)
    if isinstance(num_splits, (list, tuple, np.ndarray)):
        raise TypeError(f"num_splits must be an int, None or one of {', '.join(map(repr, SPLIT_MODES))} here; "
                        f"got {num_splits!r} (decode_time_grid takes arrays)")
    _, _, hq, hkv, d = decode_shape(batch, seqlen, num_q_heads, num_kv_heads, head_dim)
    p = _params(assumptions)
    s = int(np.asarray(_resolve_splits(gpu, num_splits, batch, seqlen, hq, hkv, d, method, variant, p)))
    r = {k: (v.item() if isinstance(v, np.ndarray) else v)
         for k, v in _core(gpu, batch, seqlen, s, hq, hkv, d, method, variant, p).items()}
    return DecodeEstimate(
        gpu=gpu.name, method=method, variant=variant, batch=batch, seqlen=seqlen, num_q_heads=hq,
        num_kv_heads=hkv, head_dim=d, num_sms=gpu.num_sms,
        **{k: int(v) if k in _COUNT_FIELDS else float(v) for k, v in r.items()},
        bound="compute" if r["compute_time"] > r["memory_time"] else "memory",
        kv_bytes=kv_cache_bytes(batch=batch, seqlen=seqlen, num_kv_heads=hkv, head_dim=d, dtype_bytes=p["dtype_bytes"]),
        useful_flops=4.0 * batch * hq * seqlen * d, last_wave=p["last_wave"],
    )


def decode_time_grid(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim, method, num_splits=None,
                     variant="base", **assumptions):
    """The same model as :func:`decode_attention_time` over whole arrays of batch and seqlen (vectorised).

    Args:
        batch, seqlen: int arrays (or ints) that broadcast together, e.g. ``b[:, None]`` and ``n[None, :]``.
        num_splits: as in :func:`decode_attention_time`, or an int array broadcasting with the grid.
        other arguments: as in :func:`decode_attention_time`.
    Returns:
        dict of float/int arrays of the broadcast shape: ``total`` (s), ``num_splits``, ``num_ctas``,
        ``waves``, ``compute_time``, ``memory_time`` (per CTA, s), ``bound_compute`` (bool).
    Raises:
        as :func:`decode_attention_time`.
    Source: lecture §6.3 (the speedup heatmap of §6.4 uses it).
    """
    gpu = get_gpu(gpu)
    method = choice(method, "method", DECODE_METHODS)
    variant = choice(variant, "variant", DECODE_VARIANTS)
    batch, seqlen, hq, hkv, d = decode_shape(batch, seqlen, num_q_heads, num_kv_heads, head_dim)
    p = _params(assumptions)
    s = _resolve_splits(gpu, num_splits, batch, seqlen, hq, hkv, d, method, variant, p)
    r = _core(gpu, batch, seqlen, s, hq, hkv, d, method, variant, p)
    shape = np.broadcast(batch, seqlen, s).shape
    return {
        "total": np.broadcast_to(r["total"], shape).astype(float),
        "num_splits": np.broadcast_to(r["num_splits"], shape),
        "num_ctas": np.broadcast_to(r["num_ctas"], shape),
        "waves": np.broadcast_to(r["waves"], shape),
        "compute_time": np.broadcast_to(r["compute_time"], shape).astype(float),
        "memory_time": np.broadcast_to(r["memory_time"], shape).astype(float),
        "bound_compute": np.broadcast_to(r["compute_time"] > r["memory_time"], shape),
    }


def best_num_splits(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim, variant="base", **assumptions) -> int:
    """The split count that minimises the model's flash-decoding time (smallest one on ties).

    Searches ``1 .. min(max_splits, ceil(seqlen / block_n))`` (a split holds at least one KV tile).

    Args/Raises: as :func:`decode_attention_time` (``batch`` and ``seqlen`` scalars).
    Returns: int >= 1.
    Source: lecture §6.4 (batch 1, 64K: 32 splits beat 64).
    """
    gpu = get_gpu(gpu)
    variant = choice(variant, "variant", DECODE_VARIANTS)
    batch = positive_int(batch, "batch", maximum=MAX_BATCH)
    seqlen = positive_int(seqlen, "seqlen", maximum=MAX_SEQLEN)
    _, _, hq, hkv, d = decode_shape(batch, seqlen, num_q_heads, num_kv_heads, head_dim)
    p = _params(assumptions)
    return int(_best_grid(gpu, batch, seqlen, hq, hkv, d, variant, p)[0])
