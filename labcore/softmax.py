"""Online softmax: the three one-row algorithms of lecture §3.1, the running state, and its merge.

All functions compute attention for ONE query row against a sequence of S keys, in float64, and report
how many passes they make over the sequence (each pass re-reads K or V, or the stored scores).

Sources: Milakov & Gimelshein 2018 (online normalizer); FlashAttention paper (Dao et al. 2022) §3.1,
Algorithm 1; FlashAttention-2 (Dao 2023) §3.1 (deferred normalisation); FlashInfer / vLLM for the name
``merge_state``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import as_matrix, as_real, as_vector, check_qkv, choice, positive_int, resolve_scale

__all__ = [
    "RowAttention", "row_attention_three_pass", "row_attention_two_pass", "row_attention_one_pass",
    "OnlineSoftmax", "merge_state", "partial_state", "random_segments", "merge_segments",
]


@dataclass(frozen=True)
class RowAttention:
    """Result of one-row attention: output ``o`` (d_v,), natural-log ``lse``, passes over the sequence,
    and how many scores had to be stored at once (S for the 3-pass algorithm, 0 for the online ones)."""

    o: np.ndarray
    lse: float
    passes: int
    scores_stored: int


def _row_inputs(q, K, V, scale):
    q = as_vector(q, "q")
    Q, K, V = check_qkv(q[None, :], K, V, q_name="q")
    return Q[0], K, V, resolve_scale(scale, Q.shape[1])


def _blocks(S: int, block: int):
    block = positive_int(block, "block")
    return [(j, min(j + block, S)) for j in range(0, S, block)]


def row_attention_three_pass(q, K, V, *, scale=None) -> RowAttention:
    """Safe softmax with the whole score row stored: pass 1 scores and max, pass 2 exp and sum,
    pass 3 normalise and multiply by V (lecture §3.1, first algorithm).

    Args: q (d,), K (S, d), V (S, d_v) real arrays; scale > 0 (default 1/sqrt(d)).
    Returns: :class:`RowAttention` with passes=3, scores_stored=S.
    Raises: TypeError/ValueError for non-numeric, mis-shaped, empty or non-finite input.
    """
    q, K, V, s = _row_inputs(q, K, V, scale)
    x = (K @ q) * s                      # pass 1: every score, stored
    m = x.max()
    e = np.exp(x - m)                    # pass 2: exponentials and their sum
    l = e.sum()
    o = (e / l) @ V                      # pass 3: normalise and multiply V
    return RowAttention(o, float(m + np.log(l)), 3, K.shape[0])


def row_attention_two_pass(q, K, V, *, block: int = 256, scale=None) -> RowAttention:
    """Online m, l in a first pass (no stored scores), then recompute scores block by block and multiply V
    (lecture §3.1, second algorithm; Milakov & Gimelshein 2018, Algorithm 3).

    Args: as :func:`row_attention_three_pass`; block: keys per block (int >= 1).
    Returns: :class:`RowAttention` with passes=2, scores_stored=0.
    """
    q, K, V, s = _row_inputs(q, K, V, scale)
    m, l = -np.inf, 0.0
    for a, b in _blocks(K.shape[0], block):      # pass 1: running max and rescaled sum
        x = (K[a:b] @ q) * s
        m_new = max(m, x.max())
        l = l * np.exp(m - m_new) + np.exp(x - m_new).sum()
        m = m_new
    o = np.zeros(V.shape[1])
    for a, b in _blocks(K.shape[0], block):      # pass 2: recompute scores, final weights times V
        x = (K[a:b] @ q) * s
        o += (np.exp(x - m) / l) @ V[a:b]
    return RowAttention(o, float(m + np.log(l)), 2, 0)


def row_attention_one_pass(q, K, V, *, block: int = 256, scale=None) -> RowAttention:
    """Online softmax times V in one pass (lecture §3.1, third algorithm): see :class:`OnlineSoftmax`."""
    q, K, V, s = _row_inputs(q, K, V, scale)
    st = OnlineSoftmax(V.shape[1])
    for a, b in _blocks(K.shape[0], block):
        st.update((K[a:b] @ q) * s, V[a:b])
    o, lse = st.result()
    return RowAttention(o, float(lse), 1, 0)


class OnlineSoftmax:
    """Running state (m, l, acc) of online softmax times V for one query row.

    After blocks of scores ``x`` (already scaled; ``-inf`` for masked keys) and their value rows arrive,
    ``o = acc / l`` equals ``softmax(all scores) @ V``. Per block, with block max ``m~``:

        m_new = max(m, m~),   alpha = exp(m - m_new),
        l    <- alpha * l + sum_j exp(x_j - m_new),
        acc  <- alpha * acc + sum_j exp(x_j - m_new) v_j.

    Normalisation is deferred to :meth:`result` (FlashAttention-2 §3.1). ``trace`` keeps one dict per
    block: ``block``, ``block_max``, ``m``, ``alpha``, ``l``.

    Args: d_v: width of the value rows (int >= 1).
    Source: Milakov & Gimelshein 2018; Dao et al. 2022 §3.1; lecture §3.1.
    """

    def __init__(self, d_v: int):
        self.d_v = positive_int(d_v, "d_v")
        self.m = -np.inf
        self.l = 0.0
        self.acc = np.zeros(self.d_v)
        self.trace: list[dict] = []

    def update(self, scores_block, values_block) -> "OnlineSoftmax":
        """Fold in one block: ``scores_block`` (b,) floats (may hold -inf), ``values_block`` (b, d_v).

        Raises: ValueError for mismatched lengths, wrong widths, NaN or +inf scores.
        """
        x = np.asarray(scores_block, dtype=np.float64)
        Vb = np.asarray(values_block, dtype=np.float64)
        if x.ndim != 1 or Vb.ndim != 2 or Vb.shape != (x.shape[0], self.d_v):
            raise ValueError(f"scores_block must be (b,) and values_block (b, {self.d_v}); got {x.shape} and {Vb.shape}")
        if np.any(np.isnan(x)) or np.any(x == np.inf):
            raise ValueError("scores_block must not hold NaN or +inf (use -inf to mask a key)")
        block_max = x.max() if x.size else -np.inf
        m_new = max(self.m, block_max)
        if m_new == -np.inf:                 # everything so far masked: state stays the identity
            alpha, p = 1.0, np.zeros_like(x)
        else:
            alpha = float(np.exp(self.m - m_new))
            p = np.exp(x - m_new)
        self.l = alpha * self.l + p.sum()
        self.acc = alpha * self.acc + p @ Vb
        self.m = m_new
        self.trace.append({"block": len(self.trace), "block_max": float(block_max), "m": float(self.m),
                           "alpha": alpha, "l": float(self.l)})
        return self

    def result(self):
        """``(o, lse)``: o = acc / l (zeros if every key was masked), lse = m + log l (``-inf`` then)."""
        if self.l == 0.0:
            return np.zeros(self.d_v), -np.inf
        return self.acc / self.l, self.m + np.log(self.l)


def merge_state(o_a, lse_a, o_b, lse_b):
    """Merge two partial attention results over disjoint key sets (log-sum-exp form).

    ``lse = log(exp(lse_a) + exp(lse_b))``, ``o = exp(lse_a - lse) o_a + exp(lse_b - lse) o_b``.
    Associative and commutative; ``(o = 0, lse = -inf)`` is the identity (an empty or fully masked part).

    Args:
        o_a, o_b: (..., d_v) arrays of normalised partial outputs. lse_a, lse_b: (...) natural-log lse.
    Returns: ``(o, lse)`` with the same shapes.
    Raises: ValueError for mismatched shapes or NaN/+inf lse; TypeError for non-numbers (strings, None).
    Source: flash-decoding post (Dao et al. 2023), step 3; FlashInfer/vLLM ``merge_state``; lecture §3.2.
    """
    o_a, o_b = as_real(o_a, "o_a"), as_real(o_b, "o_b")
    lse_a, lse_b = as_real(lse_a, "lse_a"), as_real(lse_b, "lse_b")
    if o_a.shape != o_b.shape or lse_a.shape != lse_b.shape or o_a.shape[:-1] != lse_a.shape:
        raise ValueError(f"merge_state needs o (..., d_v) and lse (...) of matching shapes; got o {o_a.shape}, "
                         f"{o_b.shape} and lse {lse_a.shape}, {lse_b.shape}")
    for name, v in (("lse_a", lse_a), ("lse_b", lse_b)):
        if np.any(np.isnan(v)) or np.any(v == np.inf):
            raise ValueError(f"{name} must be finite or -inf, got NaN or +inf")
    for name, v in (("o_a", o_a), ("o_b", o_b)):
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name} must be finite (an empty part is o = 0 with lse = -inf), got NaN or inf")
    lse = np.logaddexp(lse_a, lse_b)
    safe = np.where(np.isfinite(lse), lse, 0.0)
    w_a = np.where(np.isfinite(lse_a), np.exp(lse_a - safe), 0.0)
    w_b = np.where(np.isfinite(lse_b), np.exp(lse_b - safe), 0.0)
    o = w_a[..., None] * o_a + w_b[..., None] * o_b
    return o, lse


def partial_state(scores, V):
    """Normalised partial output and lse of one segment: scores (b,) (may be empty or hold -inf), V (b, d_v).

    Returns ``(o, lse)``; an empty or fully masked segment gives ``(0, -inf)``, the identity of
    :func:`merge_state`.
    """
    x = np.asarray(scores, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    st = OnlineSoftmax(V.shape[1])
    if x.size:
        st.update(x, V)
    return st.result()


def random_segments(S: int, k: int, rng) -> list[tuple[int, int]]:
    """Cut ``range(S)`` into ``k`` non-empty contiguous segments at random cut points (k <= S)."""
    S = positive_int(S, "S")
    k = positive_int(k, "k")
    if k > S:
        raise ValueError(f"k (segments) must be <= S (length), got k={k}, S={S}")
    cuts = np.sort(rng.choice(np.arange(1, S), size=k - 1, replace=False)) if k > 1 else np.array([], int)
    edges = [0, *cuts.tolist(), S]
    return [(edges[i], edges[i + 1]) for i in range(k)]


def merge_segments(scores, V, segments, *, order: str = "sequential", rng=None):
    """Compute each segment's partial state and merge them in the given ``order``.

    Args:
        scores: (S,) scaled scores. V: (S, d_v). segments: list of (start, stop) covering range(S).
        order: ``"sequential"`` (left to right), ``"tree"`` (pairwise rounds) or ``"random"`` (shuffled,
            needs ``rng``, a numpy Generator).
    Returns: ``(o, lse)``.
    Raises: ValueError for an unknown order or a missing rng.
    """
    choice(order, "order", ("sequential", "tree", "random"))
    x = as_vector(scores, "scores")
    V = as_matrix(V, "V")
    if V.shape[0] != x.shape[0]:
        raise ValueError(f"scores and V must have the same length, got {x.shape[0]} and {V.shape[0]}")
    edges = [tuple(int(v) for v in seg) for seg in segments]
    if not edges or edges[0][0] != 0 or edges[-1][1] != x.shape[0] or any(
            a > b for a, b in edges) or any(edges[i][1] != edges[i + 1][0] for i in range(len(edges) - 1)):
        raise ValueError(f"segments must be contiguous (start, stop) pairs covering range({x.shape[0]}) in order, "
                         f"e.g. [(0, 5), (5, {x.shape[0]})]; got {segments!r}")
    parts = [partial_state(x[a:b], V[a:b]) for a, b in edges]
    if order == "random":
        if rng is None:
            raise ValueError("order='random' needs rng=np.random.default_rng(seed)")
        parts = [parts[i] for i in rng.permutation(len(parts))]
    if order == "tree":
        while len(parts) > 1:
            nxt = [merge_state(*parts[i], *parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
            if len(parts) % 2:
                nxt.append(parts[-1])
            parts = nxt
        return parts[0]
    o, lse = np.zeros(V.shape[1]), -np.inf
    for p in parts:
        o, lse = merge_state(o, lse, *p)
    return o, float(lse)
