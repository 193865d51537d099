"""Grade one student's items in this process: ``python -m flashbook.grading.worker`` (the class command starts it).

Reads one JSON job on standard input: ``{"student": id, "items": [{"item", "kind", "lab", "path"}], "seed": int or
null, "gpu": preset, "memory_mb": int}``. Sets its own memory limit first (``RLIMIT_AS``), then grades the items in
order and writes one JSON line per item to standard output as soon as it is graded: ``{"item", "row", "report"}``
(the gradebook row and the report's text). A kernel's own exceptions are rows, never a crash; the class command
deals with a process that dies or runs past its time limit (the items it had not reported get that reason).

Exercise answers (``answers.csv``: columns ``exercise``, ``part``, ``answer``) are graded against the student's
own variant (:func:`flashbook.exercises.sheets.seed_for`), one row per exercise.
"""
from __future__ import annotations

import csv
import json
import sys
import traceback
from pathlib import Path

__all__ = ["grade_item", "grade_answers", "main"]


def _row(student, item, *, passed=False, score=0.0, error="", traffic=None, peak=None, unit="", feedback=""):
    return {"student": student, "item": item, "passed": bool(passed), "score": round(float(score), 4),
            "error": error, "traffic": traffic, "on_chip_peak": peak, "on_chip_unit": unit, "feedback": feedback}


def grade_item(student: str, item: dict, *, seed=None, gpu=None) -> tuple:
    """``(row, report text)`` of one lab item: the file's functions rebuilt from its text and graded.

    Raises: nothing for a submission's own faults (they are the row's ``error``); OSError if the file vanished.
    """
    path = Path(item["path"])
    text = path.read_text(encoding="utf-8", errors="replace")
    if item["kind"] == "cuda":
        from ..labs.cuda import grade_text

        kw = {"gpu": gpu} if gpu else {}
        report = grade_text(item["lab"], text, filename=path.name, seed=seed, **kw)
    else:
        from ..labs.grader import grade_text

        kw = {"gpu": gpu} if gpu else {}
        report = grade_text(item["lab"], text, filename=path.name, seed=seed, **kw)
    row = report.as_row(student)
    row["item"] = item["item"]
    return row, str(report)


def grade_answers(student: str, path) -> list:
    """Rows ``(row, report line)`` for a student's exercise answers, one per exercise answered.

    Raises: nothing for malformed answers (they are rows); OSError if the file cannot be read.
    """
    from ..exercises.grader import grade
    from ..exercises.sheets import seed_for

    variant = seed_for(student)
    answers: dict = {}
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = {"exercise", "part", "answer"} - set(reader.fieldnames or ())
        if missing:
            return [(_row(student, "exercises", error=f"{Path(path).name} lacks the column(s) {sorted(missing)}: "
                                                      "the columns are exercise, part, answer"), "")]
        for rec in reader:
            try:
                k = int(rec["exercise"])
            except (TypeError, ValueError):
                out.append((_row(student, "exercises", error=f"exercise {rec['exercise']!r} is not a number"), ""))
                continue
            value = (rec.get("answer") or "").strip()
            try:
                parsed = float(value.replace(",", ""))
            except ValueError:
                parsed = value or None
            answers.setdefault(k, {})[(rec.get("part") or "").strip()] = parsed
    for k, parts in sorted(answers.items()):
        given = parts if set(parts) != {""} else parts[""]
        v = grade(k, given, variant=variant)
        item = f"exercise{k:02d}"
        n = max(1, len(v.parts))
        right = sum(1 for p in v.parts if p.status == "correct")
        out.append((_row(student, item, passed=v.status == "correct", score=right / n,
                         error="" if v.status != "malformed" else v.message, feedback=v.message),
                    f"Exercise {k} (your variant {variant}): {v.message}"))
    return out


def _limit_memory(mb):
    try:
        import resource

        limit = int(mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # no resource module (Windows), a hard limit already lower, or a limit past what the C type holds
    except (ImportError, ValueError, OSError, OverflowError):
        pass


def main(argv=None) -> int:
    job = json.loads(sys.stdin.read())
    _limit_memory(job.get("memory_mb", 2048))
    student = job["student"]
    for item in job["items"]:
        try:
            if item["kind"] == "exercises":
                results = grade_answers(student, item["path"])
                for row, report in results:
                    print(json.dumps({"item": row["item"], "row": row, "report": report}), flush=True)
                if not results:
                    print(json.dumps({"item": "exercises", "row": _row(student, "exercises",
                                                                        error="answers.csv holds no answer"),
                                      "report": ""}), flush=True)
                continue
            row, report = grade_item(student, item, seed=job.get("seed"), gpu=job.get("gpu"))
        except MemoryError:
            row, report = _row(student, item["item"], error="the grading ran out of memory"), ""
        except Exception as exc:  # a fault of the grader or of the file: one row, the batch goes on
            row = _row(student, item["item"], error=f"could not be graded: {type(exc).__name__}: {exc}")
            report = traceback.format_exc(limit=3)
        print(json.dumps({"item": item["item"], "row": row, "report": report}, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
