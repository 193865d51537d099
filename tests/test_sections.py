"""flashbook.sections: every public name links back to the book page that explains it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import flashbook.sections
from flashbook.sections import MODULE_PAGES, SECTIONS, section_for, toc_pages

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from flashbook_api import _public_modules, api_entries  # noqa: E402  (what the API page documents)


def _toc_files() -> set[str]:
    return set(toc_pages(ROOT / "_toc.yml"))


def test_every_public_name_resolves_to_a_page_in_the_book():
    documented = {key for _mod, _m, rows in api_entries() for _doc, key, _c, _o, _k in rows}
    pages = {key: section_for(key) for key in documented}
    toc = _toc_files()
    missing = sorted(p for p in set(pages.values()) if p is not None and p not in toc)
    assert not missing, f"section_for points at pages missing from _toc.yml: {missing}"
    # every algorithm/model name is explained somewhere (only plumbing may map to None)
    plumbing = ("sections.SECTIONS", "sections.MODULE_PAGES", "sections.section_for", "sections.toc_pages")
    unexplained = sorted(k for k, p in pages.items()
                         if p is None and not (k.split(".")[0] in ("display", "explorer", "live", "player", "prefetch", "drawing", "mode", "figures") or k in plumbing))
    assert not unexplained, f"public names no section explains: {unexplained}"


def test_every_override_is_a_public_name():
    documented = {key for _mod, _m, rows in api_entries() for _doc, key, _c, _o, _k in rows}
    stale = sorted(set(SECTIONS) - documented)
    assert not stale, f"SECTIONS names that are not public labcore names (renamed or removed?): {stale}"


def test_every_page_is_in_the_book():
    pages = {p for p in list(SECTIONS.values()) + list(MODULE_PAGES.values()) if p is not None}
    missing = sorted(pages - _toc_files())
    assert not missing, f"SECTIONS points at pages missing from _toc.yml: {missing}"


def test_section_for():
    assert section_for("reference_attention") == "book/02_io_awareness"
    assert section_for("labcore.flash_attention_backward") == "book/05_flash_backward"
    assert section_for("figures.decode.splits_figure") == "book/06_flash_decoding"
    assert section_for("display.show") is None
    assert flashbook.sections.section_for is section_for and flashbook.sections.SECTIONS is SECTIONS


@pytest.mark.parametrize("bad, exc", [(3, TypeError), (None, TypeError), ("no_such_function", ValueError),
                                      ("labcore.", ValueError)])
def test_section_for_bad_input(bad, exc):
    with pytest.raises(exc):
        section_for(bad)


def test_every_public_module_declares_all():
    """The API page documents a module's ``__all__``; a module without one would silently vanish from it."""
    missing = [name for name, mod in _public_modules() if not hasattr(mod, "__all__")]
    assert not missing, f"public labcore modules without __all__: {missing}"
