"""Committed notebooks carry no outputs, use the python3 kernel (the build executes them afresh) and give every
cell a unique id (nbformat 4.5: nbval and nbformat warn about a cell without one, and will refuse it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
NOTEBOOKS = [p for p in NOTEBOOKS if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts]


def check_clean(nb: dict) -> list[str]:
    """Problems that make a notebook unfit to commit: outputs, execution counts, a foreign kernel, widget state,
    a cell without an id or with another cell's id."""
    problems = []
    ids = [cell.get("id") for cell in nb.get("cells", [])]
    for i, cid in enumerate(ids):
        if not cid:
            problems.append(f"cell {i} has no id")
        elif ids.index(cid) != i:
            problems.append(f"cell {i} has the id {cid!r} of cell {ids.index(cid)}")
    spec = nb.get("metadata", {}).get("kernelspec", {})
    if spec.get("name") != "python3":
        problems.append(f"kernelspec name is {spec.get('name')!r}, expected 'python3'")
    if "widgets" in nb.get("metadata", {}):
        problems.append("saved ipywidgets state in the notebook metadata")
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if cell.get("outputs"):
            problems.append(f"cell {i} has {len(cell['outputs'])} output(s)")
        if cell.get("execution_count") is not None:
            problems.append(f"cell {i} has execution_count {cell['execution_count']}")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_clean(path):
    problems = check_clean(json.loads(path.read_text(encoding="utf-8")))
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems) + \
        " (clear outputs, use --set-kernel python3 and nbformat's normalize() before committing)"
