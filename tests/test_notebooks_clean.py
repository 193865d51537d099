"""Committed notebooks carry no outputs and use the python3 kernel (the build executes them afresh)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
NOTEBOOKS = [p for p in NOTEBOOKS if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts]


def check_clean(nb: dict) -> list[str]:
    """Problems that make a notebook unfit to commit: outputs, execution counts, a foreign kernel, widget state."""
    problems = []
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


def test_check_clean_catches_dirty_notebooks():
    dirty = {"metadata": {"kernelspec": {"name": "julia-1.9"}, "widgets": {}},
             "cells": [{"cell_type": "code", "outputs": [{"output_type": "stream"}], "execution_count": 3}]}
    assert len(check_clean(dirty)) == 4
    clean = {"metadata": {"kernelspec": {"name": "python3"}},
             "cells": [{"cell_type": "code", "outputs": [], "execution_count": None}]}
    assert check_clean(clean) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_clean(path):
    problems = check_clean(json.loads(path.read_text(encoding="utf-8")))
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems) + \
        " (clear outputs and use --set-kernel python3 before committing)"
