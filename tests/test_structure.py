"""Structure guards that no linter checks: no module or notebook imports a private name from another
module, one safe log-sum-exp and one lse merge (in labcore/softmax.py), and notebooks that call the library
rather than carry logic.

The rest is ``make lint`` (ruff, configured in pyproject.toml): a private member of another module or object
(``lc.decode._x``: SLF001, in notebooks too), the engine's banned imports (TID251: labcore imports no
matplotlib, ipywidgets, PIL, IPython or flashbook), unused imports and undefined names (pyflakes)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LABCORE = ROOT / "labcore"
MODULES = sorted(LABCORE.rglob("*.py")) + sorted((ROOT / "flashbook").rglob("*.py"))
NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(tree: ast.AST, *, relative_ok: bool) -> list[str]:
    """``from <labcore module> import _x`` (and, when ``relative_ok``, ``from .<module> import _x``) in ``tree``.

    ruff's import-private-name (PLC2701, a preview rule) skips relative and first-party imports, which are the
    ones that matter here, so this stays a test; a private attribute (``lc.decode._x``) is ruff's SLF001."""
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if (node.level and relative_ok) or mod == "labcore" or mod.startswith("labcore."):
                bad += [f"from {'.' * node.level}{mod} import {a.name}" for a in node.names if _private(a.name)]
    return bad


def notebook_code_cells(path: Path):
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            yield i, cell, "".join(cell["source"])


def _python(src: str) -> ast.AST:
    """A code cell as Python (IPython magics and shell lines blanked)."""
    return ast.parse("\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in src.splitlines()))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_labcore_module_imports_a_private_name_from_another(path):
    assert private_imports(ast.parse(path.read_text()), relative_ok=True) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_imports_a_private_labcore_name(path):
    for i, _, src in notebook_code_cells(path):
        assert private_imports(_python(src), relative_ok=False) == [], f"{path.name} cell {i}"


# ---------------------------------------------------------------- one safe lse, one merge

def _np_call(node: ast.AST, *names: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names
            and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy"))


def _mentions_lse(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and "lse" in n.id.lower() for n in ast.walk(node))


def lse_like(tree: ast.AST) -> list[tuple[str, str]]:
    """Log-sum-exp or lse-merge code in ``tree`` as (enclosing function, expression): ``np.logaddexp``;
    ``np.log(...)`` around an ``np.exp``/``np.sum``/``.sum()``; ``m + np.log(l)`` (the safe lse's form);
    ``np.exp`` of an expression naming an lse, or a softmax of the parts' lse (the merge's weights)."""
    bad = []

    def visit(node, func):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        hit = False
        if _np_call(node, "logaddexp", "logsumexp"):
            hit = True
        elif _np_call(node, "log", "log1p") and node.args:
            hit = any(_np_call(n, "exp", "sum") or (isinstance(n, ast.Attribute) and n.attr == "sum")
                      for n in ast.walk(node.args[0]))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            hit = _np_call(node.left, "log") or _np_call(node.right, "log")
        elif _np_call(node, "exp") and node.args:
            hit = _mentions_lse(node.args[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
              and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("row_softmax", "softmax")):
            hit = any(_mentions_lse(a) for a in node.args)
        if hit:
            bad.append((func, ast.unparse(node)))
            return
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, "<module>")
    return bad


@pytest.mark.parametrize("path", [p for p in MODULES if (p.name != "softmax.py" or p.parent != LABCORE)
                                  and "labs" not in p.relative_to(ROOT).parts],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_safe_lse_and_merge_exist_only_in_softmax_py(path):
    """The safe log-sum-exp and the lse merge are written once, in labcore/softmax.py (safe_lse, merge_states);
    every other module calls them. The labs' kernels (flashbook/labs) are the exception by design: they are
    written as a reader writes them, on the chip's tiles, and their mistaken variants get the lse wrong on
    purpose."""
    assert lse_like(ast.parse(path.read_text())) == []


# ---------------------------------------------------------------- thin notebooks

#: Most counted lines (non-blank, non-comment) of a notebook code cell that computes.
MAX_CELL_LINES = 15
#: A cell tagged so only displays (a figure, a table, a widget) and may be longer.
DISPLAY_TAG = "display-only"
#: A lab's kernel cell: the reader's exercise (the starter, then their kernel), as long as the exercise needs; one
#: cell, so that a solution pasted into it defines everything the check cell grades.
EXERCISE_TAG = "exercise-code"


def counted_lines(src: str) -> int:
    return sum(1 for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#"))


def long_computing_cells(path: Path) -> list[tuple[str, int]]:
    """(notebook, cell index) of each code cell over MAX_CELL_LINES counted lines not tagged DISPLAY_TAG."""
    return [(path.name, i) for i, cell, src in notebook_code_cells(path)
            if counted_lines(src) > MAX_CELL_LINES
            and not {DISPLAY_TAG, EXERCISE_TAG} & set(cell.get("metadata", {}).get("tags", []))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_long_computing_cell(path):
    assert long_computing_cells(path) == [], "move the logic into labcore (or tag a display-only cell)"
