"""The numbers book/08_megakernel quotes (the multi-kernel and megakernel timelines; Hazy's measurements)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from labcore.checks import cdiv
from labcore.hardware import get_gpu
from labcore.forward_work import HAZY_MEASURED, TIMELINE_DEFAULTS, work_items
from labcore.megakernel import compare_modes, stall_bound_throughput
from labcore.models import get_model
from labcore.waves import idle_sms_last_wave, wave_utilization

__all__ = ["MegakernelReport", "megakernel_report", "numbers"]

_US = 1e-6


@dataclass(frozen=True)
class MegakernelReport:
    """Every number the book's §8 (megakernels) quotes, for one model on one GPU and a faster GPU.

    Display units, named in the fields' docs (µs, %, GB, ...), because the fields are glued into prose as
    they are. ``hazy_*`` are Hazy Research's published measurements (:data:`labcore.HAZY_MEASURED`), not model
    outputs.

    Attributes:
        params_B, weights_GB: parameters (billions) and BF16 bytes (GB) of the model. bandwidth_TBs: the GPU's
            HBM bandwidth (TB/s). ideal_us, ideal_rate: reading weights and KV cache once at peak (µs, tokens/s).
        weights_only_us, kv_us: the two parts of ``ideal_us`` (µs); kv_len: tokens in the KV cache.
        oproj_MB, oproj_us: the O projection's bytes (MB) and read time at peak (µs).
        launch_gap_stream_us, launch_gap_graphs_us: Hazy's empty-kernel launch gaps (µs). n_kernels, n_layers:
            multi-kernel kernels per forward pass and the model's layers.
        qkv_blocks16, qkv_blocks24: QKV blocks of 16 and 24 rows; qkv16_util_pct, qkv24_util_pct: their SM
            utilisation on the GPU (%). num_sms, faster_num_sms: SMs of both GPUs; faster_idle_sms_512: idle SMs
            of the faster GPU's last wave for Hazy's 512-block example.
        hazy_stall_us, hazy_kernels_per_layer, hazy_gaps_us, hazy_rate: Hazy's back-of-envelope (µs of stall
            per kernel, kernels per layer, µs of stall per forward, tokens/s).
        multi_bytes_us (weights + KV cache at peak), multi_efficiency_loss_us, multi_launch_gaps_us,
            multi_prologues_us, multi_tails_us, multi_small_kernels_us: the multi-kernel breakdown (µs).
            multi_total_us, mega_total_us: both modes' µs per forward; multi_gaps_us: the multi-kernel's µs
            beyond streaming at ``bandwidth_efficiency``. multi_util_pct, mega_util_pct: bandwidth utilisation
            (%); speedup: multi / mega; multi_rate, mega_rate: tokens/s.
        mega_sync_us, mega_overhead_us, mega_imbalance_us: the megakernel's µs beyond streaming: sync waits,
            instruction overhead, and uneven bytes + imbalance.
        faster_multi_util_pct, faster_mega_util_pct, faster_speedup, faster_multi_total_us, faster_mega_total_us: the
            same on the faster GPU (%, x, µs); faster_mega_sync_us: its megakernel's sync waits (µs).
            faster_bandwidth_ratio: its bandwidth / the GPU's.
        hazy_util_pct, hazy_h100_ms, hazy_speedup_vs_vllm, hazy_speedup_vs_sglang: Hazy's H100 measurements (%, ms, x).
        hazy_b200_us, hazy_b200_speedup_vs_vllm, hazy_b200_step_us: its B200 measurements (µs, x, µs);
            hazy_engines_util_pct: the serving engines' bandwidth utilisation (%); hazy_lm_head_share_pct: the LM
            head's share of the weight wait (%); hazy_b200_activations_us, hazy_b200_rmsnorm_matvec_us,
            hazy_b200_weight_wait_us, hazy_b200_warp_sync_us, hazy_b200_setup_us: their B200 step breakdown (µs).
        pages, page_KiB, buffer_KB, down_chunks, instruction_us: the megakernel's default page buffer (pages of
            KiB, KB in all), down-projection chunks and instruction overhead (µs).
        layer_instruction_kinds: the instruction kinds of one layer of the megakernel schedule (sorted str).
    """

    params_B: float
    weights_GB: float
    bandwidth_TBs: float
    ideal_us: float
    ideal_rate: float
    weights_only_us: float
    kv_len: int
    kv_us: float
    oproj_MB: float
    oproj_us: float
    launch_gap_stream_us: float
    launch_gap_graphs_us: float
    n_kernels: int
    n_layers: int
    qkv_blocks16: int
    qkv_blocks24: int
    qkv16_util_pct: float
    qkv24_util_pct: float
    num_sms: int
    faster_num_sms: int
    faster_idle_sms_512: int
    hazy_stall_us: float
    hazy_kernels_per_layer: int
    hazy_rate: float
    hazy_gaps_us: float
    multi_bytes_us: float
    multi_efficiency_loss_us: float
    multi_launch_gaps_us: float
    multi_prologues_us: float
    multi_tails_us: float
    multi_small_kernels_us: float
    multi_total_us: float
    mega_total_us: float
    multi_gaps_us: float
    multi_util_pct: float
    mega_util_pct: float
    speedup: float
    multi_rate: float
    mega_rate: float
    mega_sync_us: float
    mega_overhead_us: float
    mega_imbalance_us: float
    faster_multi_util_pct: float
    faster_mega_util_pct: float
    faster_speedup: float
    faster_multi_total_us: float
    faster_mega_total_us: float
    faster_mega_sync_us: float
    faster_bandwidth_ratio: float
    hazy_util_pct: float
    hazy_h100_ms: float
    hazy_speedup_vs_vllm: float
    hazy_speedup_vs_sglang: float
    hazy_b200_us: float
    hazy_b200_speedup_vs_vllm: float
    hazy_engines_util_pct: float
    hazy_b200_step_us: float
    hazy_lm_head_share_pct: float
    hazy_b200_activations_us: float
    hazy_b200_rmsnorm_matvec_us: float
    hazy_b200_weight_wait_us: float
    hazy_b200_warp_sync_us: float
    hazy_b200_setup_us: float
    pages: int
    page_KiB: float
    buffer_KB: float
    down_chunks: int
    instruction_us: float
    layer_instruction_kinds: tuple
    flop_per_byte: float = 0.0
    multi_gap_share: float = 0.0
    multi_gap_per_kernel_us: float = 0.0
    ex11_util: float = 0.0
    ex11_gap_share: float = 0.0
    ex11_gap_us: float = 0.0


def megakernel_report(model="Llama-3.2-1B", gpu="H100", faster_gpu="B200") -> MegakernelReport:
    """The quantities §8 of the book quotes, from :func:`labcore.compare_modes` on ``gpu`` and ``faster_gpu`` at the
    default assumptions, the model's shapes, the wave arithmetic and :data:`labcore.HAZY_MEASURED`.

    Args:
        model: a Model or preset name.
        gpu, faster_gpu: GPUs or preset names.
    Returns:
        :class:`MegakernelReport` (display units, documented per field).
    Raises:
        as :func:`labcore.timeline`.
    Source:
        lecture 11 §8.1-§8.3; Hazy Research, "Look Ma, No Bubbles!" (2025).
    """
    m, g, fg = get_model(model), get_gpu(gpu), get_gpu(faster_gpu)
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
        params_B=m.num_params / 1e9,
        weights_GB=m.weight_bytes() / 1e9,
        bandwidth_TBs=g.hbm_bandwidth / 1e12,
        ideal_us=mk.ideal / _US,
        ideal_rate=1 / mk.ideal,
        weights_only_us=bdm["weights"] / _US,
        kv_len=mk.assumptions["kv_len"],
        kv_us=bdm["kv_cache"] / _US,
        oproj_MB=o_proj.bytes() / 1e6,
        oproj_us=o_proj.bytes() / g.hbm_bandwidth / _US,
        launch_gap_stream_us=H["launch_gap_stream"] / _US,
        launch_gap_graphs_us=H["launch_gap_graphs"] / _US,
        n_kernels=mk.num_kernels,
        n_layers=m.num_layers,
        qkv_blocks16=blocks16,
        qkv_blocks24=blocks24,
        qkv16_util_pct=100 * wave_utilization(blocks16, g.num_sms),
        qkv24_util_pct=100 * wave_utilization(blocks24, g.num_sms),
        num_sms=g.num_sms,
        faster_num_sms=fg.num_sms,
        faster_idle_sms_512=idle_sms_last_wave(512, fg.num_sms),
        hazy_stall_us=H["stall_per_kernel"] / _US,
        hazy_kernels_per_layer=H["kernels_per_layer"],
        hazy_rate=stall_bound_throughput(mk.ideal, stall_kernels, H["stall_per_kernel"]),
        hazy_gaps_us=stall_kernels * H["stall_per_kernel"] / _US,
        multi_bytes_us=(bd["weights"] + bd["kv_cache"]) / _US,
        multi_efficiency_loss_us=bd["bandwidth_efficiency"] / _US,
        multi_launch_gaps_us=bd["launch_gaps"] / _US,
        multi_prologues_us=bd["prologues"] / _US,
        multi_tails_us=bd["tails"] / _US,
        multi_small_kernels_us=bd["small_kernels"] / _US,
        multi_total_us=mk.total / _US,
        mega_total_us=mg.total / _US,
        multi_gaps_us=(mk.total - mk.ideal / mk.assumptions["bandwidth_efficiency"]) / _US,
        multi_util_pct=100 * c["util_multi"],
        mega_util_pct=100 * c["util_mega"],
        speedup=c["speedup"],
        multi_rate=mk.tokens_per_second,
        mega_rate=mg.tokens_per_second,
        mega_sync_us=bdm["sync_waits"] / _US,
        mega_overhead_us=bdm["instruction_overhead"] / _US,
        mega_imbalance_us=(bdm["uneven_bytes"] + bdm["imbalance"]) / _US,
        faster_multi_util_pct=100 * cf["util_multi"],
        faster_mega_util_pct=100 * cf["util_mega"],
        faster_speedup=cf["speedup"],
        faster_multi_total_us=cf["multi"].total / _US,
        faster_mega_total_us=cf["mega"].total / _US,
        faster_mega_sync_us=cf["mega"].breakdown()["sync_waits"] / _US,
        faster_bandwidth_ratio=fg.hbm_bandwidth / g.hbm_bandwidth,
        hazy_util_pct=100 * H["h100_bandwidth_utilization"],
        hazy_h100_ms=H["h100_forward_bound"] / 1e-3,
        hazy_speedup_vs_vllm=H["h100_speedup_vs_vllm"],
        hazy_speedup_vs_sglang=H["h100_speedup_vs_sglang_bound"],
        hazy_b200_us=H["b200_forward_bound"] / _US,
        hazy_b200_speedup_vs_vllm=H["b200_speedup_vs_vllm_bound"],
        hazy_engines_util_pct=100 * H["engines_bandwidth_utilization_bound"],
        hazy_b200_step_us=H["b200_breakdown_total"] / _US,
        hazy_lm_head_share_pct=100 * H["lm_head_share_of_weight_wait"],
        hazy_b200_activations_us=b200["activations and consistency"] / _US,
        hazy_b200_rmsnorm_matvec_us=b200["RMSNorm + matrix-vector"] / _US,
        hazy_b200_weight_wait_us=b200["waiting on weights"] / _US,
        hazy_b200_warp_sync_us=b200["warp synchronisation"] / _US,
        hazy_b200_setup_us=b200["setup and other"] / _US,
        pages=d["pages"],
        page_KiB=d["page_bytes"] / 1024,
        buffer_KB=d["pages"] * d["page_bytes"] / 1e3,
        down_chunks=d["down_chunks"],
        instruction_us=d["instruction_overhead"] / _US,
        layer_instruction_kinds=tuple(sorted({w.kind for w in work_items(m, g, mode="megakernel") if w.layer == 0})),
        **_gap_shares(m, mk),
    )


def _gap_shares(m, mk) -> dict:
    """The gaps' share of the multi-kernel step in the §8 model and in exercise 11's flat charge (fractions), and
    batch-1 decode's arithmetic intensity (2 FLOP per weight over its bytes)."""
    from flashbook.exercises import exercise

    e = exercise(11).compute()[1]
    gaps = mk.total - mk.ideal / mk.assumptions["bandwidth_efficiency"]
    util = e["t"] / (e["t"] + e["overhead"])
    return dict(flop_per_byte=2 * m.num_params / m.weight_bytes(), multi_gap_share=gaps / mk.total,
                multi_gap_per_kernel_us=gaps / mk.num_kernels / _US, ex11_util=util, ex11_gap_share=1 - util,
                ex11_gap_us=e["overhead_s"] / _US)


@cache
def numbers() -> MegakernelReport:
    """:func:`megakernel_report` for the page's setting: Llama-3.2-1B on an H100, and a B200 as the faster GPU."""
    return megakernel_report("Llama-3.2-1B", "H100", faster_gpu="B200")
