"""Notebook tables write large counts as the prose does: sequence lengths with thousands separators (16,384).

A ``Table(rows, headers, formats)`` call in a notebook's code cell whose header names a sequence length
(``seqlen``, ``N``, ``keys``, ``tokens``, ``sequence length``) must format that column with ``","`` (e.g.
``",d"``); without formats the table prints ``16384``. Source: the book's style (numbers as the prose writes them).
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "book"
LENGTH_HEADERS = {"seqlen", "N", "keys", "tokens", "sequence length"}


def _unformatted_length_columns(source: str) -> list[str]:
    """Headers of sequence-length columns of ``Table(...)`` calls in ``source`` that lack a "," format."""
    try:
        tree = ast.parse(source)
    except SyntaxError:          # a cell with IPython syntax holds no Table call of this kind
        return []
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Table" and len(node.args) >= 2):
            continue
        headers = node.args[1]
        if not isinstance(headers, ast.List):
            continue
        formats = node.args[2] if len(node.args) > 2 else next((k.value for k in node.keywords if k.arg == "formats"), None)
        for i, h in enumerate(headers.elts):
            if isinstance(h, ast.Constant) and h.value in LENGTH_HEADERS:
                f = formats.elts[i] if isinstance(formats, ast.List) else None
                if not (isinstance(f, ast.Constant) and isinstance(f.value, str) and "," in f.value):
                    out.append(h.value)
    return out


def test_sequence_lengths_in_notebook_tables_have_thousands_separators():
    bad = []
    for p in sorted(BOOK.glob("*.ipynb")):
        nb = json.loads(p.read_text(encoding="utf-8"))
        for i, c in enumerate(nb["cells"]):
            if c["cell_type"] == "code":
                bad += [(p.name, i, h) for h in _unformatted_length_columns("".join(c["source"]))]
    assert bad == []
