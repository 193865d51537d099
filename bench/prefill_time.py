"""Time of one vectorised prefill_time call over six sequence lengths (the explorers' compute path).

Run: PYTHONPATH=. python bench/prefill_time.py. Target: well under 10 ms a call on the 2-core machine. Not a test:
tests never time.
"""
from __future__ import annotations

import time

import numpy as np

from labcore import prefill as P


def main() -> None:
    n = np.array([512, 1024, 2048, 4096, 8192, 16384])
    kw = dict(batch=16384 // n, heads=16, seqlen=n, head_dim=128, generation="fa3", causal=True,
              pass_="forward+backward")
    P.prefill_time("H100", **kw)
    runs = []
    for _ in range(20):
        t0 = time.perf_counter()
        P.prefill_time("H100", **kw)
        runs.append(time.perf_counter() - t0)
    print(f"prefill_time, 6 lengths, causal forward+backward: median {1e3 * np.median(runs):.2f} ms, "
          f"max {1e3 * max(runs):.2f} ms (target < 10 ms)")


if __name__ == "__main__":
    main()
