"""Exercise sheets: one Markdown sheet per student (their variant of every exercise) and the instructor's key.

``python -m flashbook.exercises.sheets --ids alice bob carol --out DIR`` (or ``make sheets IDS="alice bob"``)
writes ``DIR/<id>.md`` for each student and ``DIR/answer_key.csv`` with one row per (student, exercise, part):
student id, exercise, part, variant, answer, tolerance, rounding, and the answer as rounded. A student's
variant seed is derived from the id (:func:`seed_for`: SHA-256 of ``"<course>/<id>"``), so the same id gets
the same sheet on every run and machine; ``--course`` changes every seed at once (a new term). ``--seeds``
writes sheets for given seeds instead (``variant-<s>.md``).

A student checks an answer in a live notebook with ``check(k, answer, variant=s)``; the sheet prints s.

Source: this book's presentation layer (graded homework: one variant per student).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import re
import sys
from pathlib import Path

from .cell import exercise_text
from .definitions import EXERCISES, exercise
from .grader import payload
from .rounding import canonical, spec

__all__ = ["seed_for", "sheet", "key_rows", "write", "main", "KEY_COLUMNS"]

#: The columns of ``answer_key.csv``.
KEY_COLUMNS = ("student", "exercise", "part", "variant", "answer", "tolerance", "rounding", "answer_rounded")

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def seed_for(student: str, course: str = "flashbook") -> int:
    """The variant seed of ``student``: 1 + (the first 8 bytes of SHA-256(``course/student``) mod 10^6 - 1).

    Never 0 (variant 0 is the book's own numbers). Raises ValueError for an id that is not 1-64 characters of
    letters, digits, ``.``, ``_``, ``-`` (it names a file).
    """
    if not isinstance(student, str) or not _ID.match(student):
        raise ValueError(f"a student id is 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
                         f"digit; got {student!r}")
    h = int.from_bytes(hashlib.sha256(f"{course}/{student}".encode("utf-8")).digest()[:8], "big")
    return 1 + h % 999_999


def sheet(name: str, variant: int, numbers=None) -> str:
    """The Markdown sheet of one student (``name``) on ``variant``, for exercises ``numbers`` (default all)."""
    numbers = list(numbers or [ex.number for ex in EXERCISES])
    out = [f"# Exercises for {name}", "",
           f"Your variant is **{variant}**. Answer each exercise with these numbers; in a live notebook of the "
           f"book, `check(k, answer, variant={variant})` grades your answer to exercise k.", ""]
    for k in numbers:
        out += [f"## Exercise {k}: {exercise(k).plain_title}", ""]
        listing = False
        for ln in exercise_text(k, variant).split("\n")[1:]:   # the statement's lines, parts indented
            item = ln.startswith("  ")
            if out[-1] and not (item and listing):
                out.append("")                                   # a paragraph, or a list's start or end
            out.append(f"- {ln.strip()}" if item else ln)
            listing = item
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def key_rows(student: str, variant: int, numbers=None) -> list[dict]:
    """The answer-key rows of one student (see :data:`KEY_COLUMNS`); a choice part has no tolerance."""
    rows = []
    for k in numbers or [ex.number for ex in EXERCISES]:
        for p in payload(k, variant)["parts"]:
            row = {"student": student, "exercise": k, "part": p["key"], "variant": variant}
            if p["kind"] == "choice":
                row.update(answer=p["answer"], tolerance="", rounding="option letter", answer_rounded=p["answer"])
            else:
                row.update(answer=repr(p["ref"]), tolerance=f"{p['tol']:.6g}", rounding=p["rounding_text"],
                           answer_rounded=canonical(spec(p["rounding"]), p["ref"]))
            rows.append(row)
    return rows


def write(out: Path, students: dict, numbers=None) -> list[Path]:
    """Write one sheet per ``{name: variant}`` and ``answer_key.csv`` into ``out``; returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths, rows = [], []
    for name, variant in students.items():
        path = out / f"{name}.md"
        path.write_text(sheet(name, variant, numbers), encoding="utf-8")
        paths.append(path)
        rows += key_rows(name, variant, numbers)
    key = out / "answer_key.csv"
    with key.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=KEY_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return paths + [key]


def main(argv=None) -> int:
    """Command line: ``--ids ID ... | --seeds S ...``, ``--out DIR``, optional ``--course``, ``--exercises``."""
    ap = argparse.ArgumentParser(description="Write one exercise sheet per student and the instructor's key.")
    who = ap.add_mutually_exclusive_group(required=True)
    who.add_argument("--ids", nargs="+", help="student ids (each gets a variant derived from the id)")
    who.add_argument("--seeds", nargs="+", type=int, help="variant seeds (sheets named variant-<s>.md)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--course", default="flashbook", help="mixed into every id's seed (default: flashbook)")
    ap.add_argument("--exercises", nargs="+", type=int, help="exercise numbers (default: all)")
    a = ap.parse_args(argv)
    try:
        if a.ids:
            if len(set(a.ids)) != len(a.ids):
                raise ValueError("a student id is given twice")
            students = {s: seed_for(s, a.course) for s in a.ids}
        else:
            if any(s < 1 for s in a.seeds):
                raise ValueError("seeds are positive integers (variant 0 is the book's own)")
            students = {f"variant-{s}": s for s in a.seeds}
        for k in a.exercises or []:
            exercise(k)
    except ValueError as exc:
        ap.error(str(exc))
    for path in write(Path(a.out), students, a.exercises):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
