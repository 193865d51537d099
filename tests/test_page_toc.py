"""Every heading of a page is listed in the page's table of contents (the right-hand side of the book).

The theme (pydata-sphinx-theme under sphinx-book-theme) lists headings down to ``show_toc_level`` levels
below the page title and hides deeper entries (CSS ``.bd-toc .nav .nav {display: none}``) until their
section is scrolled to; its default, 1, hid every ``###`` subsection ("Where the model misses" in §6,
"Why the model is optimistic" in §8). ``_config.yml`` sets the level; this test reads the configuration
Jupyter Book hands to Sphinx and the deepest heading of every page.
"""
from __future__ import annotations

import re
from pathlib import Path

from book_pages import markdown_pages
from jupyter_book.config import get_final_config

ROOT = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"^(#{1,6})\s+\S", re.M)
FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.M | re.S)


def _theme_options() -> dict:
    cfg, _ = get_final_config(user_yaml=ROOT / "_config.yml", sourcedir=ROOT,
                              cli_config={"latex_individualpages": False})
    return cfg["html_theme_options"]


def _deepest_heading(markdown: str) -> int:
    return max((len(m.group(1)) for m in HEADING.finditer(FENCE.sub("", markdown))), default=0)



def test_the_page_toc_lists_every_heading_level():
    opts = _theme_options()
    level = opts.get("show_toc_level", 1)            # the theme's default is 1
    deep = {name: d for name, text in markdown_pages() if (d := _deepest_heading(text)) - 1 > level}
    assert deep == {}, f"show_toc_level = {level} hides the headings of level {sorted(set(deep.values()))}"
    assert _deepest_heading(dict(markdown_pages())["06_flash_decoding.ipynb"]) == 3   # the case that was hidden


def test_the_theme_option_keeps_the_derived_options():
    """``recursive_update`` merges html_theme_options, so the launch and repository buttons stay."""
    opts = _theme_options()
    assert "launch_buttons" in opts and opts.get("repository_url") and opts.get("use_repository_button")


def test_deepest_heading_ignores_code_fences():
    assert _deepest_heading("# T\n\n## A\n\n```python\n#### a comment\n```\n### B\n") == 3
