"""What ``make test`` costs, stage by stage (``make test-cost``): wall time and the machine's CPU seconds.

Each stage of ``make test`` (``lint``, ``unit``, ``nbval``, ``live``, ``browser-book``; the strict build is
``make book``'s) runs alone, one after the other, and is measured from ``/proc/stat``: the CPU time of the whole
machine (user, nice, system, interrupts) over the stage, so every process it starts counts (Chromium's renderers,
notebook kernels, xdist workers), which a parent's ``rusage`` misses. Idle time is what the stage left unused of
the machine's cores while it ran. Then ``make test`` itself, unless ``--stages-only``.

Why CPU seconds: ``make test`` runs two stages at a time and keeps both cores of the project's machine busy, so its
wall time is about the sum of the stages' CPU seconds divided by the cores; a goal of T minutes on a 2-core machine
is a budget of about ``2 * 60 * T`` CPU seconds. The same suite costs up to 2.3 times more on one day's machine than
another's (README, "How long things take"), so the script also times a fixed calibration workload (drawing one
explorer's figure, in this process) to compare runs made on different days.

Needs ``make book`` first (the browser stage reads ``_build/html``). Writes ``artifacts/suite_cost.json``.

Usage: python bench/suite_cost.py [--stages-only] [--stage NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("lint", "unit", "nbval", "live", "browser-book")


def machine_ticks() -> tuple[int, int]:
    """(busy, idle) clock ticks of the whole machine since boot, from the first line of ``/proc/stat``."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    return user + nice + system + irq + softirq, idle + iowait


def measure(command: list[str]) -> dict:
    """Run ``command`` in the repository root; its wall time (s), the machine's busy and idle CPU seconds over
    it, and its exit status. Raises ``FileNotFoundError`` where ``/proc/stat`` is missing (not Linux)."""
    hz = os.sysconf("SC_CLK_TCK")
    busy0, idle0 = machine_ticks()
    t0 = time.monotonic()
    rc = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - t0
    busy1, idle1 = machine_ticks()
    return {"command": " ".join(command), "rc": rc, "wall_s": round(wall, 1),
            "cpu_s": round((busy1 - busy0) / hz, 1), "idle_s": round((idle1 - idle0) / hz, 1)}


def calibration(repeats: int = 5) -> float:
    """Median CPU seconds (this process) to compute and draw ``io_vs_N`` at its defaults as a PNG: a fixed
    workload of the kind the suite spends most on (matplotlib drawing, numpy), to compare machines."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.path.insert(0, str(ROOT))
    from flashbook.explorer import get_explorer

    ex = get_explorer("io_vs_N")
    params = ex.defaults()
    ex.png(ex.compute(**params), params)                    # imports, fonts and caches warm
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(4):
            ex.png(ex.compute(**params), params)
        times.append(time.process_time() - t0)
    return round(sorted(times)[len(times) // 2], 3)


def _row(label: str, r: dict) -> str:
    """One line of the table: the label, wall time, CPU and idle seconds, and whether the command passed."""
    return (f"{label:<14} {r['wall_s']:>7.0f}s {r['cpu_s']:>8.0f} {r['idle_s']:>8.0f}  "
            f"{'passed' if r['rc'] == 0 else 'FAILED'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stages-only", action="store_true", help="measure the stages alone, not make test")
    ap.add_argument("--stage", action="append", choices=STAGES, help="measure only this stage (repeatable)")
    args = ap.parse_args(argv)
    if not (ROOT / "_build" / "html" / "index.html").exists():
        print("no _build/html: run 'make book' first", file=sys.stderr)
        return 2
    cores = os.cpu_count() or 1
    rows = {"cores": cores, "calibration_cpu_s": calibration(), "stages": {}}
    print(f"{cores} cores; calibration (io_vs_N drawn 4 times): {rows['calibration_cpu_s']:.2f} CPU-s")
    print(f"{'stage':<14} {'wall':>8} {'CPU-s':>8} {'idle':>8}  status")
    for stage in args.stage or STAGES:
        rows["stages"][stage] = measure(["make", "--no-print-directory", stage])
        print(_row(stage, rows["stages"][stage]), flush=True)
    total = sum(r["cpu_s"] for r in rows["stages"].values())
    print(f"{'stages, summed':<14} {sum(r['wall_s'] for r in rows['stages'].values()):>7.0f}s {total:>8.0f}"
          f"   (at least {total / cores / 60:.1f} min of make test on {cores} cores)")
    if not (args.stages_only or args.stage):
        rows["make_test"] = measure(["make", "--no-print-directory", "test"])
        print(_row("make test", rows["make_test"]))
    out = ROOT / "artifacts" / "suite_cost.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"written: {out.relative_to(ROOT)}")
    return 0 if all(r["rc"] == 0 for r in rows["stages"].values()) and rows.get("make_test", {}).get("rc", 0) == 0 \
        else 1


if __name__ == "__main__":
    sys.exit(main())
