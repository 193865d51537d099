"""Code that reads on every screen, a phone's included: the notebooks' code cells keep their lines short.

The book's CSS also wraps a code cell's long line inside the column (``_static/flashbook.css``), but a line
that wraps reads worse than one broken where the code allows it, and in a live notebook (JupyterLab on a
laptop, Colab) nothing wraps. Trailing comments go on their own line above the code they describe.
"""
import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"

#: The longest code line a notebook may hold (characters): a code cell of the book's text column shows about
#: 100 characters before it wraps or scrolls (the longest statements and f-strings are broken where the code
#: allows, comments over the code they describe).
MAX_LINE = 100
#: Every page and every lab.
NOTEBOOKS = sorted(BOOK.glob("*.ipynb")) + sorted(BOOK.glob("labs/*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(BOOK).as_posix())
def test_code_cells_keep_their_lines_short(path):
    long = []
    for k, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).split("\n"):
            if len(line) > MAX_LINE:
                long.append(f"cell {k}: {len(line)} chars: {line[:60]}...")
    assert not long, f"{path.name}: code lines over {MAX_LINE} characters:\n" + "\n".join(long)
