"""Batch-1 decode as a timeline: many small kernels versus one persistent megakernel (lecture §7-§8).

Sources: B. Spector, J. Juravsky, S. Sul, O. Dugan, D. Lim, D. Fu, S. Arora, C. Re (Hazy Research),
"Look Ma, No Bubbles! Designing a Low-Latency Megakernel for Llama-1B", blog post, 2025-05-27, and its
code (HazyResearch/Megakernels, Llama-1B demo: 16-row matrix-vector blocks, 13 shared-memory pages of
16 KiB, counters in global memory); lecture 11 §8.3 for the timeline model.

Two performance models of one forward pass of batch-1 decode, both driven by one
:func:`timeline` call:

``mode="multi-kernel"``
    7 kernels per layer (RMSNorm; QKV + RoPE; attention; O projection + residual; RMSNorm; gate/up +
    SiLU; down + residual), then the final RMSNorm and the LM head. Every kernel pays a launch gap;
    every kernel that reads HBM (weights or the KV cache) pays a prologue (first bytes arriving) and
    then reads its bytes in *waves*: its output rows are cut into blocks of ``rows_per_block``, one
    block per SM at a time, each SM streaming at its share ``BW x eff / SMs`` of the bandwidth, so a
    last partial wave costs time (the tail). Kernels that read almost nothing (RMSNorm) cost a fixed
    ``small_kernel``.

``mode="megakernel"``
    One persistent kernel. The same work is cut into instructions (RMSNorm + QKV + RoPE; partial
    attention; attention reduction; O projection + residual; RMSNorm + gate/up + SiLU; down projection
    + residual in ``down_chunks`` column chunks; RMSNorm + LM head) dealt round-robin to the SMs. Each
    SM's loader streams weights continuously at the same per-SM share, at most ``pages x page_bytes``
    ahead of what the SM has consumed; an instruction waits only for the instructions whose
    activations it needs (all of the producer, or for the down projection the matching chunk of
    gate/up) plus ``sync`` for the counter in global memory, and costs ``instruction_overhead`` when
    its last byte is in.

All times are seconds, bytes are bytes, bandwidths bytes/s. The assumptions are named keywords with
documented defaults (:data:`TIMELINE_DEFAULTS`, and which mode uses each: :data:`TIMELINE_USED_BY`); the
breakdown of a timeline into causes (:meth:`Timeline.breakdown`) has non-negative terms that add up to the
total; :func:`megakernel_report` gathers every quantity the book's §8 quotes. Wave arithmetic lives in
:mod:`labcore.waves`; the HBM count of fused softmax (§7) in :func:`labcore.hbm.softmax_fusion_io`.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .checks import cdiv, choice, flag, fraction, positive_float, positive_int
from .hardware import GPU, get_gpu
from .models import Model, get_model
from .waves import idle_sms_last_wave, wave_utilization

__all__ = [
    "stall_bound_throughput", "HAZY_MEASURED", "TIMELINE_DEFAULTS", "TIMELINE_USED_BY", "KINDS", "EVENT_SMS",
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


#: Published measurements of Llama-3.2-1B batch-1 decode, for comparison with the model (not inputs to it).
#: Source: Hazy Research, "Look Ma, No Bubbles!" (2025-05-27). Times in seconds; ``*_bound`` values are
#: the post's "under"/"more than" bounds.
HAZY_MEASURED: dict = {
    "source": "Spector et al. (Hazy Research), Look Ma, No Bubbles!, blog post, 2025-05-27",
    "launch_gap_stream": 2.1e-6,           # empty kernel on a plain stream, H100
    "launch_gap_graphs": 1.3e-6,           # the same inside a CUDA Graph
    "h100_forward_bound": 1e-3,            # < 1 ms per forward pass
    "h100_bandwidth_utilization": 0.78,
    "h100_speedup_vs_vllm": 2.5,           # ~2.5x
    "h100_speedup_vs_sglang_bound": 1.5,   # > 1.5x
    "b200_forward_bound": 680e-6,          # < 680 us
    "b200_speedup_vs_vllm_bound": 3.5,     # > 3.5x
    "engines_bandwidth_utilization_bound": 0.5,   # vLLM/SGLang reach at most ~50% on H100
    # B200 breakdown of a ~600 us forward pass
    "b200_breakdown": {"activations and consistency": 250e-6, "RMSNorm + matrix-vector": 200e-6,
                       "waiting on weights": 30e-6, "warp synchronisation": 40e-6, "setup and other": 80e-6},
    "b200_breakdown_total": 600e-6,
    "lm_head_share_of_weight_wait": 0.4,
    # back-of-envelope: 7 kernels per layer x 16 layers x ~5 us of stall each
    "stall_per_kernel": 5e-6,
    "kernels_per_layer": 7,
}


# ---------------------------------------------------------------------------------------------------
# Assumptions
# ---------------------------------------------------------------------------------------------------

#: Every knob of :func:`timeline`, its default and why (SI units).
TIMELINE_DEFAULTS: dict = {
    # Hazy post: an empty kernel costs ~1.3 us back to back inside a CUDA Graph on H100 (2.1 us on a
    # plain stream). Applies to every kernel in multi-kernel mode; the megakernel launches once and that
    # single launch overlaps the previous step, so it is left out (<= 2.1 us, 0.3% of a forward).
    "launch_gap": HAZY_MEASURED["launch_gap_graphs"],
    # Lecture §8.3 assumption: after a kernel starts it waits ~1 us (a few thousand cycles of HBM latency
    # plus setup) before its first weights arrive. Paid by every HBM-reading kernel, once by the megakernel.
    "prologue": 1.0e-6,
    # Lecture §8.3 assumption: a kernel that reads almost nothing (a separate RMSNorm) still costs ~2 us
    # of launch-to-finish work; Hazy report activation reads/writes of ~0.5 us each.
    "small_kernel": 2.0e-6,
    # Lecture §8.3 assumption: a counter in global memory (atomic increment, then a spin that sees it)
    # costs ~1 us between a producer finishing and a consumer starting; also PDL's grid-dependency sync.
    "sync": 1.0e-6,
    # Lecture §8.3 assumption: fixed work per megakernel instruction (decode it, read the activations,
    # write the outputs, bump the counter) ~0.5 us; Hazy's B200 breakdown puts activation traffic and
    # consistency at ~250 us over a forward.
    "instruction_overhead": 0.5e-6,
    # Lecture §8.3 assumption: a streaming kernel reaches ~90% of the quoted HBM bandwidth.
    "bandwidth_efficiency": 0.9,
    # Hazy's Llama-1B code: matrix-vector instructions of 16 output rows.
    "rows_per_block": 16,
    # Hazy post: the first 213 KB of an H100 SM's shared memory as 13 pages of 16 KiB.
    "pages": 13,
    "page_bytes": 16 * 1024,
    # Hazy post: the down projection consumes its input in 4 chunks with their own counters.
    "down_chunks": 4,
    # Tokens in the KV cache. A short chat turn; with 128 tokens Llama-1B's bytes per step are 739.0 us
    # at 3.35 TB/s (weights alone 737.8 us), the lecture's 739 us.
    "kv_len": 128,
    # Flash-decoding splits of the KV cache per KV head (None: as many as fill the SMs, SMs // H_kv).
    "attention_splits": None,
    # Programmatic Dependent Launch (multi-kernel only): each kernel launches and runs its prologue
    # while its predecessor runs, then waits on the whole predecessor (``sync``), so the launch gap and
    # the prologue disappear and a grid-wide sync remains.
    "pdl": False,
    # BF16 weights and KV cache.
    "dtype_bytes": 2,
}

#: Which execution mode each assumption of :data:`TIMELINE_DEFAULTS` affects (the book's §8 table).
TIMELINE_USED_BY: dict = {
    "launch_gap": "multi-kernel", "prologue": "both (megakernel: once)", "small_kernel": "multi-kernel",
    "sync": "megakernel (and PDL)", "instruction_overhead": "megakernel", "bandwidth_efficiency": "both",
    "rows_per_block": "both", "pages": "megakernel", "page_bytes": "megakernel", "down_chunks": "megakernel",
    "kv_len": "both", "attention_splits": "both", "pdl": "multi-kernel", "dtype_bytes": "both",
}

#: Megakernel timelines carry :class:`TimelineEvent` objects for SMs 0 .. EVENT_SMS-1 (all SMs in ``sm_arrays``).
EVENT_SMS = 4

#: Kernel/instruction kinds, for colours and breakdowns.
KINDS = ("norm", "qkv", "attention", "reduction", "o_proj", "gate_up", "down", "lm_head")

#: Assumptions that change the list of kernels/instructions or the buffers (the others are scalars a
#: batched megakernel simulation can vary per variant).
_STRUCTURAL = ("rows_per_block", "pages", "page_bytes", "down_chunks", "kv_len", "attention_splits", "dtype_bytes")


def resolve_assumptions(**assumptions) -> dict:
    """Every assumption of :func:`timeline`, checked, with the defaults of :data:`TIMELINE_DEFAULTS` filled in.

    Args:
        ``**assumptions``: any keys of :data:`TIMELINE_DEFAULTS` (SI units).
    Returns:
        dict with every key of :data:`TIMELINE_DEFAULTS`.
    Raises:
        TypeError: an unknown name, a wrongly typed value (``pdl`` must be a bool).
        ValueError: a negative time, ``bandwidth_efficiency`` outside (0, 1], a count < 1 (``kv_len`` < 0).
    Source: lecture 11 §8.3 (the assumptions), Hazy Research megakernel post (launch gaps, pages, chunks).
    """
    unknown = set(assumptions) - set(TIMELINE_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown assumption(s) {', '.join(sorted(unknown))}; known: {', '.join(TIMELINE_DEFAULTS)}")
    a = {**TIMELINE_DEFAULTS, **assumptions}
    for k in ("launch_gap", "prologue", "small_kernel", "sync", "instruction_overhead"):
        a[k] = positive_float(a[k], k, allow_zero=True)
    a["bandwidth_efficiency"] = fraction(a["bandwidth_efficiency"], "bandwidth_efficiency")
    for k in ("rows_per_block", "pages", "page_bytes", "down_chunks", "dtype_bytes"):
        a[k] = positive_int(a[k], k)
    a["kv_len"] = positive_int(a["kv_len"], "kv_len", minimum=0)
    if a["attention_splits"] is not None:
        a["attention_splits"] = positive_int(a["attention_splits"], "attention_splits")
    a["pdl"] = flag(a["pdl"], "pdl")
    return a


def _check_gpu(gpu) -> GPU:
    gpu = get_gpu(gpu)
    positive_float(gpu.hbm_bandwidth, "gpu.hbm_bandwidth")
    positive_int(gpu.num_sms, "gpu.num_sms")
    return gpu


# ---------------------------------------------------------------------------------------------------
# The work of one forward pass
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkItem:
    """One kernel (multi-kernel) or one group of equal instructions (megakernel) of a forward pass.

    Attributes:
        name: e.g. ``"L3.qkv"`` (layer 3) or ``"lm_head"``. kind: one of :data:`KINDS`. layer: int (-1 = head).
        blocks: thread blocks (multi-kernel) or instructions (megakernel), int >= 1.
        block_bytes: bytes one full block reads. weight_bytes, kv_bytes: bytes the item reads in all.
        pad_bytes: bytes the full blocks would read beyond what the item reads (the last block's missing
            rows, or keys past the end of the last split), >= 0 by construction:
            ``blocks x block_bytes = weight_bytes + kv_bytes + pad_bytes``.
        deps: ``"prev"`` (waits for all of the previous item) or ``"chunks"`` (the down projection: chunk c
            waits for chunk c of gate/up).
    """

    name: str
    kind: str
    layer: int
    blocks: int
    block_bytes: float
    weight_bytes: float
    kv_bytes: float
    pad_bytes: float = 0.0
    deps: str = "prev"

    @property
    def read_bytes(self) -> float:
        """Bytes the item reads from HBM: ``weight_bytes + kv_bytes``."""
        return self.weight_bytes + self.kv_bytes


def work_items(model, gpu, *, mode: str = "multi-kernel", **assumptions) -> tuple:
    """The kernels (multi-kernel) or instruction groups (megakernel) of one forward pass, in order.

    Args:
        model, gpu, mode, ``**assumptions``: as :func:`timeline`.
    Returns:
        tuple of :class:`WorkItem`. Llama-3.2-1B multi-kernel: 114 kernels (7 per layer, final norm,
        LM head); its megakernel's first item, RMSNorm + QKV, is 192 instructions of 16 rows.
    Raises:
        As :func:`timeline`.
    Source: lecture 11 §8.2-§8.3 (the kernels and the instruction set), Hazy Research megakernel post.
    """
    model = get_model(model)
    gpu = _check_gpu(gpu)
    mode = choice(mode, "mode", ("multi-kernel", "megakernel"))
    return _items(model, gpu, resolve_assumptions(**assumptions), mode)


def _items(model: Model, gpu: GPU, a: dict, mode: str) -> tuple:
    return _build_items(model, gpu, tuple(a[k] for k in _STRUCTURAL), mode)


@lru_cache(maxsize=64)
def _build_items(model: Model, gpu: GPU, structural: tuple, mode: str) -> tuple:
    a = dict(zip(_STRUCTURAL, structural))
    m, db, rpb = model, a["dtype_bytes"], a["rows_per_block"]
    H = m.hidden_size
    mats = {x.name: x for x in m.layer_matrices()}
    if a["attention_splits"] is not None and a["attention_splits"] > max(a["kv_len"], 1):
        raise ValueError(f"attention_splits must not exceed kv_len (every split needs at least one key); got "
                         f"attention_splits={a['attention_splits']} for kv_len={a['kv_len']}")
    # default: as many splits as fill the SMs, but never more than there are keys
    splits = a["attention_splits"] or max(1, min(gpu.num_sms // m.num_kv_heads, a["kv_len"]))
    gate_up_instructions = cdiv(m.intermediate_size, rpb)
    if mode == "megakernel" and a["down_chunks"] > gate_up_instructions:
        raise ValueError(f"down_chunks must not exceed the gate/up instructions it waits on: {m.name} has "
                         f"{gate_up_instructions} with rows_per_block={rpb}, got down_chunks={a['down_chunks']} "
                         "(use fewer rows_per_block or fewer down_chunks)")
    kv_row = 2 * m.head_dim * db                       # K and V bytes of one key of one KV head
    kv_layer = a["kv_len"] * m.num_kv_heads * kv_row
    keys_per_split = cdiv(a["kv_len"], splits)
    attn_pad = (splits * keys_per_split - a["kv_len"]) * m.num_kv_heads * kv_row
    norm_b = m.norm_params * db
    # the token's row of each embedding table, read by the first kernel / instruction
    embed_b = m.hidden_size * db * (1 + (1 if m.learned_positions else 0))
    qkv_rows = mats["q"].rows + mats["k"].rows + mats["v"].rows
    qkv_b = sum(mats[x].bytes(db) for x in "qkv")
    gated = m.mlp == "gated"
    up_b = mats["up"].bytes(db) + (mats["gate"].bytes(db) if gated else 0)
    inter = m.intermediate_size

    def mv(name, kind, layer, rows, total_bytes, extra=0.0, deps="prev", chunks=1):
        """A matrix-vector item: ``rows`` output rows in blocks of ``rows_per_block`` (x ``chunks``)."""
        reads = total_bytes + extra
        block_rows = min(rpb, rows)
        row_blocks = cdiv(rows, rpb)
        full_block = reads * block_rows / rows / chunks                    # bytes of a full block
        pad = (row_blocks * block_rows - rows) * (reads / rows)            # rows the last block lacks
        return WorkItem(name, kind, layer, row_blocks * chunks, full_block, reads, 0.0, pad, deps)

    def norm(name, layer, extra=0.0):
        return WorkItem(name, "norm", layer, 1, 0.0, norm_b + extra, 0.0)

    def attention(layer):
        return WorkItem(f"L{layer}.attention", "attention", layer, m.num_kv_heads * splits, keys_per_split * kv_row,
                        0.0, kv_layer, attn_pad)

    items: list[WorkItem] = []
    for L in range(m.num_layers):
        p = f"L{L}."
        first = embed_b if L == 0 else 0.0
        if mode == "multi-kernel":
            items.append(norm(p + "norm1", L, extra=first))
            items.append(mv(p + "qkv", "qkv", L, qkv_rows, qkv_b))
            items.append(attention(L))
            items.append(mv(p + "o_proj", "o_proj", L, H, mats["o"].bytes(db)))
            items.append(norm(p + "norm2", L))
            # the kernel's output rows are gate's and up's rows together (2 x intermediate when gated)
            items.append(mv(p + "gate_up", "gate_up", L, inter * (2 if gated else 1), up_b))
            items.append(mv(p + "down", "down", L, H, mats["down"].bytes(db)))
        else:
            items.append(mv(p + "qkv", "qkv", L, qkv_rows, qkv_b, extra=norm_b + first))
            items.append(attention(L))
            items.append(WorkItem(p + "reduction", "reduction", L, m.num_heads, 0.0, 0.0, 0.0))
            items.append(mv(p + "o_proj", "o_proj", L, H, mats["o"].bytes(db)))
            # one instruction = rows_per_block rows of gate AND of up, so it can apply SiLU(gate) * up
            items.append(mv(p + "gate_up", "gate_up", L, inter, up_b, extra=norm_b))
            items.append(mv(p + "down", "down", L, H, mats["down"].bytes(db), deps="chunks", chunks=a["down_chunks"]))
    head = m.lm_head()
    if mode == "multi-kernel":
        items.append(norm("final_norm", -1))
        items.append(mv("lm_head", "lm_head", -1, head.rows, head.bytes(db)))
    else:
        items.append(mv("lm_head", "lm_head", -1, head.rows, head.bytes(db), extra=norm_b))
    return tuple(items)


# ---------------------------------------------------------------------------------------------------
# Timeline objects
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineEvent:
    """One bar of the Gantt chart.

    Attributes:
        lane: ``"GPU"`` for a multi-kernel kernel, ``"SM <i>"`` for a megakernel instruction.
        name: kernel/instruction name (``"L3.qkv"``). kind: one of ``KINDS``. layer: int (-1 = head).
        start, end: seconds from the start of the forward pass.
        parts: seconds of the event by cause (multi-kernel: ``launch_gap``, ``prologue``, ``work``,
            ``tail``; megakernel: ``wait`` before the instruction could start and ``busy``).
    """

    lane: str
    name: str
    kind: str
    layer: int
    start: float
    end: float
    parts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Timeline:
    """One forward pass of batch-1 decode under one execution mode.

    Attributes:
        mode: ``"multi-kernel"`` or ``"megakernel"``. model, gpu: the presets used.
        assumptions: the resolved knobs (see :data:`TIMELINE_DEFAULTS`). total: seconds per forward pass.
        ideal: seconds to read the weights and KV cache once at full bandwidth.
        events: tuple of :class:`TimelineEvent` (per kernel; or per instruction on SMs 0..EVENT_SMS-1).
        num_kernels: kernels launched per forward pass.
        sm_arrays: megakernel only: dict of per-instruction numpy arrays (``sm``, ``start``, ``end``,
            ``ready``, ``op``: the index of its item in ``work``) for drawing many lanes quickly.
        work: the :class:`WorkItem` tuple the timeline ran (:func:`work_items`).
    """

    mode: str
    model: Model
    gpu: GPU
    assumptions: dict
    total: float
    ideal: float
    events: tuple
    num_kernels: int
    _breakdown: dict
    sm_arrays: dict | None = None
    work: tuple = ()

    def breakdown(self) -> dict:
        """Seconds per cause. Every term is >= 0 by construction (a sum, product or difference of
        quantities ordered by the model, never clipped) and the terms add up to ``total`` (to rounding).

        Multi-kernel: ``weights`` and ``kv_cache`` (the bytes the HBM-streaming kernels read / peak
        bandwidth), ``bandwidth_efficiency`` (the same bytes at ``eff`` of the bandwidth minus at full),
        ``launch_gaps``, ``prologues``, ``tails`` (idle SMs of each kernel's last wave and the rows its last
        block lacks), ``small_kernels`` (their fixed cost, which covers the few bytes they read: norm weights
        and the embedding row), and ``pdl_syncs`` with ``pdl=True``.

        Megakernel: ``weights``, ``kv_cache``, ``bandwidth_efficiency`` over all bytes, ``prologue``,
        ``uneven_bytes`` (the busiest SM streams more than the average: its extra bytes at its share of the
        bandwidth, averaged over SMs), ``sync_waits`` (the total with ``sync`` minus without; the simulation
        is monotone in every cost, so this is >= 0), ``instruction_overhead`` (with minus without, ``sync``
        at 0) and ``imbalance`` (what remains beyond the busiest SM's stream: waits for activations the page
        buffer cannot hide, the last instruction). A timeline built with ``decompose=False`` has ``other``
        in place of the last three.
        """
        return dict(self._breakdown)

    @property
    def bandwidth_utilization(self) -> float:
        """``ideal / total``: fraction of the peak HBM bandwidth the forward pass achieves."""
        return self.ideal / self.total

    @property
    def tokens_per_second(self) -> float:
        """Forward passes (tokens at batch 1) per second: ``1 / total``."""
        return 1.0 / self.total


def timeline(model, gpu, *, mode: str = "multi-kernel", decompose: bool = True, **assumptions) -> Timeline:
    """Timeline of one batch-1 decode forward pass of ``model`` on ``gpu``.

    Args:
        model: a :class:`~labcore.models.Model` or preset name (``"Llama-3.2-1B"``).
        gpu: a :class:`~labcore.hardware.GPU` or preset name (``"H100"``, ``"B200"``).
        mode: ``"multi-kernel"`` or ``"megakernel"``.
        decompose: megakernel only: also simulate the pass without ``sync`` and without
            ``instruction_overhead`` (in the same batch, about the cost of one run) so the breakdown can name
            those causes; False gives one ``other`` term instead.
        **assumptions: any key of :data:`TIMELINE_DEFAULTS` (seconds, bytes, fractions), each documented there:
            ``launch_gap`` (1.3e-6, CUDA Graphs; 2.1e-6 on a plain stream), ``prologue`` (1e-6),
            ``small_kernel`` (2e-6), ``sync`` (1e-6), ``instruction_overhead`` (0.5e-6),
            ``bandwidth_efficiency`` (0.9), ``rows_per_block`` (16), ``pages`` (13), ``page_bytes``
            (16 KiB), ``down_chunks`` (4), ``kv_len`` (128), ``attention_splits`` (None = fill the
            SMs), ``pdl`` (False), ``dtype_bytes`` (2).
    Returns:
        :class:`Timeline` with ``total`` (s), ``events`` and ``breakdown()``.
    Raises:
        ValueError: unknown model/GPU/mode, non-positive bandwidth, zero SMs, an assumption out of range,
            ``attention_splits > kv_len``, or more ``down_chunks`` than gate/up instructions to wait on.
        TypeError: an unknown assumption name or a wrongly typed value.
    Source: lecture 11 §8.3 (the model), Hazy Research megakernel post (launch gaps, pages, chunks).
    """
    model = get_model(model)
    gpu = _check_gpu(gpu)
    mode = choice(mode, "mode", ("multi-kernel", "megakernel"))
    a = resolve_assumptions(**assumptions)
    items = _items(model, gpu, a, mode)
    if mode == "multi-kernel":
        return _multi_kernel(model, gpu, a, items)
    return _megakernel(model, gpu, a, items, flag(decompose, "decompose"))


def _bytes_at_peak(gpu, a, items) -> dict:
    """The streaming part of a breakdown: ``items``' weight and KV bytes at peak bandwidth, and the loss
    from streaming them at ``bandwidth_efficiency`` of it (>= 0: x / eff >= x for eff <= 1)."""
    bw = gpu.hbm_bandwidth
    w = sum(o.weight_bytes for o in items) / bw
    kv = sum(o.kv_bytes for o in items) / bw
    return {"weights": w, "kv_cache": kv, "bandwidth_efficiency": (w + kv) / a["bandwidth_efficiency"] - (w + kv)}


def _ideal(gpu, items) -> float:
    """Seconds to read every byte of ``items`` once at peak bandwidth."""
    return sum(o.read_bytes for o in items) / gpu.hbm_bandwidth


def _multi_kernel(model, gpu, a, items) -> Timeline:
    num_sms = gpu.num_sms
    rate = gpu.hbm_bandwidth * a["bandwidth_efficiency"]          # bytes/s of all SMs together
    t, events = 0.0, []
    sums = {"launch_gaps": 0.0, "pdl_syncs": 0.0, "prologues": 0.0, "tails": 0.0, "small_kernels": 0.0}
    for i, o in enumerate(items):
        if a["pdl"] and i > 0:
            gap, pro = a["sync"], 0.0
            sums["pdl_syncs"] += gap
        else:
            gap = a["launch_gap"]
            sums["launch_gaps"] += gap
            pro = a["prologue"] if o.kind != "norm" else 0.0
        if o.kind == "norm":
            work, tail = a["small_kernel"], 0.0
            sums["small_kernels"] += work
        else:
            # waves x one block's time = (bytes read + idle SMs' share of the last wave + padding) / rate
            work = o.read_bytes / rate
            tail = (idle_sms_last_wave(o.blocks, num_sms) * o.block_bytes + o.pad_bytes) / rate
            sums["tails"] += tail
        sums["prologues"] += pro
        dur = gap + pro + work + tail
        events.append(TimelineEvent("GPU", o.name, o.kind, o.layer, t, t + dur,
                                    {"launch_gap": gap, "prologue": pro, "work": work, "tail": tail}))
        t += dur
    streaming = [o for o in items if o.kind != "norm"]
    bd = {**_bytes_at_peak(gpu, a, streaming), **sums}
    if not a["pdl"]:
        bd.pop("pdl_syncs")
    return Timeline("multi-kernel", model, gpu, a, t, _ideal(gpu, items), tuple(events), len(items), bd, None, items)


def _megakernel(model, gpu, a, items, decompose) -> Timeline:
    # With ``decompose``, three variants in one batched simulation (about the cost of one): as given,
    # without ``sync``, and without ``sync`` or ``instruction_overhead``; the differences are causes.
    variants = [a, {**a, "sync": 0.0}, {**a, "sync": 0.0, "instruction_overhead": 0.0}] if decompose else [a]
    start, end, ready, stream_end, uneven = _simulate_megakernel(items, gpu, variants)
    total_v = end.max(axis=1)
    total = float(total_v[0])
    start0, end0 = start[0], end[0]
    num_sms, G = gpu.num_sms, end0.size
    op_of = np.repeat(np.arange(len(items)), [o.blocks for o in items])
    sm = np.arange(G) % num_sms
    arrays = {"sm": sm, "start": start0, "end": end0, "ready": ready[0], "op": op_of}
    # TimelineEvent objects for the first EVENT_SMS lanes only (all lanes are in ``sm_arrays``)
    sel = np.nonzero(sm < EVENT_SMS)[0]
    prev_end = np.where(sel >= num_sms, end0[np.maximum(sel - num_sms, 0)], 0.0)
    events = tuple(
        TimelineEvent(f"SM {s}", items[oi].name, items[oi].kind, items[oi].layer, st, en,
                      {"wait": st - pe, "busy": en - st})          # st = max(pe, ready) >= pe
        for s, oi, st, en, pe in zip(sm[sel].tolist(), op_of[sel].tolist(), start0[sel].tolist(),
                                     end0[sel].tolist(), prev_end.tolist())
    )
    bd = {**_bytes_at_peak(gpu, a, items), "prologue": a["prologue"], "uneven_bytes": float(uneven[0])}
    if decompose:
        t_nosync, t_bare = float(total_v[1]), float(total_v[2])
        bd |= {"sync_waits": total - t_nosync, "instruction_overhead": t_nosync - t_bare,
               "imbalance": t_bare - float(stream_end[2])}
    else:
        bd["other"] = total - float(stream_end[0])
    return Timeline("megakernel", model, gpu, a, total, _ideal(gpu, items), events, 1, bd, arrays, items)


def _megakernel_totals(model: Model, gpu: GPU, variants: list) -> np.ndarray:
    """Megakernel ``total`` (seconds) for each resolved assumption dict in ``variants``; variants that
    share the structural assumptions are simulated in one batch."""
    totals = np.empty(len(variants))
    groups: dict = {}
    for idx, a in enumerate(variants):
        groups.setdefault(tuple(a[k] for k in _STRUCTURAL), []).append(idx)
    for idx in groups.values():
        batch = [variants[j] for j in idx]
        _, end, *_ = _simulate_megakernel(_items(model, gpu, batch[0], "megakernel"), gpu, batch)
        totals[idx] = end.max(axis=1)
    return totals


def _simulate_megakernel(items, gpu, variants):
    """Start, end and ready times (seconds; arrays of shape (V, G)) of every megakernel instruction, the
    busiest SM's streaming bound (V,) and the uneven-bytes term (V,).

    ``variants`` is a list of V resolved assumption dicts that share the structural keys; they may
    differ in ``bandwidth_efficiency``, ``sync``, ``instruction_overhead`` and ``prologue``. All V
    are simulated at once (numpy over instructions x variants), so V variants cost about as much as one.

    Instruction g runs on SM g mod num_sms after that SM's previous instruction g - num_sms (round-robin).
    Let r = BW x eff / num_sms be the SM's share of the bandwidth, C its page buffer (bytes), b_g the
    instruction's bytes and B_g the SM's bytes loaded through g. Then

    - it starts at ``St_g = max(E_{g-num_sms}, ready_g)`` (ready: the end of the producers it needs, + ``sync``);
    - the loader, at most C bytes ahead of consumption, can resume from ``GP_g = max(GP_{g-num_sms},
      St_g - (B_{g-num_sms} + C) / r)`` (``GP = prologue`` before the SM's first instruction);
    - its last byte is in at ``T_g = B_g / r + GP_J``, J the SM's latest instruction up to g whose cap
      ``B_{J-num_sms} + C`` is below ``B_g`` (the SM's "before" slot when there is none). This is the
      streaming recurrence ``T_g = max(T_{g-num_sms} + b_g / r, GP_J + B_g / r)`` solved in closed form:
      GP is non-decreasing, so is J;
    - it ends at ``E_g = max(St_g, T_g) + instruction_overhead``.

    Every step is a max or a sum of non-negative terms, so the times are monotone in ``sync``,
    ``instruction_overhead`` and ``prologue`` (in floating point too: rounding is monotone), and every
    instruction ends after ``prologue + B_last / r`` of its SM: the streaming bound ``prologue + max_s B_s / r``
    is computed with the same operations, so ``total >= bound`` holds exactly.
    """
    a0 = variants[0]
    if any(v[k] != a0[k] for v in variants for k in _STRUCTURAL):
        raise ValueError("batched megakernel variants must share " + ", ".join(_STRUCTURAL))
    num_sms = gpu.num_sms
    C = a0["pages"] * a0["page_bytes"]                                     # page buffer per SM, bytes
    inv_r = np.array([num_sms / (gpu.hbm_bandwidth * v["bandwidth_efficiency"]) for v in variants])  # s/byte
    sync = np.array([v["sync"] for v in variants])
    o_cost = np.array([v["instruction_overhead"] for v in variants])
    prologue = np.array([v["prologue"] for v in variants])
    V = len(variants)

    blocks = [o.blocks for o in items]
    first = np.cumsum([0] + blocks)
    G = int(first[-1])
    K = cdiv(G, num_sms)                                                  # slots per SM
    b = np.zeros(K * num_sms)
    b[:G] = np.repeat([o.read_bytes / o.blocks for o in items], blocks)
    B = np.cumsum(b.reshape(K, num_sms), axis=0)                          # (K, SMs): bytes through slot k
    cap = np.vstack([np.zeros((1, num_sms)), B[:-1]]) + C                 # loader cap while slot k waits
    # J: the SM's latest slot j <= k with cap[j] < B[k], as a row of the padded GP below (slot -1 = before)
    J = np.empty((K, num_sms), dtype=np.int64)
    for s in range(num_sms):
        J[:, s] = np.minimum(np.searchsorted(cap[:, s], B[:, s], side="left") - 1, np.arange(K))
    jrow = ((J + 1) * num_sms + np.arange(num_sms)).ravel()
    cap_t = cap.reshape(-1, 1) * inv_r                                    # (K SMs, V) seconds
    B_t = B.reshape(-1, 1) * inv_r
    # rows g + num_sms of the padded arrays hold instruction g; rows 0..num_sms-1 each SM's "before" state
    E = np.zeros((num_sms + G, V))
    GP = np.empty((num_sms + G, V))
    GP[:num_sms] = prologue
    St_all = np.zeros((G, V))
    R_all = np.zeros((G, V))
    op_end = np.zeros(V)
    for i, o in enumerate(items):
        lo, hi = int(first[i]), int(first[i + 1])
        if i == 0:
            R = np.zeros(V)
        elif o.deps == "chunks":       # down projection: chunk c waits for the matching chunk of gate/up
            nch = a0["down_chunks"]
            bounds = np.linspace(first[i - 1], lo, nch + 1).round().astype(int) + num_sms
            ready_c = np.stack([E[bounds[c]:bounds[c + 1]].max(axis=0) for c in range(nch)]) + sync  # (nch, V)
            R = np.repeat(ready_c, o.blocks // nch, axis=0)
            if len(R) < o.blocks:
                R = np.vstack([R, np.repeat(ready_c[-1:], o.blocks - len(R), axis=0)])
        else:
            R = op_end + sync
        R_all[lo:hi] = R
        chunked = R.ndim == 2
        g = lo
        while g < hi:                  # one round: the next instruction of n different SMs
            n = min(num_sms - g % num_sms, hi - g)
            p, c = g, g + num_sms      # rows p.. hold the same SMs' previous instructions, rows c.. this round
            St = np.maximum(E[p:p + n], R[g - lo:g - lo + n] if chunked else R)
            np.maximum(GP[p:p + n], St - cap_t[g:g + n], out=GP[c:c + n])
            T = GP[jrow[g:g + n]]
            T += B_t[g:g + n]
            np.maximum(St, T, out=T)
            np.add(T, o_cost, out=E[c:c + n])
            St_all[g:g + n] = St
            g += n
        op_end = E[num_sms + lo:num_sms + hi].max(axis=0)
    per_sm = B[-1]                                                        # bytes each SM streams
    busiest = per_sm.max()
    stream_end = prologue + busiest * inv_r                               # the same operations as T above
    uneven = np.mean(busiest - per_sm) * inv_r                            # each difference >= 0
    return St_all.T, E[num_sms:].T, R_all.T, stream_end, uneven


# ---------------------------------------------------------------------------------------------------
# Comparisons and sensitivity (lecture §8.3, code 05 demo 4)
# ---------------------------------------------------------------------------------------------------


def compare_modes(model="Llama-3.2-1B", gpu="H100", **assumptions) -> dict:
    """Both modes at the same assumptions.

    Returns: dict with ``multi`` and ``mega`` (:class:`Timeline`), ``speedup`` (multi / mega total),
    ``util_multi``, ``util_mega`` (fractions) and ``util_gain`` (percentage points).
    Raises: as :func:`timeline`.
    """
    mk = timeline(model, gpu, mode="multi-kernel", **assumptions)
    mg = timeline(model, gpu, mode="megakernel", **assumptions)
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
    multi_tl = [_multi_kernel(model, gpu, a, _items(model, gpu, a, "multi-kernel")) for _, a in runs]
    multi = np.array([t.total for t in multi_tl])
    ideal = np.array([t.ideal for t in multi_tl])                 # both modes read the same bytes
    mega = _megakernel_totals(model, gpu, [a for _, a in runs])   # every megakernel run, batched
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
