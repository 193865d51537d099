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


# ------------------------------------------------------------------ readable on every screen, a phone's too

@pytest.mark.slow
def test_every_explorer_figure_is_narrow_with_large_enough_text():
    """Each explorer's default figure is at most MAX_WIDTH inches wide and its smallest drawn text is at least
    MIN_FONT points: 12.5 CSS px on a desktop, >= 9 CSS px in a 390 px phone's 358 px column."""
    from flashbook.drawing import STATIC_DPI, draw_png
    from flashbook.explorer import all_explorers
    from flashbook.drawing import CSS_PX_PER_INCH, smallest_text
    from flashbook.figures.base import MAX_WIDTH, MIN_FONT

    assert MIN_FONT / 72 * CSS_PX_PER_INCH >= 12 and MIN_FONT / 72 * 358 / MAX_WIDTH >= 9
    bad = []
    for name, ex in sorted(all_explorers().items()):
        p = ex.defaults()
        fig, png, _ = draw_png(ex, ex.compute(**p), p, STATIC_DPI)
        width_in = int.from_bytes(png[16:20], "big") / STATIC_DPI
        if width_in > MAX_WIDTH + 0.01 or smallest_text(fig) < MIN_FONT:
            bad.append(f"{name}: {width_in:.2f} in wide, smallest text {smallest_text(fig)} pt")
    assert not bad, "\n".join(bad)


def test_a_row_of_panels_is_stacked_into_a_column():
    from flashbook.figures.base import MAX_WIDTH, new_figure

    fig, (a, b) = new_figure(1, 2, width=9.0, height=3.0, gridspec_kw={"width_ratios": [2, 1]})
    assert fig.get_size_inches()[0] == MAX_WIDTH
    assert a.get_subplotspec().rowspan.start == 0 and b.get_subplotspec().rowspan.start == 1
    assert a.get_gridspec().get_height_ratios() == [2, 1]
    with pytest.raises(ValueError, match="positive size"):
        new_figure(width=0)


def test_long_titles_are_wrapped_to_the_figure():
    import io

    from flashbook.figures.base import new_figure

    fig, ax = new_figure(width=4.8, height=3)
    ax.set_title("a title " * 20)
    fig.savefig(io.BytesIO(), format="png")
    lines = ax.get_title().split("\n")
    assert len(lines) >= 3 and max(map(len, lines)) < 70


def _kinds_explorer():
    from flashbook.explorer import Explorer, Slider
    from flashbook.figures.base import new_figure

    def draw(y, **_):
        fig, ax = new_figure(width=2, height=1.5)
        ax.plot([0, y])
        return fig

    return Explorer("t_kinds", lambda n, order, causal: n + len(order) + causal, draw,
                    (Slider("n", (1, 2, 4), 2, label="N", fmt=lambda v: f"{v} KiB"),
                     Slider("order", ("fa1", "fa2"), "fa2", label="loop order"),
                     Slider("causal", (False, True), True)), caption="A test figure.")


def test_static_player_controls_speak_and_fit(monkeypatch):
    """Categorical choices are <select>, on/off ones switches, numbers sliders with aria-valuetext; the
    alt text names the setting; a numbered figcaption; the launch note once per page."""
    import re

    from flashbook import player

    monkeypatch.setattr(player, "_PAGE", {"figures": 0, "note": False})
    monkeypatch.delenv(player.FRAMES_DIR_ENV, raising=False)
    ex = _kinds_explorer()
    html = player.render_static(ex)
    assert '<input type="checkbox" role="switch" data-fb-slider="causal" data-fb-on="1" data-fb-off="0" checked>' in html
    assert re.search(r'<select data-fb-slider="order"><option value="0">fa1</option><option value="1" selected>fa2', html)
    assert 'type="range" min="0" max="2" step="1" value="1" data-fb-slider="n" aria-valuetext="2 KiB"' in html
    assert 'alt="A test figure. Shown: N 2 KiB, loop order fa2, causal on."' in html
    assert '<figcaption><span class="fb-fignum">Figure 1.</span> A test figure.</figcaption>' in html
    assert html.startswith('<figure class="fb-explorer"') and html.count('class="fb-note"') == 1
    again = player.render_static(ex)
    assert "Figure 2." in again and 'class="fb-note"' not in again


def test_static_player_writes_frames_as_files(monkeypatch, tmp_path):
    """In the book build the page holds only the default frame; the others are files the player fetches."""
    import json
    import re

    from flashbook import player

    monkeypatch.setenv(player.FRAMES_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(player.FRAMES_URL_ENV, "_static/frames/")
    ex = _kinds_explorer()
    html = player.render_static(ex)
    assert html.count("data:image/png;base64,") == 1
    data = json.loads(re.search(r'<script type="application/json" class="fb-frames">(.*?)</script>', html).group(1))
    files = {f for f in data["frames"].values() if f}      # one file per distinct picture (content-addressed)
    assert sum(1 for f in data["frames"].values() if f) == ex.n_frames() - 1 and data["base"] == "_static/frames/"
    assert 1 < len(files) <= ex.n_frames() - 1
    assert data["frames"]["1-1-1"] is None                      # the default: the <img>'s own inline src
    assert all((tmp_path / f).read_bytes()[:4] == b"\x89PNG" for f in files)
    m = re.search(r'width="(\d+)" height="(\d+)" data-fb-key="1-1-1" data-fb-text-px="([\d.]+)"', html)
    assert int(m.group(1)) == 200 and float(m.group(3)) >= 24.9   # 2 in at 100 CSS px/in; 9 pt at 200 dpi


@pytest.mark.slow
def test_frame_cache_draws_each_frame_once_per_source(monkeypatch, tmp_path):
    """With a frame cache (the book build's ``_build/.frame-cache``) a second render of the same source draws
    nothing and writes the same HTML; another source fingerprint draws every frame again and drops the old
    folder; a damaged entry is drawn again; an explorer that is not the registered one of its name is never
    cached."""
    from flashbook import player
    from flashbook.explorer import EXPLORERS

    def fresh(fingerprint):
        player._cache_folder.cache_clear()
        monkeypatch.setattr(player, "source_fingerprint", lambda: fingerprint)

    drawn = []
    real = player.draw_png
    monkeypatch.setattr(player, "draw_png", lambda *a, **k: drawn.append(a[2]) or real(*a, **k))
    monkeypatch.setenv(player.FRAME_CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(player.FRAMES_DIR_ENV, raising=False)
    ex = _kinds_explorer()
    fresh("a" * 64)
    player.render_static(ex, number=1)                       # not registered: drawn, and not cached
    assert len(drawn) == 12 and not list((tmp_path / "cache").rglob("*.png"))
    drawn.clear()
    monkeypatch.setitem(EXPLORERS, ex.name, ex)              # registered (for this test only)
    monkeypatch.setattr(player, "_IDS_USED", {})
    monkeypatch.setattr(player, "_PAGE", {"figures": 0, "note": False})
    first = player.render_static(ex, number=1)
    assert len(drawn) == ex.n_frames() == 12
    monkeypatch.setattr(player, "_IDS_USED", {})
    monkeypatch.setattr(player, "_PAGE", {"figures": 0, "note": False})
    second = player.render_static(ex, number=1)
    assert len(drawn) == 12 and second == first             # every frame from the cache, byte-identical HTML
    victim = next((tmp_path / "cache" / ("a" * 24)).glob("*.json"))
    victim.write_text("{broken")
    player.render_static(ex, number=1)
    assert len(drawn) == 13                                  # the damaged entry alone is drawn again
    fresh("b" * 64)
    player.render_static(ex, number=1)
    assert len(drawn) == 25 and [p.name for p in (tmp_path / "cache").iterdir()] == ["b" * 24]
    impostor = _kinds_explorer()                             # another explorer under the registered name
    player.render_static(impostor, number=1)
    assert len(drawn) == 37                                  # drawn, not served the registered one's frames
    player._cache_folder.cache_clear()


def test_the_fingerprint_changes_with_any_file_of_the_packages(tmp_path):
    """A byte, a new file or a renamed file changes the fingerprint; compiled caches do not; the packages'
    own fingerprint is a full SHA-256, stable in a process."""
    from flashbook import player

    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "data.csv").write_text("n,t\n1,2\n")
    seen = {player.tree_fingerprint([tmp_path / "pkg"])}
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    seen.add(player.tree_fingerprint([tmp_path / "pkg"]))
    (tmp_path / "pkg" / "b.py").write_text("")
    seen.add(player.tree_fingerprint([tmp_path / "pkg"]))
    (tmp_path / "pkg" / "b.py").rename(tmp_path / "pkg" / "c.py")
    seen.add(player.tree_fingerprint([tmp_path / "pkg"]))
    assert len(seen) == 4
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert player.tree_fingerprint([tmp_path / "pkg"]) in seen
    assert player.tree_fingerprint([tmp_path / "pkg"], ["numpy"]) not in seen
    fp = player.source_fingerprint()
    assert len(fp) == 64 and fp == player.source_fingerprint()
