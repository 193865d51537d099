"""Reference kernels of the forward labs (one row, Algorithm 1 order, FlashAttention-2 order) and the named
mistaken kernels, all written against ``labcore.chip`` as a reader would write them.

Each reference kernel takes keyword hooks (``step``, ``finish``, ``mask``) whose defaults are the correct ones;
a mistaken kernel is the reference with one hook swapped, or a short wrapper that adds one wrong move.
Sources: FlashAttention (Dao et al. 2022) Algorithm 1; FlashAttention-2 (Dao 2023) Algorithm 1 and §3.1.1.
"""
from __future__ import annotations

from functools import partial, update_wrapper

import numpy as np

from .steps import (block_max_step, blocks, bottom_right, early_normalise_step, finish, finish_normalised,
                    no_rescale_step, online_step, rescale_new_step, top_left)

__all__ = ["online_softmax_row", "fa1_pair", "fa1_forward", "fa2_forward", "fa2_rereads_q", "with_kv_whole",
           "with_scores_in_hbm", "named", "ROW_MISTAKES", "FA1_MISTAKES", "FA2_MISTAKES"]


def named(name: str, fn, **hooks):
    """``fn`` with ``hooks`` fixed, under the name ``name`` (a mistaken kernel)."""
    k = update_wrapper(partial(fn, **hooks), fn)
    k.__name__ = k.__qualname__ = name
    return k


# --- lab 1: one row of scores ------------------------------------------------------------------------------

def online_softmax_row(cta, *, block_kv, step=online_step, finish=finish):
    """One row: stream S (N,) and V (N, d) in blocks of ``block_kv``; store O (1, d) and lse (1,)."""
    N, d = cta.shape("V")
    with cta.buffer(1, fill=-np.inf, name="m") as m, cta.buffer(1, name="l") as l, \
            cta.buffer((1, d), name="acc") as acc:
        for c0, c1 in blocks(N, block_kv):
            with cta.load("S", rows=(c0, c1)) as s, cta.load("V", rows=(c0, c1)) as V_j:
                step(m, l, acc, s[None, :], V_j)
        O, lse = finish(m, l, acc)
    cta.store("O", O, rows=(0, 1))
    cta.store("lse", lse, rows=(0, 1))


def _row_two_pass(cta, *, block_kv):
    """Mistake: a first pass over S for the maximum, then the softmax pass (every score read twice)."""
    N, d = cta.shape("V")
    with cta.buffer(1, fill=-np.inf, name="m") as m:
        for c0, c1 in blocks(N, block_kv):
            with cta.load("S", rows=(c0, c1)) as s:
                m[:] = np.maximum(m, s.max())
        with cta.buffer(1, name="l") as l, cta.buffer((1, d), name="acc") as acc:
            for c0, c1 in blocks(N, block_kv):
                with cta.load("S", rows=(c0, c1)) as s, cta.load("V", rows=(c0, c1)) as V_j:
                    P = np.exp(s[None, :] - m[:, None])
                    l += P.sum(axis=1)
                    acc += P @ V_j
            O, lse = finish(m, l, acc)
    cta.store("O", O, rows=(0, 1))
    cta.store("lse", lse, rows=(0, 1))


def _row_whole(cta, *, block_kv):
    """Mistake: the whole row and all of V loaded at once (does not fit in M)."""
    with cta.load("S") as s, cta.load("V") as V:
        m, l, acc = np.full(1, -np.inf), np.zeros(1), np.zeros((1, V.shape[1]))
        online_step(m, l, acc, s[None, :], V)
        O, lse = finish(m, l, acc)
    cta.store("O", O, rows=(0, 1))
    cta.store("lse", lse, rows=(0, 1))


ROW_MISTAKES = {
    "no_rescale": named("row_no_rescale", online_softmax_row, step=no_rescale_step),
    "rescale_new": named("row_rescale_new", online_softmax_row, step=rescale_new_step),
    "block_max": named("row_block_max", online_softmax_row, step=block_max_step),
    "early_normalise": named("row_early_normalise", online_softmax_row, step=early_normalise_step,
                             finish=finish_normalised),
    "two_pass": _row_two_pass,
    "whole_row": _row_whole,
}


# --- lab 2: Algorithm 1 (outer loop over K/V blocks; O, l, m in HBM) ------------------------------------------

def fa1_pair(cta, r0, r1, K_j, V_j, scale, step, mask=None):
    """One (j, i) pair of Algorithm 1: read Q_i, O_i, l_i, m_i; update; write O_i, l_i, m_i back."""
    with cta.load("Q", rows=(r0, r1)) as Q_i, cta.load("O", rows=(r0, r1)) as O_i, \
            cta.load("l", rows=(r0, r1)) as l_i, cta.load("m", rows=(r0, r1)) as m_i:
        S = scale * (Q_i @ K_j.T)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        O_i *= l_i[:, None]                           # un-normalise the stored O_i
        step(m_i, l_i, O_i, S, V_j)
        O_new, _ = finish(m_i, l_i, O_i)              # Algorithm 1, line 12: normalised at every step
        cta.store("O", O_new, rows=(r0, r1))
        cta.store("l", l_i, rows=(r0, r1))
        cta.store("m", m_i, rows=(r0, r1))


def fa1_forward(cta, *, block_q, block_kv, step=online_step):
    """FlashAttention's Algorithm 1 on the chip: Q (N, d), K, V (N_k, d) -> O (N, d), l, m (N,) in HBM.

    Line 2: O = 0, l = 0, m = -inf written to HBM. Outer loop over K/V blocks j (each read once), inner loop
    over Q blocks i with ``fa1_pair``. Traffic: :func:`labcore.hbm.flash_forward_io` (``"fa1"``).
    """
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    scale = 1.0 / np.sqrt(d)
    cta.store("O", np.zeros((N, d)))
    cta.store("l", np.zeros(N))
    cta.store("m", np.full(N, -np.inf))
    for c0, c1 in blocks(N_k, block_kv):
        with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
            for r0, r1 in blocks(N, block_q):
                fa1_pair(cta, r0, r1, K_j, V_j, scale, step)


def with_kv_whole(kernel):
    """Mistake: K and V loaded whole onto the chip before the kernel's loop (capacity)."""
    def kv_whole(cta, **params):
        with cta.load("K"), cta.load("V"):
            kernel(cta, **params)
    kv_whole.__name__ = f"{kernel.__name__}_kv_whole"
    return kv_whole


def with_scores_in_hbm(kernel, name="S", *, probabilities=False):
    """Mistake: the score tiles (or P = exp(S - lse)) written to an N x N_k tensor in HBM, then the kernel."""
    def scores_in_hbm(cta, *, block_q, block_kv, **params):
        N, d = cta.shape("Q")
        N_k = cta.shape("K")[0]
        cta.allocate(name, (N, N_k))
        for r0, r1 in blocks(N, block_q):
            for c0, c1 in blocks(N_k, block_kv):
                with cta.load("Q", rows=(r0, r1)) as Q_i, cta.load("K", rows=(c0, c1)) as K_j:
                    S = (Q_i @ K_j.T) / np.sqrt(d)
                    if probabilities:
                        with cta.load("lse", rows=(r0, r1)) as lse_i:
                            S = np.exp(S - lse_i[:, None])
                    cta.store(name, S, rows=(r0, r1), cols=(c0, c1))
        kernel(cta, block_q=block_q, block_kv=block_kv, **params)
    scores_in_hbm.__name__ = f"{kernel.__name__}_{name}_in_hbm"
    return scores_in_hbm


FA1_MISTAKES = {
    "kv_whole": with_kv_whole(fa1_forward),
    "s_to_hbm": with_scores_in_hbm(fa1_forward),
    "no_rescale": named("fa1_no_rescale", fa1_forward, step=no_rescale_step),
}


# --- lab 3: FlashAttention-2 order (outer loop over Q blocks), causal -----------------------------------------

def fa2_forward(cta, *, block_q, block_kv, causal=True, mask=bottom_right, step=online_step, finish=finish):
    """FlashAttention-2's forward on the chip: Q (N, d), K, V (N_k, d) -> O (N, d), lse (N,).

    Outer loop over Q blocks (Q_i read once, (m, l, acc) in on-chip buffers); with ``causal`` the K/V blocks
    the mask hides entirely are neither read nor computed, and the diagonal blocks are masked inside.
    A query block that sees no key writes O = 0 and lse = -inf. Traffic: :func:`labcore.hbm.flash_forward_io`.
    """
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    scale = 1.0 / np.sqrt(d)
    for r0, r1 in blocks(N, block_q):
        visible = [(c0, c1) for c0, c1 in blocks(N_k, block_kv)
                   if not causal or mask(r0, r1, c0, c1, N, N_k).any()]
        with cta.buffer(r1 - r0, fill=-np.inf, name="m") as m, cta.buffer(r1 - r0, name="l") as l, \
                cta.buffer((r1 - r0, d), name="acc") as acc:
            if visible:
                with cta.load("Q", rows=(r0, r1)) as Q_i:
                    for c0, c1 in visible:
                        with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
                            S = scale * (Q_i @ K_j.T)
                            if causal:
                                S = np.where(mask(r0, r1, c0, c1, N, N_k), S, -np.inf)
                            step(m, l, acc, S, V_j)
            O_i, lse_i = finish(m, l, acc)
        cta.store("O", O_i, rows=(r0, r1))
        cta.store("lse", lse_i, rows=(r0, r1))


def fa2_rereads_q(cta, *, block_q, block_kv, causal=True):
    """Mistake: the FlashAttention-2 loop order with Algorithm 1's body: Q_i, O_i, l_i, m_i read and written
    back to HBM for every key block (O, l, m kept in HBM instead of on chip)."""
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    for name, fill, shape in (("O", 0.0, (N, d)), ("l", 0.0, (N,)), ("m", -np.inf, (N,))):
        if name != "O":
            cta.allocate(name, shape)
        cta.store(name, np.full(shape, fill))
    for r0, r1 in blocks(N, block_q):
        for c0, c1 in blocks(N_k, block_kv):
            vis = bottom_right(r0, r1, c0, c1, N, N_k)
            if causal and not vis.any():
                continue
            with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
                fa1_pair(cta, r0, r1, K_j, V_j, 1.0 / np.sqrt(d), online_step, vis if causal else None)
        with cta.load("l", rows=(r0, r1)) as l_i, cta.load("m", rows=(r0, r1)) as m_i:
            cta.store("lse", finish(m_i, l_i, np.zeros((r1 - r0, 1)))[1], rows=(r0, r1))


FA2_MISTAKES = {
    "top_left": named("fa2_top_left", fa2_forward, mask=top_left),
    "q_reread": fa2_rereads_q,
    "early_normalise": named("fa2_early_normalise", fa2_forward, step=early_normalise_step,
                             finish=finish_normalised),
    "kv_whole": with_kv_whole(fa2_forward),
}
