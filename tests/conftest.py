"""Shared fixtures of the unit tests, and the suite's tiers (tests/tiers.py) reported in its header and summary."""
import os
import resource

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Hypothesis: an example's wall time on a shared 2-core machine (two xdist workers, other builds beside them)
# says nothing about the code, so no per-example deadline and no too-slow health check (timing goals live in
# bench/). Explicit @settings(...) on a test still set its max_examples. HYPOTHESIS_PROFILE=default restores
# Hypothesis's own defaults.
settings.register_profile("flashbook", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "flashbook"))


def _make_qkv(n_q: int, n_k: int, d: int = 8, *, d_v: int | None = None, seed: int = 0):
    """Standard-normal Q (n_q, d), K (n_k, d), V (n_k, d_v or d), drawn in that order from
    ``np.random.default_rng(seed)`` (a one-row q is ``Q[0]``)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d)),
            rng.standard_normal((n_k, d if d_v is None else d_v)))


@pytest.fixture(scope="session")
def qkv():
    """Factory of random attention inputs: ``qkv(n_q, n_k, d=8, *, d_v=None, seed=0) -> (Q, K, V)``.

    Session-scoped (it holds no state), so hypothesis tests may use it too.
    """
    return _make_qkv


# The live widgets' prefetcher (flashbook.prefetch.Prefetcher) draws in the background for a reader; the
# tests switch it on where they test it.
os.environ.setdefault("FLASHBOOK_PREFETCH", "0")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``audit`` (full matrices: minutes of drawing) run only when a ``-m`` expression names the
    marker (``-m audit``); any other run, ``make unit`` and ``make test`` included, leaves them out."""
    if "audit" in (config.getoption("markexpr") or ""):
        return
    kept = [item for item in items if item.get_closest_marker("audit") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("audit") is not None])
        items[:] = kept


def pytest_report_header(config):
    from tiers import SEED

    return f"flashbook: sample seed {SEED} (SAMPLE_SEED); marks selected: {config.option.markexpr or 'all'}"


def _cpu_s() -> float:
    """CPU seconds of this process and of its children that ended (a test's subprocesses)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """The CPU seconds of each test's call (its own process and the subprocesses it waited for), kept in its
    report's user properties (pytest-xdist sends them to the main process) for :func:`pytest_terminal_summary`."""
    t0 = _cpu_s()
    yield
    item.user_properties.append(("cpu_s", _cpu_s() - t0))


_UNMARKED_SLOW: list = []


def pytest_runtest_logreport(report):
    if report.when == "call":
        cpu = dict(report.user_properties).get("cpu_s", 0.0)
        if cpu > _slow_cpu_s() and not {"slow", "audit", "browser"} & set(report.keywords):
            _UNMARKED_SLOW.append((cpu, report.nodeid))


def _slow_cpu_s() -> float:
    from tiers import SLOW_CPU_S

    return SLOW_CPU_S


def pytest_terminal_summary(terminalreporter):
    """Name the unit tests that took more than ``tiers.SLOW_CPU_S`` CPU seconds without a ``slow`` mark: they
    make ``make check``, the edit loop, slower for everyone (a CPU time, not a wall time, so a loaded machine
    does not add names)."""
    if _UNMARKED_SLOW:
        terminalreporter.section("unit tests to mark slow")
        terminalreporter.write_line(f"these took more than {_slow_cpu_s():.0f} CPU seconds and are not marked "
                                    "@pytest.mark.slow (make check runs them):")
        for cpu, nodeid in sorted(_UNMARKED_SLOW, reverse=True)[:20]:
            terminalreporter.write_line(f"  {cpu:6.1f} CPU-s  {nodeid}")
