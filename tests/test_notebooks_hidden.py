"""A page hides at most two code cells (the Colab install cell and one set-up cell) and never binds
names for its prose behind the reader's back (no ``globals().update``): the numbers the prose quotes come from
the page's record in ``flashbook/pages/``, which a live reader sees imported in the set-up cell."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "book").glob("*.ipynb"))
HIDING_TAGS = {"remove-cell", "remove-input"}
#: At most this many hidden code cells per page: the Colab install cell and one set-up cell.
MAX_HIDDEN = 2


def hidden_code_cells(nb: dict) -> list[int]:
    """Indices of the code cells a reader of the HTML book does not see (tagged remove-cell or remove-input)."""
    return [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
            and HIDING_TAGS & set(c.get("metadata", {}).get("tags", []))]


def bound_behind_the_reader(nb: dict) -> list[int]:
    """Indices of the code cells that call ``globals().update`` or assign through ``globals()[...]``."""
    return [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
            and ("globals().update" in "".join(c["source"]) or "globals()[" in "".join(c["source"]))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_at_most_two_hidden_code_cells_and_no_globals_update(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    hidden = hidden_code_cells(nb)
    assert len(hidden) <= MAX_HIDDEN, f"{path.name}: hidden code cells {hidden}; put the page's numbers in flashbook/pages"
    assert not bound_behind_the_reader(nb), f"{path.name}: globals() binding in cells {bound_behind_the_reader(nb)}"
