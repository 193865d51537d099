"""FlashAttention forward (two loop orders) and backward, with exact HBM ledgers (lecture §4–§5).

The softmax arithmetic comes from :mod:`labcore.softmax` (one ``online_update`` shared by both loop
orders, ``safe_lse``, ``normalise``, the overflow check ``scaled_scores``); FLOPs are counted in
:mod:`labcore.flops` and HBM traffic in :mod:`labcore.hbm`; the block geometry (paper block sizes, causal
block maps, the tile schedule) lives in :mod:`labcore.blocks`. This module owns the loops and the GPT-2 medium
comparison.
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


import numpy as np

from .checks import LOOP_ORDERS, as_matrix, as_vector, causal_mask, check_qkv, choice, flag, positive_float, \
    positive_int, resolve_scale
from .attention import masked_scores, reference_attention
from .softmax import normalise, online_update, probabilities_from_lse, row_softmax, safe_lse, scaled_scores
from .flops import attention_flops
from .hbm import Ledger, training_step_io
from .blocks import BLOCK_DIAGONAL, BLOCK_SKIPPED, block_bounds, block_pair_map, paper_block_sizes

__all__ = [
    "flash_attention_forward",
    "flash_attention_backward",
    "standard_attention_backward",
    "finite_difference_gap",
    "PAPER_FIG2_GPT2_MEDIUM",
    "gpt2_medium_comparison",
]


# ----------------------------------------------------------------------------------------------------------
# forward
# ----------------------------------------------------------------------------------------------------------

def _score_tile(Q, K, s, r0, r1, c0, c1, kind):
    """Scores of the block pair rows [r0, r1) x keys [c0, c1) of the whole Q and K (checked by
    :func:`~labcore.softmax.scaled_scores`), masked inside a diagonal block."""
    S = scaled_scores(Q[r0:r1], K[c0:c1], s)
    if kind == BLOCK_DIAGONAL:
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
        Q: (N_q, d) real array.
        K: (N_k, d).
        V: (N_k, d_v). Q, K and V are computed in float64.
        block_q: B_r, rows per Q block (int >= 1, keyword).
        block_kv: B_c, rows per K/V block (int >= 1).
        loop_order: "fa1" or "fa2".
        causal: bottom-right aligned causal mask, fully masked blocks skipped.
        scale: float > 0, default 1/sqrt(d).
        ledger: optional :class:`~labcore.hbm.Ledger`.
    Returns:
        ``(O, lse)``: (N_q, d_v) and (N_q,) float64 (lse natural log; -inf and a zero row when fully masked).
    Raises:
        TypeError/ValueError: as :func:`labcore.attention.reference_attention` (scores that overflow
        float64 included); block sizes not integers >= 1; unknown loop_order; V so large that N_k x max|V|
        overflows float64 (the unnormalised accumulator could).
    Source: Dao et al. 2022, Algorithm 1; Dao 2023, Algorithm 1; Triton's fused-attention tutorial.
    """
    causal = flag(causal, "causal")
    Q, K, V = check_qkv(Q, K, V)
    B_r = positive_int(block_q, "block_q")
    B_c = positive_int(block_kv, "block_kv")
    loop = {"fa1": _forward_fa1, "fa2": _forward_fa2}[choice(loop_order, "loop_order", LOOP_ORDERS)]
    s = resolve_scale(scale, Q.shape[1])
    # The unnormalised accumulator sums up to N_k rows of V weighted by at most 1 each: bounded, it cannot overflow
    # (the reference, normalising once, would still be finite; the blocked algorithm is not, so it refuses first).
    if V.size and V.shape[0] * float(np.abs(V).max()) > np.finfo(np.float64).max:
        raise ValueError(f"V is too large for the blocked forward: N_k x max|V| = {V.shape[0]} x "
                         f"{float(np.abs(V).max()):.3g} overflows float64 in the unnormalised accumulator")
    return loop(Q, K, V, B_r, B_c, causal, s, ledger if ledger is not None else Ledger())


def _forward_fa1(Q, K, V, B_r, B_c, causal, s, lg):
    """Algorithm 1 (FlashAttention): outer loop over K/V blocks, O/l/m in HBM, O normalised every step."""
    (n_q, d), (n_k, d_v) = Q.shape, V.shape
    qb, kb = block_bounds(n_q, B_r), block_bounds(n_k, B_c)
    kinds = block_pair_map(n_q, n_k, B_r, B_c, causal)
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
            if kinds[i, j] == BLOCK_SKIPPED:
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
    qb, kb = block_bounds(n_q, B_r), block_bounds(n_k, B_c)
    kinds = block_pair_map(n_q, n_k, B_r, B_c, causal)
    O, lse = np.zeros((n_q, d_v)), np.full(n_q, -np.inf)
    for i, (r0, r1) in enumerate(qb):
        n = r1 - r0
        if kinds[i].any():
            lg.read("Q", n * d)
            m, l, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, d_v))
            for j, (c0, c1) in enumerate(kb):
                if kinds[i, j] == BLOCK_SKIPPED:
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
        Q: (N_q, d).
        K: (N_k, d).
        V: (N_k, d_v).
        dO: (N_q, d_v), the gradient of the loss w.r.t. O.
        causal, scale: as :func:`labcore.attention.reference_attention`.
        ledger: optional Ledger.
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
        Q: (N_q, d).
        K: (N_k, d).
        V: (N_k, d_v).
        O: (N_q, d_v) forward output.
        dO: (N_q, d_v).
        lse: (N_q,) natural-log logsumexp from the forward pass (``-inf`` for a fully masked row;
            flash-attn's ``softmax_lse``).
        block_q: B_r (int >= 1, keyword; flash-attn's ``kBlockM``).
        block_kv: B_c (int >= 1, keyword; flash-attn's ``kBlockN``).
        causal, scale: as the forward (``scale`` is flash-attn's ``softmax_scale``).
        ledger: optional Ledger.
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
    qb, kb = block_bounds(n_q, B_r), block_bounds(n_k, B_c)
    kinds = block_pair_map(n_q, n_k, B_r, B_c, causal)
    for j, (c0, c1) in enumerate(kb):
        K_j, V_j = K[c0:c1], V[c0:c1]
        lg.read("K", (c1 - c0) * d)
        lg.read("V", (c1 - c0) * d_v)
        dK_j = np.zeros((c1 - c0, d))
        dV_j = np.zeros((c1 - c0, d_v))
        for i, (r0, r1) in enumerate(qb):
            if kinds[i, j] == BLOCK_SKIPPED:
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
        scale: as :func:`flash_attention_backward`.
        h: step (float > 0).
    Returns:
        float, max over all elements of ``|finite difference - gradient|``.
    Raises:
        TypeError/ValueError: as :func:`flash_attention_backward`.
    Source:
        the standard central-difference gradient check (e.g. CS231n notes); lecture §5.1.
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
    the paper's block sizes for an SRAM of ``M`` elements (default 100 KiB of FP16, B_c = 200, B_r = 64)
    and the fa2 loop order in the forward. Counts are exact minima of each algorithm (no extra mask,
    dropout or softmax kernels) and FLOPs include both matmul and non-matmul work.

    Args:
        N, d, heads, batch: the shape (ints >= 1).
        M: SRAM in elements (>= 4 d).
        dtype_bytes: bytes per
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
