"""Operation counts: matmul FLOPs vs non-matmul operations (lecture §2, §3.3).

Counting convention: a multiply-add is 2 FLOP. Non-matmul operations (max, subtract, exp, add,
multiply, divide on CUDA cores) count 1 each. Forward attention for one head does two matmuls,
``S = Q K^T`` and ``O = P V``: ``4 N_q N_k d`` FLOP.

This module is the one place that counts the non-matmul work of a tiled attention forward (one head,
keys in blocks of B_c; :func:`labcore.flash.attention_flops` uses the same count for its causal and
loop-order variants):

- per score element: max, subtract, exp, row-sum: 4;
- per (query row, key block) pair, the running statistics:
  deferred normalisation (FlashAttention-2 §3.1): m_new = max(m, rowmax), alpha = exp(m - m_new)
  (subtract, exp), l = alpha l + rowsum (multiply, add): 5;
  per-step normalisation (FlashAttention Algorithm 1, line 11): m_new (1), l_new = e^{m - m_new} l +
  e^{m~ - m_new} l~ (2 subtracts, 2 exps, 2 multiplies, 1 add), 1 / l_new (1): 9;
- per pair and output element: deferred: acc <- alpha acc (1; the P V accumulate is matmul work);
  per-step (Algorithm 1, line 12): O <- diag(l_new)^-1 (diag(l) e^{m - m_new} O + e^{m~ - m_new} P~ V_j):
  scale O, scale P~V, add, divide: 4;
- at the end, per row: deferred: divide the d outputs by l (d); both: lse = m + log l (2).

The softmax scale is folded into Q (as real kernels do) and not counted.

Sources: FlashAttention (Dao et al. 2022) Algorithm 1; FlashAttention-2 (Dao 2023) §3.1; lecture §3.3
(1.6% and 1.0% for N = 4096, d = 128).
"""
from __future__ import annotations

import math

from .checks import choice, positive_int

__all__ = ["attention_matmul_flops", "forward_nonmatmul_terms", "nonmatmul_ops", "nonmatmul_fraction",
           "standard_attention_intensity", "roofline_time"]


def attention_matmul_flops(N_q: int, N_k: int, d: int, *, d_v: int | None = None) -> int:
    """Matmul FLOPs of one head's forward: ``2 N_q N_k d`` (Q K^T) + ``2 N_q N_k d_v`` (P V).

    Args: N_q, N_k, d, d_v: positive ints (d_v defaults to d). Returns: int, FLOP.
    Raises: TypeError/ValueError for non-positive or non-integer sizes.
    Source: lecture §2 (4 N^2 d); FlashAttention paper §3.2.
    """
    N_q, N_k, d = positive_int(N_q, "N_q"), positive_int(N_k, "N_k"), positive_int(d, "d")
    d_v = d if d_v is None else positive_int(d_v, "d_v")
    return 2 * N_q * N_k * d + 2 * N_q * N_k * d_v


def forward_nonmatmul_terms(entries: int, row_blocks: int, N_q: int, d: int, normalisation: str) -> dict:
    """Non-matmul operations of a tiled attention forward, by cause, from the work it visits.

    Args:
        entries: score elements computed (N_q x N_k without a mask; causal kernels compute whole
            diagonal blocks). row_blocks: (query row, key block) pairs visited. N_q: query rows. d: head
            dimension. All ints >= 0 (N_q, d >= 1). normalisation: ``"per-step"`` (FlashAttention
            Algorithm 1) or ``"deferred"`` (FlashAttention-2).
    Returns:
        dict of ints: ``softmax`` (4 per entry), ``statistics`` (5 or 9 per pair), ``output`` (1 or 4
        per pair and output element, plus the final divide when deferred), ``lse`` (2 per row), ``total``.
    Raises:
        TypeError/ValueError: sizes that are not integers in range; an unknown normalisation.
    Source: the module docstring lists every term (FlashAttention Algorithm 1; FlashAttention-2 §3.1).
    """
    entries = positive_int(entries, "entries", minimum=0)
    row_blocks = positive_int(row_blocks, "row_blocks", minimum=0)
    N_q, d = positive_int(N_q, "N_q"), positive_int(d, "d")
    deferred = choice(normalisation, "normalisation", ("per-step", "deferred")) == "deferred"
    softmax = 4 * entries
    stats = (5 if deferred else 9) * row_blocks
    output = d * row_blocks + d * N_q if deferred else 4 * d * row_blocks
    lse = 2 * N_q
    return {"softmax": softmax, "statistics": stats, "output": output, "lse": lse,
            "total": softmax + stats + output + lse}


def nonmatmul_ops(N_q: int, N_k: int, d: int, *, block_kv: int = 128, normalisation: str = "deferred") -> dict:
    """Non-matmul operations of one head's tiled forward without a mask, by cause.

    Every query row visits all ``T_c = ceil(N_k / block_kv)`` key blocks; the terms are those of
    :func:`forward_nonmatmul_terms` (listed in the module docstring).

    Args:
        N_q, N_k, d: positive ints. block_kv: keys per block (B_c, default 128 = FlashAttention-2's tile for
            d = 128). normalisation: ``"per-step"`` (FlashAttention Algorithm 1) or ``"deferred"``
            (FlashAttention-2).
    Returns:
        dict with ``softmax``, ``statistics``, ``output``, ``lse`` and ``total``; all ints.
    Raises: TypeError/ValueError for an unknown normalisation or bad sizes.
    Source: FlashAttention-2 §3.1; lecture §3.3.
    """
    N_q, N_k, d = positive_int(N_q, "N_q"), positive_int(N_k, "N_k"), positive_int(d, "d")
    block_kv = positive_int(block_kv, "block_kv")
    return forward_nonmatmul_terms(N_q * N_k, N_q * math.ceil(N_k / block_kv), N_q, d, normalisation)


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

    N, d, dtype_bytes = positive_int(N, "N"), positive_int(d, "d"), positive_int(dtype_bytes, "dtype_bytes")
    return attention_matmul_flops(N, N, d) / (standard_attention_io(N, d) * dtype_bytes)


def roofline_time(flops: float, bytes_moved: float, gpu) -> dict:
    """Roofline lower bounds for a kernel: compute ``flops / tensor_flops``, memory ``bytes / hbm_bandwidth``.

    Returns dict ``compute_s``, ``memory_s``, ``time_s`` (their max, perfect overlap), ``bound``
    ("compute" or "memory") and ``intensity`` (FLOP/byte). Source: Williams, Waterman, Patterson 2009.
    """
    from .hardware import get_gpu
    from .checks import positive_float

    g = get_gpu(gpu)
    flops = positive_float(flops, "flops", allow_zero=True)
    bytes_moved = positive_float(bytes_moved, "bytes_moved")
    c, m = flops / g.tensor_flops, bytes_moved / g.hbm_bandwidth
    return {"compute_s": c, "memory_s": m, "time_s": max(c, m), "bound": "compute" if c >= m else "memory",
            "intensity": flops / bytes_moved}
