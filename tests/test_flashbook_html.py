"""book/_ext/flashbook_html.py's post-build fixes on small HTML strings (the built pages: tests/browser/test_pages.py)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from flashbook_html import fix_pages, unique_content_ids  # noqa: E402

PAGE = ('<a href="#solution-content">one</a><section id="solution-content">1</section>'
        '<section id="exercise-content">e1</section><section id="exercise-content">e2</section>'
        '<button aria-controls="solution-content">two</button><section id="solution-content">2</section>'
        '<p id="solution-content-2">taken</p><section id="solution-content">3</section>'
        '<a href="#solution-content">after the last</a>')


def test_repeated_content_ids_become_unique_in_document_order():
    out = unique_content_ids(PAGE)
    ids = re.findall(r'\bid="([^"]+)"', out)
    assert ids == ["solution-content", "exercise-content", "exercise-content-2", "solution-content-3",
                   "solution-content-2", "solution-content-4"]
    # a reference names the next element with its id (a control comes before what it opens), else the last one
    assert re.findall(r'(?:href="#|aria-controls=")([^"]+)"', out) == [
        "solution-content", "solution-content-3", "solution-content-4"]
    assert unique_content_ids(out) == out


def test_a_page_with_unique_ids_is_unchanged():
    page = '<section id="solution-content">only</section><a href="#solution-content">it</a>'
    assert unique_content_ids(page) == page


def test_fix_pages_rewrites_each_page_once(tmp_path):
    (tmp_path / "a.html").write_text(PAGE, encoding="utf-8")
    fix_pages(tmp_path)
    once = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert once.count('id="solution-content"') == 1 and 'id="solution-content-4"' in once
    fix_pages(tmp_path)
    assert (tmp_path / "a.html").read_text(encoding="utf-8") == once
