"""Reference kernel of the backward lab (recomputation from lse, Algorithm 4 with the D pre-pass) and its
named mistaken kernels.

Source: FlashAttention (Dao et al. 2022) Algorithm 4 and Appendix B.4; FlashAttention-2 (Dao 2023)
Algorithm 2 (D_i = rowsum(dO_i * O_i) before the loop).
"""
from __future__ import annotations

import numpy as np

from .kernels_forward import named, with_kv_whole, with_scores_in_hbm
from .steps import blocks

__all__ = ["flash_backward", "softmax_grad", "BACKWARD_MISTAKES"]


def softmax_grad(P, dP, D_i):
    """``dS = P * (dP - D_i)``: the softmax's backward, with ``D_i = rowsum(dO_i * O_i) = rowsum(P * dP)``."""
    return P * (dP - D_i[:, None])


def _grad_without_D(P, dP, D_i):
    """Mistake: the D_i term dropped (``dS = P * dP``)."""
    return P * dP


def flash_backward(cta, *, block_q, block_kv, grad=softmax_grad):
    """The backward by recomputation: Q, K, V, O, dO (N or N_k, d) and lse (N,) -> dQ, dK, dV in HBM.

    Pre-pass: D = rowsum(dO * O) written to HBM, dQ = 0 written. Outer loop over K/V blocks j (dK_j, dV_j in
    on-chip buffers), inner loop over Q blocks i: S and P = exp(S - lse_i) recomputed on chip, dQ_i read,
    updated and written back. No N x N_k tensor touches HBM. Traffic: :func:`labcore.hbm.flash_backward_io`.
    """
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    scale = 1.0 / np.sqrt(d)
    cta.allocate("D", (N,))
    for r0, r1 in blocks(N, block_q):
        with cta.load("O", rows=(r0, r1)) as O_i, cta.load("dO", rows=(r0, r1)) as dO_i:
            cta.store("D", (dO_i * O_i).sum(axis=1), rows=(r0, r1))
    cta.store("dQ", np.zeros((N, d)))
    for c0, c1 in blocks(N_k, block_kv):
        with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j, \
                cta.buffer((c1 - c0, d), name="dK_j") as dK_j, cta.buffer((c1 - c0, d), name="dV_j") as dV_j:
            for r0, r1 in blocks(N, block_q):
                with cta.load("Q", rows=(r0, r1)) as Q_i, cta.load("dO", rows=(r0, r1)) as dO_i, \
                        cta.load("dQ", rows=(r0, r1)) as dQ_i, cta.load("lse", rows=(r0, r1)) as lse_i, \
                        cta.load("D", rows=(r0, r1)) as D_i:
                    P = np.exp(scale * (Q_i @ K_j.T) - lse_i[:, None])
                    dV_j += P.T @ dO_i
                    dS = grad(P, dO_i @ V_j.T, D_i)
                    dQ_i += scale * (dS @ K_j)
                    cta.store("dQ", dQ_i, rows=(r0, r1))
                    dK_j += scale * (dS.T @ Q_i)
            cta.store("dK", dK_j, rows=(c0, c1))
            cta.store("dV", dV_j, rows=(c0, c1))


BACKWARD_MISTAKES = {
    "p_to_hbm": with_scores_in_hbm(flash_backward, "P", probabilities=True),
    "missing_D": named("backward_missing_D", flash_backward, grad=_grad_without_D),
    "kv_whole": with_kv_whole(flash_backward),
}
