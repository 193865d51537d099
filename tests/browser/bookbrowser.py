"""Helpers for the browser suite (tests/browser): the TOC, the offline page, what a page must not show.

Every test here is marked ``browser`` (``make browser``; ``make test`` runs it after ``book-strict``).
It needs ``_build/html`` (a fresh build) and Debian's ``/usr/bin/chromium-headless-shell`` (:data:`CHROMIUM`; the
Makefile installs the package). Playwright drives that Chromium through ``executable_path``; it never downloads a
browser.

Each page in ``_toc.yml`` is loaded once (:func:`visit`) with every request to a host other than
localhost aborted, so the tests prove the book reads offline. What the page showed is recorded
(title, links, images, math, console and page errors, text) and the tests assert on that record. A
full-page screenshot of every page goes to ``artifacts/screenshots/`` (gitignored) for a person to look at
when ``FLASHBOOK_SCREENSHOTS=1`` (:data:`SCREENSHOTS`).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "artifacts" / "screenshots"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: Screenshots for a person to look at (every page whole, each player page at three widths, each live notebook):
#: ``FLASHBOOK_SCREENSHOTS=1`` (``make browser`` sets it). They assert nothing, and a full-page shot of a long
#: page costs a second or two of a core, so ``make test`` leaves them out.
SCREENSHOTS = os.environ.get("FLASHBOOK_SCREENSHOTS", "") == "1"
#: The Chromium the tests drive: ``FLASHBOOK_CHROMIUM`` (the Makefile's ``CHROMIUM``), else Debian's headless shell,
#: Chromium's Blink engine without the browser's user interface (what Playwright runs headless by default).
CHROMIUM = os.environ.get("FLASHBOOK_CHROMIUM", "/usr/bin/chromium-headless-shell")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def toc_pages(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """Every docname in the table of contents (root first), e.g. ``["book/intro", "book/01_bottlenecks"]``."""
    from flashbook.sections import toc_pages as pages

    return pages(toc_path)


def source_of(docname: str) -> Path | None:
    """The source file of a docname (``.ipynb`` preferred), or None."""
    for ext in (".ipynb", ".md", ".rst"):
        p = ROOT / (docname + ext)
        if p.exists():
            return p
    return None


def is_notebook(docname: str) -> bool:
    """A page executed as a notebook: an ``.ipynb``, or MyST markdown declaring a kernelspec."""
    src = source_of(docname)
    if src is None:
        return False
    if src.suffix == ".ipynb":
        return True
    head = src.read_text(encoding="utf-8")[:2000]
    return src.suffix == ".md" and head.startswith("---") and "kernelspec:" in head


PAGES = toc_pages()

_CLASS_ATTR = re.compile(r'<([a-zA-Z][\w-]*)\b[^>]*?\bclass="([^"]*)"')
_TAG = re.compile(r"<([a-zA-Z][\w-]*)\b")
#: A class that names one element rather than a style (a hash or a long number in it: a player's id, a cell's).
_ID_LIKE = re.compile(r"\d{3,}|[0-9a-f]{8}")


def style_signature(html: str) -> set[str]:
    """What a page's body can be styled by: each element name, and each ``element.class`` pair (classes that
    name one element, such as ids in disguise, left out). Two pages with the same signature are drawn by the
    same CSS rules, so a check of colours on one holds on the other."""
    body = html[html.find("<body"):]
    sig = {t.lower() for t in _TAG.findall(body)}
    for tag, classes in _CLASS_ATTR.findall(body):
        sig |= {f"{tag.lower()}.{c}" for c in classes.split() if not _ID_LIKE.search(c)}
    return sig


def style_cover(pages=None, html_dir: Path = HTML) -> list[str]:
    """The pages whose styles differ: a small set of pages whose :func:`style_signature` together hold every
    element and class any page of the book shows, each next page the one that adds the most not yet held per
    square root of its element count (a large API page is picked only for what no smaller page shows). In the
    order of ``pages`` (default :data:`PAGES`); a page added to the book with a style of its own joins it.
    Pages not built (no ``_build/html`` yet: the browser tests then fail on the missing build) are left out."""
    pages = [d for d in (PAGES if pages is None else pages) if (html_dir / (d + ".html")).exists()]
    sig, size = {}, {}
    for d in pages:
        html = (html_dir / (d + ".html")).read_text(encoding="utf-8")
        sig[d], size[d] = style_signature(html), max(1, len(_TAG.findall(html)))
    left, chosen = set().union(*sig.values()) if sig else set(), []
    while left:
        best = max(pages, key=lambda d: (len(sig[d] & left) / size[d] ** 0.5, -pages.index(d)))
        chosen.append(best)
        left -= sig[best]
    return [d for d in pages if d in chosen]


def pages_showing(visit, what: str) -> list[str]:
    """The pages of the book whose visit record counts some ``what`` (e.g. ``"math"``, ``"explorers"``);
    fails the calling test when there is none (the book has both: a check left with nothing to check is a
    check that cannot fail)."""
    import pytest

    pages = [d for d in PAGES if visit(d)[what]]
    if not pages:
        pytest.fail(f"no page of the book shows {what}: nothing for this test to check")
    return pages


def share_of(pages: list[str], label: str, extra: int = 2) -> tuple[list[str], list[str]]:
    """``(make test's share, the rest)`` of ``pages`` for a check that visits each of them (the rest is checked
    by the check's ``make audit`` twin): the first page of each folder (``book/``, ``book/labs/``,
    ``book/api/``: a page's depth decides its relative links to ``_static/``) and ``extra`` more drawn at random
    (seeded: ``tests/tiers.py``)."""
    from tiers import pick

    firsts = list({d.rsplit("/", 1)[0]: d for d in reversed(pages)}.values())
    chosen = pick(pages, keep=firsts, extra=extra, label=label)
    return chosen, [d for d in pages if d not in chosen]


def colour_audits(session, width: int) -> set[str]:
    """The pages whose colours this session audits with axe at ``width`` px (the selected
    ``test_axe_finds_nothing_serious`` items: the style cover in make test, every page in make audit), so each
    page's one load at that width runs the colour rules if and only if a test reads them."""
    return {item.callspec.params["doc"] for item in session.items
            if getattr(item, "originalname", "") == "test_axe_finds_nothing_serious"
            and item.callspec.params.get("width") == width}


def is_local(url: str) -> bool:
    u = urllib.parse.urlsplit(url)
    return u.scheme in ("data", "blob", "about", "file") or u.hostname in ("127.0.0.1", "localhost")


def new_offline_page(browser):
    """A fresh page whose requests to any host but localhost are aborted (recorded in ``page.blocked``)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    blocked: list[str] = []

    def route(r):
        if is_local(r.request.url):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.blocked = blocked
    return page


# What the reader must never see in a page's text.
REPR_PATTERNS = {
    "matplotlib Figure repr": re.compile(r"<Figure size \d"),
    "matplotlib Text repr": re.compile(r"\bText\(-?[\d.]+, -?[\d.]+, "),
    "matplotlib object repr": re.compile(r"<matplotlib[.\w]* "),
    "matplotlib artist list": re.compile(r"\[<matplotlib"),
    "ipywidgets repr": re.compile(r"\b(VBox|HBox|interactive|Output)\(children="),
    "traceback": re.compile(r"Traceback \(most recent call last\)"),
    "Markdown table shown as text": re.compile(r"\|\s*:?(?:-{3,}|[\u2013\u2014]+):?\s*\|"),
    "error name at line start": re.compile(r"^\s*(ValueError|TypeError|NameError|ModuleNotFoundError|"
                                           r"AttributeError|AssertionError|KeyError|IndexError): ", re.M),
}
RAW_MATH = re.compile(r"(?<![\\\w])\$[^\s$][^$\n]{0,300}?(?<=[^\s$\\])\$|\\\(|\\\[|\$\$|\\begin\{")

#: The page's first load as the browser counted it: the document and every resource, each as {url, bytes}
#: (bytes on the wire: ``encodedBodySize``, else ``transferSize``).
RESOURCES_JS = """() => [performance.getEntriesByType('navigation')[0]]
      .concat(performance.getEntriesByType('resource'))
      .map(e => ({url: e.name, bytes: e.encodedBodySize || e.transferSize || 0}))"""

#: Each frame player on the page: its box against the article's, the elements sticking out of it, and its
#: figure's smallest text in CSS px (the frame's ``data-fb-text-px`` scaled by its displayed width).
PLAYERS_FIT_JS = """
() => Array.from(document.querySelectorAll('.fb-explorer')).map(root => {
  const box = root.getBoundingClientRect();
  const article = (root.closest('article') || document.body).getBoundingClientRect();
  const wide = Array.from(root.querySelectorAll('*')).filter(e => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1);
    }).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().width) + ' px');
  const img = root.querySelector('img.fb-frame');
  return {name: root.dataset.explorer, width: box.width, article: article.width, wide: wide,
          textPx: +img.dataset.fbTextPx * img.clientWidth / img.naturalWidth,
          imgCss: img.clientWidth, imgNatural: img.naturalWidth,
          sliders: root.querySelectorAll('input[type=range]').length};
})
"""

VISIT_JS = r"""
async () => {
  document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; });
  await Promise.all(Array.from(document.images).map(i => i.complete ? null :
      new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r); })));
  const maths = Array.from(document.querySelectorAll('.math'));
  if (maths.length && window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const article = document.querySelector('article') || document.querySelector('main') || document.body;
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container, .highlight, textarea, .fb-frames')
       .forEach(e => e.remove());
  return {
    title: document.title,
    h1: (document.querySelector('article h1, main h1, h1') || {textContent: ''}).textContent
          .replace(/[#\u00b6]/g, '').trim(),
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
    images: Array.from(document.images).map(i => ({src: i.currentSrc || i.src, w: i.naturalWidth,
          complete: i.complete, alt: i.alt})),
    math: maths.length,
    mathTypeset: maths.filter(m => m.querySelector('mjx-container')).length,
    mathErrors: Array.from(document.querySelectorAll('mjx-merror')).map(e => e.textContent),
    wideMath: Array.from(document.querySelectorAll('mjx-container[display="true"]'))
          .filter(m => m.scrollWidth > m.clientWidth + 2)
          .map(m => (m.closest('[id]') || {id: '?'}).id + ': ' + m.scrollWidth + ' px in ' + m.clientWidth),
    mathjaxLoaded: !!(window.MathJax && MathJax.version),
    mathjaxVersion: window.MathJax && MathJax.version,
    mathjaxScripts: Array.from(document.scripts).map(s => s.src).filter(s => /mathjax/i.test(s)),
    proseText: clone.textContent,
    bodyText: document.body.innerText,
    ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id)
          .concat(Array.from(document.querySelectorAll('a[name]')).map(e => e.name)),
    explorers: document.querySelectorAll('.fb-explorer').length,
    badTables: Array.from(document.querySelectorAll('table.fb-table')).filter(t => {
          const cell = t.querySelector('td, th');
          const wrap = t.closest('.fb-table-wrap');
          return !cell || parseFloat(getComputedStyle(cell).paddingLeft) < 2 || !wrap
                 || getComputedStyle(wrap).overflowX !== 'auto';
        }).map(t => (t.querySelector('th') || {textContent: '?'}).textContent),
    deadControls: Array.from(document.querySelectorAll('article input[type=range], article select'))
          .filter(e => !e.closest('.fb-explorer')).length,
    widgetNodes: document.querySelectorAll('.jupyter-widgets, .widget-area, [class*="jp-OutputArea"] .widget')
          .length,
  };
}
"""


def _fail(message: str):
    import pytest

    pytest.fail(message)


#: The axe-core release the accessibility checks run: pinned, so that a new release (new rules, changed
#: heuristics) cannot turn a run red without a change here; ``axe_source`` installs it where another is found.
AXE_VERSION = "4.14.1"


def _installed_axe_version() -> str | None:
    package = AXE.parent / "package.json"
    if not (AXE.exists() and package.exists()):
        return None
    import json

    return json.loads(package.read_text(encoding="utf-8")).get("version")


def axe_source() -> str:
    """axe-core's script, release :data:`AXE_VERSION` (``npm install axe-core@AXE_VERSION`` into ``node_modules/``
    first where it is missing or another release is there)."""
    if _installed_axe_version() != AXE_VERSION:
        npm = shutil.which("npm")
        if npm is None:
            _fail("axe-core is missing and npm is not installed (apt-get install npm)")
        subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(ROOT),
                        f"axe-core@{AXE_VERSION}"], check=True, capture_output=True, timeout=300)
        if _installed_axe_version() != AXE_VERSION:
            _fail(f"npm did not install axe-core {AXE_VERSION} into {AXE.parent}")
    return AXE.read_text(encoding="utf-8")


#: CSS that ends every transition at once: a theme switched on a loaded page must be measured in its final
#: colours, not half-way through the theme's colour transitions (axe once read #3e4550, a blend, in dark mode).
NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; animation: none !important; }"


def set_theme(page, theme: str):
    """The theme's switch on a loaded page (``data-theme``/``data-mode`` on <html>), transitions off, then a pause
    for it to apply."""
    page.add_style_tag(content=NO_TRANSITIONS)
    page.evaluate(f"document.documentElement.setAttribute('data-theme', '{theme}');"
                  f"document.documentElement.setAttribute('data-mode', '{theme}')")
    page.wait_for_timeout(150)
    assert page.evaluate("document.documentElement.dataset.theme") == theme


#: The axe rules of WCAG 2 A/AA whose outcome depends on the colours drawn (the rest read the DOM, the same in
#: both themes): run in the dark theme after the whole set ran in the light one.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
_AXE_JS = """async (which) => {
    const only = which.only ? {type: 'rule', values: which.only} : {type: 'tag', values: ['wcag2a', 'wcag2aa']};
    const options = {runOnly: only, resultTypes: ['violations']};
    if (which.except) { options.rules = Object.fromEntries(which.except.map(id => [id, {enabled: false}])); }
    const r = await axe.run(document, options);
    return r.violations.map(v => ({id: v.id, impact: v.impact, n: v.nodes.length,
                                   where: v.nodes.slice(0, 3).map(x => x.target.join(' ') + ' ' +
                                          (x.failureSummary || '').split('\\n').slice(1, 2).join(''))}));
}"""


def run_axe(page, source: str, colours: bool = True) -> dict:
    """axe-core on the loaded ``page``. With ``colours``: every WCAG 2.0 A/AA rule in the light theme, then the
    rules that read colours (:data:`COLOUR_RULES`) in the dark one (the theme's own switch, transitions off).
    Without: every WCAG 2.0 A/AA rule but the colour rules, in the light theme only: the rules that read the
    page's own elements (names, labels, roles, structure), a sixth of a full pass on the largest API page.

    The dark pass reads colours only: sound while no element is shown in one theme alone, which is asserted
    (``.only-dark``, ``.only-light``). Returns ``{"light": [...], "dark": [...] or None}``, each violation as
    ``{id, impact, n, where}``."""
    page.add_script_tag(content=source)
    assert page.evaluate("axe.version") == AXE_VERSION, f"{page.url}: axe-core {page.evaluate('axe.version')} ran"
    assert not page.locator(".only-dark, .only-light").count(), f"{page.url}: theme-only elements; run every rule in dark"
    if not colours:
        return {"light": page.evaluate(_AXE_JS, {"except": COLOUR_RULES}), "dark": None}
    found = {}
    for theme in ("light", "dark"):
        set_theme(page, theme)
        found[theme] = page.evaluate(_AXE_JS, {"only": COLOUR_RULES} if theme == "dark" else {})
    return found
