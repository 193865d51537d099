"""Every interactive figure: valid at every corner of its slider ranges, finite data, a real Figure."""
import pytest

from explorer_sweep import CHECKS, STATIC_FRAME_BUDGET, check_for, sweep
from flashbook.explorer import all_explorers
from flashbook.player import MAX_FRAMES, render_static

EXPLORERS = all_explorers()


def test_frame_budget_fits_the_player():
    assert STATIC_FRAME_BUDGET <= MAX_FRAMES


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_explorer_corners(name):
    """Every explorer through the one sweep (tests/explorer_sweep.py) at a representative share of its corners
    (explorer_sweep.corners_to_check: the extremes, each figure set-up, a seeded draw of others): frame budget,
    finite data, the explorer's own invariants, a figure with data where its layout can change, a PNG at the
    extreme corners."""
    ex = EXPLORERS[name]
    assert ex.n_frames() <= MAX_FRAMES
    sweep(ex, every_corner=False)


@pytest.mark.audit
@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_explorer_every_corner(name):
    """The same sweep at every corner, each computed and drawn (make audit)."""
    sweep(EXPLORERS[name], png_at_ends=False)


def test_every_section_registers_its_explorers():
    """The sections' explorers are all in the one sweep above, with their own invariants from
    explorer_sweep.CHECKS (moved here from test_flash.py, test_decode.py and test_megakernel.py)."""
    flash = [n for n in EXPLORERS if n.startswith("flash_")]
    assert len(flash) >= 4
    assert all(check_for(n) is not None for n in flash)
    for name in ("decode_occupancy", "decode_splits", "decode_vs_measured", "decode_speedup",
                 "megakernel_timeline", "megakernel_breakdown", "megakernel_sensitivity",
                 "sched_dq_bits", "sched_dq_chain", "sched_causal", "sched_varlen"):
        assert name in EXPLORERS and CHECKS[name] is check_for(name)


@pytest.mark.slow
def test_static_player_has_every_frame():
    ex = EXPLORERS["merge_orders"]
    html = render_static(ex)
    # every frame inlined (no FLASHBOOK_FRAMES_DIR): the default one in the <img>, the others in the JSON
    assert html.count("data:image/png;base64,") == ex.n_frames()
    assert 'type="range"' in html and "jupyter-widgets" not in html


def test_static_player_keys_include_fixed_sliders():
    """A slider with one static value still takes its place in the frame key (hidden input)."""
    from flashbook.figures.base import new_figure
    from flashbook.explorer import Explorer, Slider

    def draw(y, **_):
        fig, ax = new_figure(width=2, height=1.5)
        ax.plot([0, y])
        return fig

    ex = Explorer("t_fixed", lambda a, b: a + b, draw, (Slider("a", (1,), 1), Slider("b", (0, 1), 0)))
    html = render_static(ex)
    assert html.count("data-fb-slider=") == 2 and 'type="hidden"' in html
    assert '"0-1"' in html and '"0-0"' in html


def test_table_html_and_text():
    """flashbook.display.Table: a scrolling wrapper, numbers right-aligned (class), text escaped, plain repr."""
    import re

    from flashbook.display import STACK_CHARS, Table, Tables

    t = Table([("a<b", 1.5, True), ("c", 2, False)], ["name", "value", "flag"], [None, ".2f", None], caption="cap")
    h = t._repr_html_()
    # the caption above the scroller (never scrolled away with a wide table), naming it
    m = re.match(r'<div class="fb-table-block"><p class="fb-table-caption" id="(fb-tcap-[0-9a-f]{10})">cap</p>'
                 r'<div class="fb-table-wrap" tabindex="0" role="region" aria-labelledby="([^"]+)">'
                 r'<table class="fb-table"><thead>', h)
    assert m and m.group(1) == m.group(2) and "<caption>" not in h
    assert '<th class="fb-num">value</th>' in h and "<th>flag</th>" in h          # bools are not numbers
    assert '<td class="fb-num" data-label="value">1.50</td>' in h and '<td data-label="name">a&lt;b</td>' in h
    again = t._repr_html_()           # the same table twice in a page: ids still unique
    assert again.count('id="fb-tcap-') == 1 and f'id="{m.group(1)}-2"' in again
    # a string that reads as a number is set as one; a long text column stacks the table on a phone
    s = Table([("x" * STACK_CHARS, "53.2 [13]", "+7.9%")], ["what", "model", "error"])._repr_html_()
    assert s.startswith('<div class="fb-table-block fb-stack">') and 'aria-label="table: what, model, error"' in s
    assert '<td class="fb-num" data-label="model">53.2 [13]</td>' in s and '<th class="fb-num">error</th>' in s
    assert "fb-stack" not in Table([("short", 1)], ["a", "b"])._repr_html_()
    both = Tables(t, Table([(1,)], ["n"]))
    assert both._repr_html_().count('class="fb-table-block') == 2 and len(list(both)) == 2
    with pytest.raises(TypeError, match="Table"):
        Tables("not a table")
    assert repr(t).splitlines()[1].split() == ["a<b", "1.50", "True"]
    with pytest.raises(ValueError, match="one entry per header"):
        Table([(1, 2)], ["only"])


def test_describe_names_the_setting_as_the_player_alt_does():
    """Explorer.describe: the caption, then each control that can move with its value label (a switch "on"/"off");
    the static player's first alt text is describe() at the defaults; live counts the live values."""
    import html
    import re

    from flashbook.explorer import Explorer, Slider

    ex = Explorer("t_describe", lambda n, causal, order: n, lambda y, **_: None, caption="Traffic.",
                  sliders=(Slider("n", (1024, 2048), 1024, label="N", fmt=",d"), Slider("causal", (False, True), True),
                           Slider("order", ("fa2",), "fa2", live=("fa1", "fa2"))))
    p = ex.defaults()
    assert ex.describe(p) == "Traffic. Shown: N 1,024, causal on."
    assert ex.describe({**p, "causal": False, "order": "fa1"}, live=True) == "Traffic. Shown: N 1,024, causal off, order fa1."
    assert Explorer("t_bare", lambda: 0, lambda y: None).describe({}) == "t bare"
    real = EXPLORERS["merge_orders"]
    alt = re.search(r'<img class="fb-frame" alt="([^"]*)"', render_static(real)).group(1)
    assert html.unescape(alt) == real.describe(real.defaults())
