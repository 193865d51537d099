"""The modelled time of a run on the chip: its launches' CTAs in waves, each bound by compute or by HBM.

Rules of the model (stated, not measured):

- a CTA's compute time is ``matmul FLOPs / (tensor FLOP/s of one SM) + non-matmul FLOPs / (FP32 FLOP/s of one
  SM)`` (no overlap of the two; FLOPs as counted by :class:`~labcore.chip.tile.FlopCounter`);
- a CTA's HBM bytes are the elements it loaded and stored x ``dtype_bytes`` (2, FP16/BF16; the counting of :mod:`labcore.hbm`), plus the elements it
  added atomically x ``atomic_bytes`` (4: FP32 values sent to the L2 cache, where the add is done; the L2's atomic
  throughput, which is what limits them on a real GPU, is not modelled);
- the CTAs of a launch share the HBM bandwidth among the ones running, each capped at a per-CTA rate: the book's
  physical memory-bound rule (:func:`labcore.waves.kernel_time`, the ``"shared"`` rule every new model uses), one
  CTA per SM (a lab's tiles fill the SRAM budget $M$ of an SM), each CTA moving its own counted bytes and taking
  ``max(compute, bytes / its share)``; the per-CTA cap is the generation's
  (:func:`labcore.waves.per_cta_bandwidth_cap`: an A100 CTA about 82 GB/s, the lecture's 80 GB/s);
- launches run one after the other, each adding ``kernel_overhead`` (the decode model's default, 5 µs).

A single-CTA lab kernel is therefore modelled as one head on one SM, a lower bound on nothing and an
illustration of what its traffic and FLOPs cost; the decode lab's grid is where the waves matter.
Sources: Williams et al. 2009 (roofline); lecture §6.3-§6.4 (CTAs in waves, HBM a shared queue).
"""
from __future__ import annotations

import math

from ..checks import positive_float, positive_int
from ..decode_time import MODEL_DEFAULTS
from ..hardware import get_gpu
from ..waves import kernel_time

__all__ = ["modelled_time", "TIME_DEFAULTS", "MIN_PER_CTA_CAP"]

#: Assumptions of :func:`modelled_time` (SI units), taken from the decode model's defaults.
TIME_DEFAULTS = dict(dtype_bytes=2, atomic_bytes=4, kernel_overhead=MODEL_DEFAULTS["kernel_overhead"])

#: The smallest ``per_cta_cap`` :func:`~labcore.chip.modelled_time` takes (bytes/s): a real CTA pulls tens of
#: GB/s; below one byte a second a lab's traffic would take longer than a float can hold (1e-320 is a positive
#: float, and every time inf).
MIN_PER_CTA_CAP = 1.0


def modelled_time(chip, gpu="A100", *, dtype_bytes: int = 2, atomic_bytes: int = 4,
                  per_cta_cap: float | None = None,
                  kernel_overhead: float = TIME_DEFAULTS["kernel_overhead"]) -> dict:
    """Modelled seconds of every launch a :class:`~labcore.chip.Chip` has run, on a GPU preset.

    Args:
        chip: a Chip after the kernel ran.
        gpu: preset name or :class:`labcore.hardware.GPU` (needs an FP32 figure: ``fp32_flops`` not None).
        dtype_bytes: bytes per element (int >= 1).
        atomic_bytes: bytes per element added atomically (int >= 1; FP32 accumulation: 4).
        per_cta_cap: most bytes/s one CTA can pull (a finite float >= :data:`MIN_PER_CTA_CAP`, 1 byte/s); default
            the GPU generation's (:func:`labcore.waves.per_cta_bandwidth_cap`).
        kernel_overhead: seconds per launch (>= 0).
    Returns:
        dict: ``total`` (s), ``launches`` (list of per-launch dicts: ``name``, ``ctas``, ``waves``,
        ``cta_time`` (s, the longest CTA), ``time`` (s)), ``matmul_flops``, ``nonmatmul_flops``, ``hbm_bytes`` (plain traffic),
        ``atomic_bytes`` (atomic adds), ``gpu`` (name).
    Raises:
        TypeError/ValueError: naming the argument: a chip that ran nothing, a preset without an FP32 figure, bad
        assumptions, or assumptions whose modelled time is past what a float holds (a huge ``kernel_overhead``).
    """
    g = get_gpu(gpu)
    dtype_bytes = positive_int(dtype_bytes, "dtype_bytes", maximum=64)
    atomic_bytes = positive_int(atomic_bytes, "atomic_bytes", maximum=64)
    cap = None if per_cta_cap is None else positive_float(per_cta_cap, "per_cta_cap")
    if cap is not None and cap < MIN_PER_CTA_CAP:
        raise ValueError(f"per_cta_cap must be at least {MIN_PER_CTA_CAP:g} byte/s (a real CTA pulls tens of GB/s, "
                         f"e.g. 80e9), got {cap:g}")
    overhead = positive_float(kernel_overhead, "kernel_overhead", allow_zero=True)
    if g.fp32_flops is None:
        raise ValueError(f"{g.name} has no published FP32 figure; the chip's time model needs one")
    if not hasattr(chip, "launches") or not hasattr(chip, "atomics"):
        raise TypeError(f"chip must be a labcore.chip.Chip, got {type(chip).__name__}")
    if not chip.launches:
        raise ValueError("the chip has run no kernel yet (chip.launch(kernel, grid=...))")
    tensor_sm, fp32_sm = g.tensor_flops_per_sm, g.fp32_flops / g.num_sms
    out, total = [], 0.0
    for rec in chip.launches:
        compute = [m / tensor_sm + n / fp32_sm for m, n in zip(rec.matmul, rec.nonmatmul)]
        cta_bytes = [e * dtype_bytes + a * atomic_bytes for e, a in zip(rec.elements, rec.atomics)]
        k = kernel_time(g, cta_bytes, compute_time=compute, ctas_per_sm=1, per_cta_cap=cap)
        t = float(k["total"]) + overhead
        out.append({"name": rec.name, "ctas": rec.grid, "waves": -(-rec.grid // k["slots"]),
                    "cta_time": float(max(k["schedule"].end - k["schedule"].start)), "time": t})
        total += t
    if not math.isfinite(total):
        if math.isfinite(sum(r["time"] - overhead for r in out)):
            why = f"kernel_overhead = {overhead:g} s per launch is too large (the decode model's is 5e-06 s)"
        else:
            why = f"check gpu ({g.name}: its bandwidth and FLOP/s) and per_cta_cap"
        raise ValueError(f"the modelled time of {len(out)} launch(es) is past what a float holds: {why}")
    fl = chip.flops
    return {"total": total, "launches": out, "matmul_flops": fl["matmul"], "nonmatmul_flops": fl["nonmatmul"],
            "hbm_bytes": chip.ledger.total * dtype_bytes, "atomic_bytes": chip.atomics.total * atomic_bytes,
            "gpu": g.name}
