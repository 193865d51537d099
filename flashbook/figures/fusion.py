"""Figures for §7 (fusion in general): how much HBM traffic fusing a row softmax saves.

Pure functions (parameters in, matplotlib Figure out) over :func:`labcore.hbm.softmax_fusion_io`, and one
registered explorer, ``fusion_traffic``.
"""
from __future__ import annotations

import numpy as np

from labcore.hbm import softmax_fusion_io
from labcore.units import fmt_bytes
from ..explorer import Explorer, Slider, register
from .base import new_figure

__all__ = ["ROW_LENGTHS", "fusion_traffic_data", "fusion_traffic_figure"]

#: Row lengths the figure sweeps (powers of two from 2 to 4096).
ROW_LENGTHS = tuple(2 ** k for k in range(1, 13))


def fusion_traffic_data(rows: int = 1024, N: int = 4096) -> dict:
    """Unfused / fused traffic of a row softmax of ``rows`` rows, for each row length in :data:`ROW_LENGTHS`,
    and the single point at row length ``N``.

    Args:
        rows: int >= 1.
        N: the marked row length, int >= 1.
    Returns:
        dict with ``N_values`` (int array), ``ratios`` (float array, ``4 + 2 / N``), ``rows``, ``N`` and
        ``point`` (the :func:`~labcore.hbm.softmax_fusion_io` dict at ``N``).
    Raises:
        As :func:`~labcore.hbm.softmax_fusion_io`.
    Source: Triton tutorial "Fused Softmax"; lecture §7, rule 1.
    """
    Ns = np.array(ROW_LENGTHS)
    ratios = np.array([softmax_fusion_io(rows, int(n))["ratio"] for n in Ns])
    return {"N_values": Ns, "ratios": ratios, "rows": rows, "N": N, "point": softmax_fusion_io(rows, N)}


def fusion_traffic_figure(data: dict):
    """The ratio unfused / fused against the row length (log axis), its limit 4, and the point at ``N``
    labelled with both traffic volumes in MB (FP16)."""
    return FUSION_TRAFFIC.draw(data)


def _fusion_setup(**_):
    fig, ax = new_figure(width=5.5, height=2.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("row length N")
    ax.set_ylabel("unfused / fused traffic")
    return fig


def _fusion_content(fig, data, **_):
    ax = fig.axes[0]
    ax.plot(data["N_values"], data["ratios"], "o-")
    ax.axhline(4, color="k", lw=0.6, ls="--")
    pt = data["point"]
    ax.plot([data["N"]], [pt["ratio"]], "o", color="#de2d26", ms=8)
    # the marked point's numbers go in the title, where they cover no part of the curve
    ax.set_title(f"row softmax of {data['rows']:,} rows: fusion saves 4 + 2/N times the traffic\n"
                 f"marked, N = {data['N']:,}: {fmt_bytes(pt['unfused'] * 2, unit='MB')} unfused vs "
                 f"{fmt_bytes(pt['fused'] * 2, unit='MB')} fused ({pt['ratio']:.2f}x)", fontsize=9)


FUSION_TRAFFIC = register(Explorer(
    "fusion_traffic",
    compute=lambda rows, N: fusion_traffic_data(rows, N),
    setup=_fusion_setup,
    content=_fusion_content,
    sliders=(Slider("rows", (1024,), 1024, label="rows", live=(1, 64, 1024, 4096), fmt=",d"),
             Slider("N", (4096,), 4096, label="row length N", live=ROW_LENGTHS, fmt=",d")),
    caption="Fusing a row softmax: traffic saved against the row length.",
))
