"""labcore.SECTIONS: every public name links back to the book page that explains it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

import labcore
from labcore.sections import SECTIONS, section_for

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from flashbook_api import _public_modules, api_entries  # noqa: E402  (what the API page documents)


def _toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = {toc["root"]}

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.add(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)

    walk(toc)
    return found


def test_every_public_name_has_an_entry():
    documented = {key for _mod, _m, rows in api_entries() for _doc, key, _c, _o, _k in rows}
    missing = sorted(documented - set(SECTIONS))
    assert not missing, f"public names without a line in labcore/sections.py SECTIONS: {missing}"


def test_every_entry_is_a_public_name():
    documented = {key for _mod, _m, rows in api_entries() for _doc, key, _c, _o, _k in rows}
    stale = sorted(set(SECTIONS) - documented)
    assert not stale, f"SECTIONS names that are not public labcore names (renamed or removed?): {stale}"


def test_every_page_is_in_the_book():
    pages = {p for p in SECTIONS.values() if p is not None}
    missing = sorted(pages - _toc_files())
    assert not missing, f"SECTIONS points at pages missing from _toc.yml: {missing}"


def test_section_for():
    assert section_for("reference_attention") == SECTIONS["reference_attention"]
    assert section_for("labcore.reference_attention") == SECTIONS["reference_attention"]
    assert labcore.section_for is section_for and labcore.SECTIONS is SECTIONS


@pytest.mark.parametrize("bad, exc", [(3, TypeError), (None, TypeError), ("no_such_function", ValueError),
                                      ("labcore.", ValueError)])
def test_section_for_bad_input(bad, exc):
    with pytest.raises(exc):
        section_for(bad)


def test_every_public_module_declares_all():
    """The API page documents a module's ``__all__``; a module without one would silently vanish from it."""
    missing = [name for name, mod in _public_modules() if not hasattr(mod, "__all__")]
    assert not missing, f"public labcore modules without __all__: {missing}"
