"""What the class command writes: the gradebook CSV, a Gradescope ``results.json`` per student, a report per student.

The gradebook has one row per (student, item): :data:`CSV_FIELDS`. ``traffic`` is the elements the kernel moved over
the closed form's (1.0: as the reference loop; below 1: fewer); ``on_chip_peak`` is the largest SRAM use of a CTA
(chip labs, in elements) or shared memory of a block (CUDA labs, in bytes), named by ``on_chip_unit``.

Gradescope's autograder format: ``{"score", "output", "tests": [{"name", "score", "max_score", "status", "output",
"visibility"}]}`` (Gradescope's "Autograder specifications", results.json); each item is one test worth its points.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

__all__ = ["CSV_FIELDS", "normalise_row", "write_gradebook", "read_gradebook", "gradescope_results",
           "student_report"]

#: The gradebook's columns.
CSV_FIELDS = ("student", "item", "passed", "score", "error", "traffic", "on_chip_peak", "on_chip_unit", "feedback")


def normalise_row(row: dict) -> dict:
    """A row with exactly :data:`CSV_FIELDS` (a chip report's ``sram_peak`` becomes ``on_chip_peak`` in elements)."""
    row = dict(row)
    if "sram_peak" in row:
        row.setdefault("on_chip_peak", row.pop("sram_peak"))
        row.setdefault("on_chip_unit", "elements")
    out = {k: row.get(k, "") for k in CSV_FIELDS}
    for k in ("traffic", "on_chip_peak"):
        if out[k] is None:
            out[k] = ""
    return out


def read_gradebook(path) -> list:
    """The rows of an existing gradebook CSV (an empty list when there is none)."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def write_gradebook(path, rows) -> Path:
    """Write ``rows`` (dicts) as the gradebook CSV, sorted by student then item; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted((normalise_row(r) for r in rows), key=lambda r: (str(r["student"]), str(r["item"])))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(rows)
    return path


def gradescope_results(rows, reports=None, *, points=None, execution_time=None) -> dict:
    """One student's Gradescope ``results.json`` content.

    Args:
        rows: the student's gradebook rows.
        reports: ``{item: report text}`` (each test's output).
        points: ``{item: points}`` (default 1 each).
        execution_time: seconds the grading took (optional).
    Returns:
        the dict to write as ``results.json``.
    """
    reports = reports or {}
    points = points or {}
    tests, total = [], 0.0
    for r in sorted(rows, key=lambda r: str(r["item"])):
        worth = float(points.get(r["item"], 1.0))
        score = round(float(r.get("score") or 0.0) * worth, 4)
        total += score
        passed = str(r.get("passed")).lower() == "true"
        output = reports.get(r["item"]) or r.get("error") or r.get("feedback") or ""
        tests.append({"name": r["item"], "score": score, "max_score": worth,
                      "status": "passed" if passed else "failed", "output": output, "visibility": "visible"})
    out = {"score": round(total, 4), "output": f"{sum(t['status'] == 'passed' for t in tests)} of {len(tests)} items "
                                              "passed.", "tests": tests}
    if execution_time is not None:
        out["execution_time"] = round(float(execution_time), 1)
    return out


def student_report(student: str, rows, reports=None) -> str:
    """A student's readable report (Markdown): a table of items, then each item's report."""
    reports = reports or {}
    rows = sorted(rows, key=lambda r: str(r["item"]))
    out = [f"# Grades of {student}", "", "| item | passed | score | error |", "|---|---|---|---|"]
    for r in rows:
        err = str(r.get("error") or "").replace("|", "/").replace("\n", " ")
        out.append(f"| {r['item']} | {r['passed']} | {r['score']} | {err[:120]} |")
    for r in rows:
        text = reports.get(r["item"]) or r.get("feedback") or r.get("error") or ""
        out += ["", f"## {r['item']}", "", "```text", str(text).rstrip(), "```"]
    return "\n".join(out) + "\n"


def write_json(path, data) -> Path:
    """Write ``data`` as JSON (Infinity for inf, as Python's json module does)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return path
