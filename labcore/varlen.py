"""Variable-length (packed) batches: many sequences in one tensor, cut by ``cu_seqlens``, no padding.

flash-attn's ``flash_attn_varlen_func`` takes Q of shape (total_q, d) and K, V of shape (total_k, d), with
``cu_seqlens_q`` / ``cu_seqlens_k`` (batch + 1 cumulative offsets, starting at 0): sequence b owns rows
``cu_seqlens_q[b]:cu_seqlens_q[b+1]`` of Q and ``cu_seqlens_k[b]:cu_seqlens_k[b+1]`` of K and V, attends only to
its own keys, and with ``causal=True`` its own causal mask, aligned bottom-right when its N_q != N_k.
:func:`flash_attention_forward_varlen` is that, each sequence computed by the FlashAttention-2 forward of
:mod:`labcore.flash`; :func:`varlen_savings` counts the tensor-core FLOPs and HBM bytes a padded batch
would spend on padding, and :func:`varlen_grid` the CTAs and waves of each layout.

Sources: flash-attn ``flash_attn_interface.py`` (``flash_attn_varlen_func``: ``cu_seqlens_q``, ``cu_seqlens_k``,
``max_seqlen_q``, ``max_seqlen_k``) and ``flash_fwd_launch_template.h`` / ``flash_fwd_kernel.h`` (FA2 launches
``ceil(max_seqlen_q / kBlockM) x batch x heads`` CTAs; those past their sequence's end return at once);
Dao 2023 (FlashAttention-2) §3.1.1 (causal masking), bottom-right alignment as flash-attn >= 2.1.
"""
from __future__ import annotations

import numpy as np

from .checks import MAX_COUNT, MAX_ELEMENTS, MAX_HEAD_DIM, MAX_ITEMS, as_matrix, at_most, cdiv, check_qkv, flag, \
    instance, int_vector, positive_int
from .flash import flash_attention_forward
from .hbm import MAX_BLOCKS, Ledger, causal_block_counts, flash_forward_io
from .splits import MAX_SEQLEN
from .waves import wave_count

__all__ = ["check_cu_seqlens", "flash_attention_forward_varlen", "varlen_savings", "varlen_grid"]



def check_cu_seqlens(cu_seqlens, total: int, name: str = "cu_seqlens") -> np.ndarray:
    """Validate cumulative sequence offsets: 1-D integers, ``[0, ..., total]``, non-decreasing.

    Args:
        cu_seqlens: (batch + 1,) int array.
        total: rows of the packed tensor (int >= 0).
        name: the offsets' name in messages (a string).

    Returns:
        int64 array.

    Raises:
        TypeError: not integers (floats, strings, bools, a ragged list); total not an integer; name not a string.
        ValueError: not 1-D with at least 2 entries, not starting at 0, decreasing, or not ending at ``total``.

    Source: flash-attn ``flash_attn_varlen_func`` (``cu_seqlens_q``: "(batch_size + 1,), dtype torch.int32").
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string (the offsets' name in messages), got {type(name).__name__}")
    total = positive_int(total, "total", minimum=0)
    if isinstance(cu_seqlens, (str, bytes)) or cu_seqlens is None:
        raise TypeError(f"{name} must be an array of integers, got {type(cu_seqlens).__name__}")
    try:
        c = np.asarray(cu_seqlens)
    except (ValueError, OverflowError) as exc:          # a ragged list, an int past 64 bits
        raise TypeError(f"{name} must be a 1-D array of integers: {exc}") from None
    if c.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {c.dtype}")
    if c.ndim != 1 or c.size < 2:
        raise ValueError(f"{name} must be 1-D with batch + 1 >= 2 entries, got shape {c.shape}")
    if c.dtype.kind == "u":
        # unsigned differences wrap instead of going negative: compare as int64, which every valid offset fits
        if np.any(c > total):
            raise ValueError(f"{name} must end at the packed length {total} and never exceed it; got max {c.max()}")
        c = c.astype(np.int64)
    if c[0] != 0 or np.any(np.diff(c) < 0) or c[-1] != total:
        raise ValueError(f"{name} must start at 0, never decrease and end at the packed length {total}; got "
                         f"{c.tolist()[:8]}{' ...' if c.size > 8 else ''}")
    return c.astype(np.int64)


def flash_attention_forward_varlen(Q, K, V, cu_seqlens_q, cu_seqlens_k, *, block_q: int, block_kv: int,
                                   causal: bool = False, scale=None, ledger: Ledger | None = None):
    """Packed FlashAttention forward: every sequence attends to its own keys only.

    Sequence b: rows ``cu_seqlens_q[b]:cu_seqlens_q[b+1]`` of Q against rows ``cu_seqlens_k[b]:cu_seqlens_k[b+1]``
    of K and V, by :func:`labcore.flash.flash_attention_forward` (loop order "fa2"), with its own bottom-right
    causal mask (query i of the sequence sees key j iff ``j <= i + N_k - N_q``). A sequence with no queries
    contributes nothing; one with queries but no keys gives zero rows and ``lse = -inf`` (as a fully masked row).

    Args:
        Q: (total_q, d).
        K: (total_k, d).
        V: (total_k, d_v) real arrays (total_k may be 0 only if every sequence has no keys; then K and V must still
            be 2-D).
        cu_seqlens_q, cu_seqlens_k: (batch + 1,) int offsets (:func:`check_cu_seqlens`).
        block_q, block_kv: B_r, B_c (ints >= 1). The sequences together hold at most
            :data:`labcore.checks.MAX_ELEMENTS` scores (queries x keys) in at most :data:`labcore.checks.MAX_ITEMS`
            block pairs.
        causal: bool.
        scale: default ``1/sqrt(d)``.
        ledger: optional :class:`~labcore.hbm.Ledger` (the sum of the sequences' ledgers).
    Returns:
        ``(O, lse)``: (total_q, d_v) and (total_q,) float64, natural-log lse (flash-attn's ``softmax_lse``,
        which its varlen path returns as (heads, total_q)).

    Raises:
        TypeError: an array that is not real, offsets that are not integers, a block size that is not an integer,
            causal not a bool, ledger not a Ledger.
        ValueError: bad arrays (NaN or inf, wrong shapes) or offsets (different batch sizes, wrong totals), block
            sizes < 1; more scores or block pairs than the bounds above.

    Source: flash-attn ``flash_attn_varlen_func``; Dao 2023, Algorithm 1.
    """
    causal = flag(causal, "causal")
    if ledger is not None:
        instance(ledger, "ledger", Ledger)
    Q = as_matrix(Q, "Q", allow_empty_rows=True)
    K = as_matrix(K, "K", allow_empty_rows=True)
    V = as_matrix(V, "V", allow_empty_rows=True)
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"Q (total_q, d), K (total_k, d), V (total_k, d_v) must agree; got {Q.shape}, {K.shape}, "
                         f"{V.shape}")
    cq = check_cu_seqlens(cu_seqlens_q, Q.shape[0], "cu_seqlens_q")
    ck = check_cu_seqlens(cu_seqlens_k, K.shape[0], "cu_seqlens_k")
    if cq.size != ck.size:
        raise ValueError(f"cu_seqlens_q and cu_seqlens_k must describe the same batch: {cq.size - 1} vs "
                         f"{ck.size - 1} sequences")
    B_r, B_c = positive_int(block_q, "block_q"), positive_int(block_kv, "block_kv")
    n_q, n_k = np.diff(cq), np.diff(ck)              # each at most the packed length: products fit in int64
    at_most(int((n_q * n_k).sum()), "Q, K, cu_seqlens_q and cu_seqlens_k", MAX_ELEMENTS, "scores")
    at_most(int((cdiv(n_q, B_r) * cdiv(n_k, B_c)).sum()), "block_q and block_kv", MAX_ITEMS, "block pairs")
    O, lse = np.zeros((Q.shape[0], V.shape[1])), np.full(Q.shape[0], -np.inf)
    for b in range(cq.size - 1):
        q0, q1, k0, k1 = int(cq[b]), int(cq[b + 1]), int(ck[b]), int(ck[b + 1])
        if q1 == q0 or k1 == k0:
            continue                                   # no queries, or no keys: zeros and -inf
        Qb, Kb, Vb = check_qkv(Q[q0:q1], K[k0:k1], V[k0:k1])
        O[q0:q1], lse[q0:q1] = flash_attention_forward(Qb, Kb, Vb, block_q=B_r, block_kv=B_c, causal=causal,
                                                       scale=scale, ledger=ledger)
    return O, lse


def _lengths(x, name):
    """Lengths of the sequences: a non-empty 1-D integer array, each in [0, MAX_SEQLEN], at most MAX_ITEMS."""
    a = int_vector(x, name, maximum=MAX_SEQLEN)
    at_most(a.size, name, MAX_ITEMS, "sequences")
    return a


def _tile_flops(n_q, n_k, d, B_r, B_c, causal):
    """Tensor-core FLOPs of the tiles one sequence's forward computes (4 B_r B_c d per full tile pair, actual
    rows and columns at ragged edges; skipped causal tiles cost nothing)."""
    if n_q == 0 or n_k == 0:
        return 0
    rows, J, cols = causal_block_counts(n_q, block_q=B_r, block_kv=B_c, causal=causal, N_k=n_k)
    return 4 * d * int((rows * cols).sum())         # the sum is at most n_q x n_k; the rest in Python ints


def varlen_savings(seqlens_q, seqlens_k=None, *, d: int, block_q: int = 128, block_kv: int = 128,
                   causal: bool = False, dtype_bytes: int = 2) -> dict:
    """FLOPs and HBM bytes of a packed batch against the same batch padded to its longest sequence.

    Padded: every sequence is cut as if it had ``max(seqlens_q)`` queries and ``max(seqlens_k)`` keys (the
    padding rows are computed, and with a key-padding mask still read). FLOPs count the tiles the forward
    computes (4 x rows x columns x d per visited block pair); bytes are :func:`labcore.hbm.flash_forward_io`
    (fa2 order) x ``dtype_bytes``.

    Args:
        seqlens_q: (batch,) ints >= 0 (an integer array, at most :data:`labcore.checks.MAX_ITEMS` sequences, at
            most :data:`labcore.hbm.MAX_BLOCKS` blocks each);
        seqlens_k: (batch,) ints >= 0 (default = seqlens_q); ``max(seqlens_q) x max(seqlens_k)``, the padded
            sequence's scores, at most :data:`labcore.checks.MAX_COUNT` (2^53, what a float64 counts exactly).
        d: head dim (int in [1, 1024]).
        block_q, block_kv: B_r, B_c (ints in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        causal: bool.
        dtype_bytes: 2 for FP16/BF16 (int >= 1).

    Returns:
        dict ``flops_packed``, ``flops_padded``, ``bytes_packed``, ``bytes_padded``, ``flops_saved`` and
        ``bytes_saved`` (fractions of the padded figures).

    Raises:
        TypeError: lengths not an integer array (a string, floats); a size that is not an integer; causal not a
            bool.
        ValueError: lengths negative or too long, different batch sizes, or an all-empty batch; sizes < 1 or past
            their bounds.

    Source: flash-attn ``flash_attn_varlen_func`` (no padding); Dao 2023 §3.1.1.
    """
    sq = _lengths(seqlens_q, "seqlens_q")
    sk = sq if seqlens_k is None else _lengths(seqlens_k, "seqlens_k")
    B_r = positive_int(block_q, "block_q", maximum=MAX_SEQLEN)
    B_c = positive_int(block_kv, "block_kv", maximum=MAX_SEQLEN)
    at_most(cdiv(int(sq.max()), B_r), "seqlens_q", MAX_BLOCKS, "query blocks")
    at_most(cdiv(int(sk.max()), B_c), "seqlens_k" if seqlens_k is not None else "seqlens_q", MAX_BLOCKS,
            "key blocks")
    if sk.shape != sq.shape:
        raise ValueError(f"seqlens_q and seqlens_k must have one entry per sequence: {sq.size} vs {sk.size}")
    if sq.max() == 0 or sk.max() == 0:
        raise ValueError("the batch holds no queries or no keys at all: seqlens_q and seqlens_k need a non-zero entry")
    # every sequence's queries x keys is at most the padded one's: bounded, no int64 sum below can wrap
    at_most(int(sq.max()) * int(sk.max()), "seqlens_q and seqlens_k", MAX_COUNT, "scores in the padded sequence")
    d = positive_int(d, "d", maximum=MAX_HEAD_DIM)
    b = positive_int(dtype_bytes, "dtype_bytes")
    causal = flag(causal, "causal")

    def io(n_q, n_k):
        return 0 if n_q == 0 or n_k == 0 else flash_forward_io(n_q, d, block_q=B_r, block_kv=B_c, causal=causal,
                                                               N_k=n_k)

    mq, mk = int(sq.max()), int(sk.max())
    out = {"flops_packed": sum(_tile_flops(int(q), int(k), d, B_r, B_c, causal) for q, k in zip(sq, sk)),
           "flops_padded": sq.size * _tile_flops(mq, mk, d, B_r, B_c, causal),
           "bytes_packed": b * sum(io(int(q), int(k)) for q, k in zip(sq, sk)),
           "bytes_padded": b * sq.size * io(mq, mk)}
    out["flops_saved"] = 1 - out["flops_packed"] / out["flops_padded"]
    out["bytes_saved"] = 1 - out["bytes_packed"] / out["bytes_padded"]
    return out


def varlen_grid(seqlens_q, *, heads: int, block_q: int = 128, num_sms: int) -> dict:
    """CTAs of a packed forward and their waves on ``num_sms`` SMs, as FA2 launches them and as a varlen tile
    scheduler (FA3) enumerates them.

    FA2 launches ``ceil(max_seqlen_q / B_r) x batch x heads`` CTAs; those whose block starts past their
    sequence's end return at once (``launched``). The working CTAs are ``heads x sum_b ceil(N_b / B_r)``
    (``working``), the count a padded batch would also run as real work only if every sequence were longest.

    Args:
        seqlens_q: (batch,) ints >= 0 (an integer array).
        heads: int >= 1.
        block_q: B_r (int in [1, :data:`labcore.splits.MAX_SEQLEN`]). The launched CTAs, ``ceil(max_seqlen_q /
            B_r) x batch x heads``, at most :data:`labcore.checks.MAX_COUNT`.
        num_sms: SMs (int in [1, :data:`labcore.checks.MAX_ITEMS`]).

    Returns:
        dict ``launched``, ``working``, ``empty`` (launched - working), ``waves_launched``, ``waves_working``.

    Raises:
        TypeError: lengths not an integer array; a size that is not an integer.
        ValueError: bad lengths or an all-empty batch; sizes < 1 or past their bounds; too many CTAs.

    Source:
        flash-attn ``flash_fwd_launch_template.h`` (``dim3 grid(num_m_block, params.b, params.h)``) and
        ``flash_fwd_kernel.h`` (``if (m_block * kBlockM >= binfo.actual_seqlen_q) return;``);
        ``hopper/tile_scheduler.hpp`` (``VarlenDynamicPersistentTileScheduler``).
    """
    sq = _lengths(seqlens_q, "seqlens_q")
    positive_int(block_q, "block_q", maximum=MAX_SEQLEN)
    if sq.max() == 0:
        raise ValueError("the batch holds no queries")
    h, B_r = positive_int(heads, "heads"), positive_int(block_q, "block_q")
    sms = positive_int(num_sms, "num_sms", maximum=MAX_ITEMS)
    launched = int(cdiv(int(sq.max()), B_r)) * sq.size * h
    at_most(launched, "seqlens_q, heads and block_q", MAX_COUNT, "CTAs")
    working = int(cdiv(sq, B_r).sum()) * h
    return {"launched": launched, "working": working, "empty": launched - working,
            "waves_launched": wave_count(launched, sms), "waves_working": wave_count(working, sms)}
