"""The numbers book/05_flash_backward quotes (what recomputation costs and buys; the GPT-2 medium shape)."""

from __future__ import annotations

from functools import cache

import labcore as lc

from . import Numbers

__all__ = ["numbers"]


#: The H100's memory as FlashAttention-3's Table 1 states it, 80 GiB (the GPU preset keeps NVIDIA's datasheet
#: figure, 80 GB = 80e9 bytes); bytes.
FA3_H100_MEMORY_BYTES = 80 * lc.GiB


def P_bytes_value() -> float:
    """Bytes of P stored for the backward: 32 attention matrices at N = 32768 in FP16 (§5.2)."""
    return float(lc.saved_for_backward_bytes(32768, algorithm="standard", num_matrices=32))


@cache
def numbers() -> Numbers:
    """Fields:

    - ``P_GB`` / ``L_MB``: storing P in FP16 (GB) or L in FP32 (MB) for 32 attention matrices at N = 32768;
    - ``flop_ratio``: flash over standard matmul FLOPs, forward plus backward (N = 4096, d = 64; 7/6);
    - ``step_io_ratio_1k`` / ``step_io_ratio_32k``: standard over flash HBM traffic of a training step, d = 128,
      at N = 1024 and 32768; ``backward_io_ratio``: the same for the backward alone at N = 4096, 128 x 128 blocks;
    - GPT-2 medium on an A100 (:func:`labcore.gpt2_medium_comparison`; ours and the paper's Fig. 2):
      ``standard_GB``, ``flash_GB``, ``standard_GFLOP``, ``flash_GFLOP`` and ``paper_standard_GB``,
      ``paper_flash_GB``, ``paper_standard_GFLOP``, ``paper_flash_GFLOP``, ``paper_standard_ms``,
      ``paper_flash_ms``, ``paper_time_ratio`` (standard over FlashAttention runtime in Fig. 2); ``P_GiB``
      (P in GiB), ``h100_GB`` (the preset's capacity, GB), ``fa3_h100_memory_bytes`` (FA3 Table 1's 80 GiB) and
      ``P_share_of_GiB`` (P over it); ``extra_flops_pct`` / ``paper_extra_flops_pct`` (flash's extra FLOPs, %) and
      ``flops_over_paper`` (our standard FLOPs over the paper's).

    Source: Dao et al. 2022, Algorithms 2 and 4, Fig. 2; lecture §5.
    """
    s_f = lc.attention_flops(4096, 64, pass_="both", algorithm="standard")
    f_f = lc.attention_flops(4096, 64, pass_="both", algorithm="flash")
    step = {
        N: lc.training_step_io(N, 128, algorithm="standard") / lc.training_step_io(N, 128, algorithm="flash")
        for N in (1024, 32768)
    }
    cmp = lc.gpt2_medium_comparison()
    ours, paper = cmp, cmp["paper"]
    return Numbers(
        P_GB=lc.saved_for_backward_bytes(32768, algorithm="standard", num_matrices=32) / 1e9,
        L_MB=lc.saved_for_backward_bytes(32768, algorithm="flash", num_matrices=32) / 1e6,
        flop_ratio=f_f.matmul / s_f.matmul,
        step_io_ratio_1k=step[1024],
        step_io_ratio_32k=step[32768],
        backward_io_ratio=lc.standard_backward_io(4096, 128)
        / lc.flash_backward_io(4096, 128, block_q=128, block_kv=128),
        standard_GB=ours["standard"]["hbm_bytes"] / 1e9,
        flash_GB=ours["flash"]["hbm_bytes"] / 1e9,
        standard_GFLOP=ours["standard"]["flops"] / 1e9,
        flash_GFLOP=ours["flash"]["flops"] / 1e9,
        paper_standard_GB=paper["standard"]["hbm_bytes"] / 1e9,
        paper_flash_GB=paper["flash"]["hbm_bytes"] / 1e9,
        paper_standard_GFLOP=paper["standard"]["flops"] / 1e9,
        paper_flash_GFLOP=paper["flash"]["flops"] / 1e9,
        paper_standard_ms=paper["standard"]["runtime_s"] * 1e3,
        paper_flash_ms=paper["flash"]["runtime_s"] * 1e3,
        extra_flops_pct=100 * (ours["flash"]["flops"] / ours["standard"]["flops"] - 1),
        P_GiB=P_bytes_value() / lc.GiB,
        h100_GB=lc.get_gpu("H100").hbm_capacity / 1e9,
        fa3_h100_memory_bytes=FA3_H100_MEMORY_BYTES,
        P_share_of_GiB=P_bytes_value() / FA3_H100_MEMORY_BYTES,
        paper_time_ratio=paper["standard"]["runtime_s"] / paper["flash"]["runtime_s"],
        paper_extra_flops_pct=100 * (paper["flash"]["flops"] / paper["standard"]["flops"] - 1),
        flops_over_paper=ours["standard"]["flops"] / paper["standard"]["flops"],
    )
