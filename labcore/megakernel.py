"""Batch-1 decode as a timeline: many small kernels versus one persistent megakernel (lecture §7-§8).

Sources: B. Spector, J. Juravsky, S. Sul, O. Dugan, D. Lim, D. Fu, S. Arora, C. Re (Hazy Research),
"Look Ma, No Bubbles! Designing a Low-Latency Megakernel for Llama-1B", blog post, 2025-05-27, and its
code (HazyResearch/Megakernels, Llama-1B demo: 16-row matrix-vector blocks, 13 shared-memory pages of
16 KiB, counters in global memory); lecture 11 §8.3 for the timeline model.

The model lives in two modules: :mod:`labcore.forward_work` (the work of one forward pass,
:func:`~labcore.forward_work.work_items`, and the assumptions, :data:`~labcore.forward_work.TIMELINE_DEFAULTS` with
:data:`~labcore.forward_work.TIMELINE_USED_BY`) and :mod:`labcore.forward_timeline`
(:func:`~labcore.forward_timeline.timeline`: ``mode="multi-kernel"``, kernel after kernel with launch gaps,
prologues and tails; ``mode="megakernel"``, an event loop over the instructions dealt to the SMs,
:func:`~labcore.forward_timeline.megakernel_schedule`). This module compares the two: the stall back-of-envelope
(:func:`stall_bound_throughput`), both modes at one setting (:func:`compare_modes`), one knob at a time
(:func:`mode_sensitivity`).

All times are seconds, bytes are bytes, bandwidths bytes/s. Wave arithmetic lives in :mod:`labcore.waves`;
the HBM count of fused softmax (§7) in :func:`labcore.hbm.softmax_fusion_io`.
"""
from __future__ import annotations

import numbers

import numpy as np

from .checks import positive_float, positive_int
from .forward_timeline import resolved_timeline
from .forward_work import resolve_assumptions
from .forward_work import timeline_gpu as _check_gpu
from .models import get_model

__all__ = ["stall_bound_throughput", "compare_modes", "mode_sensitivity", "SENSITIVITY_KNOBS"]

# ---------------------------------------------------------------------------------------------------
# The stall back-of-envelope (§8.1)
# ---------------------------------------------------------------------------------------------------


def stall_bound_throughput(ideal_time: float, num_kernels: int, stall: float) -> float:
    """Forward passes per second when each of ``num_kernels`` kernels adds ``stall`` seconds to an
    ``ideal_time`` (seconds) forward: ``1 / (ideal_time + num_kernels x stall)``.

    The Hazy post's back-of-envelope: 7 kernels x 16 layers x ~5 us on top of reading Llama-1B's
    weights on an H100 caps decode at ~770 forward passes per second.
    Raises: ValueError for non-positive ``ideal_time`` or negative ``stall``.
    """
    ideal_time = positive_float(ideal_time, "ideal_time")
    num_kernels = positive_int(num_kernels, "num_kernels", minimum=0)
    stall = positive_float(stall, "stall", allow_zero=True)
    return 1.0 / (ideal_time + num_kernels * stall)


# ---------------------------------------------------------------------------------------------------
# Comparisons and sensitivity (lecture §8.3, code 05 demo 4)
# ---------------------------------------------------------------------------------------------------


def compare_modes(model="Llama-3.2-1B", gpu="H100", **assumptions) -> dict:
    """Both modes at the same assumptions.

    Returns:
        dict with ``multi`` and ``mega`` (:class:`~labcore.forward_timeline.Timeline`), ``speedup`` (multi / mega
        total), ``util_multi``, ``util_mega`` (fractions) and ``util_gain`` (percentage points).
    Raises:
        as :func:`~labcore.forward_timeline.timeline`.
    """
    model, gpu, a = get_model(model), _check_gpu(gpu), resolve_assumptions(**assumptions)
    mk = resolved_timeline(model, gpu, "multi-kernel", a)
    mg = resolved_timeline(model, gpu, "megakernel", a)
    return {"multi": mk, "mega": mg, "speedup": mk.total / mg.total,
            "util_multi": mk.bandwidth_utilization, "util_mega": mg.bandwidth_utilization,
            "util_gain": 100 * (mg.bandwidth_utilization - mk.bandwidth_utilization)}


#: The knobs varied one at a time by :func:`mode_sensitivity`, each over a range around its default
#: (half to double for times; 0.8-0.95 for the bandwidth efficiency: streaming kernels measure ~90% of
#: the quoted peak and never 100%).
SENSITIVITY_KNOBS: dict = {
    "prologue": (0.5e-6, 1.0e-6, 2.0e-6),
    "small_kernel": (1.0e-6, 2.0e-6, 4.0e-6),
    "sync": (0.5e-6, 1.0e-6, 2.0e-6),
    "instruction_overhead": (0.25e-6, 0.5e-6, 1.0e-6),
    "bandwidth_efficiency": (0.8, 0.9, 0.95),
}


def mode_sensitivity(model="Llama-3.2-1B", gpu="H100", knobs: dict | None = None, **assumptions) -> dict:
    """Vary each knob one at a time (others at their defaults) and record both modes.

    Args:
        model, gpu: presets.
        knobs: ``{name: values}`` (default :data:`SENSITIVITY_KNOBS`).
        **assumptions: fixed overrides applied to every run.
    Returns:
        dict: for each knob, a dict of arrays ``values``, ``multi``, ``mega``, ``speedup`` and
        ``util_gain`` (percentage points).
    Raises:
        ValueError: as :func:`~labcore.forward_timeline.timeline`, when a knob is also given in ``assumptions``, or
            has no values.
        TypeError: ``knobs`` is not a dict, or a knob value is not a number.
    Source: lecture §8.3 (code 05, demo 4): the megakernel stays 1.3-1.5x faster, +20-29 points.
    """
    knobs = SENSITIVITY_KNOBS if knobs is None else knobs
    if not isinstance(knobs, dict) or not knobs:
        raise TypeError(f"knobs must be a non-empty dict {{name: values}}, got {knobs!r}")
    model, gpu = get_model(model), _check_gpu(gpu)
    runs = []                                                  # (knob, resolved assumptions) in order
    for name, values in knobs.items():
        if name in assumptions:
            raise ValueError(f"knob {name!r} is varied; do not also fix it in assumptions")
        if not isinstance(values, (tuple, list, np.ndarray)) or len(values) == 0:
            raise ValueError(f"knob {name!r} needs a non-empty tuple of values, got {values!r}")
        if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) for v in values):
            raise TypeError(f"knob {name!r}: every value must be a number, got {tuple(values)!r}")
        runs += [(name, resolve_assumptions(**{**assumptions, name: v})) for v in values]
    multi_tl = [resolved_timeline(model, gpu, "multi-kernel", a) for _, a in runs]
    multi = np.array([t.total for t in multi_tl])
    ideal = np.array([t.ideal for t in multi_tl])                 # both modes read the same bytes
    mega = np.array([resolved_timeline(model, gpu, "megakernel", a, decompose=False).total for _, a in runs])
    out = {}
    for name, values in knobs.items():
        sel = np.array([n == name for n, _ in runs])
        mk, mg, idl = multi[sel], mega[sel], ideal[sel]
        out[name] = {"values": np.array(values, dtype=float), "multi": mk, "mega": mg, "speedup": mk / mg,
                     "util_gain": 100 * (idl / mg - idl / mk)}
    return out


# ---------------------------------------------------------------------------------------------------
# The quantities the book's §8 quotes
# ---------------------------------------------------------------------------------------------------

_US = 1e-6
