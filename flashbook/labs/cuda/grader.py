"""The CUDA labs' grader: run a reader's ``@cuda.jit`` kernels in the simulator over a lab's shapes and say what
they got right.

``grade(lab, *kernels, **params)`` first rebuilds each kernel from its checked source
(:data:`cudalab.source.CUDA_PROFILE`: the Python numba-cuda compiles for a GPU, and only the arrays it is given, so
that the kernel cannot reach the grader, its inputs or its counters); a kernel the check refuses is not run, and the
report lists the findings. Then it runs the lab's host program (which allocates the outputs and launches the
reader's kernels, and the lab's own pre-pass or reduction where it has one) on random inputs of every shape, each
on a fresh :class:`cudalab.Device` whose blocks run in a shuffled order, and compares: the outputs with the float64
oracle, the counted global-memory traffic with the closed form (per array; fewer elements than the closed form is
fine), atomic operations, shared memory against the lab's budget, and the simulator's race and barrier findings.
A known mistake is named only when its signature is in the run: a rule on the measurements (an array read more
than the closed form reads it, the scratch array written, NaN only where a split is empty, ...) or, for mistakes
that only change the numbers, outputs equal to the named mistaken kernel's on the same inputs.

On a GPU the same kernels also run for real and are timed (:mod:`cudalab.gpu`).
"""
from __future__ import annotations

import inspect
import os
import secrets
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

import cudalab
from cudalab.source import KernelSourceError, kernels_from_text, rebuild_kernel
from cudalab.timing import modelled_time
from labcore.chip.kernel_source import code_cells
from labcore.checks import positive_int

from .definitions import CUDA_FEEDBACK, TOLERANCE, TOLERANCE_LARGE, get_cuda_lab
from .report import CudaReport, CudaShapeResult

__all__ = ["grade", "grade_text", "run_shape", "ShapeRun", "TIME_LIMIT"]

#: Seconds one launch may run in the simulator before it is stopped (the references take well under one on the
#: 2-core reference machine); ``FLASHBOOK_CUDA_TIME_LIMIT`` in the environment changes it (the class grader's tests).
TIME_LIMIT = float(os.environ.get("FLASHBOOK_CUDA_TIME_LIMIT", "60"))


@dataclass
class ShapeRun:
    """One shape's run: the device after it, the outputs read back (NaN where never written), the first launch
    failure (or None), the inputs (float64, before rounding to float32) and the launches."""

    device: object
    outputs: dict
    error: object
    inputs: dict
    launches: list


def _is_kernel(k) -> bool:
    return callable(getattr(k, "py_func", None))


def _params(lab, params):
    unknown = sorted(set(params) - set(lab.params))
    if unknown:
        raise TypeError(f"unknown parameter(s) {unknown} for lab {lab.label}; it takes {sorted(lab.params)}")
    out = {k: positive_int(params.get(k, v), k) for k, v in lab.params.items()}
    if lab.check_params is not None:
        lab.check_params(out)
    return out


def run_shape(lab, kernels, shape, *, seed: int, params: dict, order="shuffled") -> ShapeRun:
    """Run the lab's program with ``kernels`` on shape ``shape`` (an index into ``lab.shapes``) and random inputs.

    Args:
        lab: a CUDA lab item (key, label or :class:`~flashbook.labs.cuda.definitions.CudaLab`).
        kernels: the reader's kernels, in ``lab.kernels`` order.
        shape: int index into ``lab.shapes``.
        seed: int >= 0 (the inputs and the block order derive from it and the shape index).
        params: the launch parameters (already checked).
        order: the blocks' order (``cudalab.Device``'s ``order``).
    Returns:
        a :class:`ShapeRun`.
    Raises:
        TypeError/ValueError for a bad lab, shape or seed (the kernels' own failures are in the run).
    """
    lab = get_cuda_lab(lab)
    i = positive_int(shape, "shape", minimum=0, maximum=len(lab.shapes) - 1)
    seed = positive_int(seed, "seed", minimum=0)
    spec = lab.shapes[i]
    inputs = lab.inputs(np.random.default_rng([seed, i]), spec)
    dev = cudalab.Device(shared_budget=lab.shared_budget, local_budget=lab.local_budget,
                         max_threads=lab.max_threads, order=order, seed=seed + i, time_limit=TIME_LIMIT)
    for name, value in inputs.items():
        dev.upload(name, value)
    error = None
    try:
        lab.program(dev, list(kernels), spec, params)
    except (TypeError, ValueError) as exc:       # a kernel whose parameters do not match the lab's launch
        error = exc
    failed = next((rec.error for rec in dev.launches if rec.error is not None), None)
    error = error or failed
    outputs = {n: (dev.read(n).astype(np.float64) if n in dev else None) for n in lab.outputs}
    return ShapeRun(dev, outputs, error, inputs, list(dev.launches))


def _errors(outputs, expected):
    """Largest ``|got - ref| / (1 + |ref|)`` over the compared arrays (inf for a wrong NaN/inf or a missing array),
    and the names of arrays holding NaN or inf where the reference is finite."""
    worst, bad = 0.0, []
    for name, ref in expected.items():
        got = outputs.get(name)
        if got is None:
            return np.inf, [name]
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(same, 0.0, np.abs(got - ref) / (1.0 + np.abs(ref)))
        err = np.where(np.isnan(err), np.inf, err)
        if np.any(~np.isfinite(got) & np.isfinite(ref)):
            bad.append(name)
        worst = max(worst, float(err.max()) if err.size else 0.0)
    return worst, bad


def _failure_line(err) -> str:
    return f"{type(err).__name__}: {err}" if not isinstance(err, cudalab.KernelFailure) else str(err)


@lru_cache(maxsize=256)
def _mistake_outputs(lab_key, mistake, shape_index, seed, params):
    from .mistakes import MISTAKES

    lab = get_cuda_lab(lab_key)
    kernels = MISTAKES[lab.key][mistake]
    run = run_shape(lab, kernels, shape_index, seed=seed, params=dict(params), order="sequential")
    return None if run.error is not None else run.outputs


def _same(a, b):
    return all(a[k] is not None and b[k] is not None
               and np.allclose(a[k], b[k], rtol=1e-3, atol=1e-4, equal_nan=True) for k in a)


def _rules(lab, runs, results):
    """Keys of the named mistakes whose signature the runs show (see the module docstring)."""
    keys = set()
    for spec, run, res in zip(lab.shapes, runs, results):
        got, exp = res.traffic, res.expected
        reads = {n: got.get(n, {}).get("read", 0) for n in got}
        if lab.key == "cuda_softmax_online" and reads.get("S", 0) >= 2 * exp["S"]["read"]:
            keys.add("two_pass")
        if lab.key == "cuda_fa2":
            if reads.get("Q", 0) > exp.get("Q", {}).get("read", 0):
                keys.add("q_reread")
            if got.get("scratch", {}).get("write", 0):
                keys.add("s_to_global")
        if lab.key == "cuda_decoding" and reads.get("q", 0) > exp["q"]["read"]:
            keys.add("q_per_thread")
        if lab.key.startswith("cuda_backward"):
            plain = got.get("dQ", {})
            if lab.key.endswith("atomic") and plain.get("read", 0) and not res.atomics.get("dQ", 0):
                keys.add("dq_plain")
            if any(x["space"] == "global" and x["array"] in ("dQ", "dQ_part") for x in res.races):
                keys.add("dq_plain")
    if any(x["space"] == "shared" for r in results for x in r.races):
        keys.add("missing_barrier")
    if any(any("cuda.syncthreads()" in f and "reach" in f for f in r.findings) for r in results):
        keys.add("barrier_divergence")
    if any(r.shared_bytes > r.shared_budget for r in results):
        keys.add("over_budget")
    # the numbers point at a mistake only when nothing else went wrong: a race or a failure explains any number
    if any(r.races or r.findings or r.raised for r in results):
        return keys
    nonfinite = [any("NaN or inf" in n for n in res.notes) for res in results]
    kinds = [s.get("stress") for s in lab.shapes]
    # a kernel that never subtracts a maximum overflows even where the scores only rise; one that forgets its
    # running maximum overflows only where they fall from one tile to the next
    never = "rise" if "rise" in kinds else "swing"
    signatures = (("no_max", [k == never for k in kinds], [bool(k) for k in kinds]),
                  ("block_max", [k == "swing" for k in kinds], [k == "swing" for k in kinds]),
                  ("empty_nan", [lab.key == "cuda_decoding" and _has_empty_split(s) for s in lab.shapes],
                   [lab.key == "cuda_decoding" and _has_empty_split(s) for s in lab.shapes]))
    for key, must, may in signatures:
        # non-finite where the signature must show, and exact wherever it may not
        if any(n and m for n, m in zip(nonfinite, must)) and all(r.exact for r, m in zip(results, may) if not m):
            keys.add(key)
    if lab.key == "cuda_softmax_two_pass" or "rise" not in kinds:
        keys.discard("block_max")
    if lab.key.startswith("cuda_backward") and "no_max" in keys:     # the backward has no running maximum
        keys = (keys - {"no_max"}) | {"no_lse"}
    return keys


def _has_empty_split(shape) -> bool:
    chunk = -(-shape["N_k"] // shape["num_splits"])
    return chunk * (shape["num_splits"] - 1) >= shape["N_k"]


def _fingerprints(lab, runs, seed, params):
    from .mistakes import FINGERPRINTED

    keys = set()
    frozen = tuple(sorted(params.items()))
    for name in FINGERPRINTED.get(lab.key, ()):
        theirs = [_mistake_outputs(lab.key, name, i, seed, frozen) for i in range(len(lab.shapes))]
        if all(t is not None and _same(r.outputs, t) for r, t in zip(runs, theirs)):
            keys.add(name)
    return keys


def _signature_findings(lab, kernels) -> list:
    """One line per kernel whose parameters the lab's launch cannot fill: a different number of them than the
    lab's program passes. The line names the parameters the lab passes, as its reference kernel calls them."""
    out = []
    for name, k in zip(lab.kernels, kernels):
        try:
            have = list(inspect.signature(k.py_func).parameters.values())
        except (TypeError, ValueError):         # no signature to read: the source check says what is wrong
            continue
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in have):
            continue                            # the source check refuses *args and **kwargs with its own line
        want = lab.kernel_parameters(name)
        if len(have) != len(want):
            out.append(f"{name}: your kernel takes {_count(len(have), 'parameter')} "
                       f"({', '.join(p.name for p in have)}); lab {lab.label} launches it with "
                       f"{_count(len(want), 'argument')}: {name}({', '.join(want)})")
    return out


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _source_report(lab, params, findings, seed):
    return CudaReport(lab, False, float("inf"), [], params, feedback=[], seed=seed, source=list(findings))


def grade(lab, *kernels, seed: int | None = None, gpu="H100", **params) -> CudaReport:
    """Grade a reader's CUDA kernels on one lab item.

    Args:
        lab: key (``"cuda_fa2"``), label (``"7"``, ``"6b"``) or a CUDA lab item.
        kernels: the ``@cuda.jit`` kernels the lab asks for, in its order (``lab.kernels``: e.g. ``fa2_forward``;
            ``split_kernel, combine_kernel``).
        seed: seed of the random inputs (int >= 0). None (the default) draws a fresh one that the kernels cannot
            learn; the report shows the seed only when the caller fixed it.
        gpu: preset for the modelled time (default H100).
        params: the launch parameters the lab takes (``block_q``, ``block_kv``; ``threads``), default the lab's.
    Returns:
        a :class:`~flashbook.labs.cuda.report.CudaReport` (passed, errors, traffic against the closed form,
        shared memory, races, modelled time, named mistakes; or, for a source the check refuses or a kernel with
        more or fewer parameters than the lab passes it, its findings, which name those parameters);
        on a GPU also the measured time.
    Raises:
        TypeError/ValueError: an unknown lab, the wrong number of kernels, a function that is not a
        ``@cuda.jit`` kernel, unknown or bad parameters. What the kernels themselves do wrong is reported.
    """
    return _grade(lab, *kernels, seed=seed, gpu=gpu, rebuilt=False, **params)


def _grade(lab, *kernels, seed=None, gpu="H100", rebuilt: bool = False, **params) -> CudaReport:
    # rebuilt=True runs the kernels as given: only for kernels grade_text rebuilt from a file's text. It is not a
    # keyword of the public grade(), so a notebook cannot switch the source checks off.
    lab = get_cuda_lab(lab)
    if len(kernels) != len(lab.kernels):
        raise TypeError(f"lab {lab.label} grades {len(lab.kernels)} kernel(s), {', '.join(lab.kernels)}; got "
                        f"{len(kernels)}")
    for name, k in zip(lab.kernels, kernels):
        if not _is_kernel(k):
            raise TypeError(f"{name} must be a @cuda.jit kernel (decorate the function with @cuda.jit), got "
                            f"{type(k).__name__}")
    if not isinstance(rebuilt, bool):
        raise TypeError(f"rebuilt must be True or False, got {rebuilt!r}")
    params = _params(lab, params)
    fixed = seed is not None
    seed = positive_int(seed, "seed", minimum=0) if fixed else secrets.randbits(48)
    findings = _signature_findings(lab, kernels)
    if not rebuilt:
        built = []
        for name, k in zip(lab.kernels, kernels):
            try:
                built.append(rebuild_kernel(k))
            except KernelSourceError as exc:
                findings += [f"{name}: {f}" for f in exc.findings]
        kernels = tuple(built)
    if findings:
        return _source_report(lab, params, findings, seed if fixed else None)
    runs, results = [], []
    for i, spec in enumerate(lab.shapes):
        if runs and isinstance(runs[-1].error, cudalab.KernelTimeout):
            # a kernel that never ended on one shape would only wait out the limit again on the others
            closed = lab.expected(spec, params)
            results.append(CudaShapeResult(lab.shape_label(spec), np.inf, False, {}, closed["traffic"], {},
                                           closed["atomics"], 0, lab.shared_budget,
                                           raised="not run: the kernel did not finish an earlier shape", ran=False))
            continue
        run = run_shape(lab, kernels, i, seed=seed, params=params)
        expected = lab.oracle(run.inputs, spec)
        closed = lab.expected(spec, params)
        traffic, atomics, shared, local, races, findings = {}, {}, 0, 0, [], []
        for rec in run.launches:
            for name, v in rec.by_tensor().items():
                t = traffic.setdefault(name, {"read": 0, "write": 0})
                t["read"] += v["read"]
                t["write"] += v["write"]
            for name, n in rec.atomics.items():
                atomics[name] = atomics.get(name, 0) + n
            shared = max(shared, rec.shared_bytes)
            local = max(local, rec.local_bytes)
            races += [{"kind": r.kind, "space": r.space, "array": r.array, "line": r.line[1],
                       "other_line": r.other_line[1], "message": r.message()} for r in rec.races]
            findings += [f.message for f in rec.findings if f.kind != "shared"]
        error, bad = _errors(run.outputs, expected) if run.error is None else (np.inf, [])
        notes = [f"{n} holds NaN or inf where the reference is finite: an exp that overflowed, a 0 / 0, or an "
                 "element never written" for n in bad]
        tol = TOLERANCE_LARGE if spec.get("stress") else TOLERANCE
        results.append(CudaShapeResult(
            lab.shape_label(spec), error, error <= tol and run.error is None, traffic, closed["traffic"],
            atomics, closed["atomics"], shared, lab.shared_budget, local, races, findings,
            None if run.error is None else _failure_line(run.error), notes))
        runs.append(run)
    keys = _rules(lab, runs, results[:len(runs)])
    # a mistake recognised by its outputs is the reference with one change: it moves what the closed form moves
    if not keys and len(runs) == len(lab.shapes) and any(not r.exact for r in results) and all(
            r.raised is None and not (r.races or r.findings) and r.traffic == r.expected for r in results):
        keys |= _fingerprints(lab, runs, seed, params)
    time = None
    last = runs[-1]
    if len(runs) == len(lab.shapes) and last.error is None and last.launches:
        time = modelled_time(last.launches, gpu, flops=lab.flops(lab.shapes[-1], params))
    measured = None
    if not cudalab.simulator() and all(r.ok for r in results):
        from cudalab.gpu import time_program

        measured = time_program(lab, kernels, len(lab.shapes) - 1, seed=seed, params=params)
    passed = all(r.ok for r in results)
    return CudaReport(lab, passed, max(r.error for r in results), results, params, time, measured,
                      [(k, CUDA_FEEDBACK[k]) for k in sorted(keys)], seed if fixed else None)


def _constants(text: str) -> dict:
    """Top-level ``NAME = <int>`` assignments of a file's text (a notebook's code cells in order)."""
    import ast

    out = {}
    for cell in code_cells(text):
        try:
            tree = ast.parse(cell)
        except SyntaxError:
            continue
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, int) \
                    and not isinstance(stmt.value.value, bool):
                out[stmt.targets[0].id] = stmt.value.value
    return out


def grade_text(lab, text: str, *, filename: str = "<submission>", seed: int | None = None, gpu="H100") -> CudaReport:
    """Grade the lab's kernels as a file defines them (a ``.py`` file's text or a notebook's JSON): the kernels, the
    device functions they call and the constants they use are taken from the text and rebuilt
    (:func:`cudalab.source.kernels_from_text`) without running any of its other code; the launch parameters come
    from the file's constants named after them in capitals (``BLOCK_Q``, ``BLOCK_KV``, ``THREADS``), else the lab's
    defaults. A missing or refused kernel gives a report with its findings.

    Raises: TypeError/ValueError as :func:`grade` (a bad lab; parameters the file sets to what the lab cannot take
    are reported, not raised).
    """
    lab = get_cuda_lab(lab)
    if not isinstance(text, str):
        raise TypeError(f"text must be the file's text (a string), got {type(text).__name__}")
    try:
        code_cells(text)
    except ValueError as exc:       # a notebook JSON cannot read: the student's to fix, so a finding, not a crash
        return _source_report(lab, dict(lab.params), [f"{filename}: {exc}"], seed)
    consts = _constants(text)
    params = {k: consts[k.upper()] for k in lab.params if k.upper() in consts}
    try:
        kernels = kernels_from_text(text, lab.kernels, filename=filename)
    except KernelSourceError as exc:
        return _source_report(lab, dict(lab.params, **params), [str(f) for f in exc.findings], seed)
    try:
        return _grade(lab, *(kernels[n] for n in lab.kernels), seed=seed, gpu=gpu, rebuilt=True, **params)
    except (TypeError, ValueError) as exc:
        return _source_report(lab, dict(lab.params), [f"the file's launch parameters: {exc}"], seed)
