"""Reading the built book at 390 and 1280 px, light and dark, over a few representative pages: tables whose
columns are in view, captions outside their scrollers, a dark page that is dark around its figures, formulas out of
the keyboard's way, a focus ring on every control, each exercise one block, the proof index readable in the dark.

Each page is loaded once per width and theme it needs (no screenshots, no full-suite axe: the readability suite
does those); what is measured goes to ``artifacts/reading/measurements.json``.
"""
from __future__ import annotations

import json

import pytest

from bookbrowser import HTML, NO_TRANSITIONS, ROOT, axe_source, is_local, run_axe, set_theme

ART = ROOT / "artifacts" / "reading"
#: pages that show what these tests look at: §4 (players, many formulas before the first control), §4b (its
#: assumptions table), §6 (the wide measurement tables, its players), the exercises page
SECTION_4, SECTION_4B, SECTION_6, EXERCISES = ("book/04_flash_forward", "book/04b_what_limits",
                                               "book/06_flash_decoding", "book/12_exercises")
_RESULTS: dict = {}


def _record(key, value):
    ART.mkdir(parents=True, exist_ok=True)
    path = ART / "measurements.json"
    if not _RESULTS and path.exists():
        _RESULTS.update(json.loads(path.read_text()))
    _RESULTS[key] = value
    path.write_text(json.dumps(_RESULTS, indent=1, sort_keys=True))


def _table_pages() -> list[str]:
    """Every built page of the book with a display table (flashbook.display.Table)."""
    return sorted(p.relative_to(HTML).with_suffix("").as_posix() for p in HTML.glob("book/**/*.html")
                  if 'class="fb-table"' in p.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def load(site, browser):
    """``load(doc, width, theme)`` -> a Playwright page showing ``doc`` (every host but localhost blocked), the
    theme set before the page's own scripts run (as a reader's stored choice is), transitions off."""
    contexts = {}

    def _load(doc: str, width: int, theme: str = "light"):
        key = (width, theme)
        if key not in contexts:
            ctx = browser.new_context(viewport={"width": width, "height": 900})
            ctx.add_init_script(f"try {{ localStorage.setItem('mode', '{theme}'); "
                                f"localStorage.setItem('theme', '{theme}'); }} catch (e) {{}}")
            ctx.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
            contexts[key] = ctx.new_page()
        page = contexts[key]
        page.goto(site + doc + ".html", wait_until="load")
        page.add_style_tag(content=NO_TRANSITIONS)
        page.wait_for_timeout(200)
        assert page.evaluate("document.documentElement.dataset.theme") == theme
        return page

    yield _load
    for page in contexts.values():
        page.context.close()


# ---------------------------------------------------------------------------------------------------- tables

_TABLES_JS = """() => Array.from(document.querySelectorAll('article table')).map(t => {
  const scroller = (() => { for (let a = t.parentElement; a && a.tagName !== 'ARTICLE'; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX; if (o === 'auto' || o === 'scroll') { return a; } } return null; })();
  const heads = Array.from(t.querySelectorAll('thead th, tr:first-child th'));
  const box = (scroller || t).getBoundingClientRect();
  return {
    name: (t.closest('[aria-labelledby]') && document.getElementById(t.closest('[aria-labelledby]')
           .getAttribute('aria-labelledby')) || {textContent: ''}).textContent.slice(0, 60)
          || heads.map(h => h.textContent.trim()).join(', ').slice(0, 60),
    hidden: heads.filter(h => { const r = h.getBoundingClientRect();
                                return r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1); })
                 .map(h => h.textContent.trim()),
    captionInside: !!scroller && (t.querySelector('caption') !== null
                                  || scroller.querySelector('.fb-table-caption, figcaption, p.caption') !== null),
  };
})"""


@pytest.mark.parametrize("width", [390, 1280])
def test_tables_show_their_columns_and_keep_captions_outside_the_scroller(load, width):
    """At 1280 px no table column is out of view (every header inside its table's visible box: the columns a
    paragraph names among them); at both widths no caption sits inside a sideways scroller."""
    pages = _table_pages()
    assert SECTION_6 in pages and SECTION_4B in pages
    bad, seen = [], 0
    for doc in pages:
        for t in load(doc, width).evaluate(_TABLES_JS):
            seen += 1
            if t["captionInside"]:
                bad.append(f"{doc} at {width} px: the caption of {t['name']!r} is inside its scroller")
            if width == 1280 and t["hidden"]:
                bad.append(f"{doc} at 1280 px: {t['name']!r}: columns out of view: {t['hidden']}")
    assert seen >= 20 and not bad, "\n".join(bad)


def test_the_assumptions_table_is_stacked_on_a_phone(load):
    """§4b's assumptions table at 390 px: one block per row, each value beside its column's name and at least
    half the screen wide (it was a 100 px column two screens tall)."""
    page = load(SECTION_4B, 390)
    rows = page.evaluate("""() => Array.from(document.querySelectorAll('.fb-stack table.fb-table')).map(t => ({
        cells: Array.from(t.querySelectorAll('tbody td')).map(td => ({w: td.getBoundingClientRect().width,
                label: getComputedStyle(td, '::before').content, display: getComputedStyle(td).display})),
        height: t.getBoundingClientRect().height, scrolls: t.parentElement.scrollWidth > t.parentElement.clientWidth + 1}))""")
    assert rows, "no stacked table on §4b at 390 px"
    for t in rows:
        assert not t["scrolls"]
        assert all(c["display"] == "grid" and c["w"] >= 300 and c["label"] not in ("none", "normal", '""')
                   for c in t["cells"]), t["cells"][:3]
    _record("stacked_tables_4b_390_height_px", [round(t["height"]) for t in rows])


_PRINT_NUMBERS_JS = """() => Array.from(document.querySelectorAll('table td')).filter(td =>
    /^[+\\-\\u2212]?[\\d,.]+\\s?(%|x|\\[\\d+\\])?$/.test(td.textContent.trim())).filter(td => {
      const r = document.createRange(); r.selectNodeContents(td);
      return new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size > 1; })
    .map(td => td.textContent.trim())"""


def test_printed_numbers_are_never_broken(load):
    """Printed (print media, an A4 page's width), no number in a table cell is broken across lines."""
    page = load(SECTION_6, 794)
    page.emulate_media(media="print")
    try:
        broken = page.evaluate(_PRINT_NUMBERS_JS)
    finally:
        page.emulate_media(media="screen")
    assert not broken, f"numbers broken across lines in print: {broken[:10]}"


# ---------------------------------------------------------------------------------------------------- dark

def _luminance_around(page, selector: str) -> dict:
    """Mean relative luminance and the share of light pixels in a screenshot of the article column from the top
    of the first ``selector`` to 600 px below it."""
    import io

    import numpy as np
    from PIL import Image

    el = page.locator(selector).first
    el.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = el.bounding_box()
    col = page.evaluate("() => { const r = (document.querySelector('article') || document.body)"
                        ".getBoundingClientRect(); return [r.left, r.width]; }")
    clip = {"x": col[0], "y": max(box["y"], 0), "width": col[1], "height": min(600, 900 - max(box["y"], 0))}
    rgb = np.asarray(Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("RGB"), dtype=float) / 255
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    lum = lin @ np.array([0.2126, 0.7152, 0.0722])
    return {"mean": float(lum.mean()), "light_share": float((lum > 0.5).mean())}


@pytest.mark.parametrize("width", [390, 1280])
def test_the_column_around_a_player_is_dark_in_the_dark_theme(load, width):
    """In the dark theme the article column around §4's and §6's first player (controls, figure, caption) is
    dark: its mean luminance low and few light pixels (the light theme's the opposite, as a control); the player
    shows its dark frame, and the light one again when the reader switches to light."""
    found = {}
    for doc in (SECTION_4, SECTION_6):
        page = load(doc, width, "dark")
        page.wait_for_function("() => { const i = document.querySelector('.fb-explorer img.fb-frame');"
                               " return i.complete && i.naturalWidth > 0 && !i.src.startsWith('data:'); }",
                               timeout=60_000)  # a generous multiple: it returns once the frame shows
        dark = _luminance_around(page, ".fb-explorer")
        src = page.locator(".fb-explorer img.fb-frame").first.get_attribute("src")
        set_theme(page, "light")
        page.wait_for_function("() => document.querySelector('.fb-explorer img.fb-frame').src.startsWith('data:')",
                               timeout=60_000)
        light = _luminance_around(page, ".fb-explorer")
        found[doc] = {"dark": dark, "light": light, "dark_src": src.rsplit("/", 1)[-1]}
        assert dark["mean"] < 0.08 and dark["light_share"] < 0.06, f"{doc} at {width} px, dark: {dark}"
        assert light["mean"] > 0.5, f"{doc} at {width} px, light: {light}"
    _record(f"dark_column_luminance_{width}", found)


# ---------------------------------------------------------------------------------------------------- keyboard

_FOCUSED_JS = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) { return null; }
  const st = getComputedStyle(e);
  const ring = (st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) >= 2) || st.boxShadow !== 'none';
  return {tag: e.tagName.toLowerCase(), cls: (typeof e.className === 'string' ? e.className : '').slice(0, 60),
          label: (e.getAttribute('aria-label') || e.getAttribute('title') || e.textContent || '').trim().slice(0, 40),
          math: !!e.closest('mjx-container'), control: !!e.closest('.fb-explorer [data-fb-slider], form.fb-exercise-form'),
          ring: ring, outline: st.outlineStyle + ' ' + st.outlineWidth};
}"""


def _tab_walk(page, stops: int, *, skip: bool = False) -> list[dict]:
    """The first ``stops`` tab stops from the top of the loaded page; with ``skip``, the first stop (the theme's
    "Skip to main content" link) taken with Enter first, as a keyboard reader does, and counted as one stop."""
    page.evaluate("() => { window.scrollTo(0, 0); document.activeElement && document.activeElement.blur(); }")
    page.locator("body").focus()
    walk = []
    if skip:
        page.keyboard.press("Tab")
        walk.append(page.evaluate(_FOCUSED_JS))
        assert walk[0] and "skip" in walk[0]["label"].lower(), f"the first stop is not a skip link: {walk[0]}"
        page.keyboard.press("Enter")
    while len(walk) < stops:
        page.keyboard.press("Tab")
        walk.append(page.evaluate(_FOCUSED_JS))
    return walk


def test_tab_from_the_top_of_section_4_reaches_a_control_in_fewer_than_20_stops(load):
    """From the top of §4 at 1280 px a keyboard reader reaches the first control (a player's, or an exercise
    form's) in fewer than 20 stops: the skip link, then the article's links and buttons, no formula among them
    (MathJax keeps its 100-odd formulas out of the tab order). Without the skip link the same walk meets no
    formula either."""
    page = load(SECTION_4, 1280)
    walk = _tab_walk(page, 40, skip=True)
    first = next((k + 1 for k, s in enumerate(walk) if s and s["control"]), None)
    _record("tab_stops_to_first_control_section_4", {"stops": first, "walk": [s and s["label"] for s in walk]})
    assert first is not None and first < 20, f"first control after {first} stops: {[s and s['label'] for s in walk]}"
    assert not any(s and s["math"] for s in walk + _tab_walk(page, 80)), "a formula is a tab stop"
    assert page.locator("mjx-container").count() > 50 and not page.locator("mjx-container[tabindex='0']").count()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_control_shows_a_focus_ring(load, theme):
    """The first 45 tab stops of §4 and of the exercises page (the header's buttons, the sidebar, the article's
    links, a player's controls, a form's fields and buttons) each draw a focus ring: an outline of at least 2 px or
    a box shadow."""
    bad = []
    for doc in (SECTION_4, EXERCISES):
        for s in _tab_walk(load(doc, 1280, theme), 45):
            if s and not s["ring"]:
                bad.append(f"{doc}: {s['tag']}.{s['cls']} {s['label']!r} ({s['outline']})")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------------- exercises

_EXERCISES_JS = """() => Array.from(document.querySelectorAll('article div.exercise')).map(ex => ({
  id: ex.id,
  block: ex.classList.contains('fb-exercise-block'),
  form: !!ex.querySelector('form.fb-exercise-form'),
  solution: !!ex.querySelector('.solution.dropdown'),
  solutionClosed: !!ex.querySelector('.solution.dropdown.toggle-hidden, .solution.dropdown:not(.toggle-shown)'),
  code: Array.from(ex.querySelectorAll('div.cell_input')).filter(c => !c.closest('.solution'))
          .map(c => c.textContent.trim().slice(0, 40)),
  strayAfter: (() => { const n = ex.nextElementSibling; return !!n && (n.classList.contains('solution')
          || (n.classList.contains('cell') && /answer = None|check\\(/.test(n.textContent))); })(),
}))"""


def test_each_exercise_is_one_block(load):
    """On the exercises page every exercise is one box: its statement, its form and its solution (a closed
    dropdown) inside, no stub or check call shown, nothing of it left after the box."""
    exercises = load(EXERCISES, 1280).evaluate(_EXERCISES_JS)
    assert len(exercises) >= 15
    bad = [e for e in exercises if not (e["block"] and e["form"] and e["solution"] and e["solutionClosed"])
           or e["code"] or e["strayAfter"]]
    assert not bad, bad[:3]


def test_a_labs_kernel_cells_stand_outside_its_task_boxes(load):
    """On a lab's page each part's task is a box of text; the starter kernel and the check cell after it stay on
    the page (both parts alike), not inside the task's box."""
    for doc in ("book/labs/lab6_cuda_softmax", "book/labs/lab9_cuda_backward"):
        page = load(doc, 1280)
        exercises = page.evaluate(_EXERCISES_JS)
        assert len(exercises) == 2 and not any(e["block"] or e["code"] for e in exercises), (doc, exercises)
        # the worked solution's code sits inside the solution's dropdown, not after it
        assert page.evaluate("""() => Array.from(document.querySelectorAll('article div.solution'))
            .map(s => !!s.querySelector('div.cell'))""") == [True], doc


# ---------------------------------------------------------------------------------------------------- indexes

def test_the_proof_index_reads_in_the_dark(site, browser):
    """The proof index (Sphinx's index table, letter rows included) has no colour-contrast violation in either
    theme (axe-core's colour rules)."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    try:
        page.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
        page.goto(site + "prf-prf.html", wait_until="load")
        assert page.locator("table.indextable tr.cap").count() >= 1
        found = run_axe(page, axe_source())
    finally:
        page.context.close()
    bad = [v for theme in ("light", "dark") for v in found[theme] if v["id"] == "color-contrast"]
    assert not bad, bad
