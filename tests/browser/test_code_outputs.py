"""Code that reads: what a code cell prints in the built book is labelled and rounded.

A reader cannot tell what ``(64, 200, 21)`` or ``{64: 0.508, 128: 0.516}`` is, nor read
``1.2569317824925514``. So no plain-text code output of a page (a cell's result or what it prints) is a bare
tuple, list, dict or set repr, and no code output (plain text or a table cell) shows a float with more than
:data:`MAX_SIGNIFICANT` significant digits. A page says what a value is with a :class:`flashbook.display.Table`
or a labelled line (``print(f"largest |O - O_ref| over the grid: {worst:.1e}")``), its units from
:mod:`labcore.units`.

These tests read ``_build/html`` from disk (no browser); like the rest of this suite they need a fresh build.
"""
from __future__ import annotations

import ast
import html
import io
import re
import tokenize

import pytest

from bookbrowser import HTML, PAGES

#: The most significant digits a float in a code output may show (a reader wants 3 or 4).
MAX_SIGNIFICANT = 6

# a cell's result or its printed text (myst-nb: <div class="output text_plain ..."> / "output stream ...")
_PLAIN = re.compile(r'<div class="output (?:text_plain|stream)\b[^"]*"><div class="highlight"><pre>(.*?)</pre>',
                    re.S)
# what a worked solution printed, folded (flashbook.exercises.form: solution_output)
_SOLUTION = re.compile(r'<details class="fb-solution"><summary>[^<]*</summary><pre>(.*?)</pre>', re.S)
# a labcore Table's cells (flashbook.display.Table._repr_html_)
_TABLE = re.compile(r'<table class="fb-table">(.*?)</table>', re.S)
_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", re.S)
_TAG = re.compile(r"<[^>]+>")
# a decimal number with a fraction (not part of a longer dotted run such as a version 2.5.7 or a name)
_FLOAT = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(?:[eE][+-]?\d+)?(?![\w.])")
_LITERAL_OPS = set("()[]{},:-+")
_LITERAL_NAMES = {"True", "False", "None"}


def _text(fragment: str) -> str:
    return html.unescape(_TAG.sub("", fragment))


def plain_outputs(page_html: str) -> list[str]:
    """The plain-text code outputs of a built page (results, printed text, worked solutions' printed text), as
    the reader sees them (tags stripped, entities decoded)."""
    return [_text(m.group(1)) for rx in (_PLAIN, _SOLUTION) for m in rx.finditer(page_html)]


def table_cells(page_html: str) -> list[str]:
    """The text of every header and data cell of the page's display tables."""
    return [_text(c) for t in _TABLE.finditer(page_html) for c in _CELL.findall(t.group(1))]


def _only_literal_tokens(text: str) -> bool:
    """True when ``text`` is Python literals side by side (``print(a_list, a_tuple)``): numbers, strings,
    brackets, commas, colons, signs, True/False/None and nothing else."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return False
    for t in toks:
        if t.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
            continue
        if t.type in (tokenize.NUMBER, tokenize.STRING):
            continue
        if t.type == tokenize.OP and t.string in _LITERAL_OPS:
            continue
        if t.type == tokenize.NAME and t.string in _LITERAL_NAMES:
            continue
        return False
    return True


def bare_repr(text: str) -> bool:
    """True when ``text`` (a whole output) starts with ``(``, ``[`` or ``{`` and is a Python literal
    (``ast.literal_eval``), or several literals printed side by side."""
    s = text.strip()
    if not s or s[0] not in "([{":
        return False
    try:
        ast.literal_eval(s)
        return True
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _only_literal_tokens(s)


def bare_reprs(text: str) -> list[str]:
    """The parts of one output that are bare reprs: the whole output, or any line of it (one ``print``)."""
    if bare_repr(text):
        return [text.strip()]
    return [line.strip() for line in text.splitlines() if bare_repr(line)]


def long_floats(text: str, limit: int = MAX_SIGNIFICANT) -> list[str]:
    """The floats in ``text`` printed with more than ``limit`` significant digits (``1.2569317824925514``)."""
    def significant(m):
        return len((m.group(1) + m.group(2)).replace(",", "").lstrip("0"))

    return [m.group(0) for m in _FLOAT.finditer(text) if significant(m) > limit]


@pytest.fixture(scope="module")
def outputs():
    """``{docname: (plain outputs, table cells)}`` over every built page of the table of contents."""
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} has no index.html: build the book first (make book-strict)")
    found = {}
    for doc in [d for d in PAGES if (HTML / (d + ".html")).exists()]:
        text = (HTML / (doc + ".html")).read_text(encoding="utf-8")
        found[doc] = (plain_outputs(text), table_cells(text))
    if not any(plain for plain, _ in found.values()):
        pytest.fail("no page of the book has a plain-text code output: nothing for these tests to check")
    return found


@pytest.mark.parametrize("doc", PAGES)
def test_no_bare_tuple_list_or_dict_output(outputs, doc):
    plain, _ = outputs.get(doc, ([], []))
    bare = [r[:120] for out in plain for r in bare_reprs(out)]
    assert not bare, (f"{doc}: code outputs that are bare Python reprs (label them: a Table or a labelled "
                      f"f-string):\n" + "\n".join(bare))


@pytest.mark.parametrize("doc", PAGES)
def test_no_unrounded_float_output(outputs, doc):
    plain, cells = outputs.get(doc, ([], []))
    long = sorted({f for out in plain + cells for f in long_floats(out)})
    assert not long, f"{doc}: floats shown with more than {MAX_SIGNIFICANT} significant digits: {long}"
