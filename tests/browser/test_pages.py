"""Every page of the table of contents, as a reader's headless Chromium shows it (offline)."""
from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pytest

from bookbrowser import HTML, PAGES, RAW_MATH, REPR_PATTERNS, is_local

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"


def _ids_in(path: Path, _cache={}) -> set[str]:
    if path not in _cache:
        text = path.read_text(encoding="utf-8", errors="replace")
        _cache[path] = set(re.findall(r'\b(?:id|name)="([^"]+)"', text))
    return _cache[path]


def test_toc_has_pages():
    assert PAGES, "_toc.yml lists no pages"
    missing = [p for p in PAGES if not (HTML / (p + ".html")).exists()]
    assert not missing, f"pages in _toc.yml without built HTML: {missing}"


@pytest.mark.parametrize("doc", PAGES)
def test_loads_with_title(visit, doc):
    v = visit(doc)
    assert v["status"] == 200, f"{doc}: HTTP {v['status']}"
    assert v["h1"], f"{doc}: no <h1> title"
    assert v["h1"] in v["title"], f"{doc}: <title> {v['title']!r} does not contain the page title {v['h1']!r}"


@pytest.mark.parametrize("doc", PAGES)
def test_internal_links_and_anchors(visit, site, doc):
    v = visit(doc)
    broken = []
    for href in v["links"]:
        u = urllib.parse.urlsplit(href)
        if u.scheme not in ("http", "https") or not is_local(href):
            continue  # external links are not followed (the tests run offline)
        path = urllib.parse.unquote(u.path)
        target = HTML / path.lstrip("/")
        if path.endswith("/"):
            target = target / "index.html"
        if not target.exists():
            broken.append(f"{href}: no file {target.relative_to(HTML)}")
            continue
        frag = urllib.parse.unquote(u.fragment)
        if frag and target.suffix == ".html":
            ids = set(v["ids"]) if target == HTML / (doc + ".html") else _ids_in(target)
            if frag not in ids:
                broken.append(f"{href}: no element with id {frag!r}")
    assert not broken, f"{doc}: broken internal links:\n" + "\n".join(sorted(set(broken)))


@pytest.mark.parametrize("doc", PAGES)
def test_ids_are_unique(visit, doc):
    """No id repeats in a page's HTML (invalid HTML: a link or a label would name only the first; sphinx-exercise
    wrote ``id="solution-content"`` once per solution until ``flashbook_html.unique_content_ids``)."""
    ids = re.findall(r'\bid="([^"]+)"', visit(doc)["html"])
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    assert ids and not repeated, f"{doc}: ids that repeat: {[(i, ids.count(i)) for i in repeated][:10]}"


@pytest.mark.parametrize("doc", PAGES)
def test_images_load(visit, doc):
    v = visit(doc)
    bad = [f"{i['src'][:120]} (alt={i['alt']!r})" for i in v["images"] if not i["complete"] or i["w"] <= 0]
    assert not bad, f"{doc}: images that did not load:\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", PAGES)
def test_math_rendered_offline(visit, doc):
    v = visit(doc)
    if v["math"]:
        assert v["mathjaxLoaded"], f"{doc}: {v['math']} math elements but MathJax did not load " \
                                   f"(scripts: {v['mathjaxScripts']}; blocked: {v['blocked']})"
        assert all(is_local(s) for s in v["mathjaxScripts"]), f"{doc}: MathJax from outside: {v['mathjaxScripts']}"
        assert str(v["mathjaxVersion"]).startswith("3."), f"{doc}: MathJax {v['mathjaxVersion']}, expected 3.x"
        assert v["mathTypeset"] == v["math"], f"{doc}: {v['math'] - v['mathTypeset']} of {v['math']} " \
                                              "math elements were not typeset"
    assert not v["mathErrors"], f"{doc}: MathJax errors: {v['mathErrors']}"
    raw = sorted({m.group(0)[:80] for m in RAW_MATH.finditer(v["proseText"])})
    assert not raw, f"{doc}: raw TeX left in the text: {raw}"


@pytest.mark.parametrize("doc", PAGES)
def test_display_math_fits_the_column(visit, doc):
    """No display equation is wider than the text column at the default 1280 px window (it would scroll)."""
    wide = visit(doc)["wideMath"]
    assert not wide, f"{doc}: display equations wider than the column: {wide}"


@pytest.mark.parametrize("doc", PAGES)
def test_equations_are_numbered_from_one_on_each_page(doc):
    """Numbered equations count (1), (2), ... on each page, as jupyterlab-myst numbers them live, so "Eq. (2)"
    means the same equation in the HTML and in JupyterLab."""
    html = (HTML / (doc + ".html")).read_text(encoding="utf-8")
    numbers = [int(n) for n in re.findall(r'class="eqno">\((\d+)\)', html)]
    assert numbers == list(range(1, len(numbers) + 1)), f"{doc}: equation numbers {numbers}"


@pytest.mark.parametrize("doc", PAGES)
def test_tables_are_styled_and_scroll(visit, doc):
    """Every labcore Table has padded cells and sits in a wrapper that scrolls when it is too wide."""
    bad = visit(doc)["badTables"]
    assert not bad, f"{doc}: tables without cell padding or a scrolling wrapper (first header): {bad}"


@pytest.mark.parametrize("doc", PAGES)
def test_no_javascript_errors(visit, doc):
    v = visit(doc)
    assert not v["page_errors"], f"{doc}: uncaught JavaScript errors: {v['page_errors']}"
    # A resource that failed because its host is outside (blocked here, unreachable offline) is allowed.
    console = [c for c in v["console_errors"] if not (c[2] and not is_local(c[2]))
               and not (c[1].startswith("Failed to load resource") and v["blocked"] and not c[2])]
    assert not console, f"{doc}: console errors: {console}"
    assert not v["failed_local"], f"{doc}: local resources that failed to load: {v['failed_local']}"


@pytest.mark.parametrize("doc", PAGES)
def test_no_reprs_or_error_outputs(visit, doc):
    v = visit(doc)
    found = [f"{what}: {m.group(0)!r}" for what, rx in REPR_PATTERNS.items() for m in [rx.search(v["bodyText"])] if m]
    assert not found, f"{doc}: the page shows code reprs or errors: {found}"
    classes = re.findall(r'class="[^"]*\b(output (?:traceback|stderr)|traceback|stderr)\b', v["html"])
    assert not classes, f"{doc}: error/stderr output cells in the HTML: {sorted(set(classes))}"


@pytest.mark.parametrize("doc", PAGES)
def test_no_dead_widgets(visit, doc):
    """ipywidgets need a kernel: none may reach the static HTML. Sliders live only in frame players."""
    v = visit(doc)
    for marker in (WIDGET_MIME, WIDGET_STATE_MIME, "jupyter-widgets", "@jupyter-widgets/html-manager"):
        assert marker not in v["html"], f"{doc}: ipywidgets output ({marker!r}) in the static HTML"
    assert v["widgetNodes"] == 0, f"{doc}: {v['widgetNodes']} widget elements in the page"
    assert v["deadControls"] == 0, f"{doc}: {v['deadControls']} sliders/selects outside a frame player"


def _read_from_disk(browser, pages: list[str]) -> list[str]:
    """Each of ``pages`` opened straight from _build/html (file://, no server, no network): what did not read."""
    from bookbrowser import VISIT_JS, new_offline_page

    bad = []
    for doc in pages:
        page = new_offline_page(browser)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((HTML / (doc + ".html")).as_uri(), wait_until="load")
        info = page.evaluate(VISIT_JS)
        if not info["mathjaxLoaded"] or info["mathTypeset"] != info["math"] or errors:
            bad.append(f"{doc}: {info['mathTypeset']}/{info['math']} typeset, errors {errors}")
        page.context.close()
    return bad


def test_reads_from_disk_offline(visit, browser):
    """Opened straight from _build/html (file://, no server, no network) the math still renders: the first page
    with math in each folder (its depth decides its relative paths) and two more (``bookbrowser.share_of``)."""
    from bookbrowser import pages_showing, share_of

    bad = _read_from_disk(browser, share_of(pages_showing(visit, "math"), "read from disk")[0])
    assert not bad, "pages that do not read offline from disk:\n" + "\n".join(bad)


@pytest.mark.audit
def test_every_page_reads_from_disk_offline(visit, browser):
    """The same for every other page with math (make audit)."""
    from bookbrowser import pages_showing, share_of

    bad = _read_from_disk(browser, share_of(pages_showing(visit, "math"), "read from disk")[1])
    assert not bad, "pages that do not read offline from disk:\n" + "\n".join(bad)


_SIDEBARS_JS = """() => {
  const shown = e => !!e && e.checkVisibility({visibilityProperty: true}) && e.getBoundingClientRect().right > 0
                     && e.getBoundingClientRect().width > 0;
  const modal = id => { const d = document.getElementById(id); return !!d && d.open && shown(d.querySelector('nav, .bd-toc, .page-toc')); };
  return {
    nav: shown(document.querySelector('#pst-primary-sidebar nav.bd-docs-nav')) || modal('pst-primary-sidebar-modal'),
    toc: shown(document.querySelector('#pst-secondary-sidebar .page-toc')) || modal('pst-secondary-sidebar-modal'),
    searches: Array.from(document.querySelectorAll('.search-button__button, .bd-search')).filter(shown).length,
  };
}"""


@pytest.mark.parametrize("width", [390, 1280])
def test_the_sidebar_buttons_open_and_close_the_navigation(site, browser, width):
    """The article header's buttons work at both widths: the menu button shows or hides the table of contents
    (beside the page at 1280 px, as a drawer at 390 px), the "Contents" button this page's sections on a phone;
    and one search control is shown, not a second one in a header bar of its own (sphinx-book-theme#999: that
    bar's hidden buttons took the click handlers, so on a phone the table of contents never opened)."""
    page = browser.new_context(viewport={"width": width, "height": 800}).new_page()
    page.goto(site + "book/04_flash_forward.html", wait_until="load")
    start = page.evaluate(_SIDEBARS_JS)
    assert start["nav"] == (width > 960) and start["toc"] == (width > 1200), start
    assert start["searches"] == 1, f"{start['searches']} search controls shown at {width} px"
    page.locator(".header-article-item button.primary-toggle").click()
    # each state is waited for (the drawer's transition takes a while on a loaded machine), then read again
    assert _sidebars_become(page, f"s => s.nav === {str(not start['nav']).lower()}")["nav"] != start["nav"], \
        f"the menu button did nothing at {width} px"
    if width < 960:
        page.keyboard.press("Escape")   # the drawer is a modal dialog
        _sidebars_become(page, "s => !s.nav")
        page.locator(".header-article-item button.secondary-toggle").click()
        assert _sidebars_become(page, "s => s.toc")["toc"], \
            "the Contents button did not show the page's sections at 390 px"
    page.context.close()


def _sidebars_become(page, condition: str, timeout_s: float = 60.0) -> dict:
    """The sidebars' state (:data:`_SIDEBARS_JS`) once ``condition`` (JS, of that state) holds, or as it is after
    ``timeout_s`` (the caller's assertion then says what did not happen)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"() => ({condition})(({_SIDEBARS_JS})())", timeout=timeout_s * 1000, polling=50)
    except PlaywrightTimeout:
        pass
    return page.evaluate(_SIDEBARS_JS)
