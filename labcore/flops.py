"""Operation counts: matmul FLOPs vs non-matmul operations (lecture §2, §3.3).

Counting convention: a multiply-add is 2 FLOP. Non-matmul operations (max, subtract, exp, add,
multiply, divide on CUDA cores) count 1 each. Forward attention for one head does two matmuls,
``S = Q K^T`` and ``O = P V``: ``4 N_q N_k d`` FLOP.

This module is the one place that counts FLOPs (byte and element traffic is counted in
:mod:`labcore.hbm`): matmul FLOPs (:func:`attention_matmul_flops`), whole passes of standard and
FlashAttention, forward and backward, causal or not (:func:`attention_flops`, :class:`AttentionFlops`),
and the non-matmul work of a tiled attention forward (one head, keys in blocks of B_c), whose
normalisation follows from the loop order (``"fa1"`` per step, ``"fa2"`` deferred):

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

from dataclasses import dataclass

from .checks import LOOP_ORDERS, cdiv, choice, flag, key_count, positive_float, positive_int
from .hbm import causal_block_counts, standard_attention_io

__all__ = ["attention_matmul_flops", "forward_nonmatmul_terms", "nonmatmul_ops", "nonmatmul_fraction",
           "AttentionFlops", "attention_flops", "standard_attention_intensity", "roofline_time"]


def attention_matmul_flops(N_q: int, N_k: int, d: int, *, d_v: int | None = None) -> int:
    """Matmul FLOPs of one head's forward: ``2 N_q N_k d`` (Q K^T) + ``2 N_q N_k d_v`` (P V).

    Args:
        N_q, N_k, d, d_v: positive ints (d_v defaults to d).
    Returns:
        int, FLOP.
    Raises:
        TypeError/ValueError for non-positive or non-integer sizes.
    Source:
        lecture §2 (4 N^2 d); FlashAttention paper §3.2.
    """
    N_q, N_k, d = positive_int(N_q, "N_q"), positive_int(N_k, "N_k"), positive_int(d, "d")
    d_v = d if d_v is None else positive_int(d_v, "d_v")
    return 2 * N_q * N_k * d + 2 * N_q * N_k * d_v


def forward_nonmatmul_terms(entries: int, row_blocks: int, N_q: int, d: int, *, loop_order: str) -> dict:
    """Non-matmul operations of a tiled attention forward, by cause, from the work it visits.

    Args:
        entries: score elements computed (N_q x N_k without a mask; causal kernels compute whole diagonal blocks).
        row_blocks: (query row, key block) pairs visited.
        N_q: query rows.
        d: head dimension. All ints >= 0 (N_q, d >= 1).
        loop_order: ``"fa1"`` (FlashAttention Algorithm 1, per-step normalisation) or ``"fa2"`` (FlashAttention-2,
            deferred normalisation).
    Returns:
        dict of ints: ``softmax`` (4 per entry), ``statistics`` (5 or 9 per pair), ``output`` (1 or 4
        per pair and output element, plus the final divide when deferred), ``lse`` (2 per row), ``total``.
    Raises:
        TypeError/ValueError: sizes that are not integers in range; an unknown loop_order.
    Source: the module docstring lists every term (FlashAttention Algorithm 1; FlashAttention-2 §3.1).
    """
    entries = positive_int(entries, "entries", minimum=0)
    row_blocks = positive_int(row_blocks, "row_blocks", minimum=0)
    N_q, d = positive_int(N_q, "N_q"), positive_int(d, "d")
    deferred = choice(loop_order, "loop_order", LOOP_ORDERS) == "fa2"
    softmax = 4 * entries
    stats = (5 if deferred else 9) * row_blocks
    output = d * row_blocks + d * N_q if deferred else 4 * d * row_blocks
    lse = 2 * N_q
    return {"softmax": softmax, "statistics": stats, "output": output, "lse": lse,
            "total": softmax + stats + output + lse}


def nonmatmul_ops(N_q: int, N_k: int, d: int, *, block_kv: int = 128, loop_order: str = "fa2") -> dict:
    """Non-matmul operations of one head's tiled forward without a mask, by cause.

    Every query row visits all ``T_c = ceil(N_k / block_kv)`` key blocks; the terms are those of
    :func:`forward_nonmatmul_terms` (listed in the module docstring).

    Args:
        N_q, N_k, d: positive ints.
        block_kv: keys per block (B_c, flash-attn's kBlockN; default 128 = FlashAttention-2's tile for d = 128).
        loop_order: ``"fa1"`` (FlashAttention Algorithm 1, per-step normalisation) or ``"fa2"`` (FlashAttention-2,
            deferred normalisation).
    Returns:
        dict with ``softmax``, ``statistics``, ``output``, ``lse`` and ``total``; all ints.
    Raises:
        TypeError/ValueError for an unknown loop_order or bad sizes.
    Source:
        FlashAttention-2 §3.1; lecture §3.3.
    """
    N_q, N_k, d = positive_int(N_q, "N_q"), positive_int(N_k, "N_k"), positive_int(d, "d")
    block_kv = positive_int(block_kv, "block_kv")
    return forward_nonmatmul_terms(N_q * N_k, N_q * cdiv(N_k, block_kv), N_q, d, loop_order=loop_order)


def nonmatmul_fraction(N: int, d: int, *, block_kv: int = 128, loop_order: str = "fa2", gpu=None) -> dict:
    """Non-matmul operations as a fraction of matmul FLOPs, and of matmul *time* on ``gpu``.

    On a GPU a non-matmul FLOP runs on CUDA cores at ``fp32_flops`` while matmuls run on tensor cores
    at ``tensor_flops``: the time fraction is the op fraction times ``tensor_flops / fp32_flops``
    (16x on A100: 312 vs 19.5 TFLOP/s, FlashAttention-2 §3.1).

    Args:
        N: sequence length (N_q = N_k = N).
        d, block_kv, loop_order: as :func:`nonmatmul_ops`.
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
    frac = nonmatmul_ops(N, N, d, block_kv=block_kv, loop_order=loop_order)["total"] / attention_matmul_flops(N, N, d)
    return {"ops_fraction": frac, "cost_ratio": g.nonmatmul_cost_ratio, "time_fraction": frac * g.nonmatmul_cost_ratio}


# ----------------------------------------------------------------------------------------------------------
# FLOPs of whole attention passes (standard and FlashAttention, forward and backward)
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AttentionFlops:
    """FLOPs of one attention head, split into matrix-multiply (Tensor Core) and non-matmul work.

    Attributes:
        matmul: FLOP in matrix multiplies (2 per multiply-add).
        non_matmul: FLOP in exp, max, sums, rescales and divides (one per elementwise operation; see
            :func:`attention_flops`).
    """

    matmul: int
    non_matmul: int

    @property
    def total(self) -> int:
        """matmul + non_matmul FLOP."""
        return self.matmul + self.non_matmul

    def __add__(self, other):
        """Component-wise sum (e.g. forward + backward)."""
        return AttentionFlops(self.matmul + other.matmul, self.non_matmul + other.non_matmul)

    def scaled(self, k: int) -> "AttentionFlops":
        """This count times ``k`` (e.g. batch x heads)."""
        return AttentionFlops(self.matmul * k, self.non_matmul * k)


def attention_flops(N: int, d: int, *, pass_: str = "forward", algorithm: str = "standard",
                    causal: bool = False, loop_order: str = "fa2", block_q: int = 128,
                    block_kv: int = 128, N_k: int | None = None) -> AttentionFlops:
    """FLOPs of one attention head (N_q = N queries, N_k keys, head dimension d).

    Matmul FLOP (2 per multiply-add over the score entries computed, ``E``): forward, S = Q K^T and
    O = P V, ``4 E d``; standard backward, dV, dP, dQ, dK, ``8 E d``; FlashAttention backward, the same
    plus recomputing S, ``10 E d``. Forward + backward is therefore 6 vs 7 matmuls: flash does 7/6 of the
    standard FLOPs (lecture §5.2).
    ``E = N N_k`` for standard attention (it materialises the whole matrix, causal or not) and for
    non-causal flash; for causal flash, E counts every entry of the visited blocks (diagonal blocks are
    computed whole and masked), so E / (N N_k) is :func:`labcore.causal_block_fraction` for equal
    blocks.

    Non-matmul FLOP, one per elementwise operation (the softmax scale is folded into Q or exp2 and not
    counted):

    - standard forward: max, subtract, exp, sum, divide: 5 per entry;
    - flash forward: :func:`forward_nonmatmul_terms` over the entries and (row, key block) pairs visited,
      with per-step normalisation for fa1 (Algorithm 1) and deferred for fa2 (the terms are listed in the
      module documentation);
    - standard backward: ``rowsum(P * dP)`` (2) and ``dS = P * (dP - D)`` (2): 4 per entry; scaling dQ
      and dK: 2 per Q/K element;
    - flash backward: ``exp(S - lse)`` (2) and dS (2): 4 per entry; ``D = rowsum(dO * O)``: 2 per O
      element; scaling dQ and dK.

    With N = 4096, d = 128 and 128 x 128 blocks the flash forward's non-matmul work is 1.0% (fa2) and 1.6%
    (fa1) of its matmul work, the lecture's §3.3 figures.

    Args:
        N: queries, d: head dimension (ints >= 1).
        pass_: ``"forward"``, ``"backward"`` or ``"both"``.
        algorithm: "standard" or "flash".
        causal: bool.
        loop_order: "fa1"/"fa2" (flash forward only).
        block_q, block_kv: B_r, B_c for flash (ints >= 1; default 128; flash-attn's ``kBlockM``/``kBlockN``).
        N_k: keys (default N).
    Returns:
        :class:`AttentionFlops` (FLOP, ints).
    Raises:
        TypeError/ValueError: sizes not integers >= 1; unknown ``pass_``, algorithm or loop_order.
    Source:
        Dao et al. 2022 §3.1 and Theorem 1 (O(N^2 d) FLOPs), Appendix B; Dao 2023 §3.1 (non-matmul FLOPs, deferred
        normalisation); lecture §3.3, §5.2, §5.3.
    """
    causal = flag(causal, "causal")
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    N_k = key_count(N, N_k)
    pass_ = choice(pass_, "pass_", ("forward", "backward", "both"))
    algorithm = choice(algorithm, "algorithm", ("standard", "flash"))
    loop_order = choice(loop_order, "loop_order", LOOP_ORDERS)
    B_r = positive_int(block_q, "block_q")
    B_c = positive_int(block_kv, "block_kv")
    if pass_ == "both":
        kw = dict(algorithm=algorithm, causal=causal, loop_order=loop_order, block_q=B_r, block_kv=B_c, N_k=N_k)
        return attention_flops(N, d, pass_="forward", **kw) + attention_flops(N, d, pass_="backward", **kw)
    if algorithm == "standard":
        E = N * N_k
        if pass_ == "forward":
            return AttentionFlops(4 * E * d, 5 * E)
        return AttentionFlops(8 * E * d, 4 * E + N * d + N_k * d)
    rows, J, cols = causal_block_counts(N, block_q=B_r, block_kv=B_c, causal=causal, N_k=N_k)
    E = int((rows * cols).sum())
    pair_rows = int((rows * J).sum())
    if pass_ == "forward":
        return AttentionFlops(4 * E * d, forward_nonmatmul_terms(E, pair_rows, N, d, loop_order=loop_order)["total"])
    return AttentionFlops(10 * E * d, 4 * E + 2 * N * d + N * d + N_k * d)


# ----------------------------------------------------------------------------------------------------------
# intensity and roofline
# ----------------------------------------------------------------------------------------------------------

def standard_attention_intensity(N: int, d: int, *, dtype_bytes: int = 2) -> float:
    """Arithmetic intensity of Algorithm 0 in FLOP/byte: ``4 N^2 d / ((4 N d + 4 N^2) * dtype_bytes)``.

    Tends to ``d / 2`` (FP16) once N >> d: 32 FLOP/byte at d = 64, far below an A100's ridge of ~200.
    Args: N, d: positive ints; dtype_bytes: bytes per element (2 = FP16/BF16).
    Source: lecture §2; FlashAttention paper §2 and Theorem 2.
    """
    N, d, dtype_bytes = positive_int(N, "N"), positive_int(d, "d"), positive_int(dtype_bytes, "dtype_bytes")
    return attention_matmul_flops(N, N, d) / (standard_attention_io(N, d) * dtype_bytes)


def roofline_time(flops: float, bytes_moved: float, gpu) -> dict:
    """Roofline lower bounds for a kernel: compute ``flops / tensor_flops``, memory ``bytes / hbm_bandwidth``.

    Returns dict ``compute_s``, ``memory_s``, ``time_s`` (their max, perfect overlap), ``bound``
    ("compute" or "memory") and ``intensity`` (FLOP/byte). Source: Williams, Waterman, Patterson 2009.
    """
    from .hardware import get_gpu

    g = get_gpu(gpu)
    flops = positive_float(flops, "flops", allow_zero=True)
    bytes_moved = positive_float(bytes_moved, "bytes_moved")
    c, m = flops / g.tensor_flops, bytes_moved / g.hbm_bandwidth
    return {"compute_s": c, "memory_s": m, "time_s": max(c, m), "bound": "compute" if c >= m else "memory",
            "intensity": flops / bytes_moved}
