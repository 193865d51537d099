"""Figures for §4.5: FP8 attention error as FlashAttention-3 measures it (``labcore.fp8``).

Explorer ``fp8_attention_error``: RMSE of each low-precision variant against float64 attention, ours
beside the FlashAttention-3 paper's Table 3, with sliders for the fraction of outlier entries and the
rows per FP8 scale. Each setting runs six attention computations of 1024 x 1024 scores (~0.3-1 s, far
above the 10 ms compute budget of the other explorers: this one is an experiment, not a closed form), so
the variants that do not depend on the block size are computed once per outlier fraction (cached) and a
block-size move recomputes only the two per-block variants; the static book renders 3 x 2 frames.
"""
from __future__ import annotations

import textwrap
from functools import lru_cache

import numpy as np

from labcore import fp8
from ..explorer import Explorer, Slider, register
from .base import axes_setup

__all__ = ["fp8_error_data", "fp8_error_figure"]

_BLOCK_FREE = ("fp16_standard", "fp16", "fp8_per_tensor", "fp8_incoherent")
_PER_BLOCK = ("fp8_block", "fp8_block_incoherent")
@lru_cache(maxsize=16)
def _errors(variants: tuple, outlier_fraction: float, block: int) -> dict:
    return fp8.fp8_attention_errors(outlier_fraction=outlier_fraction, block=block, variants=variants)


def fp8_error_data(outlier_fraction: float = fp8.FA3_SETTING["outlier_fraction"],
                   block: int = fp8.FA3_SETTING["block"]) -> dict:
    """RMSE per variant at the default shape of :data:`labcore.fp8.FA3_SETTING` (see
    :func:`labcore.fp8.fp8_attention_errors`), for one outlier fraction and block size.

    Returns: dict with ``variants`` (names in :data:`labcore.fp8.VARIANTS` order), ``rmse`` and ``paper``
    (float arrays in that order), ``ratio`` (our baseline FP8 / FP8 with both tricks), ``paper_ratio``,
    ``outlier_fraction`` and ``block``.
    """
    free = _errors(_BLOCK_FREE, float(outlier_fraction), fp8.FA3_SETTING["block"])
    blocked = _errors(_PER_BLOCK, float(outlier_fraction), int(block))
    rmse = {**free["rmse"], **blocked["rmse"]}
    names = tuple(fp8.VARIANTS)
    return {"variants": names, "rmse": np.array([rmse[v] for v in names]),
            "paper": np.array([fp8.FA3_TABLE3[v]["rmse"] for v in names]),
            "ratio": rmse["fp8_per_tensor"] / rmse["fp8_block_incoherent"],
            "paper_ratio": free["paper_ratio"], "outlier_fraction": outlier_fraction, "block": block}


def fp8_error_figure(data, **_):
    """Horizontal bars, log scale: our RMSE and the paper's Table 3 for each variant."""
    return FP8_ERROR.draw(data)


def _fp8_content(fig, data, **_):
    ax = fig.axes[0]
    y = np.arange(len(data["variants"]))
    ax.barh(y - 0.2, data["rmse"], height=0.38, color="C0", label="ours (numpy emulation)")
    paper_label = f"paper, Table 3 (outlier fraction {fp8.FA3_SETTING['outlier_fraction']:g})"
    ax.barh(y + 0.2, data["paper"], height=0.38, color="#bbbbbb", label=paper_label)
    ax.set_yticks(y, [textwrap.fill(fp8.VARIANTS[v]["label"], 18) for v in data["variants"]], fontsize=9)
    ax.set_title(f"outlier fraction {data['outlier_fraction']:g}, {data['block']} rows per scale: "
                 f"baseline / both = {data['ratio']:.1f}x (paper {data['paper_ratio']:.1f}x)", fontsize=9)
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)


def _fp8_setup(**_):
    fig = axes_setup(6.6, 5.2, xscale="log", xlim=(1e-5, 1.0), xlabel="RMSE of O against float64 attention")()
    fig.axes[0].invert_yaxis()
    return fig


FP8_ERROR = register(Explorer(
    "fp8_attention_error", fp8_error_data, setup=_fp8_setup, content=_fp8_content, sliders=
    (Slider("outlier_fraction", (0.0, 0.001, 0.01), 0.001, "fraction of outlier entries", fmt="g",
            live=(0.0, 0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03)),
     Slider("block", (32, 128), 128, "rows per FP8 scale", live=(16, 32, 64, 128, 256, 512, 1024))),
    caption="FP8 attention error: block scales and incoherent processing against one scale per tensor."))
