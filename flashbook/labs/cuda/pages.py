"""What the CUDA labs' pages show besides the grade: the reference kernel's counts beside the closed form, the
reference source as a reader can paste it, and the order dependence of the backward's atomic dQ."""
from __future__ import annotations

import inspect
import re

import numpy as np

from labcore.units import fmt_seconds, unit_label

from ...display import Table
from .definitions import get_cuda_lab
from .grader import run_shape

__all__ = ["reference_ledger", "solution_source", "order_dependence", "measured_beside_model"]


def reference_ledger(lab, shape_index: int = 0) -> Table:
    """A table of the reference kernels' global-memory counts on one of the lab's shapes (seed 0), per array,
    beside the closed form's, with the atomic adds and the shared memory of the largest block.

    Args:
        lab: CUDA lab key, label or item.
        shape_index: which of the lab's shapes (int, default the first).
    Returns:
        a :class:`flashbook.display.Table`.
    Raises:
        TypeError/ValueError: a bad lab or shape index; RuntimeError if the reference fails (a bug).
    """
    lab = get_cuda_lab(lab)
    params = dict(lab.params)
    run = run_shape(lab, list(lab.reference.values()), shape_index, seed=0, params=params)
    if run.error is not None:
        raise RuntimeError(f"the reference kernel of lab {lab.label} failed: {run.error}")
    spec = lab.shapes[shape_index]
    closed = lab.expected(spec, params)
    counted, atomics = {}, {}
    for rec in run.launches:
        for name, v in rec.by_tensor().items():
            c = counted.setdefault(name, [0, 0])
            c[0] += v["read"]
            c[1] += v["write"]
        for name, n in rec.atomics.items():
            atomics[name] = atomics.get(name, 0) + n
    rows = []
    for name in dict.fromkeys(list(closed["traffic"]) + list(counted) + list(atomics)):
        got = counted.get(name, [0, 0])
        exp = closed["traffic"].get(name, {"read": 0, "write": 0})
        rows.append((name, got[0], exp["read"], got[1], exp["write"], atomics.get(name, 0),
                     closed["atomics"].get(name, 0)))
    shared = max(rec.shared_bytes for rec in run.launches)
    return Table(rows, ("array", "read (counted)", "read (closed form)", "written (counted)",
                        "written (closed form)", "atomic adds (counted)", "atomic adds (closed form)"),
                 (None, ",d", ",d", ",d", ",d", ",d", ",d"),
                 caption=f"Lab {lab.label}, the reference kernels on {lab.shape_label(spec)} "
                         f"({', '.join(f'{k} = {v}' for k, v in params.items())}): elements of global memory, "
                         f"counted by the simulator and from the closed form; shared memory {shared:,} B per "
                         f"block of a {lab.shared_budget:,} B budget")


def measured_beside_model(lab) -> Table:
    """The reference kernels' time on the lab's last shape (the one the lab report models): the time measured on an
    H200 beside the report's model of the same launches on the H200 preset, launch by launch, with the part of the
    model that is the launch's work rather than its fixed per-launch charge.

    Args:
        lab: CUDA lab key, label or item.
    Returns:
        a :class:`flashbook.display.Table` (microseconds), one row per launch of the host program and a total.
    Raises:
        TypeError/ValueError: a bad lab, or no measured row for it; RuntimeError if the reference fails (a bug).
    Source: :func:`cudalab.timing.modelled_time`; :func:`labcore.measured.lab_measured` (bench/gpu/measure.py).
    """
    from cudalab.timing import TIME_DEFAULTS, modelled_time
    from labcore.measured import lab_measured

    lab = get_cuda_lab(lab)
    params = dict(lab.params)
    i = len(lab.shapes) - 1
    run = run_shape(lab, list(lab.reference.values()), i, seed=0, params=params)
    if run.error is not None:
        raise RuntimeError(f"the reference kernel of lab {lab.label} failed: {run.error}")
    model = modelled_time(run.launches, "H200", flops=lab.flops(lab.shapes[i], params))
    meas = lab_measured(lab.key)
    if len(meas["launches"]) != len(model["launches"]):
        raise ValueError(f"lab {lab.label}: {len(meas['launches'])} measured launches for "
                         f"{len(model['launches'])} modelled ones")
    fixed = TIME_DEFAULTS["kernel_overhead"]
    rows = [(f"{k + 1}. {m['name']}", m["ctas"], 1e6 * t, 1e6 * m["time"], 1e6 * (m["time"] - fixed), m["bound"])
            for k, (m, t) in enumerate(zip(model["launches"], meas["launches"]))]
    rows.append(("all launches", sum(m["ctas"] for m in model["launches"]), 1e6 * meas["seconds"],
                 1e6 * model["total"], 1e6 * (model["total"] - fixed * len(model["launches"])), ""))
    return Table(rows, ("launch", "CTAs", unit_label("measured, H200", "µs"), unit_label("model, H200 preset", "µs"),
                        unit_label("of which work", "µs"), "model's bound"),
                 (None, ",d", ".2f", ".2f", ".2f", None),
                 caption=f"Lab {lab.label}, the reference kernels on the lab's last shape, "
                         f"{lab.shape_label(lab.shapes[i])}: CUDA events on an H200 ({meas['date']}, median of "
                         f"{meas['repeats']}, the host's launch excluded) beside cudalab.timing.modelled_time on the "
                         f"H200 preset, whose time is a fixed {fmt_seconds(fixed, digits=0)} per launch (launch, prologue, "
                         "tail) plus the work")


def solution_source(lab) -> str:
    """The reference kernels' source as a reader pastes it into the kernel cell: the imports, the constants and
    the kernels of the lab's reference module (its docstring left out; the lab's provided kernels stay, since a
    module defines them once).

    Raises: TypeError/ValueError for a bad lab.
    """
    lab = get_cuda_lab(lab)
    module = inspect.getmodule(next(iter(lab.reference.values())).py_func)
    source = inspect.getsource(module)
    body = source.split('"""', 2)[2].lstrip("\n") if source.lstrip().startswith('"""') else source
    body = "\n".join(ln for ln in body.splitlines() if not ln.startswith("__all__"))
    return re.sub(r"\n{3,}(?=[A-Z])", "\n\n", body).rstrip() + "\n"


def order_dependence(lab, kernels=None, *, shape_index: int = 0, orders=("sequential", "reversed")) -> dict:
    """Run a lab item twice on the same inputs with the blocks in two orders and compare the outputs bit for bit.

    Args:
        lab: CUDA lab key, label or item.
        kernels: the kernels (default the reference's).
        shape_index: which shape (default the first).
        orders: the two block orders (``cudalab.Device`` orders).
    Returns:
        ``{"orders": orders, "identical": bool, "max_difference": {array: float}, "differing": {array: int}}``
        (the number of elements whose bits differ).
    Raises:
        TypeError/ValueError for a bad lab; RuntimeError if a run fails.
    """
    lab = get_cuda_lab(lab)
    kernels = list(lab.reference.values()) if kernels is None else list(kernels)
    runs = []
    for order in orders:
        run = run_shape(lab, kernels, shape_index, seed=0, params=dict(lab.params), order=order)
        if run.error is not None:
            raise RuntimeError(f"lab {lab.label} failed in order {order!r}: {run.error}")
        runs.append({n: run.device.read(n) for n in lab.outputs})
    a, b = runs
    diff = {n: float(np.max(np.abs(a[n].astype(np.float64) - b[n]))) for n in lab.outputs}
    bits = {n: int(np.count_nonzero(a[n].view(np.uint32) != b[n].view(np.uint32))) for n in lab.outputs}
    return {"orders": tuple(orders), "identical": not any(bits.values()), "max_difference": diff,
            "differing": bits}
