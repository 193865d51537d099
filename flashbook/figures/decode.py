"""Figures for lecture §6 (decode attention: flash-decoding and the CTA x wave time model).

Pure figure functions (parameters in, matplotlib Figure out) and the section's explorers:

- ``decode_occupancy``: CTAs on SMs, wave by wave, FlashAttention-2 vs flash-decoding;
- ``decode_splits``: model time vs split count (wave quantisation), with the model's best and flash-attn's
  heuristic (before and after the 2.5.7 SM doubling);
- ``decode_vs_measured``: the model against the flash-decoding post's A100 table, with ratios;
- ``decode_speedup``: heatmap of the model's FlashAttention-2 / flash-decoding time over batch x seqlen.

All numbers come from :mod:`labcore.decode` and :mod:`labcore.decode_model`; ``compute`` functions are numpy-only.
"""
from __future__ import annotations

import numpy as np

from labcore import decode as lc_decode
from labcore import decode_model as dm
from labcore import decode_time as dt
from labcore import splits
from labcore.checks import cdiv
from labcore.hardware import get_gpu
from labcore.units import fmt_seconds, unit_label
from ..display import Table, Tables
from ..explorer import Explorer, Slider, register
from .base import axes_setup, colorbar, new_figure
from .overlap import legend_below

__all__ = [
    "SPLIT_CHOICES",
    "occupancy_data",
    "occupancy_figure",
    "splits_data",
    "splits_figure",
    "measured_data",
    "measured_figure",
    "speedup_data",
    "speedup_figure",
    "measured_table",
    "last_wave_table",
]

#: Slider labels for the split rule -> the ``num_splits`` argument of the model.
SPLIT_CHOICES = {"model-best": None, "heuristic": "heuristic", "heuristic-2.5.7": "heuristic-2.5.7"}
_GPU_CHOICES = ("A100-40GB-SXM", "A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200")
_MAX_WAVES_DRAWN = 40
_C_FA2, _C_FD, _C_REF, _C_MEAS = "#d95f02", "#1b9e77", "#7570b3", "#333333"


def _splits_arg(splits):
    if isinstance(splits, str):
        if splits not in SPLIT_CHOICES:
            raise ValueError(f"splits must be an int >= 1 or one of {', '.join(SPLIT_CHOICES)}; got {splits!r}")
        return SPLIT_CHOICES[splits]
    return splits


# ------------------------------------------------------------------------------------------ occupancy


def occupancy_data(gpu="A100", *, shape="CodeLlama-34B (4-way TP)", batch=1, seqlen=65536, splits="model-best",
                   method="both", efficiency=0.7):
    """Estimates and CTA -> (wave, SM) maps for FlashAttention-2 and/or flash-decoding.

    Returns dict ``{method: (DecodeEstimate, grid)}`` where ``grid`` is a (waves drawn, num_sms) float array
    holding, for the CTA in that slot, the index ``sequence x H_kv + KV head`` of the K/V it reads (NaN =
    idle SM); at most 40 waves are mapped.
    CTA order follows flash-attn's launch grids (FA2: batch fastest; split-KV: split fastest).
    """
    g = get_gpu(gpu)
    sh = dm.get_decode_shape(shape)
    methods = dt.DECODE_METHODS if method == "both" else (method,)
    out = {}
    for m in methods:
        ns = None if m == "fa2" else _splits_arg(splits)
        e = dt.decode_attention_time(g, batch=batch, seqlen=seqlen, method=m, num_splits=ns,
                                      efficiency=efficiency, **sh)
        n = min(e.num_ctas, _MAX_WAVES_DRAWN * g.num_sms)
        idx = np.arange(n)
        if m == "fa2":  # grid (m_block, batch, head): batch varies fastest
            b, h = idx % e.batch, idx // e.batch
            seq = b * e.num_kv_heads + h // (e.num_q_heads // e.num_kv_heads)
        else:  # grid (m_block, split, batch x KV head): split varies fastest
            seq = idx // (e.num_splits * cdiv(lc_decode.gqa_group_size(e.num_q_heads, e.num_kv_heads), e.rows_padded))
        rows = cdiv(n, g.num_sms)
        grid = np.full(rows * g.num_sms, -1.0)   # -1: idle SM slot
        grid[:n] = seq
        out[m] = (e, grid.reshape(rows, g.num_sms))
    return out


def occupancy_figure(data, splits=None, **_):
    """One panel per method: SMs across, waves down, each CTA coloured by its sequence; idle SMs blank."""
    fig = _occupancy_axes(len(data))
    _occupancy_content(fig, data, splits)
    return fig


def _occupancy_panels(method="both", **_) -> int:
    """How many panels :func:`occupancy_data` at ``method`` fills (one per method): the explorer's layout key."""
    return len(dt.DECODE_METHODS) if method == "both" else 1


def _occupancy_axes(panels: int):
    fig, axes = new_figure(panels, 1, width=7.4, height=1.9 + 1.6 * panels, squeeze=False)
    for ax in axes[:, 0]:
        ax.set_facecolor("#f2f2f2")
        ax.set_ylabel("wave")
    return fig


def _occupancy_content(fig, data, splits=None, **_):
    axes = fig.axes
    for ax, (m, (e, grid)) in zip(axes, data.items()):
        masked = np.ma.masked_less(np.where(grid >= 0, grid % 20, -1), 0)
        ax.imshow(masked, cmap="tab20", vmin=0, vmax=19, aspect="auto", interpolation="nearest",
                  extent=(0, e.num_sms, grid.shape[0], 0))
        rule = f"{splits} = " if isinstance(splits, str) else ""
        name = "FlashAttention-2 (no splits)" if m == "fa2" else f"flash-decoding, {rule}{e.num_splits} split(s)"
        more = f" (first {grid.shape[0]} of {e.waves} waves drawn)" if e.waves > grid.shape[0] else ""
        why = ": efficiency has no effect" if e.bound == "memory" else ": efficiency sets the time"
        ax.set_title(f"{name}: {e.num_ctas:,} CTAs, {e.waves} wave(s), {e.wave_efficiency:.0%} of SM slots busy\n"
                     f"{e.rows_real}/{e.rows_padded} rows real, {fmt_seconds(e.total, unit='µs')} ({e.bound}-bound{why}){more}",
                     fontsize=9)
        ax.set_yticks(np.arange(grid.shape[0]) + 0.5 if grid.shape[0] <= 8 else [])
        if grid.shape[0] <= 8:
            ax.set_yticklabels([str(i + 1) for i in range(grid.shape[0])])
    axes[-1].set_xlabel(f"SM on {e.gpu} (colour: the K/V a CTA reads, i.e. its sequence and KV head; grey: idle)",
                        fontsize=9)


# ------------------------------------------------------------------------------------------ splits


def splits_data(gpu="A100", *, shape="CodeLlama-34B (4-way TP)", batch=64, seqlen=2048, efficiency=0.7,
                variant="base", max_splits=128):
    """Model time for every split count 1 .. max_splits plus the model-best and heuristic choices."""
    g = get_gpu(gpu)
    sh = dm.get_decode_shape(shape)
    s = np.arange(1, max_splits + 1)
    r = dt.decode_time_grid(g, batch=batch, seqlen=seqlen, method="flash_decoding", num_splits=s,
                             variant=variant, efficiency=efficiency, **sh)
    kw = dict(batch=batch, seqlen=seqlen, **sh)
    fa2 = dt.decode_attention_time(g, method="fa2", variant=variant, efficiency=efficiency, **kw)
    return dict(
        s=s, total=r["total"], waves=r["waves"], ctas=r["num_ctas"], num_sms=g.num_sms, gpu=g.name,
        best=dt.best_num_splits(g, variant=variant, efficiency=efficiency, **kw),
        heur=splits.flash_attn_num_splits(g, sm_doubling=False, **kw),
        heur2=splits.flash_attn_num_splits(g, sm_doubling=True, **kw),
        floor=lc_decode.kv_cache_bytes(batch=batch, seqlen=seqlen, num_kv_heads=sh["num_kv_heads"],
                                 head_dim=sh["head_dim"]) / g.hbm_bandwidth,
        fa2=fa2.total, batch=batch, seqlen=seqlen, variant=variant,
        compute_bound=int(np.count_nonzero(r["bound_compute"])), fa2_bound=fa2.bound,
    )


def splits_figure(d, **params):
    """Time vs split count; background shading alternates with the wave count; markers for the choices."""
    return SPLITS.draw(d, **params)


def _splits_setup(**_):
    fig, ax = new_figure(width=7.2, height=6.6)   # tall: a four-line title above, a five-line legend below
    ax.set_xlabel("splits per (sequence, KV head)   (shading alternates with the number of waves)")
    ax.set_ylabel(unit_label("model time", "µs"))
    ax.set_xscale("log", base=2)
    return fig


def _splits_content(fig, d, **_):
    from matplotlib.collections import PolyCollection

    ax = fig.axes[0]
    s, t = d["s"], d["total"] * 1e6
    w = d["waves"]
    edges = np.flatnonzero(np.diff(w)) + 1
    starts = np.concatenate([[0], edges])
    stops = np.concatenate([edges, [len(s)]])
    # every other wave count shaded: one collection spanning the axes' height (x in data, y in axes
    # coordinates, as axvspan draws), instead of one patch per span
    spans = [(s[a] - 0.5, s[b - 1] + 0.5) for k, (a, b) in enumerate(zip(starts, stops)) if k % 2]
    if spans:
        ax.add_collection(PolyCollection([((x0, 0), (x0, 1), (x1, 1), (x1, 0)) for x0, x1 in spans],
                                         facecolors="#eeeeee", edgecolors="none", linewidths=0,
                                         transform=ax.get_xaxis_transform()), autolim=False)
        ax.update_datalim([(x, 0) for span in spans for x in span], updatey=False)
    ax.plot(s, t, color=_C_FD, lw=1.6, label=f"flash-decoding ({d['variant']} model)")
    ax.axhline(d["floor"] * 1e6, color="k", ls=":", lw=1, label="read the KV cache once at full bandwidth")
    for val, lab, mk, col in ((d["best"], "model-best", "o", _C_FD), (d["heur"], "flash-attn heuristic", "s", _C_REF),
                              (d["heur2"], "heuristic, SMs x2 (≥ 2.5.7)", "^", _C_FA2)):
        ax.plot([val], [t[val - 1]], mk, color=col, ms=8, mfc="none", mew=2,
                label=f"{lab}: {val} split(s), {fmt_seconds(d['total'][val - 1], unit='µs')}")
    ax.set_ylim(0, min(t.max(), 4 * t.min()) * 1.1)
    ax.set_title(f"{d['gpu']}, batch {d['batch']}, seqlen {d['seqlen']:,}: FlashAttention-2 would take "
                 f"{fmt_seconds(d['fa2'], unit='µs', digits=0)}\n{_bound_note(d)}", fontsize=9)
    legend_below(fig)


def _bound_note(d) -> str:
    """Whether the tensor-core efficiency can move this figure: only compute-bound CTAs depend on it."""
    n, fa2 = d["compute_bound"], d["fa2_bound"] == "compute"
    if not n and not fa2:
        return "memory-bound at every split count and for FlashAttention-2: efficiency has no effect here"
    where = f"at {n} of {len(d['s'])} split counts" if n else "nowhere for flash-decoding"
    return f"compute-bound {where}" + (", and for FlashAttention-2" if fa2 else "") + ": efficiency matters there"


# ------------------------------------------------------------------------------------------ vs measured


def measured_data(gpu="A100", *, splits="model-best", efficiency=0.7):
    """:func:`labcore.decode_model.compare_flash_decoding_a100` at the chosen split rule and efficiency."""
    return dm.compare_flash_decoding_a100(gpu, num_splits=_splits_arg(splits), efficiency=efficiency)


def measured_figure(c, **params):
    """Top: measured and modelled times (log scale) for the 10 rows. Bottom: model / measured."""
    return VS_MEASURED.draw(c, **params)


def _measured_setup(**_):
    fig, (ax, ax2) = new_figure(2, 1, width=7.6, height=7.0, sharex=True, gridspec_kw=dict(height_ratios=[3, 2]))
    ax.set_yscale("log")
    ax.set_ylabel(unit_label("time per call", "µs"))
    ax2.set_ylabel("model / measured")
    ax2.set_xlabel("batch / sequence length (A100, 16 q heads, 2 KV heads, d = 128)")
    return fig


def _measured_content(fig, c, **_):
    ax, ax2 = fig.axes
    x = np.arange(len(c["batch"]))
    us = 1e6
    ax.plot(x, c["eager"] * us, "x", color="#999999", label="measured: PyTorch eager")
    ax.plot(x, c["fa2"] * us, "o", color=_C_FA2, label="measured: FlashAttention v2.0.9")
    ax.plot(x, c["flash_decoding"] * us, "o", color=_C_FD, label="measured: flash-decoding")
    ax.plot(x, c["model_fa2"] * us, "-", color=_C_FA2, label="model: FlashAttention-2")
    ax.plot(x, c["model_fd"] * us, "-", color=_C_FD, label="model: flash-decoding (base)")
    ax.plot(x, c["refined_fd"] * us, "--", color=_C_REF, label="model: flash-decoding (refined)")
    ax.legend(fontsize=9, ncol=1, loc="lower center", bbox_to_anchor=(0.5, 1.01), frameon=False)   # above: no data hidden
    ax2.axhspan(0.88, 1.12, color="#eeeeee", lw=0, label="±12%")
    ax2.axhline(1, color="k", lw=0.8)
    ax2.plot(x, c["model_fa2"] / c["fa2"], "o-", color=_C_FA2, label="FA2 (base)")
    ax2.plot(x, c["refined_fa2"] / c["fa2"], "o:", color=_C_FA2, mfc="none", label="FA2 (refined)")
    ax2.plot(x, c["model_fd"] / c["flash_decoding"], "s-", color=_C_FD, label="flash-decoding (base)")
    ax2.plot(x, c["refined_fd"] / c["flash_decoding"], "s--", color=_C_REF, label="flash-decoding (refined)")
    ax2.set_ylim(0.45, 1.35)
    legend_below(fig, ax2, ncols=2)
    ax2.set_xticks(x)
    ax2.set_xticklabels([f"{b}\n{n // 1024}K" if n >= 1024 else f"{b}\n{n}" for b, n in zip(c["batch"], c["seqlen"])], fontsize=9)


# ------------------------------------------------------------------------------------------ heatmap

_HEAT_B = np.unique(np.round(np.logspace(0, 8, 100, base=2)).astype(np.int64))
_HEAT_N = np.unique(np.round(np.logspace(8, 17, 100, base=2)).astype(np.int64))


def speedup_data(gpu="A100", *, shape="CodeLlama-34B (4-way TP)", splits="model-best", efficiency=0.7,
                 batches=None, seqlens=None):
    """FA2 time / flash-decoding time over a (batch, seqlen) grid (default about 100 x 100, log-spaced)."""
    b = _HEAT_B if batches is None else np.asarray(batches)
    n = _HEAT_N if seqlens is None else np.asarray(seqlens)
    sh = dm.get_decode_shape(shape)
    kw = dict(batch=b[:, None], seqlen=n[None, :], efficiency=efficiency, **sh)
    fa = dt.decode_time_grid(gpu, method="fa2", **kw)["total"]
    fd = dt.decode_time_grid(gpu, method="flash_decoding", num_splits=_splits_arg(splits), **kw)["total"]
    return dict(b=b, n=n, speedup=fa / fd, gpu=get_gpu(gpu).name, shape=shape, splits=splits)


def speedup_figure(d, **params):
    """Heatmap of the speedup (log colour scale) with contours at 2x, 5x, 10x, 20x, 50x."""
    return SPEEDUP.draw(d, **params)


_speedup_setup = axes_setup(6.6, 4.4, xlabel="sequence length (keys)", ylabel="batch")


def _label_each_level_once(ax, cs) -> None:
    """One label per contour level, at the middle of the level's longest piece (in log-log distance): a level
    drawn as several pieces (the speedup's ridges) got a label on each from matplotlib's placement, two of them
    on each other at some settings."""
    spots = []
    for path in cs.get_paths():
        best, best_len = None, 0.0
        for piece in path.to_polygons(closed_only=False):
            if len(piece) < 2:
                continue
            logs = np.log2(piece)
            length = float(np.hypot(*np.diff(logs, axis=0).T).sum())
            if length > best_len:
                best, best_len = piece, length
        if best is not None:
            spots.append(tuple(best[len(best) // 2]))
    if spots:
        # not inline (the gap it cuts is placed in the screen space of the moment, before the log scales and the
        # frozen layout move the line), not turned along the line (for the same reason): level and upright, on a dark plate
        for t in ax.clabel(cs, fmt=lambda v: f"{v:g}x", fontsize=9, manual=spots, inline=False):
            t.set_rotation(0)
            t.set_bbox(dict(boxstyle="round,pad=0.15", facecolor="black", alpha=0.45, linewidth=0))


def _speedup_content(fig, d, **_):
    """The heatmap, its contours and the title, then the log scales and the colorbar: the contour labels are
    placed in screen space when drawn, so the static frames keep this order (labels placed on linear axes)."""
    from matplotlib.colors import LogNorm

    ax = fig.axes[0]
    sp = d["speedup"]
    pc = ax.pcolormesh(d["n"], d["b"], sp, shading="nearest", cmap="viridis",
                       norm=LogNorm(vmin=max(sp.min(), 0.5), vmax=max(sp.max(), 2)))
    levels = [v for v in (2, 5, 10, 20, 50) if sp.min() < v < sp.max()]
    if levels:
        cs = ax.contour(d["n"], d["b"], sp, levels=levels, colors="white", linewidths=0.8)
        _label_each_level_once(ax, cs)
    ax.set_title(f"model speedup of flash-decoding ({d['splits']}) over FlashAttention-2\n{d['gpu']}, {d['shape']}",
                 fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    colorbar(fig, pc, ax, label="FA2 time / flash-decoding time")


# ------------------------------------------------------------------------------------------ explorers

_SHAPES = tuple(dm.DECODE_SHAPES)
_POW2_B = tuple(2 ** k for k in range(0, 9))
_POW2_N = tuple(2 ** k for k in range(8, 18))
_SPLIT_LIVE = ("model-best", "heuristic", "heuristic-2.5.7", 1, 2, 4, 8, 16, 32, 64, 128)
_EFF = (0.5, 0.6, 0.7, 0.8, 0.9)


def _shape_slider(static=("CodeLlama-34B (4-way TP)",)):
    return Slider("shape", static, "CodeLlama-34B (4-way TP)", label="model (q heads / KV heads / d)", live=_SHAPES)


def _eff_slider(static=(0.7,)):
    return Slider("efficiency", static, 0.7, label="tensor-core efficiency", live=_EFF, fmt=".1f")


register(Explorer(
    "decode_occupancy",
    compute=lambda gpu, shape, batch, seqlen, splits, method, efficiency: occupancy_data(
        gpu, shape=shape, batch=batch, seqlen=seqlen, splits=splits, method=method, efficiency=efficiency),
    setup=lambda **p: _occupancy_axes(_occupancy_panels(**p)),
    content=_occupancy_content,
    layout_key=_occupancy_panels,
    sliders=(
        Slider("gpu", ("A100-40GB-SXM", "H100-SXM"), "A100-40GB-SXM", label="GPU", live=_GPU_CHOICES),
        _shape_slider(),
        Slider("batch", (1, 16, 64), 1, label="batch", live=_POW2_B, fmt=",d"),
        Slider("seqlen", (2048, 65536), 65536, label="sequence length", live=_POW2_N, fmt=",d"),
        Slider("splits", ("model-best", "heuristic"), "model-best", label="splits", live=_SPLIT_LIVE),
        Slider("method", ("both",), "both", label="method", live=("both", "fa2", "flash_decoding")),
        _eff_slider(),
    ),
    caption="CTAs on SMs, wave by wave: FlashAttention-2 vs flash-decoding",
))

SPLITS = register(Explorer(
    "decode_splits",
    compute=splits_data,
    setup=_splits_setup,
    content=_splits_content,
    sliders=(
        Slider("gpu", ("A100-40GB-SXM", "H100-SXM"), "A100-40GB-SXM", label="GPU", live=_GPU_CHOICES),
        _shape_slider(),
        Slider("batch", (1, 64), 64, label="batch", live=_POW2_B, fmt=",d"),
        Slider("seqlen", (2048, 65536), 2048, label="sequence length", live=_POW2_N, fmt=",d"),
        _eff_slider(),
        Slider("variant", ("base", "refined"), "base", label="model variant"),
    ),
    caption="Model time vs split count: wave quantisation and the split heuristics",
))

VS_MEASURED = register(Explorer(
    "decode_vs_measured",
    compute=lambda gpu, splits, efficiency: measured_data(gpu, splits=splits, efficiency=efficiency),
    setup=_measured_setup,
    content=_measured_content,
    sliders=(
        Slider("gpu", ("A100-40GB-SXM", "A100-80GB-SXM"), "A100-40GB-SXM", label="A100 variant"),
        Slider("splits", tuple(SPLIT_CHOICES), "model-best", label="flash-decoding splits"),
        _eff_slider((0.6, 0.7, 0.8)),
    ),
    caption="The CTA x wave model against the flash-decoding post's A100 measurements",
))

SPEEDUP = register(Explorer(
    "decode_speedup",
    compute=lambda gpu, shape, splits, efficiency: speedup_data(gpu, shape=shape, splits=splits, efficiency=efficiency),
    setup=_speedup_setup,
    content=_speedup_content,
    sliders=(
        Slider("gpu", ("A100-40GB-SXM", "H100-SXM", "B200"), "A100-40GB-SXM", label="GPU", live=_GPU_CHOICES),
        _shape_slider(("CodeLlama-34B (4-way TP)", "Llama-3.1-8B")),
        Slider("splits", ("model-best", "heuristic"), "model-best", label="flash-decoding splits",
               live=tuple(SPLIT_CHOICES)),
        _eff_slider(),
    ),
    caption="Where flash-decoding pays: model speedup over FlashAttention-2 across batch and sequence length",
))


def measured_table(c):
    """The 10 rows of :func:`labcore.decode_model.compare_flash_decoding_a100` as two tables, each narrow enough for
    the text column: FlashAttention-2 (measured, model, errors of both model variants), then flash-decoding
    (measured, model and refined model with their split counts in brackets, errors); times in µs.

    Returns:
        :class:`flashbook.display.Tables` of the two :class:`flashbook.display.Table`.
    Source: dao2023flashdecoding (the measurements); :func:`labcore.decode_model.compare_flash_decoding_a100`.
    """
    us = 1e6
    n = range(len(c["batch"]))
    fa2 = [(c["batch"][i], f"{c['seqlen'][i]:,}", f"{c['fa2'][i] * us:,.1f}", f"{c['model_fa2'][i] * us:,.1f}",
            f"{c['err_model_fa2'][i]:+.1%}", f"{c['refined_fa2'][i] / c['fa2'][i] - 1:+.1%}") for i in n]
    fd = [(c["batch"][i], f"{c['seqlen'][i]:,}", f"{c['flash_decoding'][i] * us:.1f}",
           f"{c['model_fd'][i] * us:.1f} [{c['splits_fd'][i]}]", f"{c['err_model_fd'][i]:+.1%}",
           f"{c['refined_fd'][i] * us:.1f} [{c['splits_fd_refined'][i]}]", f"{c['err_refined_fd'][i]:+.1%}")
          for i in n]
    return Tables(
        Table(fa2, ["batch", "seqlen", unit_label("measured", "µs"), unit_label("model", "µs"), "error",
                    "error (refined)"],
              caption="FlashAttention-2 (v2.0.9) on the A100: measured and modelled"),
        Table(fd, ["batch", "seqlen", unit_label("measured", "µs"), unit_label("model", "µs") + " [splits]", "error",
                   unit_label("refined", "µs") + " [splits]", "error (refined)"],
              caption="Flash-decoding on the A100: measured and modelled, each model's split count in brackets"))


def last_wave_table(by_rule: dict, variant: str = "base"):
    """Each last-wave rule's error on every row of the flash-decoding post's A100 table, then its mean and max size.

    Args:
        by_rule: ``{rule: compare_flash_decoding_a100(last_wave=rule)}`` for the rules to show (``"full"``,
            ``"shared"``), in column order.
        variant: ``"base"`` or ``"refined"`` (which model's errors).
    Returns:
        :class:`flashbook.display.Table`: batch, seqlen, then FlashAttention-2's and flash-decoding's relative
        error (model / measured - 1) under each rule; the last two rows are the mean and the max of the absolute
        error. With more than two rules, :class:`flashbook.display.Tables` of two such tables instead, one per
        kernel (FlashAttention-2, then flash-decoding), so that each fits the text column.
    Raises:
        ValueError: an unknown variant, an empty ``by_rule``, or comparisons of different tables.
    Source: dao2023flashdecoding (the measurements); :func:`labcore.decode_model.compare_flash_decoding_a100`.
    """
    tag = {"base": "model", "refined": "refined"}.get(variant)
    if tag is None:
        raise ValueError(f"variant must be 'base' or 'refined', got {variant!r}")
    if not by_rule:
        raise ValueError("by_rule is empty; pass {rule: compare_flash_decoding_a100(last_wave=rule)}")
    first = next(iter(by_rule.values()))
    if any(not np.array_equal(c["batch"], first["batch"]) or not np.array_equal(c["seqlen"], first["seqlen"])
           for c in by_rule.values()):
        raise ValueError("the comparisons in by_rule are of different tables")
    cols = [(f"{m} ({rule})", c[f"err_{tag}_{k}"]) for m, k in (("FA2", "fa2"), ("FD", "fd"))
            for rule, c in by_rule.items()]

    def table(cols, caption=""):
        rows = [(int(first["batch"][i]), f"{int(first['seqlen'][i]):,}") + tuple(f"{e[i]:+.1%}" for _, e in cols)
                for i in range(len(first["batch"]))]
        rows.append(("mean |error|", "") + tuple(f"{np.abs(e).mean():.1%}" for _, e in cols))
        rows.append(("max |error|", "") + tuple(f"{np.abs(e).max():.1%}" for _, e in cols))
        return Table(rows, ["batch", "seqlen"] + [h for h, _ in cols], caption=caption)

    if len(by_rule) <= 2:
        return table(cols)
    n = len(by_rule)
    return Tables(table(cols[:n], f"FlashAttention-2: relative error of the {variant} model under each rule"),
                  table(cols[n:], f"Flash-decoding: relative error of the {variant} model under each rule"))
