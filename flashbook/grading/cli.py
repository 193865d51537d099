"""The class command: ``flashbook-grade SUBMISSIONS/ --out grades/`` (installed with the package).

Grades every student of a submissions folder (layout: :mod:`flashbook.grading.submissions`), each in a process of
its own (:mod:`flashbook.grading.worker`) with a time limit per item and a memory limit, and writes into ``--out``:

- ``gradebook.csv``: one row per (student, item) (:data:`flashbook.grading.gradebook.CSV_FIELDS`);
- ``gradescope/<student>/results.json``: Gradescope's autograder format, one per student;
- ``reports/<student>.md``: each student's readable report.

``--student ID`` grades only those students and replaces just their rows in an existing gradebook. ``--gradescope``
runs as a Gradescope autograder: it grades ``/autograder/submission`` as one student and writes
``/autograder/results/results.json``. Progress goes to standard error, one line per student.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from labcore.checks import MAX_COUNT
from labcore.hardware import get_gpu

from .gradebook import (gradescope_results, normalise_row, read_gradebook, student_report, write_gradebook,
                        write_json)
from .submissions import ITEMS, find_submissions, items_in

#: The largest --memory (MB): 4 TiB of address space, far above any machine's memory and still a valid limit.
MAX_MEMORY_MB = 4 * 1024 * 1024

#: The longest ``--timeout`` (seconds per item): an hour, far past any lab's reference (seconds), and small enough
#: that a student's whole limit (this times their items) stays inside what the operating system's wait can take.
MAX_TIMEOUT_S = 3600.0
#: The shortest: a second, about what a grading process takes to start before it runs anything.
MIN_TIMEOUT_S = 1.0


def gradable_items() -> tuple:
    """The gradebook's item ids (the labs' and each exercise's, ``exercise01`` ...), in that order.

    Returns:
        tuple of str.
    Source: the labs of :data:`flashbook.grading.submissions.ITEMS` and the exercises of
    :data:`flashbook.exercises.definitions.EXERCISES`.
    """
    from ..exercises.definitions import EXERCISES

    return tuple(row[0] for row in ITEMS) + tuple(f"exercise{ex.number:02d}" for ex in EXERCISES)

__all__ = ["main", "grade_student", "run_worker"]


def _failed(student, item, reason):
    return normalise_row({"student": student, "item": item, "passed": False, "score": 0.0, "error": reason})


def run_worker(student: str, items: list, *, timeout: float, memory_mb: int, seed=None, gpu=None) -> tuple:
    """Grade ``items`` (dicts) of one student in a fresh process; ``(rows, reports)``.

    A process that runs past ``timeout`` seconds per item, runs out of memory or dies gives the item it was on a
    row with the reason; the items after it are graded again, each in a process of its own.
    """
    job = {"student": student, "items": items, "seed": seed, "gpu": gpu, "memory_mb": memory_mb}
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("NUMBA_ENABLE_CUDASIM", "1" if os.environ.get("FLASHBOOK_CUDA", "") != "gpu" else "0")
    proc = subprocess.Popen([sys.executable, "-m", "flashbook.grading.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(json.dumps(job), timeout=timeout * max(1, len(items)))
        reason = None
        if proc.returncode != 0:
            tail = (err or "").strip().splitlines()[-1:] or [""]
            reason = (f"the grading process died (exit code {proc.returncode}): {tail[0]}" if proc.returncode > 0
                      else f"the grading process was killed by signal {-proc.returncode} (out of memory?)")
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        reason = (f"the grading ran past its time limit ({timeout:.0f} s an item): a kernel that never ends, or one "
                  "far too slow for the simulator")
    rows, reports, done = [], {}, set()
    for line in (out or "").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        rows.append(normalise_row(rec["row"]))
        reports[rec["row"]["item"]] = rec.get("report", "")
        done.add(rec["item"])
    left = [it for it in items if it["item"] not in done and not (it["kind"] == "exercises" and
                                                                  any(r["item"].startswith("exercise") for r in rows))]
    if left and reason is None:
        reason = "the grading process stopped before this item"
    if left:
        rows.append(_failed(student, left[0]["item"], reason))
        for it in left[1:]:          # the rest, one process each, so one bad item cannot take the others with it
            r, rep = run_worker(student, [it], timeout=timeout, memory_mb=memory_mb, seed=seed, gpu=gpu)
            rows += r
            reports.update(rep)
    return rows, reports


def grade_student(sub, *, timeout, memory_mb, seed=None, gpu=None) -> tuple:
    """``(rows, reports, seconds)`` of one :class:`~flashbook.grading.submissions.Submission`."""
    start = time.monotonic()
    rows = [_failed(sub.student, "submission", p) for p in sub.problems]
    items, unknown = [], []
    for path in sub.paths:
        found = items_in(path)
        if not found:
            unknown.append(path.name)
        items += [{"item": it.item, "kind": it.kind, "lab": it.lab, "path": str(it.path)} for it in found]
    # One file per item: two would give one item two rows and one report (the last file's) for both, so neither
    # is graded and the row says which files to choose between.
    files = {}
    for it in items:
        files.setdefault(it["item"], []).append(Path(it["path"]).name)
    twice = {item: names for item, names in files.items() if len(names) > 1}
    for item, names in twice.items():
        rows.append(_failed(sub.student, item, f"{len(names)} files are {item} ({', '.join(names)}): keep one and "
                                               "grade this student again"))
    items = [it for it in items if it["item"] not in twice]
    if unknown and not items and not twice:
        rows.append(_failed(sub.student, "submission", "no lab found in " + ", ".join(unknown) + ": name a file "
                            "after its lab (lab7_cuda_fa2.ipynb) or keep the lab's set-up cell"))
    reports = {}
    if items:
        r, reports = run_worker(sub.student, items, timeout=timeout, memory_mb=memory_mb, seed=seed, gpu=gpu)
        rows += r
    return rows, reports, time.monotonic() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="flashbook-grade", description="Grade a class's lab submissions (the chip "
                                 "labs and the CUDA labs) and exercise answers: one process per student, a gradebook "
                                 "CSV, a Gradescope results.json and a report per student.")
    ap.add_argument("submissions", nargs="?", help="folder of submissions: one file or folder per student")
    ap.add_argument("--out", default=None, help="output folder (default: grades/)")
    ap.add_argument("--student", action="append", default=[], help="grade only this student (repeatable); their "
                    "rows replace theirs in an existing gradebook")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per item before a student's process is "
                    "stopped (default 180)")
    ap.add_argument("--memory", type=int, default=3072, help="memory limit of each grading process in MB "
                    "(default 3072)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), help="students graded at once (default: half the "
                    "machine's cores, at least 1)")
    ap.add_argument("--seed", type=int, default=None, help="fix the inputs' seed (default: a fresh one per grade)")
    ap.add_argument("--gpu", default=None, help="GPU preset of the modelled times (default: each lab's)")
    ap.add_argument("--points", action="append", default=[], metavar="ITEM=N", help="points of an item in the "
                    "Gradescope file (default 1 each)")
    ap.add_argument("--gradescope", action="store_true", help="run as a Gradescope autograder: grade "
                    "/autograder/submission, write /autograder/results/results.json")
    args = ap.parse_args(argv)
    # each limit is named alone, with the value given (inf and nan would leave a student's process unbounded)
    if not (math.isfinite(args.timeout) and MIN_TIMEOUT_S <= args.timeout <= MAX_TIMEOUT_S):
        ap.error(f"--timeout must be a number of seconds between {MIN_TIMEOUT_S:.0f} and {MAX_TIMEOUT_S:.0f}, "
                 f"got {args.timeout:g}")
    if not 256 <= args.memory <= MAX_MEMORY_MB:
        ap.error(f"--memory must be between 256 and {MAX_MEMORY_MB} MB, got {args.memory}")
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.out is not None and not args.out.strip():        # Path("") is the current folder: the gradebook would land wherever one stood
        ap.error("--out must name a folder, got an empty name")
    if args.seed is not None and not 0 <= args.seed <= MAX_COUNT:
        # the graders take a seed in this range: any other would fail every item of every student
        ap.error(f"--seed must be an integer between 0 and {MAX_COUNT}, got {args.seed}")
    if args.gpu is not None:
        try:
            get_gpu(args.gpu)
        except (TypeError, ValueError) as exc:      # before any student: a wrong preset would fail every item
            ap.error(f"--gpu: {exc}")
    points = {}
    known = gradable_items()
    for p in args.points:
        item, _, n = p.partition("=")
        try:
            worth = float(n)
        except ValueError:
            ap.error(f"--points takes ITEM=N, got {p!r}")
        if item not in known:
            ap.error(f"--points: no item {item!r}; the items are {', '.join(known)}")
        if not (math.isfinite(worth) and worth >= 0):
            ap.error(f"--points: an item's points must be a finite number >= 0, got {p!r}")
        points[item] = worth
    if args.gradescope:
        if args.out is not None:        # it would be ignored, and the results land elsewhere without a word
            ap.error("--out does not go with --gradescope: its results.json goes where Gradescope reads it "
                     "(/autograder/results/, or the FLASHBOOK_GRADESCOPE_RESULTS file)")
        folder = Path(args.submissions or "/autograder/submission")
        if not folder.is_dir():
            ap.error(f"--gradescope: the submission folder {folder} does not exist or is not a folder")
        return _gradescope(args, points)
    if not args.submissions:
        ap.error("give the folder of submissions")
    try:
        subs = find_submissions(args.submissions)
    except (OSError, ValueError) as exc:
        ap.error(str(exc))
    if args.student:
        unknown = sorted(set(args.student) - {s.student for s in subs})
        if unknown:
            ap.error(f"no submission for {', '.join(unknown)} in {args.submissions}")
        subs = [s for s in subs if s.student in set(args.student)]
    out = Path(args.out or "grades")
    try:        # before anyone is graded: a gradebook that cannot be written would lose the whole run
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        ap.error(f"--out {out}: cannot make the output folder there ({exc.strerror or exc})")
    results, n = {}, len(subs)
    started = time.monotonic()

    def one(sub):
        return sub, grade_student(sub, timeout=args.timeout, memory_mb=args.memory, seed=args.seed, gpu=args.gpu)

    done = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        # progress as each student finishes (with --jobs a slow student holds back no one's line) ...
        for k, fut in enumerate(as_completed([pool.submit(one, sub) for sub in subs]), 1):
            sub, (rows, reports, secs) = fut.result()
            done[sub.student] = (rows, reports, secs)
            ok = sum(str(r["passed"]) == "True" for r in rows)
            print(f"[{k}/{n}] {sub.student}: {len(rows)} item(s), {ok} passed ({secs:.1f} s; "
                  f"{time.monotonic() - started:.1f} s in all)", file=sys.stderr, flush=True)
    results = {sub.student: done[sub.student] for sub in subs}      # ... the files in the students' order
    book = out / "gradebook.csv"
    kept = [r for r in read_gradebook(book) if r["student"] not in results] if args.student else []
    write_gradebook(book, kept + [r for rows, _, _ in results.values() for r in rows])
    for student, (rows, reports, secs) in results.items():
        write_json(out / "gradescope" / student / "results.json",
                   gradescope_results(rows, reports, points=points, execution_time=secs))
        (out / "reports").mkdir(parents=True, exist_ok=True)
        (out / "reports" / f"{student}.md").write_text(student_report(student, rows, reports), encoding="utf-8")
    graded = sum(len(r) for r, _, _ in results.values())
    kept_students = len({r["student"] for r in kept})
    print(f"gradebook: {book} ({graded} rows for {len(results)} student(s)"
          + (f" graded now; with the {len(kept)} rows of {kept_students} other student(s) kept, {len(kept) + graded} "
             "rows in all)" if kept else ")"), file=sys.stderr)
    return 0


def _gradescope(args, points) -> int:
    from .submissions import Submission

    folder = Path(args.submissions or "/autograder/submission")
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".py", ".ipynb", ".csv"))
    sub = Submission("submission", paths)
    rows, reports, secs = grade_student(sub, timeout=args.timeout, memory_mb=args.memory, seed=args.seed,
                                        gpu=args.gpu)
    target = Path(os.environ.get("FLASHBOOK_GRADESCOPE_RESULTS", "/autograder/results/results.json"))
    results = gradescope_results(rows, reports, points=points, execution_time=secs)
    if not rows:    # the student sees this: say what was looked for, not just "0 of 0"
        results["output"] = ("No file of this submission could be graded: a lab is a notebook or a .py file whose "
                             "name says its lab (lab3.py, lab7_cuda_fa2.ipynb) or that calls get_lab(...) or "
                             "get_cuda_lab(...); the exercises' answers are a .csv.")
    write_json(target, results)
    print(f"results: {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
