"""bench/suite_cost.py (``make test-cost``): a stage's cost is the machine's CPU time over it, children included."""
import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("suite_cost_bench", Path(__file__).parents[1] / "bench" / "suite_cost.py")
cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cost)


def test_a_child_processes_cpu_time_is_counted():
    """A grandchild's busy loop (a process the measured command starts, as Chromium or a kernel is) shows in the
    stage's CPU seconds (the machine's: other processes' time adds to it, never subtracts, so the bound holds under
    load); a sleep shows in the wall time."""
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass"
    busy = cost.measure(["sh", "-c", f'{sys.executable} -c "{spin}"'])
    assert busy["rc"] == 0 and busy["cpu_s"] >= 0.9 and busy["wall_s"] >= 0.9
    nap = cost.measure([sys.executable, "-c", "import time; time.sleep(1.0)"])
    assert nap["wall_s"] >= 1.0 and nap["rc"] == 0
    assert cost.measure(["false"])["rc"] == 1


def test_every_stage_is_a_make_target():
    """The stages measured are targets of the Makefile that make test runs."""
    makefile = (Path(__file__).parents[1] / "Makefile").read_text()
    for stage in cost.STAGES:
        assert f"\n{stage}: " in makefile, stage
    recipe = makefile.split("\ntest: ", 1)[1].split("\n\n", 1)[0]
    assert all(s in recipe for s in ("lint", "live", "nbval", "unit", "book-and-browser"))
