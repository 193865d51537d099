"""Decode-time attention, the model against the measurements: model shapes and the flash-decoding post's A100 table.

:func:`compare_flash_decoding_a100` runs the decode time model (:mod:`labcore.decode_time`: CTAs x waves,
:func:`~labcore.decode_time.decode_attention_time`, :func:`~labcore.decode_time.decode_time_grid`) on the ten rows
of the flash-decoding post's A100 micro-benchmark (:func:`load_flash_decoding_a100`). The attention shapes of a few
models, :data:`DECODE_SHAPES`, come from the presets of ``labcore.models``. flash-attn 2.x's split heuristic and
block sizes live in :mod:`labcore.splits`.

Sources: dao2023flashdecoding (PyTorch blog, 2023-10-13); the models' config.json files (via
``labcore.models``).
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .checks import choice
from .decode_time import decode_time_grid
from .hardware import get_gpu
from .models import Model, get_model
from .waves import LAST_WAVE_RULES

__all__ = ["DECODE_SHAPES", "get_decode_shape", "load_flash_decoding_a100", "compare_flash_decoding_a100"]


# --------------------------------------------------------------------------------------------------
# Shapes and the published measurements
# --------------------------------------------------------------------------------------------------


def _attention_shape(model: Model) -> dict:
    return dict(num_q_heads=model.num_heads, num_kv_heads=model.num_kv_heads, head_dim=model.head_dim,
                num_layers=model.num_layers, source=model.source)


#: Attention shapes of a few models (per GPU): ``num_q_heads``, ``num_kv_heads``, ``head_dim``, ``num_layers`` and
#: ``source``, read off the presets of :mod:`labcore.models` (the one home of model shapes).
DECODE_SHAPES: dict[str, dict] = {
    "CodeLlama-34B (4-way TP)": _attention_shape(get_model("CodeLlama-34B").per_gpu(4)),   # the post's benchmark
    "Llama-3.1-8B": _attention_shape(get_model("Llama-3.1-8B")),
    "Llama-3.2-1B": _attention_shape(get_model("Llama-3.2-1B")),
    "GPT-2 medium (MHA)": _attention_shape(get_model("GPT-2-medium")),
}


def get_decode_shape(name: str) -> dict:
    """``num_q_heads, num_kv_heads, head_dim`` (and ``num_layers``) of a :data:`DECODE_SHAPES` entry.

    Raises: ValueError listing the known names.
    """
    if name not in DECODE_SHAPES:
        raise ValueError(f"unknown shape {name!r}; known: {', '.join(DECODE_SHAPES)}")
    s = DECODE_SHAPES[name]
    return {k: s[k] for k in ("num_q_heads", "num_kv_heads", "head_dim")}


_CSV = Path(__file__).parent / "data" / "flash_decoding_a100.csv"


def load_flash_decoding_a100() -> dict:
    """The flash-decoding post's A100 micro-benchmark (10 rows), read from ``labcore/data``.

    Returns:
        dict of numpy arrays: ``batch``, ``seqlen`` (int64) and ``eager``, ``fa2``, ``flash_decoding``
        (float64, **seconds**), plus ``source`` (the citation lines of the CSV header) and the fixed
        shape ``num_q_heads=16, num_kv_heads=2, head_dim=128``.
    Source: dao2023flashdecoding (PyTorch blog, 2023-10-13). A100 memory size not stated in the post.
    """
    comments, rows = [], []
    with open(_CSV, newline="") as f:
        for line in f:
            if line.startswith("#"):
                comments.append(line[1:].strip())
            else:
                rows.append(line)
    recs = list(csv.DictReader(rows))
    col = lambda k, t: np.array([t(r[k]) for r in recs])  # noqa: E731
    return {
        "batch": col("batch", int).astype(np.int64),
        "seqlen": col("seqlen", int).astype(np.int64),
        "eager": col("eager_us", float) * 1e-6,
        "fa2": col("fa2_us", float) * 1e-6,
        "flash_decoding": col("flash_decoding_us", float) * 1e-6,
        "source": " ".join(comments),
        "num_q_heads": 16, "num_kv_heads": 2, "head_dim": 128,
    }


def compare_flash_decoding_a100(gpu="A100", *, num_splits=None, last_wave="full", **assumptions) -> dict:
    """Model vs the post's measurements on all 10 rows, both variants, both methods, under one last-wave rule.

    Args:
        gpu: preset (default the A100 40 GB, 1555 GB/s; the post does not say which A100).
        num_splits: flash-decoding split rule (None = model-best per variant, ``"heuristic"``, an int ...).
        last_wave: ``"full"`` (the lecture's charge, default) or ``"shared"`` (the last wave's CTAs share the
            bandwidth among themselves); see :func:`~labcore.decode_time.decode_attention_time` and
            :func:`labcore.waves.waves_time`. With ``num_splits=None`` the model-best split count is searched under
            the same rule.
        assumptions: other overrides of :data:`~labcore.decode_time.MODEL_DEFAULTS`, forwarded to
            :func:`~labcore.decode_time.decode_time_grid` (e.g. ``efficiency``).
    Returns:
        dict: the measured arrays of :func:`load_flash_decoding_a100` plus, in seconds, ``model_fa2``,
        ``model_fd`` (base), ``refined_fa2``, ``refined_fd``; the split counts ``splits_fd``,
        ``splits_fd_refined``; relative errors ``err_*`` = model / measured - 1 for each of the four;
        and ``last_wave``, the rule used.
    Raises:
        ValueError for an unknown ``last_wave`` rule; otherwise as :func:`~labcore.decode_time.decode_time_grid`.
    Source:
        dao2023flashdecoding; lecture §6.3.
    """
    gpu, last_wave = get_gpu(gpu), choice(last_wave, "last_wave", LAST_WAVE_RULES)
    m = load_flash_decoding_a100()
    shape = dict(num_q_heads=m["num_q_heads"], num_kv_heads=m["num_kv_heads"], head_dim=m["head_dim"])
    out = dict(m, last_wave=last_wave)
    for variant, tag in (("base", "model"), ("refined", "refined")):
        fa = decode_time_grid(gpu, batch=m["batch"], seqlen=m["seqlen"], method="fa2", variant=variant,
                              last_wave=last_wave, **shape, **assumptions)
        fd = decode_time_grid(gpu, batch=m["batch"], seqlen=m["seqlen"], method="flash_decoding",
                              num_splits=num_splits, variant=variant, last_wave=last_wave, **shape, **assumptions)
        out[f"{tag}_fa2"], out[f"{tag}_fd"] = fa["total"], fd["total"]
        out["splits_fd" if variant == "base" else "splits_fd_refined"] = fd["num_splits"]
        out[f"err_{tag}_fa2"] = fa["total"] / m["fa2"] - 1
        out[f"err_{tag}_fd"] = fd["total"] / m["flash_decoding"] - 1
    return out
