"""One vocabulary of units (issue 13): the symbols of ``labcore.units`` in prose, tables, axis and slider labels.

KB/MB/GB/TB are decimal, KiB/MiB/GiB binary (book/intro.md states it once). A power-of-two hardware size
(SRAM, shared memory, a page) is written in KiB; "kB", "Kb" or "KB" beside such a size is an error.
"""
import json
import re
from pathlib import Path

import pytest

from labcore.plots import all_explorers
from labcore.units import BINARY, DECIMAL

ROOT = Path(__file__).resolve().parents[1]
SYMBOLS = {sym for _, sym in DECIMAL + BINARY}
#: a byte unit as text: a prefix letter (any case), optional "i", then B (not "KBps", not "B200")
BYTE_UNIT = re.compile(r"(?<![\w])([kKmMgGtT]i?[bB])(?![\w])")
#: SRAM / shared-memory sizes that are powers of two in hardware (a quotation of a source, "100 KB", is exempt)
POW2_KB = re.compile(r"(?<![\"“])\b(16|24|32|48|64|100|128|164|192|228|256)\s*KB\b")
EXERCISE_MISTAKES = re.compile(r"MB instead of MiB|KB instead of KiB")   # the grader names the wrong unit


def _markdown_sources():
    for p in sorted((ROOT / "book").glob("*.ipynb")):
        nb = json.loads(p.read_text(encoding="utf-8"))
        yield p.name, "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for p in sorted((ROOT / "book").glob("*.md")):
        yield p.name, p.read_text(encoding="utf-8")


def _bad_units(text):
    text = EXERCISE_MISTAKES.sub(" ", text)
    return [m.group(1) for m in BYTE_UNIT.finditer(text) if m.group(1) not in SYMBOLS] + POW2_KB.findall(text)


@pytest.mark.parametrize("name,text", list(_markdown_sources()), ids=lambda x: x if x.endswith(("ipynb", "md")) else "")
def test_prose_uses_the_helpers_symbols(name, text):
    assert _bad_units(text) == [], name


def test_table_headers_in_code_cells_use_the_helpers_symbols():
    """Strings and comments in the notebooks' code cells (table headers, printed output, what the page shows)."""
    for p in sorted((ROOT / "book").glob("*.ipynb")):
        nb = json.loads(p.read_text(encoding="utf-8"))
        for c in nb["cells"]:
            if c["cell_type"] == "code":
                strings = re.findall(r"\"[^\"\n]*\"|'[^'\n]*'|#[^\n]*", "".join(c["source"]))
                assert _bad_units(" ".join(strings)) == [], (p.name, strings)


EXPLORERS = all_explorers()


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_slider_and_axis_labels_use_the_helpers_symbols(name):
    ex = EXPLORERS[name]
    for s in ex.sliders:
        assert _bad_units(s.text) == [], (name, s.text)
        if re.search(r"SRAM|smem|shared", s.text, re.I) and BYTE_UNIT.search(s.text):
            assert "KiB" in s.text or "MiB" in s.text, (name, s.text)
    params = {**ex.fixed, **{s.name: s.default for s in ex.sliders}}
    fig = ex.draw(ex.compute(**params), **params)
    texts = [t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel(), ax.get_title())]
    texts += [t.get_text() for t in fig.texts] + ([fig._suptitle.get_text()] if fig._suptitle else [])
    for t in texts:
        assert _bad_units(t) == [], (name, t)
        if re.search(r"SRAM|smem|shared", t, re.I) and re.search(r"\bKB\b", t):
            raise AssertionError(f"{name}: SRAM size in decimal KB: {t!r}")


def test_the_check_catches_a_decimal_sram_size():
    assert _bad_units("the paper's 100 KB of SRAM") == ["100"]
    assert _bad_units("a 64 kB page") == ["kB"]
    assert _bad_units("100 KiB of SRAM, 40 GB of HBM, 3.35 TB/s") == []
