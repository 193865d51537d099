"""The labs' grader: check and rebuild a reader's kernel, run it on the chip over a lab's shapes, and say what it got
right and what differs.

``grade(lab, kernel, ...)`` works in five steps.

1. **The source, not the object.** The kernel (and lab 5's program helpers and ``choose_splits``) is rebuilt from its
   source by :func:`labcore.chip.rebuild` (``CHIP_PROFILE``; ``HOST_PROFILE`` for ``choose_splits``):
   a kernel that names a private attribute, imports a module, reaches for ``gc``, frames, ``getattr``, the chip's
   ``read_back``, or sets an attribute is refused before anything runs, and the report lists every finding. What
   runs is the checked source in a fresh namespace whose ``np`` is the chip's numpy facade. The batch grader
   (``flashbook-grade``) rebuilds from a file's text with :func:`~labcore.chip.rebuild_from_text`
   and passes the functions here, so the live notebook and the batch run the same checked code.
2. **Inputs the kernel cannot predict.** Each grade draws its inputs from a fresh seed (``seed=None``; the report
   shows a seed only when the caller fixed one). Every lab has shapes whose scores are large in magnitude and rise
   and fall across key blocks, so a missing or stale running maximum fails.
3. **What is on chip is counted.** Each shape runs on a fresh :class:`labcore.chip.Chip` whose CTAs run in a
   shuffled order, with a conflict check between the CTAs of a launch (a data race is an error), under a step and
   time limit (:func:`labcore.chip.run_limits`). Tiles used after their block are refused, and copies kept after it
   count against M (:mod:`labcore.chip.tile`). Labs 3 and 4 run on a grid: one CTA per query block (lab 3), one per
   key block with dQ added atomically (lab 4's main kernel).
4. **Better is not wrong.** A shape passes when the outputs match the float64 oracle, the kernel moved no more
   elements than the closed form for its block sizes (fewer is better: the report says by how much), its SRAM peak
   is within M and its launches have the lab's grid.
5. **Feedback is true.** A known mistake is named only when its signature is present: a rule on the run (an
   ``N x N_k`` tensor written to HBM, Q read again, a tensor held whole when the SRAM overflowed, NaN in an empty
   split's partial output, a data race on dQ) or the outputs of the lab's mistaken kernel on the same inputs, on
   every shape (as nbautoeval and jupyterquiz do for known wrong answers). Otherwise the report names what differs:
   which outputs on which shapes, which tensors moved more or less than the closed form.

Lab 5's race (:func:`flashbook.labs.decode_race`) is judged under three rules of the decode time model: the lecture's (a full last
wave, one CTA per SM), a shared last wave, and the occupancy the kernel's resources allow; a split count that is not
an int, or above flash-attn's limit of 128, is an error naming ``choose_splits``.
"""
from __future__ import annotations

import ast
import numbers
import secrets
import textwrap
from functools import lru_cache

import numpy as np

from labcore.checks import positive_float, positive_int
from labcore.chip import (CHIP_PROFILE, HOST_PROFILE, Chip, DataRaceError, KernelSourceError, SRAMCapacityError,
                          modelled_time, rebuild, rebuild_from_text, run_limits)
from labcore.chip.kernel_source import code_cells
from labcore.chip.limits import DEFAULT_SECONDS, DEFAULT_STEPS
from labcore.decode_time import decode_attention_time
from labcore.splits import flash_attn_num_splits

from .definitions import DECODE_SCENARIOS, FEEDBACK, STARTERS, get_lab
from .mistakes import mistake_functions
from .report import Report, ShapeResult

__all__ = ["grade", "grade_text", "run_kernel", "try_kernel", "decode_race", "TOLERANCE", "RACE_RULES", "MAX_SPLITS"]

#: Largest accepted error, relative to max(1, an output's largest |entry|): the kernels compute in float64, so
#: only rounding differs.
TOLERANCE = 1e-9

#: flash-attn's largest split count (``num_splits`` is capped at 128 in its split-KV heuristic).
MAX_SPLITS = 128

#: The rules lab 5's race is judged under: (name, decode-model assumptions).
RACE_RULES = (("full last wave", {}), ("shared last wave", {"last_wave": "shared"}),
              ("derived occupancy", {"ctas_per_sm": "derived"}))


# --- running a kernel on one shape -----------------------------------------------------------------------------------

def _kernel_params(lab, params):
    out = {k: params.pop(k, lab.params[k]) for k in lab.params}
    for k, v in out.items():
        out[k] = positive_int(v, k, maximum=4096)
    return out


def _seed(seed):
    if seed is None:
        return secrets.randbits(62), False
    return positive_int(seed, "seed", minimum=0), True


def _shape_of(lab, shape):
    if isinstance(shape, dict):
        return shape
    return lab.shapes[positive_int(shape, "shape", minimum=0, maximum=len(lab.shapes) - 1)]


def _inputs(lab, shape, seed, index):
    return lab.inputs(np.random.default_rng([seed, index]), shape)


def _run(lab, fn, shape, inputs, chip_seed, kp, *, steps=DEFAULT_STEPS, seconds=DEFAULT_SECONDS):
    """Run a rebuilt kernel (or program) on one shape: ``(chip, outputs, error)``."""
    chip = Chip(lab.M, inputs, order="shuffled", seed=chip_seed)
    for name, shp in lab.outputs(shape).items():
        if name not in chip:
            chip.allocate(name, shp)
    args = dict(kp)
    for name in lab.shape_params:
        args[name] = shape[name]
    error = None
    try:
        with run_limits(steps=steps, seconds=seconds), np.errstate(all="ignore"):   # NaN and inf are graded
            if lab.runner == "cta":
                chip.launch(fn, grid=lab.grid(shape, kp), **args)
            else:
                fn(chip.program(), **args)
    except Exception as exc:  # the reader's kernel may raise anything: report it, do not crash the notebook
        error = exc

    def read(name):
        return chip.read_back(name) if name in chip else np.full(lab.outputs(shape).get(name, 1), np.nan)
    outputs = lab.collect(read) if lab.collect else {k: read(k) for k in lab.outputs(shape)}
    return chip, outputs, error


def _rebuilt(lab, kernel):
    """``(rebuilt kernel, None)``, or ``(None, [finding, ...])`` when the profile refuses its source."""
    try:
        return rebuild(kernel, CHIP_PROFILE), None
    except KernelSourceError as exc:
        return None, [str(f) for f in exc.findings]


def run_kernel(lab, kernel, shape, *, seed: int = 0, **params):
    """Run ``kernel`` (rebuilt from its source, as :func:`grade` does) on one shape of ``lab`` with random inputs.

    Args:
        lab: as :func:`flashbook.labs.grade`.
        kernel: the kernel (or a program for labs 4 and 5).
        shape: int index into ``lab.shapes`` or a shape dict such as ``{"N": 45, "N_k": 31}``.
        seed: seed of the inputs and of the CTAs' shuffled order (int >= 0).
        params: kernel parameters (block sizes).
    Returns:
        ``(chip, outputs, error, inputs)``: the chip after the run, ``{name: array}`` read back from HBM (NaN where
        never written), the exception the kernel raised (or None) and the HBM inputs.
    Raises:
        TypeError/ValueError for a bad lab, shape index, seed or parameter; KernelSourceError for a kernel whose
        source the chip's profile refuses.
    """
    lab = get_lab(lab)
    shape = _shape_of(lab, shape)
    seed = positive_int(seed, "seed", minimum=0)
    params = dict(params)
    kp = _kernel_params(lab, params)
    if params:
        raise TypeError(f"unknown parameter(s) {sorted(params)} for lab {lab.key!r}; it takes {sorted(lab.params)}")
    fn = rebuild(kernel, CHIP_PROFILE)
    inputs = _inputs(lab, shape, seed, 0)
    chip, outputs, error = _run(lab, fn, shape, inputs, seed, kp)
    return chip, outputs, error, inputs


def try_kernel(lab, kernel, shape=None, *, large: bool = False, seed: int = 0, **params) -> str:
    """Run ``kernel`` on one shape and return a short text: each output's largest error and its NaN/inf count,
    beside the reference's. ``large=True`` picks the lab's first shape with large-magnitude scores (the place where a
    missing running maximum overflows).

    Args:
        lab, kernel, params: as :func:`grade`.
        shape: index or dict (default: the first shape, or the first large one with ``large``).
        large: bool.
        seed: int >= 0.

    Returns:
        str (print it).

    Raises:
        as :func:`run_kernel`.
    """
    lab = get_lab(lab)
    if not isinstance(large, bool):
        raise TypeError(f"large must be True or False, got {large!r}")
    if shape is None:
        shape = next((i for i, s in enumerate(lab.shapes) if s.get("scores")), 0) if large else 0
    shape = _shape_of(lab, shape)
    chip, outputs, error, inputs = run_kernel(lab, kernel, shape, seed=seed, **params)
    expected = lab.oracle(inputs, shape)
    lines = [f"Lab {lab.number}, shape {lab.shape_label(shape)}:"]
    if error is not None:
        lines.append(f"  the kernel raised {type(error).__name__}: {error}")
    for name, ref in expected.items():
        got = np.asarray(outputs[name], dtype=float)
        bad = int((~np.isfinite(got) & np.isfinite(ref)).sum())
        lines.append(f"  {name}: largest error {_error(got, ref):.1e}; {bad:,} NaN or inf where the reference is "
                     f"finite; reference entries between {np.nanmin(ref):.4g} and {np.nanmax(ref):.4g}")
    return "\n".join(lines)


def _error(got, ref):
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    if got.shape != ref.shape:
        return np.inf
    if not ref.size:
        return 0.0
    same_inf = (got == ref) & np.isinf(ref)
    with np.errstate(invalid="ignore"):
        diff = np.where(same_inf, 0.0, np.abs(got - ref))
    diff = np.where(np.isnan(diff), np.inf, diff)
    scale = max(1.0, float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0)))
    return float(diff.max()) / scale


def _max_error(outputs, expected):
    return max((_error(outputs[k], ref) for k, ref in expected.items()), default=0.0)


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
    return all(np.shape(a[k]) == np.shape(b[k]) and np.allclose(a[k], b[k], rtol=1e-7, atol=1e-9, equal_nan=True)
               for k in a)


def _whole_tensors(err, chip):
    """Names of HBM tensors held whole on chip when a capacity error was raised."""
    labels = [lab for lab, _ in err.held] + [err.request[0]]
    return {n for n in chip.tensors if chip[n].shape[0] > 1 and f"{n}[0:{chip[n].shape[0]}]" in labels}


def _grid_problem(lab, shape, kp, chip):
    """What is wrong with the grid of the launch that writes the lab's rule tensor (its CTA count, or a CTA that
    wrote rows of another CTA's block), or None."""
    if lab.launch_rule is None:
        return None
    tensor, what, count = lab.launch_rule
    want = count(shape, kp)
    writers = [rec for rec in chip.launches if rec.ledger.by_tensor().get(tensor, {}).get("write", 0)]
    if not writers:
        return None                                  # nothing written: the outputs say it already
    bad = [rec for rec in writers if rec.grid != want]
    if bad:
        return (f"{tensor} was written by a launch of {bad[0].grid} CTA(s) ({bad[0].name}); this lab runs {what}: "
                f"{want} here, so that the CTAs of the launch run in parallel and in any order")
    if lab.owner_rule is not None:
        name, block, rows = lab.owner_rule
        for rec in writers:
            for pid, t, r0, r1 in rec.stores:
                lo, hi = rows(pid, shape, kp)
                if t == name and r0 < r1 and not (lo <= r0 and r1 <= hi):
                    return (f"CTA {pid} of {rec.name} wrote rows {r0}:{r1} of {name}, outside {block} (rows "
                            f"{lo}:{hi}): each CTA of this lab does its own block's work, so that the work is "
                            "spread over the grid")
    return None


def _reads_twice(chip, tensor) -> bool:
    """Whether some CTA loaded rows of ``tensor`` that it had loaded before (in any launch)."""
    for rec in chip.launches:
        seen = {}
        for pid, name, r0, r1 in rec.loads:
            if name != tensor:
                continue
            if any(a < r1 and r0 < b for a, b in seen.get(pid, ())):
                return True
            seen.setdefault(pid, []).append((r0, r1))
    return False


def _rules(lab, shape, chip, err, traffic, expected, outputs):
    """Feedback keys of the mistakes a run shows by its traffic, its errors or its partial results."""
    keys = set()
    N_q, N_k = shape.get("N", shape.get("g", 1)), shape.get("N_k", shape.get("N", 1))
    inputs = set(lab.outputs(shape)) | set(expected)
    for name, t in traffic.items():
        if name not in inputs and name in chip and chip[name].ndim == 2 and chip[name].size >= N_q * N_k \
                and t["write"] >= N_q * N_k // 2:
            keys.add("p_to_hbm" if lab.key == "backward" else "s_to_hbm")
    if lab.key == "fa2_causal" and _reads_twice(chip, "Q"):
        keys.add("q_reread")
    if lab.key == "online_softmax" and traffic.get("S", {}).get("read", 0) > expected["S"]["read"]:
        keys.add("two_pass")
    if isinstance(err, SRAMCapacityError):
        whole = _whole_tensors(err, chip)
        if {"K", "V"} <= whole and lab.key != "online_softmax":
            keys.add("kv_whole")
        if whole & {"S", "V"} and lab.key == "online_softmax":
            keys.add("whole_row")
    if isinstance(err, DataRaceError) and lab.key == "backward" and " dQ[" in str(err):
        keys.add("dq_race")
    if lab.key == "flash_decoding" and "O_part" in chip:
        g, s = shape["g"], shape["num_splits"]
        chunk = -(-shape["N_k"] // s)
        empty = [p for p in range(s) if p * chunk >= shape["N_k"]]
        parts = chip.read_back("O_part")
        if empty and parts.shape[0] >= s * g and all(np.isnan(parts[p * g:(p + 1) * g]).any() for p in empty):
            keys.add("empty_nan")
    return keys


def _what_differs(lab, results, runs, expected_outs) -> list:
    """Lines naming which outputs are wrong on which shapes and which tensors moved more or less (no advice that
    assumes a cause)."""
    lines = []
    names = list(expected_outs[0]) if expected_outs else []
    for name in names:
        wrong = [r.label for r, (outs, err), exp in zip(results, runs, expected_outs)
                 if err is None and _error(outs[name], exp[name]) > TOLERANCE]
        ran = [r for r, (_, err) in zip(results, runs) if err is None]
        if wrong and ran:
            where = "every shape" if len(wrong) == len(results) else "; ".join(wrong)
            lines.append(f"{name} differs from the reference on {where}.")
    right = [n for n in names if not any(
        err is None and _error(outs[n], exp[n]) > TOLERANCE for (outs, err), exp in zip(runs, expected_outs))]
    if right and len(right) < len(names) and all(err is None for _, err in runs):
        lines.append(f"{', '.join(right)} {'is' if len(right) == 1 else 'are'} right on every shape.")
    more, less = {}, {}
    for r in results:
        if r.raised is not None:
            continue
        zero = {"read": 0, "write": 0}
        for t in dict.fromkeys(list(r.expected) + list(r.traffic)):
            got, exp = r.traffic.get(t, zero), r.expected.get(t, zero)
            g, e = got["read"] + got["write"], exp["read"] + exp["write"]
            (more if g > e else less if g < e else {}).setdefault(t, []).append(r.label)
        for t in dict.fromkeys(list(r.expected_atomics) + list(r.atomics)):
            g, e = r.atomics.get(t, 0), r.expected_atomics.get(t, 0)
            (more if g > e else less if g < e else {}).setdefault(f"{t} (atomic adds)", []).append(r.label)
    ran = [r.label for r in results if r.raised is None]
    for word, table in (("more", more), ("fewer", less)):
        groups = {}
        for t, where in table.items():
            groups.setdefault(tuple(where), []).append(t)
        for where, tensors in groups.items():
            on = "every shape that ran" if list(where) == ran else "; ".join(where)
            lines.append(f"{', '.join(tensors)}: {word} elements moved than the closed form on {on} (the counts "
                         "per shape above).")
    return lines


# --- the race of lab 5 -----------------------------------------------------------------------------------------------

def _split_count(value, sc):
    where = f"for {sc['gpu']}, batch {sc['batch']}, seqlen {sc['seqlen']:,}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"choose_splits returned {value!r} ({type(value).__name__}) {where}: a split count is an int")
    value = int(value)
    if not 1 <= value <= min(MAX_SPLITS, sc["seqlen"]):
        raise ValueError(f"choose_splits returned {value} {where}: flash-attn runs 1 to {MAX_SPLITS} splits (at most "
                         "one per key)")
    return value


def decode_race(choose_splits) -> list:
    """The "beat the heuristic" table: for each of :data:`~flashbook.labs.definitions.DECODE_SCENARIOS`, the
    split count ``choose_splits(gpu, **shape)`` returns and flash-attn's heuristic's, with the modelled times of
    :func:`labcore.decode_time.decode_attention_time` (method "flash_decoding") under each of :data:`RACE_RULES`.

    ``choose_splits`` runs as given here; :func:`grade` rebuilds it from its source first (``HOST_PROFILE``).

    Returns:
        list of dicts ``scenario``, ``yours``, ``heuristic``, ``rules`` (a list of ``{"rule", "t_yours",
        "t_heuristic", "ok"}``, seconds) and ``ok`` (no slower than the heuristic under every rule).
    Raises:
        TypeError: ``choose_splits`` is not callable, or returned a count that is not an int; ValueError: a count
        outside 1 .. 128 (flash-attn's limit) or above the sequence length; what ``choose_splits`` raises.
    """
    if not callable(choose_splits):
        raise TypeError("choose_splits must be a function (gpu, *, batch, seqlen, num_q_heads, num_kv_heads, "
                        "head_dim) -> int")
    rows = []
    for sc in DECODE_SCENARIOS:
        shape = {k: v for k, v in sc.items() if k != "gpu"}
        yours = _split_count(choose_splits(sc["gpu"], **shape), sc)
        heur = int(flash_attn_num_splits(sc["gpu"], **shape))
        rules = []
        for name, assumptions in RACE_RULES:
            t = {s: decode_attention_time(sc["gpu"], method="flash_decoding", num_splits=s, **shape,
                                          **assumptions).total for s in {yours, heur}}
            rules.append({"rule": name, "t_yours": t[yours], "t_heuristic": t[heur],
                          "ok": t[yours] <= t[heur] * (1 + 1e-9)})
        rows.append({"scenario": sc, "yours": yours, "heuristic": heur, "rules": rules,
                     "ok": all(r["ok"] for r in rules)})
    return rows


# --- grading ---------------------------------------------------------------------------------------------------------

def _normal_source(text):
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None
    for node in ast.walk(tree):                 # docstrings and comments do not make a kernel new
        if isinstance(node, (ast.FunctionDef, ast.Module)) and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(getattr(node.body[0], "value", None), ast.Constant):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


@lru_cache(maxsize=None)
def _starter_defs(key):
    tree = ast.parse(STARTERS[key])
    return {n.name: _normal_source(ast.unparse(n)) for n in tree.body if isinstance(n, ast.FunctionDef)}


def _is_starter(lab, kernel, extra) -> bool:
    import inspect
    starter = _starter_defs(lab.key)
    funcs = [kernel] + [f for f in extra if f is not None]
    for fn in funcs:
        name = getattr(fn, "__name__", "")
        try:
            src = _normal_source(inspect.getsource(fn))
        except (OSError, TypeError):
            return False
        if name not in starter or src != starter[name]:
            return False
    return True


_STARTER_LINE = ("This is the starter kernel, unchanged. If you pasted or wrote a kernel, run its cell first: a cell "
                 "that raises (a SyntaxError, a NameError) leaves the old definition in place, and the function the "
                 "check cell grades must be named kernel.")


def _program_helpers(kernel):
    """The functions a program's source names at its top level (lab 5's split and combine), for the starter check."""
    import inspect
    try:
        names = {n.id for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(kernel)))) if isinstance(n, ast.Name)}
    except (OSError, TypeError, SyntaxError):
        return []
    g = getattr(kernel, "__globals__", {})
    return [g[n] for n in sorted(names) if callable(g.get(n)) and hasattr(g.get(n), "__code__")]


def grade(lab, kernel, *, seed: int | None = None, gpu="A100", choose_splits=None,
          max_steps: int = DEFAULT_STEPS, max_seconds: float = DEFAULT_SECONDS, **params) -> Report:
    """Grade a reader's kernel on one lab (see the module docstring for what is checked).

    Args:
        lab: key (``"online_softmax"``, ``"fa1_forward"``, ``"fa2_causal"``, ``"backward"``,
            ``"flash_decoding"``), number 1-5 or a :class:`~flashbook.labs.definitions.Lab`.
        kernel: ``kernel(cta, *, block_q, block_kv)`` (labs 1-3; lab 1 takes only ``block_kv``; lab 3 runs on one
            CTA per query block) or, labs 4 and 5, a program ``kernel(chip, *, block_q, block_kv, causal)`` /
            ``kernel(chip, *, num_splits, block_kv)`` that allocates and launches.
        seed: seed of the random inputs (int >= 0), or None (default) for a fresh one the kernel cannot know; the
            report shows it only when given.
        gpu: preset for the modelled time (default A100).
        choose_splits: lab 5 only, ``(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim) -> int``.
        max_steps, max_seconds: the step and wall-clock budget of each kernel run (one shape), past which the kernel
            is stopped (:func:`labcore.chip.run_limits`; defaults generous: a loaded machine never reaches them).
        params: the kernel's parameters (``block_q``, ``block_kv``), default the lab's.
    Returns:
        a :class:`~flashbook.labs.report.Report` (``as_dict()`` and ``as_row(student)`` for a gradebook).
    Raises:
        TypeError/ValueError: unknown lab, a kernel that is not callable, unknown or bad parameters. What the
        kernel's source may not do, and errors the kernel raises, are reported, not raised.
    """
    return _grade(lab, kernel, seed=seed, gpu=gpu, choose_splits=choose_splits, rebuilt=False, max_steps=max_steps,
                  max_seconds=max_seconds, **params)


def _grade(lab, kernel, *, seed=None, gpu="A100", choose_splits=None, rebuilt: bool = False,
           max_steps: int = DEFAULT_STEPS, max_seconds: float = DEFAULT_SECONDS, **params) -> Report:
    # rebuilt=True runs kernel and choose_splits as given: only for functions this package rebuilt from a file's
    # text (grade_text) or its own mistaken kernels. It is not a keyword of the public grade(), so a notebook
    # cannot switch the source checks off.
    lab = get_lab(lab)
    if not callable(kernel):
        raise TypeError(f"kernel must be a function, got {type(kernel).__name__}")
    if choose_splits is not None and not callable(choose_splits):
        raise TypeError(f"choose_splits must be a function, got {type(choose_splits).__name__}")
    if not isinstance(rebuilt, bool):
        raise TypeError(f"rebuilt must be True or False, got {rebuilt!r}")
    params = dict(params)
    kp = _kernel_params(lab, params)
    if params:
        raise TypeError(f"unknown parameter(s) {sorted(params)} for lab {lab.key!r}; it takes {sorted(lab.params)}")
    seed, shown = _seed(seed)
    limits = dict(steps=positive_int(max_steps, "max_steps", maximum=10 ** 12),
                  seconds=positive_float(max_seconds, "max_seconds"))
    findings = []
    fn, chooser = kernel, choose_splits
    if not rebuilt:
        fn, bad = _rebuilt(lab, kernel)
        findings += bad or []
        if choose_splits is not None:
            try:
                chooser = rebuild(choose_splits, HOST_PROFILE)
            except KernelSourceError as exc:
                findings += [f"choose_splits: {f}" for f in exc.findings]
    starter = not rebuilt and _is_starter(lab, kernel, _program_helpers(kernel) if lab.runner == "program" else [])
    if findings:
        return Report(lab, False, np.inf, [], None, [], findings=findings, seed=seed if shown else None,
                      starter=starter)
    results, keys, runs, expected_outs, inputs_of = [], set(), [], [], []
    chip = None
    for i, shape in enumerate(lab.shapes):
        inputs = _inputs(lab, shape, seed, i)
        chip, outputs, err = _run(lab, fn, shape, inputs, seed + i, kp, **limits)
        expected_out = lab.oracle(inputs, shape)
        expected_io = lab.expected_io(shape, kp)
        traffic = chip.ledger.by_tensor()
        atomics = {n: v["write"] for n, v in chip.atomics.by_tensor().items()}
        expected_atomics = lab.expected_atomics(shape, kp) if lab.expected_atomics else {}
        error = _max_error(outputs, expected_out)
        res = ShapeResult(lab.shape_label(shape), error, error <= TOLERANCE and err is None, traffic, expected_io,
                          chip.sram_peak, lab.M, None if err is None else f"{type(err).__name__}: {err}",
                          (lab.notes(shape, kp, lab.M) if lab.notes else [])
                          + _nonfinite_notes(list(lab.outputs(shape)), outputs, expected_out, traffic),
                          atomics, expected_atomics, _grid_problem(lab, shape, kp, chip))
        results.append(res)
        keys |= _rules(lab, shape, chip, err, traffic, expected_io, outputs)
        runs.append((outputs, err))
        expected_outs.append(expected_out)
        inputs_of.append(inputs)
    if not all(r.exact for r in results) and all(err is None for _, err in runs):
        for name in lab.fingerprinted:
            mistaken = mistake_functions(lab.key, name)["kernel"]
            if all(_matches(outs, _run(lab, mistaken, shape, inp, seed + i, kp)[1])
                   for i, (shape, inp, (outs, _)) in enumerate(zip(lab.shapes, inputs_of, runs))):
                keys.add(name)
    race, race_error = None, None
    if lab.key == "flash_decoding" and chooser is not None:
        try:
            with run_limits(**limits):
                race = decode_race(chooser)
        except Exception as exc:  # choose_splits is the reader's code: report what it did
            race_error = f"{type(exc).__name__}: {exc}"
    time = None
    if results[-1].raised is None and chip is not None and chip.launches:
        time = modelled_time(chip, gpu)
    passed = all(r.ok for r in results) and (lab.key != "flash_decoding"
                                             or (race is not None and all(r["ok"] for r in race)))
    feedback = [(k, FEEDBACK[k]) for k in sorted(keys)]
    differences = [] if passed or feedback else _what_differs(lab, results, runs, expected_outs)
    if starter:
        differences = [_STARTER_LINE] + differences
    return Report(lab, passed, max(r.error for r in results), results, time, feedback, race,
                  seed=seed if shown else None, differences=differences, starter=starter, race_error=race_error)


def grade_text(lab, text: str, *, filename: str = "<submission>", **kwargs) -> Report:
    """Grade the lab's functions as defined in a file's text (a ``.py`` file or a notebook's JSON): they are taken
    from the text and rebuilt (:func:`labcore.chip.rebuild_from_text`) without running its other
    code, then graded as :func:`grade`. A missing or refused definition is a report with its findings.

    Raises: TypeError/ValueError as :func:`grade`."""
    lab = get_lab(lab)
    findings, fns = [], {}
    try:
        code_cells(text)
    except ValueError as exc:       # a notebook JSON cannot read: the student's to fix, so a finding, not a crash
        return Report(lab, False, np.inf, [], None, [], findings=[f"{filename}: {exc}"])
    try:
        fns = rebuild_from_text(text, ("kernel",), CHIP_PROFILE, filename=filename)
    except KernelSourceError as exc:
        findings += [str(f) for f in exc.findings]
    if "choose_splits" in lab.names:
        try:
            fns.update(rebuild_from_text(text, ("choose_splits",), HOST_PROFILE, filename=filename))
        except KernelSourceError as exc:
            findings += [f"choose_splits: {f}" for f in exc.findings]
    if findings:
        return Report(lab, False, np.inf, [], None, [], findings=findings)
    return _grade(lab, fns["kernel"], choose_splits=fns.get("choose_splits"), rebuilt=True, **kwargs)
