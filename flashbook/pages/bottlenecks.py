"""The numbers book/01_bottlenecks quotes (two kinds of kernel bottleneck; the roofline's ridge)."""

from __future__ import annotations

from functools import cache

import labcore

from . import Numbers

__all__ = ["numbers"]


@cache
def numbers() -> Numbers:
    """Fields: ``score_to_q_ratio`` (size of S over size of Q for one head, N = 8192, d = 128),
    ``a100_ridge`` / ``h100_ridge`` (FLOP/byte, dense FP16 tensor throughput over HBM bandwidth),
    ``attention_intensity_d64`` (standard attention at N = 4096, d = 64, FLOP/byte), ``decode_kernels`` (kernels
    of one multi-kernel Llama-3.2-1B decode step on an H100) and ``kernels_per_layer`` (without the final norm
    and the LM head). Source: the presets and models of labcore; lecture §1.
    """
    model = labcore.get_model("Llama-3.2-1B")
    mk = labcore.timeline(model, labcore.get_gpu("H100"), mode="multi-kernel")
    return Numbers(
        score_to_q_ratio=labcore.score_to_input_ratio(8192, 128),
        a100_ridge=labcore.get_gpu("A100").critical_intensity,
        h100_ridge=labcore.get_gpu("H100").critical_intensity,
        attention_intensity_d64=labcore.standard_attention_intensity(4096, 64),
        decode_kernels=mk.num_kernels,
        kernels_per_layer=(mk.num_kernels - 2) // model.num_layers,
    )
