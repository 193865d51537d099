"""The numbers book/12_exercises quotes in its statements, from the definitions both graders read."""

from __future__ import annotations

from functools import cache

import labcore

from . import Numbers

__all__ = ["numbers"]


@cache
def numbers() -> Numbers:
    """Fields: ``ex8_ctas`` (exercise 8's CTAs, one per query head), ``ex9_sms`` (the A100's SM count in exercise 9),
    ``ex9_ctas_32`` / ``ex9_ctas_64`` (its CTAs at 32 and 64 splits), ``ex9_options`` (letter -> text of exercise 9's
    multiple-choice part), ``ex11`` (exercise 11's inputs and kernel count: ``kernels_per_layer``,
    ``extra_kernels``, ``kernels``, ``gap``), ``ex12_waves`` (``a``, ``b``: waves of exercise 12's larger and smaller
    block counts), from ``flashbook.exercises`` and ``labcore``.
    """
    from flashbook.exercises import exercise, payload

    shape = dict(batch=1, seqlen=65_536, num_q_heads=16, num_kv_heads=2, head_dim=128)
    ex12 = exercise(12).params
    sms12 = labcore.get_gpu(ex12["gpu"]).num_sms
    return Numbers(
        ex8_ctas=labcore.decode_attention_time("A100", method="fa2", **shape).num_ctas,
        ex9_ctas_32=labcore.decode_attention_time("A100", method="flash_decoding", num_splits=32, **shape).num_ctas,
        ex9_ctas_64=labcore.decode_attention_time("A100", method="flash_decoding", num_splits=64, **shape).num_ctas,
        ex12_waves={k: labcore.wave_count(ex12[k], sms12) for k in ("a", "b")},
        ex9_sms=labcore.get_gpu("A100").num_sms,
        ex9_options={o["letter"]: o["text"] for o in payload(9)["parts"][2]["options"]},
        ex11=exercise(11).compute()[1],
    )
