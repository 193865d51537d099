"""Causal load balancing: unequal forward CTAs on the SMs, in FA2's launch order, longest-first and persistent LPT.

With a causal mask, the forward CTA of query block m visits ``m + 1`` key blocks (``J_m`` in general, from
:func:`labcore.hbm.causal_block_counts`): the last CTA of a head does ``T_r`` times the work of the first.
FA2 launches the grid ``(num_m_blocks, batch, heads)`` with ``m_block = blockIdx.x``, so the hardware hands out
each head's CTAs shortest first and the longest ones land in the last wave. FA3 and FA4 deal the longest first,
within *sections* of heads whose K and V fit in L2 (:func:`tile_scheduler_order`): FA3's causal forward is a
persistent kernel, one CTA per SM, that takes the next tile from an atomic counter (``DynamicPersistentTileScheduler``);
FA4's is a grid of one CTA per tile whose block index is remapped in that order (``SingleTileLPTScheduler``), or
scheduled by the hardware's cluster launch control. The dispatch itself is :func:`labcore.scheduler.list_schedule`.

:func:`l2_section` is the L2 arithmetic of that scheduler: heads are grouped into sections whose K and V fit in an
L2 budget, so that the CTAs running at once re-read K/V from L2 rather than HBM.

Sources: flash-attn ``csrc/flash_attn/src/flash_fwd_launch_template.h`` (grid ``(num_m_block, b, h)``),
``hopper/tile_scheduler.hpp`` (``DynamicPersistentTileScheduler``: LPT order and L2 swizzle, 32 MB for K & V),
``hopper/flash_fwd_launch_template.h`` (the persistent scheduler for causal masks) and
``hopper/flash_fwd_kernel_sm90.h`` (``MinBlocksPerMultiprocessor = 1``), ``flash_attn/cute/tile_scheduler.py``
(``SingleTileLPTScheduler``, 50 MB) and ``flash_attn/cute/flash_fwd_sm100.py``, all at commit 0251105a;
Zadouri et al. 2026 (FlashAttention-4) §3.3 (+4-8% MHA, +7-14% MQA-8 from the LPT scheduler, BF16 d = 128, H200);
benchmark shapes of FA2 §4.1, FA3 §4.1 and FA4 §5.
"""
from __future__ import annotations

import numpy as np

from .checks import MAX_HEAD_DIM, MAX_ITEMS, at_most, cdiv, choice, choices, flag, positive_float, positive_int
from .hardware import get_gpu
from .hbm import causal_block_counts
from .scheduler import SCHEDULE_ORDERS, list_schedule
from .splits import MAX_SEQLEN

__all__ = ["BENCHMARK_PAPERS", "benchmark_shapes", "causal_cta_costs", "causal_load_balance", "causal_schedule_table",
           "L2_SECTION_RULES", "l2_section", "TILE_ORDERS", "tile_scheduler_order"]

#: Benchmark shapes: total tokens per batch and the sequence lengths of each paper's figures (hidden 2048).
BENCHMARK_PAPERS = {"fa2": (16384, (512, 1024, 2048, 4096, 8192, 16384)),
                    "fa3": (16384, (512, 1024, 2048, 4096, 8192, 16384)),
                    "fa4": (32768, (1024, 2048, 4096, 8192, 16384, 32768))}

#: FA3's and FA4's L2 section rule: (L2 budget for K and V in bytes, factor on one KV head's bytes), as written at
#: flash-attn commit 0251105a in ``hopper/tile_scheduler.hpp`` (``size_l2 = 32 * 1024 * 1024``, one KV head
#: ``seqlen_k * (headdim + headdim_v) * element_size``) and ``flash_attn/cute/tile_scheduler.py``
#: (``50 * 1024 * 1024``, commented "40 MB for K & V"). Until commit 5e0c258c ("Fix L2 swizzle in causal tile
#: scheduler", 2025-04-21) FA3 counted one KV head twice (``* 2``), which halved its sections.
L2_SECTION_RULES = {"fa3": (32 * 1024 * 1024, 1), "fa4": (50 * 1024 * 1024, 1)}

#: The dispatch orders :func:`causal_load_balance` takes: :data:`labcore.scheduler.SCHEDULE_ORDERS` and
#: ``"fa3_sections"`` / ``"fa4_sections"``, the longest-first order within L2 sections that FA3's and FA4's tile
#: schedulers produce (:func:`tile_scheduler_order`).
TILE_ORDERS = SCHEDULE_ORDERS + ("fa3_sections", "fa4_sections")

# The largest element size in bytes: 8 (FP64).
_MAX_ELEMENT_SIZE = 8


def benchmark_shapes(paper: str = "fa2", *, head_dim: int = 128, hidden: int = 2048) -> list[dict]:
    """The attention benchmark shapes of a FlashAttention paper: ``batch = tokens / seqlen``, ``heads = hidden / d``.

    Args:
        paper: ``"fa2"``, ``"fa3"`` (16k tokens, seqlen 512-16k) or ``"fa4"`` (32k tokens, 1k-32k).
        head_dim: d (int in [1, 1024] dividing ``hidden``).
        hidden: model width (int >= 1; 2048 in all three papers).

    Returns:
        list of dicts ``seqlen``, ``batch``, ``heads``, ``head_dim``.

    Raises:
        TypeError: paper not a string; head_dim or hidden not an integer.
        ValueError: unknown paper, head_dim out of range, or d not dividing hidden.

    Source: Dao 2023 §4.1; Shah et al. 2024 §4.1; Zadouri et al. 2026 §5 (each paper's benchmark shape).
    """
    tokens, seqlens = BENCHMARK_PAPERS[choice(paper, "paper", tuple(BENCHMARK_PAPERS))]
    d, hidden = positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM), positive_int(hidden, "hidden")
    if hidden % d:
        raise ValueError(f"head_dim ({d}) must divide hidden ({hidden})")
    return [{"seqlen": n, "batch": tokens // n, "heads": hidden // d, "head_dim": d} for n in seqlens]


def causal_cta_costs(seqlen: int, *, batch: int, heads: int, block_q: int = 128, block_kv: int = 128,
                     tile_time: float = 1.0) -> np.ndarray:
    """Work of every causal forward CTA in FA2's launch order (``m_block`` fastest, then batch, then head).

    CTA (h, b, m) costs ``J_m x tile_time``, ``J_m`` the key blocks query block m visits (``m + 1`` for
    B_r = B_c and a multiple-of-block seqlen; a diagonal block costs a full tile).

    Args:
        seqlen: N (queries = keys; int in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        batch, heads: ints >= 1.
        block_q, block_kv: B_r, B_c (ints in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        tile_time: seconds per tile (finite, > 0; 1.0 counts tiles); the CTAs' total work, the sum of the
            costs, must stay finite in float64.

    Returns:
        (heads x batch x T_r,) float64 array (at most :data:`labcore.checks.MAX_ITEMS` CTAs, what
        :func:`labcore.scheduler.list_schedule` deals).

    Raises:
        TypeError/ValueError: sizes not integers >= 1, too many CTAs, tile_time not finite and > 0, or so large
        that the total work overflows float64.

    Source:
        flash-attn ``flash_fwd_launch_template.h`` (``dim3 grid(num_m_block, params.b, params.h)``); Dao 2023 §3.1.1
        (causal block skipping).
    """
    _ctas(seqlen, batch, heads, block_q, MAX_ITEMS)
    positive_int(block_kv, "block_kv", maximum=MAX_SEQLEN)
    t = positive_float(tile_time, "tile_time")
    _, J, _ = causal_block_counts(seqlen, block_q=block_q, block_kv=block_kv, causal=True)
    reps = positive_int(batch, "batch") * positive_int(heads, "heads")
    _finite_work(float(J.sum()) * reps, t, 0.0, 0, "tile_time")
    return np.tile(J.astype(float) * t, reps)


def _finite_work(tiles: float, tile_time: float, overhead: float, items: int, names: str) -> None:
    """Raise a ValueError naming ``names`` when ``tiles x tile_time + items x overhead`` (the whole kernel's work,
    which bounds every time a schedule of it reports) is not finite in float64."""
    total = tiles * tile_time + items * overhead            # Python floats: an overflow is inf, not an error
    if not np.isfinite(total):
        extra = f" plus {items} CTAs x {overhead:.3g}" if overhead else ""
        raise ValueError(f"{names} too large: {tiles:.0f} tiles x {tile_time:.3g}{extra} add up past the largest "
                         "float64, so the schedule's times would be inf")


def _ctas(seqlen, batch, heads, block_q, limit) -> int:
    """The causal forward's CTA count ``batch x heads x ceil(seqlen / block_q)``, each size checked by name and
    the count at most ``limit``."""
    n = positive_int(batch, "batch") * positive_int(heads, "heads") * cdiv(
        positive_int(seqlen, "seqlen", maximum=MAX_SEQLEN), positive_int(block_q, "block_q", maximum=MAX_SEQLEN))
    at_most(n, "seqlen, batch, heads and block_q", limit, "CTAs")
    return n
def tile_scheduler_order(seqlen: int, *, batch: int, heads: int, head_dim: int = 128, block_q: int = 128,
                         element_size: int = 2, rule: str = "fa3") -> np.ndarray:
    """The order in which FA3's or FA4's tile scheduler hands out the causal forward's tiles.

    Both walk the (batch, head) pairs, head fastest, in sections of ``swizzle`` pairs (:func:`l2_section`'s
    ``kv_heads``; the last section takes the remainder): inside a section, query block ``T_r - 1`` of every pair
    first, then ``T_r - 2``, and so on down to block 0; then the next section. FA3 hands tile ``t`` to the CTA that
    took ticket ``t`` from its atomic counter; FA4 gives tile ``t`` to CTA ``blockIdx.x = t``. Longest first within a
    section, not over the whole grid.

    Args:
        seqlen: N (queries = keys; int in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        batch: int >= 1.
        heads: int >= 1.
        head_dim: d (int in [1, 1024]).
        block_q: B_r (int in [1, MAX_SEQLEN]).
        element_size: bytes per element (int in [1, 8]).
        rule: ``"fa3"`` or ``"fa4"`` (:data:`L2_SECTION_RULES`).
    Returns:
        (heads x batch x T_r,) int64 permutation of the indices of :func:`causal_cta_costs` (head, then batch, then
        query block ``m``), in dispatch order.
    Raises:
        TypeError/ValueError: sizes not integers >= 1, more than MAX_ITEMS tiles, an unknown rule.
    Source:
        flash-attn ``hopper/tile_scheduler.hpp`` (``DynamicPersistentTileScheduler::get_block_coord``) and
        ``flash_attn/cute/tile_scheduler.py`` (``SingleTileLPTScheduler.get_current_work``) at commit 0251105a.
    """
    _ctas(seqlen, batch, heads, block_q, MAX_ITEMS)
    n, B, H = positive_int(seqlen, "seqlen"), positive_int(batch, "batch"), positive_int(heads, "heads")
    T_r = -(-n // positive_int(block_q, "block_q"))
    sw = l2_section(n, head_dim=head_dim, element_size=element_size, rule=rule)["kv_heads"]
    hb = B * H
    out = []
    for first in range(0, hb, sw):
        pairs = range(first, min(first + sw, hb))
        for k in range(T_r):
            m = T_r - 1 - k
            for bh in pairs:
                b, h = divmod(bh, H)
                out.append((h * B + b) * T_r + m)
    return np.asarray(out, np.int64)


def causal_load_balance(gpu, *, seqlen: int, batch: int, heads: int, block_q: int = 128, block_kv: int = 128,
                    ctas_per_sm: int = 1, tile_time: float = 1.0, item_overhead: float = 0.0,
                    orders=SCHEDULE_ORDERS, head_dim: int = 128) -> dict:
    """The causal forward's CTAs (:func:`causal_cta_costs`) scheduled on a GPU's SMs in each dispatch order.

    Args:
        gpu: preset name or :class:`labcore.hardware.GPU` (its ``num_sms``).
        seqlen, batch, heads, block_q, block_kv, tile_time: as :func:`causal_cta_costs`.
        ctas_per_sm: CTAs resident per SM (int >= 1; slots = SMs x this, at most :data:`labcore.checks.MAX_ITEMS`).
        item_overhead: time added per CTA (float >= 0; with tile_time, the total work must stay finite).
        orders: a list or tuple of distinct names from :data:`TILE_ORDERS` (not one string).
        head_dim: d (int in [1, 1024]; sets the L2 sections of ``"fa3_sections"`` and ``"fa4_sections"``).
    Returns:
        dict: one :class:`labcore.scheduler.Schedule` per order, plus ``lpt_gain`` = launch makespan / LPT
        makespan - 1 (the throughput an LPT scheduler adds) when both orders are present.

    Raises:
        TypeError: orders a string or not a list; as :func:`causal_cta_costs` and
            :func:`labcore.scheduler.list_schedule`.
        ValueError: orders empty, unknown or repeated; more than MAX_ITEMS CTAs or slots; tile_time and
            item_overhead so large that the total work overflows float64; as :func:`causal_cta_costs` and
            :func:`labcore.scheduler.list_schedule`.

    Source: FlashAttention-4 §3.3; flash-attn ``hopper/tile_scheduler.hpp``.
    """
    g = get_gpu(gpu)
    orders = choices(orders, "orders", TILE_ORDERS)
    positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    _ctas(seqlen, batch, heads, block_q, MAX_ITEMS)
    slots = g.num_sms * positive_int(ctas_per_sm, "ctas_per_sm")
    at_most(slots, "ctas_per_sm", MAX_ITEMS, "slots")
    oh = positive_float(item_overhead, "item_overhead", allow_zero=True)
    c = causal_cta_costs(seqlen, batch=batch, heads=heads, block_q=block_q, block_kv=block_kv, tile_time=tile_time)
    t = positive_float(tile_time, "tile_time")
    _finite_work(float(c.sum()) / t, t, oh, c.size, "tile_time and item_overhead")
    out = {}
    for o in orders:
        seq = tile_scheduler_order(seqlen, batch=batch, heads=heads, head_dim=head_dim, block_q=block_q,
                                   rule=o[:3]) if o.endswith("_sections") else o
        out[o] = list_schedule(c, slots, order=seq, item_overhead=oh)
    if "launch" in out and "lpt" in out:
        out["lpt_gain"] = out["launch"].makespan / out["lpt"].makespan - 1
    return out


def causal_schedule_table(gpu, *, paper: str = "fa2", head_dim: int = 128, block_q: int = 128,
                          block_kv: int = 128, ctas_per_sm: int = 1) -> list[dict]:
    """One row per benchmark shape of ``paper``: makespan / (work / slots) in each order, LPT gain, idle SM-time.

    Returns:
        list of dicts ``seqlen``, ``batch``, ``heads``, ``ctas``, ``ratio_<order>`` for every order of
        :data:`TILE_ORDERS`, ``lpt_gain`` (launch over global LPT), ``sections_gain`` (launch over FA3's sectioned
        order, the one the kernels run), ``idle_launch`` and ``idle_lpt`` (mean idle fraction per SM).

    Raises:
        TypeError/ValueError: an unknown GPU or paper; sizes as :func:`causal_load_balance`.

    Source: as :func:`causal_load_balance` and :func:`benchmark_shapes`.
    """
    gpu = get_gpu(gpu)
    positive_int(block_q, "block_q", maximum=MAX_SEQLEN)
    positive_int(block_kv, "block_kv", maximum=MAX_SEQLEN)
    rows = []
    for sh in benchmark_shapes(paper, head_dim=head_dim):
        r = causal_load_balance(gpu, seqlen=sh["seqlen"], batch=sh["batch"], heads=sh["heads"], block_q=block_q,
                                block_kv=block_kv, ctas_per_sm=ctas_per_sm, orders=TILE_ORDERS, head_dim=head_dim)
        row = dict(sh, ctas=int(r["launch"].costs.size), lpt_gain=r["lpt_gain"],
                   sections_gain=r["launch"].makespan / r["fa3_sections"].makespan - 1)
        for o in TILE_ORDERS:
            row[f"ratio_{o}"] = r[o].ratio
        for o in ("launch", "lpt"):
            row[f"idle_{o}"] = float(r[o].slot_idle.mean() / r[o].makespan)
        rows.append(row)
    return rows


def l2_section(seqlen_k: int, *, head_dim: int, head_dim_v: int | None = None, element_size: int = 2,
               qhead_per_khead: int = 1, pack_gqa: bool = False, rule: str = "fa3") -> dict:
    """How many heads FA3/FA4's tile scheduler groups into one L2 "section", and their K/V working set.

    ``size_one_kv_head = seqlen_k (d + d_v) element_size x factor`` (factor 1 in both current rules); KV heads per section
    ``= 1`` if it exceeds the budget, else ``2^floor(log2(budget / size_one_kv_head))`` (a power of 2); the
    scheduler's ``swizzle`` (query heads per section) multiplies that by ``qhead_per_khead`` unless GQA is packed.
    The working set is ``kv_heads x seqlen_k (d + d_v) element_size`` bytes of K and V.

    Args:
        seqlen_k: keys (int in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        head_dim, head_dim_v: d and d_v (ints in [1, 1024]; d_v defaults to d).
        element_size: bytes (2 BF16; int in [1, 8]).
        qhead_per_khead: query heads per KV head (1 MHA; 8 for MQA-8 with 8 query heads; int >= 1).
        pack_gqa: bool.
        rule: ``"fa3"`` or ``"fa4"`` (:data:`L2_SECTION_RULES`).
    Returns:
        dict ``size_one_kv_head`` (bytes, with the factor), ``kv_heads``, ``swizzle`` (query heads per
        section), ``working_set`` (bytes), ``budget`` (bytes).

    Raises:
        TypeError/ValueError: sizes not integers >= 1 or past their bounds, pack_gqa not a bool, an unknown rule.

    Source:
        flash-attn ``hopper/tile_scheduler.hpp`` (``size_l2 = 32 * 1024 * 1024; // 32 MB for K & V``, fixed in
        commit 5e0c258c, 2025-04-21) and ``flash_attn/cute/tile_scheduler.py`` (``SingleTileLPTScheduler``), at
        commit 0251105a.
    """
    pack_gqa = flag(pack_gqa, "pack_gqa")
    budget, factor = L2_SECTION_RULES[choice(rule, "rule", tuple(L2_SECTION_RULES))]
    n = positive_int(seqlen_k, "seqlen_k", maximum=MAX_SEQLEN)
    d = positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    d_v = d if head_dim_v is None else positive_int(head_dim_v, "head_dim_v", maximum=MAX_HEAD_DIM)
    e = positive_int(element_size, "element_size", maximum=_MAX_ELEMENT_SIZE)
    g = positive_int(qhead_per_khead, "qhead_per_khead")
    one = n * (d + d_v) * e * factor
    kv_heads = 1 if budget < one else 1 << (budget // one).bit_length() - 1
    return {"size_one_kv_head": one, "kv_heads": kv_heads, "swizzle": kv_heads * (1 if pack_gqa else g),
            "working_set": kv_heads * n * (d + d_v) * e, "budget": budget}
