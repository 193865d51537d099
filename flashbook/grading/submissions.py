"""What a folder of submissions holds: one student per file or per folder, and which lab item each file is.

Layout (the instructors' page describes it): ``SUBMISSIONS/<student>.ipynb`` or ``.py`` (one file, one lab), or
``SUBMISSIONS/<student>/`` holding any number of lab notebooks and ``.py`` files, and optionally
``answers.csv``, the student's answers to their exercise sheet (``make sheets``). The student is the file's or the
folder's name (letters, digits, ``.``, ``_``, ``-``).

Which lab a file is: a lab page's name or ``lab<N>`` in the file's name (``lab7_cuda_fa2.ipynb``,
``alice_lab3.py``); otherwise what it calls or defines: ``get_lab("fa2_causal")``, ``get_cuda_lab("7")``, or the
CUDA labs' kernel names (``fa2_forward``, ``split_kernel``, ``bwd_atomic``, ...). Labs 6 and 9 have two graded
items each; a file of lab 6 or 9 is graded on both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Submission", "Item", "find_submissions", "items_in", "student_of", "ITEMS", "STUDENT_ID"]

#: A student id: 1-64 letters, digits, ``.``, ``_``, ``-`` (it names files).
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

#: The graded items: ``(item id, kind, lab key, lab number, names the file defines)``; kind "chip" or "cuda".
ITEMS = (
    ("lab1_online_softmax", "chip", "online_softmax", 1, ("kernel",)),
    ("lab2_fa1_forward", "chip", "fa1_forward", 2, ("kernel",)),
    ("lab3_fa2_causal", "chip", "fa2_causal", 3, ("kernel",)),
    ("lab4_backward", "chip", "backward", 4, ("kernel",)),
    ("lab5_flash_decoding", "chip", "flash_decoding", 5, ("kernel",)),
    ("lab6a_cuda_softmax_two_pass", "cuda", "cuda_softmax_two_pass", 6, ("row_lse_two_pass",)),
    ("lab6b_cuda_softmax_online", "cuda", "cuda_softmax_online", 6, ("row_lse_online",)),
    ("lab7_cuda_fa2", "cuda", "cuda_fa2", 7, ("fa2_forward",)),
    ("lab8_cuda_decoding", "cuda", "cuda_decoding", 8, ("split_kernel", "combine_kernel")),
    ("lab9a_cuda_backward_atomic", "cuda", "cuda_backward_atomic", 9, ("bwd_atomic",)),
    ("lab9b_cuda_backward_deterministic", "cuda", "cuda_backward_deterministic", 9, ("bwd_deterministic",)),
)
_BY_NUMBER: dict = {}
for _row in ITEMS:
    _BY_NUMBER.setdefault(_row[3], []).append(_row)
_CHIP_KEYS = {row[2]: row for row in ITEMS if row[1] == "chip"}


@dataclass(frozen=True)
class Item:
    """One thing to grade: ``item`` (id, the gradebook's column), ``kind`` ("chip", "cuda" or "exercises"),
    ``lab`` (the lab key, or "" for exercises), ``path`` (the file)."""

    item: str
    kind: str
    lab: str
    path: Path


@dataclass
class Submission:
    """One student's files: ``student`` (id), ``paths`` (files to grade), ``problems`` (lines: files that could not
    be attributed to a lab or are of another kind, an id that is not valid)."""

    student: str
    paths: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def find_submissions(folder) -> list:
    """The students of a submissions folder, sorted by id (see the module docstring for the layout).

    Raises: FileNotFoundError (no such folder), NotADirectoryError, ValueError (a folder with no submission).
    """
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"no submissions folder {root}")
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a folder of submissions")
    subs = {}
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        problem = None
        if entry.is_dir():
            student = entry.name
            paths = sorted(p for p in entry.rglob("*") if p.is_file() and p.suffix in (".py", ".ipynb", ".csv")
                           and not any(part.startswith(".") for part in p.relative_to(entry).parts))
        else:
            student = student_of(entry.stem)
            paths = [entry] if entry.suffix in (".py", ".ipynb", ".csv") else []
            if not paths:
                problem = (f"{entry.name} is not graded: a submission is a notebook (.ipynb), a .py file or an "
                           "answers .csv (or a folder of them)")
        sub = subs.setdefault(student, Submission(student))
        if not STUDENT_ID.match(student):
            # an id that cannot name the student's files and rows is reported, and nothing of it is graded
            sub.problems.append(f"the student id {student!r} (from {entry.name}) is not 1-64 letters, digits, "
                                "'.', '_' or '-': rename the file or folder; nothing of it was graded")
            continue
        sub.paths += paths
        if problem:
            sub.problems.append(problem)
    if not any(sub.paths for sub in subs.values()):
        raise ValueError(f"{root} holds no submission (.ipynb, .py or answers .csv files, or a folder per student)")
    return [subs[k] for k in sorted(subs)]


def student_of(stem: str) -> str:
    """The student a file's stem names: the part before its last ``_lab<N>`` (``ahmed_labib_lab6`` is student
    ``ahmed_labib``), less an ``_answers`` suffix; the whole stem when it names no lab."""
    found = list(re.finditer(r"_lab\d", stem))
    student = stem[: found[-1].start()] if found else stem
    return student[: -len("_answers")] if student.endswith("_answers") else student


def _lab_numbers_in_name(name: str) -> list:
    return [int(m) for m in re.findall(r"lab(\d+)", name.lower())]


def items_in(path) -> list:
    """The graded items of one file (a list of :class:`Item`; empty when the file is none of the labs).

    Raises: OSError when the file cannot be read.
    """
    path = Path(path)
    if path.suffix == ".csv":
        return [Item("exercises", "exercises", "", path)]
    text = path.read_text(encoding="utf-8", errors="replace")
    numbers = _lab_numbers_in_name(path.name)
    rows = [r for n in numbers for r in _BY_NUMBER.get(n, [])]
    if not rows:
        for m in re.finditer(r"get_lab\(\s*['\"]?(\w+)['\"]?\s*\)", text):
            key = m.group(1)
            rows += [r for r in ITEMS if r[1] == "chip" and (r[2] == key or str(r[3]) == key)]
        for m in re.finditer(r"get_cuda_lab\(\s*['\"](\w+)['\"]\s*\)", text):
            key = m.group(1)
            rows += [r for r in ITEMS if r[1] == "cuda" and (r[2] == key or r[0].startswith(f"lab{key}"))]
    if not rows:
        rows = [r for r in ITEMS if r[1] == "cuda" and all(re.search(rf"^\s*def {n}\s*\(", text, re.M)
                                                           for n in r[4])]
    seen, out = set(), []
    for r in rows:
        if r[0] not in seen:
            seen.add(r[0])
            out.append(Item(r[0], r[1], r[2], path))
    return out
