"""Exact attention in float64: the oracle and the standard (materialising) algorithm.

Conventions used by every algorithm in labcore (stated in the book, tested in tests/):
- ``scale`` defaults to ``1/sqrt(d)``, d the Q/K head dimension.
- ``lse`` is the *natural-log* logsumexp of each row of scaled scores over the unmasked keys
  (Triton's tutorial stores base 2; we do not).
- Masks use ``-inf``, never a finite sentinel. Causal masking with N_q != N_k is aligned to the
  bottom-right corner: query i sees key j iff ``j <= i + N_k - N_q`` (flash-attn >= 2.1).
- A row whose keys are all masked gives an output row of zeros and ``lse = -inf``, never NaN.
- Finite inputs whose scores overflow float64 are a ValueError ("scores overflow float64 ..."), the same
  from every entry point (:func:`labcore.softmax.scaled_scores`).

The softmax itself (safe max subtraction, lse) is :func:`labcore.softmax.row_softmax`; the names follow
flash-attn's ``flash_attn_func``: ``scale`` is its ``softmax_scale``, ``causal`` its ``causal`` and ``lse``
its ``softmax_lse`` (natural log).
"""
from __future__ import annotations

import numpy as np

from .checks import causal_mask, check_qkv, flag, resolve_scale
from .hbm import Ledger
from .softmax import row_softmax, scaled_scores

__all__ = ["reference_attention", "standard_attention", "masked_scores"]


def masked_scores(Q, K, *, causal: bool = False, scale=None) -> np.ndarray:
    """Scaled scores ``S = Q K^T * scale`` with masked entries set to ``-inf``.

    Args:
        Q: (N_q, d) array.
        K: (N_k, d) array.
        causal: bottom-right aligned causal mask.
        scale: softmax scale, default ``1/sqrt(d)`` (flash-attn's ``softmax_scale``).
    Returns:
        (N_q, N_k) float64 array.
    Raises:
        TypeError/ValueError: see :func:`reference_attention`.
    Source: Vaswani et al. 2017, Eq. 1; bottom-right causal alignment as flash-attn >= 2.1.
    """
    causal = flag(causal, "causal")
    Q, K, _ = check_qkv(Q, K, K)
    S = scaled_scores(Q, K, resolve_scale(scale, Q.shape[1]))
    if causal:
        S = np.where(causal_mask(Q.shape[0], K.shape[0]), S, -np.inf)
    return S


def reference_attention(Q, K, V, *, causal: bool = False, scale=None):
    """Exact ``softmax(Q K^T * scale) V`` in float64 — the oracle every other algorithm is tested against.

    Args:
        Q: (N_q, d) real array.
        K: (N_k, d).
        V: (N_k, d_v). Any real dtype; computed in float64.
        causal: apply the bottom-right aligned causal mask (query i sees key j iff j <= i + N_k - N_q).
        scale: float > 0, default ``1/sqrt(d)`` (flash-attn's ``softmax_scale``).
    Returns:
        ``(O, lse)``: O is (N_q, d_v) float64; lse is (N_q,) float64 (flash-attn's ``softmax_lse``), the
        natural-log logsumexp of each row of scaled, unmasked scores (``-inf`` for a fully masked row, whose
        O row is zeros).
    Raises:
        TypeError: non-numeric input.
        ValueError: arrays not 2-D, empty, non-finite, or with mismatched head dimensions / key counts;
            a scale that is not > 0; scores that overflow float64 (:func:`labcore.softmax.scaled_scores`).
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
