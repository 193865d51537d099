"""The class grader on thirty made-up submissions (correct, mistaken, crashing, endless, cheating, notebooks,
exercise answers): wall time, seconds per student, and the rows it wrote.

Run: python bench/grade_class.py [--students 30] [--jobs N] (``make bench`` runs it). Not a test: tests never
time. The endless kernel waits out the simulator's launch time limit (``FLASHBOOK_CUDA_TIME_LIMIT``, 20 s here).
"""
from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time
from pathlib import Path

from flashbook.grading import cli
from flashbook.grading.demo import make_class


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    args = ap.parse_args(argv)
    os.environ.setdefault("FLASHBOOK_CUDA_TIME_LIMIT", "20")
    with tempfile.TemporaryDirectory() as tmp:
        kinds = make_class(Path(tmp) / "submissions", args.students)
        start = time.monotonic()
        cli.main([str(Path(tmp) / "submissions"), "--out", str(Path(tmp) / "grades"), "--jobs", str(args.jobs)])
        wall = time.monotonic() - start
        with open(Path(tmp) / "grades" / "gradebook.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    passed = sum(r["passed"] == "True" for r in rows)
    print(f"class grader: {len(kinds)} students, {len(rows)} rows ({passed} passed) in {wall:.0f} s with "
          f"{args.jobs} job(s): {wall / len(kinds):.1f} s a student")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
