"""Static frame players (``flashbook.display.show`` in the book build): moving a slider changes the figure."""
from __future__ import annotations

import numpy as np
import pytest

from bookbrowser import PAGES, new_offline_page, pages_showing, share_of

_STATE_JS = """
root => ({
  src: root.querySelector('img.fb-frame').src,
  key: root.querySelector('img.fb-frame').getAttribute('data-fb-key'),
  alt: root.querySelector('img.fb-frame').alt,
  outputs: Array.from(root.querySelectorAll('output')).map(o => o.textContent),
  controls: Array.from(root.querySelectorAll('[data-fb-slider]')).filter(c => c.type !== 'hidden').map(c => ({
      kind: c.tagName === 'SELECT' ? 'select' : c.type, value: c.type === 'checkbox' ? (c.checked ? 1 : 0) : +c.value,
      max: c.tagName === 'SELECT' ? c.options.length - 1 : c.type === 'checkbox' ? 1 : +c.max,
      valuetext: c.getAttribute('aria-valuetext')})),
})
"""

#: The key that moves a control one step forward / back (a switch toggles with Space either way).
_KEYS = {"range": ("ArrowRight", "ArrowLeft"), "select": ("ArrowDown", "ArrowUp"), "checkbox": ("Space", "Space")}


def _wiggle_every_slider(page, where: str) -> list[str]:
    """Move each control of each player one step with the keyboard (a slider with the arrows, a select with
    the arrows, a switch with Space) and back; return what did not respond."""
    dead = []
    players = page.locator(".fb-explorer")
    for p in range(players.count()):
        root = players.nth(p)
        name = root.get_attribute("data-explorer")
        controls = root.locator("[data-fb-slider]:not([type=hidden])")
        for s in range(controls.count()):
            before = root.evaluate(_STATE_JS)
            c = before["controls"][s]
            forward, back = _KEYS[c["kind"]]
            if c["value"] >= c["max"]:
                forward, back = back, forward
            controls.nth(s).focus()
            page.keyboard.press(forward)
            after = root.evaluate(_STATE_JS)
            if after["controls"][s]["value"] == c["value"]:
                dead.append(f"{where}: {name}: {c['kind']} {s} did not move")
            elif after["src"] == before["src"] or after["key"] == before["key"]:
                dead.append(f"{where}: {name}: {c['kind']} {s} moved but the figure did not change")
            elif after["alt"] == before["alt"]:
                dead.append(f"{where}: {name}: {c['kind']} {s} moved but the alt text did not change")
            elif c["kind"] == "range" and (after["outputs"] == before["outputs"]
                                           or after["controls"][s]["valuetext"] == c["valuetext"]):
                dead.append(f"{where}: {name}: slider {s} moved but its value label / aria-valuetext did not change")
            page.keyboard.press(back)
            if root.evaluate(_STATE_JS)["src"] != before["src"]:
                dead.append(f"{where}: {name}: {c['kind']} {s} moved back but the figure did not return")
    return dead


def test_player_mechanism(browser):
    """A player rendered by flashbook.player.render_static responds to its sliders (no book needed)."""
    from flashbook.figures.base import new_figure
    from flashbook.explorer import Explorer, Slider
    from flashbook.player import render_static

    def compute(a, b):
        return np.linspace(0.0, 1.0, 20) * a + b

    def draw(y, a, b):
        fig, ax = new_figure(width=3, height=2)
        ax.plot(y)
        ax.set_title(f"a={a}, b={b}")
        return fig

    ex = Explorer("test_mechanism", lambda a, b, order, causal: compute(a, b) * (1 + (order == "fa2")) + causal,
                  lambda y, **p: draw(y, p["a"], f"{p['b']} {p['order']} {p['causal']}"),
                  sliders=(Slider("a", (1, 2, 3), 2), Slider("b", (0, 1), 0), Slider("order", ("fa1", "fa2"), "fa1"),
                           Slider("causal", (False, True), False)))
    page = new_offline_page(browser)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(f"<html><body>{render_static(ex)}</body></html>")
    assert page.locator(".fb-explorer input[type=range]").count() == 2
    assert page.locator(".fb-explorer select").count() == 1
    assert page.locator(".fb-explorer input[role=switch]").count() == 1
    assert page.evaluate("document.querySelector('img.fb-frame').naturalWidth") > 0
    assert _wiggle_every_slider(page, "test page") == []
    # Tab walks the controls in order
    controls = page.locator("[data-fb-slider]:not([type=hidden])")
    controls.first.focus()
    for k in range(1, controls.count()):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.getAttribute('data-fb-slider')") == \
            controls.nth(k).get_attribute("data-fb-slider")
    assert errors == []
    page.context.close()


def _wiggle_pages(site, browser, pages: list[str]) -> list[str]:
    dead = []
    for doc in pages:
        page = new_offline_page(browser)
        page.goto(site + doc + ".html", wait_until="load")
        dead += _wiggle_every_slider(page, doc)
        page.context.close()
    return dead


def test_book_players_respond(visit, site, browser):
    """Frame players in the built book: each slider changes the figure and its label, on the first page with
    players in each folder and two more (``bookbrowser.share_of``); the mechanism itself, every kind of control,
    is :func:`test_player_mechanism`'s."""
    dead = _wiggle_pages(site, browser, share_of(pages_showing(visit, "explorers"), "players respond")[0])
    assert not dead, "dead sliders:\n" + "\n".join(dead)


@pytest.mark.audit
def test_every_book_player_responds(visit, site, browser):
    """The same on every other page with players (make audit)."""
    dead = _wiggle_pages(site, browser, share_of(pages_showing(visit, "explorers"), "players respond")[1])
    assert not dead, "dead sliders:\n" + "\n".join(dead)


def test_every_registered_explorer_shown_somewhere(visit):
    """Each registered explorer appears as a player on some page (otherwise it is dead code)."""
    from flashbook.explorer import all_explorers

    shown = set()
    for doc in PAGES:
        html = visit(doc)["html"]
        shown |= {name for name in all_explorers() if f'data-explorer="{name}"' in html}
    missing = sorted(set(all_explorers()) - shown)
    assert not missing, f"registered explorers that no page shows: {missing}"
