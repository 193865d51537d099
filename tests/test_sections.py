"""flashbook.sections: every public name links back to the book page that explains it, derived from the pages."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import flashbook.sections
from flashbook.sections import PLUMBING, _code_uses, page_uses, section_for, toc_pages

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from flashbook_api import _public_modules, api_entries  # noqa: E402  (what the API page documents)


def _toc_files() -> set[str]:
    return set(toc_pages(ROOT / "_toc.yml"))


@pytest.mark.slow
def test_every_public_name_resolves_to_a_page_in_the_book():
    documented = {key for _mod, _m, rows in api_entries() for _doc, key, _c, _o, _k in rows}
    pages = {key: section_for(key) for key in documented}
    toc = _toc_files()
    missing = sorted(p for p in set(pages.values()) if p is not None and p not in toc)
    assert not missing, f"section_for points at pages missing from _toc.yml: {missing}"
    # every algorithm/model name is explained somewhere (only presentation plumbing may map to None)
    unexplained = sorted(k for k, p in pages.items() if p is None and k.rpartition(".")[0].split(".")[0] not in PLUMBING)
    assert not unexplained, f"public names no section explains: {unexplained}"


def test_every_derived_page_is_in_the_book_and_scans_no_reference_page():
    pages = set(page_uses().values())
    assert pages and not pages - _toc_files() and not any(p.startswith("book/api/") for p in pages)
    assert "book/api/index" in _toc_files()              # the reference pages are in the book, just not scanned


def test_section_for():
    assert section_for("reference_attention") == "book/02_io_awareness"       # lc.reference_attention in §2
    assert section_for("labcore.flash_attention_backward") == "book/05_flash_backward"
    assert section_for("figures.decode.measured_table") == "book/06_flash_decoding"   # decode_plots.measured_table
    assert section_for("tile_roofline") == "book/04b_what_limits"             # first a {py:func} role in §4b
    assert section_for("pages.flash_decoding.numbers") == "book/06_flash_decoding"
    assert section_for("display.show") is None                                # plumbing
    assert flashbook.sections.section_for is section_for


def test_uses_follow_aliases_and_imports():
    aliases = {}
    src = ("import labcore as lc\nfrom labcore.published import published as pub\n"
           "from flashbook.figures import decode as dp\nlc.get_gpu('A100'); lc.published.published_keys()\n"
           "dp.measured_table(c); x.reference_attention()")
    assert _code_uses(src, aliases) == {"get_gpu", "published.published", "published.published_keys",
                                        "figures.decode.measured_table"}
    assert _code_uses("lc.Ledger()", aliases) == {"Ledger"}                    # aliases carry over between cells
    assert _code_uses("%timeit lc.Ledger()", {}) == set()                      # IPython syntax: nothing counted


@pytest.mark.parametrize("bad, exc", [(3, TypeError), (None, TypeError), ("no_such_function", ValueError),
                                      ("labcore.", ValueError), ("figures.decode.no_such", ValueError)])
def test_section_for_bad_input(bad, exc):
    with pytest.raises(exc):
        section_for(bad)


def test_every_public_module_declares_all():
    """The API page documents a module's ``__all__``; a module without one would silently vanish from it."""
    missing = [name for name, mod in _public_modules() if not hasattr(mod, "__all__")]
    assert not missing, f"public labcore modules without __all__: {missing}"
