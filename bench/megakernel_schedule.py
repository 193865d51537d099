"""What the megakernel event loop costs the three §8 explorers (run by hand, never by the tests).

The megakernel model is a plain Python loop over instructions (:func:`labcore.megakernel_schedule`), cached by its
arguments. This prints, per model, the compute of one slider move with an empty cache (every schedule computed)
and with the cache warm (a setting seen before), in milliseconds, best of ``REPEATS``.

Run: ``PYTHONPATH=. python bench/megakernel_schedule.py``.
"""
from __future__ import annotations

import time

from labcore import forward_timeline
from labcore.forward_timeline import timeline
from labcore.megakernel import mode_sensitivity

REPEATS = 3


def best_ms(f, *, cold: bool) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        if cold:
            forward_timeline._schedule.cache_clear()   # noqa: SLF001  (a benchmark may empty the cache)
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best


def main() -> None:
    for model in ("Llama-3.2-1B", "Llama-3.1-8B"):
        cases = {
            "timeline explorer (megakernel lanes)": lambda: timeline(model, "H100", mode="megakernel", decompose=False),
            "breakdown explorer (3 schedules)": lambda: timeline(model, "H100", mode="megakernel"),
            "sensitivity explorer (11 schedules)": lambda: mode_sensitivity(model, "H100"),
        }
        for what, f in cases.items():
            print(f"{model:14s} {what:40s} cold {best_ms(f, cold=True):8.1f} ms   warm {best_ms(f, cold=False):8.1f} ms")


if __name__ == "__main__":
    main()
