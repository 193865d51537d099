"""A made-up class to try the class grader on: ``python -m flashbook.grading.demo OUT --students 30``.

Writes one submission per student into ``OUT``, cycling through the kinds a real class hands in (:data:`KINDS`):
correct kernels of the tile-level and the CUDA labs (as ``.py`` files and as notebooks), kernels with a known
mistake, a file that does not parse, a kernel that never ends, a kernel that reaches past its arrays, a kernel under
the wrong name, exercise answers, and a file that is no lab at all. ``flashbook-grade OUT --out grades/`` then grades
them; ``make bench`` times that on thirty.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["KINDS", "make_class", "main"]

#: The kinds of submission, in the order students are given them: ``(kind, what the gradebook should say)``.
KINDS = (
    ("chip_correct", "lab 1 passes"),
    ("cuda_correct", "labs 6a and 6b pass"),
    ("cuda_mistake", "lab 7 fails: a missing barrier, named"),
    ("chip_mistake", "lab 1 fails: the rescale forgotten, named"),
    ("syntax_error", "lab 1: the file does not parse"),
    ("cuda_endless", "lab 6b: stopped at the time limit"),
    ("cuda_cheat", "lab 7: refused, an import in the kernel"),
    ("notebook_correct", "lab 8 passes (a notebook)"),
    ("missing_kernel", "lab 7: no function named fa2_forward"),
    ("answers", "exercise rows"),
    ("not_a_lab", "no lab found"),
)


def _notebook(code: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": code.splitlines(True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _submission(kind: str, student: str):
    """``(file name, text)`` of one submission of ``kind``."""
    from ..labs.cuda import solution_source
    from ..labs.mistakes import mistake_text
    from ..labs.solutions import solution_text

    if kind == "chip_correct":
        return f"{student}_lab1.py", solution_text("online_softmax")
    if kind == "cuda_correct":
        return f"{student}_lab6.py", solution_source("6b")
    if kind == "cuda_mistake":
        src = solution_source("7")
        barrier = "        cuda.syncthreads()                       # everyone is done with the tile before the next load\n"
        return f"{student}_lab7.py", src.replace(barrier, "")
    if kind == "chip_mistake":
        return f"{student}_lab1.py", mistake_text("online_softmax", "no_rescale")
    if kind == "syntax_error":
        return f"{student}_lab1.py", solution_text("online_softmax").replace("def kernel(", "def kernel(:", 1)
    if kind == "cuda_endless":
        src = solution_source("6b")
        return f"{student}_lab6.py", src.replace("    r = cuda.blockIdx.x\n", "    r = cuda.blockIdx.x\n"
                                                  "    while r >= 0:\n        r += 0\n", 1)
    if kind == "cuda_cheat":
        return f"{student}_lab7.py", solution_source("7").replace("    t = cuda.threadIdx.x\n",
                                                                   "    import os\n    t = cuda.threadIdx.x\n", 1)
    if kind == "notebook_correct":
        return f"{student}_lab8_cuda_decoding.ipynb", _notebook(solution_source("8"))
    if kind == "missing_kernel":
        return f"{student}_lab7.py", solution_source("7").replace("def fa2_forward(", "def fa2_forwards(")
    if kind == "answers":
        from ..exercises.sheets import key_rows, seed_for

        rows = key_rows(student, seed_for(student), [1, 2])
        lines = ["exercise,part,answer"]
        for k, r in enumerate(rows):
            answer = r["answer_rounded"] if k % 2 == 0 else "12345"     # every other part wrong
            lines.append(f"{r['exercise']},{r['part']},{answer}")
        return f"{student}_answers.csv", "\n".join(lines) + "\n"
    if kind == "not_a_lab":
        return f"{student}.py", "print('hello')\n"
    raise ValueError(f"unknown kind {kind!r}; kinds: {', '.join(k for k, _ in KINDS)}")


def make_class(folder, students: int = len(KINDS)) -> dict:
    """Write ``students`` submissions into ``folder`` (created), student ``s01``, ``s02``, ... cycling through
    :data:`KINDS`; returns ``{student: kind}``.

    Raises: ValueError for fewer than one student.
    """
    if isinstance(students, bool) or not isinstance(students, int) or students < 1:
        raise ValueError(f"students must be an integer >= 1, got {students!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for i in range(students):
        student = f"s{i + 1:02d}"
        kind = KINDS[i % len(KINDS)][0]
        name, text = _submission(kind, student)
        (folder / name).write_text(text, encoding="utf-8")
        out[student] = kind
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flashbook.grading.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder to write the submissions into")
    ap.add_argument("--students", type=int, default=len(KINDS))
    args = ap.parse_args(argv)
    for student, kind in make_class(args.out, args.students).items():
        print(f"{student}: {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
