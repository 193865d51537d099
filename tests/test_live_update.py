"""The live path (flashbook.live.LiveFigure): an explorer's ``update`` hook, which changes one persistent
figure in place, shows what a fresh ``draw`` at the same setting shows."""
from __future__ import annotations

import io

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from flashbook.explorer import all_explorers  # noqa: E402
from flashbook.drawing import LIVE_DPI
from flashbook.live import LiveFigure  # noqa: E402

WITH_UPDATE = sorted(name for name, ex in all_explorers().items() if ex.update is not None)

#: Share of pixels allowed to differ from a fresh draw. Contour labels (``clabel``) are placed, and the
#: contour lines cut under them, in screen space at the moment they are drawn: in the persistent figure
#: that is on the log axes of the frozen layout, in a fresh one on the linear axes before the layout,
#: so the labels of ``decode_speedup`` sit a few pixels apart.
TOLERANCE = {"decode_speedup": 0.02}


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def _settings(ex, count: int = 6) -> list[dict]:
    """The defaults, then each slider's live values moved one slider at a time (first, last, middle),
    then every corner of the live ranges: at most ``count`` + corners settings, in a fixed order."""
    base = ex.defaults()
    out = []
    for s in ex.sliders:
        vals = s.live_values
        for v in dict.fromkeys((vals[-1], vals[0], vals[len(vals) // 2])):
            out.append({**base, s.name: v})
    step = max(1, len(out) // count)
    picked = out[::step][:count] + list(ex.corners())[:4] + [base]
    return picked


def test_some_explorers_update_in_place():
    assert len(WITH_UPDATE) >= 1


@pytest.mark.parametrize("name", WITH_UPDATE)
def test_update_in_place_matches_a_fresh_draw(name):
    """Walk one persistent figure through several settings; at each, its PNG equals a fresh draw's (in the
    same frozen layout) up to anti-aliasing: at most 0.2% of the pixels differ by more than 16/255."""
    ex = all_explorers()[name]
    live = LiveFigure(ex, dpi=LIVE_DPI)
    steps = _settings(ex)
    for p in steps:
        data = ex.compute(**p)
        got = _pixels(live.png(data, p))
        want = _pixels(ex.png(data, p, dpi=LIVE_DPI))
        assert got.shape == want.shape, (name, p)
        off = (np.abs(got - want).max(axis=2) > 16).mean()
        assert off <= TOLERANCE.get(name, 0.002), f"{name} at {p}: {off:.2%} of the pixels differ from a fresh draw"
    assert live.updates >= len(steps) // 3, f"{name}: only {live.updates} of {len(steps)} moves updated in place"


def test_a_declined_update_draws_a_new_figure():
    """An update hook that returns False makes LiveFigure draw a new figure (and keep that one)."""
    from flashbook.figures.base import new_figure
    from flashbook.explorer import Explorer, Slider

    seen = []

    def draw(data, k=1, **_):
        fig, ax = new_figure(width=3, height=2)
        ax.plot([0, 1], [0, data])
        return fig

    def update(fig, data, k=1, **_):
        seen.append(k)
        if k == 3:
            return False
        ax = fig.axes[0]
        ax.lines[0].set_ydata([0, data])
        ax.relim()
        ax.autoscale_view()
        return None

    ex = Explorer("t_declined", lambda k: float(k), draw, (Slider("k", (1, 2, 3), 1),), update=update)
    live = LiveFigure(ex, cache_size=0)    # every render draws (no cache answers)
    live.render(k=1)
    first = live.fig
    live.render(k=2)
    assert live.fig is first and live.updates == 1
    live.render(k=3)
    assert live.fig is not first and live.updates == 1 and seen == [2, 3]
    assert (_pixels(live.render(k=2)) == _pixels(ex.png(ex.compute(k=2), {"k": 2}, dpi=LIVE_DPI))).all()
    assert live.updates == 2


def test_a_label_past_the_canvas_edge_falls_back_to_a_fresh_layout():
    """An in-place update whose title no longer fits the frozen layout is not shown clipped: LiveFigure
    draws a new figure, which gets its own constrained layout."""
    from flashbook.figures.base import new_figure
    from flashbook.explorer import Explorer, Slider

    def draw(data, **_):
        fig, ax = new_figure(width=3, height=2)
        ax.plot([0, 1], [0, 1])
        ax.set_title(" ".join(["overflowing"] * data))
        return fig

    def update(fig, data, **_):
        fig.axes[0].set_title(" ".join(["overflowing"] * data))

    ex = Explorer("t_overflow", lambda words: words, draw, (Slider("words", (1, 12), 1),), update=update)
    live = LiveFigure(ex, cache_size=0)    # every render draws (no cache answers)
    live.render(words=1)
    assert live.fig is not None
    wide = _pixels(live.render(words=12))
    assert live.updates == 0 and live.fig is None      # drawn anew, in its own layout (not kept)
    fresh = _pixels(ex.png(12, {"words": 12}, dpi=LIVE_DPI))
    assert (wide == fresh).all()                       # the same picture as the static path's fallback
    live.render(words=1)
    assert live.fig is not None                        # back in the frozen layout: kept for updates


def test_the_live_widget_swaps_the_image_bytes(monkeypatch):
    """show() in a live kernel: one ipywidgets.Image whose value a control's move replaces with the
    explorer's figure at the new setting (no output area cleared and rebuilt)."""
    W = pytest.importorskip("ipywidgets")
    from flashbook.display import show

    monkeypatch.delenv("FLASHBOOK_STATIC", raising=False)
    ex = all_explorers()["io_vs_N"]
    box = show(ex)
    controls, image = box.children
    assert isinstance(image, W.Image) and image.format == "png"
    first = bytes(image.value)
    slider = next(c for c in controls.children if c.description == "N")
    slider.value = 32768
    assert bytes(image.value) != first
    p = {**ex.defaults(), "N": 32768}
    assert (_pixels(bytes(image.value)) == _pixels(ex.png(ex.compute(**p), p, dpi=LIVE_DPI))).all()
    assert box.live_figure.updates == 1
