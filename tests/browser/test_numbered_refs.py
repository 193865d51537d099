"""Numbered things in the built book: every theorem and proposition shows its number, every reference to one shows
more than a bare "Theorem", and every equation reference to another page names that page where it points.

Equations are numbered per page ((1), (2), ... on each), so "(1)" alone on one page cannot say that it means §6's
equation (1): a reference that leaves its page must name the page it goes to (``§6's merge, Eq. (1)``), and the
link must resolve to that page's equation.

These tests read ``_build/html`` from disk (no browser); like the rest of this suite they need a fresh build.
"""
from __future__ import annotations

import html
import re

import pytest

from bookbrowser import HTML, PAGES

_ROOT = HTML.parents[1]
_EQ_ROLE = re.compile(r"\{eq\}`([\w-]+)`")
_EQ_LABEL = re.compile(r"\\label\{([\w-]+)\}|^:label:\s*([\w-]+)|^\(([\w-]+)\)=|\$\$\s*\(([\w-]+)\)", re.M)


def source_cross_page_eq_refs() -> int:
    """How many ``{eq}`` roles in the book's sources name an equation labelled on another page (read from the
    notebooks' Markdown and the ``.md`` pages): as many links to another page's equation must be in the HTML."""
    import json

    texts = {}
    for doc in PAGES:
        path = next((p for p in (_ROOT / f"{doc}.ipynb", _ROOT / f"{doc}.md") if p.exists()), None)
        if path is None:
            continue
        raw = path.read_text(encoding="utf-8")
        texts[doc] = raw if path.suffix == ".md" else "\n".join(
            "".join(c["source"]) for c in json.loads(raw)["cells"] if c["cell_type"] == "markdown")
    home = {next(g for g in m.groups() if g): doc for doc, t in texts.items() for m in _EQ_LABEL.finditer(t)}
    return sum(1 for doc, t in texts.items() for label in _EQ_ROLE.findall(t) if home.get(label, doc) != doc)

#: A typed proof directive of sphinx-proof and its title (the untyped ``proof admonition`` is a proof's body).
_PROOF = re.compile(r'<div class="proof (\w+) admonition" id="([^"]+)">\s*<p class="admonition-title">(.*?)</p>', re.S)
_NUMBER = re.compile(r'<span class="caption-number">(\w+) (\d+) </span>')
_LINK = re.compile(r'<a class="reference internal" href="([^"#]*)#([^"]+)"[^>]*>(.*?)</a>', re.S)
_TAG = re.compile(r"<[^>]+>")
_BARE = re.compile(r"^\s*(Theorem|Proposition|Lemma|Corollary|Definition|Conjecture)?\s*$", re.I)


def _built() -> dict[str, str]:
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} has no index.html: build the book first (make book-strict)")
    return {doc: (HTML / f"{doc}.html").read_text(encoding="utf-8") for doc in PAGES
            if (HTML / f"{doc}.html").exists()}


def _text(fragment: str) -> str:
    return html.unescape(_TAG.sub("", fragment))


def section_mark(doc: str) -> str | None:
    """How the prose names a numbered page: ``book/06_flash_decoding`` -> ``"§6"``, ``book/04b_what_limits`` ->
    ``"§4b"``; None for a page without a section number."""
    m = re.match(r"(?:.*/)?0*(\d+[a-z]?)_", doc)
    return f"§{m.group(1)}" if m else None


def theorem_titles(page_html: str) -> list[tuple[str, str, str]]:
    """``(kind, id, title text)`` of every theorem, proposition, lemma ... of a built page."""
    return [(kind, ident, title) for kind, ident, title in _PROOF.findall(page_html)]


def cross_page_equation_refs(doc: str, page_html: str) -> list[tuple[str, str, str]]:
    """``(target page, equation id, the text before the link)`` for every link from ``doc`` to an equation of
    another page (``href="other.html#equation-..."``)."""
    out = []
    for m in _LINK.finditer(page_html):
        href, frag = m.group(1), m.group(2)
        if href and frag.startswith("equation-"):
            target = (doc.rsplit("/", 1)[0] + "/" + href[:-len(".html")]) if "/" in doc else href[:-len(".html")]
            before = _text(page_html[max(0, m.start() - 600):m.start()])[-120:]
            out.append((target, frag, before))
    return out


def test_every_theorem_and_proposition_shows_its_number():
    found = 0
    for doc, page in _built().items():
        for kind, ident, title in theorem_titles(page):
            found += 1
            number = _NUMBER.search(title)
            assert number and number.group(1).lower() == kind.lower(), (
                f"{doc}: {kind} {ident!r} renders without its number: {_text(title)!r}")
    assert found >= 3                                  # §4's theorem and proposition, §6's theorem


def test_references_to_a_theorem_show_more_than_its_kind():
    ids = {ident for page in _built().values() for _k, ident, _t in theorem_titles(page)}
    seen = 0
    for doc, page in _built().items():
        for m in _LINK.finditer(page):
            if m.group(2) in ids:
                seen += 1
                assert not _BARE.match(_text(m.group(3))), f"{doc}: a reference to {m.group(2)} reads {_text(m.group(3))!r}"
    assert seen >= 1                                   # 6b cites §6's theorem


def test_cross_page_equation_references_name_and_reach_their_page():
    pages = _built()
    refs = [(doc, *r) for doc, page in pages.items() for r in cross_page_equation_refs(doc, page)]
    # as many links to another page's equation as the sources have {eq} roles to one (none is allowed: a live
    # notebook shows such a role as its bare label, so the pages name a section instead)
    assert len(refs) == source_cross_page_eq_refs(), [r[:2] for r in refs]
    for doc, target, frag, before in refs:
        assert target in pages and f'id="{frag}"' in pages[target], f"{doc}: #{frag} is not on {target}"
        mark = section_mark(target)
        assert mark and mark in before, (
            f"{doc}: an equation reference to {target} does not name its page ({mark}) just before it: ...{before}")


@pytest.mark.parametrize("doc,mark", [("book/06_flash_decoding", "§6"), ("book/04b_what_limits", "§4b"),
                                      ("book/intro", None)])
def test_section_mark(doc, mark):
    assert section_mark(doc) == mark


def test_the_checks_catch_a_blank_number_and_an_unnamed_page():
    blank = ('<div class="proof theorem admonition" id="t">\n<p class="admonition-title">'
             '<span class="caption-number">Theorem  </span> (x)</p>')
    assert theorem_titles(blank) and not _NUMBER.search(theorem_titles(blank)[0][2])
    page = 'None of this changes the merge of <a class="reference internal" href="06_flash_decoding.html#equation-e">(1)</a>'
    (target, frag, before), = cross_page_equation_refs("book/06b_scheduling_decode", page)
    assert target == "book/06_flash_decoding" and section_mark(target) not in before
    assert _BARE.match("Theorem ") and not _BARE.match("§6's theorem")
