"""Decode-time attention, the exact algorithm: flash-decoding (split-KV + log-sum-exp merge) and GQA packing.

:func:`split_kv_attention` is flash-decoding's three steps for one query (or one GQA group of query heads
packed as the rows of a Q tile): split K/V along the sequence (views, no copies, :func:`split_bounds`),
compute each split's normalised output ``o_s`` and ``lse_s``, then merge with :func:`combine_splits`
(``lse = log sum_s exp(lse_s)``, ``o = sum_s exp(lse_s - lse) o_s``; the merge is
:func:`labcore.softmax.merge_state` folded over the splits). :func:`gqa_decode_attention` applies it to
all query heads of one sequence; :func:`kv_cache_bytes` sizes the cache it reads.

The CTA x wave *time model* of the same kernels, flash-attn's split heuristic, the model shapes and the
published A100 measurements live in :mod:`labcore.decode_model`.

Sources: Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference", PyTorch blog,
2023-10-13 (dao2023flashdecoding); Ainslie et al. 2023 (GQA).
"""
from __future__ import annotations

import numpy as np

from .checks import check_qkv, int_array, positive_float, positive_int, resolve_scale
from .attention import masked_scores
from .softmax import merge_states, row_softmax

__all__ = [
    "MAX_SPLITS",
    "split_bounds",
    "combine_splits",
    "split_kv_attention",
    "gqa_group_size",
    "kv_head_of",
    "gqa_decode_attention",
    "kv_cache_bytes",
]

#: Most splits :func:`split_bounds` (and the decode model) accept: 2^20, far beyond flash-attn's 128,
#: low enough that the per-split arrays stay small.
MAX_SPLITS = 2 ** 20

# --------------------------------------------------------------------------------------------------
# 1. The exact algorithm
# --------------------------------------------------------------------------------------------------


def split_bounds(n_keys: int, num_splits: int) -> np.ndarray:
    """Start/stop indices of ``num_splits`` contiguous splits of ``n_keys`` keys, as even as possible.

    Split ``s`` covers keys ``[b[s], b[s+1])``; the first ``n_keys % num_splits`` splits hold one key
    more than the rest. With more splits than keys the trailing splits are empty.

    Args:
        n_keys: int >= 0, the sequence length N_k.
        num_splits: int >= 1.
    Returns:
        int64 array of shape (num_splits + 1,), ``b[0] = 0``, ``b[-1] = n_keys``.
    Raises:
        TypeError/ValueError: non-integer, ``n_keys < 0``, ``num_splits < 1`` or above :data:`MAX_SPLITS`.
    Source: flash-decoding step 1 (dao2023flashdecoding); the same rule as ``numpy.array_split``.
    """
    n_keys = positive_int(n_keys, "n_keys", minimum=0)
    num_splits = positive_int(num_splits, "num_splits", maximum=MAX_SPLITS)
    q, r = divmod(n_keys, num_splits)
    sizes = np.full(num_splits, q, dtype=np.int64)
    sizes[:r] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def combine_splits(o_parts, lse_parts):
    """Merge per-split normalised outputs with their log-sum-exps (flash-decoding step 3).

    ``lse = log sum_s exp(lse_s)`` and ``o = sum_s exp(lse_s - lse) o_s``: exactly
    :func:`labcore.softmax.merge_states` (the n-ary :func:`~labcore.softmax.merge_state`), after checking the
    decode shapes. Splits with ``lse_s = -inf`` (empty or fully masked) get weight 0; if every split is empty
    the result is ``o = 0`` and ``lse = -inf`` (never NaN). The merge is associative and commutative.
    flash-attn's counterpart is the combine kernel of its split-KV path (``combine_attn_seqk_parallel``),
    which reads ``softmax_lse_accum`` and ``out_accum``.

    Args:
        o_parts: (num_splits, n_rows, d_v) array of per-split outputs, each already divided by its own
            softmax sum.
        lse_parts: (num_splits, n_rows) array of natural-log logsumexps (``-inf`` allowed).
    Returns:
        ``(o, lse)``: (n_rows, d_v) and (n_rows,) float64.
    Raises:
        ValueError: shapes that do not match, NaN, or ``+inf`` in ``lse_parts``.
    Source: dao2023flashdecoding (the reduction kernel); lecture §3.2 / §6.2.
    """
    o_parts = np.asarray(o_parts, dtype=np.float64)
    lse_parts = np.asarray(lse_parts, dtype=np.float64)
    if o_parts.ndim != 3 or lse_parts.ndim != 2 or o_parts.shape[:2] != lse_parts.shape:
        raise ValueError(f"o_parts must be (num_splits, n_rows, d_v) and lse_parts (num_splits, n_rows) with "
                         f"matching num_splits and n_rows; got {o_parts.shape} and {lse_parts.shape}")
    if o_parts.shape[0] < 1:
        raise ValueError("combine_splits needs at least one split")
    if not np.all(np.isfinite(o_parts)):
        raise ValueError("o_parts must be finite (an empty split is o = 0 with lse = -inf), got NaN or inf")
    if np.any(np.isnan(lse_parts)) or np.any(lse_parts == np.inf):
        raise ValueError("lse_parts must be finite or -inf (an empty split), never NaN or +inf")
    return merge_states(o_parts, lse_parts)


def split_kv_attention(q, K, V, *, num_splits: int = 1, split_sizes=None, scale=None, return_partials=False):
    """Flash-decoding for one sequence and one KV head: split K/V, attend per split, merge by lse.

    The query may be one head (``q`` of shape (d,)) or the query heads of one GQA group packed as the
    rows of a Q tile (``q`` of shape (g, d)): every row reads the same K/V, so one pass over the cache
    serves all g heads (the packing flash-decoding uses, lecture §6.2).

    Args:
        q: (d,) or (g, d) real array (decode: each row is one head's single new query).
        K: (N, d) keys.
        V: (N, d_v) values of this KV head. N >= 1.
        num_splits: int >= 1, number of contiguous, near-equal splits (:func:`split_bounds`; flash-attn's
            ``num_splits``); may exceed N
            (the extra splits are empty and contribute ``(0, -inf)``, which changes nothing).
        split_sizes: optional sequence of non-negative ints summing to N (uneven splits, zeros allowed);
            replaces ``num_splits`` (which must then be left at 1 or equal ``len(split_sizes)``).
        scale: softmax scale, default ``1/sqrt(d)`` (flash-attn's ``softmax_scale``).
        return_partials: also return the per-split ``(o_parts (num_splits, g, d_v), lse_parts (num_splits, g))``
            (flash-attn's ``out_accum`` and ``softmax_lse_accum``).
    Returns:
        ``(o, lse)`` with o (d_v,) and lse a 0-d array for 1-D ``q``, else (g, d_v) and (g,); natural-log
        lse (flash-attn's ``softmax_lse``). With ``return_partials`` a third item ``(o_parts, lse_parts)``.
    Raises:
        TypeError/ValueError: bad arrays (see :func:`labcore.reference_attention`; scores that overflow
        float64 included), ``num_splits < 1``,
        ``split_sizes`` negative, non-integer, not summing to N or contradicting ``num_splits``.
    Source: dao2023flashdecoding, steps 1-3; K/V splits are slices (numpy views), never copies.
    """
    q_arr = np.asarray(q) if not isinstance(q, (str, bytes)) and q is not None else q
    one_row = isinstance(q_arr, np.ndarray) and q_arr.ndim == 1
    Q, K, V = check_qkv(q_arr[None, :] if one_row else q, K, V, q_name="q")
    n = K.shape[0]
    s_val = resolve_scale(scale, Q.shape[1])
    if split_sizes is not None:
        if num_splits != 1 and num_splits != len(split_sizes):
            raise ValueError(f"give num_splits or split_sizes, not both: num_splits={num_splits!r} but "
                             f"{len(split_sizes)} split sizes")
        sizes = [positive_int(x, "split_sizes[i]", minimum=0) for x in split_sizes]
        if not sizes:
            raise ValueError("split_sizes must hold at least one split")
        if sum(sizes) != n:
            raise ValueError(f"split_sizes must sum to the number of keys N={n}, got {sum(sizes)}")
        bounds = np.concatenate([[0], np.cumsum(sizes)])
    else:
        bounds = split_bounds(n, num_splits)
    n_splits = len(bounds) - 1
    o_parts = np.zeros((n_splits, Q.shape[0], V.shape[1]))
    lse_parts = np.full((n_splits, Q.shape[0]), -np.inf)
    for i in range(n_splits):
        a, b = int(bounds[i]), int(bounds[i + 1])
        if b == a:
            continue  # empty split: (0, -inf)
        Ks, Vs = K[a:b], V[a:b]  # views
        P, lse_parts[i] = row_softmax(masked_scores(Q, Ks, scale=s_val))
        o_parts[i] = P @ Vs
    o, lse = combine_splits(o_parts, lse_parts)
    if one_row:
        o, lse = o[0], lse[0]
        lse = np.asarray(lse)
    if return_partials:
        return o, lse, (o_parts, lse_parts)
    return o, lse


def gqa_group_size(num_q_heads: int, num_kv_heads: int) -> int:
    """Query heads per KV head under GQA: ``g = H_q / H_kv`` (MHA: 1; MQA: ``H_q``).

    Args:
        num_q_heads, num_kv_heads: ints >= 1.
    Returns:
        int >= 1.
    Raises:
        TypeError/ValueError: sizes not integers >= 1, or ``H_q`` not a multiple of ``H_kv``.
    Source:
        Ainslie et al. 2023 (GQA); flash-attn's ``num_heads % num_heads_k == 0`` check.
    """
    hq = positive_int(num_q_heads, "num_q_heads")
    hkv = positive_int(num_kv_heads, "num_kv_heads")
    if hq % hkv:
        raise ValueError(f"num_q_heads ({hq}) must be a multiple of num_kv_heads ({hkv}) for GQA")
    return hq // hkv


def kv_head_of(h, num_q_heads: int, num_kv_heads: int):
    """The KV head that query head ``h`` reads under GQA: ``h // (H_q / H_kv)``.

    Args:
        h: int or int array of query-head indices in ``[0, H_q)``.
        num_q_heads, num_kv_heads: ints >= 1 with ``H_q`` a multiple of ``H_kv`` (MHA: equal; MQA: H_kv=1).
    Returns:
        int or int array, same shape as ``h``.
    Raises:
        ValueError: ``H_q`` not a multiple of ``H_kv``, or ``h`` out of range.
    Source: Ainslie et al. 2023 (GQA); the convention of flash-attn (query head h reads KV head h // g).
    """
    g = gqa_group_size(num_q_heads, num_kv_heads)
    h_arr = np.asarray(h)
    if not np.issubdtype(h_arr.dtype, np.integer):
        raise TypeError(f"h must be an integer query-head index, got {h!r}")
    if np.any(h_arr < 0) or np.any(h_arr >= num_q_heads):
        raise ValueError(f"h must lie in [0, {num_q_heads}), got {h!r}")
    out = h_arr // g
    return int(out) if out.ndim == 0 else out


def gqa_decode_attention(Q, K, V, *, num_splits: int = 1, pack_gqa: bool = True, scale=None):
    """Decode attention for one sequence with GQA: every query head against its KV head's cache.

    Args:
        Q: (H_q, d) the new query of each head.
        K: (H_kv, N, d).
        V: (H_kv, N, d_v).
        num_splits: int >= 1, flash-decoding splits per (KV head) (1 = no split; flash-attn's ``num_splits``).
        scale: the softmax scale (flash-attn's ``softmax_scale``), default ``1/sqrt(d)``.
        pack_gqa: if True, the g = H_q / H_kv query heads of a group are the rows of one Q tile (one pass
            over each KV head's cache, as flash-decoding does); if False, one pass per query head (as
            FlashAttention-2 does at decode). Both give the same (o, lse) up to rounding.
    Returns:
        ``(O, lse)``: (H_q, d_v) and (H_q,) float64 (lse is flash-attn's ``softmax_lse``).
    Raises:
        ValueError: shapes that do not match, ``H_q`` not a multiple of ``H_kv``, ``num_splits < 1``.
    Source: dao2023flashdecoding (GQA heads packed as the rows of the Q tile, flash-attn's ``pack_gqa``); lecture §6.2.
    """
    Qa, Ka, Va = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Qa.ndim != 2 or Ka.ndim != 3 or Va.ndim != 3:
        raise ValueError(f"Q must be (H_q, d), K (H_kv, N, d), V (H_kv, N, d_v); got {Qa.shape}, {Ka.shape}, {Va.shape}")
    hq, hkv = Qa.shape[0], Ka.shape[0]
    if hq < 1 or hkv < 1:
        raise ValueError(f"need at least one query head and one KV head, got H_q={hq}, H_kv={hkv}")
    if Va.shape[0] != hkv:
        raise ValueError(f"K and V must have the same number of KV heads: {Ka.shape[0]} vs {Va.shape[0]}")
    g = gqa_group_size(hq, hkv)
    O = np.zeros((hq, Va.shape[2]))
    lse = np.zeros(hq)
    for j in range(hkv):
        heads = np.arange(j * g, (j + 1) * g)
        if pack_gqa:
            O[heads], lse[heads] = split_kv_attention(Qa[heads], Ka[j], Va[j], num_splits=num_splits, scale=scale)
        else:
            for h in heads:
                o, l = split_kv_attention(Qa[h], Ka[j], Va[j], num_splits=num_splits, scale=scale)
                O[h], lse[h] = o, l
    return O, lse


def kv_cache_bytes(*, seqlen, num_kv_heads, head_dim, batch=1, num_layers=1, dtype_bytes=2):
    """Bytes of the K and V cache: ``2 x batch x seqlen x H_kv x d x dtype_bytes x layers``.

    Args:
        seqlen, num_kv_heads, head_dim, batch, num_layers: ints >= 1 (``seqlen`` and ``batch`` may be int arrays;
            the result broadcasts).
        dtype_bytes: 2 for FP16/BF16 (default), 1 for FP8.
    Returns:
        float (or float array) in bytes.
    Raises:
        ValueError/TypeError: any size < 1.
    Source: lecture §6.4, exercise 10 (Llama-3.1-8B, 128K: 537 MB per layer).
    """
    num_kv_heads = positive_int(num_kv_heads, "num_kv_heads")
    head_dim = positive_int(head_dim, "head_dim")
    num_layers = positive_int(num_layers, "num_layers")
    dtype_bytes = positive_float(dtype_bytes, "dtype_bytes")
    seqlen = int_array(seqlen, "seqlen")
    batch = int_array(batch, "batch")
    out = 2.0 * batch * seqlen * num_kv_heads * head_dim * dtype_bytes * num_layers
    return float(out) if np.ndim(out) == 0 else out
