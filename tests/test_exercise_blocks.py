"""book/_ext/flashbook_exercises.py on a small doctree: each exercise one block, live-only cells without their
source (the built page: tests/browser/test_reading.py)."""
from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes
from sphinx_exercise.nodes import exercise_enumerable_node, solution_node

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from flashbook_exercises import (LIVE_ONLY, fold_solution_code, group_exercises, groups_exercises,  # noqa: E402
                                 strip_live_only)


def _cell(source: str, output_html: str | None = None, tags=()):
    cell = nodes.container(classes=["cell"] + [f"tag_{t}" for t in tags], nb_element="cell_code")
    cell += nodes.container("", nodes.literal_block(source, source), nb_element="cell_code_source")
    if output_html is not None:
        cell += nodes.container("", nodes.raw(output_html, output_html, format="html"), nb_element="cell_code_output")
    return cell


def _page():
    section = nodes.section()
    ex = exercise_enumerable_node()
    ex += nodes.paragraph(text="Compute the thing.")
    sol = solution_node(classes=["dropdown"])
    sol += nodes.paragraph(text="The thing is 42.")
    section += [nodes.paragraph(text="Intro."), ex,
                _cell("answer = None", tags=[LIVE_ONLY]),
                _cell("check(1, answer)", '<form class="fb-exercise-form"></form>', tags=[LIVE_ONLY]),
                sol,
                _cell("with solution_output(): print(42)",
                      '<details class="fb-solution"><summary>Show</summary><pre>42</pre></details>',
                      tags=["hide-input"]),
                nodes.paragraph(text="Next part.")]
    doc = nodes.document(None, None)
    doc += section
    return doc, section, ex, sol


def test_live_only_cells_lose_their_source_and_empty_ones_go():
    doc, section, ex, sol = _page()
    assert strip_live_only(doc) == 2
    cells = [c for c in section.children if "cell" in c.get("classes", [])]
    assert len(cells) == 2                                   # the stub is gone; the check cell keeps its form
    assert [c.get("nb_element") for c in cells[0].children] == ["cell_code_output"]
    assert "hide-input" in " ".join(cells[1]["classes"]) and len(cells[1].children) == 2   # untagged: kept whole


def test_an_exercise_takes_its_form_and_its_solution_with_the_solution_code():
    doc, section, ex, sol = _page()
    strip_live_only(doc)
    assert group_exercises(doc) == 1
    assert [type(c).__name__ for c in section.children] == ["paragraph", "exercise_enumerable_node", "paragraph"]
    assert "fb-exercise-block" in ex["classes"]
    kinds = [type(c).__name__ for c in ex.children]
    assert kinds == ["paragraph", "container", "solution_node"]          # statement, form, solution
    assert '<form class="fb-exercise-form">' in ex.children[1].astext()
    code = sol.children[-1]
    assert "cell" in code["classes"] and '<details class="fb-solution" open>' in code.astext()
    assert group_exercises(doc) == 0 and ex.children[2] is sol                  # a second pass moves nothing more


def test_an_exercise_without_cells_or_solution_is_left_alone():
    doc = nodes.document(None, None)
    section = nodes.section()
    ex = exercise_enumerable_node()
    section += [ex, nodes.paragraph(text="text")]
    doc += section
    assert group_exercises(doc) == 0 and "fb-exercise-block" not in ex["classes"]


def test_only_exercise_stubs_and_check_calls_are_live_only():
    """The HTML drops the source of a live-only cell: only an exercise's stub (``answer = None``, a function to
    fill in) and its check call may be tagged so, never code a reader of the book should see."""
    import json
    import re

    allowed = re.compile(r"^(answer = None|check\(\d+, answer\)|def \w+\([^)]*\):\n(?:.*\n)*?\s*answer = None.*)$", re.S)
    tagged = []
    for nb in sorted((ROOT / "book").rglob("*.ipynb")):
        for i, c in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            if LIVE_ONLY in c.get("metadata", {}).get("tags", []):
                src = "".join(c["source"]).strip()
                tagged.append(nb.name)
                assert c["cell_type"] == "code" and allowed.match(src), f"{nb.name} cell {i}: {src[:80]!r}"
    assert tagged.count("12_exercises.ipynb") >= 40


def test_a_labs_page_keeps_its_kernel_cells_out_of_the_task_box():
    assert groups_exercises("book/12_exercises") and groups_exercises("book/04b_what_limits")
    assert not groups_exercises("book/labs/lab6_cuda_softmax") and not groups_exercises("book/labs/lab1_online_softmax")


def test_a_labs_solution_takes_the_code_after_it_into_its_dropdown():
    doc, section, ex, sol = _page()
    strip_live_only(doc)
    assert fold_solution_code(doc) == 1
    code = sol.children[-1]
    assert "cell" in code["classes"] and '<details class="fb-solution" open>' in code.astext()
    assert ex.children[-1] is not sol and "fb-exercise-block" not in ex["classes"]    # the task keeps its own box
    assert fold_solution_code(doc) == 0
