"""Figures for lecture §1-§3: roofline, Algorithm 0's traffic, online softmax trace, merges, precision."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from labcore import flops, hbm, precision, softmax
from labcore.hardware import GPUS, get_gpu
from labcore.units import fmt_bytes, fmt_intensity, fmt_seconds, unit_label
from ..explorer import Explorer, Slider, register
from .base import axes_setup, new_figure
from .overlap import legend_below

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


def draw_roofline(data, **params):
    """The roofline of :func:`roofline_data`'s GPU (log-log, TFLOP/s against FLOP/byte) with its ridge and
    standard attention's point on it; returns the Figure."""
    return ROOFLINE.draw(data, **params)


_roofline_setup = axes_setup(6.4, 4.4, xscale="log", yscale="log",
                             xlabel=unit_label("arithmetic intensity", "FLOP/byte"),
                             ylabel=unit_label("attainable rate", "TFLOP/s", "FP16 dense"), ylim=(0.05, 5e3))


def _roofline_content(fig, data, **_):
    ax = fig.axes[0]
    ax.plot(data["x"], data["y"] / 1e12, color="C0", lw=2, label=f"{data['name']} roofline")
    ax.axvline(data["ridge"], color="C0", ls=":", lw=1)
    ax.annotate(f"ridge {fmt_intensity(data['ridge'])}", (data["ridge"], data["peak"] / 1e12 / 3), fontsize=9)
    ax.plot([data["att"]], [data["att_perf"] / 1e12], "o", color="C3",
            label=f"standard attention: {fmt_intensity(data['att'])}")
    legend_below(fig)


ROOFLINE = register(Explorer(
    "roofline", roofline_data, setup=_roofline_setup, content=_roofline_content, sliders=
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


def draw_io_vs_N(data, **params):
    """Algorithm 0's traffic terms against N (log-log, MB) from :func:`io_vs_N_data`, N marked; returns the Figure."""
    return IO_VS_N.draw(data, **params)


_io_setup = axes_setup(6.4, 4.4, xscale="log", yscale="log", xlabel="sequence length N",
                       ylabel=unit_label("HBM traffic of one head", "MB", "of FP16"))


def _io_content(fig, data, **_):
    ax = fig.axes[0]
    ax.plot(data["Ns"], data["nd"] / 1e6, label="4Nd term (Q, K, V, O)", color="C0")
    ax.plot(data["Ns"], data["nn"] / 1e6, label="4N² term (S, P round trips)", color="C3")
    ax.plot(data["Ns"], (data["nd"] + data["nn"]) / 1e6, "k--", lw=1, label="total")
    ax.axvline(data["N"], color="gray", lw=1)
    ax.set_title(_io_title(data), fontsize=9)
    legend_below(fig, ncols=2)


def _io_title(data):
    return (f"N = {data['N']:,}, d = {data['d']}: {fmt_bytes(data['total'], unit='MB')}, "
            f"{fmt_seconds(data['time'], unit='µs', digits=0)} on {data['gpu']}; {fmt_intensity(data['intensity'])} "
            f"vs ridge {fmt_intensity(data['ridge'])}")


IO_VS_N = register(Explorer(
    "io_vs_N", io_vs_N_data, setup=_io_setup, content=_io_content, sliders=
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


def draw_trace(data, **params):
    """Three panels of :func:`trace_data` against the block: m and the block maxima, the rescale factor α, ℓ;
    returns the Figure."""
    return TRACE.draw(data, **params)


def _trace_setup(**_):
    fig, axs = new_figure(1, 3, width=9, height=2.8)
    axs[0].set_title("running max m (line) and each block's max (dots)", fontsize=9)
    axs[1].set_title("rescale factor α = exp(m − m_new)", fontsize=9)
    axs[2].set_title("ℓ (relative to the current m)", fontsize=9)
    for ax in axs:
        ax.set_xlabel("block")
    axs[1].set_ylim(0, 1.05)
    return fig


def _trace_content(fig, data, **_):
    axs = fig.axes
    b = data["block"]
    axs[0].step(b, data["m"], where="post")
    axs[0].plot(b, data["block_max"], ".")
    axs[1].bar(b, data["alpha"], color="C2")
    axs[2].plot(b, data["l"], "o-", color="C1", ms=3)


TRACE = register(Explorer(
    "online_trace", trace_data, setup=_trace_setup, content=_trace_content, sliders=
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


def draw_merge(data, **params):
    """The segment lengths of :func:`merge_data` and each merge order's error (log scale); returns the Figure."""
    return MERGE.draw(data, **params)


def _merge_setup(**_):
    fig, axs = new_figure(1, 2, width=8, height=2.8)
    axs[0].set_xlabel("segment")
    axs[0].set_ylabel("keys")
    axs[1].set_title("error of merged vs one-pass state", fontsize=9)
    axs[1].set_yscale("log")
    axs[1].set_ylim(1e-18, 1e-12)
    return fig


def _merge_content(fig, data, **_):
    axs = fig.axes
    axs[0].bar(np.arange(data["lengths"].size), data["lengths"], color="C0")
    axs[0].set_title(f"{data['lengths'].size} random segments of the row", fontsize=9)
    names, vals = zip(*data["errors"].items())
    axs[1].bar(names, np.maximum(vals, 1e-18), color="C2")
    axs[1].axhline(np.finfo(float).eps, color="k", ls=":", lw=1, label="float64 eps")
    legend_below(fig, axs[1])


MERGE = register(Explorer(
    "merge_orders", merge_data, setup=_merge_setup, content=_merge_content, sliders=
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


def draw_precision(data, **params):
    """ℓ accumulated in :func:`precision_data`'s format against float64, with the final relative error;
    returns the Figure."""
    return PRECISION_L.draw(data, **params)


_precision_setup = axes_setup(6.4, 3.4, xlabel="keys summed", ylabel="ℓ")


def _precision_content(fig, data, **_):
    ax = fig.axes[0]
    j = np.arange(1, data["exact"].size + 1)
    ax.plot(j, data["exact"], "k", label="float64")
    ax.plot(j, data["acc"], color="C3", label=f"accumulated in {data['dtype']}")
    err = abs(data["acc"][-1] - data["exact"][-1]) / data["exact"][-1]
    ax.set_title(f"relative error of l after {j[-1]:,} keys: {err:.1e}", fontsize=9)
    legend_below(fig, ncols=2)


PRECISION_L = register(Explorer(
    "precision_l", precision_data, setup=_precision_setup, content=_precision_content, sliders=
    (Slider("n_keys", (1024, 4096, 8192, 16384), 8192, "keys in the row", fmt=",d"),
     Slider("dtype", ("fp16", "bf16", "fp32"), "fp16", "accumulator")),
    caption="Accumulating l in a 16-bit format stalls once l is large; FP32 does not."))
