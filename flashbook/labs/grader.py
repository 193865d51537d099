"""The labs' grader: run a reader's kernel on the chip over a lab's shapes and say what it got right.

``grade(lab, kernel, **params)`` runs the kernel on random inputs of every shape of the lab (ragged sizes and
N_q != N_k where the lab allows), each on a fresh :class:`labcore.chip.Chip` whose CTAs run in a shuffled
order, and compares: the outputs with the float64 oracle, the ledger with the closed form (per tensor), the
SRAM peak with M. Feedback names each known mistake it recognises, by a rule on the run (an N x N_k tensor in
HBM, Q re-read, a whole tensor on chip, NaN from an empty split, a score read twice) or, for mistakes that only
change the numbers, by matching the outputs of the lab's named mistaken kernel on the same inputs (as
nbautoeval and jupyterquiz do for known wrong answers).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from labcore.checks import positive_int
from labcore.chip import Chip, SRAMCapacityError, modelled_time
from labcore.decode_time import decode_attention_time
from labcore.splits import flash_attn_num_splits

from .definitions import DECODE_SCENARIOS, FEEDBACK, get_lab
from .report import Report, ShapeResult

__all__ = ["grade", "run_kernel", "TOLERANCE", "decode_race"]

#: Largest |kernel - oracle| accepted: the kernels compute in float64, so only rounding differs.
TOLERANCE = 1e-9


def _kernel_params(lab, params):
    out = {k: params.pop(k, lab.params[k]) for k in lab.params}
    for k, v in out.items():
        out[k] = positive_int(v, k)
    return out


def run_kernel(lab, kernel, shape, *, seed: int = 0, order="shuffled", **params):
    """Run ``kernel`` on one shape of ``lab`` (an index into ``lab.shapes`` or a shape dict) with random inputs.

    Args:
        lab: as :func:`flashbook.labs.grade`.
        kernel: the kernel (or lab 5's program).
        shape: int index or dict such as ``{"N": 45, "N_k": 31}``.
        seed: int >= 0.
        order: the chip's CTA order.
        params: kernel parameters.

    Returns:
        ``(chip, outputs, error, inputs)``: the chip after the run, ``{name: array}`` collected from HBM (NaN
        where never written), the exception the kernel raised (or None), and the HBM inputs.

    Raises:
        TypeError/ValueError for a bad lab, shape index or seed.
    """
    lab = get_lab(lab)
    if isinstance(shape, dict):
        key = [int(v) for v in shape.values()]
    else:
        key = [positive_int(shape, "shape", minimum=0, maximum=len(lab.shapes) - 1)]
        shape = lab.shapes[key[0]]
    seed = positive_int(seed, "seed", minimum=0)
    inputs = lab.inputs(np.random.default_rng([seed] + key), shape)
    chip = Chip(lab.M, inputs, order=order, seed=seed + key[0])
    for name, shp in lab.outputs(shape).items():
        if name not in chip:
            chip.allocate(name, shp)
    kp = dict(params)
    if lab.runner == "chip":
        kp["num_splits"] = shape["num_splits"]
    error = None
    try:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # NaN and inf are graded, not warned
            if lab.runner == "cta":
                chip.launch(kernel, grid=1, **kp)
            else:
                kernel(chip, **kp)
    except Exception as exc:  # the reader's kernel may raise anything: report it, do not crash the notebook
        error = exc
    def read(name):
        return chip.read_back(name) if name in chip else np.full(lab.outputs(shape).get(name, 1), np.nan)
    outputs = lab.collect(read) if lab.collect else {k: read(k) for k in lab.oracle(inputs, shape)}
    return chip, outputs, error, inputs


@lru_cache(maxsize=512)
def _mistake_outputs(lab_key, mistake, shape_index, seed, params):
    lab = get_lab(lab_key)
    _, out, err, _ = run_kernel(lab, lab.mistakes[mistake], shape_index, seed=seed, **dict(params))
    return None if err is not None else out


def _max_error(outputs, expected):
    worst = 0.0
    for k, ref in expected.items():
        got = np.asarray(outputs[k], dtype=float)
        same_inf = (got == ref) & np.isinf(ref)
        with np.errstate(invalid="ignore"):
            diff = np.where(same_inf, 0.0, np.abs(got - ref))
        worst = max(worst, float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0)
    return worst


def _nonfinite_notes(stored, outputs, expected, traffic) -> list:
    """A line for each output tensor the kernel never wrote (``stored``: the lab's output names), then for each
    compared quantity that holds NaN or inf where the float64 reference is finite."""
    unwritten = [n for n in stored if traffic.get(n, {}).get("write", 0) == 0]
    lines = [f"{n} was never written to HBM: store it (cta.store) once it is final." for n in unwritten]
    for name, ref in expected.items():
        got = np.asarray(outputs[name], dtype=float)
        bad = ~np.isfinite(got) & np.isfinite(ref)
        if not bad.any() or name in unwritten or (name not in stored and unwritten):
            continue
        made = "" if name in stored else f" (computed from the stored {', '.join(stored)})"
        lines.append(f"{name}{made} holds NaN or inf in {int(bad.sum()):,} of {bad.size:,} entries where the "
                     "reference is finite: look for 0 / 0 (a row whose l is still 0) or exp of a score not shifted "
                     "by the running maximum m; one NaN spreads to the rest of its row.")
    return lines


def _matches(a, b):
    return all(np.allclose(a[k], b[k], rtol=1e-7, atol=1e-9, equal_nan=True) for k in a)


def _whole_tensors(err, chip):
    """Names of HBM tensors held whole on chip when a capacity error was raised."""
    labels = [lab for lab, _ in err.held] + [err.request[0]]
    return {n for n in chip.tensors if chip[n].shape[0] > 1 and f"{n}[0:{chip[n].shape[0]}]" in labels}


def _rules(lab, shape, chip, err, traffic, expected, outputs):
    """Feedback keys of the mistakes a run shows by its traffic, its capacity error or its NaN."""
    keys = set()
    N_q, N_k = shape.get("N", shape.get("g", 1)), shape.get("N_k", shape.get("N", 1))
    for name, t in traffic.items():
        if name not in expected and chip[name].ndim == 2 and chip[name].size >= N_q * N_k and t["write"]:
            keys.add("p_to_hbm" if lab.key == "backward" else "s_to_hbm")
    if lab.key == "fa2_causal" and (traffic.get("Q", {}).get("read", 0) > chip["Q"].size
                                    or traffic.get("O", {}).get("read", 0) > 0):
        keys.add("q_reread")
    if lab.key == "online_softmax" and traffic.get("S", {}).get("read", 0) > expected["S"]["read"]:
        keys.add("two_pass")
    if isinstance(err, SRAMCapacityError):
        whole = _whole_tensors(err, chip)
        if whole & {"K", "V"} and lab.key != "online_softmax":
            keys.add("kv_whole")
        if whole & {"S", "V"} and lab.key == "online_softmax":
            keys.add("whole_row")
    written = traffic.get("O", {}).get("write", 0) > 0          # NaN in an O the kernel wrote, not an unwritten one
    if lab.key == "flash_decoding" and err is None and written and np.isnan(outputs["O"]).any():
        keys.add("empty_nan")
    return keys


def decode_race(choose_splits) -> list:
    """The "beat the heuristic" table: for each of :data:`~flashbook.labs.definitions.DECODE_SCENARIOS`, the
    split count ``choose_splits(gpu, **shape)`` returns and flash-attn's heuristic's, with the modelled times of
    :func:`labcore.decode_attention_time` (method "flash_decoding", its default assumptions).

    Returns:
        list of dicts ``scenario``, ``yours``, ``heuristic``, ``t_yours``, ``t_heuristic`` (s), ``ok``.
    Raises:
        TypeError when ``choose_splits`` is not callable; what it raises propagates.
    """
    if not callable(choose_splits):
        raise TypeError("choose_splits must be a function (gpu, *, batch, seqlen, num_q_heads, num_kv_heads, "
                        "head_dim) -> int")
    rows = []
    for sc in DECODE_SCENARIOS:
        shape = {k: v for k, v in sc.items() if k != "gpu"}
        yours = int(choose_splits(sc["gpu"], **shape))
        heur = int(flash_attn_num_splits(sc["gpu"], **shape))
        t = {s: decode_attention_time(sc["gpu"], method="flash_decoding", num_splits=s, **shape).total
             for s in {yours, heur}}
        rows.append({"scenario": sc, "yours": yours, "heuristic": heur, "t_yours": t[yours],
                     "t_heuristic": t[heur], "ok": t[yours] <= t[heur]})
    return rows


def grade(lab, kernel, *, seed: int = 0, gpu="A100", choose_splits=None, **params) -> Report:
    """Grade a reader's kernel on one lab.

    Args:
        lab: key (``"online_softmax"``, ``"fa1_forward"``, ``"fa2_causal"``, ``"backward"``,
            ``"flash_decoding"``), number 1-5 or a :class:`~flashbook.labs.definitions.Lab`.
        kernel: ``kernel(cta, *, block_q, block_kv)`` (labs 1-4; lab 1 takes only ``block_kv``) or, lab 5, a
            program ``kernel(chip, *, num_splits, block_kv)`` that allocates and launches.
        seed: seed of the random inputs (int >= 0).
        gpu: preset for the modelled time (default A100).
        choose_splits: lab 5 only, ``(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim) -> int``.
        params: the kernel's parameters (``block_q``, ``block_kv``), default the lab's.
    Returns:
        a :class:`~flashbook.labs.report.Report` (passed, max_error, per-shape traffic vs closed form, SRAM peak
        vs M, modelled time, feedback lines).
    Raises:
        TypeError/ValueError: unknown lab, a kernel that is not callable, unknown or bad parameters. Errors the
        kernel itself raises are reported, not raised.
    """
    lab = get_lab(lab)
    if not callable(kernel):
        raise TypeError(f"kernel must be a function, got {type(kernel).__name__}")
    params = dict(params)
    kp = _kernel_params(lab, params)
    if params:
        raise TypeError(f"unknown parameter(s) {sorted(params)} for lab {lab.key!r}; it takes {sorted(lab.params)}")
    results, keys, fails, runs = [], set(), False, []
    for i, shape in enumerate(lab.shapes):
        chip, outputs, err, inputs = run_kernel(lab, kernel, i, seed=seed, **kp)
        expected_out = lab.oracle(inputs, shape)
        expected_io = lab.expected_io(shape, kp)
        traffic = chip.ledger.by_tensor()
        error = _max_error(outputs, expected_out)
        res = ShapeResult(lab.shape_label(shape), error, error <= TOLERANCE and err is None, traffic, expected_io,
                          traffic == expected_io, chip.sram_peak, lab.M,
                          None if err is None else f"{type(err).__name__}: {err}",
                          (lab.notes(shape, kp, lab.M) if lab.notes else [])
                          + _nonfinite_notes(list(lab.outputs(shape)), outputs, expected_out, traffic))
        results.append(res)
        fails |= not res.ok
        keys |= _rules(lab, shape, chip, err, traffic, expected_io, outputs)
        runs.append((outputs, err, res.exact))
    if not all(exact for _, _, exact in runs) and all(err is None for _, err, _ in runs):
        frozen = tuple(sorted(kp.items()))
        for name in lab.fingerprinted:
            theirs = [_mistake_outputs(lab.key, name, i, seed, frozen) for i in range(len(lab.shapes))]
            if all(t is not None and _matches(o, t) for (o, _, _), t in zip(runs, theirs)):
                keys.add(name)
    race = decode_race(choose_splits) if (lab.key == "flash_decoding" and choose_splits is not None) else None
    time = None
    if results[-1].raised is None and chip.launches:
        time = modelled_time(chip, gpu)
    passed = not fails and (lab.key != "flash_decoding" or (race is not None and all(r["ok"] for r in race)))
    return Report(lab, passed, max(r.error for r in results), results, time,
                  [(k, FEEDBACK[k]) for k in sorted(keys)], race)
