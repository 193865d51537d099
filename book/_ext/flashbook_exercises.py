"""Sphinx extension: each exercise of the HTML book is one block (statement, form, folded solution).

In the notebook an exercise is several cells, as a live reader needs them: the statement (``{exercise}``), a stub
cell (``answer = None``), a check cell (``check(k, answer)``), the worked solution (``{solution}``, a dropdown)
and the solution's code (``with solution_output(): ...``, its source folded). The HTML book has no kernel: the
stub and the check call do nothing there, and the check cell's output is the self-grading form
(``flashbook.exercises.form``). So, in the HTML only (the notebook is unchanged):

- a code cell tagged :data:`LIVE_ONLY` loses its source; one that is left with no output is removed;
- after each exercise (except on a lab's page: :func:`groups_exercises`; there only a solution's code moves into
  its dropdown, :func:`fold_solution_code`), the cells that follow it up to the next heading, exercise or other
  text (the form) move into the exercise's box, then its solution, with the solution's code cells (their source still folded) moved
  into the solution's dropdown; the printed worked solution (``<details class="fb-solution">``, folded on its
  own in the notebook) is shown open there, since the dropdown already hides it.

Runs on ``doctree-resolved`` (after sphinx-exercise has numbered and titled its nodes), so numbering, labels and
references are untouched.
"""
from __future__ import annotations

from docutils import nodes

#: The cell tag of a code cell that only means something in a live kernel (an exercise's stub, its check call).
LIVE_ONLY = "live-only"

_FOLDED = '<details class="fb-solution">'


def _is_cell(node) -> bool:
    return isinstance(node, nodes.container) and "cell" in node.get("classes", [])


def _part(cell, element: str):
    """The child of a myst-nb cell with ``nb_element`` ``element`` (``cell_code_source``/``cell_code_output``)."""
    return [c for c in cell.children if isinstance(c, nodes.Element) and c.get("nb_element") == element]


def strip_live_only(doctree) -> int:
    """Remove the source of every cell tagged :data:`LIVE_ONLY`, and the cell when nothing is left; returns the
    number of cells touched."""
    touched = 0
    for cell in list(doctree.findall(_is_cell)):
        if f"tag_{LIVE_ONLY}" not in cell.get("classes", []):
            continue
        touched += 1
        for source in _part(cell, "cell_code_source"):
            cell.remove(source)
        if not _part(cell, "cell_code_output"):
            cell.parent.remove(cell)
    return touched


def _kind(node) -> str:
    from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

    if isinstance(node, (exercise_node, exercise_enumerable_node)):
        return "exercise"
    if isinstance(node, solution_node):
        return "solution"
    if _is_cell(node):
        return "cell"
    return "other"


def _open_folded(cell) -> None:
    """The printed worked solution shown open (it sits inside the solution's dropdown now)."""
    for raw in cell.findall(nodes.raw):
        if _FOLDED in raw.astext():
            text = raw.astext().replace(_FOLDED, '<details class="fb-solution" open>')
            raw.parent.replace(raw, nodes.raw(text, text, format=raw.get("format", "html")))


def group_exercises(doctree) -> int:
    """Move each exercise's form cells and solution (with its code cells) into the exercise's node; returns the
    number of exercises grouped (see the module's docstring)."""
    grouped = 0
    for parent in list(doctree.findall(nodes.Element)):
        children = list(parent.children)
        i = 0
        while i < len(children):
            if _kind(children[i]) != "exercise":
                i += 1
                continue
            box, j, solution = children[i], i + 1, None
            while j < len(children) and _kind(children[j]) in ("cell", "solution"):
                node = children[j]
                if _kind(node) == "solution":
                    if solution is not None:
                        break
                    solution = node
                    parent.remove(node)
                    box.append(node)
                elif solution is None:        # before the solution: the exercise's own cells (its form)
                    parent.remove(node)
                    box.append(node)
                else:                         # after it: the solution's code
                    parent.remove(node)
                    _open_folded(node)
                    solution.append(node)
                j += 1
            if j > i + 1:
                box["classes"].append("fb-exercise-block")
                grouped += 1
            i = j
    return grouped


def on_doctree_resolved(app, doctree, docname):
    if app.builder.format != "html":
        return
    strip_live_only(doctree)
    if groups_exercises(docname):
        group_exercises(doctree)
    else:
        fold_solution_code(doctree)


def fold_solution_code(doctree) -> int:
    """Move the code cells that directly follow each solution into its dropdown (their printed worked solution
    shown open there), as :func:`group_exercises` does for an exercise's solution; returns the cells moved. A lab's
    solution stands apart from its task, at the end of the page, so only this part applies there."""
    moved = 0
    for parent in list(doctree.findall(nodes.Element)):
        children = list(parent.children)
        for i, node in enumerate(children):
            if _kind(node) != "solution":
                continue
            for nxt in children[i + 1:]:
                if _kind(nxt) != "cell":
                    break
                parent.remove(nxt)
                _open_folded(nxt)
                node.append(nxt)
                moved += 1
    return moved


def groups_exercises(docname: str) -> bool:
    """Whether a page's exercises take the cells after them into their box: not on a lab's page, where an
    exercise states the task and the cells after it are the reader's kernel and check cell, part of the page (in
    one part or both, whichever the page's text happens to leave between them)."""
    return not docname.startswith("book/labs/")


def setup(app):
    app.connect("doctree-resolved", on_doctree_resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
