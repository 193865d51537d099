"""What limits FlashAttention on each GPU generation: the FlashAttention-4 tile roofline and a prefill time model.

Two layers:

1. :func:`labcore.tile_roofline`: cycles one SM spends on one tile (``block_q`` query rows x ``block_kv`` keys, head
   dim d; the paper's M x N, flash-attn's kBlockM x kBlockN) on the tensor cores (MMA), on the exponential unit
   (MUFU) and on shared-memory traffic, with the formulas of the FlashAttention-4 paper (Zadouri et al. 2026,
   Sec. 3.1.1 and 3.2.1, Tables 1 and 3). On a B200 they give the paper's table exactly: forward
   block_q = block_kv = d = 128 -> 1024 / 1024 / 768 cycles, block_q = 256 -> 2048 / 2048 / 1536, backward
   (1 CTA) -> 2560 / 1024 / 3328.
2. :func:`prefill_time`: the time of one attention call (forward, or forward + backward) for a batch of
   sequences: per-tile cycles combined by the generation's overlap rule (:data:`GENERATION_ASSUMPTIONS`), CTAs
   dealt to SMs in waves by :func:`labcore.waves.waves_time`, HBM traffic from the IO counts of
   :mod:`labcore.hbm`, plus fixed per-kernel costs. :func:`compare_prefill` checks it against the published
   FlashAttention-2 and -3 benchmark bars stored in ``labcore/data/prefill_benchmarks.csv``.

Every assumption is a named entry of :data:`PREFILL_DEFAULTS` or :data:`GENERATION_ASSUMPTIONS`, fixed before
any comparison with a measurement; the one calibrated constant, ``mma_efficiency``, is calibrated on a single
panel (FlashAttention-2 paper Fig. 4(b)) by :func:`calibrate_mma_efficiency` and reported on all others.
"""
from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

import numpy as np

from .checks import cdiv, choice, flag, positive_float, positive_int, resolve_params
from .hardware import GPU, get_gpu
from .hbm import causal_block_counts, flash_backward_io, flash_forward_io
from .decode_time import MODEL_DEFAULTS as _DECODE_DEFAULTS
from .published import published
from .prefill_schedule import ablation_overlap, kernel_makespan, overlap_cycles, prefill_ctas_per_sm
from .roofline import DTYPE_BYTES, PREFILL_DTYPES, binding_units, tile_roofline_of
from .waves import LAST_WAVE_RULES, waves_time

__all__ = ["GENERATIONS", "GENERATION_ASSUMPTIONS", "fa4_emulation_balance", "PREFILL_DEFAULTS", "PREFILL_PASSES",
           "generation_available", "attention_flops_papers", "prefill_time", "load_prefill_measurements",
           "compare_prefill", "calibrate_mma_efficiency", "BENCHMARK_CLOCK_FACTORS", "benchmark_clock",
           "fa3_ablation_overlap", "PREFILL_CHECK_TOLERANCE"]


PREFILL_PASSES = ("forward", "forward+backward")
#: The relative error within which a modelled bar counts as matching a published one in :func:`compare_prefill`'s
#: summary, fixed before the comparison was run (an acceptance criterion, not a result).
PREFILL_CHECK_TOLERANCE = 0.15
GENERATIONS = ("fa2", "fa3", "fa4")


# --------------------------------------------------------------------------------------------------
# The prefill / training time model
# --------------------------------------------------------------------------------------------------

#: How each generation overlaps the units of one tile, with its source. Fixed before any comparison.
GENERATION_ASSUMPTIONS = {
    "fa2": dict(
        architectures=("ampere", "hopper"), overlap="sequence",
        text="FlashAttention-2: within a warp the softmax (exp on MUFU, the other FP32 work on the FMA units) runs "
             "in sequence with the MMAs, so a tile costs MMA + exp + FMA cycles (shared-memory loads overlap "
             "through cp.async). On Hopper it issues mma.sync, which reaches about two thirds of the tensor peak, "
             "and it has no TMA or WGMMA.",
        source="Dao 2023 (FlashAttention-2) Sec. 3.1, 3.3; Shah et al. 2024 (FlashAttention-3) Sec. 1 and 3.1",
        mma_fraction={"ampere": 1.0, "hopper": "fa3.mma_sync_fraction_hopper"}, exp_emulation_share=0.0, bwd_kernels=3,
        # at 2 CTAs per SM (prefill_ctas_per_sm: 2 on A100/H100 at d = 64, 128) two warps per SM
        # sub-partition interleave HMMA and MUFU/FMA through the warp scheduler: the forward hides the same share
        # of the shorter unit as FA3's warp-specialised kernel (``overlap_share``), without a barrier to enforce
        # it, so at most that; at 1 CTA per SM (and in the 8-warp backward, 1 CTA per SM) the units run in sequence
        efficiency="mma_efficiency", schedule="launch", two_cta_overlap=True, partial_overlap=False,
        schedule_text="one CTA per (query block, sequence, head) in launch order, m_block = blockIdx.x, so each "
                      "head's longest causal CTAs come last (flash_fwd_launch_template.h)",
    ),
    "fa3": dict(
        architectures=("hopper",), overlap="max",
        text="FlashAttention-3: warp specialisation (producer warps load with TMA), ping-pong scheduling of "
             "two consumer warpgroups (one group's softmax runs while the other's GEMMs run) and GEMM-softmax "
             "pipelining inside a warpgroup. Its warp-specialisation ablation (570 -> 661 TFLOP/s; the 570 "
             "configuration already pipelines GEMM and softmax inside a warpgroup) says the overlap is partial: a "
             "tile costs the larger of MMA and exp + FMA plus the unhidden share of the smaller (at least the SMEM "
             "cycles).",
        source="Shah et al. 2024 (FlashAttention-3) Sec. 1 (GEMM 80-90%), 3.1, 3.2, Table 2, App. C.1 (1830 MHz)",
        mma_fraction={"hopper": 1.0}, exp_emulation_share=0.0, bwd_kernels=3,
        # the overlap is partial, the share measured by FA3's own ablation (``overlap_share``); WGMMA's issue
        # efficiency is not mma.sync's (``wgmma_efficiency``), and FA3's benchmark fixed
        # the clock at the 1830 MHz of the 989 TFLOP/s peak (fa3.h100_clock), so no throttling is charged
        efficiency="wgmma_efficiency", schedule="lpt", two_cta_overlap=False, partial_overlap=True,
        schedule_text="persistent kernel, one CTA per SM (MinBlocksPerMultiprocessor = 1) taking tiles from an "
                      "atomic counter, longest query block first within sections of heads whose K and V fit in L2 "
                      "(hopper/tile_scheduler.hpp, DynamicPersistentTileScheduler)",
    ),
    "fa4": dict(
        architectures=("blackwell",), overlap="max",
        text="FlashAttention-4: the FlashAttention-3 overlap plus a share of each row's exponentials computed by "
             "a cubic polynomial on the FMA units (the low end of the paper's 10-25% is taken), and conditional "
             "rescaling (skipped rescales are per-row work, not counted here either way). The FMA-unit work "
             "(the softmax's FP32 operations and the polynomial) is charged at the GPU's FP32 lanes; where no FP32 "
             "rate is published (B200) at 128 lanes per clock per SM (4 partitions x 32, architectural), which "
             "the paper's own roofline leaves out.",
        source="Zadouri et al. 2026 (FlashAttention-4) Sec. 3.1.3, 3.1.4, Tables 1 and 3",
        mma_fraction={"blackwell": 1.0}, exp_emulation_share="fa4.exp_emulation_share", bwd_kernels=3,
        # FA4's own roofline (perfect overlap) is kept: no FA4 per-seqlen bars are stored to check it against
        efficiency="mma_efficiency", schedule="lpt", two_cta_overlap=False, partial_overlap=False,
        schedule_text="one CTA per tile, the grid's block index remapped longest first within L2 sections "
                      "(flash_attn/cute/tile_scheduler.py, SingleTileLPTScheduler), or the hardware's cluster "
                      "launch control; FlashAttention-4 Sec. 3.3",
    ),
}

#: The model's other assumptions (overridable by keyword in :func:`prefill_time`), each with its reason.
PREFILL_DEFAULTS = dict(
    # the one calibrated constant: share of the (instruction's) tensor peak the MMAs reach in steady state,
    # calibrated by calibrate_mma_efficiency() on FA2 paper Fig. 4(b) only (A100, fwd+bwd, d = 128, non-causal)
    mma_efficiency=0.69,
    block_q=128,  # query rows per CTA (FA2 forward kernels: 128; FA4: 128 per CTA)
    block_kv=128,  # keys per tile (FA4 Table 1's N; FA2/FA3 use 64-176 depending on d, same cycles per score)
    fwd_fma_ops=3,  # FP32 ops per score besides exp in the forward: max, subtract (folded scale), row-sum (labcore.flops)
    bwd_fma_ops=3,  # backward: subtract lse before exp, dP - D, multiply by P (dS = P o (dP - D))
    emulation_fma_ops=7,  # FMA-unit ops per emulated exp: Cody-Waite range reduction (2), Horner cubic (3), exponent (2)
    fp32_lanes=128,  # FP32 FMA lanes per clock per SM where the preset publishes no FP32 rate (B200): 4 SM
    # partitions x 32 lanes, as on Hopper (Blackwell tuning guide); NVIDIA's B200 listings (75-80 TFLOP/s FP32) agree
    kernel_overhead=5e-6,  # launch + prologue + tail of one kernel (lecture §6.3; as labcore.decode)
    per_sm_bandwidth_cap=None,  # prefill CTAs are compute bound; no per-SM cap
    l2_reuse=True,  # K, V re-reads by the query blocks of one head hit L2: HBM sees each tensor once
    # seconds each CTA waits before its first tile (pipeline fill: the first K/V tile's latency), one DRAM round
    # trip, the value labcore.decode_time uses for a wave's pipeline fill (MODEL_DEFAULTS["wave_latency"])
    cta_latency=_DECODE_DEFAULTS["wave_latency"],
    # FA3's WGMMA issue efficiency: the low end of "80-90% for GEMM" on H100 (FA3 Sec. 1), not the calibrated
    # mma.sync constant (another instruction, issued another way)
    wgmma_efficiency=published("fa3.gemm_h100_utilization").low,
    # share of the shorter of MMA and softmax hidden under the longer; None: read off FA3's ablation (Table 2,
    # 570 TFLOP/s without warp specialisation -> 661 with it) by labcore.prefill_schedule.ablation_overlap
    overlap_share=None,
    ctas_per_sm=None,  # CTAs resident per SM; None: labcore.prefill_schedule.prefill_ctas_per_sm (occupancy)
    # the order the CTAs are dealt to the SMs; None: the generation's (GENERATION_ASSUMPTIONS[...]["schedule"]: FA2's
    # launch order, FA3/FA4 longest first); "launch", "longest_first" or "lpt" to compare one kernel under another
    schedule=None,
)

#: The clock each benchmark figure ran at, where it is not the preset's: the FA2 paper's H100 (Fig. 7) was not
#: clock-locked, so it is charged the throttled clock under dense tensor load that FlashMLA's deep-dive reports
#: (865 of 990 TFLOP/s on an H800, ~1600 MHz); FA3's figures fixed 1830 MHz (App. C.1), the preset's clock; the
#: A100's clock is inside the calibrated ``mma_efficiency`` (calibrated on that figure's A100 bars).
BENCHMARK_CLOCK_FACTORS = {"fa2_fig7": ("flashmla.h800_throttled_flops", "flashmla.h800_peak_flops")}


def generation_available(generation: str, gpu) -> bool:
    """Whether ``generation`` (``"fa2"``, ``"fa3"``, ``"fa4"``) is modelled on ``gpu``.

    FA2 runs on Ampere and Hopper (not modelled on Blackwell: mma.sync's rate there is not published), FA3 on
    Hopper only (it needs WGMMA and TMA), FA4 on Blackwell (the paper's target).
    Raises: ValueError for an unknown generation or GPU.
    """
    return _available(choice(generation, "generation", GENERATIONS), get_gpu(gpu))


def _available(generation: str, g: GPU) -> bool:
    return g.architecture in GENERATION_ASSUMPTIONS[generation]["architectures"]


def _assumption_value(v):
    if isinstance(v, str):
        return published(v).low
    return v


def attention_flops_papers(*, batch, heads, seqlen, head_dim, causal=False, pass_="forward"):
    """The FLOP count the FlashAttention papers use for their TFLOP/s figures.

    forward = ``4 x seqlen^2 x head_dim x heads x batch``, halved with a causal mask; backward = 2.5 x forward;
    forward+backward = 3.5 x forward. ``batch``/``seqlen`` may be int arrays (broadcast).
    Source: Dao 2023 (FlashAttention-2) Sec. 4.1; Shah et al. 2024 Sec. 4.1.
    """
    pass_ = choice(pass_, "pass_", PREFILL_PASSES + ("backward",))
    f = 4.0 * np.asarray(seqlen, dtype=float) ** 2 * head_dim * heads * np.asarray(batch, dtype=float)
    if flag(causal, "causal"):
        f = f / 2
    return f * {"forward": 1.0, "backward": 2.5, "forward+backward": 3.5}[pass_]


def _tile_cycles(g: GPU, generation: str, pass_: str, dtype: str, d: int, p: dict, *, block_q: int,
                 block_kv: int, ctas_per_sm: int = 1) -> dict:
    """Per-tile cycles of each unit and the generation's combination (one tile, one SM)."""
    ga = GENERATION_ASSUMPTIONS[generation]
    t = tile_roofline_of(g, block_q, block_kv, d, pass_, dtype)
    frac = _assumption_value(ga["mma_fraction"][g.architecture])
    mma = t.mma / (frac * p[ga["efficiency"]])
    f_emul = _assumption_value(ga["exp_emulation_share"])
    exp = t.exp * (1 - f_emul)
    lanes = g.fp32_ops_per_clock_per_sm or p["fp32_lanes"]
    ops = p["fwd_fma_ops"] if pass_ == "forward" else p["bwd_fma_ops"]
    fma = block_q * block_kv * (ops + f_emul * p["emulation_fma_ops"]) / lanes
    smem = t.smem
    soft = exp + fma
    if ga["partial_overlap"] or (ga["two_cta_overlap"] and ctas_per_sm >= 2 and pass_ == "forward"):
        omega = fa3_ablation_overlap(**{k: p[k] for k in _ABLATION_KEYS}) if p["overlap_share"] is None \
            else p["overlap_share"]
        cycles = max(overlap_cycles(mma, soft, omega), smem)
        bound = ("MMA" if mma >= soft else "softmax") if cycles > smem else "SMEM"   # the longer unit
    elif ga["overlap"] == "sequence":
        cycles = max(mma + soft, smem)
        bound = "MMA + softmax in sequence" if mma + soft >= smem else "SMEM"
    else:
        vals = {"MMA": mma, "softmax": soft, "SMEM": smem}
        cycles = max(vals.values())
        bound = binding_units(vals)
    return dict(mma=mma, exp=exp, fma=fma, smem=smem, cycles=cycles, bound=bound)


_ABLATION_KEYS = ("wgmma_efficiency", "fwd_fma_ops", "fp32_lanes")


@lru_cache(maxsize=64)
def fa3_ablation_overlap(wgmma_efficiency: float = None, fwd_fma_ops: float = None, fp32_lanes: float = None) -> float:
    """The share of the softmax FlashAttention-3's warp specialisation hides under the MMAs, from its own ablation.

    The tile of the ablation (H100, FP16 forward, d = 128, 128 x 128) has MMA cycles ``2048 / wgmma_efficiency``
    and softmax cycles exp + FMA (1024 + 384); FA3's Table 2 reports 570 TFLOP/s without warp specialisation
    (taken as the two in sequence) and 661 with it; :func:`labcore.prefill_schedule.ablation_overlap` solves for
    the share. With the defaults: 0.39 (the perfect overlap of the tile roofline would be 1).

    Args:
        the :data:`PREFILL_DEFAULTS` of the same names (None: the default).

    Returns:
        float in [0, 1].

    Source:
        Shah et al. 2024 (FlashAttention-3) Table 2 (``fa3.ablation_no_warp_specialization_flops``,
        ``fa3.ablation_flops``): the partial overlap it implies, rather than the perfect overlap a roofline assumes.
    """
    kw = {k: v for k, v in dict(wgmma_efficiency=wgmma_efficiency, fwd_fma_ops=fwd_fma_ops,
                                fp32_lanes=fp32_lanes).items() if v is not None}
    p = resolve_params(kw, PREFILL_DEFAULTS, _RULES)
    g = get_gpu("H100")
    t = _tile_cycles(g, "fa3", "forward", "fp16", 128, {**p, "overlap_share": 0.0}, block_q=128, block_kv=128)
    return ablation_overlap(t["mma"], t["exp"] + t["fma"], published("fa3.ablation_no_warp_specialization_flops").value,
                            published("fa3.ablation_flops").value)


#: How each assumption of :data:`PREFILL_DEFAULTS` is checked (rules of :data:`labcore.checks.PARAM_RULES`).
_RULES = {"mma_efficiency": "fraction", "block_q": "count", "block_kv": "count",
          **dict.fromkeys(("fwd_fma_ops", "bwd_fma_ops", "emulation_fma_ops", "kernel_overhead", "cta_latency"),
                          "non-negative"), "wgmma_efficiency": "fraction",
          "per_sm_bandwidth_cap": "positive or None", "l2_reuse": "flag", "fp32_lanes": "positive"}
#: The dispatch orders the ``schedule`` assumption takes (besides None, the generation's own).
_SCHEDULES = ("launch", "longest_first", "lpt")


def fa4_emulation_balance(gpu="B200", *, d: int = 128, **assumptions) -> dict:
    """The share of exponentials to emulate on the FMA units that balances them with the MUFU, per forward tile.

    MUFU cycles ``E (1 - f)`` with ``E = B_q B_k / exp_ops_per_clock``; FMA cycles ``F0 + F1 f`` with
    ``F0 = B_q B_k fwd_fma_ops / lanes`` (the softmax's FP32 work) and ``F1 = B_q B_k emulation_fma_ops / lanes``.
    If the two pipes run side by side the softmax costs ``max(MUFU, FMA)``, least at
    ``f* = (E - F0) / (E + F1)`` (clipped to [0, 1]). If instead their instructions are issued in sequence (the
    sum :func:`prefill_time` charges), emulation pays whenever an emulated exp costs fewer FMA cycles than a MUFU
    one, at any share: ``sum_favours_full_emulation``.

    Args:
        gpu: preset (name or GPU) with a published exponential rate.
        d: head dimension (the tile's MMA cycles).
        assumptions: overrides of :data:`PREFILL_DEFAULTS` (``block_q``, ``block_kv``, ``fwd_fma_ops``,
            ``emulation_fma_ops``, ``fp32_lanes``, ``mma_efficiency``).
    Returns:
        dict: ``share`` (f*), ``mufu_cycles`` and ``fma_cycles`` at f*, ``mma_cycles`` (the tile's MMA cycles
        over ``mma_efficiency``), ``lanes`` (FP32 lanes per clock per SM used), ``sum_favours_full_emulation``.
    Raises:
        ValueError: a GPU without an exponential rate, or bad assumptions.
    Source: Zadouri et al. 2026 (FlashAttention-4) Sec. 3.1.3 (10-25% emulated); FMA lanes as :data:`PREFILL_DEFAULTS`.
    """
    g = get_gpu(gpu)
    p = resolve_params(assumptions, PREFILL_DEFAULTS, _RULES)
    positive_int(d, "d")
    if g.exp_ops_per_clock_per_sm is None:
        raise ValueError(f"{g.name} has no published exponential rate")
    lanes = g.fp32_ops_per_clock_per_sm or p["fp32_lanes"]
    area = p["block_q"] * p["block_kv"]
    E, F0, F1 = area / g.exp_ops_per_clock_per_sm, area * p["fwd_fma_ops"] / lanes, area * p["emulation_fma_ops"] / lanes
    f = min(1.0, max(0.0, (E - F0) / (E + F1)))
    mma = tile_roofline_of(g, p["block_q"], p["block_kv"], d, "forward", "bf16").mma / p["mma_efficiency"]
    return dict(share=f, mufu_cycles=E * (1 - f), fma_cycles=F0 + F1 * f, mma_cycles=mma, lanes=float(lanes),
                sum_favours_full_emulation=bool(F1 < E))


@lru_cache(maxsize=4096)
def _per_seqlen(N: int, d: int, causal: bool, Bq: int, Bk: int, l2_reuse: bool) -> tuple:
    """Tile counts of one (batch, head) for the forward (query-block CTAs) and backward (key-block CTAs):
    ``(T_r, T_c, pairs, fwd_longest, bwd_longest, fwd_elements, bwd_elements)`` (cached; ints)."""
    rows, J, _cols = causal_block_counts(N, block_q=Bq, block_kv=Bk, causal=causal)
    T_c = cdiv(N, Bk)
    pairs = int(J.sum())
    per_kv = (J[:, None] > np.arange(T_c)[None, :]).sum(axis=0)  # query blocks that visit each key block
    if l2_reuse:
        fwd_el = flash_forward_io(N, d, block_q=N, block_kv=N, loop_order="fa2", causal=causal)
        bwd_el = flash_backward_io(N, d, block_q=N, block_kv=N, causal=causal)
    else:
        fwd_el = flash_forward_io(N, d, block_q=Bq, block_kv=Bk, loop_order="fa2", causal=causal)
        bwd_el = flash_backward_io(N, d, block_q=Bq, block_kv=Bk, causal=causal)
    return len(J), T_c, pairs, int(J.max()), int(per_kv.max()), int(fwd_el), int(bwd_el)


def _kernel_time(g, seq, bh, n_ctas, cycles, bytes_total, clock, p, last_wave, *, order, slots, ctas_per_sm,
                 causal, backward):
    """One kernel: its CTAs list-scheduled on ``slots`` (each slot gets 1 / ctas_per_sm of the SM), never faster
    than its HBM bytes dealt in waves by :func:`labcore.waves.waves_time` (arrays over the broadcast shapes)."""
    tile_time = cycles * ctas_per_sm / clock
    make = np.array([kernel_makespan(int(N), reps=int(r), slots=slots, tile_time=tile_time, startup=p["cta_latency"],
                                     block_q=p["block_q"], block_kv=p["block_kv"], causal=causal, backward=backward,
                                     order=order) for N, r in zip(seq.ravel(), bh.ravel())]).reshape(seq.shape)
    w = waves_time(n_ctas, g.num_sms, 0.0, bytes_total / n_ctas, g.hbm_bandwidth,
                   per_sm_bandwidth_cap=p["per_sm_bandwidth_cap"], last_wave=last_wave)
    return np.maximum(make, w["total"]), w


def prefill_time(gpu, *, batch, heads: int, seqlen, head_dim: int, causal: bool = False, pass_: str = "forward",
                 dtype: str = "bf16", generation: str = "fa2", last_wave: str = "full", clock: float | None = None,
                 **assumptions) -> dict:
    """Modelled time of one FlashAttention call (forward, or forward + backward) on ``gpu``.

    Model, per kernel (forward: one CTA per (sequence, head, query block); backward: one per (sequence, head,
    key block)):

    1. one tile (``block_q`` x ``block_kv``) costs the cycles of :func:`labcore.tile_roofline`'s units combined by the
       generation's rule (:data:`GENERATION_ASSUMPTIONS`): FA2 in sequence (MMA + exp + FMA work), except that at
       2 CTAs per SM its forward hides a share ``overlap_share`` of the shorter unit; FA3 hides that share
       (read off its own ablation, :func:`fa3_ablation_overlap`), FA4 the largest unit; MMA cycles are divided by
       the generation's efficiency (``mma_efficiency`` for mma.sync and tcgen05, ``wgmma_efficiency`` for FA3,
       and mma.sync's two thirds for FA2 on Hopper); FA4 moves a share of the exps to the FMA units;
    2. CTAs per SM from occupancy (:func:`labcore.prefill_schedule.prefill_ctas_per_sm`; each slot gets that
       share of the SM); every CTA costs its tiles x tile cycles / ``clock`` plus ``cta_latency`` (its first K/V
       tile's round trip); the CTAs, unequal with a causal mask, are list-scheduled on SMs x CTAs-per-SM slots
       in the generation's order (FA2 launch order, FA3/FA4 longest first; the ``schedule`` assumption overrides
       it: :func:`labcore.prefill_schedule.kernel_makespan`); the backward holds one CTA per SM;
    3. HBM bytes from :func:`labcore.hbm.flash_forward_io` / :func:`~labcore.hbm.flash_backward_io`
       (x bytes per element): with ``l2_reuse`` (default) K and V re-reads hit L2, so the count with a single
       block (every tensor once) is used; a kernel is never faster than its bytes dealt in waves by
       :func:`labcore.waves.waves_time`'s ``last_wave`` rule;
    4. plus ``kernel_overhead`` per kernel: 1 forward kernel, 3 backward (preprocess D, main, dQ conversion).

    Args:
        gpu: preset name or GPU.
        batch: int >= 1 or an int array (broadcasts with ``seqlen``).
        heads: query heads (int >= 1).
        seqlen: int >= 1 or an int array (queries = keys).
        head_dim: d (int >= 1).
        causal: bool.
        pass_: ``"forward"`` or ``"forward+backward"``.
        dtype: ``"fp16"``, ``"bf16"`` or ``"fp8"`` (FA3/FA4 forward only).
        generation: ``"fa2"``, ``"fa3"`` or ``"fa4"``.
        last_wave: ``"full"`` or ``"shared"`` (see :func:`labcore.waves.waves_time`).
        clock: Hz the SMs run at (default ``gpu.model_clock``; :func:`benchmark_clock` for a stored figure).
        **assumptions: overrides of :data:`PREFILL_DEFAULTS`.
    Returns:
        dict: ``total`` (s), ``flops`` (the papers' count), ``tflops`` (FLOP/s / 1e12, the papers' metric),
        ``fraction_of_peak`` (of ``gpu.tensor_flops``, or of the FP8 peak), ``forward``/``backward`` (s),
        ``fwd_tile``/``bwd_tile`` (per-tile cycles by unit and the ``bound``), ``waves`` (forward kernel),
        ``ctas_per_sm`` (forward kernel) and ``clock`` (Hz).
    Raises:
        TypeError/ValueError: bad shapes or names; a generation not modelled on ``gpu``
            (:func:`generation_available`); FP8 with FA2, in the backward, or on a GPU without FP8.
    Source:
        Zadouri et al. 2026 (tile roofline); Dao 2023, Shah et al. 2024 (overlap, Table 2); lecture §6.4 (waves);
        flash-attn launch templates and ``hopper/tile_scheduler.hpp`` (order, occupancy).
    """
    g = get_gpu(gpu)
    generation = choice(generation, "generation", GENERATIONS)
    if not _available(generation, g):
        raise ValueError(f"{generation} is not modelled on {g.name} ({g.architecture}); it runs on "
                         f"{', '.join(GENERATION_ASSUMPTIONS[generation]['architectures'])}")
    pass_ = choice(pass_, "pass_", PREFILL_PASSES)
    dtype = choice(dtype, "dtype", PREFILL_DTYPES)
    last_wave = choice(last_wave, "last_wave", LAST_WAVE_RULES)
    causal = flag(causal, "causal")
    if dtype == "fp8" and (generation == "fa2" or pass_ != "forward"):
        raise ValueError("FP8 is modelled for the FA3/FA4 forward pass only")
    heads, d = positive_int(heads, "heads"), positive_int(head_dim, "head_dim")
    p = resolve_params(assumptions, PREFILL_DEFAULTS, _RULES)
    batch_a = np.asarray(batch)
    seq_a = np.asarray(seqlen)
    for name, a in (("batch", batch_a), ("seqlen", seq_a)):
        if a.dtype.kind not in "iu" or np.any(a < 1):
            raise TypeError(f"{name} must be an int >= 1 or an int array of values >= 1") if a.dtype.kind not in "iu" \
                else ValueError(f"{name} must be >= 1")
    batch_b, seq_b = np.broadcast_arrays(batch_a, seq_a)
    if p["overlap_share"] is not None and not 0.0 <= float(p["overlap_share"]) <= 1.0:
        raise ValueError(f"overlap_share must be None or in [0, 1], got {p['overlap_share']}")
    clock = g.model_clock if clock is None else positive_float(clock, "clock")
    eb = DTYPE_BYTES[dtype]
    ga = GENERATION_ASSUMPTIONS[generation]
    cps = prefill_ctas_per_sm(g, generation, d, block_q=p["block_q"]) if p["ctas_per_sm"] is None \
        else positive_int(p["ctas_per_sm"], "ctas_per_sm")
    fwd_tile = _tile_cycles(g, generation, "forward", dtype, d, p, block_q=p["block_q"], block_kv=p["block_kv"],
                            ctas_per_sm=cps)
    bwd_tile = _tile_cycles(g, generation, "backward", dtype, d, p, block_q=p["block_q"], block_kv=p["block_kv"]) \
        if pass_ != "forward" else None
    counts = np.array([_per_seqlen(int(N), d, causal, p["block_q"], p["block_kv"], p["l2_reuse"])
                       for N in seq_b.ravel()], dtype=np.int64).reshape(seq_b.shape + (7,))
    T_r, T_c, pairs, fwd_long, bwd_long, fwd_el, bwd_el = np.moveaxis(counts, -1, 0)
    bh = batch_b.astype(np.int64) * heads
    if p["schedule"] is not None:
        p["schedule"] = choice(p["schedule"], "schedule", _SCHEDULES)
    kw = dict(order=ga["schedule"] if p["schedule"] is None else p["schedule"], causal=causal)
    fwd, w = _kernel_time(g, seq_b, bh, bh * T_r, fwd_tile["cycles"], bh * fwd_el * eb, clock, p, last_wave,
                          slots=g.num_sms * cps, ctas_per_sm=cps, backward=False, **kw)
    fwd = fwd + p["kernel_overhead"]
    waves = w["waves"]
    if bwd_tile is not None:     # the backward kernels hold one CTA per SM (FA2's 8-warp dK/dV kernel)
        bwd, _ = _kernel_time(g, seq_b, bh, bh * T_c, bwd_tile["cycles"], bh * bwd_el * eb, clock, p, last_wave,
                              slots=g.num_sms, ctas_per_sm=1, backward=True, **kw)
        bwd = bwd + GENERATION_ASSUMPTIONS[generation]["bwd_kernels"] * p["kernel_overhead"]
    else:
        bwd = np.zeros(batch_b.shape)
    total = fwd + bwd
    flops = attention_flops_papers(batch=batch_b, heads=heads, seqlen=seq_b, head_dim=d, causal=causal, pass_=pass_)
    peak = g.fp8_tensor_flops if dtype == "fp8" else g.tensor_flops
    return dict(gpu=g.name, generation=generation, pass_=pass_, dtype=dtype, causal=causal, head_dim=d,
                heads=heads, batch=batch_b, seqlen=seq_b, total=total, forward=fwd, backward=bwd, flops=flops,
                tflops=flops / total / 1e12, fraction_of_peak=flops / total / peak, fwd_tile=fwd_tile,
                bwd_tile=bwd_tile, waves=waves, last_wave=last_wave, ctas_per_sm=cps, clock=clock)


# --------------------------------------------------------------------------------------------------
# Published measurements and the comparison
# --------------------------------------------------------------------------------------------------

_CSV = Path(__file__).parent / "data" / "prefill_benchmarks.csv"


def load_prefill_measurements() -> dict:
    """The FlashAttention-2/3 papers' per-seqlen benchmark bars, read from ``labcore/data``.

    Returns:
        dict of numpy arrays, one entry per bar: ``figure`` (e.g. ``"fa2_fig4b"``), ``gpu``, ``generation``,
        ``pass_`` (str), ``causal`` (bool), ``head_dim``, ``seqlen``, ``batch``, ``heads`` (int64),
        ``flops_per_s`` (float, FLOP/s as the papers count them), ``mark`` (how the value was read), and
        ``source`` (the CSV's citation header).
    Source:
        Dao 2023 (FlashAttention-2) Fig. 4 and 7; Shah et al. 2024 (FlashAttention-3) Fig. 5; each row's figure (its
        ``figure`` column) is cited, with its caveats, in the CSV's header.
    """
    comments, rows = [], []
    with open(_CSV, newline="") as f:
        for line in f:
            (comments if line.startswith("#") else rows).append(line[1:].strip() if line.startswith("#") else line)
    recs = list(csv.DictReader(rows))
    col = lambda k, t: np.array([t(r[k]) for r in recs])  # noqa: E731
    return {
        "figure": col("figure", str), "gpu": col("gpu", str), "generation": col("generation", str),
        "pass_": col("pass", str), "causal": col("causal", int).astype(bool),
        "head_dim": col("head_dim", int).astype(np.int64), "seqlen": col("seqlen", int).astype(np.int64),
        "batch": col("batch", int).astype(np.int64), "heads": col("heads", int).astype(np.int64),
        "flops_per_s": col("tflops", float) * 1e12, "mark": col("mark", str),
        "source": " ".join(comments),
    }


def benchmark_clock(figure: str) -> float | None:
    """The clock (Hz) a stored benchmark figure ran at, or None for the GPU preset's (:data:`BENCHMARK_CLOCK_FACTORS`).

    Args:
        figure: a ``figure`` value of the CSV (e.g. ``"fa2_fig7b"``); its panel letter is ignored.
    Returns:
        float Hz or None.
    Source:
        as :data:`BENCHMARK_CLOCK_FACTORS`.
    """
    for prefix, (num, den) in BENCHMARK_CLOCK_FACTORS.items():
        if str(figure).startswith(prefix):
            return get_gpu("H100").model_clock * published(num).value / published(den).value
    return None


def compare_prefill(*, last_wave: str = "full", **assumptions) -> dict:
    """Model vs every stored benchmark bar: the model's FLOP/s (papers' count) and its relative error.

    Args:
        last_wave: the wave rule.
        assumptions: overrides of :data:`PREFILL_DEFAULTS`.
    Returns:
        the dict of :func:`load_prefill_measurements` plus ``model_flops_per_s`` and ``error`` (model /
        measured - 1), ``bound`` (the forward tile's bound per bar), and ``summary``: ``{figure: (points,
        share within :data:`PREFILL_CHECK_TOLERANCE` (+-15%), worst error)}`` plus ``"all"``, ``"checked"`` and the two checked sets
        ``"fa2_a100"`` (FA2 paper Fig. 4) and ``"fa3_h100"`` (FA3 bars of FA3 paper Fig. 5).
    Source: as :func:`load_prefill_measurements` and :func:`prefill_time`.
    """
    m = load_prefill_measurements()
    n = len(m["seqlen"])
    model = np.zeros(n)
    bound = np.empty(n, dtype=object)
    keys = sorted({(m["figure"][i], m["generation"][i]) for i in range(n)})
    for fig, gen in keys:
        sel = np.flatnonzero((m["figure"] == fig) & (m["generation"] == gen))
        i0 = sel[0]
        r = prefill_time(str(m["gpu"][i0]), batch=m["batch"][sel], heads=int(m["heads"][i0]), seqlen=m["seqlen"][sel],
                         head_dim=int(m["head_dim"][i0]), causal=bool(m["causal"][i0]), pass_=str(m["pass_"][i0]),
                         dtype="fp16", generation=str(gen), last_wave=last_wave, clock=benchmark_clock(fig),
                         **assumptions)
        model[sel] = r["flops"] / r["total"]
        bound[sel] = r["fwd_tile"]["bound"]
    err = model / m["flops_per_s"] - 1
    out = dict(m, model_flops_per_s=model, error=err, bound=bound)

    def summary(mask):
        e = err[mask]
        i = int(np.argmax(np.abs(e)))
        return (int(mask.sum()), float(np.mean(np.abs(e) <= PREFILL_CHECK_TOLERANCE)), float(e[i]))

    out["summary"] = {f"{fig}/{gen}": summary((m["figure"] == fig) & (m["generation"] == gen)) for fig, gen in keys}
    fa2_a100 = np.char.startswith(m["figure"].astype(str), "fa2_fig4")
    fa3_h100 = (m["generation"] == "fa3")
    out["summary"]["fa2_a100"] = summary(fa2_a100)
    out["summary"]["fa3_h100"] = summary(fa3_h100)
    out["summary"]["checked"] = summary(fa2_a100 | fa3_h100)
    out["summary"]["all"] = summary(np.ones(n, dtype=bool))
    return out


def calibrate_mma_efficiency(figure: str = "fa2_fig4b", **assumptions) -> float:
    """The one global constant, ``mma_efficiency``, calibrated on one panel only.

    Finds, by bisection, the ``mma_efficiency`` at which the geometric mean of model / measured over the
    panel's bars is 1 (the model's FLOP/s rises monotonically with it). Default panel: FlashAttention-2 paper
    Fig. 4(b) (A100, forward + backward, d = 128, non-causal). Every other panel is then a check, not a fit.
    :data:`PREFILL_DEFAULTS` holds this value rounded to two digits (a test checks they agree).

    Args:
        figure: a ``figure`` value of the CSV.
        assumptions: other overrides.
    Returns:
        float in (0, 1].
    Raises:
        ValueError for an unknown figure, or when even ``mma_efficiency = 1`` is too slow.
    """
    m = load_prefill_measurements()
    sel = np.flatnonzero(m["figure"] == figure)
    if sel.size == 0:
        raise ValueError(f"unknown figure {figure!r}; known: {', '.join(sorted(set(m['figure'])))}")
    sel = sel[m["generation"][sel] == m["generation"][sel[0]]]
    i0 = sel[0]
    g = get_gpu(str(m["gpu"][i0]))

    def log_ratio(e):
        r = prefill_time(g, batch=m["batch"][sel], heads=int(m["heads"][i0]), seqlen=m["seqlen"][sel],
                         head_dim=int(m["head_dim"][i0]), causal=bool(m["causal"][i0]), pass_=str(m["pass_"][i0]),
                         dtype="fp16", generation=str(m["generation"][i0]), clock=benchmark_clock(figure),
                         **{**assumptions, "mma_efficiency": e})
        return float(np.mean(np.log(r["flops"] / r["total"] / m["flops_per_s"][sel])))

    lo, hi = 0.01, 1.0
    if log_ratio(hi) < 0:
        raise ValueError(f"the model is slower than panel {figure} even at mma_efficiency = 1")
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if log_ratio(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)
