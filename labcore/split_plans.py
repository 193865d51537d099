"""Split-KV plans for a ragged decode batch: who computes which keys of which request, and how they merge.

A *request* is one (sequence, KV head) pair: its query rows (one per query head of the GQA group) against its
``L`` cached keys. A plan cuts every request into *chunks* ``[k_start, k_stop)`` of keys, gives each chunk to a
CTA, and lists, per request, the chunks whose partial states ``(o, lse)`` the combine merges with the book's one
:func:`labcore.softmax.merge_state`. Four plans, each as its kernel runs it:

- :func:`plan_flash_attn`: flash-attn 2.x's split-KV: one ``num_splits`` for the whole batch, chosen by its
  heuristic (:func:`labcore.num_splits_heuristic`) from the cache's *allocated* length (``kcache.size(1)``,
  or ``max_num_blocks_per_seq x page_block_size`` with a paged cache); split s of every request covers the same key
  range, so short requests leave their late splits empty (those CTAs exit at once and write ``lse = -inf``); one CTA
  per (request, split), launched as a grid. The split count is computed on the host from shapes, not lengths.
- :func:`plan_flashinfer`: FlashInfer's decode plan (``DecodePlan`` in ``scheduler.cuh``): the smallest chunk, in
  whole pages and at least 128 tokens, that cuts the batch into at most ``num_ctas`` chunks (the kernel's occupancy
  times the SMs); one CTA per chunk, launched as a grid that fits on the GPU at once; with the KV partitioned every
  request writes a partial (``tmp_v`` in the output dtype, ``tmp_s`` in FP32) that a merge kernel copies or merges.
  ``plan()`` runs on the host, outside a CUDA graph, and copies the plan to the GPU.
- :func:`plan_lean`: Stream-K / LeanAttention: the concatenated key blocks of all requests cut into ``num_ctas``
  equal ranges of whole KV blocks, each range cut again at request boundaries.
- :func:`plan_flashmla`: FlashMLA's decode scheduler (``get_mla_metadata_kernel``), the production form of the equal
  share: every request costs its 64-key blocks plus a fixed overhead of 5 blocks, the total is cut into
  ``num_sm_parts`` equal payloads, and requests are cut across part boundaries. It runs on the GPU, as one warp,
  inside the graph.

:func:`run_split_plan` computes any plan exactly (checked against :func:`labcore.attention.reference_attention`);
:func:`plan_stats` counts work per CTA, the makespan on the plan's slots (:func:`labcore.scheduler.list_schedule`,
a work-balance measure) and the bytes of partial states; :func:`plan_time` charges the plan's HBM bytes in seconds
by either rule of :data:`labcore.waves.MEMORY_RULES` (default the physical ``"shared"`` one).

Sources: Ye et al. 2025, FlashInfer (arXiv 2501.01005) §3.3 and ``include/flashinfer/attention/scheduler.cuh``
(``PartitionPagedKVCacheBinarySearchMinNumPagePerBatch``, ``DecodePlanImpl``, ``DecodeSplitKVIndptr``) and
``decode.cuh`` (``tmp_v``, ``tmp_s``, ``VariableLengthMergeStates``) at commit fb28d724; Sanovar et al. 2024,
LeanAttention (arXiv 2405.10480) (Stream-K partitioning of decode); deepseek-ai/FlashMLA
``csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu`` and ``csrc/api/dense_decode.h`` at commit
9241ae3e; flash-attn ``csrc/flash_attn/flash_api.cpp`` (``num_splits_heuristic``, ``set_params_splitkv``,
``mha_fwd_kvcache``) and ``flash_fwd_kernel.h`` (``n_blocks_per_split``) at commit 0251105a.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import masked_scores
from .checks import (MAX_COUNT, MAX_ELEMENTS, MAX_HEAD_DIM, MAX_ITEMS, array_list, at_most, cdiv, choice, flag, instance,
                     int_table, int_vector, positive_float, positive_int, real_array, resolve_scale)
from .decode_time import MODEL_DEFAULTS, decode_ctas_per_sm
from .hardware import get_gpu
from .splits import MAX_SEQLEN, flash_attn_block_n, num_splits_heuristic
from .scheduler import Schedule, list_schedule
from .softmax import merge_state, row_softmax
from .waves import MEMORY_RULES, kernel_occupancy, per_cta_bandwidth_cap, shared_bandwidth_schedule

__all__ = ["SPLIT_PLANS", "PLANNERS", "SplitPlan", "plan_flash_attn", "plan_flashinfer", "plan_lean", "plan_flashmla",
           "flashinfer_decode_ctas_per_sm", "plan_ctas_per_sm", "make_split_plan", "run_split_plan", "plan_stats", "plan_time",
           "zipf_lengths"]

#: The plans by name (:func:`make_split_plan`).
SPLIT_PLANS = ("flash_attn", "flashinfer", "lean", "flashmla")

#: Where each planner runs, and what that means under a CUDA graph (a decode step is captured once and replayed):
#: ``"host"`` plans run on the CPU before the step and their result is copied to the GPU (outside the graph; a new
#: plan is new buffer content, not a new graph); ``"device"`` plans are a small kernel that reads the lengths from
#: GPU memory, captured in the graph and rerun at every replay; ``"model"`` is the book's own form of a published
#: idea. Sources: flash-attn ``flash_api.cpp`` (``set_params_splitkv`` on the host, from shapes); FlashInfer
#: ``scheduler.cuh`` (``DecodePlanImpl``: host vectors, then ``cudaMemcpyAsync`` to the GPU); FlashMLA
#: ``get_decoding_sched_meta.cu`` (``get_mla_metadata_kernel<<<1, 32>>>``); FlashAttention-3 ``hopper/flash_prepare_scheduler.cu``
#: (``prepare_varlen_num_blocks_kernel``: per-batch split counts on the GPU, batches sorted by length).
PLANNERS = {
    "flash_attn": dict(where="host", what="one split count from the cache's allocated length and the SM count; "
                       "the grid changes with it, so a graph fixes it at capture"),
    "flashinfer": dict(where="host", what="plan() on the CPU with the step's lengths, copied to a GPU workspace; "
                       "run() replays in the graph"),
    "lean": dict(where="model", what="equal shares of whole KV blocks (LeanAttention's Stream-K idea)"),
    "flashmla": dict(where="device", what="get_mla_metadata_kernel, one warp, inside the graph, rerun every replay"),
}

#: Bytes of one element the models take: FP8 (1), FP16/BF16 (2), FP32 (4), the formats of KV caches, outputs and
#: partial states; any other size is no format a decode kernel stores.
_ELEMENT_BYTES = (1, 2, 4)
#: The largest query group (query heads per KV head) the byte models take: models have at most 128 query heads, so
#: 1024 is generous, and it keeps every byte count a product of small numbers (no int64 overflow).
_MAX_GROUP_SIZE = 1024
#: The head dims FlashInfer's decode kernel is compiled for (``DISPATCH_HEAD_DIM`` in ``utils.cuh``).
_FLASHINFER_HEAD_DIMS = (64, 128, 256, 512)


def _element_bytes(x, name: str) -> int:
    """``x`` as one of :data:`_ELEMENT_BYTES` (TypeError for a non-integer, ValueError for another size)."""
    x = positive_int(x, name)
    if x not in _ELEMENT_BYTES:
        raise ValueError(f"{name} must be the bytes of an FP8, FP16/BF16 or FP32 element "
                         f"({', '.join(map(str, _ELEMENT_BYTES))}), got {x}")
    return x


def _group_and_head(group_size, head_dim) -> tuple[int, int]:
    """``(g, d)`` checked: ints in [1, :data:`_MAX_GROUP_SIZE`] and [1, :data:`MAX_HEAD_DIM`]."""
    return (positive_int(group_size, "group_size", maximum=_MAX_GROUP_SIZE),
            positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM))


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class SplitPlan:
    """A split-KV plan.

    Attributes:
        name: which planner. lengths: (batch,) int64 keys per request.
        chunks: (n_chunks, 3) int64 rows ``(request, k_start, k_stop)`` (``k_stop >= k_start``; empty allowed).
        cta: (n_chunks,) int64 CTA of each chunk. num_ctas: CTAs of the kernel.
        merge_indptr: (batch + 1,) int64; request b merges chunks ``merge_indices[merge_indptr[b]:merge_indptr[b+1]]``.
        merge_indices: (n_chunks,) int64 chunk indices grouped by request.
        slots: slots the CTAs are dispatched on (SMs x CTAs per SM for a launched grid; ``num_ctas`` when every
            CTA is resident at once).
        writes_partials: (batch,) bool: the request's chunks go through partial states and the combine.
        partial_o_bytes: bytes per element of a partial output (4: FP32; 2: the output dtype, FlashInfer's ``tmp_v``).
        partial_lse_bytes: bytes per partial lse (4, FP32, in every plan).
        chunk_overhead_keys: the fixed cost the planner itself charges per chunk, in keys (FlashMLA: 5 blocks of 64);
            0 where the planner charges none.

    Every field is checked when a plan is made, so that the functions taking a plan can rely on it: ``name`` one of
    :data:`SPLIT_PLANS`; ``lengths`` as the planners take them; ``chunks`` rows with ``0 <= request < batch`` and
    ``0 <= k_start <= k_stop <= lengths[request]``, the non-empty chunks of each request tiling its keys exactly once;
    ``cta`` in ``[0, num_ctas)``; ``merge_indptr``/``merge_indices`` grouping every chunk once, under its own request;
    ``writes_partials`` True for every request cut into more than one chunk (the combine merges partial states);
    ``num_ctas`` and ``slots`` in [1, :data:`labcore.checks.MAX_ITEMS`]; the byte sizes 1, 2 or 4. The arrays are
    stored as read-only copies.

    Raises:
        TypeError: a field of the wrong type (a name that is not a string, float or bool arrays where integers are
            meant, ``writes_partials`` not booleans, a size not an integer).
        ValueError: a field out of range, of the wrong shape, or inconsistent with the others.
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
    partial_o_bytes: int = 4
    partial_lse_bytes: int = 4
    chunk_overhead_keys: int = 0

    def __post_init__(self):
        choice(self.name, "name", SPLIT_PLANS)
        L = _lengths(self.lengths)
        B = L.size
        ch = int_table(self.chunks, "chunks", ndim=2)
        if ch.shape[1] != 3:
            raise ValueError(f"chunks must be (n_chunks, 3) rows (request, k_start, k_stop), got shape {ch.shape}")
        at_most(ch.shape[0], "chunks", MAX_ELEMENTS, "chunks")
        n = ch.shape[0]
        num_ctas = positive_int(self.num_ctas, "num_ctas", maximum=MAX_ITEMS)
        slots = positive_int(self.slots, "slots", maximum=MAX_ITEMS)
        req, a, e = ch[:, 0], ch[:, 1], ch[:, 2]
        if n and (req.min() < 0 or req.max() >= B):
            raise ValueError(f"chunks' request index must lie in [0, {B}) (one per entry of lengths), got "
                             f"{int(req.min())}..{int(req.max())}")
        bad = (a < 0) | (e < a) | (e > L[np.clip(req, 0, B - 1)])
        if np.any(bad):
            i = int(np.argmax(bad))
            raise ValueError(f"chunks[{i}] = {ch[i].tolist()} must have 0 <= k_start <= k_stop <= "
                             f"lengths[{int(req[i])}] = {int(L[req[i]])}")
        # the non-empty chunks of each request must tile [0, L_b) once, or the merge would be wrong
        ne = ch[e > a]
        ne = ne[np.lexsort((ne[:, 1], ne[:, 0]))]
        first = np.ones(ne.shape[0], bool)
        first[1:] = ne[1:, 0] != ne[:-1, 0]
        last = np.ones(ne.shape[0], bool)
        last[:-1] = first[1:]
        prev_stop = np.concatenate([[0], ne[:-1, 2]])
        broken = np.where(first, ne[:, 1] != 0, ne[:, 1] != prev_stop) | (last & (ne[:, 2] != L[ne[:, 0]]))
        covered = np.zeros(B, bool)
        covered[ne[:, 0]] = True
        wrong = np.union1d(ne[broken, 0], np.flatnonzero(~covered & (L > 0)))
        if wrong.size:
            raise ValueError(f"chunks must cover the keys [0, lengths[b]) of every request b exactly once (non-empty "
                             f"chunks end to end, no gap, no overlap); request {int(wrong[0])} does not")
        cta = int_table(self.cta, "cta", ndim=1)
        if cta.size != n:
            raise ValueError(f"cta must give one CTA per chunk ({n}), got {cta.size}")
        if n and (cta.min() < 0 or cta.max() >= num_ctas):
            raise ValueError(f"cta must lie in [0, num_ctas={num_ctas}), got {int(cta.min())}..{int(cta.max())}")
        indptr = int_table(self.merge_indptr, "merge_indptr", ndim=1)
        if indptr.size != B + 1 or indptr[0] != 0 or indptr[-1] != n or np.any(np.diff(indptr) < 0):
            raise ValueError(f"merge_indptr must be {B + 1} non-decreasing offsets from 0 to {n} (one more than the "
                             f"requests), got {indptr.tolist() if indptr.size <= 20 else indptr.shape}")
        idx = int_table(self.merge_indices, "merge_indices", ndim=1)
        if idx.size != n or (n and not np.array_equal(np.sort(idx), np.arange(n))):
            raise ValueError(f"merge_indices must list every chunk index 0..{n - 1} exactly once")
        if n and not np.array_equal(req[idx], np.repeat(np.arange(B), np.diff(indptr))):
            raise ValueError("merge_indices[merge_indptr[b]:merge_indptr[b + 1]] must be the chunks of request b")
        wp = np.asarray(self.writes_partials) if not isinstance(self.writes_partials, (str, bytes)) else None
        if wp is None or wp.dtype != bool:
            raise TypeError(f"writes_partials must be a boolean array, got "
                            f"{type(self.writes_partials).__name__ if wp is None else wp.dtype}")
        if wp.shape != (B,):
            raise ValueError(f"writes_partials must be ({B},), one flag per request, got shape {wp.shape}")
        if np.any((np.diff(indptr) > 1) & ~wp):
            raise ValueError("writes_partials must be True for every request cut into more than one chunk (its "
                             "chunks' partial states are merged)")
        po = _element_bytes(self.partial_o_bytes, "partial_o_bytes")
        pl = _element_bytes(self.partial_lse_bytes, "partial_lse_bytes")
        oh = positive_int(self.chunk_overhead_keys, "chunk_overhead_keys", minimum=0)
        for field, value in (("lengths", _readonly(L)), ("chunks", _readonly(ch)), ("cta", _readonly(cta)),
                             ("num_ctas", num_ctas), ("merge_indptr", _readonly(indptr)),
                             ("merge_indices", _readonly(idx)), ("slots", slots),
                             ("writes_partials", _readonly(wp)), ("partial_o_bytes", po),
                             ("partial_lse_bytes", pl), ("chunk_overhead_keys", oh)):
            object.__setattr__(self, field, value)

    @property
    def chunk_tokens(self) -> np.ndarray:
        """(n_chunks,) keys in each chunk."""
        return self.chunks[:, 2] - self.chunks[:, 1]

    @property
    def work_per_cta(self) -> np.ndarray:
        """(num_ctas,) keys each CTA reads."""
        w = np.zeros(self.num_ctas, np.int64)
        np.add.at(w, self.cta, self.chunk_tokens)      # in integers: a float sum rounds past 2^53 keys
        return w


def _lengths(lengths) -> np.ndarray:
    """Keys per request: a non-empty 1-D integer array, each in [0, MAX_SEQLEN], at most MAX_ITEMS requests."""
    a = int_vector(lengths, "lengths", maximum=MAX_SEQLEN)
    at_most(a.size, "lengths", MAX_ITEMS, "requests")
    return a


def _plan(name, L, chunks, cta, num_ctas, slots, writes, **extra):
    chunks = np.asarray(chunks, np.int64).reshape(-1, 3)
    order = np.argsort(chunks[:, 0], kind="stable")
    counts = np.bincount(chunks[:, 0], minlength=L.size)
    return SplitPlan(name=name, lengths=L, chunks=chunks, cta=np.asarray(cta, np.int64), num_ctas=int(num_ctas),
                     merge_indptr=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                     merge_indices=order.astype(np.int64), slots=int(slots), writes_partials=np.asarray(writes, bool),
                     **extra)


def plan_flash_attn(lengths, *, num_sms: int, group_size: int = 1, head_dim: int = 128,
                    sm_doubling: bool = True, cache_len: int | None = None, ctas_per_sm: int = 1) -> SplitPlan:
    """flash-attn 2.x's split-KV plan: one split count for the whole batch, from the cache's allocated length.

    ``flash_attn_with_kvcache`` sees the cache, not the lengths: its key count is ``kcache.size(1)`` (or
    ``max_num_blocks_per_seq x page_block_size`` with a paged cache), ``cache_len`` here, at least the longest
    request. CTAs without splitting: ``batch x ceil(g / 64)`` (one per request; GQA packed, g <= 64 here); KV blocks
    ``ceil(cache_len / block_n)``; ``num_splits = num_splits_heuristic(CTAs, SMs (x2 since 2.5.7), blocks)``; split s
    of request b covers keys ``[s n_bps block_n, (s + 1) n_bps block_n)`` clipped to ``L_b``, with
    ``n_bps = ceil(blocks / num_splits)``. With more than one split every CTA writes an FP32 partial.

    Args:
        lengths: (batch,) ints in [0, :data:`labcore.splits.MAX_SEQLEN`] (an integer array; at most
            :data:`labcore.checks.MAX_ITEMS` requests).
        num_sms: SMs (int in [1, MAX_ITEMS]).
        group_size: g, query rows per request (int in [1, 64]).
        head_dim: d (int in [1, 1024]; sets block_n, :func:`labcore.splits.flash_attn_block_n`).
        sm_doubling: bool.
        cache_len: the cache's allocated length in keys (int >= the longest request); default the longest request
            (a cache sized exactly for the batch, the smallest the kernel can see).
        ctas_per_sm: CTAs of the split kernel resident per SM (int >= 1): the grid is dealt on ``num_sms x`` this.

    Returns:
        :class:`SplitPlan` (``slots = num_sms x ctas_per_sm``, CTAs in launch order request-major).

    Raises:
        TypeError: lengths not an integer array (a string, floats); a size not an integer; sm_doubling not a bool.
        ValueError: lengths empty, not 1-D or out of range; sizes < 1 or too large; g > 64; a cache shorter than the
            longest request; a grid (requests x splits) of more than :data:`labcore.checks.MAX_ITEMS` CTAs.

    Source: flash-attn ``flash_api.cpp`` (``mha_fwd_kvcache``: ``seqlen_k = !paged_KV ? kcache.size(1) :
    max_num_blocks_per_seq * page_block_size``; ``set_params_splitkv``, ``num_splits_heuristic``);
    ``flash_fwd_kernel.h``, at commit 0251105a.
    """
    L = _lengths(lengths)
    sms = positive_int(num_sms, "num_sms", maximum=MAX_ITEMS)
    g = positive_int(group_size, "group_size", maximum=64)
    sm_doubling = flag(sm_doubling, "sm_doubling")
    occ = positive_int(ctas_per_sm, "ctas_per_sm")
    at_most(sms * occ, "num_sms x ctas_per_sm", MAX_ITEMS, "slots")
    bn = flash_attn_block_n(positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM))
    longest = int(L.max())
    n_k = longest if cache_len is None else positive_int(cache_len, "cache_len", minimum=max(longest, 1),
                                                         maximum=MAX_SEQLEN)
    n_blocks = max(1, int(cdiv(n_k, bn)))
    splits = num_splits_heuristic(L.size * cdiv(g, 64), sms * (2 if sm_doubling else 1), n_blocks)
    at_most(L.size * splits, "lengths (requests) x the splits num_sms gives", MAX_ITEMS, "CTAs")
    span = int(cdiv(n_blocks, splits)) * bn
    s = np.arange(splits)
    starts = np.minimum(L[:, None], s[None, :] * span)
    stops = np.minimum(L[:, None], (s[None, :] + 1) * span)
    req = np.repeat(np.arange(L.size), splits)
    chunks = np.stack([req, starts.ravel(), stops.ravel()], axis=1)
    return _plan("flash_attn", L, chunks, np.arange(L.size * splits), L.size * splits, sms * occ,
                 np.full(L.size, splits > 1))


def flashinfer_decode_ctas_per_sm(gpu, *, group_size: int = 1, head_dim: int = 128, dtype_bytes: int = 2,
                                  registers_per_thread: int = 255) -> int:
    """CTAs of FlashInfer's batch decode kernel one SM holds: its ``num_blocks_per_sm``, the factor of its grid limit.

    FlashInfer asks the CUDA runtime (``cudaOccupancyMaxActiveBlocksPerMultiprocessor``) for the occupancy of its
    kernel: ``bdx = d / vec_size`` threads per row with ``vec_size = max(16 / dtype_bytes, d / 32)``, ``bdy = g``,
    ``max(128, bdx g)`` threads, and ``2 x 2 stages x tile x bdy x bdz x d x dtype_bytes`` bytes of shared memory
    plus its pointer or merge buffer. FlashInfer does not publish its registers per thread; the compiler's maximum
    (255) gives a lower bound on the occupancy, as the book does for flash-attn.

    Args:
        gpu: preset name or GPU.
        group_size: g (int in [1, 64]).
        head_dim: d: 64, 128, 256 or 512, the head dims FlashInfer compiles its kernels for (``DISPATCH_HEAD_DIM``).
        dtype_bytes: bytes of a K/V element: 1 (FP8), 2 (FP16/BF16, the default) or 4 (FP32).
        registers_per_thread: int in [1, 255].
    Returns:
        int >= 1.
    Raises:
        TypeError: a size that is not an integer.
        ValueError: group_size outside [1, 64], a head_dim or dtype_bytes FlashInfer has no kernel for,
            registers_per_thread outside [1, 255], an unknown GPU; a kernel that does not fit on an SM.
    Source:
        FlashInfer ``scheduler.cuh`` (``BatchDecodeWithPagedKVCacheWorkEstimationDispatched``) and ``utils.cuh``
        (``NUM_STAGES_SMEM = 2`` on sm80 and later) at commit fb28d724.
    """
    g = positive_int(group_size, "group_size", maximum=64)
    d = positive_int(head_dim, "head_dim")
    if d not in _FLASHINFER_HEAD_DIMS:      # vec_size and bdx below are exact only for the compiled head dims
        raise ValueError(f"head_dim must be one of {', '.join(map(str, _FLASHINFER_HEAD_DIMS))} (the head dims "
                         f"FlashInfer's decode kernel is compiled for), got {d}")
    eb = _element_bytes(dtype_bytes, "dtype_bytes")
    vec = max(16 // eb, d // 32)
    bdx = max(1, d // vec)
    threads = max(128, bdx * g)
    bdz = max(1, threads // (bdx * g))
    tile = (2 if eb == 1 else 4) if g == 1 else 1
    smem = 2 * 2 * tile * g * bdz * d * eb + max(tile * threads * 8, 2 * g * bdz * 4)
    occ = kernel_occupancy(gpu, smem_per_cta=smem, threads_per_cta=threads,
                           registers_per_thread=registers_per_thread)["ctas_per_sm"]
    if occ < 1:
        raise ValueError(f"FlashInfer's decode kernel does not fit on one SM at group_size={g}, head_dim={d}, "
                         f"dtype_bytes={eb} ({threads} threads, {smem} bytes of shared memory per CTA): use a "
                         "smaller group_size or head_dim")
    return occ


def plan_ctas_per_sm(name: str, gpu, *, group_size: int = 1, head_dim: int = 128) -> int:
    """CTAs per SM of the kernel that runs plan ``name``: what its grid limit and its resident slots rest on.

    flash-attn's split kernel and FlashInfer's decode kernel hold as many CTAs per SM as their resources allow
    (:func:`labcore.decode_ctas_per_sm` with ``method="flash_decoding"``; :func:`flashinfer_decode_ctas_per_sm`);
    Lean runs one persistent CTA per SM (Stream-K's grid), and FlashMLA one per SM part (``num_sm_parts``: the SMs
    over the KV heads, one KV head here).

    Args:
        name: one of :data:`SPLIT_PLANS`.
        gpu: preset name or :class:`labcore.hardware.GPU`.
        group_size: g, query heads per KV head (int in [1, 1024]; at most 64 for ``"flashinfer"``).
        head_dim: d (int in [1, 1024]; for ``"flashinfer"`` one of the head dims it compiles, as
            :func:`flashinfer_decode_ctas_per_sm`).
    Returns:
        int >= 1.
    Raises:
        TypeError: a name that is not a string, a size that is not an integer.
        ValueError: an unknown plan name or GPU, sizes out of range, a kernel whose CTA does not fit on an SM (the
            flash-attn split kernel's tiles grow with head_dim).
    Source:
        flash-attn ``flash_fwd_launch_template.h`` (split-KV kernel's resources), FlashInfer ``scheduler.cuh``,
        LeanAttention (Sanovar et al. 2024: persistent CTAs, one per SM, as Stream-K), FlashMLA ``get_mla_metadata`` (``num_sm_parts``).
    """
    name = choice(name, "name", SPLIT_PLANS)
    g = get_gpu(gpu)
    if name == "flashinfer":
        return flashinfer_decode_ctas_per_sm(g, group_size=group_size, head_dim=head_dim)
    _, d = _group_and_head(group_size, head_dim)
    if name == "flash_attn":
        occ = int(decode_ctas_per_sm(g, method="flash_decoding", head_dim=d)["ctas_per_sm"])
        if occ < 1:
            raise ValueError(f"flash-attn's split-KV kernel does not fit on one SM of {g.name} at head_dim={d} "
                             "(its Q, K and V tiles exceed the shared memory one CTA may use): use a smaller head_dim")
        return occ
    return 1


def plan_flashinfer(lengths, *, num_ctas: int, chunk_size: int | None = None, page_size: int = 16,
                    cuda_graph: bool = True) -> SplitPlan:
    """FlashInfer's decode plan: one chunk size in whole pages, one CTA per chunk, a grid that fits the GPU at once.

    ``num_ctas`` is FlashInfer's ``max_grid_size``, the kernel's CTAs per SM times the SMs
    (:func:`flashinfer_decode_ctas_per_sm`). If the batch alone fills it, nothing is split. Otherwise the chunk is
    the smallest number of pages, at least ``max(128 / page_size, 1)``, for which ``sum_b ceil(pages_b / chunk) <=
    num_ctas`` (a binary search over the pages per chunk, as ``PartitionPagedKVCacheBinarySearchMinNumPagePerBatch``
    does); ``chunk_size`` (keys) overrides it. Request b gets ``ceil(max(pages_b, 1) / chunk)`` chunks (an empty
    request one empty chunk) and each chunk one CTA, in request order; no CTA runs two chunks. When the KV is
    partitioned (more chunks than requests, or always under a CUDA graph) every request writes its partial states,
    ``tmp_v`` in the output dtype and ``tmp_s`` in FP32, and ``VariableLengthMergeStates`` merges or copies them.

    Args:
        lengths: (batch,) ints >= 0 (as :func:`plan_flash_attn`).
        num_ctas: the grid limit (int in [1, :data:`labcore.checks.MAX_ITEMS`]; CTAs per SM x SMs).
        chunk_size: keys per chunk (int in [1, :data:`labcore.splits.MAX_SEQLEN`]; at most MAX_ITEMS chunks in
            all) or None.
        page_size: KV page size in tokens (int in [1, MAX_SEQLEN]).
        cuda_graph: bool: the plan is made for graph replay (FlashInfer then always partitions).

    Returns:
        :class:`SplitPlan` (``slots = num_ctas``: every CTA resident at once; ``partial_o_bytes = 2``).

    Raises:
        TypeError: lengths not an integer array; a size not an integer.
        ValueError: bad lengths; sizes < 1; too many CTAs or chunks.

    Source:
        FlashInfer ``include/flashinfer/attention/scheduler.cuh`` (``PartitionPagedKVCacheBinarySearchMinNumPagePerBatch``,
        ``BatchDecodeWithPagedKVCacheWorkEstimationDispatched``, ``DecodePlanImpl``, ``DecodeSplitKVIndptr``) and
        ``decode.cuh`` (``tmp_v`` of ``DTypeO``, ``tmp_s`` of ``float``) at commit fb28d724; Ye et al. 2025 §3.3.
    """
    L = _lengths(lengths)
    C = positive_int(num_ctas, "num_ctas", maximum=MAX_ITEMS)
    ps = positive_int(page_size, "page_size", maximum=MAX_SEQLEN)
    graph = flag(cuda_graph, "cuda_graph")
    pages = cdiv(L, ps)
    if chunk_size is not None:
        chunk = positive_int(chunk_size, "chunk_size", maximum=MAX_SEQLEN)
        at_most(np.maximum(cdiv(L, chunk), 1).sum(), "chunk_size", MAX_ITEMS, "chunks")
        split = bool(graph or np.any(cdiv(np.maximum(L, 1), chunk) > 1))
    elif L.size >= C:
        chunk, split = max(1, int(pages.max())) * ps, False
    else:
        lo, hi = max(128 // ps, 1), int(pages.max())
        while lo < hi:
            mid = (lo + hi) // 2
            if int(cdiv(pages, mid).sum()) > C:
                lo = mid + 1
            else:
                hi = mid
        chunk = lo * ps
        split = bool(graph or int(cdiv(np.maximum(pages, 1), lo).sum()) > L.size)
    n = cdiv(np.maximum(L, 1), chunk)
    rows = [(b, min(int(L[b]), k * chunk), min(int(L[b]), (k + 1) * chunk)) for b in range(L.size) for k in range(n[b])]
    return _plan("flashinfer", L, rows, np.arange(len(rows)), len(rows), C, np.full(L.size, split),
                 partial_o_bytes=2)


def plan_lean(lengths, *, num_ctas: int, block_n: int = 128) -> SplitPlan:
    """Stream-K / LeanAttention plan: equal numbers of whole key blocks per CTA, across request boundaries.

    The ``W = sum_b ceil(L_b / block_n)`` key blocks of all requests, in request order, are cut into ``num_ctas``
    ranges ``[floor(c W / C), floor((c + 1) W / C))``; each range is cut again where a request ends. CTA c
    computes exactly its range (no bin-packing). Length-0 requests have no chunk and merge to ``(0, -inf)``. A kernel
    iterates over tiles of keys, so the default cut is flash-attn's KV tile at d = 128 (128 keys); ``block_n=1``
    gives shares as equal as single keys allow, which no kernel runs.

    Args:
        lengths: (batch,) ints >= 0 (as :func:`plan_flash_attn`).
        num_ctas: CTAs (int in [1, :data:`labcore.checks.MAX_ITEMS`]).
        block_n: keys per iteration (int in [1, :data:`labcore.splits.MAX_SEQLEN`]; default 128).

    Returns:
        :class:`SplitPlan` (``slots = num_ctas``).

    Raises:
        TypeError: lengths not an integer array; a size not an integer.
        ValueError: bad lengths; sizes < 1; too many CTAs.

    Source:
        Sanovar et al. 2024 (LeanAttention), §4 (equal "LeanTiles" per CTA across heads and requests); Osama et al.
        2023, Stream-K (PPoPP'23); flash-attn ``run_mha_fwd_splitkv_dispatch`` (kBlockN 128 at d = 128).
    """
    L = _lengths(lengths)
    C = positive_int(num_ctas, "num_ctas", maximum=MAX_ITEMS)
    bn = positive_int(block_n, "block_n", maximum=MAX_SEQLEN)
    nb = cdiv(L, bn)
    first = np.concatenate([[0], np.cumsum(nb)])               # global block index where request b starts
    W = int(first[-1])
    q, r = divmod(W, C)                     # c W // C without c W, which passes int64 when W nears 2^60
    c_ = np.arange(C + 1)
    cuts = c_ * q + (c_ * r) // C
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


def plan_flashmla(lengths, *, num_sm_parts: int, block_n: int = 64, fixed_overhead_blocks: int = 5) -> SplitPlan:
    """FlashMLA's decode schedule: equal payloads of 64-key blocks plus a fixed cost per split, across requests.

    As ``get_mla_metadata_kernel`` computes it: request b has ``nb_b = floor(max(L_b - 1, 0) / block_n) + 1`` blocks
    (an empty request counts one); ``payload = ceil(sum_b (nb_b + F) / P) + F`` with ``F = fixed_overhead_blocks``
    and ``P = num_sm_parts``. Each part, in order, takes whole requests while ``payload`` covers their remaining
    blocks plus ``F``, then the first ``payload - F`` blocks of the next request (if that is > 0), which is then
    split across parts. A part is one CTA (per KV head); every part is resident at once. Split requests write FP32
    partials that a combine kernel merges; the others write their output directly.

    Args:
        lengths: (batch,) ints >= 0.
        num_sm_parts: parts (int >= 1; FlashMLA: ``max(SMs / h_k / ceil(s_q h_q / h_k / 64), 1)``).
        block_n: keys per block (int >= 1; FlashMLA's page block, 64).
        fixed_overhead_blocks: the cost charged per split, in blocks (int >= 0; FlashMLA's dense decode passes 5).

    Returns:
        :class:`SplitPlan` (``slots = num_sm_parts``; ``chunk_overhead_keys = F x block_n``).

    Raises:
        TypeError: lengths not an integer array; a size not an integer.
        ValueError: bad lengths; sizes out of range; ``fixed_overhead_blocks x block_n`` above
            :data:`labcore.checks.MAX_COUNT` keys.

    Source:
        deepseek-ai/FlashMLA ``csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu`` and
        ``csrc/api/dense_decode.h`` (``block_size_n = 64``, ``fixed_overhead_num_blocks = 5``, ``num_sm_parts``) at
        commit 9241ae3e.
    """
    L = _lengths(lengths)
    P = positive_int(num_sm_parts, "num_sm_parts", maximum=MAX_ITEMS)
    bn = positive_int(block_n, "block_n", maximum=MAX_SEQLEN)
    F = positive_int(fixed_overhead_blocks, "fixed_overhead_blocks", minimum=0, maximum=MAX_SEQLEN)
    at_most(F * bn, "fixed_overhead_blocks x block_n", MAX_COUNT, "keys of overhead per split")
    nb = np.maximum(L - 1, 0) // bn + 1
    payload = int(cdiv(int((nb + F).sum()), P)) + F
    rows, ctas = [], []
    req, blk = 0, 0
    for part in range(P):
        remain = payload
        while req < L.size:
            rem_blocks = int(nb[req]) - blk
            if remain >= rem_blocks + F:
                rows.append((req, min(int(L[req]), blk * bn), int(L[req])))
                ctas.append(part)
                remain -= rem_blocks + F
                req, blk = req + 1, 0
            else:
                if remain - F > 0:
                    take = remain - F
                    rows.append((req, min(int(L[req]), blk * bn), min(int(L[req]), (blk + take) * bn)))
                    ctas.append(part)
                    blk += take
                break
    if req != L.size:                       # the payload covers every block by construction
        raise AssertionError("FlashMLA's schedule left blocks unassigned")
    per_req = np.bincount(np.asarray([r[0] for r in rows], np.int64), minlength=L.size)
    return _plan("flashmla", L, rows, ctas, P, P, per_req > 1, chunk_overhead_keys=F * bn)


def make_split_plan(name: str, lengths, *, num_sms: int, ctas_per_sm: int = 1, group_size: int = 1,
                    head_dim: int = 128, page_size: int = 16, cache_len: int | None = None) -> SplitPlan:
    """One of :data:`SPLIT_PLANS` for a GPU with ``num_sms`` SMs.

    ``ctas_per_sm`` is the occupancy of the plan's kernel: flash-attn's grid is dealt on ``num_sms x ctas_per_sm``
    slots; FlashInfer's grid limit, Lean's CTAs and FlashMLA's parts are ``num_sms x ctas_per_sm``. ``cache_len``
    is flash-attn's allocated cache length (:func:`plan_flash_attn`).

    Every argument is checked, whichever plan uses it: ``group_size`` and ``head_dim`` (in [1, 1024]) as
    :func:`plan_flash_attn`,
    ``page_size`` as :func:`plan_flashinfer`; ``num_sms x ctas_per_sm`` at most :data:`labcore.checks.MAX_ITEMS`.

    Raises: TypeError: a name that is not a string, a size that is not an integer. ValueError: an unknown plan
    name, too many CTAs, or the planners' errors.
    """
    name = choice(name, "name", SPLIT_PLANS)
    positive_int(group_size, "group_size", maximum=64)          # checked whichever plan uses them
    bn = flash_attn_block_n(positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM))
    positive_int(page_size, "page_size", maximum=MAX_SEQLEN)
    if cache_len is not None:
        positive_int(cache_len, "cache_len", maximum=MAX_SEQLEN)
    C = positive_int(num_sms, "num_sms", maximum=MAX_ITEMS) * positive_int(ctas_per_sm, "ctas_per_sm")
    at_most(C, "num_sms x ctas_per_sm", MAX_ITEMS, "CTAs")
    if name == "flash_attn":
        return plan_flash_attn(lengths, num_sms=num_sms, group_size=group_size, head_dim=head_dim,
                               cache_len=cache_len, ctas_per_sm=ctas_per_sm)
    if name == "flashinfer":
        return plan_flashinfer(lengths, num_ctas=C, page_size=page_size)
    if name == "flashmla":
        return plan_flashmla(lengths, num_sm_parts=C)
    return plan_lean(lengths, num_ctas=C, block_n=bn)


def run_split_plan(plan: SplitPlan, q, K_list, V_list, *, scale=None):
    """Compute a plan exactly: every chunk's partial ``(o, lse)``, merged per request with ``merge_state``.

    Args:
        plan: :class:`SplitPlan`.
        q: (batch, g, d) finite queries (g query heads per request; g, d >= 1).
        K_list, V_list: lists (or tuples), per request a finite (L_b, d) and (L_b, d_v) array (L_b may be 0,
            ``L_b = plan.lengths[b]``; d_v >= 1, the same for every request).
        scale: softmax scale, default ``1/sqrt(d)``.
    Returns:
        ``(O, lse)``: (batch, g, d_v) and (batch, g) float64; a request with no keys gives zeros and ``-inf``.
    Raises:
        TypeError: plan not a :class:`SplitPlan`; q, K_list or V_list not real arrays (a string is never iterated).
        ValueError: q empty or not 3-D; q, K_list or V_list not one per request of the plan, or K_list/V_list rows
            other than the plan's lengths, or columns other than d (K) or one d_v (V); NaN or inf; an empty list;
            scores that overflow float64.
    Source:
        dao2023flashdecoding (partials and the log-sum-exp merge); FlashInfer §3.3 (merge indices).
    """
    plan = instance(plan, "plan", SplitPlan)
    q = real_array(q, "q", ndim=3)
    Ks, Vs = array_list(K_list, "K_list"), array_list(V_list, "V_list")
    B = plan.lengths.size
    if q.shape[0] != B:
        raise ValueError(f"q must hold one row group per request of the plan: (batch={B}, g, d), got {q.shape}")
    for name, arrays in (("K_list", Ks), ("V_list", Vs)):
        if len(arrays) != B:
            raise ValueError(f"{name} must hold one array per request of the plan ({B}), got {len(arrays)}")
    d, d_v = q.shape[2], Vs[0].shape[1]
    for b, (k, v) in enumerate(zip(Ks, Vs)):
        L_b = int(plan.lengths[b])
        if k.shape != (L_b, d):
            raise ValueError(f"K_list[{b}] must be (lengths[{b}]={L_b}, d={d}) (the plan's length, q's head dim), "
                             f"got {k.shape}")
        if v.shape != (L_b, d_v) or d_v < 1:
            raise ValueError(f"V_list[{b}] must be (lengths[{b}]={L_b}, d_v) with one d_v >= 1 for every request "
                             f"(V_list[0] has {d_v}), got {v.shape}")
    s = resolve_scale(scale, d)
    g = q.shape[1]
    O, LSE = np.zeros((B, g, d_v)), np.full((B, g), -np.inf)
    for b in range(B):                   # each request's chunks, computed and merged in the plan's merge order
        o, lse = np.zeros((g, d_v)), np.full(g, -np.inf)
        for c in plan.merge_indices[plan.merge_indptr[b]:plan.merge_indptr[b + 1]].tolist():
            _, a, e = plan.chunks[c].tolist()
            if e == a:                   # an empty chunk: the merge's identity, merged as the kernel writes it
                part = (np.zeros((g, d_v)), np.full(g, -np.inf))
            else:
                P, l_c = row_softmax(masked_scores(q[b], Ks[b][a:e], scale=s))
                part = (P @ Vs[b][a:e], l_c)
            o, lse = merge_state(o, lse, *part)
        O[b], LSE[b] = o, lse
    return O, LSE


def plan_stats(plan: SplitPlan, *, group_size: int = 1, head_dim: int = 128, time_per_key: float = 1.0,
               chunk_overhead: float = 0.0, partial_bytes: int | None = None, out_bytes: int = 2) -> dict:
    """Work per CTA, makespan on the plan's slots and partial-state traffic of a plan (a work-balance measure).

    A CTA costs ``keys x time_per_key + chunks x chunk_overhead``; the CTAs are dispatched on ``plan.slots`` in
    order (:func:`labcore.scheduler.list_schedule`), each slot at the same rate whatever the others do: this
    measures how evenly the plan spreads the keys, not time (for seconds, :func:`plan_time`). A request that writes
    partials writes, per chunk, ``g d`` partial outputs of ``plan.partial_o_bytes`` and ``g`` lse values of
    ``plan.partial_lse_bytes`` that the combine reads back; every request's final output is ``g d out_bytes``.

    Args:
        plan: :class:`SplitPlan`.
        group_size: g (int in [1, 1024]).
        head_dim: d (= d_v; int in [1, 1024]).
        time_per_key: seconds per key (finite, > 0).
        chunk_overhead: seconds per chunk (finite, >= 0).
        partial_bytes: bytes per partial element for both o and lse (1, 2 or 4), overriding the plan's format; None
            keeps the plan's.
        out_bytes: bytes per element of the final output (1, 2 or 4).

    Raises:
        TypeError: plan not a :class:`SplitPlan`; a size not an integer, a time not a real number.
        ValueError: sizes out of range, element sizes other than 1, 2 or 4; times negative or not finite, or so
            large that a CTA's or the plan's total cost is not a finite float64.

    Returns:
        dict ``work_per_cta`` (keys), ``schedule`` (:class:`~labcore.scheduler.Schedule`), ``makespan``,
        ``ratio`` (makespan / (work / slots)), ``partials``, ``partial_bytes_written``,
        ``combine_bytes_read``, ``output_bytes``, ``max_work``, ``mean_work``.

    Source: flash-attn ``flash_fwd_kernel.h`` (``oaccum``/``lse_accum`` in FP32); FlashInfer ``decode.cuh``
    (``tmp_v`` in the output dtype, ``tmp_s`` in FP32); FlashInfer §3.3.
    """
    plan = instance(plan, "plan", SplitPlan)
    pbytes = None if partial_bytes is None else _element_bytes(partial_bytes, "partial_bytes")
    ob = _element_bytes(out_bytes, "out_bytes")
    g, d = _group_and_head(group_size, head_dim)
    t = positive_float(time_per_key, "time_per_key")
    oh = positive_float(chunk_overhead, "chunk_overhead", allow_zero=True)
    w = plan.work_per_cta
    n_chunks = np.bincount(plan.cta, minlength=plan.num_ctas)
    with np.errstate(over="ignore", invalid="ignore"):
        costs = w * t + n_chunks * oh
        total = float(costs.sum())          # no slot's makespan exceeds the sum
    if not np.isfinite(total):
        raise ValueError(f"time_per_key={t:g} and chunk_overhead={oh:g} make the plan's cost overflow float64 "
                         "(not finite): give times in seconds of a real GPU")
    sched: Schedule = list_schedule(costs, plan.slots)
    partials = int(plan.writes_partials[plan.chunks[:, 0]].sum())
    if pbytes is None:
        per = g * (d * plan.partial_o_bytes + plan.partial_lse_bytes)
    else:
        per = g * (d + 1) * pbytes
    pb = partials * per
    return {"work_per_cta": w, "schedule": sched, "makespan": sched.makespan, "ratio": sched.ratio,
            "partials": partials, "partial_bytes_written": pb, "combine_bytes_read": pb,
            "output_bytes": plan.lengths.size * g * d * ob,
            "max_work": int(w.max()), "mean_work": float(w.mean())}


def plan_time(plan: SplitPlan, gpu, *, group_size: int = 1, head_dim: int = 128, dtype_bytes: int = 2,
              memory_rule: str = "shared", per_cta_cap: float | None = None) -> dict:
    """Seconds of a plan's attention kernel, its CTAs charged for their HBM bytes by one of two rules.

    A CTA reads ``2 d dtype_bytes`` bytes per key (K and V) and its ``g`` query rows once per chunk, and writes its
    partial states (or its output). Decode CTAs are memory-bound, so their bytes are their time:

    - ``memory_rule="shared"`` (default, the physical rule, :data:`labcore.waves.MEMORY_RULES`): the CTAs are
      dealt to the plan's slots (``plan.slots``, spread over the GPU's SMs) and the running ones share the HBM
      bandwidth, each capped at :func:`labcore.waves.per_cta_bandwidth_cap` of the GPU's generation
      (:func:`labcore.waves.shared_bandwidth_schedule`): idle SMs' bandwidth goes to the busy CTAs.
    - ``memory_rule="lecture"``: one CTA per SM, each charged a full wave's share ``min(80 GB/s, B / SMs)`` whether
      or not the other SMs are busy, dealt by :func:`labcore.scheduler.list_schedule` (the rule of §6's lecture
      figures, and of this function's busiest-CTA arithmetic).

    Also returned: the plan's floor (every byte once at full bandwidth) and where the planner runs
    (:data:`PLANNERS`); the plan's own cost and the combine kernel are not charged here.

    Args:
        plan: :class:`SplitPlan`.
        gpu: preset name or :class:`labcore.hardware.GPU`.
        group_size: g (int in [1, 1024]).
        head_dim: d (= d_v; int in [1, 1024]).
        dtype_bytes: bytes of a K, V, q or output element (1, 2 or 4).
        memory_rule: ``"shared"`` or ``"lecture"``.
        per_cta_cap: bytes/s (finite, > 0) for ``"shared"``; default the generation's. Checked under either rule;
            ``"lecture"`` charges its own ``min(80 GB/s, B / SMs)`` and does not use it.
    Returns:
        dict ``total`` (s), ``schedule``, ``floor`` (s), ``bytes_per_cta`` ((num_ctas,) bytes), ``memory_rule``,
        ``per_cta_cap`` (bytes/s), ``planner`` (``where`` and ``what``).
    Raises:
        TypeError: plan not a :class:`SplitPlan`; a size not an integer, per_cta_cap not a real number, a rule
            that is not a string.
        ValueError: an unknown GPU or rule, sizes out of range, dtype_bytes other than 1, 2 or 4, per_cta_cap not
            finite and > 0 or so small that the plan's time is not a finite float64.
    Source:
        as :func:`labcore.waves.shared_bandwidth_schedule` and :func:`labcore.waves.per_cta_bandwidth_cap`; lecture
        §6.4 for the ``"lecture"`` rule.
    """
    plan = instance(plan, "plan", SplitPlan)
    g_ = get_gpu(gpu)
    rule = choice(memory_rule, "memory_rule", MEMORY_RULES)
    g, d = _group_and_head(group_size, head_dim)
    eb = _element_bytes(dtype_bytes, "dtype_bytes")
    user_cap = None if per_cta_cap is None else positive_float(per_cta_cap, "per_cta_cap")
    keys = plan.chunk_tokens.astype(float)
    writes = np.where(plan.writes_partials[plan.chunks[:, 0]],
                      g * (d * plan.partial_o_bytes + plan.partial_lse_bytes), g * d * eb)
    chunk_bytes = keys * 2 * d * eb + g * d * eb + writes
    by = np.bincount(plan.cta, weights=chunk_bytes, minlength=plan.num_ctas)
    if rule == "shared":
        cap = per_cta_bandwidth_cap(g_) if user_cap is None else user_cap
        # every moment some CTA reads at min(cap, B) or more, so all bytes at that rate bound the makespan
        if not np.isfinite(float(by.sum()) / min(cap, g_.hbm_bandwidth)):
            raise ValueError(f"per_cta_cap={cap:g} bytes/s makes the plan's time overflow float64 (not finite): "
                             "give a CTA's bandwidth in bytes/s of a real GPU")
        sched = shared_bandwidth_schedule(by, slots=plan.slots, bandwidth=g_.hbm_bandwidth, per_cta_cap=cap,
                                          sms=min(g_.num_sms, plan.slots))
    else:
        cap = MODEL_DEFAULTS["per_sm_bandwidth_cap"]
        sched = list_schedule(by / min(cap, g_.hbm_bandwidth / g_.num_sms), g_.num_sms)
    return {"total": sched.makespan, "schedule": sched, "floor": float(by.sum()) / g_.hbm_bandwidth,
            "bytes_per_cta": by, "memory_rule": rule, "per_cta_cap": cap, "planner": dict(PLANNERS[plan.name])}


def zipf_lengths(batch: int, *, mean: int, a: float = 1.5, max_factor: int = 16, seed: int = 0) -> np.ndarray:
    """Heavy-tailed request lengths: Zipf(a) draws clipped at ``max_factor`` times their mean, rescaled to ``mean``.

    A Zipf-shaped ragged batch in the spirit of FlashInfer's Fig. 8 ("Zipf, mean 1024"); that figure's exact
    generator is not in our sources, so this one is ours. Args: batch: int in [1, :data:`labcore.checks.MAX_ITEMS`];
    mean: int in [1, :data:`labcore.splits.MAX_SEQLEN`]; a > 1 (finite); max_factor: int in [1,
    :data:`labcore.checks.MAX_COUNT`]; seed: int in [0, MAX_COUNT].
    Returns: (batch,) int64 lengths >= 1. Raises: TypeError: a count that is not an integer, ``a`` not a real number;
    ValueError: out of range. Source: Ye et al. 2025, Fig. 8 (the setting).
    """
    batch = positive_int(batch, "batch", maximum=MAX_ITEMS)
    mean = positive_int(mean, "mean", maximum=MAX_SEQLEN)
    f = positive_int(max_factor, "max_factor")
    seed = positive_int(seed, "seed", minimum=0)
    a = positive_float(a, "a")
    if a <= 1:
        raise ValueError(f"a must be > 1 for a Zipf distribution, got {a}")
    x = np.random.default_rng(seed).zipf(a, batch).astype(float)
    for _ in range(100):                          # clip the tail at f x the mean until the clip holds (fixed point)
        if x.max() <= f * x.mean() * (1 + 1e-9):
            break
        x = np.minimum(x, f * x.mean())
    return np.maximum(1, np.round(x / x.mean() * mean)).astype(np.int64)
