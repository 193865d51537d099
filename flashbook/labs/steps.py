"""The streaming step the labs' kernels share, and the known ways to get it wrong.

One update, one finish (as Triton's ``_attn_fwd_inner``): :func:`online_step` folds one tile of scores into
the running state ``(m, l, acc)`` *in place* (the state lives in on-chip buffers), :func:`finish` turns the
state into the output and the lse. The faulty variants below are the named mistakes of the labs; each differs
from the correct step in one line.

Source: FlashAttention-2 (Dao 2023) Algorithm 1, lines 8-10 and 12-13; Milakov & Gimelshein 2018.
"""
from __future__ import annotations

import numpy as np

from labcore.checks import causal_mask
from labcore.softmax import normalise, rescale_factor, safe_lse

__all__ = ["blocks", "online_step", "finish", "no_rescale_step", "rescale_new_step", "block_max_step",
           "early_normalise_step", "finish_normalised", "finish_unguarded", "bottom_right", "top_left"]


def blocks(n: int, size: int):
    """Half-open ranges ``(start, stop)`` of ``size`` that cover ``0 .. n`` (the last one may be short)."""
    return [(s, min(s + size, n)) for s in range(0, n, size)]


def _exp_minus(S, m):
    """``exp(S - m)`` row by row, 0 (not NaN) for a row whose max is still -inf (all masked so far)."""
    return np.exp(S - np.where(np.isfinite(m), m, 0.0)[:, None])


def online_step(m, l, acc, S, V_j):
    """Fold scores ``S`` (rows, b) and values ``V_j`` (b, d) into ``m``, ``l`` (rows,), ``acc`` (rows, d), in place."""
    m_new = np.maximum(m, S.max(axis=1))
    alpha = rescale_factor(m, m_new)                 # exp(m - m_new): moves the old state to the new max
    P = _exp_minus(S, m_new)
    l[:] = alpha * l + P.sum(axis=1)
    acc[:] = alpha[:, None] * acc + P @ V_j
    m[:] = m_new


def finish(m, l, acc):
    """``(O, lse)`` of the state: ``acc / l`` and ``m + log l`` (zeros and ``-inf`` for a row that saw no key)."""
    return normalise(acc, l), safe_lse(m, l)


def no_rescale_step(m, l, acc, S, V_j):
    """Mistake: the rescale factor forgotten (old l and acc kept relative to the old max)."""
    m_new = np.maximum(m, S.max(axis=1))
    P = _exp_minus(S, m_new)
    l[:] = l + P.sum(axis=1)
    acc[:] = acc + P @ V_j
    m[:] = m_new


def rescale_new_step(m, l, acc, S, V_j):
    """Mistake: the rescale factor applied to the new block instead of the old state."""
    m_new = np.maximum(m, S.max(axis=1))
    alpha = rescale_factor(m, m_new)
    P = _exp_minus(S, m_new)
    l[:] = l + alpha * P.sum(axis=1)
    acc[:] = acc + alpha[:, None] * (P @ V_j)
    m[:] = m_new


def block_max_step(m, l, acc, S, V_j):
    """Mistake: the running maximum replaced by the block's maximum (overflows when a block's max drops)."""
    m_new = S.max(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        alpha = np.exp(m - m_new)
        P = _exp_minus(S, m_new)
        l[:] = alpha * l + P.sum(axis=1)
        acc[:] = alpha[:, None] * acc + P @ V_j
    m[:] = m_new


def early_normalise_step(m, l, acc, S, V_j):
    """Mistake: normalising at every block (acc divided by l) and then treating acc as unnormalised."""
    online_step(m, l, acc, S, V_j)
    acc[:] = normalise(acc, l)


def finish_normalised(m, l, acc):
    """The finish of :func:`early_normalise_step`: acc is taken as already normalised."""
    return np.array(acc), safe_lse(m, l)


def finish_unguarded(m, l, acc):
    """Mistake: ``acc / l`` without the guard for ``l = 0``: an empty split gives 0 / 0 = NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return acc / l[:, None], m + np.log(l)


def bottom_right(r0, r1, c0, c1, N, N_k):
    """Causal mask (True = visible) of rows ``[r0, r1)`` x keys ``[c0, c1)``: key j visible to query i iff
    ``j <= i + N_k - N`` (bottom-right aligned, flash-attn >= 2.1; ``labcore.checks.causal_mask``)."""
    return causal_mask(N, N_k, r0, c0, r1, c1)


def top_left(r0, r1, c0, c1, N, N_k):
    """Mistake: causal mask aligned to the top-left corner (``j <= i``), wrong whenever N_q != N_k."""
    return np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None]
