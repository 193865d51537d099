"""One vocabulary of units: the symbols of ``labcore.units`` in prose, tables, axis and slider labels.

KB/MB/GB/TB are decimal, KiB/MiB/GiB binary (book/intro.md states it once). A power-of-two hardware size
(SRAM, shared memory, a page) is written in KiB; "kB", "Kb" or "KB" beside such a size is an error.
Times are s, ms, µs (the micro sign), ns; compute is FLOP, TFLOP/s, FLOP/byte: "us", "TFLOPS", "FLOP/B" are errors.

Labels name their unit through the helper: an axis label, a slider label, a figure's text or a table
header in ``labcore/`` or in a notebook's code cell writes no unit symbol by hand (``"time (µs)"``); it
calls ``labcore.units.unit_label("time", "µs")`` or a ``fmt_*`` helper, which accept only
``labcore.units.SYMBOLS``.
"""
import ast
import json
import re
from pathlib import Path

import pytest
from book_pages import markdown_pages

import labcore.units as units
from flashbook.explorer import all_explorers
from labcore.units import BINARY, DECIMAL

ROOT = Path(__file__).resolve().parents[1]
SYMBOLS = {sym for _, sym in DECIMAL + BINARY}
#: a byte unit as text: a prefix letter (any case), optional "i", then B (not "KBps", not "B200")
BYTE_UNIT = re.compile(r"(?<![\w])([kKmMgGtT]i?[bB])(?![\w])")
#: SRAM / shared-memory sizes that are powers of two in hardware (a quotation of a source, "100 KB", is exempt)
POW2_KB = re.compile(r"(?<![\"“])\b(16|24|32|48|64|100|128|164|192|228|256)\s*KB\b")
EXERCISE_MISTAKES = re.compile(r"MB instead of MiB|KB instead of KiB")   # the grader names the wrong unit
#: time and compute symbols the helpers never write (a number or a format field before "us", "sec", ...)
WRONG_SYMBOL = re.compile(r"(?<=[\d}])\s?(?:us|μs|usecs?|msecs?|secs?)\b|\b[kKMGTP]?FLOPS\b|\b[kKMGTP]FLOPs\b"
                          r"|\bFLOP/B\b|\b[kKMGTP]?Flops?\b")
#: a unit symbol in a label's text (bytes, rates, times, FLOP counts and rates, intensity)
UNIT_IN_TEXT = re.compile(r"(?<![\w/])(?:[kKMGTP]i?B(?:/s)?|[kKMGTP]?FLOP(?:/s|/B|/byte)?|[mµμun]s)(?![\w/])")



def _bad_units(text):
    text = EXERCISE_MISTAKES.sub(" ", text)
    return ([m.group(1) for m in BYTE_UNIT.finditer(text) if m.group(1) not in SYMBOLS] + POW2_KB.findall(text)
            + [m.group().strip() for m in WRONG_SYMBOL.finditer(text)])


@pytest.mark.parametrize("name,text", list(markdown_pages()), ids=lambda x: x if x.endswith(("ipynb", "md")) else "")
def test_prose_uses_the_helpers_symbols(name, text):
    assert _bad_units(text) == [], name


def _code_cell_strings():
    for p in sorted((ROOT / "book").glob("*.ipynb")):
        nb = json.loads(p.read_text(encoding="utf-8"))
        for c in nb["cells"]:
            if c["cell_type"] == "code":
                yield p.name, re.findall(r"\"[^\"\n]*\"|'[^'\n]*'|#[^\n]*", "".join(c["source"]))


def test_table_headers_in_code_cells_use_the_helpers_symbols():
    """Strings and comments in the notebooks' code cells (table headers, printed output, what the page shows)."""
    for name, strings in _code_cell_strings():
        assert _bad_units(" ".join(strings)) == [], (name, strings)


#: a header or label that types its unit in parentheses: "ideal (µs)", "HBM (TB/s)", "(MB, FP16)"
UNIT_IN_PARENS = re.compile(r"\((?:[^()]*\W)?" + UNIT_IN_TEXT.pattern + r"(?:\W[^()]*)?\)")


def test_table_headers_in_code_cells_name_their_unit_through_unit_label():
    """A header such as "ideal (µs)" fails; ``lc.unit_label("ideal", "µs")`` and an f-string's
    ``{lc.fmt_seconds(t, unit='µs')}`` pass (a quoted symbol inside the string is a helper's argument)."""
    def text(s):  # the literal without its quotes and without the strings quoted inside it
        return re.sub(r"([\"'])[^\"']*\1", "", s[1:-1])

    typed = [(name, s) for name, strings in _code_cell_strings() for s in strings
             if not s.startswith("#") and UNIT_IN_PARENS.search(text(s))]
    assert typed == []


#: calls that put text on a figure or a control: their string arguments are labels
LABEL_CALLS = {"set_xlabel", "set_ylabel", "set_title", "suptitle", "text", "annotate", "Slider", "Table",
               "plot", "loglog", "semilogx", "semilogy", "bar", "barh", "step", "scatter", "axhline", "axvline",
               "fill_between", "Patch", "legend"}


def _label_texts(node):
    """String pieces of a label argument, skipping calls of the labcore.units helpers (their unit is checked)."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in units.__all__:
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    for child in ast.iter_child_nodes(node):
        yield from _label_texts(child)


def _typed_units_in_labels(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in LABEL_CALLS:
            for arg in list(node.args) + [k.value for k in node.keywords]:
                out += [f"line {node.lineno}: {t!r}" for t in _label_texts(arg) if UNIT_IN_TEXT.search(t)]
    return out


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix() for pkg in ("labcore", "flashbook") for p in (ROOT / pkg).rglob("*.py")
                                        if p.name != "units.py"))
def test_labels_in_labcore_name_their_unit_through_the_helpers(path):
    """Axis labels, titles, figure texts, legend entries and slider labels: no unit symbol typed by hand."""
    assert _typed_units_in_labels((ROOT / path).read_text(encoding="utf-8")) == []


def test_unit_label_accepts_only_the_vocabulary():
    assert units.unit_label("model time", "µs") == "model time (µs)"
    assert units.unit_label("SRAM M", "KiB", "of FP16") == "SRAM M (KiB of FP16)"
    assert units.unit_label("", "TFLOP/s") == "TFLOP/s"
    for bad in ("us", "μs", "TFLOPS", "FLOP/B", "kB"):
        with pytest.raises(ValueError, match="unit must be one of"):
            units.unit_label("time", bad)
    with pytest.raises(TypeError):
        units.unit_label("time", None)
    assert units.fmt_intensity(201.2) == "201 FLOP/byte"


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
