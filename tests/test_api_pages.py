"""The API reference is several generated pages (``book/api/``): every public module on exactly one of them.

Each page's ``{labcore-api}`` directive names its modules (``:modules:``, dotted prefixes); a module no page
selects would vanish from the reference, one that two pages select would be described twice (and its
``py:module`` target declared twice).
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from flashbook.sections import toc_pages

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from flashbook_api import _public_modules, api_entries, covers, factory_defaults, page_modules, select  # noqa: E402


def test_every_public_module_is_on_exactly_one_api_page():
    pages = page_modules()
    assert len(pages) >= 5, f"the reference should be split into pages by group of modules, got {sorted(pages)}"
    where = {name: [page for page, prefixes in pages.items() if any(covers(p, name) for p in prefixes)]
             for name, _mod in _public_modules()}
    lost = sorted(name for name, found in where.items() if not found)
    twice = {name: found for name, found in where.items() if len(found) > 1}
    assert not lost, f"public modules on no API page (add them to a :modules: option in book/api/): {lost}"
    assert not twice, f"public modules on more than one API page: {twice}"
    assert where["labcore.chip.tile"] == ["book/api/chip"]       # a prefix covers the package's submodules


def test_every_documented_name_is_on_exactly_one_page_and_every_page_is_in_the_book():
    pages = page_modules()
    shown = Counter(doc for prefixes in pages.values() for _m, _mod, rows in select(prefixes)
                    for doc, *_ in rows)
    everything = Counter(doc for _m, _mod, rows in api_entries() for doc, *_ in rows)
    assert shown == everything and set(everything.values()) == {1}
    assert "labcore.reference_attention" in shown and "flashbook.display.show" in shown
    toc = toc_pages(ROOT / "_toc.yml")
    assert set(pages) <= set(toc) and "book/api/index" in toc and "book/api" not in toc


def test_prefixes_select_whole_module_names():
    assert covers("labcore.chip", "labcore.chip.tile") and covers("labcore.decode", "labcore.decode")
    assert not covers("labcore.decode", "labcore.decode_time") and not covers("labcore.chip.tile", "labcore.chip")
    names = [name for name, _mod, _rows in select(["labcore.flash", "labcore.chip", "labcore.flash"])]
    assert names[0] == "labcore.flash" and names.count("labcore.flash") == 1        # the prefixes' order, once each
    assert set(names[1:]) == {n for n, _m in _public_modules() if n.startswith("labcore.chip")}


@pytest.mark.parametrize("bad, exc", [("labcore.flash", TypeError), ([], ValueError),
                                      (["labcore.no_such_module"], ValueError), (["labcore.fla"], ValueError)])
def test_select_bad_input(bad, exc):
    with pytest.raises(exc):
        select(bad)


def test_a_dataclass_signature_shows_what_its_factories_give():
    """``field(default_factory=...)`` shows as the value a new instance gets, not as ``<factory>``."""
    import collections
    import dataclasses

    def weights():
        return {k: 0.5 for k in "abcdefgh"}

    @dataclasses.dataclass
    class Part:
        name: str
        parts: dict[str, float] = dataclasses.field(default_factory=dict)
        order: list = dataclasses.field(default_factory=list)
        queue: collections.deque = dataclasses.field(default_factory=collections.deque)
        weight: dict = dataclasses.field(default_factory=weights)

    sig = "(name: str, parts: dict[str, float] = <factory>, order: list = <factory>, queue: deque = <factory>, weight: dict = <factory>)"
    assert factory_defaults(sig, Part) == ("(name: str, parts: dict[str, float] = {}, order: list = [], "
                                           "queue: deque = deque([]), weight: dict = weights())")   # too long: the call
    assert factory_defaults("(x=<factory>)", object) == "(x=<factory>)"     # not a dataclass: as it was
    assert factory_defaults(None, Part) is None
