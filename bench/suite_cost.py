"""What ``make test`` costs, stage by stage (``make test-cost``): wall time and CPU seconds.

Each stage of ``make test`` (``lint``, ``unit``, ``nbval``, ``live``, ``browser-book``; the strict build is
``make book``'s) runs alone, one after the other, then ``make test`` itself (unless ``--stages-only``).

Two CPU counts per stage:

- ``cpu_s``, the stage's own: every process it starts (Chromium's renderers, notebook kernels, xdist workers,
  a kernel's prefetch helper, even one that outlives its parent) runs in a control group of its own, whose CPU
  accounting (cgroup v1 ``cpuacct.usage``, else v2 ``cpu.stat``) counts them all and nothing else, so other
  work on a shared machine does not inflate it. Where no control group can be made (not root, not Linux), it is
  the machine's (below), and the table says so.
- ``machine_cpu_s``, the whole machine's busy time over the stage (``/proc/stat``: user, nice, system,
  interrupts); the difference is what else ran meanwhile (``others_cpu_s``), which the table shows as the load.

Idle time is what the stage left unused of the machine's cores while it ran. Processes a stage leaves running
after it ends are named and stopped (a stage must clean up after itself).

Why CPU seconds: ``make test`` runs two stages at a time and keeps both cores of the project's machine busy, so its
wall time is about the sum of the stages' CPU seconds divided by the cores; a goal of T minutes on a 2-core machine
is a budget of about ``2 * 60 * T`` CPU seconds. The same suite costs up to 2.3 times more on one day's machine than
another's (README, "How long things take"), so the script also times a fixed calibration workload (drawing one
explorer's figure, in this process) to compare runs made on different days.

Needs ``make book`` first (the browser stage reads ``_build/html``). Writes ``artifacts/suite_cost.json`` and each
command's output to ``artifacts/suite_cost/<target>.log``.

Usage: python bench/suite_cost.py [--stages-only] [--stage NAME ...] [--target NAME ...] [--durations N]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("lint", "unit", "nbval", "live", "browser-book")
#: Where a control group with CPU accounting can be made: cgroup v1's cpuacct hierarchy, else the v2 one.
CGROUP_ROOTS = (Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))


def machine_ticks() -> tuple[int, int]:
    """(busy, idle) clock ticks of the whole machine since boot, from the first line of ``/proc/stat``."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    return user + nice + system + irq + softirq, idle + iowait


class CpuGroup:
    """A control group of its own for one measured command: its processes' CPU seconds, and who is left in it.

    cgroup v1 (``cpuacct.usage``, nanoseconds) or v2 (``cpu.stat`` ``usage_usec``, kept in every v2 group with
    or without the cpu controller). :meth:`make` returns None where none can be made (not root, no cgroupfs)."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def make(cls) -> "CpuGroup | None":
        for root in CGROUP_ROOTS:
            if not ((root / "cpuacct.usage").exists() or (root / "cgroup.procs").exists()
                    and root.name != "cpuacct" and _is_cgroup2(root)):
                continue
            try:
                path = Path(tempfile.mkdtemp(prefix="suite-cost-", dir=root))
            except OSError:
                continue
            group = cls(path)
            if group.cpu_s() is not None:
                return group
            group.remove()
        return None

    def cpu_s(self) -> float | None:
        """CPU seconds used so far by every process that ran in the group (exited ones included)."""
        try:
            if (self.path / "cpuacct.usage").exists():
                return int((self.path / "cpuacct.usage").read_text()) / 1e9
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            return None
        return None

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def stop_leftovers(self) -> list[str]:
        """Stop the processes still in the group (the measured command started them and left them running):
        SIGTERM, then SIGKILL after 5 s; returns their command lines."""
        left = []
        for pid in self.pids():
            try:
                left.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                            .decode(errors="replace").strip()[:160])
                os.kill(pid, signal.SIGTERM)
            except (OSError, ProcessLookupError):
                pass
        deadline = time.monotonic() + 5
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def _is_cgroup2(path: Path) -> bool:
    return (path / "cgroup.controllers").exists()


def measure(command: list[str], log: Path | None = None, env: dict | None = None) -> dict:
    """Run ``command`` in the repository root; its wall time (s), its own CPU seconds (``cpu_s``: every
    process it started, from a control group of its own where one can be made, else the machine's), the
    machine's busy and idle CPU seconds over it, the processes it left running (stopped here) and its exit
    status. Its output goes to ``log`` (else nowhere); ``env`` replaces the environment. Raises ``FileNotFoundError`` where ``/proc/stat`` is missing (not Linux)."""
    hz = os.sysconf("SC_CLK_TCK")
    group = CpuGroup.make()
    if group is not None:   # the command joins the group before it starts, so everything it starts is in it
        command = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(group.path), *command]
    busy0, idle0 = machine_ticks()
    t0 = time.monotonic()
    with open(log or os.devnull, "w") as out:
        rc = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    wall = time.monotonic() - t0
    busy1, idle1 = machine_ticks()
    machine = (busy1 - busy0) / hz
    row = {"command": " ".join(command[4:] if group else command), "rc": rc, "wall_s": round(wall, 1),
           "machine_cpu_s": round(machine, 1), "idle_s": round((idle1 - idle0) / hz, 1),
           "cpu_from": "cgroup" if group else "machine"}
    if group is not None:
        own = group.cpu_s() or 0.0
        row["left_running"] = group.stop_leftovers()
        group.remove()
    else:
        own = machine
    row["cpu_s"] = round(own, 1)
    row["others_cpu_s"] = round(max(0.0, machine - own), 1)
    return row


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
    """One line of the table: the label, wall time, own CPU seconds, what else the machine ran meanwhile (CPU-s),
    the idle CPU seconds, and whether the command passed (and what it left running)."""
    left = r.get("left_running") or []
    return (f"{label:<14} {r['wall_s']:>7.0f}s {r['cpu_s']:>8.0f} {r.get('others_cpu_s', 0):>8.0f} "
            f"{r['idle_s']:>8.0f}  {'passed' if r['rc'] == 0 else 'FAILED'}"
            + (f"; left {len(left)} processes running (stopped): {left[:3]}" if left else ""))


def _load() -> str:
    """The machine's load averages over 1, 5 and 15 minutes (``/proc/loadavg``), as ``uptime`` prints them."""
    try:
        return ", ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stages-only", action="store_true", help="measure the stages alone, not make test")
    ap.add_argument("--stage", action="append", choices=STAGES, help="measure only this stage (repeatable)")
    ap.add_argument("--target", action="append", default=[],
                    help="measure this make target too, after the stages (repeatable: check, audit)")
    ap.add_argument("--durations", type=int, default=0, metavar="N",
                    help="pytest's N slowest tests in each stage's log (PYTEST_ADDOPTS=--durations=N)")
    args = ap.parse_args(argv)
    if not (ROOT / "_build" / "html" / "index.html").exists():
        print("no _build/html: run 'make book' first", file=sys.stderr)
        return 2
    cores = os.cpu_count() or 1
    rows = {"cores": cores, "calibration_cpu_s": calibration(), "stages": {}, "targets": {}}
    print(f"{cores} cores; calibration (io_vs_N drawn 4 times): {rows['calibration_cpu_s']:.2f} CPU-s")
    print(f"{'stage':<14} {'wall':>8} {'CPU-s':>8} {'others':>8} {'idle':>8}  status   "
          "(CPU-s: the stage's own processes; others: what else the machine ran meanwhile)")
    logs = ROOT / "artifacts" / "suite_cost"
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if args.durations:
        env["PYTEST_ADDOPTS"] = (env.get("PYTEST_ADDOPTS", "") + f" --durations={args.durations}").strip()

    def run(target):
        return measure(["make", "--no-print-directory", target], logs / f"{target}.log", env)

    for stage in args.stage or STAGES:
        load = _load()
        rows["stages"][stage] = {**run(stage), "load_before": load}
        print(_row(stage, rows["stages"][stage]) + f"   (load before: {load})", flush=True)
    total = sum(r["cpu_s"] for r in rows["stages"].values())
    print(f"{'stages, summed':<14} {sum(r['wall_s'] for r in rows['stages'].values()):>7.0f}s {total:>8.0f}"
          f"   (at least {total / cores / 60:.1f} min of make test on {cores} cores)")
    targets = list(args.target) + ([] if (args.stages_only or args.stage) else ["test"])
    for target in targets:
        load = _load()
        rows["targets"][target] = {**run(target), "load_before": load}
        print(_row(f"make {target}", rows["targets"][target]) + f"   (load before: {load})", flush=True)
    if "test" in rows["targets"]:
        rows["make_test"] = rows["targets"]["test"]
    out = ROOT / "artifacts" / "suite_cost.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"written: {out.relative_to(ROOT)}")
    ok = [r["rc"] == 0 for r in (*rows["stages"].values(), *rows["targets"].values())]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
