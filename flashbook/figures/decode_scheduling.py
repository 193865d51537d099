"""Figures for the decode-scheduling page (ragged batches and split planners, paged KV caches, MLA, mixed batches).

Pure data functions over :mod:`labcore.split_plans`, :mod:`labcore.paged`, :mod:`labcore.mla` and
:mod:`labcore.mixed_batch`, and the page's four explorers:

- ``split_plans``: the keys each SM reads under the four split plans for one ragged batch (flash-attn, FlashInfer,
  Lean, FlashMLA), with each plan's time under the physical memory rule, and how that time (over the floor, every
  key read once at full bandwidth) grows with the batch's skew, beside flash-attn's under the lecture's rule;
- ``page_waste``: the share of KV-cache slots lost to partial last pages, and the block-table entries per
  request, against the page size;
- ``mla_roofline``: roofline time per cached token against the query rows ``h_q x s_q`` for MHA, GQA and
  absorbed MLA, with the compute-bound crossing;
- ``mixed_batch``: a chunked-prefill chunk and a batch of decodes, serial and fused, against the chunk size,
  with POD-Attention's published regime.

``compute`` functions are numpy-only (and labcore's models); times are seconds in the data, shown in µs or ns.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from labcore.decode import kv_cache_bytes
from labcore.decode_model import get_decode_shape
from labcore.hardware import get_gpu
from labcore.mixed_batch import mixed_batch_sweep
from labcore.mla import gqa_decode_intensity, mla_compute_bound_threshold, mla_decode_roofline
from labcore.paged import page_waste
from labcore.published import published
from labcore.decode import kv_cache_bytes as _kv_bytes
from labcore.split_plans import SPLIT_PLANS, make_split_plan, plan_ctas_per_sm, plan_stats, plan_time, zipf_lengths
from labcore.units import fmt_intensity, fmt_seconds, unit_label
from ..explorer import Explorer, Slider, register
from .base import new_figure
from .overlap import legend_below

__all__ = ["PLAN_LABELS", "SKEWS", "PAGE_SWEEP", "MLA_GPUS", "CHUNKS", "split_plans_data", "page_waste_data",
           "mla_roofline_data", "mixed_batch_data", "mla_rates"]

#: How the figures name the three plans of :data:`labcore.split_plans.SPLIT_PLANS`.
PLAN_LABELS = {"flash_attn": "flash-attn (one split count)", "flashinfer": "FlashInfer (a CTA per chunk)",
               "lean": "Lean / Stream-K (equal shares of KV blocks)", "flashmla": "FlashMLA (equal payloads, on the GPU)"}
_SHORT = {"flash_attn": "flash-attn", "flashinfer": "FlashInfer", "lean": "Lean", "flashmla": "FlashMLA"}
_PLAN_COLOURS = {"flash_attn": "#d95f02", "flashinfer": "#7570b3", "lean": "#1b9e77", "flashmla": "#e7298a"}
#: Skews the split-plan figure sweeps: the Zipf lengths are clipped at this many times their mean.
SKEWS = (1, 2, 4, 8, 16, 32)
#: Page sizes (tokens) the page-waste figure sweeps.
PAGE_SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: Chunk sizes (tokens) the mixed-batch figure sweeps.
CHUNKS = (128, 256, 512, 1024, 2048, 4096)
#: The rates the MLA figure offers: FlashMLA deep-dive's H800 (throttled clock) or a preset's datasheet peak.
MLA_GPUS = ("H800 (FlashMLA deep-dive)", "A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200")
_MEANS = (256, 1024, 4096)


def _ns(x):
    return np.asarray(x) * 1e9


# ------------------------------------------------------------------------------------------ split plans


@lru_cache(maxsize=64)
def _plan_runs(gpu: str, batch: int, mean: int, group_size: int, head_dim: int, seed: int, skews: tuple) -> dict:
    """``{skew: (lengths, {plan: stats})}`` for one batch at every skew (cached: a skew move reuses the sweep)."""
    g, out = get_gpu(gpu), {}
    key_bytes = _kv_bytes(seqlen=1, num_kv_heads=1, head_dim=head_dim)
    for f in skews:
        L = zipf_lengths(batch, mean=mean, max_factor=f, seed=seed)
        floor = float(L.sum()) * key_bytes / g.hbm_bandwidth
        plans = {}
        for name in SPLIT_PLANS:
            occ = plan_ctas_per_sm(name, g, group_size=group_size, head_dim=head_dim)
            p = make_split_plan(name, L, num_sms=g.num_sms, ctas_per_sm=occ, group_size=group_size, head_dim=head_dim)
            st = plan_stats(p, group_size=group_size, head_dim=head_dim)
            sh = plan_time(p, g, group_size=group_size, head_dim=head_dim)
            lec = plan_time(p, g, group_size=group_size, head_dim=head_dim, memory_rule="lecture")
            sched = st["schedule"]
            per_sm = np.bincount(sched.slot % g.num_sms, weights=sched.end - sched.start, minlength=g.num_sms)
            plans[name] = {"busy": per_sm, "ratio": st["ratio"], "busiest": st["max_work"], "ctas": p.num_ctas,
                           "partial_bytes": st["partial_bytes_written"], "time": sh["total"], "time_lecture":
                           lec["total"], "floor": floor}
        out[f] = (L, plans)
    return out


def split_plans_data(gpu="H100", *, batch: int = 64, mean: int = 1024, skew: int = 16, group_size: int = 4,
                     head_dim: int = 128, seed: int = 0) -> dict:
    """The four plans of one Zipf batch, and each plan's time over the floor at every skew of :data:`SKEWS`.

    Args:
        gpu: preset or GPU (its SM count, its generation's per-CTA bandwidth cap).
        batch: requests (int >= 1).
        mean: their mean length in keys (int >= 1).
        skew: the lengths are clipped at ``skew x mean`` (the ``max_factor`` of ``labcore.zipf_lengths``; 1 = every
            request of the mean length).
        group_size: g.
        head_dim: d.
        seed: the draw.

    Returns:
        dict ``lengths``, ``num_sms``, ``gpu``, per plan name a dict ``busy`` (keys each SM reads), ``ratio``
        (makespan / (work / slots)), ``busiest`` (keys of the busiest CTA), ``ctas``, ``partial_bytes``, ``time``
        (s, the physical rule), ``time_lecture`` (s, the lecture's rule), ``floor`` (s); ``sweep`` per plan the
        times over the floor at every skew, and ``sweep_lecture`` flash-attn's under the lecture's rule.
    Source: Ye et al. 2025 §3.3 and Fig. 8 (Zipf lengths); Sanovar et al. 2024; flash-attn ``num_splits_heuristic``;
    FlashMLA ``get_mla_metadata_kernel``; :func:`labcore.plan_time`.
    """
    g = get_gpu(gpu)
    runs = _plan_runs(g.name, batch, mean, group_size, head_dim, seed, tuple(sorted(set(SKEWS) | {skew})))
    L, plans = runs[skew]
    sweep = {name: np.array([runs[f][1][name]["time"] / runs[f][1][name]["floor"] for f in SKEWS])
             for name in SPLIT_PLANS}
    lect = np.array([runs[f][1]["flash_attn"]["time_lecture"] / runs[f][1]["flash_attn"]["floor"] for f in SKEWS])
    return {"lengths": L, "num_sms": g.num_sms, "gpu": g.name, "skew": skew, **plans, "sweep": sweep,
            "sweep_lecture": lect}


def _plans_setup(**_):
    fig, axes = new_figure(5, 1, width=7.2, height=8.8, gridspec_kw=dict(height_ratios=[1, 1, 1, 1, 1.7]))
    for ax in axes[:4]:
        ax.set_ylabel("keys", fontsize=9)
        ax.tick_params(labelsize=9)
    axes[3].set_xlabel("SM", fontsize=9)
    axes[4].set_xscale("log", base=2)
    axes[4].set_xlabel("skew: longest request / mean length (Zipf lengths clipped there)")
    axes[4].set_ylabel("time / floor")
    return fig


def _plans_content(fig, d, **_):
    axes = fig.axes
    top = max(d[n]["busy"].max() for n in SPLIT_PLANS) * 1.08
    ideal = d["lengths"].sum() / d["num_sms"]
    for ax, name in zip(axes[:4], SPLIT_PLANS):
        r = d[name]
        ax.stairs(r["busy"], np.arange(d["num_sms"] + 1), fill=True, color=_PLAN_COLOURS[name], lw=0)
        ax.axhline(ideal, color="k", ls=":", lw=0.8)
        ax.set_xlim(0, d["num_sms"])
        ax.set_ylim(0, top)
        ax.set_title(f"{PLAN_LABELS[name]}: busiest CTA {r['busiest']:,} keys; "
                     f"{fmt_seconds(r['time'], unit='µs', digits=1)} (lecture's rule "
                     f"{fmt_seconds(r['time_lecture'], unit='µs', digits=1)})", fontsize=9, loc="left")
    ax = axes[4]
    for name in SPLIT_PLANS:
        ax.plot(SKEWS, d["sweep"][name], "o-", color=_PLAN_COLOURS[name], label=_SHORT[name])
        ax.plot([d["skew"]], [d[name]["time"] / d[name]["floor"]], "o", ms=10, mfc="none", mec=_PLAN_COLOURS[name],
                mew=2)
    ax.plot(SKEWS, d["sweep_lecture"], "--", color=_PLAN_COLOURS["flash_attn"], lw=1,
            label="flash-attn, lecture's rule")
    ax.axhline(1, color="k", ls=":", lw=0.8)
    ax.set_yscale("log")
    every = np.concatenate([*d["sweep"].values(), d["sweep_lecture"], [1.0]])
    ax.set_ylim(every.min() / 1.15, every.max() * 1.15)         # set, not autoscaled: a live update draws the same
    ax.set_title(f"{d['gpu']}, {d['lengths'].size} requests, mean {d['lengths'].mean():,.0f} keys: time over the floor",
                 fontsize=9)
    legend_below(fig, ax, ncols=3)   # in the sweep's axes it sat on the curves, which rise into every corner


register(Explorer(
    "split_plans",
    compute=lambda gpu, batch, skew: split_plans_data(gpu, batch=batch, skew=skew),
    setup=_plans_setup,
    content=_plans_content,
    sliders=(
        Slider("gpu", ("H100-SXM",), "H100-SXM", label="GPU", live=("A100-80GB-SXM", "H100-SXM", "B200")),
        Slider("batch", (16, 64, 256), 64, label="requests (sequence, KV head)", fmt=",d"),
        Slider("skew", (1, 4, 16, 32), 16, label="skew (longest / mean)", live=SKEWS, fmt="d"),
    ),
    caption="Per-SM work of four split-KV plans for one ragged batch, and their time against the batch's skew",
))


# ------------------------------------------------------------------------------------------ page waste


def page_waste_data(*, mean: int = 1024, page_size: int = 16, batch: int = 256, seed: int = 0) -> dict:
    """Waste fraction and block-table entries per request over :data:`PAGE_SWEEP`, for Zipf batches of each mean
    in (256, 1024, 4096) and the chosen ``mean``; the point at ``page_size``.

    Returns:
        dict ``sizes``, ``curves`` ({mean: waste fraction array}), ``pages`` ({mean: pages per request}), ``mean``,
        ``page_size``, ``point`` (:func:`labcore.paged.page_waste` at ``page_size``), ``vllm`` (the published "under
        4%").
    Source:
        Kwon et al. 2023 §4.2.
    """
    sizes = np.array(PAGE_SWEEP)
    curves, pages = {}, {}
    for m in sorted(set(_MEANS) | {mean}):
        L = zipf_lengths(batch, mean=m, seed=seed)
        w = page_waste(L, sizes)
        curves[m], pages[m] = w["waste_fraction"], w["pages"] / batch
    L = zipf_lengths(batch, mean=mean, seed=seed)
    return {"sizes": sizes, "curves": curves, "pages": pages, "mean": mean, "page_size": page_size,
            "point": page_waste(L, page_size), "batch": batch,
            "vllm": published("vllm.kv_waste_fraction").value}


def _waste_setup(**_):
    fig, (ax, ax2) = new_figure(1, 2, width=7.6, height=3.3)
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_xlabel("page size (tokens)")
    ax.set_ylabel("slots wasted (% of allocated)")
    ax2.set_ylabel("block-table entries per request")
    ax2.set_yscale("log")
    return fig


def _waste_content(fig, d, **_):
    ax, ax2 = fig.axes
    for m, c in d["curves"].items():
        bold = m == d["mean"]
        ax.plot(d["sizes"], 100 * c, "o-" if bold else "-", lw=2 if bold else 1, alpha=1 if bold else 0.5,
                label=f"mean {m:,} keys")
        ax2.plot(d["sizes"], d["pages"][m], "o-" if bold else "-", lw=2 if bold else 1, alpha=1 if bold else 0.5)
    ax.axhline(100 * d["vllm"], color="k", ls=":", lw=0.8, label=f"vLLM: under {d['vllm']:.0%}")
    pt = d["point"]
    ax.plot([d["page_size"]], [100 * pt["waste_fraction"]], "o", ms=11, mfc="none", mec="#de2d26", mew=2)
    ax.legend(fontsize=9, loc="upper left")
    ax.set_title(f"page {d['page_size']}: {pt['waste_fraction']:.1%} wasted, {pt['mean_waste_per_request']:.1f} "
                 f"slots per request", fontsize=9)
    ax2.set_title(f"{d['batch']} Zipf requests per batch", fontsize=9)


register(Explorer(
    "page_waste",
    compute=lambda mean, page_size: page_waste_data(mean=mean, page_size=page_size),
    setup=_waste_setup,
    content=_waste_content,
    sliders=(
        Slider("mean", _MEANS, 1024, label="mean request length (keys)", fmt=",d"),
        Slider("page_size", (16, 64), 16, label="page size (tokens)", live=PAGE_SWEEP, fmt="d"),
    ),
    caption="Memory lost to partial last pages, and block-table entries, against the page size",
))


# ------------------------------------------------------------------------------------------ MLA roofline


def mla_rates(gpu: str) -> tuple[float, float, str]:
    """``(FLOP/s, bytes/s, name)`` for an entry of :data:`MLA_GPUS`: the FlashMLA deep-dive's H800 figures
    (``flashmla.h800_throttled_flops``, ``flashmla.h800_bandwidth``) or a preset's dense BF16 peak and HBM
    bandwidth. Raises: ValueError for another name (as :func:`labcore.get_gpu`)."""
    if gpu == MLA_GPUS[0]:
        return (published("flashmla.h800_throttled_flops").value, published("flashmla.h800_bandwidth").value,
                "H800 at its throttled clock")
    g = get_gpu(gpu)
    return g.tensor_flops, g.hbm_bandwidth, g.name


def mla_roofline_data(gpu=MLA_GPUS[0], *, s_q: int = 1, group: int = 8, head_dim: int = 128,
                      rows=None) -> dict:
    """Roofline time per cached token (one layer, BF16) against ``h_q x s_q`` for three attention layouts.

    ``h_q = rows / s_q`` query heads. MHA: one K and V head of ``head_dim`` per query head (``h_q`` KV heads);
    GQA: ``h_q / group`` KV heads; both do ``4 d`` FLOPs per query row and key. MLA (absorbed): one shared
    576-element row for all heads, ``2 (576 + 512)`` FLOPs per row and key (:func:`labcore.mla.mla_decode_roofline`).
    Each time is ``max(FLOPs / F, bytes / B)``.

    Returns:
        dict ``rows``, ``mha``, ``gqa``, ``mla`` (s per token), ``intensity`` per layout (FLOP/byte),
        ``threshold`` (``labcore.mla_compute_bound_threshold`` at these rates), ``ridge``, ``gpu``.
    Source: FlashMLA deep-dive docs/20250422; DeepSeek-V2 §2.1; Williams et al. 2009.
    """
    F, B, name = mla_rates(gpu)
    r = np.asarray(rows if rows is not None else 2.0 ** np.arange(0, 12), dtype=float)
    out = {"rows": r, "gpu": name, "s_q": s_q, "group": group, "ridge": F / B,
           "threshold": mla_compute_bound_threshold(flops=F, bandwidth=B), "intensity": {}}
    per_kv_head = kv_cache_bytes(seqlen=1, num_kv_heads=1, head_dim=head_dim)   # K and V of one token
    h_q = np.maximum(r / s_q, 1.0)
    for key, kv_heads in (("mha", h_q), ("gqa", np.maximum(h_q / group, 1.0))):
        inten = gqa_decode_intensity(h_q / kv_heads * s_q, head_dim=head_dim)   # query rows per K/V row read
        out[key] = np.maximum(kv_heads * per_kv_head / B, kv_heads * per_kv_head * inten / F)
        out["intensity"][key] = inten
    m = mla_decode_roofline(np.maximum(r, 1), seqlen=1, flops=F, bandwidth=B)
    out["mla"], out["intensity"]["mla"] = m["time"], m["flops"] / m["bytes"]
    return out


def _mla_setup(**_):
    fig, ax = new_figure(width=6.8, height=4.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("query rows per step and layer, h_q x s_q")
    ax.set_ylabel(unit_label("roofline time per cached token", "ns"))
    return fig


def _mla_content(fig, d, **_):
    ax = fig.axes[0]
    r, t = d["rows"], d["threshold"]
    ax.plot(r, _ns(d["mha"]), "-", color="#d95f02", label=f"MHA (d = 128, {d['s_q']} new token(s) per head)")
    ax.plot(r, _ns(d["gqa"]), "-", color="#7570b3", label=f"GQA (group {d['group']})")
    ax.plot(r, _ns(d["mla"]), "-", color="#1b9e77", lw=2, label="MLA absorbed (576-dim shared row)")
    ax.axvline(t["exact"], color="#1b9e77", ls="--", lw=1,
               label=f"MLA compute-bound from {t['exact']:.0f} rows (FlashMLA: {t['stated']:.0f})")
    legend_below(fig)   # the three lines fall from the upper left and the MLA line crosses the axes
    ax.set_title(f"{d['gpu']}: ridge {fmt_intensity(d['ridge'])}; MLA at 1 row: "
                 f"{fmt_intensity(d['intensity']['mla'][0], digits=2)}", fontsize=9)


register(Explorer(
    "mla_roofline",
    compute=lambda gpu, s_q, group: mla_roofline_data(gpu, s_q=s_q, group=group),
    setup=_mla_setup,
    content=_mla_content,
    sliders=(
        Slider("gpu", (MLA_GPUS[0],), MLA_GPUS[0], label="rates", live=MLA_GPUS),
        Slider("s_q", (1, 2, 4), 1, label="new tokens per step s_q", live=(1, 2, 4, 8), fmt="d"),
        Slider("group", (4, 8), 8, label="GQA group", live=(2, 4, 8, 16), fmt="d"),
    ),
    caption="Roofline time per cached token against h_q x s_q: MHA, GQA and absorbed MLA",
))


# ------------------------------------------------------------------------------------------ mixed batch


def mixed_batch_data(gpu="A100-80GB-SXM", *, shape="Llama-3.1-8B", context: int = 8192, decode_batch: int = 64,
                     chunks=CHUNKS) -> dict:
    """:func:`labcore.mixed_batch.mixed_batch_sweep` over ``chunks``, the decodes at ``context`` keys each and the
    chunk after ``context`` cached tokens, with POD-Attention's published gains (mean, max) and chunk range.

    Returns:
        the sweep's dict plus ``gpu``, ``shape``, ``context``, ``decode_batch``, ``pod_mean``, ``pod_max``.
    Source:
        Kamath et al. 2025 (abstract; chunks 512-2K in its evaluation).
    """
    sh = get_decode_shape(shape)
    s = mixed_batch_sweep(gpu, chunks=list(chunks), context=context, decode_batch=decode_batch,
                          decode_seqlen=context, num_q_heads=sh["num_q_heads"], num_kv_heads=sh["num_kv_heads"],
                          head_dim=sh["head_dim"])
    return {**s, "gpu": get_gpu(gpu).name, "shape": shape, "context": context, "decode_batch": decode_batch,
            "pod_mean": published("pod.attention_speedup_mean").value,
            "pod_max": published("pod.attention_speedup_max").value}


def _mixed_setup(**_):
    fig, (ax, ax2) = new_figure(2, 1, width=7.0, height=6.8, sharex=True, gridspec_kw=dict(height_ratios=[3, 2]))
    ax.set_xscale("log", base=2)
    ax.set_ylabel(unit_label("attention time per iteration", "µs"))
    ax2.set_ylabel("serial / fused - 1 (%)")
    ax2.set_xlabel("prefill chunk (tokens); grey: POD's chunk sizes")
    for a in (ax, ax2):
        a.axvspan(512, 2048, color="#eeeeee", lw=0)
    return fig


def _mixed_content(fig, d, **_):
    ax, ax2 = fig.axes
    c, us = d["chunk"], 1e6
    ax.plot(c, d["serial"] * us, "o-", color="#d95f02", label="serial: prefill kernel, then decode kernel")
    ax.plot(c, d["fused"] * us, "o-", color="#1b9e77", label="fused (POD-style): one kernel, SMs shared")
    ax.plot(c, d["ideal"] * us, ":", color="k", label="max of the two alone")
    ax.plot(c, d["prefill"] * us, "--", color="#7570b3", lw=1, label="prefill chunk alone")
    ax.plot(c, d["decode"] * us, "--", color="#999999", lw=1, label="decodes alone")
    ax.set_ylim(0, None)
    ax.set_title(f"{d['gpu']}, {d['shape']}:\n{d['decode_batch']} decodes of {d['context']:,} keys\n"
                 f"+ one chunk after {d['context']:,} cached tokens", fontsize=9)
    ax2.plot(c, 100 * d["gain"], "o-", color="#1b9e77", label="lower panel: the model's gain")
    ax2.axhline(100 * d["pod_mean"], color="k", ls="--", lw=0.8, label=f"POD, mean {d['pod_mean']:.0%}")
    ax2.axhline(100 * d["pod_max"], color="k", ls=":", lw=0.8, label=f"POD, max {d['pod_max']:.0%}")
    ax2.set_ylim(0, 100 * max(d["pod_max"], d["gain"].max()) * 1.15)
    legend_below(fig)   # both panels' entries under the figure: the curves reach every corner of both axes


register(Explorer(
    "mixed_batch",
    compute=lambda gpu, decode_batch, context: mixed_batch_data(gpu, decode_batch=decode_batch, context=context),
    setup=_mixed_setup,
    content=_mixed_content,
    sliders=(
        Slider("gpu", ("A100-80GB-SXM",), "A100-80GB-SXM", label="GPU", live=("A100-80GB-SXM", "H100-SXM")),
        Slider("decode_batch", (16, 64, 256), 64, label="decodes in the batch", fmt=",d"),
        Slider("context", (4096, 8192, 16384), 8192, label="context (keys)", fmt=",d"),
    ),
    caption="A mixed batch: chunked prefill plus decodes, serial against fused, over the chunk size",
))
