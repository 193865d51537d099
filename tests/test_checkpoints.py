"""Each section 01-08 ends with its exercises: the same definitions and graders as page 12."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashbook.exercises import CHECKPOINTS, check, checkpoint, checkpoint_text, exercise

BOOK = Path(__file__).resolve().parents[1] / "book"


def _cells(page):
    return json.loads((BOOK / f"{page}.ipynb").read_text())["cells"]


@pytest.mark.parametrize("page", sorted(CHECKPOINTS))
def test_every_section_ends_with_its_checkpoint(page):
    cells = _cells(page)
    assert cells[-1]["cell_type"] == "code"
    assert f"checkpoint({page!r})" in "".join(cells[-1]["source"])
    assert "".join(cells[-2]["source"]).startswith("## Checkpoint")


def _own_exercises(page) -> bool:
    """A page written after the lecture states its exercises itself (directive, check cell, folded solution)."""
    text = "".join("".join(c["source"]) for c in _cells(page))
    return "{exercise}" in text and "check(" in text


def test_sections_01_to_08_end_with_their_exercises_and_every_lecture_exercise_is_in_one():
    pages = {p.stem for p in BOOK.glob("0[1-8]*.ipynb")}
    assert set(CHECKPOINTS) <= pages and {p for p in pages if len(p.split("_")[0]) == 2} <= set(CHECKPOINTS)
    assert all(_own_exercises(p) for p in pages - set(CHECKPOINTS)), sorted(pages - set(CHECKPOINTS))
    shown = [k for ks in CHECKPOINTS.values() for k in ks]
    assert sorted(k for k in shown if k <= 13) == list(range(1, 14))   # the lecture's twelve and the one on §4b
    assert len(shown) == len(set(shown))


def test_a_checkpoint_states_the_definition_and_links_the_worked_solution(monkeypatch):
    text = checkpoint_text(2)
    assert text.startswith(f"**Exercise 2 ({exercise(2).title}).**")
    assert "N = 4096" in text and "check(2, answer)" in text and "12_exercises.ipynb" in text
    monkeypatch.setenv("FLASHBOOK_STATIC", "1")
    assert f"{{ref}}`exercise 2 <{exercise(2).label}>`" in checkpoint_text(2)
    monkeypatch.setenv("FLASHBOOK_EDITION", "student")
    assert "Worked solution" not in checkpoint_text(2)


def test_the_checkpoint_grades_with_the_same_grader(capsys):
    checkpoint("02_io_awareness")                     # live: the statement only
    assert check(2, exercise(2).compute()[0]["MB"], quiet=True).status == "correct"


def test_an_unknown_page_has_no_checkpoint():
    with pytest.raises(ValueError, match="02_io_awareness"):
        checkpoint("99_nowhere")


def test_in_the_static_book_the_checkpoint_shows_the_statement_and_the_form(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("FLASHBOOK_STATIC", "1")
    checkpoint("05_flash_backward")
    assert len(shown) == 2 * len(CHECKPOINTS["05_flash_backward"])
    statements, forms = shown[::2], shown[1::2]
    assert all(s._repr_markdown_().startswith("**Exercise ") for s in statements)
    assert all('class="fb-exercise' in f.data or "fb-exercise" in f.data for f in forms)


@pytest.mark.parametrize("static", [False, True])
def test_the_checkpoints_check_call_runs_as_written(monkeypatch, static):
    """What a checkpoint tells a reader to type works in a fresh namespace (the page itself imports only
    ``checkpoint``): its import line, then its ``check(k, answer)`` with an answer in place of ``answer``."""
    import re

    from flashbook import mode

    monkeypatch.setattr(mode, "static_mode", lambda: static)
    monkeypatch.setattr("flashbook.exercises.cell.static_mode", lambda: static)
    for k in sorted({k for ks in CHECKPOINTS.values() for k in ks}):
        text = checkpoint_text(k)
        code = re.findall(r"`([^`]+)`", text.split("Answer format:", 1)[1])
        imports = [c for c in code if c.startswith("from ")]
        calls = [c for c in code if c.startswith("check(")]
        assert imports and calls == [f"check({k}, answer)"], text
        namespace: dict = {}
        exec(imports[0], namespace)                       # noqa: S102 (the sentence a reader copies)
        assert namespace["check"] is check
