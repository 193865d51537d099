"""Precision of the online-softmax statistics (lecture §3.4).

Real kernels keep m, l and the output accumulator in FP32 and feed P to the second matmul in FP16/BF16.
This module shows why: a running sum l accumulated in a 16-bit format stagnates once it is large
(adding a term smaller than half the spacing of representable numbers changes nothing), and FP16's
``exp`` overflows at ``x = ln(65504) ~ 11.09``, which is one more reason to subtract the max.

BF16 is emulated exactly: float32 rounded to nearest-even on the top 16 bits (numpy has no bfloat16).
Sources: IEEE 754 binary16; Google's bfloat16 format; Higham, "Accuracy and Stability of Numerical
Algorithms", §4 (stagnation of recursive summation); lecture §3.4.
"""
from __future__ import annotations

import struct

import numpy as np

from .checks import as_vector, choice, positive_int

__all__ = ["DTYPES", "round_to", "accumulate", "running_sum", "l_accumulation_error", "exp_overflow_threshold"]

#: Accumulation formats supported here, with their largest finite value.
DTYPES = {"fp16": float(np.finfo(np.float16).max), "bf16": 3.3895313892515355e38, "fp32": float(np.finfo(np.float32).max)}


def round_to(x, dtype: str) -> np.ndarray:
    """Round ``x`` (array-like) to ``dtype`` in {"fp16", "bf16", "fp32"}; returns float64 values."""
    choice(dtype, "dtype", tuple(DTYPES))
    x = np.asarray(x, dtype=np.float64)
    if dtype == "fp16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float64)
    f = x.astype(np.float32)
    if dtype == "fp32":
        return f.astype(np.float64)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return rounded.view(np.float32).astype(np.float64)


def accumulate(values, dtype: str) -> float:
    """Sum ``values`` left to right, rounding the running sum to ``dtype`` after every addition.

    This is how a kernel that keeps ``l`` in a register of that format accumulates it.
    Args: values: 1-D array of floats. dtype: "fp16", "bf16" or "fp32".
    Returns: the accumulated sum as a Python float.
    Raises: ValueError for an unknown dtype or empty/NaN input.
    """
    v = round_to(as_vector(values, "values"), dtype)
    if dtype == "fp16":
        return float(np.add.accumulate(v.astype(np.float16))[-1])
    if dtype == "fp32":
        return float(np.add.accumulate(v.astype(np.float32))[-1])
    return float(running_sum(v, "bf16")[-1])


def _bf16(x: float) -> float:
    (b,) = struct.unpack("<I", struct.pack("<f", x))
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", b))[0]


def running_sum(values, dtype: str) -> np.ndarray:
    """Every partial sum of :func:`accumulate` (the running l after each term), as float64 array."""
    v = round_to(as_vector(values, "values"), dtype)
    if dtype == "fp16":
        return np.add.accumulate(v.astype(np.float16)).astype(np.float64)
    if dtype == "fp32":
        return np.add.accumulate(v.astype(np.float32)).astype(np.float64)
    out = np.empty(v.size)
    acc = 0.0
    for i, t in enumerate(v.tolist()):            # bf16: round after every add (exactly as a register would)
        acc = _bf16(acc + t)
        out[i] = acc
    return out


def l_accumulation_error(S: int = 8192, dtype: str = "fp16", *, d: int = 64, seed: int = 0) -> dict:
    """Relative error of l = sum_j exp(x_j - m) accumulated in ``dtype`` for one row of S scores.

    Scores are ``q . k_j / sqrt(d)`` for standard-normal q and keys (the usual attention statistics).
    Args: S: row length (int >= 1). dtype: "fp16", "bf16" or "fp32". d: head dim. seed: RNG seed.
    Returns: dict with ``exact`` (float64 sum), ``accumulated`` and ``rel_error``.
    """
    S, d = positive_int(S, "S"), positive_int(d, "d")
    choice(dtype, "dtype", tuple(DTYPES))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((S, d)) @ rng.standard_normal(d) / np.sqrt(d)
    terms = np.exp(x - x.max())
    exact = float(terms.sum())
    acc = accumulate(terms, dtype)
    return {"exact": exact, "accumulated": acc, "rel_error": abs(acc - exact) / exact}


def exp_overflow_threshold(dtype: str = "fp16") -> float:
    """Smallest x at which ``exp(x)`` exceeds the largest finite value of ``dtype``: ``ln(max)``.

    FP16: ln(65504) = 11.0898; BF16: 88.72; FP32: 88.72.
    """
    choice(dtype, "dtype", tuple(DTYPES))
    return float(np.log(DTYPES[dtype]))
