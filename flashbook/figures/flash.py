"""Figures and explorers for FlashAttention (lecture §4–§5).

Explorers (all ``compute`` functions use the closed forms or the counting-only tile schedule, so a slider
move at N = 32768 stays in milliseconds):

- ``flash_tiling``: walk through the steps of either loop order; which tiles are on chip, running HBM counter.
- ``flash_causal_map``: skipped / full / diagonal blocks of a causal FlashAttention.
- ``flash_traffic_vs_N``: forward traffic vs N against the N^2 d^2 / M law (Theorem 2).
- ``flash_traffic_vs_M``: forward traffic vs SRAM size against the law.
- ``flash_backward_traffic``: where a training step's traffic goes, standard vs flash.
"""
from __future__ import annotations

import numpy as np

from labcore import blocks as B
from labcore import flash as F
from labcore import hbm as H
from labcore.units import MB, KiB, fmt_bytes, unit_label
from ..explorer import Explorer, Slider, register
from .base import axes_setup, new_figure
from .overlap import ON_DATA, legend_below

__all__ = ["tiling_figure", "causal_map_figure", "traffic_vs_N_figure", "traffic_vs_M_figure",
           "backward_traffic_figure", "gpt2_medium_figure"]

_C = {"standard": "#555555", "fa1": "#1f77b4", "fa2": "#d62728", "law": "#2ca02c"}
WALK_N, WALK_D, WALK_BR, WALK_BC = 256, 16, 64, 32


def _kib(kib) -> str:
    """An SRAM size given in KiB, written by labcore.units (binary prefix): ``_kib(100) == "100 KiB"``."""
    return fmt_bytes(kib * KiB, binary=True, digits=0)


def _block_rows(kb: int, d: int, br_override):
    M = kb * KiB // 2  # FP16 elements (100 KiB = 51,200 elements)
    B_r, B_c = B.paper_block_sizes(M, d)
    if br_override not in (None, "paper"):
        B_r = int(br_override)
    return M, B_r, B_c


# ------------------------------------------------------------------------------------------ tiling walker
def _tiling_compute(loop_order="fa2", causal=False, progress=0, N=WALK_N, d=WALK_D, block_q=WALK_BR,
                    block_kv=WALK_BC):
    sched = B.flash_tile_schedule(N, d, block_q=block_q, block_kv=block_kv, loop_order=loop_order, causal=causal)
    k = int(round(progress / 100 * (sched.n_steps - 1)))
    state = sched.at(k)
    visited = np.zeros(sched.block_map.shape, dtype=float)
    for i, j in sched.pairs[: k + 1]:
        visited[i, j] = 1.0
    return {"sched": sched, "state": state, "visited": visited, "total": sched.total()}


def tiling_figure(data, progress=None, **params):
    """The block grid of S with the current pair, the tiles on chip, and the HBM counter so far."""
    return TILING.draw(data, progress=progress, **params)


def _tiling_setup(**_):
    fig, (ax, bx) = new_figure(1, 2, width=9.0, height=4.2, gridspec_kw={"width_ratios": [1.35, 1]})
    ax.set_aspect("equal")
    ax.axis("off")
    bx.set_xlabel("elements so far")
    bx.invert_yaxis()
    return fig


def _tiling_content(fig, data, progress=None, **_):
    ax, bx = fig.axes
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    sched, st = data["sched"], data["state"]
    T_r, T_c = sched.block_map.shape
    # S grid: rows = Q blocks, cols = K blocks; a Q column on the left, K row on top, O/l/m column right.
    # One PatchCollection per hatch (a collection has one hatch): skipped "//", diagonal "..", full none.
    cells: dict = {0: [], 1: [], 2: []}
    for i in range(T_r):
        for j in range(T_c):
            kind = sched.block_map[i, j]
            face = "white" if kind == 0 else ("#c7d9ef" if data["visited"][i, j] else "#f3f3f3")
            cells[int(kind)].append(Rectangle((j, i), 1, 1, facecolor=face, edgecolor="#999999", lw=0.5))
    for kind, hatch in ((0, "//"), (1, None), (2, "..")):
        if cells[kind]:
            ax.add_collection(PatchCollection(cells[kind], match_original=True, hatch=hatch))
    on = "#ff7f0e"
    side = [Rectangle((-1.4, i), 1, 1, facecolor=on if i == st["i"] else "#eeeeee", edgecolor="#777777")
            for i in range(T_r)]                                                      # Q blocks (left)
    side += [Rectangle((T_c + 0.4, i), 1, 1, facecolor=on if i == st["i"] else "#eeeeee", edgecolor="#777777")
             for i in range(T_r)]                                                     # O/l/m blocks (right)
    side += [Rectangle((j, -1.4), 1, 1, facecolor=on if j == st["j"] else "#eeeeee", edgecolor="#777777")
             for j in range(T_c)]                                                     # K/V blocks (top)
    side.append(Rectangle((st["j"], st["i"]), 1, 1, facecolor=on, edgecolor="black", lw=1.5))   # current pair
    ax.add_collection(PatchCollection(side, match_original=True))
    ax.text(-0.9, -0.6, "Q", ha="center", va="center", fontsize=9)
    ax.text(T_c + 0.9, -0.6, "O, l, m" if sched.loop_order == "fa1" else "O, lse", ha="center", va="center",
            fontsize=9)
    ax.text(T_c / 2, -1.9, "K_j, V_j blocks", ha="center", va="bottom", fontsize=9)
    ax.set_xlim(-1.6, T_c + 1.6)
    ax.set_ylim(T_r + 0.2, -2.2)
    order = "outer loop over K/V blocks j" if sched.loop_order == "fa1" else "outer loop over Q blocks i"
    # the slider's position and the step it lands on: neighbouring positions can show the same step
    where = "" if progress is None else f"{progress}% of the walk = "
    ax.set_title(f"{sched.loop_order}: {where}step {st['step'] + 1} of {sched.n_steps}, "
                 f"pair (i={st['i']}, j={st['j']}) [{st['kind']}]\n{order}; orange = on chip", fontsize=9)
    # right: cumulative reads/writes per tensor
    names = list(st["so_far"])
    r = np.array([st["so_far"][n]["read"] for n in names], float)
    w = np.array([st["so_far"][n]["write"] for n in names], float)
    y = np.arange(len(names))
    bx.barh(y, r, color="#1f77b4", label="read")
    bx.barh(y, w, left=r, color="#d62728", label="written")
    bx.set_yticks(y, names)
    # a fixed scale for the whole walk (the tensors' totals at its last step): the bars grow, the axis
    # stays, and its tick labels do not change width from step to step
    end = sched.at(sched.n_steps - 1)["so_far"]
    bx.set_xlim(0, 1.04 * max(end[n]["read"] + end[n]["write"] for n in names))
    items = [f"read {k} {v:,}" for k, v in st["read"].items()] + [f"write {k} {v:,}" for k, v in st["write"].items()]
    just = "\n".join(", ".join(items[a:a + 4]) for a in range(0, len(items), 4))
    bx.set_title(f"HBM so far: {st['hbm_so_far']:,} of {data['total']:,} elements\nthis step: {just}",
                 fontsize=9)
    bx.legend(fontsize=9, loc="lower right")


#: Static positions of the walk (% of its steps), and the live ones: one per step of the default walk
#: (N = 256, not causal: T_r x T_c = 4 x 8 = 32 steps), so that every live position shows another step
#: there. Other settings have more or fewer steps; the title says which step a position shows.
_PROGRESS = (0, 14, 29, 43, 57, 71, 86, 100)
_WALK_STEPS = (WALK_N // WALK_BR) * (WALK_N // WALK_BC)
_PROGRESS_LIVE = tuple(sorted({next((p for p in _PROGRESS if round(p / 100 * (_WALK_STEPS - 1)) == k),
                                    round(100 * k / (_WALK_STEPS - 1))) for k in range(_WALK_STEPS)}))

TILING = register(Explorer(
    "flash_tiling", _tiling_compute, setup=_tiling_setup, content=_tiling_content,
    sliders=(
        Slider("loop_order", ("fa1", "fa2"), "fa1", label="loop order"),
        Slider("causal", (False, True), False, label="causal"),
        Slider("progress", _PROGRESS, 14, label="progress through the loops (%)", live=_PROGRESS_LIVE),
        Slider("N", (WALK_N,), WALK_N, label="N", live=(128, 192, WALK_N, 384, 512)),
    ),
    caption=f"Tiling walker: N = {WALK_N} queries and keys, d = {WALK_D}, B_r = {WALK_BR}, B_c = {WALK_BC}.",
    fixed={"d": WALK_D, "block_q": WALK_BR, "block_kv": WALK_BC},
))


# ------------------------------------------------------------------------------------------ causal map
def _causal_compute(N=4096, block=128):
    m = B.causal_block_map(N, block_q=block)
    return {"map": m, "fraction": B.causal_block_fraction(N, block_q=block), "T": m.shape[0]}


def causal_map_figure(data, N=4096, block=128, **params):
    """Skipped (white), full (blue) and diagonal (orange, masked inside) blocks of a causal attention."""
    return CAUSAL_MAP.draw(data, N=N, block=block, **params)


_causal_setup = axes_setup(4.8, 4.4, xlabel="K/V block j", ylabel="Q block i")


def _causal_content(fig, data, N=4096, block=128, **_):
    from matplotlib.colors import ListedColormap

    ax = fig.axes[0]
    ax.imshow(data["map"], cmap=ListedColormap(["white", "#6b9bd1", "#ff7f0e"]), vmin=0, vmax=2,
              interpolation="nearest")
    T = data["T"]
    ax.set_title(f"N = {N:,}, block {block}: {data['fraction']:.3f} of {T}x{T} blocks computed\n"
                 f"1/2 + 1/(2T) = {0.5 + 0.5 / T:.3f}; white skipped, blue full, orange diagonal", fontsize=9)


CAUSAL_MAP = register(Explorer(
    "flash_causal_map", _causal_compute, setup=_causal_setup, content=_causal_content,
    sliders=(Slider("N", (1024, 4096), 4096, label="N", live=(512, 1024, 2048, 4096, 8192, 16384, 32768), fmt=",d"),
             Slider("block", (64, 128, 256, 512), 128, label="block B_r = B_c")),
    caption="Causal block map: blocks above the diagonal are skipped, diagonal blocks are masked inside.",
))


# ------------------------------------------------------------------------------------------ traffic vs N
NS = tuple(2 ** k for k in range(9, 16))  # 512 ... 32768


def _traffic_N_compute(d=64, sram_kb=100, br_override="paper", causal=False):
    M, B_r, B_c = _block_rows(sram_kb, d, br_override)
    N = np.array(NS, float)
    std = np.array([H.standard_attention_io(n, d) for n in NS], float)
    fa1 = np.array([H.flash_forward_io(n, d, block_q=B_r, block_kv=B_c, loop_order="fa1", causal=causal) for n in NS], float)
    fa2 = np.array([H.flash_forward_io(n, d, block_q=B_r, block_kv=B_c, loop_order="fa2", causal=causal) for n in NS], float)
    law = np.array([H.flash_io_bound(n, d, M) for n in NS])
    return {"N": N, "standard": std, "fa1": fa1, "fa2": fa2, "law": law, "B_r": B_r, "B_c": B_c, "M": M}


def traffic_vs_N_figure(data, d=64, sram_kb=100, causal=False, **params):
    """Forward HBM traffic (MB, FP16) vs N, and traffic / (N^2 d^2 / M), for both loop orders."""
    return TRAFFIC_VS_N.draw(data, d=d, sram_kb=sram_kb, causal=causal, **params)


def _traffic_N_setup(**_):
    fig, (ax, bx) = new_figure(1, 2, width=9.0, height=3.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    bx.set_xscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel(unit_label("forward HBM traffic", "MB", "of FP16"))
    bx.set_xlabel("N")
    bx.set_ylabel("traffic ÷ (N²d²/M)")
    bx.set_title("flat in N: the Θ(N²d²/M) of Theorem 2", fontsize=9)
    return fig


def _traffic_N_content(fig, data, d=64, sram_kb=100, causal=False, **_):
    ax, bx = fig.axes
    N = data["N"]
    for key in ("standard", "fa1", "fa2"):
        ax.plot(N, data[key] * 2 / MB, "o-", color=_C[key], label=key, ms=3)
    ax.plot(N, data["law"] * 2 / MB, "--", color=_C["law"], label="N²d²/M (Theorem 2)")
    ax.set_title(f"d = {d}, M = {_kib(sram_kb)} = {data['M']:,} elements, B_r = {data['B_r']}, B_c = {data['B_c']}"
                 + (", causal" if causal else ""), fontsize=9)
    for key in ("fa1", "fa2"):
        bx.plot(N, data[key] / data["law"], "o-", color=_C[key], ms=3)
    bx.set_ylim(bottom=0)
    legend_below(fig, ax, ncols=2)   # the lower panel's fa1 and fa2 are the upper one's, same colours


TRAFFIC_VS_N = register(Explorer(
    "flash_traffic_vs_N", _traffic_N_compute, setup=_traffic_N_setup, content=_traffic_N_content,
    sliders=(Slider("d", (64, 128), 64, label="head dim d", live=(32, 64, 96, 128, 256)),
             Slider("sram_kb", (16, 64, 100, 256), 100, label="SRAM M", fmt=_kib, live=(16, 32, 48, 64, 100, 128, 164, 192, 228, 256)),
             Slider("br_override", ("paper", "128"), "paper", label="B_r", live=("paper", "32", "64", "128", "256")),
             Slider("causal", (False, True), False, label="causal")),
    caption="Forward traffic vs N for Algorithm 0 and both FlashAttention loop orders, against N²d²/M.",
))


# ------------------------------------------------------------------------------------------ traffic vs M
SRAM_KB = (16, 24, 32, 48, 64, 100, 128, 164, 192, 228, 256)


def _traffic_M_compute(N=4096, d=64, causal=False):
    kb = np.array(SRAM_KB, float)
    M = kb * KiB / 2
    fa1, fa2 = (np.array([B.flash_forward_io_at_sram(N, d, M=int(m), loop_order=lo, causal=causal) for m in M], float)
                for lo in ("fa1", "fa2"))
    std = np.full(kb.shape, float(H.standard_attention_io(N, d)))
    return {"kb": kb, "M": M, "fa1": fa1, "fa2": fa2, "standard": std,
            "law": np.array([H.flash_io_bound(N, d, int(m)) for m in M])}


def traffic_vs_M_figure(data, N=4096, d=64, causal=False, **params):
    """Forward traffic (MB, FP16) vs SRAM size M (log-log) against the N^2 d^2 / M law."""
    return TRAFFIC_VS_M.draw(data, N=N, d=d, causal=causal, **params)


_traffic_M_setup = axes_setup(6.4, 4.4, xscale="log", yscale="log",
                              xlabel=unit_label("SRAM M", "KiB", "of FP16"),
                              ylabel=unit_label("forward HBM traffic", "MB", "of FP16"))


def _traffic_M_content(fig, data, N=4096, d=64, causal=False, **_):
    ax = fig.axes[0]
    for key in ("standard", "fa1", "fa2"):
        ax.plot(data["kb"], data[key] * 2 / MB, "o-", color=_C[key], label=key, ms=3)
    ax.plot(data["kb"], data["law"] * 2 / MB, "--", color=_C["law"], label="N²d²/M")
    ax.set_title(f"N = {N:,}, d = {d}" + (", causal" if causal else "") + " (paper block sizes)", fontsize=9)
    legend_below(fig, ncols=2)


TRAFFIC_VS_M = register(Explorer(
    "flash_traffic_vs_M", _traffic_M_compute, setup=_traffic_M_setup, content=_traffic_M_content,
    sliders=(Slider("N", (1024, 4096, 16384, 32768), 4096, label="N", fmt=",d"),
             Slider("d", (64, 128), 64, label="head dim d", live=(32, 64, 128)),
             Slider("causal", (False, True), False, label="causal")),
    caption="Forward traffic vs SRAM size: the fa1 order follows N²d²/M; standard attention does not depend on M.",
))


# ------------------------------------------------------------------------------------------ backward
def _bwd_compute(N=4096, d=128, block=128, causal=False):
    out = {}
    for alg in ("standard", "flash"):
        t = H.training_step_io(N, d, algorithm=alg, block_q=block, block_kv=block, causal=causal, by_tensor=True)
        merged = {}
        for phase in ("forward", "backward"):
            for name, v in t[phase].items():
                merged[name] = merged.get(name, 0) + v["read"] + v["write"]
        out[alg] = merged
    out["ratio"] = sum(out["standard"].values()) / sum(out["flash"].values())
    return out


def backward_traffic_figure(data, N=4096, d=128, block=128, causal=False, **params):
    """Where one training step's HBM traffic goes (forward + backward), per tensor, standard vs flash."""
    return BACKWARD_TRAFFIC.draw(data, N=N, d=d, block=block, causal=causal, **params)


def _backward_setup(**_):
    fig, ax = new_figure(width=8.0, height=4.6)
    ax.set_xlabel("elements ÷ N² (forward + backward, one head)")
    ax.set_yticks([0, 1], ["standard\n(Alg. 0 + 3)", "flash\n(fa2 + Alg. 4)"])
    ax.invert_yaxis()
    return fig


def _backward_content(fig, data, N=4096, d=128, block=128, causal=False, **_):
    ax = fig.axes[0]
    names = sorted(set(data["standard"]) | set(data["flash"]),
                   key=lambda n: (-(data["standard"].get(n, 0) + data["flash"].get(n, 0)), n))  # ties: by name
    cmap = {n: c for n, c in zip(names, ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                         "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78",
                                         "#98df8a", "#ff9896", "#c5b0d5", "#c49c94"] * 2)}
    seen = set()
    for y, alg in enumerate(("standard", "flash")):
        left = 0.0
        for n in names:
            v = data[alg].get(n, 0) / N ** 2
            if v:
                ax.barh(y, v, left=left, color=cmap[n], edgecolor="white",
                        label=None if n in seen else n)
                seen.add(n)
                if v > 1.0:
                    ax.text(left + v / 2, y, n, ha="center", va="center", fontsize=9, color="white", gid=ON_DATA)
                left += v
    ax.set_title(f"N = {N:,}, d = {d}, blocks {block}x{block}" + (", causal" if causal else "")
                 + f": standard / flash = {data['ratio']:.2f}", fontsize=9)
    ax.legend(fontsize=9, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.28), frameon=False, columnspacing=1.0)


BACKWARD_TRAFFIC = register(Explorer(
    "flash_backward_traffic", _bwd_compute, setup=_backward_setup, content=_backward_content,
    sliders=(Slider("N", (1024, 4096, 16384, 32768), 4096, label="N", fmt=",d"),
             Slider("d", (64, 128), 128, label="head dim d"),
             Slider("block", (64, 128), 128, label="block B_r = B_c", live=(32, 64, 128, 256)),
             Slider("causal", (False, True), False, label="causal")),
    caption="A training step's traffic per tensor: the N×N matrices of the standard algorithm vs the per-pair "
            "Q_i, dO_i, dQ_i and K_j, V_j traffic of FlashAttention.",
))


# ------------------------------------------------------------------------------------------ GPT-2 medium
def gpt2_medium_figure(cmp: dict | None = None):
    """Our FLOPs and HBM traffic beside the FlashAttention paper's Fig. 2 (GPT-2 medium, fwd + bwd)."""
    cmp = F.gpt2_medium_comparison() if cmp is None else cmp
    paper = cmp["paper"]
    fig, (ax, bx) = new_figure(1, 2, width=8.4, height=3.2)
    x = np.arange(2)
    wd = 0.38
    for k, (key, scale_, unit, a) in enumerate((("flops", 1e9, "GFLOP", ax), ("hbm_bytes", 1e9, "GB", bx))):
        ours = [cmp[alg][key] / scale_ for alg in ("standard", "flash")]
        theirs = [paper[alg][key] / scale_ for alg in ("standard", "flash")]
        a.bar(x - wd / 2, ours, wd, label="labcore (exact minimum)", color="#1f77b4")
        a.bar(x + wd / 2, theirs, wd, label="paper Fig. 2 (measured)", color="#ff7f0e")
        for xi, v in zip(x - wd / 2, ours):
            a.text(xi, v, f"{v:.1f}", ha="center", va="bottom", fontsize=9)
        for xi, v in zip(x + wd / 2, theirs):
            a.text(xi, v, f"{v:.1f}", ha="center", va="bottom", fontsize=9)
        a.set_xticks(x, ["standard", "FlashAttention"])
        a.set_yscale("log")
        a.set_ylabel(unit_label("", unit))
    ax.set_title("FLOPs, forward + backward", fontsize=9)
    bx.set_title("HBM reads + writes, forward + backward", fontsize=9)
    legend_below(fig, ax, ncols=2)   # both panels' bars, in the same two colours
    return fig
