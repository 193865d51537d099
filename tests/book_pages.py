"""The book's prose as the tests read it: each page's Markdown (a notebook's Markdown cells, or a .md page)."""
from __future__ import annotations

import json
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "book"


def markdown_pages():
    """``(file name, Markdown text)`` of every notebook (its Markdown cells joined) and .md page in book/ (and book/api/)."""
    for p in sorted(BOOK.glob("*.ipynb")):
        nb = json.loads(p.read_text(encoding="utf-8"))
        yield p.name, "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for p in sorted(BOOK.glob("*.md")) + sorted(BOOK.glob("api/*.md")):   # the API reference's pages too
        yield p.relative_to(BOOK).as_posix(), p.read_text(encoding="utf-8")
