"""Timings measured on a real GPU, as data, and the book's models beside them.

``labcore/data/measured_h200.csv`` holds one row per measurement taken by ``bench/gpu/measure.py`` on an NVIDIA H200
(its docstring states the method and what each number includes; the run's log lies beside it in ``bench/gpu/``).
Every row carries its machine, the software versions, the date and the method, so a number can be traced to the run
that made it. This module reads and checks the file (:func:`load_measured`) and puts the models next to it:

- :func:`ceiling_check`: the H200 preset's HBM bandwidth and BF16 tensor rate against the measured copy and matrix
  product;
- :func:`compare_prefill_measured`: :func:`labcore.prefill.prefill_time` (FlashAttention-2 on the H200 preset)
  against PyTorch's FlashAttention-2 kernel at the papers' sequence lengths;
- :func:`compare_decode_measured`: :func:`labcore.decode_time.decode_time_grid` against PyTorch's flash backend at
  the flash-decoding post's ten shapes.

Units are SI (seconds, bytes/s, FLOP/s). Errors are ``model / measured - 1`` (positive: the model is slower).
"""
from __future__ import annotations

import csv
import datetime
import math
from pathlib import Path

import numpy as np

from .checks import choice
from .decode_time import decode_time_grid
from .hardware import get_gpu
from .prefill import prefill_time

__all__ = ["COLUMNS", "KINDS", "MEASURED_CSV", "load_measured", "measured_rows", "ceiling_check",
           "compare_prefill_measured", "compare_decode_measured", "lab_measured"]

#: The CSV's columns, in order.
COLUMNS = ("kind", "kernel", "pass", "causal", "dtype", "batch", "seqlen", "heads", "kv_heads", "head_dim",
           "seconds", "q1_s", "q3_s", "repeats", "flops", "bytes", "value", "unit", "split_kv", "note",
           "machine", "versions", "date", "method")
#: What a row measures.
KINDS = ("ceiling", "prefill", "decode", "cuda_lab")
_UNITS = ("", "bytes/s", "FLOP/s", "Hz")
_INT = ("batch", "seqlen", "heads", "kv_heads", "head_dim", "repeats")
_FLOAT = ("seconds", "q1_s", "q3_s", "flops", "bytes", "value")

MEASURED_CSV = Path(__file__).parent / "data" / "measured_h200.csv"


_PASSES = ("", "forward", "forward+backward")
_DTYPES = ("", "bf16", "fp16", "fp32")


def _parse(rec: dict, where: str) -> dict:
    missing = [c for c in COLUMNS if c not in rec]
    if missing:
        raise ValueError(f"{where}: missing columns {missing}")
    row = {}
    for c in COLUMNS:
        v = (rec[c] or "").strip()
        if c in _INT:
            try:
                row[c] = int(v) if v else None
            except ValueError:
                raise ValueError(f"{where}: {c} must be a whole number, got {v!r}") from None
            if row[c] is not None and row[c] < 1:
                raise ValueError(f"{where}: {c} must be >= 1, got {v!r}")
        elif c in _FLOAT:
            try:
                row[c] = float(v) if v else None
            except ValueError:
                raise ValueError(f"{where}: {c} must be a number, got {v!r}") from None
            if row[c] is not None and not (math.isfinite(row[c]) and row[c] > 0):
                raise ValueError(f"{where}: {c} must be a positive finite number, got {v!r}")
        elif c in ("causal", "split_kv"):
            if v not in ("", "0", "1"):
                raise ValueError(f"{where}: {c} must be 0, 1 or empty, got {v!r}")
            row[c] = None if v == "" else v == "1"
        else:
            row[c] = v
    for c, allowed in (("kind", KINDS), ("unit", _UNITS), ("pass", _PASSES), ("dtype", _DTYPES)):
        if row[c] not in allowed:
            raise ValueError(f"{where}: {c} must be one of {', '.join(repr(a) for a in allowed)}, got {row[c]!r}")
    for c in ("machine", "versions", "date", "method"):
        if not row[c]:
            raise ValueError(f"{where}: every row needs its {c} (provenance)")
    try:
        datetime.date.fromisoformat(row["date"])
    except ValueError:
        raise ValueError(f"{where}: date must be YYYY-MM-DD, got {row['date']!r}") from None
    if row["seconds"] is not None:
        if row["repeats"] is None or row["repeats"] < 20:
            raise ValueError(f"{where}: a timed row is the median of at least 20 runs, got repeats={row['repeats']}")
        if row["q1_s"] is not None and not row["q1_s"] <= row["seconds"] <= row["q3_s"]:
            raise ValueError(f"{where}: the median must lie between the quartiles")
    if row["value"] is not None and not row["unit"]:
        raise ValueError(f"{where}: a value needs its unit")
    return row


#: The columns that name what a row measured: two rows alike in all of them are one measurement twice.
_IDENTITY = ("kind", "kernel", "pass", "causal", "dtype", "batch", "seqlen", "heads", "kv_heads", "head_dim")


def load_measured(path=None) -> list:
    """Every row of the measured CSV, checked and typed.

    Args:
        path: a CSV of :data:`COLUMNS` (default :data:`MEASURED_CSV`); lines starting with ``#`` are comments.
    Returns:
        list of dicts keyed by :data:`COLUMNS`: ints for the sizes and ``repeats``, floats (SI units) for
        ``seconds``, ``q1_s``, ``q3_s``, ``flops``, ``bytes``, ``value``, bools for ``causal`` and ``split_kv``,
        None where a cell is empty, strings otherwise.
    Raises:
        TypeError: a path that is not a str or Path. FileNotFoundError: no such file. ValueError: a folder, a file
            with no rows, a missing column, a cell that is not the number its column holds, a size below 1, an
            unknown kind, unit, pass or dtype, a row without its machine, versions, date (YYYY-MM-DD) or method, a
            time that is not positive, a timed row of fewer than 20 runs, a median outside its quartiles, the same
            measurement twice. Each message names the file and its line.
    Source: ``bench/gpu/measure.py`` (the method), run on the device named in each row.
    """
    path = MEASURED_CSV if path is None else path
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a file path (str or pathlib.Path), got {type(path).__name__}")
    path = Path(path)
    if str(path) in ("", ".") or path.is_dir():
        raise ValueError(f"path must name a CSV file, got the folder {str(path)!r}")
    # a spreadsheet may save the file with a byte-order mark: utf-8-sig reads it as the plain header
    with open(path, newline="", encoding="utf-8-sig") as f:
        numbered = [(k + 1, ln) for k, ln in enumerate(f) if not ln.startswith("#")]
    if not numbered:
        raise ValueError(f"{path}: no header and no rows (only comments, or empty)")
    reader = csv.DictReader([ln for _, ln in numbered])
    rows, seen = [], {}
    for i, rec in enumerate(reader):
        where = f"{path.name} line {numbered[reader.line_num - 1][0]}"
        row = _parse(rec, where)
        ident = tuple(row[c] for c in _IDENTITY)
        if ident in seen:
            raise ValueError(f"{where}: the same measurement as {seen[ident]} (kind, kernel, pass, mask, dtype and "
                             "shape alike)")
        seen[ident] = where
        rows.append(row)
    if not rows:
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        raise ValueError(f"{path}: no rows" + (f" (and missing columns {missing})" if missing else ""))
    return rows


def measured_rows(kind: str, path=None, **match) -> list:
    """The rows of one ``kind`` (of :data:`KINDS`) whose columns equal ``match`` (e.g. ``kernel="flash"``,
    ``causal=True``, ``seqlen=4096``), from ``path`` (default :data:`MEASURED_CSV`).

    Raises: ValueError for an unknown kind or column; TypeError for a match value of another type than its
    column's (``causal="1"``); as :func:`load_measured`.
    """
    kind = choice(kind, "kind", KINDS)
    bad = [k for k in match if k not in COLUMNS]
    if bad:
        raise ValueError(f"unknown columns {bad}; the columns are {', '.join(COLUMNS)}")
    for k, v in match.items():
        want = bool if k in ("causal", "split_kv") else int if k in _INT else float if k in _FLOAT else str
        if v is not None and (type(v) is not want and not (want is float and type(v) is int)):
            raise TypeError(f"{k} is matched against {want.__name__} values, got {v!r}")
    return [r for r in load_measured(path) if r["kind"] == kind and all(r[k] == v for k, v in match.items())]


def ceiling_check(gpu="H200", path=None) -> dict:
    """The GPU preset's two roofline numbers against the measured ceilings.

    Returns:
        dict: ``bandwidth`` (measured copy, bytes/s, read + written), ``preset_bandwidth`` (bytes/s),
        ``bandwidth_ratio`` (measured / preset); ``matmul`` (measured BF16 FLOP/s), ``preset_flops``,
        ``flops_ratio``; ``sm_clock`` (Hz, the SM clock nvidia-smi read right after the timed calls, None if the
        file has no such row) and ``preset_clock`` (the preset's ``model_clock``, Hz); ``machine`` and ``date``.
    Raises: ValueError if the file has no copy or matmul row, or if its machine is not the preset's GPU.
    """
    g = get_gpu(gpu)
    rows = {r["kernel"]: r for r in measured_rows("ceiling", path)}
    _same_gpu(g, rows.values())
    for k in ("copy", "matmul"):
        if k not in rows:
            raise ValueError(f"the measured file has no {k!r} ceiling row")
    bw, fl = rows["copy"]["value"], rows["matmul"]["value"]
    clock = rows["sm_clock"]["value"] if "sm_clock" in rows else None
    return dict(bandwidth=bw, preset_bandwidth=g.hbm_bandwidth, bandwidth_ratio=bw / g.hbm_bandwidth,
                matmul=fl, preset_flops=g.tensor_flops, flops_ratio=fl / g.tensor_flops, sm_clock=clock,
                preset_clock=g.model_clock, machine=rows["copy"]["machine"], date=rows["copy"]["date"])


def _same_gpu(g, rows):
    """The models compare with the preset of the GPU the rows were measured on, and no other."""
    short = g.name.split("-")[0]
    other = sorted({r["machine"] for r in rows if short not in r["machine"]})
    if other:
        raise ValueError(f"the measurements were taken on {other[0]!r}, not on the {g.name} preset's GPU; compare "
                         "them with that GPU's preset")


def _arrays(rows, fields) -> dict:
    return {f: np.array([r[f] for r in rows]) for f in fields}


def compare_prefill_measured(kernel: str = "flash", *, generation: str = "fa2", path=None, **assumptions) -> dict:
    """The prefill model against the measured prefill rows of one kernel.

    Args:
        kernel: ``"flash"`` (PyTorch's FlashAttention-2) or ``"cudnn"`` (cuDNN's fused attention).
        generation: the model's generation (:func:`labcore.prefill.prefill_time`), ``"fa2"`` by default; ``"fa3"``
            models a Hopper kernel with WGMMA and TMA, the closest the model has to cuDNN's.
        assumptions: overrides of the prefill model's defaults.
    Returns:
        dict of arrays, one entry per measured row (rows that failed are left out): ``pass_``, ``causal``,
        ``head_dim``, ``seqlen``, ``batch``, ``heads``, ``measured`` (s), ``model`` (s), ``measured_tflops`` and
        ``model_tflops`` (the papers' FLOP count / time / 1e12), ``err`` (model / measured - 1).
    Raises:
        ValueError: an unknown kernel or generation, a keyword that is part of the measured shape (``batch``,
            ``seqlen``, ...), rows not measured on an H200, or no row that matches.
    """
    kernel = choice(kernel, "kernel", ("flash", "cudnn"))
    fixed = sorted(set(assumptions) & {"batch", "heads", "seqlen", "head_dim", "causal", "pass_", "dtype", "gpu"})
    if fixed:
        raise ValueError(f"{', '.join(fixed)} come from the measured rows; the keywords are the model's assumptions")
    rows = [r for r in measured_rows("prefill", path, kernel=kernel) if r["seconds"] is not None]
    _same_gpu(get_gpu("H200"), rows)
    if not rows:
        raise ValueError(f"no measured prefill rows for kernel {kernel!r}")
    out = _arrays(rows, ("causal", "head_dim", "seqlen", "batch", "heads", "flops"))
    out["pass_"] = np.array([r["pass"] for r in rows])
    out["measured"] = np.array([r["seconds"] for r in rows])
    model = np.array([float(prefill_time("H200", batch=r["batch"], heads=r["heads"], seqlen=r["seqlen"],
                                         head_dim=r["head_dim"], causal=r["causal"], pass_=r["pass"],
                                         dtype="bf16", generation=generation, **assumptions)["total"])
                      for r in rows])
    out.update(model=model, measured_tflops=out["flops"] / out["measured"] / 1e12,
               model_tflops=out["flops"] / model / 1e12, err=model / out["measured"] - 1,
               kernel=kernel, generation=generation)
    return out


def compare_decode_measured(*, num_splits="heuristic-2.5.7", path=None, **assumptions) -> dict:
    """The decode model against PyTorch's flash backend (and its eager attention) at the post's ten shapes.

    Args:
        num_splits: the model's split rule for ``method="flash_decoding"``. Default ``"heuristic-2.5.7"``,
            flash-attn's ``num_splits_heuristic`` with the SM count doubled, as flash-attn 2.5.7 and later call it:
            of the two heuristics it is the one whose split-or-not matches the kernels the profiler saw on every
            row (at batch 64 and 1K keys, 128 CTAs on 132 SMs, only the doubled count splits, and the kernel did).
            Any other value :func:`labcore.decode_time.decode_time_grid` takes: ``"heuristic"``, ``"best"`` or None
            (the model's best), or split counts (an int or one per row).
        assumptions: overrides of the decode model's defaults.
    Returns:
        dict of arrays in the file's row order: ``batch``, ``seqlen``, ``flash`` and ``eager`` (measured s),
        ``split_kv`` (whether the flash backend ran a split-KV and a combine kernel), ``model_fd`` (s, split),
        ``splits`` (the model's count), ``model_fa2`` (s, one CTA per query head, no split), ``err_fd``
        (model_fd / flash - 1), ``kv_bandwidth`` (KV-cache bytes / flash time, bytes/s).
    Raises: ValueError when the file has no decode rows.
    """
    flash = measured_rows("decode", path, kernel="flash")
    eager = {(r["batch"], r["seqlen"]): r["seconds"] for r in measured_rows("decode", path, kernel="eager")}
    if not flash:
        raise ValueError("no measured decode rows")
    fixed = sorted(set(assumptions) & {"batch", "seqlen", "num_q_heads", "num_kv_heads", "head_dim", "method"})
    if fixed:
        raise ValueError(f"{', '.join(fixed)} come from the measured rows; the keywords are the model's assumptions")
    _same_gpu(get_gpu("H200"), flash)
    r0 = flash[0]
    shape = dict(num_q_heads=r0["heads"], num_kv_heads=r0["kv_heads"], head_dim=r0["head_dim"])
    b = np.array([r["batch"] for r in flash], dtype=np.int64)
    n = np.array([r["seqlen"] for r in flash], dtype=np.int64)
    fd = decode_time_grid("H200", batch=b, seqlen=n, method="flash_decoding", num_splits=num_splits, **shape,
                          **assumptions)
    fa = decode_time_grid("H200", batch=b, seqlen=n, method="fa2", **shape, **assumptions)
    meas = np.array([r["seconds"] for r in flash])
    return dict(batch=b, seqlen=n, flash=meas, eager=np.array([eager.get((int(x), int(y)), np.nan)
                                                               for x, y in zip(b, n)]),
                split_kv=np.array([bool(r["split_kv"]) for r in flash]), model_fd=fd["total"],
                splits=fd["num_splits"], model_fa2=fa["total"], err_fd=fd["total"] / meas - 1,
                kv_bandwidth=np.array([r["bytes"] for r in flash]) / meas, **shape)


def lab_measured(key: str, path=None) -> dict:
    """A CUDA lab item's reference kernels as timed on the GPU (the lab's last shape, the one its report models).

    Args:
        key: the lab item's key (``"cuda_fa2"``, ...; :data:`flashbook.labs.cuda.CUDA_LABS`'s keys).
    Returns:
        dict: ``seconds`` (all launches, s), ``launches`` (list of s, one per launch in the host program's order,
        read from the row's note, 4 significant digits), ``repeats``, ``machine``, ``date``.
    Raises:
        TypeError: a key that is not a string. ValueError: no row for ``key``.
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a CUDA lab item's key (a string), got {type(key).__name__}")
    rows = measured_rows("cuda_lab", path, kernel=key)
    if not rows or rows[0]["seconds"] is None:
        raise ValueError(f"no timed row for CUDA lab item {key!r} in the measured file")
    r = rows[0]
    _, _, tail = r["note"].partition("launches (s):")
    launches = [float(x) for x in tail.split("+") if x.strip()]
    return dict(seconds=r["seconds"], launches=launches, repeats=r["repeats"], machine=r["machine"],
                date=r["date"])
