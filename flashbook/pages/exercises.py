"""The numbers book/12_exercises quotes in its statements, from the definitions both graders read."""

from __future__ import annotations

from functools import cache

import labcore

from . import Numbers

__all__ = ["numbers"]


@cache
def numbers() -> Numbers:
    """Fields: ``ex9_sms`` (the A100's SM count in exercise 9), ``ex9_options`` (letter -> text of exercise 9's
    multiple-choice part) and ``ex11`` (exercise 11's inputs and kernel count: ``kernels_per_layer``,
    ``extra_kernels``, ``kernels``, ``gap``), from ``flashbook.exercises``.
    """
    from flashbook.exercises import exercise, payload

    return Numbers(
        ex9_sms=labcore.get_gpu("A100").num_sms,
        ex9_options={o["letter"]: o["text"] for o in payload(9)["parts"][2]["options"]},
        ex11=exercise(11).compute()[1],
    )
