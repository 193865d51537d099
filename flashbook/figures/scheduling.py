"""Figures for §5b (scheduling the prefill kernels): the backward's dQ atomics, causal load balance, packed batches.

Pure figure functions over :mod:`labcore.backward_schedule`, :mod:`labcore.causal_schedule`,
:mod:`labcore.scheduler` and :mod:`labcore.varlen`, and the section's explorers:

- ``sched_dq_bits``: how far apart (in float32 ulps) the dQ of two atomic completion orders land, and how many
  bitwise-distinct dQ twenty orders give, atomic against deterministic;
- ``sched_dq_chain``: the throughput each deterministic design keeps against atomic adds (FA2's per-CTA buffers,
  FA3/FA4's semaphores, DASH's schedules), against sequence length, beside the published fractions;
- ``sched_causal``: per-slot Gantt charts of the causal forward's CTAs in FA2's launch order, a global LPT and the
  order FA3's and FA4's tile schedulers produce, and the makespan ratio against sequence length beside
  FlashAttention-4's published LPT gain;
- ``sched_varlen``: FLOPs and bytes a packed (varlen) batch saves against the same batch padded.

``compute`` functions are numpy-only; the sweeps over sequence length are cached (each costs a few hundred ms once).
"""
from __future__ import annotations

from functools import cache

import numpy as np

import labcore as lc
from labcore.published import published
from labcore.split_plans import zipf_lengths
from ..explorer import Explorer, Slider, register
from .base import new_figure
from .overlap import legend_below

__all__ = ["BWD_SEQLENS", "CAUSAL_ORDERS", "DQ_DESIGNS", "dq_bits_data", "dq_add_share", "dq_chain_data",
           "causal_data", "causal_sweep", "varlen_lengths", "varlen_data"]

#: Sequence lengths of the backward sweep: FlashAttention-2's benchmark shapes (16k tokens per batch).
BWD_SEQLENS = tuple(s["seqlen"] for s in lc.benchmark_shapes("fa2"))
_BLOCK = 128
_C = {"launch": "#d95f02", "longest_first": "#7570b3", "lpt": "#1b9e77", "fa3_sections": "#e7298a",
      "full": "#333333"}
_ORDER_NAMES = {"launch": "launch order (FA2: shortest first)", "longest_first": "longest first (m_block reversed)",
                "lpt": "global LPT (Graham)", "fa3_sections": "FA3/FA4: longest first within L2 sections"}
#: The orders the causal explorer draws as Gantt charts.
CAUSAL_ORDERS = ("launch", "lpt", "fa3_sections")
#: The deterministic designs the chain explorer draws, with a mask and without one.
DQ_DESIGNS = {True: ("fa2_split_buffers", "semaphore_ascending", "fa3", "dash_descending"),
              False: ("fa2_split_buffers", "semaphore_ascending", "dash_shift")}
_DESIGN_NAMES = {"fa2_split_buffers": "FA2: a buffer per CTA", "semaphore_ascending": "semaphores, key-block order",
                 "fa3": "FA3/FA4: diagonal first, SPT", "dash_descending": "DASH: rows descending",
                 "dash_shift": "DASH: shifted start"}
_DESIGN_STYLE = {"fa2_split_buffers": ("#7570b3", "x--"), "semaphore_ascending": ("#d95f02", "^-"),
                 "fa3": ("#e7298a", "o-"), "dash_descending": ("#1b9e77", "s-"), "dash_shift": ("#1b9e77", "s-")}
_GPUS = ("A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200")


# ------------------------------------------------------------------------------------------ dQ bits
def _bwd_inputs(N: int, d: int, causal: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    Q, K, V, dO = (rng.standard_normal((N, d)) for _ in range(4))
    O, lse = lc.reference_attention(Q, K, V, causal=causal)
    return Q, K, V, O, dO, lse


@cache
def dq_bits_data(N: int = 256, *, d: int = 64, block: int = 32, causal: bool = True, trials: int = 20) -> dict:
    """dQ of ``trials`` atomic completion orders (seeds 0..trials-1) against the deterministic order's.

    Returns dict: ``ulp`` (int64, every element of every atomic run's float32 distance from the deterministic
    dQ), ``distinct_atomic`` / ``distinct_det`` (bitwise-distinct dQ buffers), ``differ_share`` (share of elements
    whose bits differ from the deterministic dQ), ``rel_diff`` (largest ``|difference| / max |dQ|``), ``T_c``, inputs.
    Source: :func:`labcore.flash_backward_kernel_order` (FA2's backward, dQ by FP32 atomic adds).
    """
    args = _bwd_inputs(N, d, causal)
    kw = dict(block_q=block, block_kv=block, causal=causal)
    det = lc.flash_backward_kernel_order(*args, mode="deterministic", **kw).dq_accum
    runs = [lc.flash_backward_kernel_order(*args, seed=s, **kw).dq_accum for s in range(trials)]
    ulp = np.concatenate([lc.dq_ulp_differences(r, det).ravel() for r in runs])
    return {"ulp": ulp, "distinct_atomic": len({r.tobytes() for r in runs}), "distinct_det": 1,
            "differ_share": float((ulp > 0).mean()),
            "rel_diff": max(float(np.abs(r - det).max()) for r in runs) / float(np.abs(det).max()),
            "T_c": -(-N // block), "N": N, "d": d, "block": block, "causal": causal, "trials": trials}


def _bits_setup(**_):
    fig, ax = new_figure(width=6.4, height=3.8)
    ax.set_xlabel("float32 ulps from the deterministic dQ\n(each bar: from its label up to the next bar's)")
    ax.set_ylabel("share of dQ elements")
    return fig


def _bits_content(fig, data, **_):
    ax = fig.axes[0]
    u = data["ulp"]
    edges = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 1 << 30])
    counts = np.histogram(u, bins=edges)[0] / u.size
    # each bar named by its lower edge: "128-255" and its neighbours ran into each other at the column's width
    labels = [f"{a}" for a in edges[:-2]] + [f"≥ {edges[-2]}"]
    x = np.arange(counts.size)
    ax.bar(x, counts, color=["#999999"] + ["#d95f02"] * (counts.size - 1))
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=9)
    mask = "causal" if data["causal"] else "no mask"
    ax.set_title(f"N = {data['N']}, d = {data['d']}, {data['T_c']} K/V-block CTAs, {mask}: {data['trials']} atomic "
                 f"orders give {data['distinct_atomic']} distinct dQ, the fixed order 1\n"
                 f"{data['differ_share']:.0%} of elements differ from the fixed order's; largest difference "
                 f"{data['rel_diff']:.1e} of max |dQ|", fontsize=9)


# ------------------------------------------------------------------------------------------ dQ chain
def dq_add_share(gpu: str = "H100-SXM", *, block: int = _BLOCK, d: int = 128) -> dict:
    """One tile's dQ add against its compute, if nothing overlaps them: the add sends ``4 B_r d`` bytes to the L2, whose
    atomic units the SMs share; the tile does five matrix multiplications, ``10 B_r B_c d`` FLOP, at one SM's tensor
    rate. No source in hand states the L2's atomic throughput: its load bandwidth (FA3 Table 1, 12 TB/s on an H100) is
    an upper bound on it, so the share is a lower bound. Also the time to read one head's FP32 dQaccum from HBM, in
    tiles (FA2's per-CTA buffers pay it per extra buffer).

    Returns dict ``add_s``, ``tile_s`` (s), ``share`` (add / tile), ``buffer_tiles(N)`` (a function of N).
    Source: Shah et al. 2024, Table 1 (``fa3.h100_l2_bandwidth``); flash-attn ``SM90_BULK_REDUCE_ADD``.
    """
    g = lc.get_gpu(gpu)
    tile = 10 * block * block * d / g.tensor_flops_per_sm
    add = 4 * block * d / (published("fa3.h100_l2_bandwidth").value / g.num_sms)
    return {"add_s": add, "tile_s": tile, "share": add / tile,
            "buffer_tiles": lambda N: 4 * N * d / g.hbm_bandwidth / tile}


@cache
def dq_chain_data(gpu: str = "H100-SXM", *, add_share: float = 0.25, causal: bool = True) -> dict:
    """Throughput each deterministic design keeps (atomic makespan / deterministic time) on FA2's benchmark shapes
    (16k tokens, 16 heads of d = 128, 128 x 128 tiles), with a causal mask or without. ``add_share`` = one dQ add's
    time / one tile's compute; FA2's extra buffers are read and zeroed at the GPU's HBM bandwidth.

    Returns dict ``seqlen`` (int array), one float array per design of :data:`DQ_DESIGNS` at the lengths
    ``seqlen_of[design]`` where it can run (DASH's shift cannot where a head has more key blocks than the GPU holds
    CTAs), ``designs``, ``gpu``,
    ``slots``, ``causal``, and the published fractions ``paper`` (FA4 §5.2), ``blog`` (low, high) and ``dash_loss``
    (FA3's deterministic backward up to this share below the atomic one, DASH).
    Source: :func:`labcore.deterministic_backward_time`; Zadouri et al. 2026 §5.2 and blog; Qiang et al. 2026.
    """
    g = lc.get_gpu(gpu)
    buf = dq_add_share(gpu)["buffer_tiles"]
    out = {k: [] for k in DQ_DESIGNS[causal]}
    where = {k: [] for k in DQ_DESIGNS[causal]}
    for sh in lc.benchmark_shapes("fa2", head_dim=128):
        for k in DQ_DESIGNS[causal]:
            try:
                out[k].append(lc.deterministic_backward_time(
                    sh["seqlen"], block_q=_BLOCK, block_kv=_BLOCK, tile_time=1.0, add_time=add_share,
                    heads=sh["batch"] * sh["heads"], slots=g.num_sms, causal=causal, design=k,
                    buffer_time=buf(sh["seqlen"]))["fraction"])
                where[k].append(sh["seqlen"])
            except ValueError:          # a shift schedule with more CTAs per head than the GPU holds at once
                pass
    blog = published("fa4.blog_deterministic_bwd_fraction")
    return {**{k: np.array(v) for k, v in out.items()}, "designs": DQ_DESIGNS[causal],
            "seqlen_of": {k: np.array(v) for k, v in where.items()},
            "seqlen": np.array(BWD_SEQLENS), "gpu": g.name, "slots": g.num_sms, "add_share": add_share,
            "causal": causal, "paper": published("fa4.deterministic_bwd_fraction").value, "blog": (blog.low, blog.high),
            "dash_loss": published("dash.fa3_deterministic_loss_max").value}


def _chain_setup(**_):
    fig, ax = new_figure(width=6.8, height=4.6)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length (16k tokens, 16 heads, d = 128)")
    ax.set_ylabel("deterministic / atomic throughput")
    ax.set_ylim(0.4, 1.1)
    return fig


def _chain_content(fig, d, **_):
    ax = fig.axes[0]
    ax.axhspan(*d["blog"], color="#dddddd", lw=0, label=f"FA4 blog: {d['blog'][0]:.0%}-{d['blog'][1]:.0%}")
    ax.axhline(d["paper"], color="k", ls=":", lw=1, label=f"FA4 paper: up to {d['paper']:.0%}")
    ax.axhline(1 - d["dash_loss"], color="k", ls="--", lw=0.8, label=f"DASH: FA3 down to {1 - d['dash_loss']:.0%}")
    for k in d["designs"]:
        c, st = _DESIGN_STYLE[k]
        ax.plot(d["seqlen_of"][k], d[k], st, color=c, label=_DESIGN_NAMES[k])
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, frameon=False)
    ax.set_title(f"{d['gpu']}, {'causal' if d['causal'] else 'no mask'}, one add = {d['add_share']:g} x a tile",
                 fontsize=9)


# ------------------------------------------------------------------------------------------ causal
def causal_data(gpu: str = "H200-SXM", *, seqlen: int = 4096, ctas_per_sm: int = 1) -> dict:
    """The causal forward's CTAs of FA4's benchmark shape at ``seqlen`` (32k tokens, 16 heads of d = 128) in the
    dispatch orders of :data:`CAUSAL_ORDERS`, plus the makespan ratio against sequence length (:func:`causal_sweep`).

    Returns dict ``schedules`` ({order: Schedule}), ``lpt_gain``, ``sweep``, ``gpu``, ``seqlen``, ``batch``, ``heads``,
    ``ctas_per_sm``, ``published`` (the MHA gain range of FA4 §3.3).
    Source: :func:`labcore.causal_load_balance`; Zadouri et al. 2026 §3.3.
    """
    sh = next(s for s in lc.benchmark_shapes("fa4", head_dim=128) if s["seqlen"] == seqlen)
    r = lc.causal_load_balance(gpu, seqlen=seqlen, batch=sh["batch"], heads=sh["heads"], ctas_per_sm=ctas_per_sm,
                               orders=CAUSAL_ORDERS)
    return {"schedules": {o: r[o] for o in CAUSAL_ORDERS}, "lpt_gain": r["lpt_gain"],
            "sweep": causal_sweep(gpu, ctas_per_sm), "gpu": lc.get_gpu(gpu).name, "seqlen": seqlen,
            "batch": sh["batch"], "heads": sh["heads"], "ctas_per_sm": ctas_per_sm,
            "published": published("fa4.lpt_gain_mha").value}


@cache
def causal_sweep(gpu: str = "H200-SXM", ctas_per_sm: int = 1) -> dict:
    """:func:`labcore.causal_schedule_table` on FA4's benchmark shapes as arrays: ``seqlen``, ``ratio_<order>``,
    ``lpt_gain``, ``sections_gain``."""
    rows = lc.causal_schedule_table(gpu, paper="fa4", ctas_per_sm=ctas_per_sm)
    keys = ["seqlen", "lpt_gain", "sections_gain"] + [f"ratio_{o}" for o in lc.TILE_ORDERS]
    return {k: np.array([row[k] for row in rows]) for k in keys}


def _gantt(ax, s, norm_max):
    """One Schedule as a Gantt chart: a rectangle per item on its slot's row, coloured by its cost."""
    from matplotlib.collections import PolyCollection

    y0, y1 = s.slot - 0.45, s.slot + 0.45
    verts = np.stack([np.stack([s.start, y0], 1), np.stack([s.start, y1], 1), np.stack([s.end, y1], 1),
                      np.stack([s.end, y0], 1)], 1)
    pc = PolyCollection(verts, array=s.costs, cmap="viridis", clim=(0, norm_max), edgecolors="white",
                        linewidths=0.15)
    ax.add_collection(pc)
    ax.axvline(s.makespan, color="#de2d26", lw=1)
    ax.set_xlim(0, None)
    ax.set_ylim(s.slots, -1)
    ax.autoscale_view(scaley=False)


def _causal_setup(**_):
    fig = new_figure(4, 1, width=7.4, height=9.0, gridspec_kw=dict(height_ratios=[1, 1, 1, 1.1]))[0]
    for ax in fig.axes[:3]:
        ax.set_ylabel("slot")
        ax.set_yticks([])
    fig.axes[2].set_xlabel("time (tiles of work); colour: a CTA's work, dark = short, yellow = long")
    sweep = fig.axes[3]
    sweep.set_xscale("log", base=2)
    sweep.set_xlabel("sequence length (FA4's benchmark shapes: 32k tokens, 16 heads, d = 128)")
    sweep.set_ylabel("makespan / (work / slots)")
    return fig


def _causal_content(fig, d, **_):
    axes = fig.axes
    top = max(s.makespan for s in d["schedules"].values())
    cmax = float(d["schedules"]["launch"].costs.max())
    for ax, (o, s) in zip(axes[:3], d["schedules"].items()):
        _gantt(ax, s, cmax)
        ax.set_xlim(0, top * 1.02)
        ax.set_title(f"{_ORDER_NAMES[o]}: makespan {s.ratio:.3f} x the ideal, slots idle {s.slot_idle.mean() / s.makespan:.1%} "
                     "of the time", fontsize=9)
    sw, lo_hi = d["sweep"], d["published"]
    ax = axes[3]
    for o in CAUSAL_ORDERS:
        ax.plot(sw["seqlen"], sw[f"ratio_{o}"], "o-" if o != "fa3_sections" else "x--", color=_C[o],
                label=_ORDER_NAMES[o])
    ax.axvline(d["seqlen"], color="#bbbbbb", lw=3, zorder=0)
    legend_below(fig, ax)   # inside the sweep's axes it sat on the launch-order curve at every setting
    gains = sw["sections_gain"]
    ax.set_title(f"{d['gpu']}, {d['ctas_per_sm']} CTA(s) per SM: the kernels' order gains {gains.min():.1%}-"
                 f"{gains.max():.1%} over launch order (FlashAttention-4 measured {lo_hi[0]:.0%}-{lo_hi[1]:.0%} for MHA "
                 "on an H200)", fontsize=9)
    fig.suptitle(f"causal forward, seqlen {d['seqlen']:,}, batch {d['batch']}, {d['heads']} heads: "
                 f"{d['schedules']['launch'].costs.size:,} CTAs on {d['schedules']['launch'].slots} slots", fontsize=9)


# ------------------------------------------------------------------------------------------ varlen
def varlen_lengths(kind: str = "zipf", *, batch: int = 16, mean: int = 1024, seed: int = 0) -> np.ndarray:
    """Sequence lengths of a ragged batch: ``"uniform"`` (integers in [mean/2, 3 mean/2], as FlashInfer's
    U(512, 1024) benchmark batch) or ``"zipf"`` (:func:`labcore.split_plans.zipf_lengths`, heavy-tailed).

    Raises:
        ValueError: an unknown kind.
    Source:
        Ye et al. 2025, Fig. 8 (uniform and Zipf length batches).
    """
    if kind == "uniform":
        return np.random.default_rng(seed).integers(mean // 2, 3 * mean // 2 + 1, batch).astype(np.int64)
    if kind == "zipf":
        return zipf_lengths(batch, mean=mean, seed=seed)
    raise ValueError(f"kind must be 'uniform' or 'zipf', got {kind!r}")


def varlen_data(kind: str = "zipf", *, batch: int = 16, mean: int = 1024, causal: bool = True, heads: int = 16,
                d: int = 128, gpu: str = "H100-SXM") -> dict:
    """:func:`labcore.varlen_savings` and :func:`labcore.varlen_grid` of one ragged batch (:func:`varlen_lengths`)."""
    n = varlen_lengths(kind, batch=batch, mean=mean)
    sav = lc.varlen_savings(n, d=d, causal=causal)
    grid = lc.varlen_grid(n, heads=heads, num_sms=lc.get_gpu(gpu).num_sms)
    return {"lengths": n, "savings": sav, "grid": grid, "kind": kind, "causal": causal, "heads": heads}


def _varlen_setup(**_):
    fig, (a, b) = new_figure(1, 2, width=7.6, height=3.3, gridspec_kw=dict(width_ratios=[1.6, 1]))
    a.set_xlabel("sequence (sorted by length)")
    a.set_ylabel("tokens")
    b.set_ylabel("share of the padded batch's")
    b.set_ylim(0, 1.12)
    return fig


def _varlen_content(fig, d, **_):
    a, b = fig.axes
    n = np.sort(d["lengths"])[::-1]
    x = np.arange(n.size)
    a.bar(x, np.full(n.size, n.max()), color="#eeeeee", edgecolor="#bbbbbb", lw=0.5, label="padding")
    a.bar(x, n, color="#1b9e77", label="real tokens")
    # every padding bar is as tall as the longest sequence: the legend goes in a band of headroom above them all
    a.set_ylim(0, n.max() * 1.3)
    a.legend(fontsize=9, loc="upper right", ncols=2, frameon=False)
    s, g = d["savings"], d["grid"]
    a.set_title(f"{d['kind']} lengths, mean {n.mean():.0f}, longest {n.max():,}: FA2 launches {g['launched']:,} CTAs "
                f"for {g['working']:,} with work", fontsize=9)
    vals = [s["flops_packed"] / s["flops_padded"], s["bytes_packed"] / s["bytes_padded"]]
    bars = b.bar([0, 1], vals, color=["#d95f02", "#7570b3"])
    for r, v in zip(bars, vals):
        b.annotate(f"{1 - v:.0%} saved", (r.get_x() + r.get_width() / 2, v), ha="center", va="bottom", fontsize=9)
    b.set_xticks([0, 1])
    b.set_xticklabels(["tensor-core FLOPs", "HBM bytes"])
    b.set_title(f"packed / padded, {'causal' if d['causal'] else 'no mask'}", fontsize=9)


# ------------------------------------------------------------------------------------------ explorers
def _gpu_slider(default):
    return Slider("gpu", (default,), default, label="GPU", live=_GPUS)


register(Explorer(
    "sched_dq_bits",
    compute=lambda N, block, causal: dq_bits_data(N, block=block, causal=causal),
    setup=_bits_setup, content=_bits_content,
    sliders=(Slider("N", (256, 512), 256, label="sequence length N", live=(128, 256, 512), fmt=",d"),
             Slider("block", (32,), 32, label="block B_r = B_c", live=(16, 32, 64), fmt="d"),
             Slider("causal", (True, False), True, label="causal mask")),
    caption="dQ by FP32 atomic adds: how many bits the completion order changes",
))

register(Explorer(
    "sched_dq_chain",
    compute=lambda gpu, add_share, causal: dq_chain_data(gpu, add_share=add_share, causal=causal),
    setup=_chain_setup, content=_chain_content,
    sliders=(_gpu_slider("H100-SXM"),
             Slider("add_share", (0.25,), 0.25, label="one dQ add / one tile's compute", live=(0.1, 0.25, 0.5),
                    fmt="g"),
             Slider("causal", (True, False), True, label="causal mask")),
    caption="What a deterministic backward keeps: three designs in use, against sequence length",
))

register(Explorer(
    "sched_causal",
    compute=lambda gpu, seqlen, ctas_per_sm: causal_data(gpu, seqlen=seqlen, ctas_per_sm=ctas_per_sm),
    setup=_causal_setup, content=_causal_content,
    sliders=(_gpu_slider("H200-SXM"),
             Slider("seqlen", (1024, 4096, 16384), 4096, label="sequence length",
                    live=tuple(lc.BENCHMARK_PAPERS["fa4"][1]), fmt=",d"),
             Slider("ctas_per_sm", (1, 2), 1, label="CTAs resident per SM")),
    caption="Causal CTAs on the SMs in three dispatch orders, and the makespan ratio against sequence length",
))

register(Explorer(
    "sched_varlen",
    compute=lambda kind, mean, batch, causal: varlen_data(kind, mean=mean, batch=batch, causal=causal),
    setup=_varlen_setup, content=_varlen_content,
    sliders=(Slider("kind", ("zipf", "uniform"), "zipf", label="length distribution"),
             Slider("mean", (1024,), 1024, label="mean length", live=(256, 512, 1024, 2048, 4096), fmt=",d"),
             Slider("batch", (16, 64), 16, label="sequences", live=(4, 8, 16, 32, 64), fmt="d"),
             Slider("causal", (True, False), True, label="causal mask")),
    caption="Packing a ragged batch (varlen) against padding it to its longest sequence",
))
