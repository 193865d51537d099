"""Figures for §4b (what limits the FlashAttention kernel on each GPU generation).

Pure figure functions and the section's explorers:

- ``prefill_limits``: one tile's cycles by unit (MMA, exp, other FP32 work, shared memory) for the chosen
  generation, and the modelled TFLOP/s of every generation the GPU runs, over sequence length;
- ``prefill_vs_measured``: the model against the FlashAttention-2/3 papers' benchmark bars, panel by panel,
  with the error per point.

All numbers come from :mod:`labcore.prefill`; ``compute`` functions are numpy-only. The benchmark shape is
the papers': hidden 2048 (heads = 2048 / head_dim) and 16k tokens per batch (batch = 16384 / seqlen).
"""
from __future__ import annotations

import numpy as np

from labcore import prefill as pf
from labcore.roofline import roofline_table
from labcore.hardware import get_gpu
from labcore.units import fmt_flop_rate, unit_label
from ..display import Table
from ..explorer import Explorer, Slider, register
from .base import new_figure

__all__ = ["limits_data", "limits_figure", "measured_data", "measured_figure", "roofline_widget",
           "residual_table", "MEASURED_SETS"]

_GPUS = ("A100-80GB-SXM", "H100-SXM", "B200")
_GPUS_LIVE = ("A100-40GB-SXM", "A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200")
_SEQ_CURVE = np.array([512, 1024, 2048, 4096, 8192, 16384])
_COLORS = {"fa2": "#d95f02", "fa3": "#1b9e77", "fa4": "#7570b3"}
_UNIT_COLORS = ("#4c72b0", "#dd8452", "#c9a227", "#55a868")
_TOKENS = 16384
_HIDDEN = 2048
_COMPARE_CACHE: dict = {}   # compare_prefill per last-wave rule (the stored bars never change)

#: Sets of published bars the comparison figure offers: label -> (figure prefix, generation).
MEASURED_SETS = {
    "FA2 on A100, fwd+bwd (FA2 Fig. 4)": ("fa2_fig4", "fa2"),
    "FA3 on H100, forward (FA3 Fig. 5)": ("fa3_fig5", "fa3"),
    "FA2 on H100, fwd+bwd (FA2 Fig. 7)": ("fa2_fig7", "fa2"),
    "FA2 on H100, forward (FA3 Fig. 5)": ("fa3_fig5", "fa2"),
}


def _newest(gpu) -> str:
    return [g for g in pf.GENERATIONS if pf.generation_available(g, gpu)][-1]


def limits_data(gpu="H100-SXM", *, head_dim=128, seqlen=16384, causal=False, generation="newest",
                pass_="forward", last_wave="full"):
    """Per-tile cycles of the chosen generation and TFLOP/s over sequence length for every available one.

    ``generation="newest"`` picks the newest generation the GPU runs (FA2 on A100, FA3 on Hopper, FA4 on
    B200); a generation the GPU does not run is reported as unavailable (``available=False``), not an error.
    Returns a dict: ``gpu``, ``generation``, ``available``, ``tile`` (cycles by unit and ``bound``), ``curves``
    ({generation: TFLOP/s over ``seqlens``}), ``point`` (the :func:`labcore.prefill.prefill_time` dict at
    ``seqlen``), ``peak`` (TFLOP/s).
    """
    g = get_gpu(gpu)
    gen = _newest(g) if generation == "newest" else generation
    heads = max(1, _HIDDEN // head_dim)
    kw = dict(heads=heads, head_dim=head_dim, causal=causal, pass_=pass_, last_wave=last_wave)
    curves = {}
    for name in pf.GENERATIONS:
        if pf.generation_available(name, g):
            r = pf.prefill_time(g, batch=np.maximum(1, _TOKENS // _SEQ_CURVE), seqlen=_SEQ_CURVE, generation=name, **kw)
            curves[name] = r["tflops"]
    available = pf.generation_available(gen, g)
    point = pf.prefill_time(g, batch=max(1, _TOKENS // seqlen), seqlen=seqlen, generation=gen, **kw) \
        if available else None
    return dict(gpu=g.name, generation=gen, available=available, seqlens=_SEQ_CURVE, curves=curves, point=point,
                tile=None if point is None else point["fwd_tile"], peak=g.tensor_flops / 1e12, head_dim=head_dim,
                heads=heads, seqlen=seqlen, causal=causal, pass_=pass_,
                mma_efficiency=pf.PREFILL_DEFAULTS["mma_efficiency"])


def limits_figure(d, **_):
    """Left: the chosen generation's forward tile, cycles by unit and the tile's cost. Right: TFLOP/s vs seqlen."""
    fig = _limits_axes(d["available"])
    _limits_content(fig, d)
    return fig


def _limits_available(gpu="H100-SXM", generation="newest", **_) -> bool:
    """Whether :func:`limits_data` at these parameters has a tile to draw: the explorer's layout key."""
    g = get_gpu(gpu)
    return pf.generation_available(_newest(g) if generation == "newest" else generation, g)


def _limits_axes(available: bool):
    fig, (ax, ax2) = new_figure(1, 2, width=8.6, height=3.7, gridspec_kw=dict(width_ratios=[2, 3]))
    if available:
        ax.tick_params(axis="x", labelsize=9)
    else:
        ax.set_axis_off()
    ax.set_ylabel("cycles per tile (one SM)")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("sequence length (batch = 16k tokens / seqlen)")
    ax2.set_ylabel(unit_label("model rate", "TFLOP/s", "in the papers' count"))
    return fig


def _limits_content(fig, d, **_):
    ax, ax2 = fig.axes
    if d["available"]:
        t = d["tile"]
        names = ["MMA", "exp", "other FP32", "SMEM"]
        vals = [t["mma"], t["exp"], t["fma"], t["smem"]]
        ax.bar(names, vals, color=_UNIT_COLORS)
        ax.axhline(t["cycles"], color="k", lw=1, ls="--")
        ax.text(-0.4, t["cycles"], f"tile: {t['cycles']:,.0f} cycles", va="bottom", fontsize=9)
        ax.set_ylim(0, max(vals + [t["cycles"]]) * 1.25)
        ax.set_title(f"{d['generation'].upper()} forward tile 128 x 128, d = {d['head_dim']} (model: MMA at "
                     f"{d['mma_efficiency']:.0%})\nbound: {t['bound']}", fontsize=9)
    else:
        ax.text(0.5, 0.5, f"{d['generation'].upper()} does not run on\n{d['gpu']} (not modelled)",
                ha="center", va="center", fontsize=9, transform=ax.transAxes)
    for name, y in d["curves"].items():
        lw = 2.2 if name == d["generation"] else 1.0
        ax2.plot(d["seqlens"], y, "o-", lw=lw, ms=3, color=_COLORS[name], label=name.upper())
    ax2.axhline(d["peak"], color="#999999", lw=0.8, ls=":")
    ax2.text(d["seqlens"][0], d["peak"], "dense BF16 peak", fontsize=9, va="bottom", color="#666666")
    marked = ""
    if d["point"] is not None:
        # the ringed point's rate goes in the title: a label beside the point would sit on the other curves
        y = float(d["point"]["tflops"])
        ax2.plot([d["seqlen"]], [y], "o", ms=9, mfc="none", color="k")
        marked = (f"\nringed: {d['generation'].upper()} at {d['seqlen']:,}, "
                  f"{fmt_flop_rate(y * 1e12, unit='TFLOP', digits=0)} ({float(d['point']['fraction_of_peak']):.0%} of peak)")
    ax2.set_ylim(0, d["peak"] * 1.12)
    ax2.set_title(f"{d['gpu']}, {d['heads']} heads x d = {d['head_dim']}, "
                  f"{'causal' if d['causal'] else 'non-causal'}, {d['pass_']}{marked}", fontsize=9)
    ax2.legend(fontsize=9, loc="lower right")


def measured_data(dataset="FA2 on A100, fwd+bwd (FA2 Fig. 4)", *, last_wave="full"):
    """:func:`labcore.prefill.compare_prefill` restricted to one set of published bars (a key of MEASURED_SETS),
    with ``rule_acts``: whether the other last-wave rule would model any of its points differently (the figure
    says so when it would not)."""
    if dataset not in MEASURED_SETS:
        raise ValueError(f"dataset must be one of {', '.join(MEASURED_SETS)}; got {dataset!r}")
    prefix, gen = MEASURED_SETS[dataset]
    if last_wave not in _COMPARE_CACHE:
        _COMPARE_CACHE[last_wave] = pf.compare_prefill(last_wave=last_wave)
    c = _COMPARE_CACHE[last_wave]
    sel = np.char.startswith(c["figure"].astype(str), prefix) & (c["generation"] == gen)
    keys = ("figure", "causal", "head_dim", "seqlen", "flops_per_s", "model_flops_per_s", "error")
    # does the rule move any point of this set? (it moves only the HBM floor, which few published bars reach)
    other = "shared" if last_wave == "full" else "full"
    if other not in _COMPARE_CACHE:
        _COMPARE_CACHE[other] = pf.compare_prefill(last_wave=other)
    acts = not np.array_equal(c["model_flops_per_s"][sel], _COMPARE_CACHE[other]["model_flops_per_s"][sel])
    return dict({k: c[k][sel] for k in keys}, dataset=dataset, last_wave=last_wave, rule_acts=bool(acts))


def measured_figure(c, **_):
    """Top: measured bars (dots) and the model (lines) per panel. Bottom: model / measured - 1 per point."""
    return VS_MEASURED.draw(c)


def _measured_setup(**_):
    fig, (ax, ax2) = new_figure(2, 1, width=7.6, height=6.0, sharex=True, gridspec_kw=dict(height_ratios=[3, 2]))
    ax.set_ylabel(unit_label("", "TFLOP/s"))
    ax2.set_ylabel("model error (%)")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("sequence length (shaded: within ±15%)")
    return fig


def _measured_content(fig, c, **_):
    ax, ax2 = fig.axes
    panels = list(dict.fromkeys(c["figure"]))
    cmap = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#a6761d")
    for k, p in enumerate(panels):
        s = c["figure"] == p
        lab = f"d = {c['head_dim'][s][0]}, {'causal' if c['causal'][s][0] else 'non-causal'}"
        ax.plot(c["seqlen"][s], c["flops_per_s"][s] / 1e12, "o", color=cmap[k], label=f"measured, {lab}")
        ax.plot(c["seqlen"][s], c["model_flops_per_s"][s] / 1e12, "-", color=cmap[k])
        ax2.plot(c["seqlen"][s], c["error"][s] * 100, "o-", color=cmap[k], ms=4)
    ax.set_ylim(0, None)
    rule = (f"last-wave rule {c['last_wave']}" if c["rule_acts"]
            else "the last-wave rule moves no point of this set")
    ax.set_title(f"{c['dataset']}: dots measured, lines model\n{rule}", fontsize=9)
    ax.legend(fontsize=9, ncol=1, loc="lower right")   # the rates sit high, above the legend
    ax2.axhspan(-15, 15, color="#eeeeee", lw=0)
    ax2.axhline(0, color="k", lw=0.8)
    ax2.set_xticks(list(dict.fromkeys(c["seqlen"].tolist())))
    ax2.set_xticklabels([f"{n // 1024}k" if n >= 1024 else str(n) for n in dict.fromkeys(c["seqlen"].tolist())])


def roofline_widget(*, block_q=128, block_kv=128, d=128,
                    gpus=("A100-40GB-SXM", "H100-SXM", "B200")) -> Table:
    """The FlashAttention-4 tile roofline (forward and backward) on several GPUs, as a :class:`Table`;
    block_q, block_kv (flash-attn's kBlockM, kBlockN), d as :func:`labcore.tile_roofline`."""
    rows = []
    for pass_ in ("forward", "backward"):
        table = roofline_table(gpus, block_q=block_q, block_kv=block_kv, d=d, pass_=pass_)
        rows += [(pass_, name, mma, exp, smem, bound) for name, mma, exp, smem, bound in table]
    return Table(rows, ["pass", "GPU", "MMA cycles", "exp cycles", "SMEM cycles", "bound"],
                 [None, None, ",.0f", ",.0f", ",.0f", None],
                 caption=f"One tile, B_r = {block_q} query rows, B_c = {block_kv} keys, d = {d}, BF16 "
                         "(FlashAttention-4 formulas)")


def residual_table(c=None) -> Table:
    """Per panel: points, share within ±15% and the worst error of :func:`labcore.prefill.compare_prefill`."""
    c = pf.compare_prefill() if c is None else c
    rows = [(k, n, share, worst) for k, (n, share, worst) in c["summary"].items()]
    return Table(rows, ["panel / generation", "points", "within ±15%", "worst error"], [None, "d", ".0%", "+.0%"])


register(Explorer(
    "prefill_limits",
    compute=limits_data,
    setup=lambda **p: _limits_axes(_limits_available(**p)),
    content=_limits_content,
    layout_key=_limits_available,
    sliders=(
        Slider("gpu", _GPUS, "H100-SXM", label="GPU", live=_GPUS_LIVE),
        Slider("head_dim", (64, 128), 128, label="head dim d", live=(64, 128, 256)),
        Slider("seqlen", (1024, 16384), 16384, label="sequence length", live=tuple(int(n) for n in _SEQ_CURVE), fmt=",d"),
        Slider("causal", (False, True), False, label="causal"),
        Slider("generation", ("newest",), "newest", label="generation", live=("newest",) + pf.GENERATIONS),
        Slider("pass_", ("forward",), "forward", label="pass", live=pf.PREFILL_PASSES),
    ),
    caption="What bounds one tile, and the modelled throughput of each FlashAttention generation",
))

VS_MEASURED = register(Explorer(
    "prefill_vs_measured",
    compute=lambda dataset, last_wave: measured_data(dataset, last_wave=last_wave),
    setup=_measured_setup,
    content=_measured_content,
    sliders=(
        Slider("dataset", tuple(MEASURED_SETS), "FA2 on A100, fwd+bwd (FA2 Fig. 4)", label="published bars"),
        Slider("last_wave", ("full",), "full", label="last-wave rule", live=("full", "shared")),
    ),
    caption="The prefill model against the FlashAttention-2 and -3 papers' benchmark bars",
))
