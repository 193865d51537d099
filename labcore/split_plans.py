"""Split-KV plans for a ragged decode batch: who computes which keys of which request, and how they merge.

A *request* is one (sequence, KV head) pair: its query rows (one per query head of the GQA group) against its
``L`` cached keys. A plan cuts every request into *chunks* ``[k_start, k_stop)`` of keys, gives each chunk to a
CTA, and lists, per request, the chunks whose partial states ``(o, lse)`` the combine merges with the book's one
:func:`labcore.softmax.merge_state`. Three plans:

- :func:`plan_flash_attn`: flash-attn 2.x's split-KV: one ``num_splits`` for the whole batch, chosen by its
  heuristic (:func:`labcore.num_splits_heuristic`) from the *longest* request; split s of every
  request covers the same key range, so short requests leave their late splits empty (those CTAs exit
  at once and write ``lse = -inf``); one CTA per (request, split), launched as a grid.
- :func:`plan_flashinfer`: FlashInfer's planner: a chunk size (the smallest multiple of the page size that
  yields at most ``num_ctas`` chunks), every request cut into chunks of that size, and the chunks bin-packed onto
  ``num_ctas`` persistent CTAs longest first (the plan computed on the host before the kernel runs: ``plan()``,
  then ``run()``, so a CUDA graph can replay it).
- :func:`plan_lean`: Stream-K / LeanAttention: the concatenated key blocks of all requests cut into ``num_ctas``
  equal ranges, each range cut again at request boundaries.

:func:`run_split_plan` computes any plan exactly (checked against :func:`labcore.attention.reference_attention`);
:func:`plan_stats` counts work per CTA, the makespan (:func:`labcore.scheduler.list_schedule`) and the bytes of
partial states written and read by the combine.

Sources: Ye et al. 2025, FlashInfer (arXiv 2501.01005) §3.3 (load-balanced scheduling, plan/run); Sanovar et al.
2024, LeanAttention (arXiv 2405.10480) (Stream-K partitioning of decode); flash-attn ``flash_api.cpp``
(``num_splits_heuristic``, ``set_params_splitkv``) and ``flash_fwd_kernel.h`` (``n_blocks_per_split``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import masked_scores
from .checks import (MAX_ITEMS, array_list, as_real, at_most, cdiv, choice, flag, instance, int_vector,
                     positive_float, positive_int, real_array, resolve_scale)
from .splits import MAX_SEQLEN, flash_attn_block_n, num_splits_heuristic
from .scheduler import Schedule, list_schedule
from .softmax import merge_state, row_softmax

__all__ = ["SPLIT_PLANS", "SplitPlan", "plan_flash_attn", "plan_flashinfer", "plan_lean", "make_split_plan",
           "run_split_plan", "plan_stats", "zipf_lengths"]

#: The plans by name (:func:`make_split_plan`).
SPLIT_PLANS = ("flash_attn", "flashinfer", "lean")


@dataclass(frozen=True)
class SplitPlan:
    """A split-KV plan.

    Attributes:
        name: which planner. lengths: (batch,) int64 keys per request.
        chunks: (n_chunks, 3) int64 rows ``(request, k_start, k_stop)`` (``k_stop >= k_start``; empty allowed).
        cta: (n_chunks,) int64 CTA of each chunk. num_ctas: CTAs of the kernel.
        merge_indptr: (batch + 1,) int64; request b merges chunks ``merge_indices[merge_indptr[b]:merge_indptr[b+1]]``.
        merge_indices: (n_chunks,) int64 chunk indices grouped by request.
        slots: slots the CTAs are dispatched on (SMs for a launched grid; ``num_ctas`` when persistent).
        writes_partials: (batch,) bool: the request's chunks go through FP32 partial states and the combine.
    """

    name: str
    lengths: np.ndarray
    chunks: np.ndarray
    cta: np.ndarray
    num_ctas: int
    merge_indptr: np.ndarray
    merge_indices: np.ndarray
    slots: int
    writes_partials: np.ndarray

    @property
    def chunk_tokens(self) -> np.ndarray:
        """(n_chunks,) keys in each chunk."""
        return self.chunks[:, 2] - self.chunks[:, 1]

    @property
    def work_per_cta(self) -> np.ndarray:
        """(num_ctas,) keys each CTA reads."""
        return np.bincount(self.cta, weights=self.chunk_tokens, minlength=self.num_ctas).astype(np.int64)


def _lengths(lengths) -> np.ndarray:
    """Keys per request: a non-empty 1-D integer array, each in [0, MAX_SEQLEN], at most MAX_ITEMS requests."""
    a = int_vector(lengths, "lengths", maximum=MAX_SEQLEN)
    at_most(a.size, "lengths", MAX_ITEMS, "requests")
    return a


def _plan(name, L, chunks, cta, num_ctas, slots, writes):
    chunks = np.asarray(chunks, np.int64).reshape(-1, 3)
    order = np.argsort(chunks[:, 0], kind="stable")
    counts = np.bincount(chunks[:, 0], minlength=L.size)
    return SplitPlan(name=name, lengths=L, chunks=chunks, cta=np.asarray(cta, np.int64), num_ctas=int(num_ctas),
                     merge_indptr=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                     merge_indices=order.astype(np.int64), slots=int(slots), writes_partials=np.asarray(writes, bool))


def plan_flash_attn(lengths, *, num_sms: int, group_size: int = 1, head_dim: int = 128,
                    sm_doubling: bool = True) -> SplitPlan:
    """flash-attn 2.x's split-KV plan: one split count for the whole batch, from its longest request.

    CTAs without splitting: ``batch x ceil(g / 64)`` (one per request; GQA packed, g <= 64 here);
    KV blocks ``ceil(max L / block_n)``; ``num_splits = num_splits_heuristic(CTAs, SMs (x2 since 2.5.7), blocks)``;
    split s of request b covers keys ``[s n_bps block_n, (s + 1) n_bps block_n)`` clipped to ``L_b``, with
    ``n_bps = ceil(blocks / num_splits)``. With more than one split every CTA writes an FP32 partial.

    Args:
        lengths: (batch,) ints in [0, :data:`labcore.splits.MAX_SEQLEN`] (an integer array; at most
            :data:`labcore.checks.MAX_ITEMS` requests).
        num_sms: SMs (int in [1, MAX_ITEMS]).
        group_size: g, query rows per request (int in [1, 64]).
        head_dim: d (sets block_n, :func:`labcore.splits.flash_attn_block_n`).
        sm_doubling: bool.

    Returns:
        :class:`SplitPlan` (``slots = num_sms``, CTAs in launch order request-major).

    Raises:
        TypeError: lengths not an integer array (a string, floats); a size not an integer; sm_doubling not a bool.
        ValueError: lengths empty, not 1-D or out of range; sizes < 1 or too large; g > 64.

    Source: flash-attn ``flash_api.cpp`` (``set_params_splitkv``, ``num_splits_heuristic``); ``flash_fwd_kernel.h``.
    """
    L = _lengths(lengths)
    sms = positive_int(num_sms, "num_sms", maximum=MAX_ITEMS)
    g = positive_int(group_size, "group_size", maximum=64)
    sm_doubling = flag(sm_doubling, "sm_doubling")
    bn = flash_attn_block_n(head_dim)
    n_blocks = max(1, int(cdiv(int(L.max()), bn)))
    splits = num_splits_heuristic(L.size * cdiv(g, 64), sms * (2 if sm_doubling else 1), n_blocks)
    span = int(cdiv(n_blocks, splits)) * bn
    s = np.arange(splits)
    starts = np.minimum(L[:, None], s[None, :] * span)
    stops = np.minimum(L[:, None], (s[None, :] + 1) * span)
    req = np.repeat(np.arange(L.size), splits)
    chunks = np.stack([req, starts.ravel(), stops.ravel()], axis=1)
    return _plan("flash_attn", L, chunks, np.arange(L.size * splits), L.size * splits, sms,
                 np.full(L.size, splits > 1))


def _finish_persistent(name, L, chunks, num_ctas):
    """Bin-pack the chunks onto ``num_ctas`` persistent CTAs longest first; merge only multi-chunk requests."""
    chunks = np.asarray(chunks, np.int64).reshape(-1, 3)
    sched = list_schedule((chunks[:, 2] - chunks[:, 1]).astype(float), num_ctas, order="lpt")
    per_req = np.bincount(chunks[:, 0], minlength=L.size)
    return _plan(name, L, chunks, sched.slot, num_ctas, num_ctas, per_req > 1)


def plan_flashinfer(lengths, *, num_ctas: int, chunk_size: int | None = None, page_size: int = 16) -> SplitPlan:
    """FlashInfer-style plan: fixed-size KV chunks, bin-packed onto ``num_ctas`` persistent CTAs.

    The chunk size (keys) is ``chunk_size`` or, by default, the smallest multiple of ``page_size`` for which
    ``sum_b ceil(L_b / chunk) <= num_ctas`` (a binary search, as FlashInfer's decode planner does). A request of
    length 0 gets one empty chunk. Chunks go to CTAs longest first, each to the least-loaded CTA
    (:func:`labcore.scheduler.list_schedule` with ``order="lpt"``). A request cut into one chunk writes its output
    directly; others write FP32 partials that the merge kernel combines.

    Args:
        lengths: (batch,) ints >= 0 (as :func:`plan_flash_attn`).
        num_ctas: persistent CTAs (int in [1, :data:`labcore.checks.MAX_ITEMS`]; SMs x CTAs per SM).
        chunk_size: keys per chunk (int in [1, :data:`labcore.splits.MAX_SEQLEN`]; at most MAX_ITEMS chunks in
            all) or None.
        page_size: KV page size in tokens (int in [1, MAX_SEQLEN]).

    Returns:
        :class:`SplitPlan` (``slots = num_ctas``).

    Raises:
        TypeError: lengths not an integer array; a size not an integer.
        ValueError: bad lengths; sizes < 1; too many CTAs or chunks.

    Source:
        Ye et al. 2025 (FlashInfer) §3.3 (load-balanced scheduling: chunked KV, a priority queue of CTA loads, merge
        indices); FlashInfer ``scheduler.cuh`` (binary search for the pages per chunk).
    """
    L = _lengths(lengths)
    C = positive_int(num_ctas, "num_ctas", maximum=MAX_ITEMS)
    ps = positive_int(page_size, "page_size", maximum=MAX_SEQLEN)
    if chunk_size is not None:
        chunk_size = positive_int(chunk_size, "chunk_size", maximum=MAX_SEQLEN)
        at_most(np.maximum(cdiv(L, chunk_size), 1).sum(), "chunk_size", MAX_ITEMS, "chunks")
    if chunk_size is None:
        lo, hi = 1, max(1, int(cdiv(int(L.max()), ps)))         # pages per chunk
        while lo < hi:
            mid = (lo + hi) // 2
            if int(np.maximum(cdiv(L, mid * ps), 1).sum()) <= C:
                hi = mid
            else:
                lo = mid + 1
        chunk = lo * ps
    else:
        chunk = positive_int(chunk_size, "chunk_size")
    n = np.maximum(cdiv(L, chunk), 1)
    rows = [(b, min(int(L[b]), k * chunk), min(int(L[b]), (k + 1) * chunk)) for b in range(L.size) for k in range(n[b])]
    return _finish_persistent("flashinfer", L, rows, C)


def plan_lean(lengths, *, num_ctas: int, block_n: int = 1) -> SplitPlan:
    """Stream-K / LeanAttention plan: equal numbers of key blocks per CTA, across request boundaries.

    The ``W = sum_b ceil(L_b / block_n)`` key blocks of all requests, in request order, are cut into ``num_ctas``
    ranges ``[floor(c W / C), floor((c + 1) W / C))``; each range is cut again where a request ends. CTA c
    computes exactly its range (no bin-packing). Length-0 requests have no chunk and merge to ``(0, -inf)``.

    Args:
        lengths: (batch,) ints >= 0 (as :func:`plan_flash_attn`).
        num_ctas: CTAs (int in [1, :data:`labcore.checks.MAX_ITEMS`]).
        block_n: keys per iteration (int in [1, :data:`labcore.splits.MAX_SEQLEN`]).

    Returns:
        :class:`SplitPlan` (``slots = num_ctas``).

    Raises:
        TypeError: lengths not an integer array; a size not an integer.
        ValueError: bad lengths; sizes < 1; too many CTAs.

    Source:
        Sanovar et al. 2024 (LeanAttention), §4 (equal "LeanTiles" per CTA across heads and requests); Osama et al.
        2023, Stream-K (PPoPP'23).
    """
    L = _lengths(lengths)
    C = positive_int(num_ctas, "num_ctas", maximum=MAX_ITEMS)
    bn = positive_int(block_n, "block_n", maximum=MAX_SEQLEN)
    nb = cdiv(L, bn)
    first = np.concatenate([[0], np.cumsum(nb)])               # global block index where request b starts
    W = int(first[-1])
    cuts = (np.arange(C + 1) * W) // C
    rows, ctas = [], []
    for c in range(C):
        a, e = int(cuts[c]), int(cuts[c + 1])
        while a < e:
            b = int(np.searchsorted(first, a, side="right") - 1)
            stop = min(e, int(first[b + 1]))
            rows.append((b, (a - first[b]) * bn, min(int(L[b]), (stop - first[b]) * bn)))
            ctas.append(c)
            a = stop
    per_req = np.bincount(np.asarray([r[0] for r in rows], np.int64), minlength=L.size) if rows else np.zeros(L.size)
    return _plan("lean", L, rows, ctas, C, C, per_req > 1)


def make_split_plan(name: str, lengths, *, num_sms: int, ctas_per_sm: int = 1, group_size: int = 1,
                    head_dim: int = 128, page_size: int = 16) -> SplitPlan:
    """One of :data:`SPLIT_PLANS` for a GPU with ``num_sms`` SMs (persistent plans use ``num_sms x ctas_per_sm`` CTAs).

    Every argument is checked, whichever plan uses it: ``group_size`` and ``head_dim`` as :func:`plan_flash_attn`,
    ``page_size`` as :func:`plan_flashinfer`; ``num_sms x ctas_per_sm`` at most :data:`labcore.checks.MAX_ITEMS`.

    Raises: TypeError: a name that is not a string, a size that is not an integer. ValueError: an unknown plan
    name, too many CTAs, or the planners' errors.
    """
    name = choice(name, "name", SPLIT_PLANS)
    positive_int(group_size, "group_size", maximum=64)          # checked whichever plan uses them
    flash_attn_block_n(head_dim)
    positive_int(page_size, "page_size", maximum=MAX_SEQLEN)
    at_most(positive_int(num_sms, "num_sms", maximum=MAX_ITEMS) * positive_int(ctas_per_sm, "ctas_per_sm"),
            "num_sms x ctas_per_sm", MAX_ITEMS, "CTAs")
    C = positive_int(num_sms, "num_sms") * positive_int(ctas_per_sm, "ctas_per_sm")
    if name == "flash_attn":
        return plan_flash_attn(lengths, num_sms=num_sms, group_size=group_size, head_dim=head_dim)
    if name == "flashinfer":
        return plan_flashinfer(lengths, num_ctas=C, page_size=page_size)
    return plan_lean(lengths, num_ctas=C)


def run_split_plan(plan: SplitPlan, q, K_list, V_list, *, scale=None):
    """Compute a plan exactly: every chunk's partial ``(o, lse)``, merged per request with ``merge_state``.

    Args:
        plan: :class:`SplitPlan`.
        q: (batch, g, d) finite queries (g query heads per request).
        K_list, V_list: lists (or tuples), per request a finite (L_b, d) and (L_b, d_v) array (L_b may be 0).
        scale: softmax scale, default ``1/sqrt(d)``.
    Returns:
        ``(O, lse)``: (batch, g, d_v) and (batch, g) float64; a request with no keys gives zeros and ``-inf``.
    Raises:
        TypeError: plan not a :class:`SplitPlan`; q, K_list or V_list not real arrays (a string is never iterated).
        ValueError: shapes that do not match the plan; NaN or inf; an empty list.
    Source:
        dao2023flashdecoding (partials and the log-sum-exp merge); FlashInfer §3.3 (merge indices).
    """
    plan = instance(plan, "plan", SplitPlan)
    q = real_array(q, "q", ndim=3, allow_empty=True)
    K_list, V_list = array_list(K_list, "K_list"), array_list(V_list, "V_list")
    if q.ndim != 3 or q.shape[0] != plan.lengths.size or len(K_list) != q.shape[0] or len(V_list) != q.shape[0]:
        raise ValueError(f"q must be (batch={plan.lengths.size}, g, d) with one K and V per request")
    Ks, Vs = [as_real(k, "K") for k in K_list], [as_real(v, "V") for v in V_list]
    d_v = Vs[0].shape[-1]
    if any(k.ndim != 2 or k.shape[1] != q.shape[2] for k in Ks) or any(v.ndim != 2 or v.shape[1] != d_v for v in Vs):
        raise ValueError(f"every K must be (L_b, d={q.shape[2]}) and every V (L_b, d_v={d_v})")
    if [len(k) for k in Ks] != plan.lengths.tolist() or [len(v) for v in Vs] != plan.lengths.tolist():
        raise ValueError(f"K and V lengths must equal the plan's lengths {plan.lengths.tolist()}")
    s = resolve_scale(scale, q.shape[2])
    g = q.shape[1]
    parts = []
    for b, a, e in plan.chunks.tolist():
        if e == a:
            parts.append((np.zeros((g, d_v)), np.full(g, -np.inf)))      # an empty chunk: the identity
            continue
        P, lse = row_softmax(masked_scores(q[b], Ks[b][a:e], scale=s))
        parts.append((P @ Vs[b][a:e], lse))
    O, LSE = np.zeros((q.shape[0], g, d_v)), np.full((q.shape[0], g), -np.inf)
    for b in range(q.shape[0]):
        o, l = np.zeros((g, d_v)), np.full(g, -np.inf)
        for c in plan.merge_indices[plan.merge_indptr[b]:plan.merge_indptr[b + 1]].tolist():
            o, l = merge_state(o, l, *parts[c])
        O[b], LSE[b] = o, l
    return O, LSE


def plan_stats(plan: SplitPlan, *, group_size: int = 1, head_dim: int = 128, time_per_key: float = 1.0,
               chunk_overhead: float = 0.0, partial_bytes: int = 4, out_bytes: int = 2) -> dict:
    """Work per CTA, makespan and partial-state traffic of a plan.

    A CTA costs ``keys x time_per_key + chunks x chunk_overhead``; the CTAs are dispatched on ``plan.slots`` in
    order (:func:`labcore.scheduler.list_schedule`). A request that writes partials writes, per chunk,
    ``g (d + 1) partial_bytes`` (o and lse in FP32) that the combine reads back; every request's final output
    is ``g d out_bytes``.

    Args:
        plan: :class:`SplitPlan`.
        group_size: g.
        head_dim: d (= d_v).
        time_per_key: seconds per key (> 0).
        chunk_overhead: seconds per chunk (>= 0).
        partial_bytes, out_bytes: bytes per element (ints >= 1).

    Raises:
        TypeError: plan not a :class:`SplitPlan`; a size not an integer, a time not a real number.
        ValueError: sizes < 1, times negative or not finite.

    Returns:
        dict ``work_per_cta`` (keys), ``schedule`` (:class:`~labcore.scheduler.Schedule`), ``makespan``,
        ``ratio`` (makespan / (work / slots)), ``partials``, ``partial_bytes_written``,
        ``combine_bytes_read``, ``output_bytes``, ``max_work``, ``mean_work``.

    Source: flash-attn ``flash_fwd_kernel.h`` (``oaccum``/``lse_accum`` in FP32); FlashInfer §3.3.
    """
    plan = instance(plan, "plan", SplitPlan)
    positive_int(partial_bytes, "partial_bytes")
    positive_int(out_bytes, "out_bytes")
    g, d = positive_int(group_size, "group_size"), positive_int(head_dim, "head_dim")
    t = positive_float(time_per_key, "time_per_key")
    oh = positive_float(chunk_overhead, "chunk_overhead", allow_zero=True)
    w = plan.work_per_cta
    n_chunks = np.bincount(plan.cta, minlength=plan.num_ctas)
    sched: Schedule = list_schedule(w * t + n_chunks * oh, plan.slots)
    partials = int(plan.writes_partials[plan.chunks[:, 0]].sum())
    pb = partials * g * (d + 1) * positive_int(partial_bytes, "partial_bytes")
    return {"work_per_cta": w, "schedule": sched, "makespan": sched.makespan, "ratio": sched.ratio,
            "partials": partials, "partial_bytes_written": pb, "combine_bytes_read": pb,
            "output_bytes": plan.lengths.size * g * d * positive_int(out_bytes, "out_bytes"),
            "max_work": int(w.max()), "mean_work": float(w.mean())}


def zipf_lengths(batch: int, *, mean: int, a: float = 1.5, max_factor: int = 16, seed: int = 0) -> np.ndarray:
    """Heavy-tailed request lengths: Zipf(a) draws clipped at ``max_factor`` times their mean, rescaled to ``mean``.

    A Zipf-shaped ragged batch in the spirit of FlashInfer's Fig. 8 ("Zipf, mean 1024"); that figure's exact
    generator is not in our sources, so this one is ours. Args: batch: int in [1, :data:`labcore.checks.MAX_ITEMS`];
    mean: int in [1, :data:`labcore.splits.MAX_SEQLEN`]; a > 1 (finite); max_factor: int >= 1; seed: int >= 0.
    Returns: (batch,) int64 lengths >= 1. Raises: TypeError: a count that is not an integer, ``a`` not a real number;
    ValueError: out of range. Source: Ye et al. 2025, Fig. 8 (the setting).
    """
    batch = positive_int(batch, "batch", maximum=MAX_ITEMS)
    mean = positive_int(mean, "mean", maximum=MAX_SEQLEN)
    positive_int(max_factor, "max_factor")
    positive_int(seed, "seed", minimum=0)
    batch, mean = positive_int(batch, "batch"), positive_int(mean, "mean")
    a = positive_float(a, "a")
    if a <= 1:
        raise ValueError(f"a must be > 1 for a Zipf distribution, got {a}")
    x = np.random.default_rng(positive_int(seed, "seed", minimum=0)).zipf(a, batch).astype(float)
    f = positive_int(max_factor, "max_factor")
    for _ in range(100):                          # clip the tail at f x the mean until the clip holds (fixed point)
        if x.max() <= f * x.mean() * (1 + 1e-9):
            break
        x = np.minimum(x, f * x.mean())
    return np.maximum(1, np.round(x / x.mean() * mean)).astype(np.int64)
