"""The numbers book/07_fusion quotes (the fused softmax's traffic; the megakernel's recomputed RMSNorm)."""

from __future__ import annotations

from functools import cache

import labcore as lc

from . import Numbers

__all__ = ["numbers"]


@cache
def numbers(rows: int = 4096, N: int = 4096) -> Numbers:
    """Fields: ``rows``, ``N`` (the score matrix's shape), ``unfused_elements`` / ``fused_elements`` (HBM traffic of
    the five-operator and the fused row softmax, elements), ``unfused_MB`` / ``fused_MB`` (the same in FP16, MB),
    ``ratio`` (unfused over fused); ``qkv_blocks`` (blocks of Llama-3.2-1B's fused "RMSNorm + QKV" megakernel
    instruction on an H100) and ``hidden_size`` (the activation each of them reads).
    Raises: as :func:`labcore.softmax_fusion_io`. Source: the Triton fused-softmax tutorial; lecture §7.
    """
    io = lc.softmax_fusion_io(rows=rows, N=N)
    m = lc.get_model("Llama-3.2-1B")
    qkv = lc.work_items(m, "H100", mode="megakernel")[0]  # the first instruction group: RMSNorm + QKV
    return Numbers(
        rows=rows,
        N=N,
        unfused_elements=io["unfused"],
        fused_elements=io["fused"],
        ratio=io["ratio"],
        unfused_MB=io["unfused"] * 2 / 1e6,
        fused_MB=io["fused"] * 2 / 1e6,
        qkv_blocks=qkv.blocks,
        hidden_size=m.hidden_size,
    )
