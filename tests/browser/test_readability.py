"""Every figure readable on every screen, a phone's included, in Debian's Chromium over the built book.

At 390 px (a phone), 768 px (a tablet) and 1280 px (a desktop), in the light and the dark theme: no element
of a frame player wider than the player, figure text at least 12 CSS px on a desktop and 9 on a phone
(computed from the frame's resolution, its smallest text and its displayed width), axe-core with no
critical and no serious violation (390 and 1280 px, both themes), no page that scrolls sideways at 390 px, every page's own first load at most
1.5 MB, and Enter in an exercise's text field checks it. What was measured goes to
``artifacts/readability/`` (``measurements.json``; with ``FLASHBOOK_SCREENSHOTS=1``, screenshots at the three
widths).

axe-core comes from the npm registry: the release pinned as ``bookbrowser.AXE_VERSION``, installed into
``node_modules/`` at the repository root where it is missing or another release is there; the test fails, not
skips, when it cannot be found or installed.
"""
from __future__ import annotations

import json

import pytest

from bookbrowser import PAGES, PLAYERS_FIT_JS, ROOT, SCREENSHOTS, axe_source, is_local, pages_showing, run_axe

ART = ROOT / "artifacts" / "readability"
WIDTHS = (390, 768, 1280)
#: A page's own bytes on its first load (its HTML, its images, what it fetches itself), the theme's shared
#: assets (``_static/``: fonts, icons, MathJax, CSS) aside.
OWN_BUDGET = 1.5e6
_RESULTS: dict = {}


def _record(key, value):
    """Keep ``value`` under ``key`` in ``artifacts/readability/measurements.json`` (other keys kept: a run of a
    few of these tests updates its own rows)."""
    ART.mkdir(parents=True, exist_ok=True)
    path = ART / "measurements.json"
    if not _RESULTS and path.exists():
        _RESULTS.update(json.loads(path.read_text()))
    _RESULTS[key] = value
    path.write_text(json.dumps(_RESULTS, indent=1, sort_keys=True))


def _page(browser, width: int, theme: str):
    """A page at ``width`` px in ``theme`` (the theme's own switch: localStorage ``mode``/``theme``, then
    ``data-theme`` on <html>), every host but localhost blocked."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_init_script(f"try {{ localStorage.setItem('mode', '{theme}'); localStorage.setItem('theme', '{theme}'); }}"
                            f" catch (e) {{}}")
    context.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
    return context.new_page()


@pytest.fixture(scope="module")
def at_width(site, browser, visit):
    """``at_width(doc, width)`` -> ``{"fit", "sideways", "axe"}`` of ``doc`` at ``width`` px, each page loaded once
    per width: its players' fit (:data:`bookbrowser.PLAYERS_FIT_JS`), whether it scrolls sideways
    (:data:`_SIDEWAYS_JS`) and, at 390 px, axe-core's findings (``bookbrowser.run_axe``). At 1280 px the record
    is :func:`visit`'s (its page, loaded at 1280 px); the page is loaded again only for screenshots."""
    pages, cache, source = {}, {}, axe_source()

    def _load(doc: str, width: int) -> dict:
        if width == 1280 and not SCREENSHOTS:
            v = visit(doc)
            return {"fit": v["fit"], "sideways": None, "axe": v["axe"]}
        if (doc, width) not in cache:
            page = pages.get(width) or pages.setdefault(width, _page(browser, width, "light"))
            page.goto(site + doc + ".html", wait_until="load")
            rec = {"fit": page.evaluate(PLAYERS_FIT_JS), "sideways": page.evaluate(_SIDEWAYS_JS)}
            if SCREENSHOTS and rec["fit"]:
                page.screenshot(path=str(ART / f"{doc.replace('/', '__')}-{width}.png"))
                page.locator(".fb-explorer").first.screenshot(
                    path=str(ART / f"{doc.replace('/', '__')}-{width}-figure.png"))
            rec["axe"] = run_axe(page, source) if width == 390 else visit(doc)["axe"] if width == 1280 else None
            cache[doc, width] = rec
        return cache[doc, width]

    yield _load
    for page in pages.values():
        page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_players_fit_and_their_text_reads(visit, at_width, width):
    """At ``width``: every player inside the column, nothing in it wider than it, its figure's smallest text
    at least 12 CSS px (768, 1280) or 9 CSS px (390); with ``FLASHBOOK_SCREENSHOTS=1``, screenshots of each
    player page's top and first figure."""
    ART.mkdir(parents=True, exist_ok=True)
    bad, text = [], {}
    for doc in pages_showing(visit, "explorers"):
        for p in at_width(doc, width)["fit"]:
            text[f"{doc}:{p['name']}"] = round(p["textPx"], 2)
            if p["wide"] or p["width"] > p["article"] + 1:
                bad.append(f"{doc}: {p['name']} ({p['width']:.0f} px in {p['article']:.0f}): {p['wide'][:4]}")
            if p["textPx"] < (9 if width < 500 else 12):
                bad.append(f"{doc}: {p['name']}: figure text {p['textPx']:.1f} CSS px")
    _record(f"figure_text_px_{width}", {"min": min(text.values()), "max": max(text.values()), "each": text})
    assert not bad, "\n".join(bad)


#: The page's own width (``document.scrollingElement.scrollWidth``) against the window's, and what sticks out past
#: the window's right edge: the innermost shown elements not inside a box that scrolls or clips by itself.
_SIDEWAYS_JS = """() => {
  const W = window.innerWidth;
  const clipped = e => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const st = getComputedStyle(a); if (st.overflowX !== 'visible' || st.position === 'fixed') { return true; } }
      return false; };
  const right = e => { const r = e.getBoundingClientRect();
      return Math.max(r.right, getComputedStyle(e).overflowX === 'visible' ? r.left + e.scrollWidth : 0); };
  const out = Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().width > 0
      && right(e) > W + 1 && e.checkVisibility({visibilityProperty: true}) && !clipped(e));
  const widest = out.filter(e => !out.some(c => c !== e && e.contains(c))).sort((a, b) => right(b) - right(a))
      .slice(0, 4).map(e => e.tagName.toLowerCase() + (typeof e.className === 'string' && e.className.trim()
          ? '.' + e.className.trim().split(/\\s+/).join('.') : '') + ' to ' + Math.round(right(e)) + ' px: '
          + (e.textContent || '').trim().slice(0, 60));
  return {W, scrollWidth: document.scrollingElement.scrollWidth, widest};
}"""


@pytest.mark.parametrize("width", [390, 1280])
def test_axe_finds_nothing_serious(at_width, width):
    """axe-core (its WCAG 2.0 A and AA rules: a screen reader and a keyboard reach every page) on every page: every rule in the light
    theme, then the rules that read colours (``bookbrowser.COLOUR_RULES``) in the dark one (the theme's own switch,
    on the same loaded page; ``bookbrowser.run_axe``): no critical and no serious violation. Each page is loaded
    once per width (:func:`at_width`; at 1280 px, :func:`visit`'s page). At 390 px, also: the page does not
    scroll sideways (``document.scrollingElement.scrollWidth`` at most the window's width + 1; the widest
    elements are named)."""
    found, counts = [], {"light": {}, "dark": {}}
    for doc in PAGES:
        rec = at_width(doc, width)
        s = rec["sideways"]
        if width == 390 and s["scrollWidth"] > s["W"] + 1:
            found.append(f"{doc}: scrolls sideways at 390 px ({s['scrollWidth']} px wide): {s['widest']}")
        for theme in ("light", "dark"):
            for v in rec["axe"][theme]:
                counts[theme][v["impact"]] = counts[theme].get(v["impact"], 0) + v["n"]
                if v["impact"] in ("critical", "serious"):
                    found.append(f"{doc} ({theme}): {v['impact']} {v['id']} x{v['n']}: {v['where']}")
    for theme in ("light", "dark"):
        _record(f"axe_{width}_{theme}", counts[theme])
    assert not found, "\n".join(found)


def test_first_load_weight_per_page(visit):
    """Each page's own first load (the HTML and what it loads from outside ``_static/``, plus frame files it
    fetches unasked), as :func:`visit` loaded it in a fresh browser context, is at most 1.5 MB; the shared
    assets are recorded beside it."""
    weights, heavy = {}, []
    for doc in PAGES:
        entries = visit(doc)["resources"]
        own = sum(e["bytes"] for e in entries if ("/_static/" not in e["url"] or "/_static/frames/" in e["url"])
                  and not e["url"].endswith("/searchindex.js"))
        shared = sum(e["bytes"] for e in entries) - own
        weights[doc] = {"own": own, "shared": shared}
        if own > OWN_BUDGET:
            heavy.append(f"{doc}: {own / 1e6:.2f} MB of its own")
    _record("page_weight_bytes", weights)
    assert not heavy, "\n".join(heavy)


_STEP_JS = """
async root => {
  const img = root.querySelector('img.fb-frame');
  const c = root.querySelector('input[type=range]');
  if (!c) { return null; }
  const times = [], dir = +c.value < +c.max ? 1 : -1;
  for (let k = 0; k < 4 && +c.value + dir >= 0 && +c.value + dir <= +c.max; k++) {
    const t0 = performance.now();
    const loaded = new Promise(r => img.addEventListener('load', r, {once: true}));
    c.value = String(+c.value + dir);
    c.dispatchEvent(new Event('input'));
    await loaded;
    times.push(performance.now() - t0);
    await new Promise(r => setTimeout(r, 50));   // the neighbours' prefetch
  }
  return times;
}
"""


def test_a_step_answers_quickly_and_says_what_it_shows(site, browser, visit):
    """Moving a control fetches its frame (files in ``_static/frames/``) and changes the image's alt text;
    the times from the move to the new frame's load are recorded (goals belong to bench/, not here)."""
    page = _page(browser, 1280, "light")
    steps, stale = {}, []
    for doc in pages_showing(visit, "explorers"):
        page.goto(site + doc + ".html", wait_until="load")
        players = page.locator(".fb-explorer")
        for k in range(players.count()):
            root = players.nth(k)
            alt = root.locator("img.fb-frame").get_attribute("alt")
            times = root.evaluate(_STEP_JS)
            if times is None:
                continue
            steps[f"{doc}:{root.get_attribute('data-explorer')}"] = [round(t, 1) for t in times]
            if root.locator("img.fb-frame").get_attribute("alt") == alt:
                stale.append(f"{doc}: {root.get_attribute('data-explorer')}: alt text did not change")
    page.context.close()
    flat = sorted(t for ts in steps.values() for t in ts)
    _record("step_ms", {"median": flat[len(flat) // 2], "max": flat[-1], "each": steps})
    assert flat and not stale, "\n".join(stale)


def test_enter_in_an_exercise_field_checks_it(site, browser):
    """An exercise form's text field: Enter grades the answer (as the Check button does)."""
    page = _page(browser, 1280, "light")
    checked = 0
    for doc in PAGES:
        if 'class="fb-exercise-form"' not in (ROOT / "_build" / "html" / (doc + ".html")).read_text(encoding="utf-8"):
            continue
        page.goto(site + doc + ".html", wait_until="load")
        field = page.locator("form.fb-exercise-form input[type=text]").first
        field.fill("1")
        field.press("Enter")
        verdict = field.locator("xpath=ancestor::form").locator(".fb-verdict")
        assert verdict.inner_text().strip(), f"{doc}: Enter in the exercise's field did not check it"
        checked += 1
        if checked >= 2:
            break
    page.context.close()
    assert checked >= 1
