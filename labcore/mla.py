"""Multi-head latent attention (MLA) at decode: the naive per-head form and the weight-absorbed form FlashMLA runs.

MLA (DeepSeek-V2) caches one latent ``c_kv`` of ``d_c = 512`` dims per token plus a shared RoPE key of
``d_rope = 64`` dims. Head h's key is ``[c_kv W_UK[h], k_rope]`` (``d_nope + d_rope = 128 + 64``) and its value
``c_kv W_UV[h]`` (``d_v = 128``): :func:`mla_decode_naive` builds them and runs ordinary attention per head.
Absorbing ``W_UK[h]`` into the query (``q_lat = q_nope W_UK[h]^T``, 512 dims) turns every head into a
576-dim query against the *one* shared 576-dim cache row ``[c_kv, k_rope]``, whose first 512 dims also serve as
V; ``W_UV[h]`` is applied after the softmax: :func:`mla_decode_absorbed`, which is multi-query attention with
``h_q x s_q`` query rows and ``d_qk = 576``, ``d_v = 512``. Both give the same output (to rounding); the
softmax scale stays ``1/sqrt(d_nope + d_rope)`` (the model's, not ``1/sqrt(576)``).

Per cached token the absorbed kernel reads ``576 x 2`` bytes and does ``2 h_q s_q (576 + 512)`` FLOPs
(:func:`mla_intensity`), so decode turns compute-bound near ``h_q s_q = 128`` on an H800
(:func:`mla_compute_bound_threshold`; FlashMLA's ``1/2 x 865 / 3.35``).

Sources: DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434) §2.1 (MLA, the absorption of W_UK and W_UV, decoupled
RoPE; ``d_c = 512``, ``d_h^R = 64``, 128 heads of 128); FlashMLA README (d_qk 576, d_v 512, paged KV block 64)
and its deep-dive docs/20250422 (FLOPs per byte, the compute-bound threshold).
"""
from __future__ import annotations

import numpy as np

from .attention import reference_attention
from .checks import MAX_ELEMENTS, as_real, at_most, flag, int_array, positive_float, positive_int, resolve_scale
from .published import published
from .softmax import row_softmax, scaled_scores

__all__ = ["MLA_DIMS", "mla_decode_naive", "mla_decode_absorbed", "mla_intensity", "gqa_decode_intensity",
           "mla_compute_bound_threshold", "mla_decode_roofline"]

#: DeepSeek-V2/V3's MLA sizes: latent ``d_c``, decoupled RoPE dims, per-head no-RoPE key dims, value dims, heads.
MLA_DIMS = {"d_c": 512, "d_rope": 64, "d_nope": 128, "d_v": 128, "heads": 128}

_RATES = "give flops in FLOP/s and bandwidth in bytes/s of a real GPU, and sizes of a real model"


def _check(q_nope, q_rope, c_kv, k_rope, W_UK, W_UV):
    q_nope, q_rope, c_kv = as_real(q_nope, "q_nope"), as_real(q_rope, "q_rope"), as_real(c_kv, "c_kv")
    k_rope, W_UK, W_UV = as_real(k_rope, "k_rope"), as_real(W_UK, "W_UK"), as_real(W_UV, "W_UV")
    ok = (q_nope.ndim == 3 and q_rope.ndim == 3 and c_kv.ndim == 2 and k_rope.ndim == 2 and W_UK.ndim == 3
          and W_UV.ndim == 3)
    if ok:
        h, s_q, d_nope = q_nope.shape
        n, d_c = c_kv.shape
        ok = (q_rope.shape[:2] == (h, s_q) and k_rope.shape == (n, q_rope.shape[2]) and W_UK.shape == (h, d_c, d_nope)
              and W_UV.shape[:2] == (h, d_c) and min(h, s_q, n, d_c, d_nope, q_rope.shape[2], W_UV.shape[2]) >= 1)
    if ok:
        at_most(h * s_q * n, "q_nope and c_kv", MAX_ELEMENTS, "scores (heads x new tokens x cached tokens)")
        # the up-projected keys and values, and the latent queries and outputs, are larger than any one input
        at_most(n * (d_nope + q_rope.shape[2] + W_UV.shape[2]), "c_kv x W_UK and W_UV", MAX_ELEMENTS,
                "elements of one head's keys and values")
        at_most(h * s_q * (d_c + q_rope.shape[2] + W_UV.shape[2]), "q_nope x c_kv and W_UV", MAX_ELEMENTS,
                "elements of the latent queries and outputs")
    if not ok:
        raise ValueError("MLA inputs must be q_nope (h, s_q, d_nope), q_rope (h, s_q, d_rope), c_kv (N, d_c), "
                         "k_rope (N, d_rope), W_UK (h, d_c, d_nope), W_UV (h, d_c, d_v), every size >= 1; got "
                         f"{q_nope.shape}, {q_rope.shape}, {c_kv.shape}, {k_rope.shape}, {W_UK.shape}, {W_UV.shape}")
    for name, a in (("q_nope", q_nope), ("q_rope", q_rope), ("c_kv", c_kv), ("k_rope", k_rope), ("W_UK", W_UK),
                    ("W_UV", W_UV)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} holds NaN or inf")
    return q_nope, q_rope, c_kv, k_rope, W_UK, W_UV


def _finite(a, names: str, hint: str = "scale the inputs down"):
    """``a`` if every entry is finite, else a ValueError saying that ``names`` (the caller's arguments) overflow."""
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{names} overflows float64 (the result is not finite): {hint}")
    return a


def mla_decode_naive(q_nope, q_rope, c_kv, k_rope, W_UK, W_UV, *, causal: bool = False, scale=None):
    """MLA decode, the naive form: per head, up-project the latent to K_h and V_h and attend.

    ``K_h = [c_kv W_UK[h], k_rope]`` (N, d_nope + d_rope), ``V_h = c_kv W_UV[h]`` (N, d_v), ``Q_h = [q_nope[h],
    q_rope[h]]``; ``O[h], lse[h] = reference_attention(Q_h, K_h, V_h)``.

    Args:
        q_nope: (h, s_q, d_nope), q_rope: (h, s_q, d_rope): the new queries (s_q > 1 for speculative decode).
        c_kv: (N, d_c) cached latents.
        k_rope: (N, d_rope) cached shared RoPE keys.
        W_UK: (h, d_c, d_nope), W_UV: (h, d_c, d_v) up-projections.
        causal: bottom-right causal mask among the s_q new tokens (query i sees cached token j iff
            ``j <= i + N - s_q``). With ``s_q > N`` the first ``s_q - N`` queries see no token: their rows of O are
            zeros and their lse ``-inf``, as :func:`labcore.attention.reference_attention` gives a fully masked row.
        scale: default ``1/sqrt(d_nope + d_rope)``.
    Returns:
        ``(O, lse)``: (h, s_q, d_v) and (h, s_q) float64.
    Raises:
        TypeError: an input that is not a real array (a string, None); causal not a bool; scale not a real number.
        ValueError: shapes that do not agree or a size of 0, non-finite inputs, more than
        :data:`labcore.checks.MAX_ELEMENTS` scores or elements of an intermediate (one head's keys and values, the
        latent queries); finite inputs whose products (up-projections, scores) overflow float64.
    Source:
        DeepSeek-V2 §2.1.2-§2.1.3 (Eqs. 9-19).
    """
    causal = flag(causal, "causal")
    q_nope, q_rope, c_kv, k_rope, W_UK, W_UV = _check(q_nope, q_rope, c_kv, k_rope, W_UK, W_UV)
    s = resolve_scale(scale, q_nope.shape[2] + q_rope.shape[2])
    out = []
    for h in range(q_nope.shape[0]):
        with np.errstate(over="ignore", invalid="ignore"):
            K_h, V_h = c_kv @ W_UK[h], c_kv @ W_UV[h]
        _finite(K_h, "c_kv @ W_UK")
        _finite(V_h, "c_kv @ W_UV")
        try:
            out.append(reference_attention(np.concatenate([q_nope[h], q_rope[h]], axis=1),
                                           np.concatenate([K_h, k_rope], axis=1), V_h, causal=causal, scale=s))
        except ValueError as exc:               # the inputs are checked: only the scores can overflow here
            raise ValueError(f"q_nope and q_rope against c_kv @ W_UK and k_rope (head {h}): {exc}") from None
    return np.stack([o for o, _ in out]), np.stack([l for _, l in out])


def mla_decode_absorbed(q_nope, q_rope, c_kv, k_rope, W_UK, W_UV, *, causal: bool = False, scale=None):
    """MLA decode, the weight-absorbed form: one pass over a shared (N, d_c + d_rope) cache for all heads.

    ``q_lat[h] = q_nope[h] W_UK[h]^T`` (s_q, d_c); the h x s_q query rows ``[q_lat, q_rope]`` (576 dims for
    DeepSeek) attend to the cache ``[c_kv, k_rope]`` with V = ``c_kv`` (its first d_c dims), giving a latent
    output ``o_lat`` (h s_q, d_c); then ``O[h] = o_lat[h] W_UV[h]``. The causal mask of row (h, i) is that of
    query i (bottom-right over the s_q new tokens), the same for every head.

    Arguments and result are those of :func:`mla_decode_naive` (with ``causal`` and ``s_q > N``, the first
    ``s_q - N`` queries see no token: zeros and ``lse = -inf``).

    Raises:
        TypeError/ValueError: as :func:`mla_decode_naive` (here the products that may overflow are the latent
        queries ``q_nope W_UK^T``, the scores and the output ``o_lat W_UV``).

    Source:
        DeepSeek-V2 §2.1.2 ("W_UK can be absorbed into W_Q, and W_UV into W_O"); FlashMLA README (d_qk 576,
        d_v 512: MQA over the latent).
    """
    causal = flag(causal, "causal")
    q_nope, q_rope, c_kv, k_rope, W_UK, W_UV = _check(q_nope, q_rope, c_kv, k_rope, W_UK, W_UV)
    h, s_q, _ = q_nope.shape
    n = c_kv.shape[0]
    s = resolve_scale(scale, q_nope.shape[2] + q_rope.shape[2])
    with np.errstate(over="ignore", invalid="ignore"):
        q_lat = np.einsum("hsn,hcn->hsc", q_nope, W_UK)                # absorb W_UK into the query
    _finite(q_lat, "q_nope @ W_UK^T")
    Q = np.concatenate([q_lat, q_rope], axis=2).reshape(h * s_q, -1)    # h s_q rows of d_c + d_rope
    cache = np.concatenate([c_kv, k_rope], axis=1)                     # (N, 576): the one cached row per token
    try:
        S = scaled_scores(Q, cache, s)
    except ValueError as exc:                   # the inputs are checked: only the scores can overflow here
        raise ValueError(f"q_nope @ W_UK^T and q_rope against c_kv and k_rope: {exc}") from None
    if causal:
        i = np.tile(np.arange(s_q), h)[:, None]
        S = np.where(np.arange(n)[None, :] <= i + (n - s_q), S, -np.inf)
    P, lse = row_softmax(S)
    o_lat = (P @ cache[:, : c_kv.shape[1]]).reshape(h, s_q, -1)        # V = the first d_c dims of the cache
    with np.errstate(over="ignore", invalid="ignore"):
        O = np.einsum("hsc,hcv->hsv", o_lat, W_UV)
    return _finite(O, "c_kv and W_UV (the output o_lat @ W_UV)"), lse.reshape(h, s_q)


def mla_intensity(h_q_s_q, *, d_qk: int = 576, d_v: int = 512, dtype_bytes: int = 2):
    """FLOPs per byte of absorbed MLA decode: ``h_q s_q x 2 (d_qk + d_v) / (d_qk x dtype_bytes)``.

    Per cached token: ``2 d_qk`` FLOPs for its score and ``2 d_v`` for its share of P V, per query row; the
    cache row is read once for all ``h_q s_q`` rows. 128 rows: 241.8 FLOP/byte.

    Args:
        h_q_s_q: query rows (heads x new tokens; int or integer array, each in [1, :data:`labcore.checks.MAX_COUNT`]).
        d_qk, d_v: ints in [1, MAX_COUNT].
        dtype_bytes: cache bytes (int in [1, MAX_COUNT]).
    Returns:
        float (or array).
    Raises:
        TypeError: a count that is not an integer (a fraction, a bool, a string). ValueError: a count < 1 or above
        MAX_COUNT, an empty array.
    Source:
        FlashMLA deep-dive docs/20250422.
    """
    r = np.asarray(int_array(h_q_s_q, "h_q_s_q"), dtype=float)    # ints in [1, MAX_COUNT]: finite products
    d_qk, d_v, eb = positive_int(d_qk, "d_qk"), positive_int(d_v, "d_v"), positive_int(dtype_bytes, "dtype_bytes")
    out = r * 2 * (d_qk + d_v) / (d_qk * eb)
    return float(out) if out.ndim == 0 else out


def gqa_decode_intensity(rows, *, head_dim: int = 128, dtype_bytes: int = 2):
    """FLOPs per byte of GQA/MHA decode: ``rows x 4 d / (2 d x dtype_bytes)`` = ``rows`` for FP16 (K and V read
    separately; ``rows = g x s_q``, g query heads per KV head; MHA: 1 per new token).

    Args:
        rows: int or integer array, each in [1, :data:`labcore.checks.MAX_COUNT`].
        head_dim: d (int in [1, MAX_COUNT]).
        dtype_bytes: int in [1, MAX_COUNT].
    Returns:
        float (or array).
    Raises:
        TypeError: a count that is not an integer (a fraction, a bool, a string). ValueError: a count < 1 or above
        MAX_COUNT, an empty array.
    Source:
        lecture §6 (decode reads K and V once per KV head); Ainslie et al. 2023 (GQA).
    """
    r = np.asarray(int_array(rows, "rows"), dtype=float)           # ints in [1, MAX_COUNT]: finite products
    d = positive_int(head_dim, "head_dim")
    out = r * 4 * d / (2 * d * positive_int(dtype_bytes, "dtype_bytes"))
    return float(out) if out.ndim == 0 else out


def mla_compute_bound_threshold(*, flops: float | None = None, bandwidth: float | None = None,
                                d_qk: int = 576, d_v: int = 512, dtype_bytes: int = 2) -> dict:
    """The ``h_q s_q`` at which absorbed MLA decode stops being memory-bound: ``intensity = flops / bandwidth``.

    Exact: ``(F / B) x d_qk x dtype_bytes / (2 (d_qk + d_v))``; FlashMLA's approximation counts about 2 FLOP per
    byte per row: ``1/2 x F / B``. Defaults: the deep-dive's H800 figures from the published store
    (``flashmla.h800_throttled_flops`` = 865 TFLOP/s, ``flashmla.h800_bandwidth`` = 3.35 TB/s), which give
    136.7 exact and 129.1 approximate (FlashMLA states 128: ``flashmla.compute_bound_threshold``).

    Args:
        flops: FLOP/s (> 0) or None.
        bandwidth: bytes/s (> 0) or None.
        d_qk, d_v, dtype_bytes: as :func:`mla_intensity`.
    Returns:
        dict ``exact``, ``approx``, ``ridge`` (F / B in FLOP/byte), ``stated`` (FlashMLA's 128).
    Raises:
        TypeError/ValueError: a rate that is not a finite real > 0; sizes as :func:`mla_intensity`; rates and
        sizes whose ratio is not a finite float64 (a bandwidth of 1e-320 bytes/s).
    Source:
        FlashMLA deep-dive docs/20250422.
    """
    F = published("flashmla.h800_throttled_flops").value if flops is None else positive_float(flops, "flops")
    B = published("flashmla.h800_bandwidth").value if bandwidth is None else positive_float(bandwidth, "bandwidth")
    inten = mla_intensity(1, d_qk=d_qk, d_v=d_v, dtype_bytes=dtype_bytes)
    with np.errstate(over="ignore"):
        ridge = F / B
        exact = ridge / inten
    _finite(np.array([ridge, exact]), "flops / bandwidth (with d_qk, d_v and dtype_bytes)", _RATES)
    return {"exact": exact, "approx": ridge / 2, "ridge": ridge,
            "stated": published("flashmla.compute_bound_threshold").value}


def mla_decode_roofline(h_q_s_q, *, seqlen, batch: int = 1, flops: float | None = None,
                        bandwidth: float | None = None, d_qk: int = 576, d_v: int = 512, dtype_bytes: int = 2) -> dict:
    """Roofline time of absorbed MLA decode: ``max(FLOPs / F, bytes / B)`` (no overlap loss, no launch cost).

    FLOPs ``= batch x seqlen x h_q s_q x 2 (d_qk + d_v)``; bytes ``= batch x seqlen x d_qk x dtype_bytes``.

    Args:
        h_q_s_q: rows (int or integer array >= 1).
        seqlen: cached tokens (int or integer array >= 1; broadcast with ``h_q_s_q`` to at most
            :data:`labcore.checks.MAX_ELEMENTS` entries).
        batch: int in [1, :data:`labcore.checks.MAX_COUNT`].
        flops, bandwidth: as :func:`mla_compute_bound_threshold` (defaults: the H800 figures).
        d_qk, d_v, dtype_bytes: as :func:`mla_intensity`.

    Returns:
        dict ``time`` (s), ``compute_time``, ``memory_time``, ``bound_compute`` (bool), ``flops``, ``bytes``.

    Raises:
        TypeError: a count that is not an integer, a rate that is not a real number.
        ValueError: a count < 1 or above MAX_COUNT, a rate not finite and > 0, shapes that do not broadcast or
        broadcast too large; times that are not finite float64 (a rate of 1e-320 per second).

    Source: Williams et al. 2009 (roofline); FlashMLA deep-dive docs/20250422.
    """
    h_q_s_q, seqlen = int_array(h_q_s_q, "h_q_s_q"), int_array(seqlen, "seqlen")
    try:
        shape = np.broadcast_shapes(np.shape(h_q_s_q), np.shape(seqlen))
    except ValueError:
        raise ValueError(f"h_q_s_q {np.shape(h_q_s_q)} and seqlen {np.shape(seqlen)} must broadcast") from None
    at_most(np.prod(shape, dtype=float), "h_q_s_q and seqlen", MAX_ELEMENTS, "entries")
    F = published("flashmla.h800_throttled_flops").value if flops is None else positive_float(flops, "flops")
    B = published("flashmla.h800_bandwidth").value if bandwidth is None else positive_float(bandwidth, "bandwidth")
    r, n = np.asarray(h_q_s_q, dtype=float), np.asarray(seqlen, dtype=float)
    d_qk, d_v, eb = positive_int(d_qk, "d_qk"), positive_int(d_v, "d_v"), positive_int(dtype_bytes, "dtype_bytes")
    tokens = positive_int(batch, "batch") * n       # every count <= 2^53: FLOPs and bytes stay below 2^220
    fl = tokens * r * 2 * (d_qk + d_v)
    by = np.broadcast_to(tokens * d_qk * eb, np.shape(fl)).astype(float)
    with np.errstate(over="ignore"):
        tc, tm = fl / F, by / B
    _finite(tc, "the FLOPs (batch, seqlen, h_q_s_q, d_qk, d_v) over flops", _RATES)
    _finite(tm, "the bytes (batch, seqlen, d_qk, dtype_bytes) over bandwidth", _RATES)
    return {"time": np.maximum(tc, tm), "compute_time": tc, "memory_time": tm, "bound_compute": tc > tm,
            "flops": fl, "bytes": by}
