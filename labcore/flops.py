"""Operation counts: matmul FLOPs vs non-matmul operations (lecture §2, §3.3).

Counting convention: a multiply-add is 2 FLOP. Non-matmul operations (max, subtract, exp, add,
multiply, divide on CUDA cores) count 1 each. Forward attention for one head does two matmuls,
``S = Q K^T`` and ``O = P V``: ``4 N_q N_k d`` FLOP.

Non-matmul work of the tiled forward (one head, keys in blocks of ``block_kv``), per score element:
max, subtract, exp, row-sum (4); per (query row, key block): the running-statistics update (new max,
alpha = exp, rescale of l, add to l: 5 scalars) plus, on the d-wide output row,
- per-step normalisation (FlashAttention Algorithm 1, line 12): O <- diag(l_new)^-1 (diag(l) e^{m-m_new} O
  + e^{m~-m_new} P~ V_j): scale O, scale P~V, add, divide = 4 d;
- deferred normalisation (FlashAttention-2 §3.1): acc <- alpha acc (+ the matmul's own accumulate) = d,
  and a single divide by l at the end (d per row).
The softmax scale is folded into Q (as real kernels do) and not counted.

Sources: FlashAttention-2 (Dao 2023) §3.1; lecture §3.3 (1.6% and 1.0% for N = 4096, d = 128).
"""
from __future__ import annotations

import math

from ._checks import choice, positive_int

__all__ = ["attention_matmul_flops", "nonmatmul_ops", "nonmatmul_fraction", "standard_attention_intensity", "roofline_time"]


def attention_matmul_flops(N_q: int, N_k: int, d: int, *, d_v: int | None = None) -> int:
    """Matmul FLOPs of one head's forward: ``2 N_q N_k d`` (Q K^T) + ``2 N_q N_k d_v`` (P V).

    Args: N_q, N_k, d, d_v: positive ints (d_v defaults to d). Returns: int, FLOP.
    Raises: TypeError/ValueError for non-positive or non-integer sizes.
    Source: lecture §2 (4 N^2 d); FlashAttention paper §3.2.
    """
    N_q, N_k, d = positive_int(N_q, "N_q"), positive_int(N_k, "N_k"), positive_int(d, "d")
    d_v = d if d_v is None else positive_int(d_v, "d_v")
    return 2 * N_q * N_k * d + 2 * N_q * N_k * d_v


def nonmatmul_ops(N_q: int, N_k: int, d: int, *, block_kv: int = 128, normalisation: str = "deferred") -> dict:
    """Non-matmul operations of one head's tiled forward, by cause (see the module docstring).

    Args:
        N_q, N_k, d: positive ints. block_kv: keys per block (B_c, default 128 = FlashAttention-2's tile for
            d = 128). normalisation: ``"per-step"`` (FlashAttention Algorithm 1) or ``"deferred"``
            (FlashAttention-2).
    Returns:
        dict with ``softmax`` (4 per score), ``statistics`` (5 per row and key block), ``output``
        (rescaling of the output row) and ``total``; all ints.
    Raises: ValueError for an unknown normalisation or bad sizes.
    """
    N_q, N_k, d = positive_int(N_q, "N_q"), positive_int(N_k, "N_k"), positive_int(d, "d")
    block_kv = positive_int(block_kv, "block_kv")
    choice(normalisation, "normalisation", ("per-step", "deferred"))
    T_c = math.ceil(N_k / block_kv)
    softmax = 4 * N_q * N_k
    stats = 5 * N_q * T_c
    if normalisation == "per-step":
        output = 4 * d * N_q * T_c
    else:
        output = d * N_q * T_c + d * N_q
    return {"softmax": softmax, "statistics": stats, "output": output, "total": softmax + stats + output}


def nonmatmul_fraction(N: int, d: int, *, block_kv: int = 128, normalisation: str = "deferred", gpu=None) -> dict:
    """Non-matmul operations as a fraction of matmul FLOPs, and of matmul *time* on ``gpu``.

    On a GPU a non-matmul FLOP runs on CUDA cores at ``fp32_flops`` while matmuls run on tensor cores
    at ``tensor_flops``: the time fraction is the op fraction times ``tensor_flops / fp32_flops``
    (16x on A100: 312 vs 19.5 TFLOP/s, FlashAttention-2 §3.1).

    Args:
        N: sequence length (N_q = N_k = N). d, block_kv, normalisation: as :func:`nonmatmul_ops`.
        gpu: preset name or GPU (default ``"A100"``); must publish ``fp32_flops``.
    Returns:
        dict ``ops_fraction``, ``cost_ratio``, ``time_fraction`` (floats).
    Raises:
        ValueError: the GPU has no published FP32 throughput.
    """
    from .hardware import get_gpu

    g = get_gpu("A100" if gpu is None else gpu)
    if g.nonmatmul_cost_ratio is None:
        raise ValueError(f"{g.name} has no published FP32 non-matmul throughput; choose another GPU")
    frac = nonmatmul_ops(N, N, d, block_kv=block_kv, normalisation=normalisation)["total"] / attention_matmul_flops(N, N, d)
    return {"ops_fraction": frac, "cost_ratio": g.nonmatmul_cost_ratio, "time_fraction": frac * g.nonmatmul_cost_ratio}


def standard_attention_intensity(N: int, d: int, *, dtype_bytes: int = 2) -> float:
    """Arithmetic intensity of Algorithm 0 in FLOP/byte: ``4 N^2 d / ((4 N d + 4 N^2) * dtype_bytes)``.

    Tends to ``d / 2`` (FP16) once N >> d: 32 FLOP/byte at d = 64, far below an A100's ridge of ~200.
    Args: N, d: positive ints; dtype_bytes: bytes per element (2 = FP16/BF16).
    Source: lecture §2; FlashAttention paper §2 and Theorem 2.
    """
    from .hbm import standard_attention_io

    dtype_bytes = positive_int(dtype_bytes, "dtype_bytes")
    return attention_matmul_flops(N, N, d) / (standard_attention_io(N, d) * dtype_bytes)


def roofline_time(flops: float, bytes_moved: float, gpu) -> dict:
    """Roofline lower bounds for a kernel: compute ``flops / tensor_flops``, memory ``bytes / hbm_bandwidth``.

    Returns dict ``compute_s``, ``memory_s``, ``time_s`` (their max, perfect overlap), ``bound``
    ("compute" or "memory") and ``intensity`` (FLOP/byte). Source: Williams, Waterman, Patterson 2009.
    """
    from .hardware import get_gpu
    from ._checks import positive_float

    g = get_gpu(gpu)
    flops = positive_float(flops, "flops", allow_zero=True)
    bytes_moved = positive_float(bytes_moved, "bytes_moved")
    c, m = flops / g.tensor_flops, bytes_moved / g.hbm_bandwidth
    return {"compute_s": c, "memory_s": m, "time_s": max(c, m), "bound": "compute" if c >= m else "memory",
            "intensity": flops / bytes_moved}
