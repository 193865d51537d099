"""Figures for lecture §1-§3: roofline, Algorithm 0's traffic, online softmax trace, merges, precision."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from labcore import flops, hbm, precision, softmax
from labcore.hardware import GPUS, get_gpu
from labcore.units import fmt_bytes, fmt_intensity, fmt_seconds, unit_label
from ..explorer import Explorer, Slider, register
from .base import clear_content, new_figure, rescale

__all__ = ["roofline_data", "draw_roofline", "io_vs_N_data", "draw_io_vs_N", "trace_data", "draw_trace",
           "merge_data", "draw_merge", "precision_data", "draw_precision"]

GPU_NAMES = tuple(GPUS)


# ---- §1 roofline -------------------------------------------------------------------------------
def roofline_data(gpu: str = "A100-40GB-SXM", d: int = 64, N: int = 4096) -> dict:
    """Roofline of ``gpu`` and where standard attention (head dim d, length N) sits on it."""
    g = get_gpu(gpu)
    x = np.logspace(-1, 4, 200)
    att = flops.standard_attention_intensity(N, d)
    return {"x": x, "y": np.minimum(g.tensor_flops, x * g.hbm_bandwidth), "ridge": g.critical_intensity,
            "att": att, "att_perf": min(g.tensor_flops, att * g.hbm_bandwidth), "name": g.name, "peak": g.tensor_flops}


def draw_roofline(data, **_):
    fig, ax = new_figure(width=6.4, height=3.6)
    _roofline_content(ax, data)
    ax.set_xlabel(unit_label("arithmetic intensity", "FLOP/byte"))
    ax.set_ylabel(unit_label("attainable rate", "TFLOP/s", "FP16 dense"))
    ax.set_ylim(0.05, 5e3)
    return fig


def _roofline_content(ax, data):
    ax.loglog(data["x"], data["y"] / 1e12, color="C0", lw=2, label=f"{data['name']} roofline")
    ax.axvline(data["ridge"], color="C0", ls=":", lw=1)
    ax.annotate(f"ridge {fmt_intensity(data['ridge'])}", (data["ridge"], data["peak"] / 1e12 / 3), fontsize=8)
    ax.plot([data["att"]], [data["att_perf"] / 1e12], "o", color="C3",
            label=f"standard attention: {fmt_intensity(data['att'])}")
    ax.legend(loc="lower right", fontsize=8)


def update_roofline(fig, data, **_):
    """:func:`draw_roofline` in place (y limits are fixed)."""
    ax = fig.axes[0]
    clear_content(ax)
    ax.set_autoscaley_on(False)
    _roofline_content(ax, data)


register(Explorer(
    "roofline", roofline_data, draw_roofline, update=update_roofline, sliders=
    (Slider("gpu", GPU_NAMES, "A100-40GB-SXM", "GPU"),
     Slider("d", (32, 64, 128, 256), 64, "head dim d")),
    caption="Roofline of each GPU preset with standard attention (N = 4096) placed on it.",
    fixed={"N": 4096}))


# ---- §2 Algorithm 0 traffic vs N ----------------------------------------------------------------
def io_vs_N_data(N: int = 4096, d: int = 64, gpu: str = "A100-40GB-SXM") -> dict:
    """Algorithm 0's traffic split into its N d and N^2 terms over a range of N, in bytes (FP16)."""
    Ns = np.unique(np.logspace(7, 17, 41, base=2).astype(int))
    nd = 4 * Ns * d * 2.0
    nn = 4 * Ns.astype(float) ** 2 * 2.0
    g = get_gpu(gpu)
    total = hbm.standard_attention_io(N, d) * 2
    return {"Ns": Ns, "nd": nd, "nn": nn, "N": N, "d": d, "total": total, "time": total / g.hbm_bandwidth,
            "intensity": flops.standard_attention_intensity(N, d), "ridge": g.critical_intensity, "gpu": g.name}


def draw_io_vs_N(data, **_):
    fig, ax = new_figure(width=6.4, height=3.6)
    ax.loglog(data["Ns"], data["nd"] / 1e6, label="4Nd term (Q, K, V, O)", color="C0")
    ax.loglog(data["Ns"], data["nn"] / 1e6, label="4N² term (S, P round trips)", color="C3")
    ax.loglog(data["Ns"], (data["nd"] + data["nn"]) / 1e6, "k--", lw=1, label="total")
    ax.axvline(data["N"], color="gray", lw=1)
    ax.set_title(_io_title(data), fontsize=8)
    ax.set_xlabel("sequence length N")
    ax.set_ylabel(unit_label("HBM traffic of one head", "MB", "of FP16"))
    ax.legend(fontsize=8)
    return fig


def _io_title(data):
    return (f"N = {data['N']:,}, d = {data['d']}: {fmt_bytes(data['total'], unit='MB')}, "
            f"{fmt_seconds(data['time'], unit='µs', digits=0)} on {data['gpu']}; {fmt_intensity(data['intensity'])} "
            f"vs ridge {fmt_intensity(data['ridge'])}")


def update_io_vs_N(fig, data, **_):
    """:func:`draw_io_vs_N` in place: the three curves, the N marker and the title."""
    ax = fig.axes[0]
    nd, nn, marker = ax.lines[0], ax.lines[1], ax.lines[3]
    nd.set_data(data["Ns"], data["nd"] / 1e6)
    nn.set_data(data["Ns"], data["nn"] / 1e6)
    ax.lines[2].set_data(data["Ns"], (data["nd"] + data["nn"]) / 1e6)
    marker.set_xdata([data["N"], data["N"]])
    ax.set_title(_io_title(data), fontsize=8)
    rescale(ax)


register(Explorer(
    "io_vs_N", io_vs_N_data, draw_io_vs_N, update=update_io_vs_N, sliders=
    (Slider("N", (512, 2048, 8192, 32768), 8192, "N", live=(256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536), fmt=",d"),
     Slider("d", (64, 128), 64, "head dim d", live=(32, 64, 128, 256)),
     Slider("gpu", ("A100-40GB-SXM", "H100-SXM", "B200"), "A100-40GB-SXM", "GPU", live=GPU_NAMES)),
    caption="Algorithm 0's HBM traffic: the N^2 term takes over once N exceeds d."))


# ---- §3 online softmax trace -----------------------------------------------------------------------
@lru_cache(maxsize=8)
def _row(n_keys: int, d: int = 64, seed: int = 0):
    """A random query with n_keys keys and values (read-only; cached: drawing them is most of a slider move)."""
    rng = np.random.default_rng(seed)
    q, K, V = rng.standard_normal(d), rng.standard_normal((n_keys, d)), rng.standard_normal((n_keys, d))
    for a in (q, K, V):
        a.setflags(write=False)
    return q, K, V


def trace_data(n_keys: int = 4096, block: int = 256, seed: int = 0) -> dict:
    """Per-block trace (block max, m, alpha, l) of one-pass online softmax over a random row of n_keys keys."""
    st = softmax.online_softmax_trace(*_row(n_keys, seed=seed), block=block)
    return {k: np.array([t[k] for t in st.trace]) for k in ("block", "block_max", "m", "alpha", "l")}


def draw_trace(data, **_):
    fig, axs = new_figure(1, 3, width=9, height=2.8)
    _trace_content(axs, data)
    axs[0].set_title("m", fontsize=9)
    axs[1].set_title("rescale factor α = exp(m − m_new)", fontsize=9)
    axs[2].set_title("ℓ (relative to the current m)", fontsize=9)
    for ax in axs:
        ax.set_xlabel("block")
    return fig


def _trace_content(axs, data):
    b = data["block"]
    axs[0].step(b, data["m"], where="post", label="running max m")
    axs[0].plot(b, data["block_max"], ".", label="block max")
    axs[0].legend(fontsize=7)
    axs[1].bar(b, data["alpha"], color="C2")
    axs[1].set_ylim(0, 1.05)
    axs[2].plot(b, data["l"], "o-", color="C1", ms=3)


def update_trace(fig, data, **_):
    """:func:`draw_trace` in place."""
    clear_content(*fig.axes)
    _trace_content(fig.axes, data)


register(Explorer(
    "online_trace", trace_data, draw_trace, update=update_trace, sliders=
    (Slider("n_keys", (1024, 4096, 8192), 4096, "keys in the row", fmt=",d"),
     Slider("block", (128, 256, 512), 256, "block size", live=(32, 64, 128, 256, 512, 1024))),
    caption="Online softmax state after each block: m only grows; alpha < 1 exactly when it does."))


# ---- §3 merging segments -----------------------------------------------------------------------------
def merge_data(segments: int = 12, n_keys: int = 3000, seed: int = 1) -> dict:
    """Error of sequential / tree / random-order merges of ``segments`` random segments vs one pass:
    max of the output's absolute error and lse's relative error."""
    rng = np.random.default_rng(seed)
    x, V = rng.standard_normal(n_keys), rng.standard_normal((n_keys, 64))
    ref_o, ref_lse = softmax.partial_state(x, V)
    segs = softmax.random_segments(n_keys, segments, rng)
    errs = {}
    for order in ("sequential", "tree", "random"):
        o, lse = softmax.merge_segments(x, V, segs, order=order, rng=rng)
        errs[order] = max(float(np.abs(o - ref_o).max()), abs(float(lse) - float(ref_lse)) / abs(float(ref_lse)))
    return {"errors": errs, "lengths": np.array([b - a for a, b in segs])}


def draw_merge(data, **_):
    fig, axs = new_figure(1, 2, width=8, height=2.8)
    axs[0].set_xlabel("segment")
    axs[0].set_ylabel("keys")
    axs[1].set_title("error of merged vs one-pass state", fontsize=9)
    _merge_content(axs, data)
    axs[1].set_yscale("log")
    axs[1].set_ylim(1e-18, 1e-12)
    return fig


def _merge_content(axs, data):
    axs[0].bar(np.arange(data["lengths"].size), data["lengths"], color="C0")
    axs[0].set_title(f"{data['lengths'].size} random segments of the row", fontsize=9)
    names, vals = zip(*data["errors"].items())
    axs[1].bar(names, np.maximum(vals, 1e-18), color="C2")
    axs[1].axhline(np.finfo(float).eps, color="k", ls=":", lw=1, label="float64 eps")
    axs[1].legend(fontsize=7)


def update_merge(fig, data, **_):
    """:func:`draw_merge` in place (the error panel's limits are fixed)."""
    clear_content(*fig.axes)
    fig.axes[1].set_autoscaley_on(False)
    _merge_content(fig.axes, data)


register(Explorer(
    "merge_orders", merge_data, draw_merge, update=update_merge, sliders=
    (Slider("segments", (2, 4, 12, 32, 64), 12, "segments", live=(1, 2, 3, 4, 8, 12, 16, 32, 64, 128)),),
    caption="Any cut, any merge order: the merged state equals the one-pass result to rounding."))


# ---- §3 precision of l ---------------------------------------------------------------------------------
def precision_data(n_keys: int = 8192, dtype: str = "fp16", seed: int = 0) -> dict:
    """Running l accumulated in ``dtype`` vs float64 for one row of n_keys attention scores."""
    terms = _score_terms(n_keys, seed)
    return {"exact": np.cumsum(terms), "acc": precision.running_sum(terms, dtype), "dtype": dtype}


@lru_cache(maxsize=8)
def _score_terms(n_keys: int, seed: int) -> np.ndarray:
    """:func:`labcore.precision.score_terms` for d = 64, read-only and cached per row length."""
    terms = precision.score_terms(n_keys, d=64, seed=seed)
    terms.setflags(write=False)
    return terms


def draw_precision(data, **_):
    fig, ax = new_figure(width=6.4, height=3.4)
    _precision_content(ax, data)
    ax.set_xlabel("keys summed")
    ax.set_ylabel("ℓ")
    return fig


def _precision_content(ax, data):
    j = np.arange(1, data["exact"].size + 1)
    ax.plot(j, data["exact"], "k", label="float64")
    ax.plot(j, data["acc"], color="C3", label=f"accumulated in {data['dtype']}")
    err = abs(data["acc"][-1] - data["exact"][-1]) / data["exact"][-1]
    ax.set_title(f"relative error of l after {j[-1]:,} keys: {err:.1e}", fontsize=9)
    ax.legend(fontsize=8)


def update_precision(fig, data, **_):
    """:func:`draw_precision` in place."""
    clear_content(fig.axes[0])
    _precision_content(fig.axes[0], data)


register(Explorer(
    "precision_l", precision_data, draw_precision, update=update_precision, sliders=
    (Slider("n_keys", (1024, 4096, 8192, 16384), 8192, "keys in the row", fmt=",d"),
     Slider("dtype", ("fp16", "bf16", "fp32"), "fp16", "accumulator")),
    caption="Accumulating l in a 16-bit format stalls once l is large; FP32 does not."))
