"""Every figure shows its data: no legend or label on a curve, no two labels on each other, no title smaller than
its tick labels (``flashbook.figures.overlap``), in the frames the book draws.

The check itself is tested first on small figures built to hide (or not hide) their data. Then every explorer's
default frame is checked here (``make test``); every frame of every explorer, the full matrix, is the ``audit``
marker's test (``-m audit``), a few minutes of drawing.
"""
from __future__ import annotations

import pytest

from flashbook.figures.base import new_figure
from flashbook.figures.overlap import ON_DATA, Overlap, find_overlaps


def _kinds(fig):
    return sorted((o.kind, o.covers) for o in find_overlaps(fig))


def _line_figure():
    fig, ax = new_figure(width=4, height=3)
    ax.plot([0, 1], [0, 1], label="rising")
    ax.plot([0, 1], [1, 0], label="falling")
    return fig, ax


def test_a_legend_on_a_curve_is_found_and_one_beside_it_is_not():
    fig, ax = _line_figure()
    ax.legend(loc="center")
    found = find_overlaps(fig)
    assert {o.covers for o in found if o.kind == "text/data"} == {"line 'rising'", "line 'falling'"}
    assert all(o.what == "legend" and o.axes == 0 for o in found if o.kind == "text/data")

    fig, ax = _line_figure()
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.02), frameon=False)   # above the axes
    assert not [o for o in find_overlaps(fig) if o.kind == "text/data"]


def test_markers_bars_and_points_are_data():
    fig, ax = new_figure(width=4, height=3)
    ax.plot([0.5], [0.5], "o", ms=10, label="one point")
    ax.text(0.5, 0.5, "here", ha="center", va="center")
    ax.set(xlim=(0, 1), ylim=(0, 1))
    assert ("text/data", "markers 'one point'") in _kinds(fig)

    fig, ax = new_figure(width=4, height=3)
    ax.bar([0, 1], [1, 3], label="bars")
    ax.text(0, 0.5, "inside", ha="center")
    ax.scatter([1], [3.4], s=80, label="dots")
    ax.text(1, 3.4, "on the dot", ha="center", va="center")
    kinds = _kinds(fig)
    assert ("text/data", "patch") in kinds and ("text/data", "points 'dots'") in kinds


def test_a_text_that_labels_its_own_bar_says_so():
    fig, ax = new_figure(width=4, height=3)
    ax.bar([0, 1], [1, 3])
    ax.text(0, 0.5, "inside", ha="center", gid=ON_DATA)
    assert not [o for o in find_overlaps(fig) if o.kind == "text/data"]


def test_a_shaded_band_is_not_data():
    fig, ax = new_figure(width=4, height=3)
    ax.axvspan(0.2, 0.8, color="#eeeeee")
    ax.axhspan(0.2, 0.4, color="#eeeeee")
    ax.plot([0, 1], [0.9, 0.9])
    ax.text(0.5, 0.5, "between", ha="center")
    ax.set(xlim=(0, 1), ylim=(0, 1))
    assert not find_overlaps(fig)


def test_tick_labels_that_run_into_each_other_are_found():
    fig, ax = new_figure(width=2.0, height=2)
    ax.bar(range(4), [1, 2, 3, 4])
    ax.set_xticks(range(4), ["0-63", "64-127", "128-255", "≥ 256"])
    found = [o for o in find_overlaps(fig) if o.kind == "text/text"]
    assert found and all("x tick label" in o.what and "x tick label" in o.covers for o in found)
    ax.set_xticks(range(4), ["a", "b", "c", "d"])
    assert not [o for o in find_overlaps(fig) if o.kind == "text/text"]


def test_contour_labels_on_each_other_are_found():
    import numpy as np

    x = np.linspace(0, 1, 50)
    z = np.add.outer(x, x)
    fig, ax = new_figure(width=2.0, height=1.6)
    cs = ax.contour(x, x, z, levels=np.linspace(0.1, 1.9, 30))
    ax.clabel(cs, fontsize=9, fmt="%.3f", inline=False)
    assert any(o.kind == "text/text" and "contour label" in o.what for o in find_overlaps(fig))
    fig, ax = new_figure(width=4.0, height=3.0)
    cs = ax.contour(x, x, z, levels=[0.5, 1.5])
    ax.clabel(cs, fontsize=9)
    assert not find_overlaps(fig)          # a contour's own labels sit on it by design


def test_a_title_smaller_than_its_tick_labels_is_found():
    fig, ax = _line_figure()
    ax.tick_params(labelsize=11)
    ax.set_title("small", fontsize=9)
    assert [o.kind for o in find_overlaps(fig)] == ["title size"]
    ax.set_title("large enough", fontsize=11)
    assert not find_overlaps(fig)


def test_a_legend_on_a_heatmap_is_found_a_label_on_it_is_not():
    import numpy as np

    fig, ax = new_figure(width=4, height=3)
    ax.imshow(np.arange(12.0).reshape(3, 4), label="map")
    ax.text(1, 1, "a cell's value", ha="center")
    assert not find_overlaps(fig)
    ax.plot([0], [0], label="a point")
    ax.legend(loc="center")
    assert ("text/data", "image 'map'") in _kinds(fig)


def test_bad_input_and_the_report():
    with pytest.raises(TypeError, match="Figure"):
        find_overlaps("not a figure")
    assert str(Overlap("text/data", "legend", "line 'a'", 0)) == "axes 0: text/data: legend covers line 'a'"


def _frames(name, every):
    """``(explorer, params)``: the explorer's default setting, or with ``every`` each setting the static book draws."""
    from flashbook.explorer import all_explorers

    ex = all_explorers()[name]
    return ex, (list(ex.grid()) if every else [ex.defaults()])


def _hidden(name, every=False):
    from flashbook.drawing import STATIC_DPI, draw_png

    ex, settings = _frames(name, every)
    bad = []
    for p in settings:
        fig, _, _ = draw_png(ex, ex.compute(**p), p, STATIC_DPI)
        shown = {s.name: p[s.name] for s in ex.sliders if len(s.values) > 1}
        bad += [f"{name} {shown}: {o}" for o in find_overlaps(fig)]
    return bad


def _names():
    from flashbook.explorer import all_explorers

    return sorted(all_explorers())


@pytest.mark.slow   # draws every explorer
@pytest.mark.parametrize("name", _names())
def test_each_explorer_default_frame_hides_nothing(name):
    """The frame a reader of the static book sees first: no text on data or on text, titles not the smallest."""
    bad = _hidden(name)
    assert not bad, "\n".join(bad)


@pytest.mark.slow   # draws every explorer
def test_the_figures_outside_the_players_hide_nothing():
    """The figures a page shows without a player: §5's comparison with the FlashAttention paper and each lab's
    ledger figure."""
    from flashbook.figures.flash import gpt2_medium_figure
    from flashbook.labs import LABS
    from flashbook.labs.figures import ledger_figure

    figures = {"gpt2_medium_figure": gpt2_medium_figure()} | {f"ledger_figure({k!r})": ledger_figure(k) for k in LABS}
    bad = [f"{name}: {o}" for name, fig in figures.items() for o in find_overlaps(fig)]
    assert len(figures) >= 6 and not bad, "\n".join(bad)


@pytest.mark.audit
@pytest.mark.parametrize("name", _names())
def test_every_frame_of_every_explorer_hides_nothing(name):
    """Every setting the static book draws (up to 48 per explorer; the full matrix, in ``make audit``)."""
    bad = _hidden(name, every=True)
    assert not bad, "\n".join(bad)
