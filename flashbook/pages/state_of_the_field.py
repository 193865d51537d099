"""The numbers book/09_state_of_the_field quotes (where a megakernel pays: three models on two GPUs)."""

from __future__ import annotations

from functools import cache

import labcore as lc

from . import Numbers

__all__ = ["numbers", "MODELS", "GPUS"]

#: The models and GPUs of the page's table, smallest model first.
MODELS = ("GPT-2-medium", "Llama-3.2-1B", "Llama-3.1-8B")
GPUS = ("H100", "B200")


@cache
def numbers() -> Numbers:
    """Fields: ``mode_rows`` (the table: (model, GPU, ideal µs, multi-kernel % of peak, megakernel % of peak,
    speedup) for every model and GPU, from :func:`labcore.compare_modes`); ``speedup`` (dict (model, GPU) ->
    multi-kernel over megakernel time); ``b200_forward_tile`` / ``b200_backward_tile`` (the B200's tile roofline,
    M = N = d = 128, BF16, :func:`labcore.tile_roofline`).
    """
    rows = []
    for model in MODELS:
        for gpu in GPUS:
            c = lc.compare_modes(model, gpu)
            rows.append(
                (model, gpu, c["multi"].ideal / 1e-6, 100 * c["util_multi"], 100 * c["util_mega"], c["speedup"])
            )
    return Numbers(
        mode_rows=rows,
        speedup={(r[0], r[1]): r[5] for r in rows},
        b200_forward_tile=lc.tile_roofline("B200"),
        b200_backward_tile=lc.tile_roofline("B200", pass_="backward"),
    )
