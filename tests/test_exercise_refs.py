"""Exercise references in the notebooks read as text a live reader understands (no unresolved reference).

In JupyterLab, jupyterlab-myst has no cross-page index, so ``{ref}`ex-standard-io``` shows the raw label
"ex-standard-io". The notebooks therefore write the exercise's number and title themselves, with a ``{doc}``
link to the exercises chapter: ``{doc}`Exercise 2 (HBM traffic of standard attention) <12_exercises>```. This
test fails on a ``{ref}``/``{numref}`` role aimed at an exercise label, and on a written number or title that
does not match the exercise's definition in :mod:`flashbook.exercises`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flashbook.exercises import exercise

BOOK = Path(__file__).resolve().parents[1] / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
RAW_REF = re.compile(r"\{(?:ref|numref)\}`(?:[^`<]*<)?(ex-[\w-]+)>?`")
DOC_REF = re.compile(r"\{doc\}`[Ee]xercise (\d+) \(([^)]*)\) <12_exercises>`")


def markdown(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_ref_role_to_an_exercise_label(path):
    hits = RAW_REF.findall(markdown(path))
    assert not hits, f"{path.name}: {{ref}} to exercise labels {hits} shows the raw label in JupyterLab"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_written_exercise_references_match_the_definitions(path):
    for number, title in DOC_REF.findall(markdown(path)):
        # a link's text holds no maths (a live notebook shows it raw), so a title's $dQ$ is written dQ there
        expected = exercise(int(number)).title.replace("$", "")
        assert title[:1].lower() + title[1:] == expected[:1].lower() + expected[1:], (path.name, number, title)


def test_the_pages_that_point_at_exercises_do_so():
    found = {p.name for p in NOTEBOOKS if DOC_REF.search(markdown(p))}
    assert {"01_bottlenecks.ipynb", "02_io_awareness.ipynb", "03_online_softmax.ipynb", "11_pitfalls.ipynb"} <= found


BARE_DOC = re.compile(r"\{doc\}`([^`<]+)`")


@pytest.mark.parametrize("path", NOTEBOOKS + sorted(BOOK.glob("labs/*.ipynb")), ids=lambda p: p.name)
def test_page_links_name_their_page(path):
    """A ``{doc}`` link without its own text shows the page's title in the HTML but its file name
    ("12_exercises", "../04_flash_forward") in JupyterLab: every page link writes the page's name itself."""
    assert BARE_DOC.findall(markdown(path)) == []
