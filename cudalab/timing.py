"""The modelled time of simulated launches on a GPU preset: each launch's CTAs in waves, each CTA bound by
its FP32 compute or by its share of HBM bandwidth.

Rules of the model (stated, not measured):

- a CTA moves the global-memory bytes the simulator counted for its block (plain reads and writes, each element
  at its array's width); the launch is charged as if every CTA moved as much as its busiest one;
- atomic operations are listed apart and not charged: an FP32 atomic add executes in the L2 cache, the SM sends
  4 bytes per element and HBM sees about the buffer once; their cost is L2 atomic throughput, which this model
  does not have;
- a CTA computes the launch's FLOPs divided evenly among its CTAs on FP32 CUDA cores (a numba kernel does its
  arithmetic in FP32 on the CUDA cores, not on tensor cores), at the preset's FP32 rate of one SM; the FLOPs are
  the algorithm's count (the caller gives them), not counted from the kernel;
- the HBM bandwidth is shared by the CTAs actually running, each capped at a per-CTA rate: the book's physical
  memory-bound rule (``labcore.waves.kernel_time``, the ``"shared"`` rule every new model uses). As many CTAs
  share an SM as the launch's shared memory and threads per block allow (``labcore.waves.kernel_occupancy``,
  registers at the compiler's maximum); each CTA moves its own counted bytes. The per-CTA cap is what the
  generation's FlashAttention kernel keeps in flight over one DRAM round trip
  (``labcore.waves.per_cta_bandwidth_cap``); a scalar numba kernel keeps fewer bytes in flight, so on a real GPU it
  is slower than modelled: the model ranks kernels by what they move, it does not predict a scalar kernel's time;
- launches run one after another, each adding a fixed launch overhead (the decode model's default).

Sources: Williams, Waterman, Patterson 2009 (roofline); the book's §6.3-§6.4 (CTAs in waves, a shared
bandwidth queue); NVIDIA's CUDA C++ Programming Guide on atomic functions (performed in L2 for global memory).
"""
from __future__ import annotations

import numpy as np

from labcore.checks import positive_float
from labcore.decode_time import MODEL_DEFAULTS
from labcore.hardware import get_gpu
from labcore.waves import kernel_time

__all__ = ["modelled_time", "TIME_DEFAULTS"]

#: Assumptions of :func:`modelled_time` (SI units), taken from the decode model's defaults.
TIME_DEFAULTS = dict(kernel_overhead=MODEL_DEFAULTS["kernel_overhead"])


def modelled_time(launches, gpu="H100", *, flops=None, per_cta_cap: float | None = None,
                  kernel_overhead: float = TIME_DEFAULTS["kernel_overhead"]) -> dict:
    """Modelled seconds of a sequence of simulated launches on a GPU preset (rules in the module docstring).

    Args:
        launches: :class:`cudalab.Launch` records (a non-empty list).
        gpu: preset name or :class:`labcore.hardware.GPU` (needs an FP32 figure).
        flops: FLOPs of each launch (a list as long as ``launches``; None: no compute is charged).
        per_cta_cap: most bytes/s one CTA can pull (> 0); default the GPU generation's
            (``labcore.waves.per_cta_bandwidth_cap``).
        kernel_overhead: seconds added per launch (>= 0).
    Returns:
        dict: ``total`` (s), ``gpu`` (name), ``launches`` (per launch: ``name``, ``ctas``, ``ctas_per_sm``,
        ``waves`` (CTAs over the resident slots, rounded up), ``bytes``
        (the busiest CTA's), ``hbm_bytes`` (all CTAs'), ``atomics``, ``time`` (s), ``bound`` ("memory" or
        "compute")).
    Raises:
        TypeError/ValueError: no launches, a preset without an FP32 figure, flops of the wrong length or
        negative, bad assumptions, a block whose shared memory does not fit on an SM of ``gpu``.
    Source:
        the rules above; ``labcore.waves.kernel_time`` for the shared-bandwidth schedule.
    """
    launches = list(launches)
    if not launches:
        raise ValueError("launches must hold at least one launch record")
    g = get_gpu(gpu)
    if g.fp32_flops is None:
        raise ValueError(f"{g.name} has no published FP32 figure; the model needs one")
    cap = None if per_cta_cap is None else positive_float(per_cta_cap, "per_cta_cap")
    overhead = positive_float(kernel_overhead, "kernel_overhead", allow_zero=True)
    flops = [0.0] * len(launches) if flops is None else [float(f) for f in flops]
    if len(flops) != len(launches) or any(not np.isfinite(f) or f < 0 for f in flops):
        raise ValueError(f"flops must be {len(launches)} finite numbers >= 0, got {flops}")
    fp32_sm = g.fp32_flops / g.num_sms
    out, total = [], 0.0
    for rec, f in zip(launches, flops):
        per_cta = [sum((b["reads"].get(n, 0) + b["writes"].get(n, 0)) * rec.itemsize.get(n, 4)
                       for n in set(b["reads"]) | set(b["writes"])) for b in rec.per_block.values()] or [0]
        ctas = len(per_cta)
        compute = f / ctas / fp32_sm
        k = kernel_time(g, per_cta, compute_time=compute, ctas_per_sm="derived", smem_per_cta=int(rec.shared_bytes),
                        threads_per_cta=max(1, int(rec.threads)), per_cta_cap=cap)
        t = float(k["total"]) + overhead
        share = min(k["per_cta_cap"], g.hbm_bandwidth / min(ctas, k["slots"]))
        out.append({"name": rec.name, "ctas": ctas, "ctas_per_sm": k["ctas_per_sm"],
                    "waves": -(-ctas // k["slots"]), "bytes": int(max(per_cta)), "hbm_bytes": int(sum(per_cta)),
                    "atomics": int(sum(rec.atomics.values())), "time": t,
                    "bound": "memory" if max(per_cta) / share >= compute else "compute"})
        total += t
    return {"total": total, "gpu": g.name, "launches": out}
