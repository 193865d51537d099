"""Figures for §8 (megakernels): Gantt chart of both modes, stacked breakdown, sensitivity.

Pure functions (parameters in, matplotlib Figure out) over :mod:`labcore.megakernel`, plus three
registered explorers: ``megakernel_timeline``, ``megakernel_breakdown``, ``megakernel_sensitivity``.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from labcore.forward_timeline import timeline
from labcore.forward_work import HAZY_MEASURED, TIMELINE_DEFAULTS
from labcore.megakernel import mode_sensitivity
from labcore.units import fmt_seconds, unit_label
from ..explorer import Explorer, Slider, register
from .base import axes_setup, new_figure
from .overlap import legend_below

__all__ = ["KIND_COLORS", "CAUSE_COLORS", "gantt_figure", "breakdown_figure", "sensitivity_figure",
           "timeline_data", "breakdown_data", "sensitivity_data"]

US = 1e-6

KIND_COLORS = {"norm": "#8c6d31", "qkv": "#3182bd", "attention": "#31a354", "reduction": "#74c476",
               "o_proj": "#6baed6", "gate_up": "#756bb1", "down": "#9e9ac8", "lm_head": "#e6550d"}
CAUSE_COLORS = {"weights": "#08519c", "kv_cache": "#6baed6", "bandwidth_efficiency": "#9ecae1",
                "launch_gaps": "#de2d26", "pdl_syncs": "#fb6a4a", "prologues": "#fd8d3c", "prologue": "#fd8d3c",
                "tails": "#756bb1", "small_kernels": "#8c6d31", "sync_waits": "#fb6a4a",
                "instruction_overhead": "#bcbd22", "uneven_bytes": "#9e9ac8", "imbalance": "#bcbddc",
                "other": "#bcbddc"}
CAUSE_LABELS = {"weights": "weights", "kv_cache": "KV cache", "bandwidth_efficiency": "bandwidth efficiency",
                "launch_gaps": "launch gaps", "pdl_syncs": "PDL grid syncs", "prologues": "prologues",
                "prologue": "prologues", "tails": "tails", "small_kernels": "small kernels",
                "sync_waits": "sync waits", "instruction_overhead": "instruction overhead",
                "uneven_bytes": "uneven bytes per SM", "imbalance": "unhidden waits", "other": "other"}



def _wrap_label(text: str, width: int = 22) -> str:
    """A tick label in lines of at most ``width`` characters (a 4.8 in figure has little room beside its axes)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text

def _gap(cuda_graphs: bool) -> float:
    """Hazy's measured launch gap: inside a CUDA Graph, or on a plain stream (H100)."""
    return HAZY_MEASURED["launch_gap_graphs" if cuda_graphs else "launch_gap_stream"]


# ---------------------------------------------------------------------------------------------------
# Gantt chart
# ---------------------------------------------------------------------------------------------------


def timeline_data(model="Llama-3.2-1B", gpu="H100", *, cuda_graphs=True, sm_lanes=4, **assumptions) -> dict:
    """Both modes (and the multi-kernel with PDL) at the same assumptions, ready for :func:`gantt_figure`.

    Returns dict with ``multi``, ``pdl``, ``mega`` (:class:`~labcore.forward_timeline.Timeline`), and
    ``lanes``: for each of the first ``sm_lanes`` SMs of the megakernel, arrays ``start``, ``end``,
    ``kind`` of its instructions (seconds).
    """
    a = {**assumptions, "launch_gap": _gap(cuda_graphs)}
    mk = timeline(model, gpu, mode="multi-kernel", **a)
    pdl = timeline(model, gpu, mode="multi-kernel", **{**a, "pdl": True})
    mg = timeline(model, gpu, mode="megakernel", decompose=False, **a)   # totals and lanes; no breakdown needed
    arr = mg.sm_arrays
    op_kinds = np.array([o.kind for o in mg.work])          # each instruction's kind, by its work item
    lanes = []
    for s in range(sm_lanes):
        sel = arr["sm"] == s
        lanes.append({"start": arr["start"][sel], "end": arr["end"][sel], "kind": op_kinds[arr["op"][sel]]})
    return {"multi": mk, "pdl": pdl, "mega": mg, "lanes": lanes, "cuda_graphs": cuda_graphs}


def _kernel_row_bars(y, tl, h=0.7, t_max=None):
    """Bars of one row of kernels: ``(solid, tails)``, each a list of ``(x0, width, y0, height, colour)`` in µs."""
    solid, tails = [], []
    for e in tl.events:
        if t_max is not None and e.start > t_max:
            break
        p = e.parts
        t = e.start + p["launch_gap"]
        if p["prologue"] > 0:
            solid.append((t / US, p["prologue"] / US, y - h / 2, h, "#bdbdbd"))
        t += p["prologue"]
        solid.append((t / US, p["work"] / US, y - h / 2, h, KIND_COLORS[e.kind]))
        t += p["work"]
        if p["tail"] > 0:
            tails.append((t / US, p["tail"] / US, y - h / 2, h, KIND_COLORS[e.kind]))
    return solid, tails


def _lane_bars(y, lane, h=0.7, t_max=None):
    """Bars of one megakernel SM lane, as in :func:`_kernel_row_bars`."""
    sel = np.ones(lane["start"].size, bool) if t_max is None else lane["start"] <= t_max
    st, en, kind = lane["start"][sel], lane["end"][sel], lane["kind"][sel]
    return [(a / US, (b - a) / US, y - h / 2, h, KIND_COLORS[k]) for a, b, k in zip(st.tolist(), en.tolist(), kind)]


def _merge_bars(bars, tol):
    """Join bars of one row and colour that touch or are less than ``tol`` apart (drawing the same
    picture with fewer polygons: at the figure's resolution such gaps are below a pixel)."""
    out = []
    for bar in sorted(bars, key=lambda b: (b[2], b[4], b[0])):
        x, w, y0, h, c = bar
        if out and out[-1][2] == y0 and out[-1][4] == c and x - (out[-1][0] + out[-1][1]) < tol:
            px = out[-1][0]
            out[-1] = (px, max(px + out[-1][1], x + w) - px, y0, h, c)
        else:
            out.append(bar)
    return out


def _add_bars(ax, bars, tol=0.0, **kw):
    """All ``bars`` as one PolyCollection (one artist, however many bars: fast to draw); bars closer
    than ``tol`` (µs) are merged first (:func:`_merge_bars`)."""
    from matplotlib.collections import PolyCollection

    if not bars:
        return
    if tol > 0:
        bars = _merge_bars(bars, tol)
    verts = [((x, y0), (x + w, y0), (x + w, y0 + h), (x, y0 + h)) for x, w, y0, h, _ in bars]
    colours = [c for *_, c in bars]
    if kw.pop("pale", False):     # a tail: the kernel's colour, faded, with a thin outline of it
        from matplotlib.colors import to_rgba

        faded = [to_rgba(c, 0.3) for c in colours]
        ax.add_collection(PolyCollection(verts, facecolors=faded, edgecolors=colours, **kw), autolim=False)
    else:
        ax.add_collection(PolyCollection(verts, facecolors=colours, edgecolors="none", **kw), autolim=False)


def gantt_figure(data: dict, *, zoom: float = 100e-6):
    """Gantt chart: multi-kernel (one row of kernels), the same with PDL, and megakernel SM lanes, on one
    time axis; top panel the whole forward pass, bottom panel the first ``zoom`` seconds, where the white
    gaps (launch), grey prologues and pale tails are visible.
    """
    fig = _gantt_setup()
    _gantt_content(fig, data, zoom=zoom)
    return fig


def _gantt_setup(**_):
    fig, axes = new_figure(2, 1, width=8.0, height=6.4, gridspec_kw={"height_ratios": [1, 1.25]})
    for ax in axes:
        ax.set_xlabel(unit_label("time since the forward pass started", "µs"))
    return fig


def _gantt_content(fig, data, zoom=100e-6, **_):
    axes = fig.axes
    mk, pdl, mg, lanes = data["multi"], data["pdl"], data["mega"], data["lanes"]
    gap = fmt_seconds(mk.assumptions["launch_gap"], unit="µs")
    rows = [(f"multi-kernel ({'CUDA Graphs' if data['cuda_graphs'] else 'stream'}, {gap} gaps)", mk),
            ("multi-kernel + PDL", pdl)]
    n_rows = len(rows) + len(lanes)
    for ax, t_max in ((axes[0], None), (axes[1], zoom)):
        labels, solid, tails = [], [], []
        for i, (label, tl) in enumerate(rows):
            y = n_rows - 1 - i
            s_, t_ = _kernel_row_bars(y, tl, t_max=t_max)
            solid += s_
            tails += t_
            labels.append((y, label))
        for j, lane in enumerate(lanes):
            y = n_rows - 1 - len(rows) - j
            solid += _lane_bars(y, lane, t_max=t_max)
            labels.append((y, f"megakernel SM {j}"))
        span = (t_max or max(mk.total, pdl.total, mg.total)) / US
        _add_bars(ax, solid, tol=span / 2000, linewidths=0)       # ~600 px wide: merge sub-pixel gaps only
        _add_bars(ax, tails, pale=True, linewidths=0.4)
        ax.set_yticks([y for y, _ in labels], [_wrap_label(lab) for _, lab in labels], fontsize=9)
        ax.set_ylim(-0.6, n_rows - 0.4)
        ax.axhline(n_rows - len(rows) - 0.5, color="k", lw=0.5)
    t_end = max(mk.total, pdl.total, mg.total)
    axes[0].set_xlim(0, t_end / US * 1.13)
    for i, (_, tl) in enumerate(rows):
        axes[0].text(tl.total / US, n_rows - 1 - i, f" {fmt_seconds(tl.total, unit='µs', digits=0)} ({100 * tl.bandwidth_utilization:.0f}%)",
                     va="center", fontsize=9)
    axes[0].text(mg.total / US, n_rows - 1 - len(rows) - (len(lanes) - 1) / 2,
                 f" {fmt_seconds(mg.total, unit='µs', digits=0)} ({100 * mg.bandwidth_utilization:.0f}%)", va="center", fontsize=9)
    axes[0].set_title(f"{mk.model.name}, batch-1 decode on {mk.gpu.name}: one forward pass", fontsize=9)
    axes[1].set_xlim(0, zoom / US)
    axes[1].set_title(f"the first {fmt_seconds(zoom, unit='µs', digits=0)}: white = launch gap or wait, grey = prologue, "
                      "pale = tail", fontsize=9)
    from matplotlib.patches import Patch
    handles = [Patch(color=c, label=k) for k, c in KIND_COLORS.items()]
    axes[1].legend(handles=handles, ncols=2, fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.22),
                   frameon=False)


# ---------------------------------------------------------------------------------------------------
# Stacked breakdown
# ---------------------------------------------------------------------------------------------------


def breakdown_data(model="Llama-3.2-1B", gpu="H100", *, cuda_graphs=True, **assumptions) -> dict:
    """Breakdowns (seconds per cause) of the multi-kernel, the multi-kernel with PDL and the megakernel.

    Returns dict ``{"bars": [(label, Timeline), ...]}``.
    """
    a = {**assumptions, "launch_gap": _gap(cuda_graphs)}
    g = "CUDA Graphs" if cuda_graphs else "stream"
    return {"bars": [(f"multi-kernel\n({g})", timeline(model, gpu, mode="multi-kernel", **a)),
                     (f"+ PDL\n({g})", timeline(model, gpu, mode="multi-kernel", **{**a, "pdl": True})),
                     ("megakernel", timeline(model, gpu, mode="megakernel", **a))]}


def breakdown_figure(data: dict):
    """Horizontal stacked bars: each mode's time per forward pass split by cause (µs), with the
    bandwidth utilisation at the end of each bar."""
    fig = _breakdown_setup()
    _breakdown_content(fig, data)
    return fig


_breakdown_setup = axes_setup(8.0, 4.6, xlabel=unit_label("time per forward pass", "µs"))


def _breakdown_content(fig, data, **_):
    ax = fig.axes[0]
    bars = data["bars"]
    seen = set()
    for i, (label, tl) in enumerate(bars):
        y = len(bars) - 1 - i
        left = 0.0
        for cause, sec in tl.breakdown().items():
            if sec <= 0:
                continue
            lab = CAUSE_LABELS[cause] if CAUSE_LABELS[cause] not in seen else None
            seen.add(CAUSE_LABELS[cause])
            ax.barh(y, sec / US, left=left, color=CAUSE_COLORS[cause], label=lab, height=0.6)
            left += sec / US
        ax.text(left, y, f" {fmt_seconds(tl.total, unit='µs', digits=0)}, {100 * tl.bandwidth_utilization:.0f}% of peak",
                va="center", fontsize=9)
    ax.set_yticks(range(len(bars)), [b[0] for b in reversed(bars)], fontsize=9)
    ax.set_xlim(0, max(tl.total for _, tl in bars) / US * 1.3)
    tl0 = bars[0][1]
    ax.set_title(f"{tl0.model.name} on {tl0.gpu.name}: where the time goes", fontsize=9)
    ax.legend(fontsize=9, ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)


# ---------------------------------------------------------------------------------------------------
# Sensitivity
# ---------------------------------------------------------------------------------------------------


@lru_cache(maxsize=16)
def _sens(model, gpu, cuda_graphs):
    return mode_sensitivity(model, gpu, launch_gap=_gap(cuda_graphs))


def sensitivity_data(model="Llama-3.2-1B", gpu="H100", *, cuda_graphs=True) -> dict:
    """:func:`~labcore.megakernel.mode_sensitivity` over :data:`SENSITIVITY_KNOBS` (cached per preset).

    About 15 timeline pairs; the first call for a preset takes ~1 s, later ones are instant."""
    return {"sens": _sens(model, gpu, bool(cuda_graphs)), "model": model, "gpu": gpu}


def sensitivity_figure(data: dict):
    """Two panels: the megakernel's speedup and its bandwidth-utilisation gain (points) as each knob
    moves from its low to its high value (x axis: value / default), the others at their defaults."""
    fig = _sensitivity_setup()
    _sensitivity_content(fig, data)
    return fig


def _sensitivity_setup(**_):
    fig, (a1, a2) = new_figure(1, 2, width=8.0, height=3.2)
    for ax in (a1, a2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("knob value / default")
        ax.grid(alpha=0.3)
    a1.set_ylabel("megakernel speedup (x)")
    a2.set_ylabel("bandwidth utilisation gain (points)")
    return fig


def _sensitivity_content(fig, data, **_):
    a1, a2 = fig.axes
    sens = data["sens"]
    for name, d in sens.items():
        x = d["values"] / TIMELINE_DEFAULTS[name]
        a1.plot(x, d["speedup"], "o-", label=name.replace("_", " "), ms=4)
        a2.plot(x, d["util_gain"], "o-", ms=4)
    sp = np.concatenate([d["speedup"] for d in sens.values()])
    ug = np.concatenate([d["util_gain"] for d in sens.values()])
    a1.set_title(f"speedup {sp.min():.2f}–{sp.max():.2f}x", fontsize=9)
    a2.set_title(f"gain {ug.min():.0f}–{ug.max():.0f} points", fontsize=9)
    legend_below(fig, a1, ncols=2)   # the lower panel's lines are the upper one's, in the same colours
    fig.suptitle(f"{data['model']} on {data['gpu']}: one knob at a time", fontsize=9)


# ---------------------------------------------------------------------------------------------------
# Explorers
# ---------------------------------------------------------------------------------------------------

_GPU = Slider("gpu", ("H100", "B200"), "H100", label="hardware", live=("A100", "H100", "H200", "B200"))
_MODEL = Slider("model", ("Llama-3.2-1B", "Llama-3.1-8B"), "Llama-3.2-1B", label="model",
                live=("GPT-2-medium", "Llama-3.2-1B", "Llama-3.1-8B"))
_GRAPHS = Slider("cuda_graphs", (True, False), True,
                 label=f"CUDA Graphs ({fmt_seconds(_gap(True), unit='µs')} gap; off: {fmt_seconds(_gap(False), unit='µs')})")


def _us_slider(name, default, live, label):
    """A slider over a duration in seconds, its values shown in µs by labcore.units."""
    return Slider(name, (default,), default, label=label, live=live,
                  fmt=lambda t: fmt_seconds(t, unit="µs", digits=2))


register(Explorer(
    "megakernel_timeline",
    compute=lambda model, gpu, cuda_graphs, rows_per_block: timeline_data(
        model, gpu, cuda_graphs=cuda_graphs, rows_per_block=rows_per_block),
    setup=_gantt_setup,
    content=_gantt_content,
    sliders=(_GPU, _MODEL, _GRAPHS,
             Slider("rows_per_block", (8, 16, 32), 16, label="rows per block", live=(8, 16, 24, 32, 64))),
    caption="Batch-1 decode as a Gantt chart: kernels with gaps, PDL, and the megakernel's SM lanes.",
))

register(Explorer(
    "megakernel_breakdown",
    compute=lambda model, gpu, cuda_graphs, bandwidth_efficiency, prologue, small_kernel, sync,
    instruction_overhead: breakdown_data(
        model, gpu, cuda_graphs=cuda_graphs, bandwidth_efficiency=bandwidth_efficiency, prologue=prologue,
        small_kernel=small_kernel, sync=sync, instruction_overhead=instruction_overhead),
    setup=_breakdown_setup,
    content=_breakdown_content,
    sliders=(_GPU, _MODEL, _GRAPHS,
             Slider("bandwidth_efficiency", (0.8, 0.9, 0.95), 0.9, label="bandwidth efficiency",
                    live=(0.7, 0.8, 0.85, 0.9, 0.95, 1.0)),
             _us_slider("prologue", 1e-6, (0.0, 0.5e-6, 1e-6, 2e-6, 4e-6), "prologue"),
             _us_slider("small_kernel", 2e-6, (1e-6, 2e-6, 3e-6, 4e-6), "small-kernel cost"),
             _us_slider("sync", 1e-6, (0.0, 0.5e-6, 1e-6, 2e-6, 4e-6), "sync"),
             _us_slider("instruction_overhead", 0.5e-6, (0.0, 0.25e-6, 0.5e-6, 1e-6, 2e-6),
                        "instruction overhead")),
    caption="Where a forward pass's time goes, multi-kernel vs PDL vs megakernel.",
))

register(Explorer(
    "megakernel_sensitivity",
    compute=lambda model, gpu, cuda_graphs: sensitivity_data(model, gpu, cuda_graphs=cuda_graphs),
    setup=_sensitivity_setup,
    content=_sensitivity_content,
    sliders=(_GPU, Slider("model", ("Llama-3.2-1B",), "Llama-3.2-1B", label="model",
                          live=("Llama-3.2-1B", "Llama-3.1-8B")), _GRAPHS),
    caption="One assumption at a time: the megakernel's advantage barely moves.",
))
