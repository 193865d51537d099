"""Softmax, safely and online: the one home of the log-sum-exp, the running update and the merge.

Every attention algorithm in labcore (the reference, standard attention, both loop orders of the
FlashAttention forward and its backward, the one-row algorithms, split-KV decoding) is built from the
few functions in the first half of this module, so each idea exists once:

- :func:`scaled_scores`: ``S = Q K^T * scale`` with the one overflow check (finite inputs whose scores are
  not finite float64 are a ValueError, never a NaN);
- :func:`safe_lse`: ``lse = m + log l``, ``-inf`` (never NaN) for a fully masked or empty row;
- :func:`normalise`: ``acc / l`` per row, zeros where ``l = 0``;
- :func:`online_update`: fold one score tile into the running state ``(m, l, acc)`` (Triton's
  ``_attn_fwd_inner``; FlashAttention-2 Algorithm 1, lines 8-10), with :func:`rescale_factor`
  ``alpha = exp(m_old - m_new)``;
- :func:`row_softmax`: the softmax of whole rows, ``(P, lse)``; :func:`probabilities_from_lse`: P again
  from the stored lse (the backward pass);
- :func:`merge_states` / :func:`merge_state`: merge partial results over disjoint key sets by their lse
  (flash-decoding's combine step; FlashInfer/vLLM ``merge_state``) -- the same update, with the parts'
  lse as scores and their outputs as values.

The second half is lecture §3.1-§3.2: the three one-row algorithms (``q`` against ``n_keys`` keys, each
reporting how many passes it makes over the sequence), :class:`OnlineSoftmax` with its trace, and the
segment merges of the §3 explorer.

Conventions: ``lse`` is the natural-log logsumexp of scaled scores (flash-attn's ``softmax_lse``;
Triton's tutorial stores base 2, we do not); masked scores are ``-inf``.

Sources: Milakov & Gimelshein 2018 (online normalizer); FlashAttention paper (Dao et al. 2022) §3.1,
Algorithm 1; FlashAttention-2 (Dao 2023) §3.1 (deferred normalisation) and Algorithm 1; Triton's
fused-attention tutorial (``_attn_fwd_inner``); flash-decoding (Dao et al. 2023) and FlashInfer / vLLM
for ``merge_state``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import as_matrix, as_real, as_vector, check_qkv, choice, positive_int, resolve_scale

__all__ = [
    "scaled_scores", "safe_lse", "normalise", "rescale_factor", "online_update", "probabilities_from_lse",
    "row_softmax",
    "merge_states", "merge_state",
    "RowAttention", "row_attention_three_pass", "row_attention_two_pass", "row_attention_one_pass",
    "OnlineSoftmax", "online_softmax_trace", "partial_state", "random_segments", "merge_segments",
]

#: Largest finite float64 (``np.finfo(np.float64).max``, about 1.8e308): a score beyond it overflows.
_FLOAT64_MAX = float(np.finfo(np.float64).max)


# ----------------------------------------------------------------------------------------------------------
# the primitives every algorithm shares
# ----------------------------------------------------------------------------------------------------------

def scaled_scores(Q, K, scale: float) -> np.ndarray:
    """Scores ``S = Q K^T * scale`` in float64, checked: the one overflow policy of labcore.

    Every entry point that forms scores (reference, standard, FlashAttention forward and backward, the
    one-row algorithms, split-KV and decode) forms them here, so that finite inputs whose scores do not fit
    in float64 fail the same way everywhere instead of turning into ``inf``/``NaN`` later.

    Args:
        Q: (n_rows, d) finite float64 array.
        K: (n_keys, d) finite float64 array (both already checked, e.g. by ``labcore.checks.check_qkv``).
        scale: the softmax scale, a finite float > 0 (flash-attn's ``softmax_scale``).
    Returns:
        (n_rows, n_keys) float64 array, every entry finite.
    Raises:
        ValueError: some score ``q . k * scale`` is not a finite float64 ("scores overflow float64 ..."),
            naming the first query row and key where it happens.
    Source: IEEE 754 binary64 (largest finite value ~1.8e308); a reader's example ``Q = K = [[1e155]]``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        S = (Q @ K.T) * scale
    if not np.all(np.isfinite(S)):
        i, j = (int(v) for v in np.argwhere(~np.isfinite(S))[0])
        raise ValueError(
            f"scores overflow float64: |q.k| * scale is not finite for query row {i} and key {j} "
            f"(max |q| = {np.abs(Q[i]).max():.3g}, max |k| = {np.abs(K[j]).max():.3g}, scale = {scale:.3g}); "
            f"float64 holds magnitudes up to {_FLOAT64_MAX:.3g}, so scale Q or K down")
    return S


def _finite_or_zero(m):
    """``m`` with ``-inf`` replaced by 0, so that ``exp(x - m)`` is 0 (not NaN) when ``x = m = -inf``."""
    return np.where(np.isfinite(m), m, 0.0)


def safe_lse(m, l):
    """``lse = m + log l`` from a running max ``m`` and sum ``l = sum exp(x - m)``; ``-inf`` where ``l = 0``.

    A fully masked or empty row (``m = -inf``, ``l = 0``) gets ``lse = -inf``, never NaN: the identity of
    :func:`merge_state`.

    Args:
        m, l: arrays (or floats) of the same shape; ``l >= 0``, ``m`` finite wherever ``l > 0``.
    Returns:
        float64 array of that shape (a 0-d array for scalars).
    Source:
        FlashAttention-2 (Dao 2023) Algorithm 1, line 13 (``L_i = m_i + log l_i``).
    """
    m, l = np.asarray(m, dtype=np.float64), np.asarray(l, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(l > 0, _finite_or_zero(m) + np.log(np.where(l > 0, l, 1.0)), -np.inf)


def normalise(acc, l):
    """``acc / l`` row by row (``acc`` (n_rows, d_v), ``l`` (n_rows,)), zeros where ``l = 0`` (a fully masked row).

    Returns:
        float64 array shaped like ``acc``.
    Source:
        FlashAttention-2 Algorithm 1, line 12 (deferred normalisation ``O_i = diag(l_i)^-1 acc_i``).
    """
    acc, l = np.asarray(acc, dtype=np.float64), np.asarray(l, dtype=np.float64)
    ok = l > 0
    return np.where(ok[..., None], acc / np.where(ok, l, 1.0)[..., None], 0.0)


def rescale_factor(m_old, m_new):
    """``alpha = exp(m_old - m_new)``, the factor that rescales a running state to a new max; 1 where the
    new max is still ``-inf`` (nothing seen yet: the state is the identity and stays so).

    Args:
        m_old, m_new: arrays (or floats) of the same shape, ``m_new >= m_old``.
    Source:
        FlashAttention-2 Algorithm 1, line 10; lecture §3.1.
    """
    m_old, m_new = np.asarray(m_old, dtype=np.float64), np.asarray(m_new, dtype=np.float64)
    return np.where(np.isfinite(m_new), np.exp(m_old - _finite_or_zero(m_new)), 1.0)


def online_update(m, l, acc, S, V=None):
    """Fold one tile of scores into the running softmax state (the inner step of every online algorithm).

    With ``m_new = max(m, rowmax(S))``, ``alpha = exp(m - m_new)`` and ``P = exp(S - m_new)``:

        l <- alpha * l + rowsum(P),    acc <- alpha * acc + P V.

    After all tiles, ``normalise(acc, l)`` is ``softmax(all scores) V`` and ``safe_lse(m, l)`` the lse.

    Args:
        m, l: (n_rows,) running max (``-inf`` initially) and sum (0 initially).
        acc: (n_rows, d_v) unnormalised output (zeros initially), or None to track only ``m, l``.
        S: (n_rows, b) scaled scores of this tile (``-inf`` masked; ``b`` may be 0).
        V: (b, d_v) value rows of the tile (ignored when ``acc`` is None).
    Returns:
        ``(m, l, acc)``, the new state (``acc`` None if it was None). A fully masked row stays the identity
        ``(-inf, 0, 0)``, never NaN.
    Source:
        Triton fused-attention tutorial ``_attn_fwd_inner``; FlashAttention-2 (Dao 2023) Algorithm 1, lines 8-10;
        Milakov & Gimelshein 2018.
    """
    m_new = np.maximum(m, S.max(axis=-1, initial=-np.inf))
    P = np.exp(S - _finite_or_zero(m_new)[..., None])
    alpha = rescale_factor(m, m_new)
    l_new = alpha * l + P.sum(axis=-1)
    if acc is None:
        return m_new, l_new, None
    return m_new, l_new, alpha[..., None] * acc + P @ V


def probabilities_from_lse(S, lse):
    """``P = exp(S - lse)`` row by row: the softmax recomputed from stored row statistics (the backward
    pass's recomputation); 0 where a score is masked (``-inf``) or the whole row was (``lse = -inf``).

    Args:
        S: (n_rows, b) scaled scores (``-inf`` masked).
        lse: (n_rows,) natural-log lse of the full rows.
    Returns:
        (n_rows, b) float64.
    Source:
        FlashAttention (Dao et al. 2022) Algorithm 4, line 13 (``P_ij = diag(l_i)^-1 exp(S_ij - m_i)``, in
        lse form as FlashAttention-2 Algorithm 2, line 11).
    """
    S, lse = np.asarray(S, dtype=np.float64), np.asarray(lse, dtype=np.float64)
    return np.where(np.isfinite(lse)[:, None], np.exp(S - _finite_or_zero(lse)[:, None]), 0.0)


def row_softmax(S: np.ndarray):
    """Safe softmax of each row of ``S`` (which may hold ``-inf``); returns ``(P, lse)``.

    Fully masked rows give ``P = 0`` and ``lse = -inf`` (no NaN). ``lse`` is in natural log. Built from the
    shared pieces: one :func:`online_update` over the whole row, :func:`safe_lse`, then
    :func:`probabilities_from_lse` (``P = exp(S - lse)``).

    Args:
        S: (n_rows, n_keys) float array, n_keys >= 1; entries finite or ``-inf``.
    Returns:
        P (n_rows, n_keys) and lse (n_rows,), float64.
    Raises:
        ValueError: S not 2-D, without keys, or holding NaN or ``+inf``.
    Source:
        the safe softmax (subtract the row max); FlashAttention paper §3.1.
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[1] == 0:
        raise ValueError(f"S must be a 2-D (rows, keys) array with at least one key, got shape {S.shape}")
    if np.any(np.isnan(S)) or np.any(S == np.inf):
        raise ValueError("S must hold finite scores or -inf (masked), never NaN or +inf")
    m, l, _ = online_update(np.full(S.shape[0], -np.inf), np.zeros(S.shape[0]), None, S)   # max, then sum of exp
    lse = safe_lse(m, l)
    return probabilities_from_lse(S, lse), lse


def merge_states(o_parts, lse_parts):
    """Merge any number of partial attention results over disjoint key sets (log-sum-exp form).

    ``lse = log sum_s exp(lse_s)`` and ``o = sum_s exp(lse_s - lse) o_s``: the weights are
    :func:`row_softmax` of the parts' lse (the parts' lse play the role of scores, their outputs of values).
    Parts with ``lse_s = -inf`` (empty or fully masked) get weight 0; if every part is empty the result is
    ``o = 0``, ``lse = -inf`` (never NaN).

    Args:
        o_parts: (num_parts, ..., d_v) normalised partial outputs (flash-attn's ``out_accum``).
        lse_parts: (num_parts, ...) natural-log lse (``softmax_lse_accum``).
    Returns:
        ``(o, lse)``: (..., d_v) and (...) float64.
    Raises:
        ValueError: mismatched shapes, no parts, NaN/+inf lse or non-finite o.
        TypeError: non-numbers.
    Source:
        flash-decoding (Dao et al. 2023), step 3; FlashInfer/vLLM ``merge_state``; lecture §3.2.
    """
    o_parts, lse_parts = as_real(o_parts, "o_parts"), as_real(lse_parts, "lse_parts")
    if o_parts.ndim < 2 or o_parts.shape[:-1] != lse_parts.shape or o_parts.shape[0] < 1:
        raise ValueError(f"merge_states needs o_parts (num_parts, ..., d_v) and lse_parts (num_parts, ...) of "
                         f"matching shapes with at least one part; got {o_parts.shape} and {lse_parts.shape}")
    if np.any(np.isnan(lse_parts)) or np.any(lse_parts == np.inf):
        raise ValueError("lse of every part must be finite or -inf (an empty part), never NaN or +inf")
    if not np.all(np.isfinite(o_parts)):
        raise ValueError("o of every part must be finite (an empty part is o = 0 with lse = -inf), got NaN or inf")
    return _merge(o_parts, lse_parts)


def _merge(o_parts, lse_parts):
    """:func:`merge_states` without the checks: the weights are :func:`row_softmax` of the parts' lse."""
    n = lse_parts.shape[0]
    W, lse = row_softmax(lse_parts.reshape(n, -1).T)          # (rows, num_parts): exp(lse_s - lse), 0 if empty
    o = np.where(np.isfinite(lse_parts)[..., None], o_parts, 0.0).reshape(n, W.shape[0], -1)
    return np.einsum("rs,srd->rd", W, o).reshape(o_parts.shape[1:]), lse.reshape(lse_parts.shape[1:])


def merge_state(o_a, lse_a, o_b, lse_b):
    """Merge two partial attention results over disjoint key sets: :func:`merge_states` of the two.

    ``lse = log(exp(lse_a) + exp(lse_b))``, ``o = exp(lse_a - lse) o_a + exp(lse_b - lse) o_b``.
    Associative and commutative; ``(o = 0, lse = -inf)`` is the identity (an empty or fully masked part).

    Args:
        o_a, o_b: (..., d_v) arrays of normalised partial outputs.
        lse_a, lse_b: (...) natural-log lse.
    Returns:
        ``(o, lse)`` with the same shapes.
    Raises:
        ValueError for mismatched shapes or NaN/+inf lse; TypeError for non-numbers (strings, None).
    Source:
        flash-decoding post (Dao et al. 2023), step 3; FlashInfer/vLLM ``merge_state``; lecture §3.2.
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
    return _merge(np.stack([o_a, o_b]), np.stack([lse_a, lse_b]))


# ----------------------------------------------------------------------------------------------------------
# lecture §3.1: one query row, three algorithms; the running state; segment merges (§3.2)
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RowAttention:
    """Result of one-row attention: output ``o`` (d_v,), natural-log ``lse``, passes over the sequence,
    and how many scores had to be stored at once (n_keys for the 3-pass algorithm, 0 for the online ones)."""

    o: np.ndarray
    lse: float
    passes: int
    scores_stored: int


def _row_inputs(q, K, V, scale):
    q = as_vector(q, "q")
    Q, K, V = check_qkv(q[None, :], K, V, q_name="q")
    return Q, K, V, resolve_scale(scale, Q.shape[1])


def _blocks(n_keys: int, block: int):
    block = positive_int(block, "block")
    return [(j, min(j + block, n_keys)) for j in range(0, n_keys, block)]


def row_attention_three_pass(q, K, V, *, scale=None) -> RowAttention:
    """Safe softmax with the whole score row stored: pass 1 scores and max, pass 2 exp and sum,
    pass 3 normalise and multiply by V (lecture §3.1, first algorithm): :func:`row_softmax` of the row.

    Args:
        q, K, V: (d,), (n_keys, d), (n_keys, d_v) real arrays.
        scale: float > 0, default 1/sqrt(d) (flash-attn's ``softmax_scale``).
    Returns:
        :class:`RowAttention` with passes=3, scores_stored=n_keys.
    Raises:
        TypeError/ValueError: non-numeric, mis-shaped, empty or non-finite input; scores that overflow
            float64 (:func:`scaled_scores`).
    Source: lecture §3.1; Milakov & Gimelshein 2018, Algorithm 2 (safe softmax).
    """
    Q, K, V, s = _row_inputs(q, K, V, scale)
    P, lse = row_softmax(scaled_scores(Q, K, s))     # passes 1 and 2: every score stored, max, exp and sum
    return RowAttention(P[0] @ V, float(lse[0]), 3, K.shape[0])   # pass 3: weights times V


def row_attention_two_pass(q, K, V, *, block: int = 256, scale=None) -> RowAttention:
    """Online m, l in a first pass (no stored scores), then recompute scores block by block and multiply V
    (lecture §3.1, second algorithm; Milakov & Gimelshein 2018, Algorithm 3).

    Args:
        q, K, V, scale: as :func:`row_attention_three_pass`.
        block: keys per block (int >= 1).
    Returns:
        :class:`RowAttention` with passes=2, scores_stored=0.
    Raises:
        as :func:`row_attention_three_pass`.
    """
    Q, K, V, s = _row_inputs(q, K, V, scale)
    m, l = np.full(1, -np.inf), np.zeros(1)
    for a, b in _blocks(K.shape[0], block):      # pass 1: running max and rescaled sum (no accumulator)
        m, l, _ = online_update(m, l, None, scaled_scores(Q, K[a:b], s))
    lse = safe_lse(m, l)
    o = np.zeros(V.shape[1])
    for a, b in _blocks(K.shape[0], block):      # pass 2: recompute scores, final weights exp(x - lse) times V
        o += probabilities_from_lse(scaled_scores(Q, K[a:b], s), lse)[0] @ V[a:b]
    return RowAttention(o, float(lse[0]), 2, 0)


def row_attention_one_pass(q, K, V, *, block: int = 256, scale=None) -> RowAttention:
    """Online softmax times V in one pass (lecture §3.1, third algorithm): see :class:`OnlineSoftmax`.

    Args/Raises: as :func:`row_attention_two_pass`. Returns: :class:`RowAttention` with passes=1.
    """
    o, lse = online_softmax_trace(q, K, V, block=block, scale=scale).result()
    return RowAttention(o, float(lse), 1, 0)


class OnlineSoftmax:
    """Running state (m, l, acc) of online softmax times V for one query row.

    After blocks of scores ``x`` (already scaled; ``-inf`` for masked keys) and their value rows arrive,
    ``o = acc / l`` equals ``softmax(all scores) @ V``. Per block, with block max ``m~``
    (:func:`online_update`):

        m_new = max(m, m~),   alpha = exp(m - m_new),
        l    <- alpha * l + sum_j exp(x_j - m_new),
        acc  <- alpha * acc + sum_j exp(x_j - m_new) v_j.

    Normalisation is deferred to :meth:`result` (FlashAttention-2 §3.1). ``trace`` keeps one dict per
    block: ``block``, ``block_max``, ``m``, ``alpha``, ``l``.

    Args:
        d_v: width of the value rows (int >= 1).
    Source:
        Milakov & Gimelshein 2018; Dao et al. 2022 §3.1; lecture §3.1.
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
        m_old = self.m
        m, l, acc = online_update(np.full(1, m_old), np.full(1, self.l), self.acc[None], x[None], Vb)
        self.m, self.l, self.acc = float(m[0]), float(l[0]), acc[0]
        self.trace.append({"block": len(self.trace), "block_max": float(x.max(initial=-np.inf)), "m": self.m,
                           "alpha": float(rescale_factor(m_old, self.m)), "l": self.l})
        return self

    def result(self):
        """``(o, lse)``: o = acc / l (zeros if every key was masked), lse = m + log l (``-inf`` then)."""
        return normalise(self.acc[None], np.full(1, self.l))[0], float(safe_lse(self.m, self.l))


def online_softmax_trace(q, K, V, *, block: int = 256, scale=None) -> OnlineSoftmax:
    """Run :class:`OnlineSoftmax` over one query row in blocks of ``block`` keys and return it (its
    ``trace`` holds block max, m, alpha and l after every block; ``result()`` the output and lse).

    Args/Raises: as :func:`row_attention_one_pass`. Returns: the :class:`OnlineSoftmax` after the last block.
    Source: lecture §3.1 (the trace table and the §3 explorer).
    """
    Q, K, V, s = _row_inputs(q, K, V, scale)
    st = OnlineSoftmax(V.shape[1])
    for a, b in _blocks(K.shape[0], block):
        st.update(scaled_scores(Q, K[a:b], s)[0], V[a:b])
    return st


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


def random_segments(n_keys: int, k: int, rng) -> list[tuple[int, int]]:
    """Cut ``range(n_keys)`` into ``k`` non-empty contiguous segments at random cut points (k <= n_keys).

    Args:
        n_keys, k: ints >= 1.
        rng: a numpy Generator.
    Returns:
        list of (start, stop).
    Raises:
        TypeError/ValueError: sizes not integers >= 1, or ``k > n_keys``.
    """
    n_keys = positive_int(n_keys, "n_keys")
    k = positive_int(k, "k")
    if k > n_keys:
        raise ValueError(f"k (segments) must be <= n_keys (length), got k={k}, n_keys={n_keys}")
    cuts = np.sort(rng.choice(np.arange(1, n_keys), size=k - 1, replace=False)) if k > 1 else np.array([], int)
    edges = [0, *cuts.tolist(), n_keys]
    return [(edges[i], edges[i + 1]) for i in range(k)]


def merge_segments(scores, V, segments, *, order: str = "sequential", rng=None):
    """Compute each segment's partial state and merge them in the given ``order``.

    Args:
        scores: (n_keys,) scaled scores.
        V: (n_keys, d_v).
        segments: list of (start, stop) covering ``range(n_keys)``.
        order: ``"sequential"`` (left to right), ``"tree"`` (pairwise rounds) or ``"random"`` (shuffled,
            needs ``rng``, a numpy Generator).
    Returns:
        ``(o, lse)``.
    Raises:
        ValueError for an unknown order or a missing rng.
    Source:
        lecture §3.2 (the merge is associative: any order gives the same result up to rounding).
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
