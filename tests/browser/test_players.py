"""Static frame players (``flashbook.display.show`` in the book build): moving a slider changes the figure."""
from __future__ import annotations

import numpy as np

from bookbrowser import PAGES, new_offline_page, pages_showing

_STATE_JS = """
root => ({
  src: root.querySelector('img.fb-frame').src,
  key: root.querySelector('img.fb-frame').getAttribute('data-fb-key'),
  outputs: Array.from(root.querySelectorAll('output')).map(o => o.textContent),
  sliders: Array.from(root.querySelectorAll('input[type=range]')).map(s => ({value: +s.value, max: +s.max})),
})
"""


def _wiggle_every_slider(page, where: str) -> list[str]:
    """Move each slider of each player one step with the keyboard; return what did not respond."""
    dead = []
    players = page.locator(".fb-explorer")
    for p in range(players.count()):
        root = players.nth(p)
        name = root.get_attribute("data-explorer")
        sliders = root.locator("input[type=range]")
        for s in range(sliders.count()):
            before = root.evaluate(_STATE_JS)
            slider = before["sliders"][s]
            slider_el = sliders.nth(s)
            slider_el.focus()
            key = "ArrowRight" if slider["value"] < slider["max"] else "ArrowLeft"
            page.keyboard.press(key)
            after = root.evaluate(_STATE_JS)
            if after["sliders"][s]["value"] == slider["value"]:
                dead.append(f"{where}: {name}: slider {s} did not move")
            elif after["src"] == before["src"] or after["key"] == before["key"]:
                dead.append(f"{where}: {name}: slider {s} moved but the figure did not change")
            elif after["outputs"] == before["outputs"]:
                dead.append(f"{where}: {name}: slider {s} moved but its value label did not change")
            page.keyboard.press("ArrowLeft" if key == "ArrowRight" else "ArrowRight")
            if root.evaluate(_STATE_JS)["src"] != before["src"]:
                dead.append(f"{where}: {name}: slider {s} moved back but the figure did not return")
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

    ex = Explorer("test_mechanism", compute, draw, sliders=(Slider("a", (1, 2, 3), 2), Slider("b", (0, 1), 0)))
    page = new_offline_page(browser)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(f"<html><body>{render_static(ex)}</body></html>")
    assert page.locator(".fb-explorer input[type=range]").count() == 2
    assert page.evaluate("document.querySelector('img.fb-frame').naturalWidth") > 0
    assert _wiggle_every_slider(page, "test page") == []
    assert errors == []
    page.context.close()


def test_book_players_respond(visit, site, browser):
    """Every frame player in the built book: each slider changes the figure and its label."""
    dead = []
    for doc in pages_showing(visit, "explorers"):
        page = new_offline_page(browser)
        page.goto(site + doc + ".html", wait_until="load")
        dead += _wiggle_every_slider(page, doc)
        page.context.close()
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
