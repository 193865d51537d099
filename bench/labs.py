"""Time to grade each lab's reference kernel and each named mistaken kernel (a student waits for each grade: 2 s at most).

Run: PYTHONPATH=. python bench/labs.py. Prints seconds per grade (first call, without the cached mistake runs,
and again). Not a test: tests never time.
"""
from __future__ import annotations

import time

import labcore
from flashbook.labs import LABS, grade
from flashbook.labs.grader import _mistake_outputs


def _time(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    def best(gpu, **shape):
        return labcore.best_num_splits(gpu, **shape)
    worst = 0.0
    for key, lab in LABS.items():
        kw = {"choose_splits": best} if key == "flash_decoding" else {}
        for name, kernel in [("reference", lab.reference), *lab.mistakes.items()]:
            _mistake_outputs.cache_clear()
            cold = _time(lambda: grade(lab, kernel, **kw))
            warm = _time(lambda: grade(lab, kernel, **kw))
            worst = max(worst, cold)
            print(f"lab {lab.number} {key:15s} {name:16s} cold {cold:6.3f} s   warm {warm:6.3f} s")
    print(f"slowest grade: {worst:.3f} s (budget 2 s)")


if __name__ == "__main__":
    main()
