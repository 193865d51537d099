"""Seconds to grade each CUDA lab item in numba-cuda's simulator: the reference kernels and each named mistake
(the budget: 10 s a grade on the 2-core reference machine). Also the simulator's speed: CUDA threads' element
accesses per second in the FlashAttention-2 reference.

Run: python bench/cuda_labs.py (``make bench`` runs it). Prints one line per grade and the slowest. Not a test:
tests never time.
"""
from __future__ import annotations

import time

from flashbook.labs.cuda import CUDA_LABS, grade
from flashbook.labs.cuda.grader import _mistake_outputs
from flashbook.labs.cuda.mistakes import MISTAKES

#: Seconds one grade may take in the simulator.
BUDGET = 10.0


def _time(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    worst = (0.0, "")
    for key, lab in CUDA_LABS.items():
        for name, kernels in [("reference", tuple(lab.reference.values())), *MISTAKES.get(key, {}).items()]:
            _mistake_outputs.cache_clear()
            cold, report = _time(lambda: grade(lab, *kernels, seed=0))
            moved = sum(s.moved for s in report.shapes)
            print(f"lab {lab.label:3s} {key:28s} {name:17s} {cold:6.2f} s   ({moved:,} elements counted, "
                  f"{'passed' if report.passed else 'not yet'})")
            worst = max(worst, (cold, f"lab {lab.label} {name}"))
    print(f"slowest grade: {worst[0]:.2f} s ({worst[1]}; budget {BUDGET:.0f} s)")


if __name__ == "__main__":
    main()
