"""The one sweep of the interactive figures (explorers), used by ``tests/test_explorers.py``.

:func:`sweep` runs an explorer at the corners of its live slider ranges through ``compute`` and ``draw``
and checks what every explorer must satisfy (a frame budget, finite data, a figure with data), plus the
explorer's own checks from :data:`CHECKS` (a section's invariants: positive times, finite breakdowns). ``make
audit`` computes and draws every corner; ``make test`` a representative share (:func:`corners_to_check`).
A section's test module adds its explorer's invariants to :data:`CHECKS` here instead of writing its own loop.
"""
from __future__ import annotations

import numbers

import numpy as np

from tiers import pick

#: Most frames one explorer may precompute for the static book (page weight; ``flashbook.player.MAX_FRAMES`` is the
#: hard limit of the player itself).
STATIC_FRAME_BUDGET = 48


def finite(x) -> bool:
    """True when every number in ``x`` (nested dicts, lists, tuples, arrays, dataclasses) is finite."""
    if isinstance(x, dict):
        return all(finite(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(finite(v) for v in x)
    if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.number):
        return bool(np.all(np.isfinite(x)))
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        return bool(np.isfinite(x))
    return True


def _positive_finite(arrays) -> None:
    for a in arrays:
        a = np.asarray(a, dtype=float)
        assert np.all(np.isfinite(a)) and np.all(a > 0), a


def _timelines_ok(data, params) -> None:
    """Megakernel explorers: every timeline has a finite positive total and finite causes; sensitivity
    speedups are finite."""
    tls = [data.get("multi"), data.get("mega")] + [t for _, t in data.get("bars", [])]
    for tl in tls:
        if tl is not None:
            assert np.isfinite(tl.total) and tl.total > 0, params
            assert all(np.isfinite(v) for v in tl.breakdown().values()), params
    for d in data.get("sens", {}).values():
        assert np.all(np.isfinite(d["speedup"])), params


def _flash_ok(data, params) -> None:
    """Flash explorers: every float array of the data is finite."""
    for v in (data.values() if isinstance(data, dict) else []):
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            assert np.all(np.isfinite(v)), params


def _sched_dq_bits_ok(data, params) -> None:
    """§5b: the fixed order gives one dQ, the atomic orders at least one, differences are rounding only."""
    assert data["distinct_det"] == 1 <= data["distinct_atomic"] <= data["trials"], params
    assert 0 <= data["rel_diff"] < 1e-5, params


def _sched_causal_ok(data, params) -> None:
    """§5b: no order beats the lower bound, LPT never loses to the launch order."""
    for s in data["schedules"].values():
        assert s.makespan >= s.lower_bound - 1e-9 and s.ratio >= 1 - 1e-12, params
    assert data["schedules"]["lpt"].makespan <= data["schedules"]["launch"].makespan + 1e-9, params


#: Per-explorer invariants beyond :func:`finite` (name -> check(data, params) raising AssertionError).
CHECKS = {
    "megakernel_timeline": _timelines_ok,
    "megakernel_breakdown": _timelines_ok,
    "megakernel_sensitivity": _timelines_ok,
    "decode_occupancy": lambda data, p: _positive_finite([[e.total, e.cta_time] for e, _ in data.values()]),
    "decode_splits": lambda data, p: _positive_finite([data["total"]]),
    "decode_vs_measured": lambda data, p: _positive_finite([data["model_fd"], data["refined_fd"], data["model_fa2"]]),
    "decode_speedup": lambda data, p: _positive_finite([data["speedup"]]),
    "sched_dq_bits": lambda data, p: _sched_dq_bits_ok(data, p),
    "sched_dq_chain": lambda data, p: _positive_finite([data[k] for k in data["designs"]]),
    "sched_causal": lambda data, p: _sched_causal_ok(data, p),
    "sched_varlen": lambda data, p: _positive_finite([data["savings"]["flops_saved"], data["savings"]["bytes_saved"]]),
}


def check_for(name: str):
    """The explorer's own invariant from :data:`CHECKS` (flash explorers share :func:`_flash_ok`), or None."""
    if name.startswith("flash_"):
        return _flash_ok
    return CHECKS.get(name)


def corners_to_check(ex) -> tuple[list[dict], list[dict]]:
    """``make test``'s share of ``ex``'s corners: ``(computed, drawn)``.

    Computed (finite data, the explorer's own invariants): the first and the last corner, the first corner of
    each figure set-up (each value of the explorer's ``layout_key``), and four more drawn at random (seeded:
    :mod:`tiers`). Drawn: the first and the last corner and the first of each set-up, the corners where a
    figure's layout can change (a set-up of its own, or the extremes of every range at once); the rest is content
    drawn into the same axes."""
    corners = list(ex.corners())
    firsts = {}
    for c in corners:
        firsts.setdefault(repr(ex._layout(c)), c)
    drawn = [c for c in corners if c is corners[0] or c is corners[-1] or c in firsts.values()]
    computed = pick(corners, keep=drawn, extra=4, label=f"corners of {ex.name}")
    return computed, drawn


def sweep(ex, *, png_at_ends: bool = True, every_corner: bool = True) -> list[dict]:
    """Run explorer ``ex`` at every corner of its live slider ranges (``every_corner``, ``make audit``) or at
    :func:`corners_to_check`'s share of them (``make test``); return the corners computed.

    Asserts: 1 <= frames <= :data:`STATIC_FRAME_BUDGET`; finite data and the explorer's own check at every
    corner computed; a figure with axes and data at every corner drawn; and, with ``png_at_ends``, a PNG (what a
    live slider move shows) at the first and last corner.
    """
    assert 1 <= ex.n_frames() <= STATIC_FRAME_BUDGET, f"{ex.name}: {ex.n_frames()} static frames"
    check = check_for(ex.name)
    corners = list(ex.corners())
    computed, drawn = (corners, corners) if every_corner else corners_to_check(ex)
    for params in computed:
        data = ex.compute(**params)
        assert finite(data), f"{ex.name}: non-finite data at {params}"
        if check is not None:
            check(data, params)
        if params in drawn:
            fig = ex.draw(data, **params)
            assert fig.axes, f"{ex.name}: empty figure at {params}"
            assert any(ax.has_data() for ax in fig.axes), f"{ex.name}: no data drawn at {params}"
    if png_at_ends:
        for params in (corners[0], corners[-1]):
            assert ex.png(ex.compute(**params), params)[:8] == b"\x89PNG\r\n\x1a\n"
    return computed


__all__ = ["STATIC_FRAME_BUDGET", "CHECKS", "finite", "check_for", "corners_to_check", "sweep"]
