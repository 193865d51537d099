"""Figures drawn for the dark theme (``flashbook.dark``) and the players' dark frame set (``flashbook.player``)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from flashbook.figures.base import new_figure
from flashbook.dark import INK, MIN_CONTRAST, PANEL, contrast, dark_colour, to_dark


def test_greys_swap_and_colours_keep_their_hue_and_stand_out():
    from matplotlib.colors import to_hex, to_rgb
    import colorsys

    assert dark_colour("white") == PANEL and dark_colour("black") == INK
    light, mid = dark_colour("#eeeeee"), dark_colour("#777777")
    # what was faint stays faint: a light band becomes a dark grey just off the panel, mid grey stays mid
    assert 1.0 < contrast(light, PANEL) < 1.5 and contrast(mid, PANEL) > 2
    for c in ("#1b9e77", "#d95f02", "#7570b3", "#1f77b4", "#d62728", "#333399"):
        d = dark_colour(c)
        assert contrast(d, PANEL) >= MIN_CONTRAST - 1e-9, (c, d)
        h0, h1 = colorsys.rgb_to_hls(*to_rgb(c))[0], colorsys.rgb_to_hls(*to_rgb(d))[0]
        assert abs(h0 - h1) < 0.02, (c, d)
    assert dark_colour((0, 0, 0, 0.5)) == to_hex((*to_rgb(INK), 0.5), keep_alpha=True)
    assert dark_colour("none") == "none" and dark_colour(None) is None
    with pytest.raises(ValueError):
        dark_colour("not a colour")
    with pytest.raises(TypeError, match="Figure"):
        to_dark("not a figure")


def _rgb(fig, dpi=50):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3]


def test_a_figure_turned_dark_keeps_its_places_and_its_colour_maps():
    from matplotlib.colors import to_rgb

    from flashbook.figures.overlap import find_overlaps

    fig, (ax, bx) = new_figure(2, 1, width=4, height=5)
    ax.plot([0, 1], [0, 1], color="k", label="a line")
    ax.set_title("a title")
    ax.legend(loc="upper left")
    mesh = bx.pcolormesh(np.arange(12.0).reshape(3, 4), cmap="viridis")
    before_mesh = mesh.to_rgba(mesh.get_array()).copy()
    _rgb(fig)
    boxes = [t.get_window_extent(fig.canvas.get_renderer()) for t in (ax.title, ax.xaxis.label)]
    to_dark(fig)
    img = _rgb(fig)
    panel = np.round(np.array(to_rgb(PANEL)) * 255)
    assert np.abs(img[1, 1] - panel).max() <= 1                      # the paper is the dark panel
    assert to_rgb(ax.title.get_color()) == to_rgb(INK) and to_rgb(ax.lines[0].get_color()) == to_rgb(INK)
    assert to_rgb(ax.get_legend().get_texts()[0].get_color()) == to_rgb(INK)
    assert np.allclose(mesh.to_rgba(mesh.get_array()), before_mesh)    # a colour map is the data's scale: kept
    r = fig.canvas.get_renderer()
    assert [t.get_window_extent(r).bounds for t in (ax.title, ax.xaxis.label)] == [b.bounds for b in boxes]
    assert find_overlaps(fig) == []


@pytest.mark.slow   # draws every explorer twice
def test_every_explorer_default_frame_has_a_dark_twin_on_the_panel():
    """The default frame of one explorer per figure module, turned dark: its corner is the panel, most of its
    pixels are dark, and it hides nothing the light frame did not."""
    from matplotlib.colors import to_rgb

    from flashbook.drawing import STATIC_DPI, draw_png
    from flashbook.explorer import all_explorers
    from flashbook.figures.overlap import find_overlaps

    panel = np.round(np.array(to_rgb(PANEL)) * 255)
    seen = set()
    for name, ex in sorted(all_explorers().items()):
        module = ex.compute.__module__
        if module in seen:
            continue
        seen.add(module)
        p = ex.defaults()
        fig, _, _ = draw_png(ex, ex.compute(**p), p, STATIC_DPI)
        light = find_overlaps(fig)
        to_dark(fig)
        img = _rgb(fig)
        assert np.abs(img[2, 2] - panel).max() <= 1, name
        lum = img.mean(axis=2)
        assert (lum < 100).mean() > 0.6, f"{name}: only {(lum < 100).mean():.0%} of the dark frame is dark"
        assert [str(o) for o in find_overlaps(fig)] == [str(o) for o in light], name


def test_the_book_build_writes_a_dark_frame_set_as_files(monkeypatch, tmp_path):
    """With a frames folder (the book build), every setting has a dark frame file, the default too, and the page
    itself carries only their names: a light page's weight grows by a few bytes per frame."""
    from flashbook import player
    from flashbook.explorer import Explorer, Slider

    def draw(y, **_):
        fig, ax = new_figure(width=2, height=1.5)
        ax.plot([0, y], color="k")
        return fig

    ex = Explorer("t_dark", lambda n: n, draw, (Slider("n", (1, 2, 3), 2),))
    monkeypatch.setenv(player.FRAMES_DIR_ENV, str(tmp_path))
    html = player.render_static(ex)
    data = json.loads(re.search(r'<script type="application/json" class="fb-frames">(.*?)</script>', html).group(1))
    assert set(data["dark"]) == set(data["frames"]) == {"0", "1", "2"}
    assert html.count("data:image/png;base64,") == 1                   # the light default only
    light = {f for f in data["frames"].values() if f}
    assert not light & set(data["dark"].values()) and all((tmp_path / f).exists() for f in data["dark"].values())
    assert "MutationObserver" in html and "data-theme" in html        # the player follows the theme's switch
    monkeypatch.delenv(player.FRAMES_DIR_ENV)
    assert '"dark": null' in player.render_static(ex)                 # inline frames (a notebook): no dark set
