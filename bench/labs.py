"""Time to grade each lab's reference kernel and each named mistaken kernel (a student waits for each grade: 2 s at most).

Run: PYTHONPATH=. python bench/labs.py. Prints seconds per grade: the reference (its source rebuilt each time, as a
reader's kernel is) and each mistaken kernel (rebuilt once; a failing kernel also runs the lab's fingerprinted
mistakes on the same inputs). Not a test: tests never time.
"""
from __future__ import annotations

import time

from flashbook.labs import LABS, grade
from flashbook.labs.grader import _grade
from flashbook.labs.mistakes import mistake_functions
from flashbook.labs.solutions import lab5_flash_decoding


def _time(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    worst = 0.0
    for key, lab in LABS.items():
        kw = {"choose_splits": lab5_flash_decoding.choose_splits} if key == "flash_decoding" else {}
        for name in lab.mistakes:                     # warm the rebuilt mistakes (cached for a session)
            mistake_functions(key, name)
        rows = [("reference", lambda: grade(lab, lab.reference, seed=1, **kw))]
        rows += [(name, lambda name=name: _grade(lab, mistake_functions(key, name)["kernel"], seed=1, rebuilt=True,
                                               **kw)) for name in lab.mistakes]
        for name, run in rows:
            t = _time(run)
            worst = max(worst, t)
            print(f"lab {lab.number} {key:15s} {name:16s} {t:6.3f} s")
    print(f"slowest grade: {worst:.3f} s (budget 2 s)")


if __name__ == "__main__":
    main()
