"""Timings on a real NVIDIA GPU for the book's "measured" columns: the roofline's two ceilings, FlashAttention-2
prefill (forward, forward + backward), decode at the flash-decoding post's ten shapes, and the CUDA labs' reference
kernels compiled for real.

Run on a machine with an NVIDIA GPU, PyTorch and numba-cuda, from the repository root::

    PYTHONPATH=. python3 bench/gpu/measure.py --out DIR [--sections ceilings,prefill,decode,labs] [--repeats 30]

It writes ``DIR/measured.csv`` (the columns of :data:`labcore.measured.COLUMNS`, one row per measurement) and
``DIR/run.json`` (machine, versions, clocks before and after), and prints a short table. The CSV is copied by hand
into ``labcore/data/measured_h200.csv`` and the log beside it under ``bench/gpu/``.

Method (what each number includes), the same for every row:

- CUDA events around one call, recorded on the current stream; 5 warm-up calls, then ``--repeats`` timed calls;
  the median is ``seconds``, the quartiles ``q1_s`` and ``q3_s``. Each timed call is queued behind
  ``torch.cuda._sleep`` (the GPU spins about half a millisecond while the host queues the first event, the call's
  kernels and the second event), so the time is the GPU's, from the call's first kernel to its last, without the
  host's launch overhead; gaps between a call's kernels are what the GPU itself leaves. Copies to or from the host
  are not included.
- Random normal inputs (never zeros), drawn once per shape; decode rotates among enough input sets that one set's
  KV cache is out of L2 when it is read again.
- Clocks and power are the card's as found: nothing here changes them.

What each section times:

- ``ceilings``: ``dst.copy_(src)`` on 2 GiB (bytes read + written over time) and an 8192^3 BF16 matrix product
  (2 x 8192^3 FLOP over time);
- ``prefill``: ``torch.nn.functional.scaled_dot_product_attention`` under ``sdpa_kernel(FLASH_ATTENTION)``
  (PyTorch's copy of FlashAttention-2) and ``sdpa_kernel(CUDNN_ATTENTION)`` (cuDNN's fused attention), BF16,
  batch x seqlen = 16,384 tokens, heads x d = 2,048 (the papers' setting), forward and forward + backward
  (``torch.autograd.grad`` of the output with a random dO), causal and not;
- ``decode``: one new query per sequence, 16 query heads and 2 KV heads, d = 128, FP16 (the post's shape); "flash"
  is SDPA's flash backend with ``enable_gqa=True``; "eager" is three PyTorch operations (Q K^T with the query heads
  grouped per KV head, softmax, P V); the kernels' names are read once with the profiler, so the row says whether
  the flash backend split the KV sequence (a split-KV and a combine kernel);
- ``labs``: each CUDA lab's reference graded with ``flashbook.labs.cuda.grade`` on the GPU: the simulator counts
  its traffic as on a laptop, then ``cudalab.gpu`` times the lab's last shape's launches with CUDA events, each
  behind a hold kernel, with its own counts (3 warm-up runs, the median of 20; ``--repeats`` does not apply).

The parts that need no GPU (arguments, shapes, the CSV writer) are tested in ``tests/test_measured.py``.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import platform
import subprocess
import sys
import traceback
from pathlib import Path

from labcore.measured import COLUMNS, KINDS
from labcore.prefill import load_prefill_measurements

SECTIONS = ("ceilings", "prefill", "decode", "labs")
#: Untimed runs before cudalab.gpu times a lab's launch (its GpuDevice.time default); the labs' repeats are its own.
LAB_WARMUP = 3
#: The papers' prefill setting: batch x seqlen tokens, heads x d hidden.
PREFILL_TOKENS, PREFILL_HIDDEN = 16_384, 2_048
DECODE_SHAPE = dict(num_q_heads=16, num_kv_heads=2, head_dim=128)


def parse_args(argv=None) -> argparse.Namespace:
    """The command line: ``--out DIR`` (required), ``--sections`` (comma-separated, of :data:`SECTIONS`),
    ``--repeats`` (timed runs per measurement, 20..1000). Raises SystemExit (argparse) on bad values."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="folder for measured.csv and run.json")
    p.add_argument("--sections", default=",".join(SECTIONS),
                   help=f"comma-separated, of: {', '.join(SECTIONS)} (default all)")
    p.add_argument("--repeats", type=int, default=30,
                   help="timed runs per measurement, 20 to 1000 (the median is kept; not the labs', see above)")
    a = p.parse_args(argv)
    names = [s.strip() for s in a.sections.split(",") if s.strip()]
    bad = [s for s in names if s not in SECTIONS]
    if bad or not names:
        p.error(f"--sections takes a comma-separated list of {', '.join(SECTIONS)}; got {a.sections!r}")
    if not 20 <= a.repeats <= 1000:
        p.error(f"--repeats must be between 20 and 1000 (the median of at least 20 runs), got {a.repeats}")
    a.sections = list(dict.fromkeys(names))        # each section once, in the order given
    return a


def prefill_shapes() -> list:
    """``[(seqlen, batch, heads, head_dim)]``: the FlashAttention-2/3 papers' sequence lengths at 16k tokens and
    hidden 2,048, for d = 64 and 128 (the rows of §4b's tables)."""
    seqlens = sorted({int(n) for n in load_prefill_measurements()["seqlen"]})
    return [(n, PREFILL_TOKENS // n, PREFILL_HIDDEN // d, d) for d in (64, 128) for n in seqlens]


def decode_shapes() -> list:
    """``[(batch, seqlen)]``: the flash-decoding post's ten rows."""
    from labcore.decode_model import load_flash_decoding_a100

    m = load_flash_decoding_a100()
    return [(int(b), int(n)) for b, n in zip(m["batch"], m["seqlen"])]


class Writer:
    """Rows of :data:`labcore.measured.COLUMNS`, each stamped with the run's machine, versions, date and method."""

    def __init__(self, path: Path, *, machine: str, versions: str, date: str, method: str):
        self.path, self.rows = Path(path), []
        self.stamp = dict(machine=machine, versions=versions, date=date, method=method)

    def add(self, **fields) -> dict:
        """One row; unknown fields are a ValueError, a kind outside :data:`labcore.measured.KINDS` too."""
        if "pass_" in fields:                       # "pass" is a keyword in Python
            fields["pass"] = fields.pop("pass_")
        unknown = set(fields) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown columns {sorted(unknown)}; the columns are {', '.join(COLUMNS)}")
        if fields.get("kind") not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {fields.get('kind')!r}")
        row = {c: "" for c in COLUMNS}
        row.update(self.stamp)
        row.update({k: _cell(v) for k, v in fields.items()})       # a row may state its own method
        self.rows.append(row)
        self.write()
        return row

    def write(self):
        """Write every row so far (after each row, so a run cut short keeps what it measured)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(COLUMNS))
            w.writeheader()
            w.writerows(self.rows)


def _cell(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return v


# ------------------------------------------------------------------ on the GPU

def _timer(torch, fn, repeats, warmup=5, rotate=1):
    """Median and quartiles (s) of ``fn(i)`` between two CUDA events; ``i`` cycles over ``rotate`` input sets."""
    for i in range(warmup):
        fn(i % rotate)
    torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(HOLD_CYCLES)     # the GPU waits here while the host queues a, the call and b
        a.record()
        fn(i % rotate)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    q = lambda f: times[min(len(times) - 1, int(round(f * (len(times) - 1))))]  # noqa: E731
    return dict(seconds=q(0.5), q1_s=q(0.25), q3_s=q(0.75), repeats=repeats)


#: Cycles the GPU spins before each timed call (about 0.5 ms at 2 GHz): longer than the host takes to queue a call,
#: so host launch gaps stay out of the time even for calls of a few microseconds.
HOLD_CYCLES = 1_000_000


def _smi(fields):
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
        return dict(zip(fields.split(","), [s.strip() for s in out.split(",")]))
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": str(exc)}


SMI_FIELDS = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu"


def ceilings(torch, w, repeats):
    n = 2 ** 30  # BF16 elements: 2 GiB per buffer
    src = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t = _timer(torch, lambda i: dst.copy_(src), repeats)
    moved = 2 * n * 2
    w.add(kind="ceiling", kernel="copy", dtype="bf16", bytes=moved, value=moved / t["seconds"], unit="bytes/s",
          note="device-to-device copy of 2 GiB; bytes read + written", **t)
    m = 8192
    a, b = (torch.randn(m, m, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    t = _timer(torch, lambda i: a @ b, repeats)
    w.add(kind="ceiling", kernel="matmul", dtype="bf16", flops=2 * m ** 3, value=2 * m ** 3 / t["seconds"],
          unit="FLOP/s", note="8192 x 8192 x 8192 BF16 product through torch.matmul (cuBLAS), random inputs", **t)


def prefill(torch, w, repeats):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from labcore.prefill import attention_flops_papers

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    for name, backend in backends.items():
        errs = {}
        for seqlen, batch, heads, d in prefill_shapes():
            for causal in (False, True):
                q, k, v, do = (torch.randn(batch, heads, seqlen, d, device="cuda", dtype=torch.bfloat16)
                               for _ in range(4))
                for t_ in (q, k, v):
                    t_.requires_grad_(True)
                try:
                    if (d, causal) not in errs:      # the values checked once per (backend, d, causal)
                        ref = sdpa(q.float(), k.float(), v.float(), is_causal=causal)
                        with sdpa_kernel(backend):
                            out = sdpa(q, k, v, is_causal=causal).float()
                        errs[d, causal] = float((out - ref).norm() / ref.norm())
                        del ref, out
                    with sdpa_kernel(backend):
                        fwd = _timer(torch, lambda i: sdpa(q, k, v, is_causal=causal), repeats)

                        def both(i):
                            o = sdpa(q, k, v, is_causal=causal)
                            torch.autograd.grad(o, (q, k, v), do)

                        fb = _timer(torch, both, repeats)
                except RuntimeError as exc:      # a backend that refuses the shape: a row saying so
                    w.add(kind="prefill", kernel=name, pass_="forward", causal=causal, dtype="bf16", batch=batch,
                          seqlen=seqlen, heads=heads, kv_heads=heads, head_dim=d, note=f"failed: {exc}"[:200])
                    continue
                for pass_, t in (("forward", fwd), ("forward+backward", fb)):
                    flops = float(attention_flops_papers(batch=batch, heads=heads, seqlen=seqlen, head_dim=d,
                                                         causal=causal, pass_=pass_))
                    w.add(kind="prefill", kernel=name, pass_=pass_, causal=causal, dtype="bf16", batch=batch,
                          seqlen=seqlen, heads=heads, kv_heads=heads, head_dim=d, flops=flops,
                          value=flops / t["seconds"], unit="FLOP/s",
                          note=f"relative error vs FP32 at seqlen {min(n for n, *_ in prefill_shapes())}: "
                               f"{errs[d, causal]:.1e}", **t)


def decode(torch, w, repeats):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    hq, hkv, d = DECODE_SHAPE["num_q_heads"], DECODE_SHAPE["num_kv_heads"], DECODE_SHAPE["head_dim"]
    g = hq // hkv
    for batch, seqlen in decode_shapes():
        kv_bytes = 2 * batch * seqlen * hkv * d * 2
        rotate = max(1, min(8, math.ceil(4 * 60e6 / kv_bytes)))       # several times the 60 MB L2 between reuses
        sets = [tuple(torch.randn(batch, h, n, d, device="cuda", dtype=torch.float16)
                      for h, n in ((hq, 1), (hkv, seqlen), (hkv, seqlen))) for _ in range(rotate)]

        def flash(i):
            q, k, v = sets[i]
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return sdpa(q, k, v, enable_gqa=True)

        def eager(i):
            q, k, v = sets[i]
            s = q.view(batch, hkv, g, d) @ k.transpose(-1, -2) * d ** -0.5     # (batch, hkv, g, seqlen)
            return (torch.softmax(s.float(), dim=-1).to(q.dtype) @ v).view(batch, hq, 1, d)

        q, k, v = sets[0]
        ref = sdpa(q.float(), k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1))
        errs = {n: float((f(0).float() - ref).norm() / ref.norm()) for n, f in (("flash", flash), ("eager", eager))}
        kernels = _kernel_names(torch, lambda: flash(0))
        split = any("splitkv" in k.lower() or "split_kv" in k.lower() for k in kernels)
        for name, fn in (("flash", flash), ("eager", eager)):
            t = _timer(torch, fn, repeats, rotate=rotate)
            note = f"relative error vs FP32: {errs[name]:.1e}"
            if name == "flash":
                note += f"; kernels: {' + '.join(sorted(set(_short(k) for k in kernels)))}"
            w.add(kind="decode", kernel=name, pass_="forward", causal=False, dtype="fp16", batch=batch,
                  seqlen=seqlen, heads=hq, kv_heads=hkv, head_dim=d, bytes=kv_bytes,
                  value=kv_bytes / t["seconds"], unit="bytes/s", split_kv=int(split) if name == "flash" else "",
                  note=note, **t)


def _short(name: str) -> str:
    return name.split("<")[0].split("(")[0].strip()[:60]


def _kernel_names(torch, fn) -> list:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if getattr(e, "device_type", None) is not None
            and "CUDA" in str(e.device_type)]


def labs(w, repeats):
    from flashbook.labs.cuda import CUDA_LABS, grade

    for key, lab in CUDA_LABS.items():
        r = grade(lab, *lab.reference.values(), seed=0, gpu="H200")
        if r.measured is None:
            w.add(kind="cuda_lab", kernel=key, note=f"not timed: the reference did not pass ({r.max_error})")
            continue
        spec = lab.shapes[-1]
        w.add(kind="cuda_lab", kernel=key, dtype="fp32", seconds=r.measured["seconds"], repeats=r.measured["repeats"],
              method=f"CUDA events, each launch behind a hold kernel, {LAB_WARMUP} warm-up runs, median of "
                     f"{r.measured['repeats']} (cudalab.gpu)",
              note=f"lab {lab.label}, shape {lab.shape_label(spec)}; launches (s): "
                   + " + ".join(f"{s:.3e}" for s in r.measured["launches"]))


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed here: this script measures on an NVIDIA GPU with PyTorch and numba-cuda "
              "(bench/gpu/run_device.sh)", file=sys.stderr)
        return 2

    if not torch.cuda.is_available():
        print("no CUDA GPU is visible to PyTorch: nothing to measure", file=sys.stderr)
        return 2
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version()}
    for mod in ("triton", "numba", "numba_cuda", "numpy"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception as exc:  # noqa: BLE001  (a version we cannot read is recorded as such)
            versions[mod] = f"unavailable ({type(exc).__name__})"
    before = _smi(SMI_FIELDS)
    versions["driver"] = before.get("driver_version", "?")
    machine = f"{before.get('name', torch.cuda.get_device_name())}, {torch.cuda.get_device_properties(0).multi_processor_count} SMs"
    date = datetime.date.today().isoformat()
    w = Writer(args.out / "measured.csv", machine=machine, date=date,
               versions="; ".join(f"{k} {v}" for k, v in versions.items()),
               method=f"CUDA events, 5 warm-up runs, median of {args.repeats}")
    failed = {}
    for section in args.sections:
        print(f"== {section}", flush=True)
        try:
            if section == "labs":
                labs(w, args.repeats)
            else:
                globals()[section](torch, w, args.repeats)
        except Exception:  # noqa: BLE001  (one section failing keeps the others' rows)
            failed[section] = traceback.format_exc()
            print(failed[section], file=sys.stderr, flush=True)
    after = _smi(SMI_FIELDS)
    mhz = after.get("clocks.sm", "").split()
    if "ceilings" in args.sections and mhz and mhz[0].isdigit():
        w.add(kind="ceiling", kernel="sm_clock", value=float(mhz[0]) * 1e6, unit="Hz",
              method="nvidia-smi --query-gpu=clocks.sm",
              note=f"nvidia-smi clocks.sm right after the timed calls (clocks.max.sm {after.get('clocks.max.sm')}); "
                   "not a reading during any one kernel")
    (args.out / "run.json").write_text(json.dumps(dict(machine=machine, date=date, versions=versions,
                                                       smi_before=before, smi_after=after, failed=failed,
                                                       argv=sys.argv[1:]), indent=1))
    for r in w.rows:
        s, v = r["seconds"], r["value"]
        print(f"{r['kind']:8s} {r['kernel']:26s} {r['pass']:16s} c={r['causal'] or '-'} d={r['head_dim'] or '-':>3} "
              f"N={r['seqlen'] or '-':>6} B={r['batch'] or '-':>3} {float(s) * 1e6 if s else float('nan'):10.1f} us "
              f"{float(v) if v else float('nan'):>12.4g} {r['unit']}")
    print(f"{len(w.rows)} rows; sections failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
