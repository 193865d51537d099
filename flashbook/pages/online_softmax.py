"""The numbers book/03_online_softmax quotes (the cost of non-matmul work; accumulating l in 16 bits)."""

from __future__ import annotations

from functools import cache

import labcore

from . import Numbers

__all__ = ["numbers"]


@cache
def numbers() -> Numbers:
    """Fields (one head, N = 4096, d = 128, FlashAttention's default key blocks):
    ``per_step_nonmatmul_pct`` / ``deferred_nonmatmul_pct`` (non-matmul operations in % of the matmul FLOPs,
    normalising every step (fa1) / once at the end (fa2)) and ``per_step_time_pct`` / ``deferred_time_pct`` (their
    cost in % of the matmul time at FlashAttention-2's cost ratio); ``fp16_l_rel_error`` (relative error of l
    summed over 8192 keys in FP16) and ``fp16_exp_overflow_x`` (the x at which FP16's e^x overflows, ln 65504).
    Source: :func:`labcore.nonmatmul_fraction` (FlashAttention-2 §3.1), :func:`labcore.l_accumulation_error`.
    """
    per_step = labcore.nonmatmul_fraction(4096, 128, loop_order="fa1")
    deferred = labcore.nonmatmul_fraction(4096, 128, loop_order="fa2")
    return Numbers(
        per_step_nonmatmul_pct=100 * per_step["ops_fraction"],
        deferred_nonmatmul_pct=100 * deferred["ops_fraction"],
        per_step_time_pct=100 * per_step["time_fraction"],
        deferred_time_pct=100 * deferred["time_fraction"],
        fp16_l_rel_error=labcore.l_accumulation_error(8192, "fp16")["rel_error"],
        fp16_exp_overflow_x=labcore.exp_overflow_threshold("fp16"),
    )
