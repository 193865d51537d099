"""The live path (flashbook.live.LiveFigure): an explorer's in-place update, derived from its set-up and
content (the content cleared and drawn again into one persistent figure), shows what a fresh ``draw`` at the
same setting shows."""
from __future__ import annotations

import html
import io

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from flashbook.explorer import all_explorers  # noqa: E402
from flashbook.drawing import LIVE_DPI
from flashbook.live import LiveFigure  # noqa: E402
from tiers import pick  # noqa: E402

WITH_UPDATE = sorted(name for name, ex in all_explorers().items() if ex.content is not None)

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


def _short_walk(ex) -> list[dict]:
    """make test's share of :func:`_settings`, in its order: its first three settings (the first sliders moved
    to their ends and middle, which mostly update in place), one more drawn at random (seeded: tests/tiers.py),
    and the return to the defaults."""
    walk = _settings(ex)
    chosen = pick(range(len(walk)), keep=sorted({0, 1, 2, len(walk) - 1} & set(range(len(walk)))), extra=1,
                  label=f"walk of {ex.name}")
    return [walk[i] for i in chosen]


def test_some_explorers_update_in_place():
    assert len(WITH_UPDATE) == len(all_explorers())      # every explorer of the book updates in place


def _walk(name: str, steps: list[dict]) -> None:
    """Walk one persistent figure through ``steps``; at each, its PNG equals a fresh draw's (in the same
    frozen layout) up to anti-aliasing: at most 0.2% of the pixels differ by more than 16/255."""
    ex = all_explorers()[name]
    live = LiveFigure(ex, dpi=LIVE_DPI)
    for p in steps:
        data = ex.compute(**p)
        got = _pixels(live.png(data, p))
        want = _pixels(ex.png(data, p, dpi=LIVE_DPI))
        assert got.shape == want.shape, (name, p)
        off = (np.abs(got - want).max(axis=2) > 16).mean()
        assert off <= TOLERANCE.get(name, 0.002), f"{name} at {p}: {off:.2%} of the pixels differ from a fresh draw"
    assert live.updates >= len(steps) // 3, f"{name}: only {live.updates} of {len(steps)} moves updated in place"


@pytest.mark.slow
@pytest.mark.parametrize("name", WITH_UPDATE)
def test_update_in_place_matches_a_fresh_draw(name):
    """A short walk (:func:`_short_walk`) of one persistent figure: each in-place update shows what a fresh
    draw at the same setting shows."""
    _walk(name, _short_walk(all_explorers()[name]))


@pytest.mark.audit
@pytest.mark.parametrize("name", WITH_UPDATE)
def test_update_in_place_matches_a_fresh_draw_at_every_setting(name):
    """The whole walk (:func:`_settings`: each slider to its ends and middle, the corners) (make audit)."""
    _walk(name, _settings(all_explorers()[name]))


def _line_explorer(name, title=lambda data: "", **kw):
    """A one-line explorer with a set-up and a content (and ``kw``: a layout key)."""
    from flashbook.explorer import Explorer, Slider
    from flashbook.figures.base import new_figure

    def setup(**_):
        return new_figure(width=3, height=2)[0]

    def content(fig, data, **_):
        fig.axes[0].plot([0, 1], [0, data])
        fig.axes[0].set_title(title(data))

    return Explorer(name, lambda k: float(k), setup=setup, content=content, sliders=(Slider("k", (1, 2, 3, 12), 1),),
                    **kw)


def test_another_layout_key_draws_a_new_figure():
    """A setting whose layout key differs from the persistent figure's makes LiveFigure draw a new figure
    (and keep that one); the same key again is an update in place."""
    seen = []

    def key(k, **_):
        seen.append(k)
        return k == 3

    ex = _line_explorer("t_declined", layout_key=key)
    live = LiveFigure(ex, cache_size=0)    # every render draws (no cache answers)
    live.render(k=1)
    first = live.fig
    live.render(k=2)
    assert live.fig is first and live.updates == 1
    live.render(k=3)
    assert live.fig is not first and live.updates == 1 and seen[-2:] == [3, 3]   # asked, then set up anew
    assert (_pixels(live.render(k=2)) == _pixels(ex.png(ex.compute(k=2), {"k": 2}, dpi=LIVE_DPI))).all()
    assert live.updates == 1                # 2 after 3: another key again, a new figure
    assert (_pixels(live.render(k=1)) == _pixels(ex.png(ex.compute(k=1), {"k": 1}, dpi=LIVE_DPI))).all()
    assert live.updates == 2


def test_the_update_leaves_the_set_up_and_replaces_the_content():
    """Explorer.update: the set-up's axes, labels and fixed limits stay; the content's artists, legend
    and title are those of the new setting only."""
    from flashbook.explorer import Explorer, Slider
    from flashbook.figures.base import new_figure

    def setup(**_):
        fig, ax = new_figure(width=3, height=2)
        ax.set_xlabel("x")
        ax.set_ylim(0, 10)
        return fig

    def content(fig, data, **_):
        ax = fig.axes[0]
        ax.plot([0, 1], [0, data], label=f"k = {data}")
        ax.text(0.5, data, "t")
        ax.legend()
        if data > 1:
            ax.set_title(f"title {data}")

    ex = Explorer("t_parts", lambda k: k, setup=setup, content=content, sliders=(Slider("k", (1, 2, 3), 1),))
    fig = ex.draw(2, k=2)
    ax = fig.axes[0]
    assert ex.update(fig, 1, k=1) is True
    assert len(ax.lines) == 1 and len(ax.texts) == 1 and ax.lines[0].get_ydata()[1] == 1
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["k = 1"]
    assert ax.get_title() == "" and ax.get_xlabel() == "x" and ax.get_ylim() == (0, 10)
    from matplotlib.colors import to_hex

    assert to_hex(ax.lines[0].get_color()) == "#1f77b4"  # the colour cycle starts again (C0)
    plain = Explorer("t_plain", lambda k: k, lambda data, **_: new_figure()[0], (Slider("k", (1, 2), 1),))
    assert plain.update(plain.draw(1, k=1), 2, k=2) is False   # a whole draw: nothing to update


@pytest.mark.parametrize("kw", [{}, {"setup": lambda **_: None}, {"draw": print, "setup": print, "content": print},
                                {"draw": print, "layout_key": print}])
def test_an_explorer_needs_a_draw_or_a_setup_and_a_content(kw):
    from flashbook.explorer import Explorer, Slider

    with pytest.raises(TypeError, match="setup and content"):
        Explorer("t_bad", lambda k: k, sliders=(Slider("k", (1,), 1),), **kw)


def test_a_label_past_the_canvas_edge_falls_back_to_a_fresh_layout():
    """An in-place update whose title no longer fits the frozen layout is not shown clipped: LiveFigure
    draws a new figure, which gets its own constrained layout."""
    ex = _line_explorer("t_overflow", title=lambda data: " ".join(["overflowing"] * int(data)))
    live = LiveFigure(ex, cache_size=0)    # every render draws (no cache answers)
    live.render(k=1)
    assert live.fig is not None
    wide = _pixels(live.render(k=12))
    assert live.updates == 0 and live.fig is None      # drawn anew, in its own layout (not kept)
    fresh = _pixels(ex.png(12.0, {"k": 12}, dpi=LIVE_DPI))
    assert (wide == fresh).all()                       # the same picture as the static path's fallback
    live.render(k=1)
    assert live.fig is not None                        # back in the frozen layout: kept for updates


def test_the_live_widget_swaps_the_image_bytes(monkeypatch):
    """show() in a live kernel: one ipywidgets.Image whose value a control's move replaces with the
    explorer's figure at the new setting (no output area cleared and rebuilt)."""
    W = pytest.importorskip("ipywidgets")
    from flashbook.display import show

    monkeypatch.delenv("FLASHBOOK_STATIC", raising=False)
    ex = all_explorers()["io_vs_N"]
    box = show(ex)
    controls, image, described = box.children
    assert isinstance(image, W.Image) and image.format == "png"
    first, name = bytes(image.value), described.value
    # the image's text alternative: a hidden live region that says what the figure shows
    assert "aria-live=" in name and html.escape(ex.describe(ex.defaults(), live=True)) in name and "Shown: " in name
    slider = next(c for c in controls.children if c.description == "N")
    slider.value = 32768
    assert bytes(image.value) != first
    p = {**ex.defaults(), "N": 32768}
    assert html.escape(ex.describe(p, live=True)) in described.value != name
    assert (_pixels(bytes(image.value)) == _pixels(ex.png(ex.compute(**p), p, dpi=LIVE_DPI))).all()
    assert box.live_figure.updates == 1
