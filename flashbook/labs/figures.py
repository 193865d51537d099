"""The static face of a lab: the reference run's HBM ledger as a figure (traffic per tensor vs block size).

Drawn with matplotlib's object API (``matplotlib.figure.Figure``, never pyplot) and shown as a PNG through
``IPython.display``, so it renders the same in the HTML build and in a live notebook.
"""
from __future__ import annotations

import io

from .definitions import get_lab
from .grader import run_kernel

__all__ = ["ledger_sweep", "ledger_figure", "show_figure"]


def ledger_sweep(lab, sizes=None, *, shape_index: int = 0) -> dict:
    """Elements moved per tensor by the lab's reference kernel as ``block_kv`` varies (``block_q`` kept).

    Args:
        lab: key, number or Lab.
        sizes: block_kv values (default 2 .. the lab's default, 6 values).
        shape_index: which of the lab's shapes (default the first).

    Returns:
        ``{"sizes": [...], "tensors": {name: [elements, ...]}, "expected": [total, ...], "shape": label}``.

    Raises:
        ValueError/TypeError as :func:`flashbook.labs.grade`; RuntimeError if the reference fails a size.
    """
    lab = get_lab(lab)
    i = shape_index % len(lab.shapes)
    top = lab.params["block_kv"]
    sizes = list(sizes) if sizes is not None else sorted({max(1, round(top * k / 6)) for k in range(1, 7)})
    tensors, expected = {}, []
    for b in sizes:
        params = {**lab.params, "block_kv": b}
        chip, _, err, _ = run_kernel(lab, lab.reference, i, **params)
        if err is not None:
            raise RuntimeError(f"the reference kernel failed at block_kv = {b}: {err}")
        for name, v in chip.ledger.by_tensor().items():
            tensors.setdefault(name, [0] * len(sizes))[sizes.index(b)] = v["read"] + v["write"]
        expected.append(sum(v["read"] + v["write"] for v in lab.expected_io(lab.shapes[i], params).values()))
    return {"sizes": sizes, "tensors": tensors, "expected": expected, "shape": lab.shape_label(lab.shapes[i])}


def ledger_figure(lab, sizes=None):
    """A Figure of :func:`ledger_sweep`: one line per tensor, and the closed-form total (dashed); the book's
    figure style (:func:`flashbook.figures.base.new_figure`: at most a column wide, text at least 9 pt)."""
    from ..figures.base import new_figure

    lab = get_lab(lab)
    data = ledger_sweep(lab, sizes)
    fig, ax = new_figure(width=4.8, height=3.6)
    # tensors with equal traffic (K and V, l and m) draw on top of each other: each its own marker and dash,
    # drawn smaller in turn, so every line stays visible
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("v", ":"), ("D", (0, (5, 1))), ("x", (0, (1, 1)))]
    for k, (name, ys) in enumerate(data["tensors"].items()):
        marker, dash = styles[k % len(styles)]
        ax.plot(data["sizes"], ys, marker=marker, ls=dash, ms=8 - k, lw=1.6, label=name, mfc="none")
    ax.plot(data["sizes"], data["expected"], color="k", lw=2.4, alpha=0.35, label="closed form, total")
    ax.set_xlabel("block_kv (B_c, rows of K and V per tile)")
    ax.set_ylabel("HBM elements (read + written)")
    ax.set_yscale("log")
    ax.set_title(f"Lab {lab.number}: reference kernel's ledger ({data['shape']}, M = {lab.M:,})", fontsize=10,
                 wrap=True)
    fig.legend(loc="outside lower center", ncol=4, fontsize=9)   # below the axes: it covers no line
    ax.grid(alpha=0.3)
    return fig


def show_figure(fig) -> None:
    """Display a Figure as a PNG (IPython.display), without pyplot: drawn at the static frames' resolution
    (:data:`flashbook.drawing.STATIC_DPI`, 2 PNG px per CSS px) and shown at the book's
    :data:`flashbook.drawing.CSS_PX_PER_INCH`, as crisp on screen and in print as the players' frames."""
    from IPython.display import Image, display

    from ..drawing import CSS_PX_PER_INCH, STATIC_DPI

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=STATIC_DPI)
    display(Image(data=buf.getvalue(), width=round(fig.get_figwidth() * CSS_PX_PER_INCH)))
