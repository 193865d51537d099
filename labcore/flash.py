"""FlashAttention forward (two loop orders) and backward, with exact HBM ledgers (lecture §4–§5).

The softmax arithmetic comes from :mod:`labcore.softmax` (one ``online_update`` shared by both loop
orders, ``safe_lse``, ``normalise``, the overflow check ``scaled_scores``); FLOPs are counted in
:mod:`labcore.flops` and HBM traffic in :mod:`labcore.hbm`. This module owns the loops, the block
geometry (paper block sizes, causal block maps, the tile schedule) and the GPT-2 medium comparison.
Argument names follow flash-attn: ``block_q``/``block_kv`` are the tile sizes ``kBlockM``/``kBlockN``
(B_r/B_c), ``scale`` is ``softmax_scale``, ``causal`` is ``causal``, ``lse`` is ``softmax_lse``.

Conventions (as :mod:`labcore.attention`): ``scale`` defaults to ``1/sqrt(d)``; ``lse`` is the
natural-log logsumexp of each row of scaled scores; masks are ``-inf``; causal masking with
N_q != N_k is aligned to the bottom-right corner (query i sees key j iff ``j <= i + N_k - N_q``); a
fully masked row gives an output row of zeros and ``lse = -inf``.

Blocks: Q is cut into T_r = ceil(N_q / B_r) row blocks (``block_q`` = B_r), K and V into
T_c = ceil(N_k / B_c) blocks (``block_kv`` = B_c); the last block of each may be shorter (ragged).
With ``causal=True`` a block pair entirely above the diagonal is skipped (neither read nor computed)
and only blocks that straddle the diagonal are masked inside.

Every function that touches "HBM" takes an optional :class:`labcore.hbm.Ledger` and records each read
and write at the line of the paper's pseudo-code that does it; the closed forms in :mod:`labcore.hbm`
(:func:`~labcore.hbm.flash_forward_io`, :func:`~labcore.hbm.flash_backward_io`,
:func:`~labcore.hbm.standard_backward_io`) equal these ledgers exactly (tests/test_flash.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import LOOP_ORDERS, as_matrix, as_vector, causal_mask, cdiv, check_qkv, choice, flag, key_count, \
    positive_float, positive_int, resolve_scale
from .attention import masked_scores, reference_attention
from .softmax import normalise, online_update, probabilities_from_lse, row_softmax, safe_lse, scaled_scores
from .flops import attention_flops
from .hbm import MAX_BLOCKS, Ledger, causal_block_counts, flash_forward_io, training_step_io

__all__ = [
    "flash_attention_forward",
    "flash_attention_backward",
    "standard_attention_backward",
    "finite_difference_gap",
    "paper_block_sizes",
    "flash_forward_io_at_sram",
    "causal_block_fraction",
    "causal_block_map",
    "TileSchedule",
    "flash_tile_schedule",
    "PAPER_FIG2_GPT2_MEDIUM",
    "gpt2_medium_comparison",
]


# ----------------------------------------------------------------------------------------------------------
# block sizes and block geometry
# ----------------------------------------------------------------------------------------------------------

def paper_block_sizes(M: int, d: int):
    """The FlashAttention paper's block sizes for an SRAM of ``M`` elements: ``B_c = ceil(M / 4d)``,
    ``B_r = min(B_c, d)``.

    "4d" because four tiles (Q_i, K_j, V_j, O_i) must fit on chip at once.

    Args:
        M: on-chip SRAM size in *elements* (int >= 4 d; e.g. 100 KB of FP16 = 51,200 elements).
        d: head dimension (int >= 1).
    Returns:
        ``(B_r, B_c)`` ints. Example: ``paper_block_sizes(51_200, 64) == (64, 200)``.
    Raises:
        TypeError/ValueError: M or d not an integer >= 1; ``M < 4 d`` (not even one row of each tile fits).
    Source: Dao et al. 2022, Algorithm 1, line 1.
    """
    d = positive_int(d, "d")
    M = positive_int(M, "M")
    if M < 4 * d:
        raise ValueError(f"M must be at least 4*d = {4 * d} elements (one row each of Q_i, K_j, V_j, O_i); got {M}")
    B_c = cdiv(M, 4 * d)
    return min(B_c, d), B_c


def flash_forward_io_at_sram(N: int, d: int, *, M: int, loop_order: str = "fa1", causal: bool = False,
                             N_k: int | None = None) -> int:
    """Elements the FlashAttention forward moves with the paper's block sizes for an SRAM of ``M`` elements:
    :func:`labcore.hbm.flash_forward_io` at ``(block_q, block_kv) = paper_block_sizes(M, d)``.

    Example: N = 4096, d = 64, 100 KB of FP16 (M = 51,200): 17,653,760 elements in the fa1 order (35.3 MB).

    Args:
        N, d: ints >= 1.
        M: SRAM size in elements (int >= 4 d).
        loop_order, causal, N_k: as :func:`~labcore.hbm.flash_forward_io`.
    Returns:
        int, elements (x 2 for FP16 bytes).
    Raises: TypeError/ValueError: as :func:`paper_block_sizes` and :func:`~labcore.hbm.flash_forward_io`.
    Source: Dao et al. 2022, Algorithm 1 and Theorem 2; lecture §4.3-§4.4.
    """
    B_r, B_c = paper_block_sizes(M, d)
    return flash_forward_io(N, d, block_q=B_r, block_kv=B_c, loop_order=loop_order, causal=causal, N_k=N_k)


def _block_bounds(n: int, b: int):
    return [(s, min(s + b, n)) for s in range(0, n, b)]


def _check_pairs(N, N_k, B_r, B_c):
    """The block-pair maps and tile schedules hold one entry per (query block, key block) pair."""
    pairs = cdiv(N, B_r) * cdiv(N_k, B_c)
    if pairs > MAX_BLOCKS:
        raise ValueError(f"N = {N:,} and N_k = {N_k:,} in blocks of {B_r} x {B_c} give {pairs:,} block pairs; at most "
                         f"{MAX_BLOCKS:,} are mapped one by one (use larger blocks or shorter sequences)")


def _visit_map(N, N_k, B_r, B_c, causal) -> np.ndarray:
    """(T_r, T_c) int8 codes of every block pair: 0 skipped, 1 full, 2 diagonal (all 1 without a mask)."""
    _check_pairs(N, N_k, B_r, B_c)
    if not causal:
        return np.ones((cdiv(N, B_r), cdiv(N_k, B_c)), np.int8)
    off = N_k - N
    r0 = np.arange(0, N, B_r)[:, None]
    r1 = np.minimum(r0 + B_r, N)
    c0 = np.arange(0, N_k, B_c)[None, :]
    c1 = np.minimum(c0 + B_c, N_k)
    skip = c0 > (r1 - 1) + off
    full = (c1 - 1) <= r0 + off
    return np.where(skip, 0, np.where(full, 1, 2)).astype(np.int8)


#: The codes of :func:`causal_block_map` and of the loops that read it.
_SKIP, _FULL, _DIAG = 0, 1, 2


def causal_block_map(N: int, *, block_q: int, block_kv: int | None = None, N_k: int | None = None) -> np.ndarray:
    """Which block pairs a causal FlashAttention computes: 0 = skipped, 1 = full (no mask), 2 = diagonal.

    The forward and backward passes and :func:`flash_tile_schedule` visit exactly these pairs.

    Args:
        N: queries (int >= 1). block_q: B_r (int >= 1). block_kv: B_c (default B_r). N_k: keys (default N).
        (flash-attn: ``kBlockM``, ``kBlockN``, ``seqlen_q``, ``seqlen_k``.)
    Returns:
        (T_r, T_c) int8 array.
    Raises:
        TypeError/ValueError: sizes that are not integers >= 1; more than :data:`labcore.hbm.MAX_BLOCKS`
        block pairs.
    Source: Dao 2023 (FlashAttention-2) §3.1.1, causal masking; bottom-right alignment as flash-attn >= 2.1.
    """
    N = positive_int(N, "N")
    B_r = positive_int(block_q, "block_q")
    B_c = B_r if block_kv is None else positive_int(block_kv, "block_kv")
    return _visit_map(N, key_count(N, N_k), B_r, B_c, True)


def causal_block_fraction(N: int, *, block_q: int, block_kv: int | None = None, N_k: int | None = None) -> float:
    """Fraction of block pairs a causal FlashAttention computes (the rest are skipped).

    With square blocks and T = N / B blocks per side this is ``T (T + 1) / 2 / T^2 = 1/2 + 1/(2T)``
    (lecture §5.3: N = 4096 gives 0.508 / 0.516 / 0.531 for B = 64 / 128 / 256).

    Args:
        N: sequence length (int >= 1). block_q: B_r (int >= 1; flash-attn's kBlockM). block_kv: B_c
            (default ``block_q``; flash-attn's kBlockN).
        N_k: keys (default N).
    Returns:
        float in (0, 1].
    Raises:
        TypeError/ValueError: sizes that are not integers >= 1.
    Source: Dao 2023 §3.1.1.
    """
    N = positive_int(N, "N")
    B_r = positive_int(block_q, "block_q")
    B_c = B_r if block_kv is None else positive_int(block_kv, "block_kv")
    _, J, _ = causal_block_counts(N, block_q=B_r, block_kv=B_c, causal=True, N_k=N_k)
    return float(J.sum()) / float(J.size * cdiv(key_count(N, N_k), B_c))


# ----------------------------------------------------------------------------------------------------------
# forward
# ----------------------------------------------------------------------------------------------------------

def _score_tile(Q, K, s, r0, r1, c0, c1, kind):
    """Scores of the block pair rows [r0, r1) x keys [c0, c1) of the whole Q and K (checked by
    :func:`~labcore.softmax.scaled_scores`), masked inside a diagonal block."""
    S = scaled_scores(Q[r0:r1], K[c0:c1], s)
    if kind == _DIAG:
        S = np.where(causal_mask(Q.shape[0], K.shape[0], r0, c0, r1, c1), S, -np.inf)
    return S


def flash_attention_forward(Q, K, V, *, block_q: int, block_kv: int, loop_order: str = "fa2",
                            causal: bool = False, scale=None, ledger: Ledger | None = None):
    """FlashAttention forward pass, exact in float64, in either loop order.

    ``loop_order="fa1"`` is the paper's Algorithm 1: the outer loop runs over K/V blocks j, the inner over
    Q blocks i; O, l and m live in HBM and are re-read and re-written for every pair, and O is normalised
    at every step. ``"fa2"`` is FlashAttention-2's order: the outer loop runs over Q blocks, (m, l, acc)
    stay on chip, normalisation is deferred to the end and only O and lse are written. The normalisation
    follows from the loop order. Both loops share one inner step,
    :func:`labcore.softmax.online_update` (Triton's ``_attn_fwd_inner``).

    Ledger (see :func:`labcore.hbm.flash_forward_io`, equal to it exactly):
    fa1: write O, l, m initialised (N d + 2N); read K_j, V_j once per j; per visited pair read Q_i, O_i,
    l_i, m_i and write O_i, l_i, m_i. fa2: read Q_i once (if it sees any key); per visited pair read K_j,
    V_j; write O_i and lse_i once.

    flash-attn counterparts (``flash_attn_func``): ``block_q``/``block_kv`` are the kernel's tile sizes
    ``kBlockM``/``kBlockN`` (B_r/B_c), ``scale`` is ``softmax_scale``, ``causal`` is ``causal``, and the
    returned ``lse`` is ``softmax_lse`` (natural log).

    Args:
        Q: (N_q, d) real array. K: (N_k, d). V: (N_k, d_v). Computed in float64.
        block_q: B_r, rows per Q block (int >= 1, keyword). block_kv: B_c, rows per K/V block (int >= 1).
        loop_order: "fa1" or "fa2". causal: bottom-right aligned causal mask, fully masked blocks skipped.
        scale: float > 0, default 1/sqrt(d). ledger: optional :class:`~labcore.hbm.Ledger`.
    Returns:
        ``(O, lse)``: (N_q, d_v) and (N_q,) float64 (lse natural log; -inf and a zero row when fully masked).
    Raises:
        TypeError/ValueError: as :func:`labcore.attention.reference_attention` (scores that overflow
        float64 included); block sizes not integers >= 1; unknown loop_order.
    Source: Dao et al. 2022, Algorithm 1; Dao 2023, Algorithm 1; Triton's fused-attention tutorial.
    """
    causal = flag(causal, "causal")
    Q, K, V = check_qkv(Q, K, V)
    B_r = positive_int(block_q, "block_q")
    B_c = positive_int(block_kv, "block_kv")
    loop = {"fa1": _forward_fa1, "fa2": _forward_fa2}[choice(loop_order, "loop_order", LOOP_ORDERS)]
    s = resolve_scale(scale, Q.shape[1])
    return loop(Q, K, V, B_r, B_c, causal, s, ledger if ledger is not None else Ledger())


def _forward_fa1(Q, K, V, B_r, B_c, causal, s, lg):
    """Algorithm 1 (FlashAttention): outer loop over K/V blocks, O/l/m in HBM, O normalised every step."""
    (n_q, d), (n_k, d_v) = Q.shape, V.shape
    qb, kb = _block_bounds(n_q, B_r), _block_bounds(n_k, B_c)
    kinds = _visit_map(n_q, n_k, B_r, B_c, causal)
    O, l, m = np.zeros((n_q, d_v)), np.zeros(n_q), np.full(n_q, -np.inf)
    lg.write("O", n_q * d_v)
    lg.write("l", n_q)
    lg.write("m", n_q)
    for j, (c0, c1) in enumerate(kb):
        if not kinds[:, j].any():
            continue
        lg.read("K", (c1 - c0) * d)
        lg.read("V", (c1 - c0) * d_v)
        for i, (r0, r1) in enumerate(qb):
            if kinds[i, j] == _SKIP:
                continue
            n = r1 - r0
            for name, size in (("Q", n * d), ("O", n * d_v), ("l", n), ("m", n)):
                lg.read(name, size)
            S = _score_tile(Q, K, s, r0, r1, c0, c1, kinds[i, j])
            acc = l[r0:r1, None] * O[r0:r1]            # un-normalise the stored O_i
            m[r0:r1], l[r0:r1], acc = online_update(m[r0:r1], l[r0:r1], acc, S, V[c0:c1])
            O[r0:r1] = normalise(acc, l[r0:r1])       # Algorithm 1, line 12: normalised at every step
            for name, size in (("O", n * d_v), ("l", n), ("m", n)):
                lg.write(name, size)
    return O, safe_lse(m, l)


def _forward_fa2(Q, K, V, B_r, B_c, causal, s, lg):
    """Algorithm 1 (FlashAttention-2): outer loop over Q blocks, (m, l, acc) on chip, deferred normalisation."""
    (n_q, d), (n_k, d_v) = Q.shape, V.shape
    qb, kb = _block_bounds(n_q, B_r), _block_bounds(n_k, B_c)
    kinds = _visit_map(n_q, n_k, B_r, B_c, causal)
    O, lse = np.zeros((n_q, d_v)), np.full(n_q, -np.inf)
    for i, (r0, r1) in enumerate(qb):
        n = r1 - r0
        if kinds[i].any():
            lg.read("Q", n * d)
            m, l, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, d_v))
            for j, (c0, c1) in enumerate(kb):
                if kinds[i, j] == _SKIP:
                    continue
                lg.read("K", (c1 - c0) * d)
                lg.read("V", (c1 - c0) * d_v)
                S = _score_tile(Q, K, s, r0, r1, c0, c1, kinds[i, j])
                m, l, acc = online_update(m, l, acc, S, V[c0:c1])
            O[r0:r1], lse[r0:r1] = normalise(acc, l), safe_lse(m, l)   # deferred normalisation
        lg.write("O", n * d_v)
        lg.write("lse", n)
    return O, lse


# ----------------------------------------------------------------------------------------------------------
# backward
# ----------------------------------------------------------------------------------------------------------

def _check_grad_inputs(Q, K, V, dO, O=None, lse=None):
    Q, K, V = check_qkv(Q, K, V)
    dO = as_matrix(dO, "dO")
    if dO.shape != (Q.shape[0], V.shape[1]):
        raise ValueError(f"dO must have shape (N_q, d_v) = {(Q.shape[0], V.shape[1])}, got {dO.shape}")
    if O is not None:
        O = as_matrix(O, "O")
        if O.shape != dO.shape:
            raise ValueError(f"O must have shape (N_q, d_v) = {dO.shape}, got {O.shape}")
    if lse is not None:
        lse = as_vector(lse, "lse")
        if lse.shape != (Q.shape[0],):
            raise ValueError(f"lse must have shape (N_q,) = {(Q.shape[0],)}, got {lse.shape}")
        if np.any(lse == np.inf):
            raise ValueError("lse must not be +inf (a fully masked row has lse = -inf)")
    return Q, K, V, dO, O, lse


def standard_attention_backward(Q, K, V, dO, *, causal: bool = False, scale=None, ledger: Ledger | None = None):
    """Standard attention backward pass (FlashAttention paper, Algorithm 3), exact in float64.

    Uses the P that Algorithm 0 stored in HBM (computed here for the numbers, *counted* as read from HBM):
    dV = P^T dO; dP = dO V^T; dS = P * (dP - rowsum(P * dP)); dQ = scale dS K; dK = scale dS^T Q.
    Ledger: ``7 N^2 + 8 N d`` for N_q = N_k = N, see :func:`labcore.hbm.standard_backward_io`.

    Args:
        Q: (N_q, d). K: (N_k, d). V: (N_k, d_v). dO: (N_q, d_v), the gradient of the loss w.r.t. O.
        causal, scale: as :func:`labcore.attention.reference_attention`. ledger: optional Ledger.
    Returns:
        ``(dQ, dK, dV)`` with the shapes of Q, K, V (float64).
    Raises:
        TypeError/ValueError: bad shapes, non-finite values, scale not > 0.
    Source: Dao et al. 2022, Appendix B.2 (Eq. for dS) and Algorithm 3.
    """
    causal = flag(causal, "causal")
    Q, K, V, dO, _, _ = _check_grad_inputs(Q, K, V, dO)
    s = resolve_scale(scale, Q.shape[1])
    lg = ledger if ledger is not None else Ledger()
    n_q, d = Q.shape
    n_k, d_v = V.shape
    P, _ = row_softmax(masked_scores(Q, K, causal=causal, scale=s))
    lg.read("P", n_q * n_k)
    lg.read("dO", n_q * d_v)
    dV = P.T @ dO
    lg.write("dV", n_k * d_v)
    lg.read("dO", n_q * d_v)
    lg.read("V", n_k * d_v)
    dP = dO @ V.T
    lg.write("dP", n_q * n_k)
    lg.read("P", n_q * n_k)
    lg.read("dP", n_q * n_k)
    dS = P * (dP - (P * dP).sum(axis=1, keepdims=True))
    lg.write("dS", n_q * n_k)
    lg.read("dS", n_q * n_k)
    lg.read("K", n_k * d)
    dQ = s * (dS @ K)
    lg.write("dQ", n_q * d)
    lg.read("dS", n_q * n_k)
    lg.read("Q", n_q * d)
    dK = s * (dS.T @ Q)
    lg.write("dK", n_k * d)
    return dQ, dK, dV


def flash_attention_backward(Q, K, V, O, dO, lse, *, block_q: int, block_kv: int, causal: bool = False,
                             scale=None, ledger: Ledger | None = None):
    """FlashAttention backward pass: recompute S and P blockwise from lse, never store P.

    Before the loop: D = rowsum(dO * O) (the identity sum_j dP_ij P_ij = dO_i . O_i), and dQ = 0 in HBM.
    Outer loop over K/V blocks j (dK_j, dV_j accumulate on chip); inner loop over Q blocks i:
    S_ij = scale Q_i K_j^T, P_ij = exp(S_ij - lse_i), dV_j += P_ij^T dO_i, dP_ij = dO_i V_j^T,
    dS_ij = P_ij * (dP_ij - D_i), dQ_i += scale dS_ij K_j (read and written back to HBM),
    dK_j += scale dS_ij^T Q_i. Blocks above the causal diagonal are skipped.

    Ledger (every read/write counts as HBM, lecture §5.2; equals :func:`labcore.hbm.flash_backward_io`):
    read O, dO, write D; write dQ = 0; per j read K_j, V_j and write dK_j, dV_j; per visited pair read Q_i,
    dO_i, dQ_i, lse_i, D_i and write dQ_i.

    Args:
        Q: (N_q, d). K: (N_k, d). V: (N_k, d_v). O: (N_q, d_v) forward output. dO: (N_q, d_v).
        lse: (N_q,) natural-log logsumexp from the forward pass (``-inf`` for a fully masked row;
            flash-attn's ``softmax_lse``).
        block_q: B_r. block_kv: B_c (ints >= 1, keywords; flash-attn's ``kBlockM``/``kBlockN``).
        causal, scale: as the forward (``scale`` is flash-attn's ``softmax_scale``). ledger: optional Ledger.
    Returns:
        ``(dQ, dK, dV)`` float64 with the shapes of Q, K, V.
    Raises:
        TypeError/ValueError: bad shapes, non-finite inputs (lse may be -inf, never NaN or +inf), block
        sizes not integers >= 1, scale not > 0, scores that overflow float64.
    Source: Dao et al. 2022, Algorithm 4 and Appendix B.4; Dao 2023, Algorithm 2 (D before the loop).
    """
    causal = flag(causal, "causal")
    Q, K, V, dO, O, lse = _check_grad_inputs(Q, K, V, dO, O, lse)
    B_r = positive_int(block_q, "block_q")
    B_c = positive_int(block_kv, "block_kv")
    s = resolve_scale(scale, Q.shape[1])
    lg = ledger if ledger is not None else Ledger()
    n_q, d = Q.shape
    n_k, d_v = V.shape
    lg.read("O", n_q * d_v)
    lg.read("dO", n_q * d_v)
    D = (dO * O).sum(axis=1)
    lg.write("D", n_q)
    dQ = np.zeros((n_q, d))
    lg.write("dQ", n_q * d)
    dK = np.zeros((n_k, d))
    dV = np.zeros((n_k, d_v))
    qb, kb = _block_bounds(n_q, B_r), _block_bounds(n_k, B_c)
    kinds = _visit_map(n_q, n_k, B_r, B_c, causal)
    for j, (c0, c1) in enumerate(kb):
        K_j, V_j = K[c0:c1], V[c0:c1]
        lg.read("K", (c1 - c0) * d)
        lg.read("V", (c1 - c0) * d_v)
        dK_j = np.zeros((c1 - c0, d))
        dV_j = np.zeros((c1 - c0, d_v))
        for i, (r0, r1) in enumerate(qb):
            if kinds[i, j] == _SKIP:
                continue
            n = r1 - r0
            Q_i, dO_i = Q[r0:r1], dO[r0:r1]
            lg.read("Q", n * d)
            lg.read("dO", n * d_v)
            lg.read("dQ", n * d)
            lg.read("lse", n)
            lg.read("D", n)
            S = _score_tile(Q, K, s, r0, r1, c0, c1, kinds[i, j])
            P = probabilities_from_lse(S, lse[r0:r1])
            dV_j += P.T @ dO_i
            dP = dO_i @ V_j.T
            dS = P * (dP - D[r0:r1, None])
            dQ[r0:r1] += s * (dS @ K_j)
            lg.write("dQ", n * d)
            dK_j += s * (dS.T @ Q_i)
        dK[c0:c1], dV[c0:c1] = dK_j, dV_j
        lg.write("dK", (c1 - c0) * d)
        lg.write("dV", (c1 - c0) * d_v)
    return dQ, dK, dV


def finite_difference_gap(Q, K, V, dO, *, block_q: int, block_kv: int, causal: bool = False, scale=None,
                          h: float = 1e-5) -> float:
    """Largest gap between :func:`flash_attention_backward`'s gradients and central finite differences.

    The loss is ``sum(O * dO)`` with ``O`` from :func:`labcore.attention.reference_attention`, so its
    gradient w.r.t. Q, K, V is what the backward pass computes from ``dO``. Every element of Q, K and V is
    perturbed by ``+-h``: ``(loss(x + h) - loss(x - h)) / 2h``. Costs ``2 (Q.size + K.size + V.size)``
    forward passes: use small inputs.

    Args:
        Q (N_q, d), K (N_k, d), V (N_k, d_v), dO (N_q, d_v): real arrays. block_q, block_kv, causal,
        scale: as :func:`flash_attention_backward`. h: step (float > 0).
    Returns:
        float, max over all elements of ``|finite difference - gradient|``.
    Raises: TypeError/ValueError: as :func:`flash_attention_backward`.
    Source: the standard central-difference gradient check (e.g. CS231n notes); lecture §5.1.
    """
    Q, K, V, dO, _, _ = _check_grad_inputs(Q, K, V, dO)
    h = positive_float(h, "h")
    O, lse = flash_attention_forward(Q, K, V, block_q=block_q, block_kv=block_kv, causal=causal, scale=scale)
    grads = flash_attention_backward(Q, K, V, O, dO, lse, block_q=block_q, block_kv=block_kv, causal=causal,
                                     scale=scale)

    def loss(*qkv):
        return float((reference_attention(*qkv, causal=causal, scale=scale)[0] * dO).sum())

    gap = 0.0
    for w, g in enumerate(grads):
        for idx in np.ndindex(g.shape):
            plus, minus = [Q.copy(), K.copy(), V.copy()], [Q.copy(), K.copy(), V.copy()]
            plus[w][idx] += h
            minus[w][idx] -= h
            gap = max(gap, abs((loss(*plus) - loss(*minus)) / (2 * h) - g[idx]))
    return gap


# ----------------------------------------------------------------------------------------------------------
# step-by-step tile record (for the tiling walker)
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TileSchedule:
    """The order in which a FlashAttention forward visits block pairs, and the HBM traffic of each step.

    Attributes:
        loop_order: "fa1" or "fa2". N, N_k, d, block_q, block_kv, causal: the problem.
        T_r, T_c: number of Q and K/V blocks.
        pairs: (n_steps, 2) int array of (i, j) block indices in visiting order.
        tensors: tuple of tensor names, the columns of ``reads``/``writes``.
        reads, writes: (n_steps, n_tensors) int64 elements read / written at each step.
        pre, post: ``{tensor: {"read": n, "write": n}}`` before the first and after the last step
            (fa1: the initial O, l, m; fa2: O and lse of query blocks that see no key).
        block_map: (T_r, T_c) int8, 0 skipped / 1 full / 2 diagonal.
    """

    loop_order: str
    N: int
    N_k: int
    d: int
    block_q: int
    block_kv: int
    causal: bool
    T_r: int
    T_c: int
    pairs: np.ndarray
    tensors: tuple
    reads: np.ndarray
    writes: np.ndarray
    pre: dict
    post: dict
    block_map: np.ndarray

    @property
    def n_steps(self) -> int:
        return int(self.pairs.shape[0])

    def total(self) -> int:
        """All elements moved (pre + steps + post); equals :func:`labcore.hbm.flash_forward_io`."""
        extra = sum(v["read"] + v["write"] for t in (self.pre, self.post) for v in t.values())
        return int(self.reads.sum() + self.writes.sum()) + extra

    def at(self, k: int) -> dict:
        """The state just after step ``k`` (0-based): the block pair, the tiles on chip, what this step read
        and wrote, and the cumulative HBM traffic per tensor (including ``pre``).

        Raises:
            ValueError: k outside ``[0, n_steps)``.
        """
        k = positive_int(k, "k", minimum=0)
        if k >= self.n_steps:
            raise ValueError(f"k must be in [0, {self.n_steps}), got {k}")
        i, j = (int(x) for x in self.pairs[k])
        cum_r = self.reads[: k + 1].sum(axis=0)
        cum_w = self.writes[: k + 1].sum(axis=0)
        so_far = {}
        for t_idx, name in enumerate(self.tensors):
            r = int(cum_r[t_idx]) + self.pre.get(name, {}).get("read", 0)
            w = int(cum_w[t_idx]) + self.pre.get(name, {}).get("write", 0)
            so_far[name] = {"read": r, "write": w}
        on_chip = ["Q", "K", "V", "O", "l", "m"]
        return {
            "step": k, "i": i, "j": j,
            "kind": {0: "skip", 1: "full", 2: "diag"}[int(self.block_map[i, j])],
            "on_chip": {t: (i if t in ("Q", "O", "l", "m") else j) for t in on_chip},
            "read": {n: int(self.reads[k, t]) for t, n in enumerate(self.tensors) if self.reads[k, t]},
            "write": {n: int(self.writes[k, t]) for t, n in enumerate(self.tensors) if self.writes[k, t]},
            "so_far": so_far,
            "hbm_so_far": sum(v["read"] + v["write"] for v in so_far.values()),
        }


def flash_tile_schedule(N: int, d: int, *, block_q: int, block_kv: int, loop_order: str = "fa2",
                        causal: bool = False, N_k: int | None = None) -> TileSchedule:
    """Step-by-step record of a FlashAttention forward: which block pair each step works on and what it
    reads and writes in HBM. Counting only (no numbers), vectorised, so it is cheap even at N = 32768.

    One step = one visited block pair (i, j). fa1 (outer loop over j): a step reads K_j, V_j if it is the
    first step of column j, then reads Q_i, O_i, l_i, m_i and writes O_i, l_i, m_i. fa2 (outer loop over
    i): a step reads Q_i if it is the first step of row i, reads K_j, V_j, and writes O_i, lse_i if it is
    the last step of row i.

    Args:
        N, d, block_q, block_kv, loop_order, causal, N_k: as :func:`labcore.hbm.flash_forward_io`.
    Returns:
        :class:`TileSchedule`; its ``total()`` equals ``flash_forward_io(...)`` and the forward's ledger.
    Raises:
        TypeError/ValueError: sizes not integers >= 1; unknown loop_order; more than :data:`labcore.hbm.MAX_BLOCKS`
        block pairs.
    Source: Dao et al. 2022, Algorithm 1; Dao 2023, Algorithm 1.
    """
    causal = flag(causal, "causal")
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    B_r = positive_int(block_q, "block_q")
    B_c = positive_int(block_kv, "block_kv")
    loop_order = choice(loop_order, "loop_order", LOOP_ORDERS)
    N_k = key_count(N, N_k)
    bmap = _visit_map(N, N_k, B_r, B_c, causal)
    T_r, T_c = bmap.shape
    rows = np.minimum(np.arange(1, T_r + 1) * B_r, N) - np.arange(T_r) * B_r
    cols = np.minimum(np.arange(1, T_c + 1) * B_c, N_k) - np.arange(T_c) * B_c
    vis = bmap > 0
    if loop_order == "fa1":
        jj, ii = np.nonzero(vis.T)                     # column-major: outer loop over j
        tensors = ("K", "V", "Q", "O", "l", "m")
        first = np.ones(jj.size, bool)
        first[1:] = jj[1:] != jj[:-1]
        nr = rows[ii]
        reads = np.stack([first * cols[jj] * d, first * cols[jj] * d, nr * d, nr * d, nr, nr], axis=1)
        writes = np.stack([0 * nr, 0 * nr, 0 * nr, nr * d, nr, nr], axis=1)
        pre = {"O": {"read": 0, "write": N * d}, "l": {"read": 0, "write": N}, "m": {"read": 0, "write": N}}
        post = {}
    else:
        ii, jj = np.nonzero(vis)                       # row-major: outer loop over i
        tensors = ("Q", "K", "V", "O", "lse")
        first = np.ones(ii.size, bool)
        first[1:] = ii[1:] != ii[:-1]
        last = np.ones(ii.size, bool)
        last[:-1] = ii[1:] != ii[:-1]
        nr = rows[ii]
        reads = np.stack([first * nr * d, cols[jj] * d, cols[jj] * d, 0 * nr, 0 * nr], axis=1)
        writes = np.stack([0 * nr, 0 * nr, 0 * nr, last * nr * d, last * nr], axis=1)
        pre = {}
        dead = int(rows[~vis.any(axis=1)].sum())
        post = {"O": {"read": 0, "write": dead * d}, "lse": {"read": 0, "write": dead}} if dead else {}
    return TileSchedule(loop_order, N, N_k, d, B_r, B_c, bool(causal), T_r, T_c,
                        np.stack([ii, jj], axis=1).astype(np.int64), tensors,
                        reads.astype(np.int64), writes.astype(np.int64), pre, post, bmap)


# ----------------------------------------------------------------------------------------------------------
# the FlashAttention paper's GPT-2 medium comparison (Fig. 2)
# ----------------------------------------------------------------------------------------------------------

#: FlashAttention paper, Fig. 2 (left), arXiv v2 layout: GPT-2 medium attention (N = 1024, d = 64,
#: 16 heads, batch 64) on an A100, forward + backward. Units: FLOP, bytes, seconds.
PAPER_FIG2_GPT2_MEDIUM = {
    "standard": {"flops": 66.6e9, "hbm_bytes": 40.3e9, "runtime_s": 41.7e-3},
    "flash": {"flops": 75.2e9, "hbm_bytes": 4.4e9, "runtime_s": 7.3e-3},
    "source": "Dao et al. 2022, arXiv:2205.14135, Fig. 2 left (GPT-2 medium, A100)",
}


def gpt2_medium_comparison(*, N: int = 1024, d: int = 64, heads: int = 16, batch: int = 64,
                           M: int = 51_200, dtype_bytes: int = 2) -> dict:
    """Our FLOPs and HBM traffic for the FlashAttention paper's Fig. 2 setting, beside the paper's.

    Forward + backward of attention for GPT-2 medium (N = 1024, d = 64, 16 heads, batch 64). Flash uses
    the paper's block sizes for an SRAM of ``M`` elements (default 100 KB of FP16, B_c = 200, B_r = 64)
    and the fa2 loop order in the forward. Counts are exact minima of each algorithm (no extra mask,
    dropout or softmax kernels) and FLOPs include both matmul and non-matmul work.

    Args:
        N, d, heads, batch: the shape (ints >= 1). M: SRAM in elements (>= 4 d). dtype_bytes: bytes per
        element (2 = FP16).
    Returns:
        ``{"standard": {...}, "flash": {...}, "paper": PAPER_FIG2_GPT2_MEDIUM, "block": (B_r, B_c)}`` where
        each algorithm has ``flops``, ``matmul_flops``, ``hbm_bytes`` (forward + backward, whole batch).
    Raises:
        TypeError/ValueError: sizes not integers >= 1; M < 4 d.
    Source: Dao et al. 2022, Fig. 2; lecture §4.4.
    """
    k = positive_int(heads, "heads") * positive_int(batch, "batch")
    B_r, B_c = paper_block_sizes(M, d)
    b = positive_int(dtype_bytes, "dtype_bytes")
    out = {"paper": PAPER_FIG2_GPT2_MEDIUM, "block": (B_r, B_c)}
    for alg in ("standard", "flash"):
        fl = attention_flops(N, d, pass_="both", algorithm=alg, block_q=B_r, block_kv=B_c).scaled(k)
        io = training_step_io(N, d, algorithm=alg, block_q=B_r, block_kv=B_c) * k
        out[alg] = {"flops": fl.total, "matmul_flops": fl.matmul, "hbm_bytes": io * b}
    return out
