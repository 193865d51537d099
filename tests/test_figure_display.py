"""Figures built with flashbook.figures.base.new_figure display as PNG in IPython (never as '<Figure size ...>')."""
from __future__ import annotations

import pytest

IPython = pytest.importorskip("IPython")


def test_new_figure_registers_png_formatter():
    from IPython.core.interactiveshell import InteractiveShell

    from flashbook.figures.base import new_figure

    shell = InteractiveShell.instance()
    try:
        fig, ax = new_figure(width=2, height=1.5)
        ax.plot([0, 1], [1, 0])
        data, _meta = shell.display_formatter.format(fig)
        assert "image/png" in data
        assert data["image/png"][:4] in (b"\x89PNG", "iVBO")  # raw bytes or base64 text
    finally:
        InteractiveShell.clear_instance()


def test_power_labels_are_plain_unicode():
    from flashbook.figures.base import power_label

    assert power_label(1000) == "10³"
    assert power_label(0.01) == "10⁻²"
    assert power_label(1024, 2) == "2¹⁰"
    assert power_label(3000) == "3000"          # not a power: a plain number
    assert power_label(0) == ""


def test_log_axes_get_lean_ticks_when_drawn():
    import io

    from matplotlib.ticker import NullLocator

    from flashbook.figures.base import new_figure

    fig, ax = new_figure(width=3, height=2)
    ax.loglog([1e2, 1e6], [1e1, 1e5])
    fig.savefig(io.BytesIO(), format="png")
    assert isinstance(ax.xaxis.get_minor_locator(), NullLocator)
    labels = [t.get_text() for t in ax.xaxis.get_ticklabels() if t.get_text()]
    assert "10⁴" in labels and not any("$" in t for t in labels)
    # an axis whose formatter the figure function chose keeps it
    from matplotlib.ticker import ScalarFormatter

    fig, ax = new_figure(width=3, height=2)
    ax.semilogx([2, 64], [1, 2], base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    fig.savefig(io.BytesIO(), format="png")
    assert isinstance(ax.xaxis.get_major_formatter(), ScalarFormatter)


def _title_explorer():
    from flashbook.figures.base import new_figure
    from flashbook.explorer import Explorer, Slider

    def draw(data, words=1, **_):
        fig, ax = new_figure(width=3, height=2)
        ax.plot([0, 1], [0, data])
        ax.set_title(" ".join(["overflowing"] * words))
        return fig

    return Explorer("t_title", lambda words: float(words), draw, (Slider("words", (1, 12), 1),))


def test_png_keeps_the_frozen_layout_and_never_clips(monkeypatch):
    """Frames share the defaults' axes positions; a frame that would not fit is laid out on its own."""
    from flashbook import drawing

    ex = _title_explorer()
    calls = []
    real = drawing.encode_png

    def spy(fig, dpi, check, *rest):
        png, inside = real(fig, dpi, check, *rest)
        calls.append((check, inside, fig.get_layout_engine() is None or "w_pad" not in fig.get_layout_engine().get()))
        return png, inside

    monkeypatch.setattr(drawing, "encode_png", spy)
    short = ex.png(ex.compute(words=1), {"words": 1})
    assert short[:4] == b"\x89PNG"
    assert calls == [(True, True, True)]            # frozen layout, fits: drawn once
    calls.clear()
    ex.png(ex.compute(words=12), {"words": 12})
    assert calls == [(True, False, True), (False, True, False)]   # overflow -> own constrained layout
