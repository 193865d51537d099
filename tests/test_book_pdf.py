"""``tools/book_pdf.py`` without a browser: where each chapter starts, the cover's contents, the editions' paths.

The printed PDF itself (every page numbered, the cover listing the pages) is read back in
``tests/browser/test_print.py``, which prints a few pages of the built book with Chromium.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "tools" / "book_pdf.py")
book_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(book_pdf)


def test_chapter_starts_follow_the_cover_and_the_chapters():
    assert book_pdf.chapter_starts([3, 2, 1], cover_pages=1) == [2, 5, 7]
    assert book_pdf.chapter_starts([3, 2, 1], cover_pages=2) == [3, 6, 8]
    assert book_pdf.chapter_starts([], cover_pages=1) == []
    with pytest.raises(ValueError, match="at least one page"):
        book_pdf.chapter_starts([3, 0], cover_pages=1)
    with pytest.raises(ValueError, match="at least one page"):
        book_pdf.chapter_starts([3], cover_pages=0)


def test_cover_lists_each_chapter_with_its_page_and_each_part():
    html = book_pdf._cover_html(["1. One", "2. Two & more"], "9.9.9", [2, 7], ["Part A", None], title="T (x)")
    assert "<h1>T (x)</h1>" in html and "Version 9.9.9" in html
    assert "<span class='t'>1. One</span><span class='dots'></span><span class='n'>2</span>" in html
    assert "<span class='t'>2. Two &amp; more</span><span class='dots'></span><span class='n'>7</span>" in html
    assert html.count("class='part'") == 1 and html.index("Part A") < html.index("1. One")


def test_footers_one_page_per_page_numbers_only_after_the_cover():
    labels = [None, f"1. One{book_pdf.FOOTER_SEPARATOR}2", f"1. One{book_pdf.FOOTER_SEPARATOR}3"]
    html = book_pdf._footers_html(labels)
    assert html.count("<div class='pg'>") == 3 and html.count("class='ft'") == 2
    assert "<span class='n'>2</span>" in html and "<span class='n'>3</span>" in html


def test_parts_name_the_first_page_of_each_captioned_part_and_sections_are_indented():
    heads = book_pdf.parts(ROOT / "_toc.yml")
    assert heads["book/01_bottlenecks"] == "Kernels that move too much"
    assert heads["book/labs/index"] == "Labs"
    assert set(heads) <= set(book_pdf.pages(ROOT / "_toc.yml"))
    levels = book_pdf.depths(ROOT / "_toc.yml")
    assert set(levels) == set(book_pdf.pages(ROOT / "_toc.yml"))
    assert levels["book/intro"] == levels["book/labs/index"] == levels["book/12_exercises"] == 0
    assert levels["book/labs/lab1_online_softmax"] == levels["book/api/chip"] == 1
    html = book_pdf._cover_html(["Labs", "Lab 1"], "1.0.0", [2, 4], levels=[0, 1])
    assert "<li><span class='t'>Labs" in html and "<li style='padding-left:1.2em'><span class='t'>Lab 1" in html


def test_editions_and_relative_paths(tmp_path, monkeypatch, capsys):
    """Each edition prints its own HTML in its own order to its own file; a relative --toc is read from the
    current directory, and a missing one is a clear error, not a traceback."""
    full, student = book_pdf.EDITIONS["full"], book_pdf.EDITIONS["student"]
    assert full["out"] != student["out"] and full["html"] != student["html"]
    assert "student edition" in student["title"] and "student" not in full["title"]
    monkeypatch.chdir(tmp_path)
    assert book_pdf.main(["--edition", "student", "--toc", "nowhere/_toc.yml"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "nowhere" / "_toc.yml") in err and "make student" in err
