"""Low-precision formats: correctly rounded casts, sequential accumulation of l, exp overflow (lecture §3.4).

Real kernels keep m, l and the output accumulator in FP32 and feed P to the second matmul in FP16/BF16
(FlashAttention-3 also in FP8). This module shows why: a running sum l accumulated in a 16-bit format
stagnates once it is large (adding a term smaller than half the spacing of representable numbers changes
nothing), and FP16's ``exp`` overflows at ``x = ln(65504) ~ 11.09``, which is one more reason to subtract
the max.

The formats are real NumPy dtypes: ``numpy.float16`` and ``numpy.float32``, and ``bfloat16``,
``float8_e4m3fn`` and ``float8_e5m2`` from ``ml_dtypes`` (the dtype extensions JAX uses). Names used here
(:data:`FORMATS`): ``"fp32"``, ``"fp16"``, ``"bf16"``, ``"fp8_e4m3"``, ``"fp8_e5m2"``.

Rounding is round-to-nearest-even from float64 in ONE step. NumPy's float64 -> float16 and float64 ->
float32 casts do that. ml_dtypes' float64 -> bfloat16/float8 casts do not: they round to float32 first and
then again, so ``1 + 2**-8 + 2**-30`` (just above the BF16 halfway point between 1 and 1 + 2**-7) becomes
1.0 instead of 1.0078125. :func:`cast` therefore rounds float64 to float32 *to odd* (truncate, then set the
last bit if anything was lost) and lets ml_dtypes round that to the narrow format: with at least two more
bits in the intermediate format than in the target, round-to-odd followed by round-to-nearest-even equals
one round-to-nearest-even (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved
algorithms using rounding to odd", IEEE Trans. Computers 57(4), 2008, Theorem 1). Float32 has 24 bits of
significand; BF16 has 8, E4M3 4, E5M2 3.

Overflow. Every IEEE-like format here (FP32, FP16, BF16, E5M2) rounds a value beyond its largest finite
number (by at least half a unit in the last place) to ``±inf``, and so does a sum that overflows.
``fp8_e4m3`` is ``float8_e4m3fn`` (OCP 8-bit floating point spec, v1.0, 2023, the E4M3 NVIDIA Hopper
uses): it has **no infinity**; its largest finite value is 448, values that round beyond it (|x| > 464,
and ``±inf``) become **NaN**, as ml_dtypes defines the cast. Pass ``saturate=True`` to clamp to ±448
instead (what the hardware's ``cvt ... .satfinite`` conversion does, and what FP8 attention kernels use).

Sources: IEEE 754-2019 (binary16/binary32, round-to-nearest-even, overflow); Google's bfloat16 format;
OCP 8-bit Floating Point Specification (OFP8) v1.0 (E4M3, E5M2); ml_dtypes (github.com/jax-ml/ml-dtypes);
Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §4 (stagnation of recursive summation);
lecture §3.4.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .checks import as_real, as_vector, choice, flag, positive_int

__all__ = ["FloatFormat", "FORMATS", "DTYPES", "cast", "round_to", "accumulate", "running_sum",
           "score_terms", "l_accumulation_error", "exp_overflow_threshold"]


@dataclass(frozen=True)
class FloatFormat:
    """One floating-point format: its NumPy dtype and the numbers that describe it.

    Fields:
        name: the name used in labcore (``"fp16"``, ``"bf16"``, ...).
        dtype: the NumPy dtype (``numpy.float16``, ``ml_dtypes.bfloat16``, ...).
        bits: storage size in bits.
        mantissa_bits: explicit fraction bits (precision is ``mantissa_bits + 1`` bits).
        max: largest finite value.
        tiny: smallest positive normal value.
        smallest_subnormal: smallest positive value.
        eps: spacing of the numbers just above 1 (``2**-mantissa_bits``).
        has_inf: whether the format has ±infinity (``fp8_e4m3`` does not: overflow gives NaN).
        source: where the format is defined.
    """

    name: str
    dtype: np.dtype
    bits: int
    mantissa_bits: int
    max: float
    tiny: float
    smallest_subnormal: float
    eps: float
    has_inf: bool
    source: str


def _format(name: str, dtype, has_inf: bool, source: str) -> FloatFormat:
    fi = ml_dtypes.finfo(dtype) if dtype not in (np.float16, np.float32) else np.finfo(dtype)
    return FloatFormat(name, np.dtype(dtype), int(fi.bits), int(fi.nmant), float(fi.max), float(fi.tiny),
                       float(fi.smallest_subnormal), float(fi.eps), has_inf, source)


#: Supported formats by name (widest first).
FORMATS: dict[str, FloatFormat] = {f.name: f for f in (
    _format("fp32", np.float32, True, "IEEE 754 binary32"),
    _format("fp16", np.float16, True, "IEEE 754 binary16"),
    _format("bf16", ml_dtypes.bfloat16, True, "Google bfloat16 (ml_dtypes.bfloat16)"),
    _format("fp8_e4m3", ml_dtypes.float8_e4m3fn, False, "OCP OFP8 v1.0 E4M3 (ml_dtypes.float8_e4m3fn)"),
    _format("fp8_e5m2", ml_dtypes.float8_e5m2, True, "OCP OFP8 v1.0 E5M2 (ml_dtypes.float8_e5m2)"),
)}

#: Largest finite value of each format (kept for callers of the earlier API).
DTYPES: dict[str, float] = {name: f.max for name, f in FORMATS.items()}

_VIA_FLOAT32_TO_ODD = ("bf16", "fp8_e4m3", "fp8_e5m2")   # ml_dtypes' float64 casts would round twice
_NARROW_DTYPES = {f.dtype for f in FORMATS.values()}   # float32 included


def _as_real_array(x, name: str) -> np.ndarray:
    """``x`` as an array: float32 and the FORMATS' narrow dtypes as they are (widened exactly to float32),
    anything else as float64 (``labcore.checks.as_real``)."""
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype in _NARROW_DTYPES:
        return np.asarray(x, dtype=np.float32)                  # exact: every narrow format fits in float32
    return as_real(x, name)


def _float32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded to odd: truncate toward zero, then set the last bit if the value was inexact.

    NaN stays NaN, ±inf stays ±inf; finite values beyond float32's range give ±float32 max with its (odd)
    last bit, which any narrower format then rounds to its overflow result.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
    bits = f.view(np.uint32)
    # round-to-nearest went away from zero: step one unit toward zero (sign-magnitude bits; inf -> max)
    bits = bits - (np.abs(f.astype(np.float64)) > np.abs(x)).astype(np.uint32)
    inexact = (bits.view(np.float32).astype(np.float64) != x) & ~np.isnan(x)
    return (bits | inexact.astype(np.uint32)).view(np.float32)


def cast(x, dtype: str, *, saturate: bool = False) -> np.ndarray:
    """``x`` rounded to the format ``dtype`` (one round-to-nearest-even from float64), as an array of that dtype.

    Args:
        x: real number or array-like of any shape (NaN and ±inf allowed); float32 arrays and arrays in a
            FORMATS dtype are rounded from their own values, everything else from float64.
        dtype: one of :data:`FORMATS`: ``"fp32"``, ``"fp16"``, ``"bf16"``, ``"fp8_e4m3"``, ``"fp8_e5m2"``.
        saturate: if True, values beyond the largest finite value (and ±inf) become ±max instead of
            ±inf (or NaN for ``fp8_e4m3``); NaN stays NaN. Default False (IEEE overflow).

    Returns:
        ndarray of shape ``np.shape(x)`` and dtype ``FORMATS[dtype].dtype``. Overflow gives ±inf in every
        format with an infinity; in ``fp8_e4m3`` (no infinity) it gives NaN, as ml_dtypes defines it.

    Raises:
        TypeError: ``x`` is not real numbers (strings, None, objects) or ``dtype`` is not a string.
        ValueError: unknown ``dtype``.

    Source:
        IEEE 754-2019 §4.3 (round to nearest, ties to even) and §7.4 (overflow); OCP OFP8 v1.0;
        round-to-odd: Boldo & Melquiond, IEEE Trans. Computers 57(4), 2008.
    """
    fmt = FORMATS[choice(dtype, "dtype", tuple(FORMATS))]
    saturate = flag(saturate, "saturate")
    a = _as_real_array(x, "x")
    if saturate:
        a = np.clip(a, -fmt.max, fmt.max)               # NaN passes through np.clip unchanged
    if a.dtype == np.float64 and dtype in _VIA_FLOAT32_TO_ODD:
        a = _float32_round_to_odd(a)                   # from float32, ml_dtypes' cast is one rounding
    with np.errstate(over="ignore", invalid="ignore"):
        return a.astype(fmt.dtype)


def round_to(x, dtype: str, *, saturate: bool = False) -> np.ndarray:
    """``x`` rounded to ``dtype`` (correctly: one round-to-nearest-even), returned as float64 values.

    ``round_to(1 + 2**-8 + 2**-30, "bf16")`` is 1.0078125 (the value lies just above the halfway point
    between 1 and 1 + 2**-7); ``round_to(1e39, "bf16")`` is inf; ``round_to(500, "fp8_e4m3")`` is NaN
    (E4M3 has no infinity) and ``round_to(500, "fp8_e4m3", saturate=True)`` is 448.

    Args, Raises, Source: as :func:`cast`.

    Returns:
        float64 ndarray of shape ``np.shape(x)`` (a 0-d array for a scalar).
    """
    return cast(x, dtype, saturate=saturate).astype(np.float64)


def _narrow_terms(values, dtype: str) -> np.ndarray:
    choice(dtype, "dtype", tuple(FORMATS))
    return cast(as_vector(values, "values"), dtype)


def running_sum(values, dtype: str) -> np.ndarray:
    """Every partial sum of :func:`accumulate` (the running l after each term), as a float64 array.

    Args:
        values: 1-D array-like of N real numbers (no NaN).
        dtype: a name in :data:`FORMATS`.

    Returns:
        float64 array of shape (N,); entry i is the sum of the first i + 1 terms, rounded to ``dtype``
        after every addition. Once it overflows it stays ±inf (NaN in ``fp8_e4m3``, which has no inf).

    Raises:
        TypeError/ValueError: non-real, empty, non-1-D or NaN ``values``, or an unknown ``dtype``.

    Source:
        Higham, "Accuracy and Stability of Numerical Algorithms", §4.2 (recursive summation).
    """
    v = _narrow_terms(values, dtype)
    # NumPy adds two narrow values in float32 and rounds once to the narrow format; float32 has at least
    # 2p + 2 bits for every p-bit format here, so each addition is correctly rounded (Figueroa, "When is
    # double rounding innocuous?", SIGNUM Newsletter 30(3), 1995).
    with np.errstate(over="ignore", invalid="ignore"):
        return np.add.accumulate(v).astype(np.float64)


def accumulate(values, dtype: str) -> float:
    """Sum ``values`` left to right, rounding each term and the running sum to ``dtype`` after every addition.

    This is how a kernel that keeps ``l`` in a register of that format accumulates it.
    ``accumulate([2e38, 2e38], "bf16")`` is ``inf`` (overflow), like FP16's ``accumulate([6e4, 6e4], "fp16")``.

    Args: values: 1-D array-like of real numbers (no NaN). dtype: a name in :data:`FORMATS`.

    Returns: the accumulated sum as a Python float (±inf after overflow; NaN in ``fp8_e4m3``).

    Raises: TypeError / ValueError for an unknown ``dtype`` or non-real, empty, non-1-D or NaN input.

    Source: as :func:`running_sum`.
    """
    return float(running_sum(values, dtype)[-1])


def score_terms(n_keys: int, *, d: int = 64, seed: int = 0) -> np.ndarray:
    """The terms ``exp(x_j - max x)`` of one row's softmax denominator l, scores ``x_j = q . k_j / sqrt(d)``.

    q and the keys are standard normal (the usual attention statistics), drawn from ``default_rng(seed)``.

    Args: n_keys: row length (number of keys, int >= 1). d: head dim (int >= 1). seed: RNG seed.

    Returns: float64 array of shape ``(n_keys,)``, every term in (0, 1], the row maximum's term exactly 1.

    Raises: ValueError for n_keys or d < 1.

    Source: lecture §3.4 (the safe softmax's terms; FlashAttention, Dao et al. 2022, Sec. 3.1).
    """
    n_keys, d = positive_int(n_keys, "n_keys"), positive_int(d, "d")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_keys, d)) @ rng.standard_normal(d) / np.sqrt(d)
    return np.exp(x - x.max())


def l_accumulation_error(n_keys: int = 8192, dtype: str = "fp16", *, d: int = 64, seed: int = 0) -> dict:
    """Relative error of l = sum_j exp(x_j - m) accumulated in ``dtype`` for one row of ``n_keys`` scores.

    Scores are ``q . k_j / sqrt(d)`` for standard-normal q and keys (the usual attention statistics).

    Args: n_keys: row length (number of keys, int >= 1). dtype: a name in :data:`FORMATS`. d: head dim. seed: RNG seed.

    Returns: dict with ``exact`` (float64 sum), ``accumulated`` and ``rel_error``.

    Raises: ValueError for n_keys or d < 1 or an unknown dtype.

    Source: lecture §3.4; the terms of :func:`score_terms`, recursive summation as in :func:`running_sum`.
    """
    choice(dtype, "dtype", tuple(FORMATS))
    terms = score_terms(n_keys, d=d, seed=seed)
    exact = float(terms.sum())
    acc = accumulate(terms, dtype)
    return {"exact": exact, "accumulated": acc, "rel_error": abs(acc - exact) / exact}


def exp_overflow_threshold(dtype: str = "fp16") -> float:
    """Smallest float64 ``x`` at which ``exp(x)``, rounded to ``dtype`` (:func:`round_to`), is no longer finite.

    The threshold is where the *rounded* result changes, not ``ln(max)``: round-to-nearest-even sends values a
    little above ``max`` down to ``max``. FP16: values in [65504, 65520) round to 65504 and the midpoint 65520
    rounds up (65504's last bit is odd), so ``exp(x)`` overflows from x = ln 65520 = 11.090111 on (ln 65504 =
    11.089866 still gives 65504). E4M3, which has no infinity, goes to NaN only above 464 (the midpoint rounds
    down to 448, whose last bit is even): ln 464 = 6.1399. BF16 and FP32: 88.72; E5M2: ln 61440 = 11.03.
    Found by bisection over float64 ``x`` with the engine's own rounding, so it holds for every format.

    Args:
        dtype: a name in :data:`FORMATS`.
    Returns:
        float (``exp(x)`` rounds to a finite value for every float64 below it, and to inf or NaN at it).
    Raises:
        ValueError for an unknown dtype.

    Source:
        IEEE 754-2019 §4.3.1 (roundTiesToEven) and §7.4 (overflow) for binary16/binary32; bfloat16 as binary32 with 7
        fraction bits; OCP OFP8 v1.0 (E4M3 overflows to NaN, E5M2 to infinity).
    """
    fmt = FORMATS[choice(dtype, "dtype", tuple(FORMATS))]

    def overflows(x: float) -> bool:
        return not np.isfinite(round_to(np.exp(x), dtype)).all()

    lo, hi = math.log(fmt.max), math.log(fmt.max) + math.log(2.0)   # exp(lo) = max is finite; exp(hi) = 2 max is not
    while math.nextafter(lo, math.inf) < hi:
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            mid = math.nextafter(lo, math.inf)
        lo, hi = (lo, mid) if overflows(mid) else (mid, hi)
    return hi
