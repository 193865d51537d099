"""The work of one batch-1 decode forward pass, and the assumptions of its timeline (lecture §8.2-§8.3).

A forward pass is a list of :class:`WorkItem` (:func:`work_items`): in ``mode="multi-kernel"`` one item per
kernel (7 per layer: RMSNorm; QKV + RoPE; attention; O projection + residual; RMSNorm; gate/up + SiLU; down +
residual; then the final RMSNorm and the LM head); in ``mode="megakernel"`` one item per group of equal
instructions (RMSNorm + QKV + RoPE; partial attention; attention reduction; O projection + residual; RMSNorm +
gate/up + SiLU; down projection + residual in ``down_chunks`` column chunks; RMSNorm + LM head). Each item says
how many blocks (thread blocks, or instructions) it has and how many HBM bytes each reads; the timelines of
:mod:`labcore.forward_timeline` deal them to the SMs.

Every knob of the timeline is a named assumption with its justification (:data:`TIMELINE_DEFAULTS`, checked
by :func:`resolve_assumptions`); which mode each one affects is :data:`TIMELINE_USED_BY`. Hazy Research's
published measurements, the source of several defaults and the numbers the model is compared with, are
:data:`HAZY_MEASURED`.

Sources: B. Spector, J. Juravsky, S. Sul, O. Dugan, D. Lim, D. Fu, S. Arora, C. Re (Hazy Research),
"Look Ma, No Bubbles! Designing a Low-Latency Megakernel for Llama-1B", blog post, 2025-05-27, and its
code (HazyResearch/Megakernels, Llama-1B demo: 16-row matrix-vector blocks, 13 shared-memory pages of
16 KiB, counters in global memory); lecture 11 §8.3 for the timeline model.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .checks import cdiv, choice, positive_float, positive_int, resolve_params
from .hardware import GPU, get_gpu
from .models import Model, get_model

__all__ = ["HAZY_MEASURED", "TIMELINE_DEFAULTS", "TIMELINE_USED_BY", "TIMELINE_MODES", "resolve_assumptions",
           "WorkItem", "work_items"]

#: The two execution modes of a timeline.
TIMELINE_MODES = ("multi-kernel", "megakernel")

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

#: Every knob of :func:`~labcore.timeline`, its default and why (SI units).
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


#: How :func:`resolve_assumptions` checks each assumption (rules of :data:`labcore.checks.PARAM_RULES`).
_RULES = {**dict.fromkeys(("launch_gap", "prologue", "small_kernel", "sync", "instruction_overhead"), "non-negative"),
          "bandwidth_efficiency": "fraction",
          **dict.fromkeys(("rows_per_block", "pages", "page_bytes", "down_chunks", "dtype_bytes"), "count"),
          "kv_len": "count or zero", "attention_splits": "count or None", "pdl": "flag"}

#: Assumptions that change the list of kernels/instructions (the key under which it is cached).
_STRUCTURAL = ("rows_per_block", "down_chunks", "kv_len", "attention_splits", "dtype_bytes")


def resolve_assumptions(**assumptions) -> dict:
    """Every assumption of :func:`~labcore.timeline`, checked, with the defaults of :data:`TIMELINE_DEFAULTS` filled in.

    Args:
        ``**assumptions``: any keys of :data:`TIMELINE_DEFAULTS` (SI units).
    Returns:
        dict with every key of :data:`TIMELINE_DEFAULTS`.
    Raises:
        TypeError: an unknown name, a wrongly typed value (``pdl`` must be a bool).
        ValueError: a negative time, ``bandwidth_efficiency`` outside (0, 1], a count < 1 (``kv_len`` < 0).
    Source: lecture 11 §8.3 (the assumptions), Hazy Research megakernel post (launch gaps, pages, chunks).
    """
    return resolve_params(assumptions, TIMELINE_DEFAULTS, _RULES)


def timeline_gpu(gpu) -> GPU:
    """The GPU of a timeline: a preset name or :class:`~labcore.hardware.GPU`, resolved, with a positive
    ``hbm_bandwidth`` (bytes/s) and ``num_sms``.

    Raises: ValueError for an unknown preset, a bandwidth <= 0 or no SMs; TypeError for a non-GPU.
    """
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
        name: e.g. ``"L3.qkv"`` (layer 3) or ``"lm_head"``. kind: ``"norm"``, ``"qkv"``, ``"attention"``,
            ``"reduction"``, ``"o_proj"``, ``"gate_up"``, ``"down"`` or ``"lm_head"``. layer: int (-1 = head).
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
        model, gpu, mode, ``**assumptions``: as :func:`~labcore.timeline`.
    Returns:
        tuple of :class:`WorkItem`. Llama-3.2-1B multi-kernel: 114 kernels (7 per layer, final norm,
        LM head); its megakernel's first item, RMSNorm + QKV, is 192 instructions of 16 rows.
    Raises:
        As :func:`~labcore.timeline`.
    Source: lecture 11 §8.2-§8.3 (the kernels and the instruction set), Hazy Research megakernel post.
    """
    model, gpu = get_model(model), timeline_gpu(gpu)
    mode = choice(mode, "mode", TIMELINE_MODES)
    return forward_items(model, gpu, resolve_assumptions(**assumptions), mode)


def forward_items(model: Model, gpu: GPU, assumptions: dict, mode: str) -> tuple:
    """:func:`work_items` for a resolved ``model``, ``gpu`` (:func:`timeline_gpu`), ``assumptions``
    (:func:`resolve_assumptions`) and ``mode``, unchecked (cached on the assumptions that change the items).

    Raises: ValueError for ``attention_splits > kv_len`` or more ``down_chunks`` than gate/up instructions.
    """
    return _build_items(model, gpu, tuple(assumptions[k] for k in _STRUCTURAL), mode)


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
