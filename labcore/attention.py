"""Exact attention in float64: the oracle and the standard (materialising) algorithm.

Conventions used by every algorithm in labcore (stated in the book, tested in tests/):
- ``scale`` defaults to ``1/sqrt(d)``, d the Q/K head dimension.
- ``lse`` is the *natural-log* logsumexp of each row of scaled scores over the unmasked keys
  (Triton's tutorial stores base 2; we do not).
- Masks use ``-inf``, never a finite sentinel. Causal masking with N_q != N_k is aligned to the
  bottom-right corner: query i sees key j iff ``j <= i + N_k - N_q`` (flash-attn >= 2.1).
- A row whose keys are all masked gives an output row of zeros and ``lse = -inf``, never NaN.
"""
from __future__ import annotations

import numpy as np

from .checks import causal_mask, check_qkv, flag, resolve_scale
from .hbm import Ledger

__all__ = ["reference_attention", "standard_attention", "masked_scores", "row_softmax"]


def masked_scores(Q, K, *, causal: bool = False, scale=None) -> np.ndarray:
    """Scaled scores ``S = Q K^T * scale`` with masked entries set to ``-inf``.

    Args:
        Q: (N_q, d) array. K: (N_k, d) array. causal: bottom-right aligned causal mask.
        scale: softmax scale, default ``1/sqrt(d)``.
    Returns:
        (N_q, N_k) float64 array.
    Raises:
        TypeError/ValueError: see :func:`reference_attention`.
    """
    causal = flag(causal, "causal")
    Q, K, _ = check_qkv(Q, K, K)
    s = resolve_scale(scale, Q.shape[1])
    S = (Q @ K.T) * s
    if causal:
        S = np.where(causal_mask(Q.shape[0], K.shape[0]), S, -np.inf)
    return S


def row_softmax(S: np.ndarray):
    """Safe softmax of each row of ``S`` (which may hold ``-inf``); returns ``(P, lse)``.

    Fully masked rows give ``P = 0`` and ``lse = -inf`` (no NaN). ``lse`` is in natural log.

    Args: S: (rows, keys) float array, keys >= 1; entries finite or ``-inf``.
    Raises: ValueError: S not 2-D, without keys, or holding NaN or ``+inf``.
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[1] == 0:
        raise ValueError(f"S must be a 2-D (rows, keys) array with at least one key, got shape {S.shape}")
    if np.any(np.isnan(S)) or np.any(S == np.inf):
        raise ValueError("S must hold finite scores or -inf (masked), never NaN or +inf")
    m = S.max(axis=1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(S - m_safe)
    l = E.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        P = np.where(l > 0, E / np.where(l > 0, l, 1.0), 0.0)
        lse = np.where(l[:, 0] > 0, m_safe[:, 0] + np.log(np.where(l[:, 0] > 0, l[:, 0], 1.0)), -np.inf)
    return P, lse


def reference_attention(Q, K, V, *, causal: bool = False, scale=None):
    """Exact ``softmax(Q K^T * scale) V`` in float64 — the oracle every other algorithm is tested against.

    Args:
        Q: (N_q, d) real array. K: (N_k, d). V: (N_k, d_v). Any real dtype; computed in float64.
        causal: apply the bottom-right aligned causal mask (query i sees key j iff j <= i + N_k - N_q).
        scale: float > 0, default ``1/sqrt(d)``.
    Returns:
        ``(O, lse)``: O is (N_q, d_v) float64; lse is (N_q,) float64, natural-log logsumexp of each row of
        scaled, unmasked scores (``-inf`` for a fully masked row, whose O row is zeros).
    Raises:
        TypeError: non-numeric input.
        ValueError: arrays not 2-D, empty, non-finite, or with mismatched head dimensions / key counts;
            a scale that is not > 0.
    Source:
        Vaswani et al. 2017, Eq. 1; FlashAttention paper (Dao et al. 2022) §2.2 for lse.
    """
    causal = flag(causal, "causal")
    Q, K, V = check_qkv(Q, K, V)
    S = masked_scores(Q, K, causal=causal, scale=scale)
    P, lse = row_softmax(S)
    return P @ V, lse


def standard_attention(Q, K, V, *, causal: bool = False, scale=None, ledger: Ledger | None = None):
    """Algorithm 0 of the FlashAttention paper: S, P and O are materialised in HBM.

    Ledger records (lecture §2): read Q, K; write S; read S, write P; read P, V; write O —
    ``4 N d + 4 N^2`` elements for N_q = N_k = N (see :func:`labcore.hbm.standard_attention_io`).
    The causal mask is applied in the same pass as the softmax, so it adds no traffic here.

    Args/Raises: as :func:`reference_attention`; ``ledger`` is an optional :class:`Ledger`.
    Returns:
        O, (N_q, d_v) float64.
    Source: Dao et al. 2022, Algorithm 0.
    """
    causal = flag(causal, "causal")
    Q, K, V = check_qkv(Q, K, V)
    n_q, d = Q.shape
    n_k, d_v = V.shape
    lg = ledger if ledger is not None else Ledger()
    lg.read("Q", n_q * d)
    lg.read("K", n_k * d)
    S = masked_scores(Q, K, causal=causal, scale=scale)
    lg.write("S", n_q * n_k)
    lg.read("S", n_q * n_k)
    P, _ = row_softmax(S)
    lg.write("P", n_q * n_k)
    lg.read("P", n_q * n_k)
    lg.read("V", n_k * d_v)
    O = P @ V
    lg.write("O", n_q * d_v)
    return O
