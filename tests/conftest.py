"""Shared fixtures of the unit tests."""
import os

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
