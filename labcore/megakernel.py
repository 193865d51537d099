"""Batch-1 decode as a timeline: many small kernels versus one persistent megakernel (lecture §7-§8).

Sources: B. Spector, J. Juravsky, S. Sul, O. Dugan, D. Lim, D. Fu, S. Arora, C. Re (Hazy Research),
"Look Ma, No Bubbles! Designing a Low-Latency Megakernel for Llama-1B", blog post, 2025-05-27, and its
code (HazyResearch/Megakernels, Llama-1B demo: 16-row matrix-vector blocks, 13 shared-memory pages of
16 KiB, counters in global memory); lecture 11 §8.3 for the timeline model.

The model lives in two modules, both re-exported here: :mod:`labcore.forward_work` (the work of one forward
pass, :func:`work_items`, and the assumptions, :data:`TIMELINE_DEFAULTS` with :data:`TIMELINE_USED_BY`) and
:mod:`labcore.forward_timeline` (:func:`timeline`: ``mode="multi-kernel"``, kernel after kernel with launch
gaps, prologues and tails; ``mode="megakernel"``, an event loop over the instructions dealt to the SMs,
:func:`megakernel_schedule`). This module compares the two: the stall back-of-envelope
(:func:`stall_bound_throughput`), both modes at one setting (:func:`compare_modes`), one knob at a time
(:func:`mode_sensitivity`); :func:`megakernel_report` gathers every quantity the book's §8 quotes.

All times are seconds, bytes are bytes, bandwidths bytes/s. Wave arithmetic lives in :mod:`labcore.waves`;
the HBM count of fused softmax (§7) in :func:`labcore.hbm.softmax_fusion_io`.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .checks import cdiv, positive_float, positive_int
from .forward_timeline import EVENT_SMS, Timeline, TimelineEvent, megakernel_schedule, resolved_timeline, timeline
from .forward_work import (HAZY_MEASURED, TIMELINE_DEFAULTS, TIMELINE_MODES, TIMELINE_USED_BY, WorkItem,
                           resolve_assumptions, work_items)
from .forward_work import timeline_gpu as _check_gpu
from .models import get_model
from .waves import idle_sms_last_wave, wave_utilization

__all__ = [
    "stall_bound_throughput", "HAZY_MEASURED", "TIMELINE_DEFAULTS", "TIMELINE_USED_BY", "TIMELINE_MODES", "EVENT_SMS",
    "megakernel_schedule",
    "resolve_assumptions", "WorkItem", "work_items", "TimelineEvent", "Timeline", "timeline", "compare_modes",
    "mode_sensitivity", "SENSITIVITY_KNOBS", "MegakernelReport", "megakernel_report",
]

# ---------------------------------------------------------------------------------------------------
# The stall back-of-envelope (§8.1)
# ---------------------------------------------------------------------------------------------------


def stall_bound_throughput(ideal_time: float, num_kernels: int, stall: float) -> float:
    """Forward passes per second when each of ``num_kernels`` kernels adds ``stall`` seconds to an
    ``ideal_time`` (seconds) forward: ``1 / (ideal_time + num_kernels x stall)``.

    The Hazy post's back-of-envelope: 7 kernels x 16 layers x ~5 us on top of reading Llama-1B's
    weights on an H100 caps decode at ~770 forward passes per second.
    Raises: ValueError for non-positive ``ideal_time`` or negative ``stall``.
    """
    ideal_time = positive_float(ideal_time, "ideal_time")
    num_kernels = positive_int(num_kernels, "num_kernels", minimum=0)
    stall = positive_float(stall, "stall", allow_zero=True)
    return 1.0 / (ideal_time + num_kernels * stall)


# ---------------------------------------------------------------------------------------------------
# Comparisons and sensitivity (lecture §8.3, code 05 demo 4)
# ---------------------------------------------------------------------------------------------------


def compare_modes(model="Llama-3.2-1B", gpu="H100", **assumptions) -> dict:
    """Both modes at the same assumptions.

    Returns: dict with ``multi`` and ``mega`` (:class:`Timeline`), ``speedup`` (multi / mega total),
    ``util_multi``, ``util_mega`` (fractions) and ``util_gain`` (percentage points).
    Raises: as :func:`timeline`.
    """
    model, gpu, a = get_model(model), _check_gpu(gpu), resolve_assumptions(**assumptions)
    mk = resolved_timeline(model, gpu, "multi-kernel", a)
    mg = resolved_timeline(model, gpu, "megakernel", a)
    return {"multi": mk, "mega": mg, "speedup": mk.total / mg.total,
            "util_multi": mk.bandwidth_utilization, "util_mega": mg.bandwidth_utilization,
            "util_gain": 100 * (mg.bandwidth_utilization - mk.bandwidth_utilization)}


#: The knobs varied one at a time by :func:`mode_sensitivity`, each over a range around its default
#: (half to double for times; 0.8-0.95 for the bandwidth efficiency: streaming kernels measure ~90% of
#: the quoted peak and never 100%).
SENSITIVITY_KNOBS: dict = {
    "prologue": (0.5e-6, 1.0e-6, 2.0e-6),
    "small_kernel": (1.0e-6, 2.0e-6, 4.0e-6),
    "sync": (0.5e-6, 1.0e-6, 2.0e-6),
    "instruction_overhead": (0.25e-6, 0.5e-6, 1.0e-6),
    "bandwidth_efficiency": (0.8, 0.9, 0.95),
}


def mode_sensitivity(model="Llama-3.2-1B", gpu="H100", knobs: dict | None = None, **assumptions) -> dict:
    """Vary each knob one at a time (others at their defaults) and record both modes.

    Args:
        model, gpu: presets.
        knobs: ``{name: values}`` (default :data:`SENSITIVITY_KNOBS`).
        **assumptions: fixed overrides applied to every run.
    Returns:
        dict: for each knob, a dict of arrays ``values``, ``multi``, ``mega``, ``speedup`` and
        ``util_gain`` (percentage points).
    Raises:
        ValueError: as :func:`timeline`, when a knob is also given in ``assumptions``, or has no values.
        TypeError: ``knobs`` is not a dict, or a knob value is not a number.
    Source: lecture §8.3 (code 05, demo 4): the megakernel stays 1.3-1.5x faster, +20-29 points.
    """
    knobs = SENSITIVITY_KNOBS if knobs is None else knobs
    if not isinstance(knobs, dict) or not knobs:
        raise TypeError(f"knobs must be a non-empty dict {{name: values}}, got {knobs!r}")
    model, gpu = get_model(model), _check_gpu(gpu)
    runs = []                                                  # (knob, resolved assumptions) in order
    for name, values in knobs.items():
        if name in assumptions:
            raise ValueError(f"knob {name!r} is varied; do not also fix it in assumptions")
        if not isinstance(values, (tuple, list, np.ndarray)) or len(values) == 0:
            raise ValueError(f"knob {name!r} needs a non-empty tuple of values, got {values!r}")
        if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) for v in values):
            raise TypeError(f"knob {name!r}: every value must be a number, got {tuple(values)!r}")
        runs += [(name, resolve_assumptions(**{**assumptions, name: v})) for v in values]
    multi_tl = [resolved_timeline(model, gpu, "multi-kernel", a) for _, a in runs]
    multi = np.array([t.total for t in multi_tl])
    ideal = np.array([t.ideal for t in multi_tl])                 # both modes read the same bytes
    mega = np.array([resolved_timeline(model, gpu, "megakernel", a, decompose=False).total for _, a in runs])
    out = {}
    for name, values in knobs.items():
        sel = np.array([n == name for n, _ in runs])
        mk, mg, idl = multi[sel], mega[sel], ideal[sel]
        out[name] = {"values": np.array(values, dtype=float), "multi": mk, "mega": mg, "speedup": mk / mg,
                     "util_gain": 100 * (idl / mg - idl / mk)}
    return out


# ---------------------------------------------------------------------------------------------------
# The quantities the book's §8 quotes
# ---------------------------------------------------------------------------------------------------

_US = 1e-6


@dataclass(frozen=True)
class MegakernelReport:
    """Every number the book's §8 (megakernels) quotes, for one model on one GPU and a faster GPU.

    Display units, named in the fields' docs (µs, %, GB, ...), because the fields are glued into prose as
    they are. ``hz_*`` and ``hzb_*`` are Hazy Research's published measurements (:data:`HAZY_MEASURED`),
    not model outputs.

    Attributes:
        params_B, weights_GB: parameters (billions) and BF16 bytes (GB) of the model. bw_TBs: the GPU's HBM
            bandwidth (TB/s). ideal_us, ideal_rate: reading weights and KV cache once at peak (µs, tokens/s).
        weights_only_us, kv_us: the two parts of ``ideal_us`` (µs); kv_len: tokens in the KV cache.
        oproj_MB, oproj_us: the O projection's bytes (MB) and read time at peak (µs).
        gap_stream, gap_graphs: Hazy's empty-kernel launch gaps (µs). n_kernels, n_layers: multi-kernel
            kernels per forward pass and the model's layers.
        qkv_blocks16, qkv_blocks24: QKV blocks of 16 and 24 rows; util_qkv16, util_qkv24: their SM
            utilisation on the GPU (%). num_sms, faster_num_sms: SMs of both GPUs; idle512: idle SMs of the
            faster GPU's last wave for Hazy's 512-block example.
        hazy_stall, hazy_kpl, hazy_gaps_us, hazy_rate: Hazy's back-of-envelope (µs of stall per kernel,
            kernels per layer, µs of stall per forward, tokens/s).
        b_weights, b_eff, b_gaps, b_pro, b_tails, b_small: the multi-kernel breakdown (µs; ``b_weights`` is
            weights + KV cache). mk_total, mg_total: both modes' µs per forward; mk_gap_total: the
            multi-kernel's µs beyond streaming at ``bandwidth_efficiency``. util_mk, util_mg: bandwidth
            utilisation (%); speedup: multi / mega; mk_rate, mg_rate: tokens/s.
        mg_sync, mg_over, mg_imb: the megakernel's µs beyond streaming: sync waits, instruction overhead,
            and uneven bytes + imbalance.
        faster_util_mk, faster_util_mg, faster_speedup, faster_mk_total, faster_mg_total, faster_mg_sync:
            the same on the faster GPU (%, x, µs). bw_ratio: its bandwidth / the GPU's.
        hz_util, hz_h100_ms, hz_vllm, hz_sglang, hz_b200_us, hz_b200_vllm, hz_engines, hz_b200_total,
            hz_lm_share, hzb_activations, hzb_rmsnorm, hzb_waiting, hzb_warp, hzb_setup: Hazy's
            measurements (%, ms, x, µs).
        pages, page_KiB, buffer_KB, chunks, instr_us: the megakernel's default page buffer (pages of KiB,
            KB in all), down-projection chunks and instruction overhead (µs).
    """

    params_B: float
    weights_GB: float
    bw_TBs: float
    ideal_us: float
    ideal_rate: float
    weights_only_us: float
    kv_len: int
    kv_us: float
    oproj_MB: float
    oproj_us: float
    gap_stream: float
    gap_graphs: float
    n_kernels: int
    n_layers: int
    qkv_blocks16: int
    qkv_blocks24: int
    util_qkv16: float
    util_qkv24: float
    num_sms: int
    faster_num_sms: int
    idle512: int
    hazy_stall: float
    hazy_kpl: int
    hazy_rate: float
    hazy_gaps_us: float
    b_weights: float
    b_eff: float
    b_gaps: float
    b_pro: float
    b_tails: float
    b_small: float
    mk_total: float
    mg_total: float
    mk_gap_total: float
    util_mk: float
    util_mg: float
    speedup: float
    mk_rate: float
    mg_rate: float
    mg_sync: float
    mg_over: float
    mg_imb: float
    faster_util_mk: float
    faster_util_mg: float
    faster_speedup: float
    faster_mk_total: float
    faster_mg_total: float
    faster_mg_sync: float
    bw_ratio: float
    hz_util: float
    hz_h100_ms: float
    hz_vllm: float
    hz_sglang: float
    hz_b200_us: float
    hz_b200_vllm: float
    hz_engines: float
    hz_b200_total: float
    hz_lm_share: float
    hzb_activations: float
    hzb_rmsnorm: float
    hzb_waiting: float
    hzb_warp: float
    hzb_setup: float
    pages: int
    page_KiB: float
    buffer_KB: float
    chunks: int
    instr_us: float


def megakernel_report(model="Llama-3.2-1B", gpu="H100", faster_gpu="B200") -> MegakernelReport:
    """The quantities §8 of the book quotes, from :func:`compare_modes` on ``gpu`` and ``faster_gpu`` at the
    default assumptions, the model's shapes, the wave arithmetic and :data:`HAZY_MEASURED`.

    Args: model: a Model or preset name. gpu, faster_gpu: GPUs or preset names.
    Returns: :class:`MegakernelReport` (display units, documented per field).
    Raises: as :func:`timeline`.
    Source: lecture 11 §8.1-§8.3; Hazy Research, "Look Ma, No Bubbles!" (2025).
    """
    m, g, fg = get_model(model), _check_gpu(gpu), _check_gpu(faster_gpu)
    H, d = HAZY_MEASURED, TIMELINE_DEFAULTS
    c, cf = compare_modes(m, g), compare_modes(m, fg)
    mk, mg = c["multi"], c["mega"]
    bd, bdm = mk.breakdown(), mg.breakdown()
    mats = {x.name: x for x in m.layer_matrices()}
    o_proj = mats["o"]
    qkv_rows = sum(mats[x].rows for x in "qkv")
    blocks16, blocks24 = cdiv(qkv_rows, 16), cdiv(qkv_rows, 24)
    stall_kernels = H["kernels_per_layer"] * m.num_layers
    b200 = H["b200_breakdown"]
    return MegakernelReport(
        params_B=m.num_params / 1e9, weights_GB=m.weight_bytes() / 1e9, bw_TBs=g.hbm_bandwidth / 1e12,
        ideal_us=mk.ideal / _US, ideal_rate=1 / mk.ideal,
        weights_only_us=bdm["weights"] / _US, kv_len=mk.assumptions["kv_len"], kv_us=bdm["kv_cache"] / _US,
        oproj_MB=o_proj.bytes() / 1e6, oproj_us=o_proj.bytes() / g.hbm_bandwidth / _US,
        gap_stream=H["launch_gap_stream"] / _US, gap_graphs=H["launch_gap_graphs"] / _US,
        n_kernels=mk.num_kernels, n_layers=m.num_layers,
        qkv_blocks16=blocks16, qkv_blocks24=blocks24,
        util_qkv16=100 * wave_utilization(blocks16, g.num_sms), util_qkv24=100 * wave_utilization(blocks24, g.num_sms),
        num_sms=g.num_sms, faster_num_sms=fg.num_sms, idle512=idle_sms_last_wave(512, fg.num_sms),
        hazy_stall=H["stall_per_kernel"] / _US, hazy_kpl=H["kernels_per_layer"],
        hazy_rate=stall_bound_throughput(mk.ideal, stall_kernels, H["stall_per_kernel"]),
        hazy_gaps_us=stall_kernels * H["stall_per_kernel"] / _US,
        b_weights=(bd["weights"] + bd["kv_cache"]) / _US, b_eff=bd["bandwidth_efficiency"] / _US,
        b_gaps=bd["launch_gaps"] / _US, b_pro=bd["prologues"] / _US, b_tails=bd["tails"] / _US,
        b_small=bd["small_kernels"] / _US, mk_total=mk.total / _US, mg_total=mg.total / _US,
        mk_gap_total=(mk.total - mk.ideal / mk.assumptions["bandwidth_efficiency"]) / _US,
        util_mk=100 * c["util_multi"], util_mg=100 * c["util_mega"], speedup=c["speedup"],
        mk_rate=mk.tokens_per_second, mg_rate=mg.tokens_per_second,
        mg_sync=bdm["sync_waits"] / _US, mg_over=bdm["instruction_overhead"] / _US,
        mg_imb=(bdm["uneven_bytes"] + bdm["imbalance"]) / _US,
        faster_util_mk=100 * cf["util_multi"], faster_util_mg=100 * cf["util_mega"], faster_speedup=cf["speedup"],
        faster_mk_total=cf["multi"].total / _US, faster_mg_total=cf["mega"].total / _US,
        faster_mg_sync=cf["mega"].breakdown()["sync_waits"] / _US,
        bw_ratio=fg.hbm_bandwidth / g.hbm_bandwidth,
        hz_util=100 * H["h100_bandwidth_utilization"], hz_h100_ms=H["h100_forward_bound"] / 1e-3,
        hz_vllm=H["h100_speedup_vs_vllm"], hz_sglang=H["h100_speedup_vs_sglang_bound"],
        hz_b200_us=H["b200_forward_bound"] / _US, hz_b200_vllm=H["b200_speedup_vs_vllm_bound"],
        hz_engines=100 * H["engines_bandwidth_utilization_bound"], hz_b200_total=H["b200_breakdown_total"] / _US,
        hz_lm_share=100 * H["lm_head_share_of_weight_wait"],
        hzb_activations=b200["activations and consistency"] / _US, hzb_rmsnorm=b200["RMSNorm + matrix-vector"] / _US,
        hzb_waiting=b200["waiting on weights"] / _US, hzb_warp=b200["warp synchronisation"] / _US,
        hzb_setup=b200["setup and other"] / _US,
        pages=d["pages"], page_KiB=d["page_bytes"] / 1024, buffer_KB=d["pages"] * d["page_bytes"] / 1e3,
        chunks=d["down_chunks"], instr_us=d["instruction_overhead"] / _US,
    )
