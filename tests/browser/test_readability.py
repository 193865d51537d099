"""Every figure readable on every screen, a phone's included, in Debian's Chromium over the built book.

At 390 px (a phone), 768 px (a tablet; make audit) and 1280 px (a desktop), in the light and the dark theme: no
element of a frame player wider than the player, figure text at least 12 CSS px on a desktop and 9 on a phone
(computed from the frame's resolution, its smallest text and its displayed width); axe-core with no critical and
no serious violation: the rules that read a page's own elements on every page, the colour rules in both themes
at 390 and 1280 px on the pages whose styles differ (make audit: every rule on every page in both themes at both
widths); no page that scrolls sideways at 390 px, every page's own first load at most 1.5 MB, and Enter in an
exercise's text field checks it. What was measured goes to
``artifacts/readability/`` (``measurements.json``; with ``FLASHBOOK_SCREENSHOTS=1``, screenshots at the three
widths).

axe-core comes from the npm registry: the release pinned as ``bookbrowser.AXE_VERSION``, installed into
``node_modules/`` at the repository root where it is missing or another release is there; the test fails, not
skips, when it cannot be found or installed.
"""
from __future__ import annotations

import json

import pytest

from bookbrowser import (PAGES, PLAYERS_FIT_JS, ROOT, SCREENSHOTS, axe_source, colour_audits, is_local, pages_showing,
                         run_axe, share_of, style_cover)
from tiers import sample

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
def at_width(request, site, browser, visit):
    """``at_width(doc, width, colours=False)`` -> ``{"fit", "sideways", "axe"}`` of ``doc`` at ``width`` px, each
    page loaded once per width: its players' fit (:data:`bookbrowser.PLAYERS_FIT_JS`), whether it scrolls sideways
    (:data:`_SIDEWAYS_JS`) and, at 390 px where a selected test audits the page's colours
    (``bookbrowser.colour_audits``), axe-core's findings (``bookbrowser.run_axe``, both themes). At 1280 px the record is :func:`visit`'s (its page, loaded at 1280 px); the page is loaded
    again only for screenshots, or for a colour audit :func:`visit` did not run. ``colours=True`` asks for the
    colour rules' findings (loading the page again if its load ran without them)."""
    pages, cache, source = {}, {}, axe_source()
    audited = colour_audits(request.session, 390)

    def _load(doc: str, width: int, colours: bool = False) -> dict:
        if width == 1280 and not SCREENSHOTS and (not colours or visit(doc)["axe"]["dark"] is not None):
            v = visit(doc)
            return {"fit": v["fit"], "sideways": None, "axe": v["axe"]}
        stale = (doc, width) in cache and colours and (cache[doc, width]["axe"] or {}).get("dark") is None
        if (doc, width) not in cache or stale:
            page = pages.get(width) or pages.setdefault(width, _page(browser, width, "light"))
            page.goto(site + doc + ".html", wait_until="load")
            rec = {"fit": page.evaluate(PLAYERS_FIT_JS), "sideways": page.evaluate(_SIDEWAYS_JS)}
            if SCREENSHOTS and rec["fit"]:
                page.screenshot(path=str(ART / f"{doc.replace('/', '__')}-{width}.png"))
                page.locator(".fb-explorer").first.screenshot(
                    path=str(ART / f"{doc.replace('/', '__')}-{width}-figure.png"))
            if width == 1280:
                rec["axe"] = visit(doc)["axe"] if not colours else run_axe(page, source, True)
            elif colours or doc in audited:   # at 390 px axe runs only for a colour audit (the other rules: visit)
                rec["axe"] = run_axe(page, source, True)
            else:
                rec["axe"] = None
            cache[doc, width] = rec
        return cache[doc, width]

    yield _load
    for page in pages.values():
        page.context.close()


@pytest.mark.parametrize("width", sample(WIDTHS, keep=(390, 1280), label="player widths"))
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


def _serious(doc: str, axe: dict) -> list[str]:
    """axe-core's critical and serious findings in ``axe`` (``bookbrowser.run_axe``'s record), one line each."""
    return [f"{doc} ({theme}): {v['impact']} {v['id']} x{v['n']}: {v['where']}"
            for theme in ("light", "dark") for v in axe[theme] or () if v["impact"] in ("critical", "serious")]


def _counts(axe: dict) -> dict:
    """axe-core's findings in ``axe`` counted by theme and impact (elements), for the measurements file."""
    return {theme: {impact: sum(v["n"] for v in axe[theme] if v["impact"] == impact)
                    for impact in sorted({v["impact"] for v in axe[theme]})}
            for theme in ("light", "dark") if axe[theme] is not None}


#: The pages whose colours make test audits (both themes, both widths): the style cover of the built book
#: (``bookbrowser.style_cover``: together they show every element and class of every page, so the CSS rules
#: that colour any page are all drawn). make audit runs the same test on every other page.
COLOUR_PAGES = style_cover()


@pytest.mark.parametrize("doc", sample(PAGES, keep=COLOUR_PAGES, label="colour audit"))
@pytest.mark.parametrize("width", [390, 1280])
def test_axe_finds_nothing_serious(at_width, width, doc):
    """axe-core (its WCAG 2.0 A and AA rules: a screen reader and a keyboard reach every page) on ``doc`` at
    ``width``: every rule in the light theme, then the rules that read colours (``bookbrowser.COLOUR_RULES``) in the dark one (the theme's own
    switch, on the same loaded page; ``bookbrowser.run_axe``): no critical and no serious violation. Each page is
    loaded once per width (:func:`at_width`; at 1280 px, :func:`visit`'s page)."""
    axe = at_width(doc, width, colours=True)["axe"]
    _record(f"axe_{width}/{doc}", _counts(axe))
    found = _serious(doc, axe)
    assert not found, "\n".join(found)


def test_axe_rules_of_the_page_itself_on_every_page(visit):
    """axe-core's rules that read a page's own elements (every WCAG 2.0 A/AA rule but the colour rules: names,
    labels, roles, alternative texts, structure) on every page at 1280 px in the light theme: no critical and no
    serious violation. These depend on each page's content, so every page is audited; the colour rules depend on
    the styles a page uses, audited on the pages that show every style (:func:`test_axe_finds_nothing_serious`)."""
    found = [line for doc in PAGES for line in _serious(doc, {"light": visit(doc)["axe"]["light"], "dark": None})]
    assert not found, "\n".join(found)


def test_no_page_scrolls_sideways_on_a_phone(at_width):
    """At 390 px no page scrolls sideways (``document.scrollingElement.scrollWidth`` at most the window's width +
    1; the widest elements are named): a wide table, equation or code block is content, so every page."""
    found = []
    for doc in PAGES:
        s = at_width(doc, 390)["sideways"]
        if s["scrollWidth"] > s["W"] + 1:
            found.append(f"{doc}: scrolls sideways at 390 px ({s['scrollWidth']} px wide): {s['widest']}")
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


def _step_every_player(site, browser, pages: list[str], key: str) -> list[float]:
    """Step the first slider of each player on ``pages`` four times; the times from each move to the new frame's
    load go to the measurements file under ``key``; fails on a player whose alt text did not change."""
    page = _page(browser, 1280, "light")
    steps, stale = {}, []
    for doc in pages:
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
    if flat:
        _record(key, {"median": flat[len(flat) // 2], "max": flat[-1], "each": steps})
    assert not stale, "\n".join(stale)
    return flat


def test_a_step_answers_quickly_and_says_what_it_shows(site, browser, visit):
    """Moving a control fetches its frame (files in ``_static/frames/``) and changes the image's alt text, on the
    first page with players and two more (``bookbrowser.share_of``); the times from the move to the new frame's
    load are recorded (goals belong to bench/, not here)."""
    assert _step_every_player(site, browser, share_of(pages_showing(visit, "explorers"), "steps")[0], "step_ms")


@pytest.mark.audit
def test_every_player_step_says_what_it_shows(site, browser, visit):
    """The same on every other page with players (make audit)."""
    _step_every_player(site, browser, share_of(pages_showing(visit, "explorers"), "steps")[1], "step_ms_rest")


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
