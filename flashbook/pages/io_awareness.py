"""The numbers book/02_io_awareness quotes (Algorithm 0's HBM traffic and arithmetic intensity)."""

from __future__ import annotations

from functools import cache

import labcore

from . import Numbers

__all__ = ["numbers"]


@cache
def numbers(N: int = 4096, d: int = 64) -> Numbers:
    """Fields: ``N``, ``d`` (the head's shape), ``hbm_elements`` (Algorithm 0's HBM traffic, elements),
    ``hbm_MB`` (the same in FP16, MB), ``matmul_GFLOP`` (its two matmuls), ``intensity`` (FLOP/byte),
    ``half_d`` (the large-N limit d/2) and ``a100_ridge`` (FLOP/byte).
    Raises: as :func:`labcore.standard_attention_io`. Source: Dao et al. 2022, Algorithm 0; lecture §2.
    """
    io = labcore.standard_attention_io(N, d)
    return Numbers(
        N=N,
        d=d,
        hbm_elements=io,
        hbm_MB=io * 2 / 1e6,
        matmul_GFLOP=labcore.attention_matmul_flops(N, N, d) / 1e9,
        intensity=labcore.standard_attention_intensity(N, d),
        half_d=d / 2,
        a100_ridge=labcore.get_gpu("A100").critical_intensity,
    )
