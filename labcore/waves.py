"""Waves: how equal blocks (CTAs) are dealt to the SMs of a GPU, one per SM at a time.

The one home of the wave arithmetic that the decode time model (lecture §6.4), the megakernel timeline
(§8.1, §8.4) and the exercises use: ``waves = ceil(blocks / SMs)``, the utilisation of the last wave,
and the time lost to it. Source: the wave-quantisation argument of the lecture §6.4/§8.1; Hazy Research,
"Look Ma, No Bubbles!" (2025), 512 blocks on 148 SMs.
"""
from __future__ import annotations

import numpy as np

from .checks import cdiv, choice, positive_float, positive_int

__all__ = ["wave_count", "wave_utilization", "idle_sms_last_wave", "tail_time", "LAST_WAVE_RULES", "waves_time"]

#: The two rules for charging the last wave of :func:`waves_time`.
LAST_WAVE_RULES = ("full", "shared")



def wave_count(blocks: int, sms: int) -> int:
    """Number of waves ``ceil(blocks / sms)`` when each SM runs one block at a time.

    Args:
        blocks, sms: ints >= 1.
    Raises:
        TypeError/ValueError for non-integers or values < 1.
    Source:
        the wave-quantisation argument of the lecture §8.1 (tail effects) and §6.4.
    """
    blocks = positive_int(blocks, "blocks")
    sms = positive_int(sms, "sms")
    return cdiv(blocks, sms)


def wave_utilization(blocks: int, sms: int) -> float:
    """Average SM utilisation ``blocks / (waves x sms)`` of equal blocks, one per SM at a time.

    192 blocks on 132 SMs: 2 waves, 192 / 264 = 73%; 128 blocks: 97% (lecture exercise 12).
    Raises: TypeError/ValueError as :func:`wave_count` (zero SMs is an error).
    """
    return positive_int(blocks, "blocks") / (wave_count(blocks, sms) * positive_int(sms, "sms"))


def idle_sms_last_wave(blocks: int, sms: int) -> int:
    """SMs with nothing to do in the last wave: ``waves x sms - blocks``.

    Hazy's example: 512 blocks on a B200's 148 SMs = 3 x 148 + 68, so 80 SMs idle in the last wave.
    """
    return wave_count(blocks, sms) * positive_int(sms, "sms") - positive_int(blocks, "blocks")


def tail_time(blocks: int, sms: int, block_time: float) -> float:
    """Seconds lost to the last partial wave: ``(waves - blocks / sms) x block_time``.

    ``block_time`` is the seconds one block takes on one SM (> 0). Zero when ``blocks`` is a multiple
    of ``sms``.
    """
    block_time = positive_float(block_time, "block_time")
    return (wave_count(blocks, sms) - blocks / sms) * block_time


def _cta_time(t_c, by, share):
    """``max(t_c, by / share)`` with one full-size temporary (the decode split search calls it on big grids)."""
    t = by / share
    same = np.ndim(t) and t.shape == np.broadcast_shapes(t.shape, np.shape(t_c))
    return np.maximum(t_c, t, out=t if same else None)


def waves_time(blocks, sms: int, compute_time, block_bytes, bandwidth: float, *,
               per_sm_bandwidth_cap: float | None = None, last_wave: str = "full") -> dict:
    """Time of ``blocks`` equal CTAs dealt to ``sms`` SMs in waves, each CTA bound by compute or by its HBM share.

    A CTA takes ``max(compute_time, block_bytes / b)`` where ``b`` is its share of the HBM bandwidth,
    ``b = min(per_sm_bandwidth_cap, bandwidth / running)``. Which ``running`` count a wave uses is the
    explicit last-wave rule:

    - ``"full"`` (the lecture's charge, §6.4): every wave, the last one included, is charged as a full wave:
      ``running = min(blocks, sms)`` for all ``waves = ceil(blocks / sms)`` waves. A mostly empty last wave
      costs as much as a full one, and its CTAs get no more bandwidth than in a full wave.
    - ``"shared"``: the bandwidth is shared among the CTAs actually running in each wave: full waves use
      ``running = sms``, the last wave ``running = blocks - (waves - 1) x sms``, so a lone CTA in the last
      wave gets ``min(cap, bandwidth)`` (the §6 argument that one CTA can pull tens of GB/s).

    Both rules keep each wave as long as its slowest CTA (the CTAs are equal, so every CTA of a wave ends
    together); neither lets the next wave's CTAs start early.

    Args:
        blocks: CTAs (int >= 1 or an int array).
        sms: SMs (int >= 1).
        compute_time: seconds of compute of one CTA (float >= 0 or array broadcasting with ``blocks``).
        block_bytes: HBM bytes one CTA moves (float >= 0 or array).
        bandwidth: HBM bytes/s of the GPU (> 0).
        per_sm_bandwidth_cap: most bytes/s one SM can pull (None: no cap).
        last_wave: ``"full"`` or ``"shared"``.
    Returns:
        dict of arrays (scalars become 0-d arrays): ``waves``, ``running_full`` (CTAs in a full wave),
        ``running_last`` (CTAs in the last wave), ``cta_time_full``, ``cta_time_last`` (s), ``total`` (s).
    Raises:
        TypeError/ValueError: blocks or sms not integers >= 1, negative times or bytes, bandwidth <= 0,
            an unknown ``last_wave``.
    Source:
        lecture §6.4 (CTAs in waves, per-SM bandwidth share); flashbook issue on the shared wave machinery (the two
        last-wave rules).
    """
    last_wave = choice(last_wave, "last_wave", LAST_WAVE_RULES)
    sms = positive_int(sms, "sms")
    bandwidth = positive_float(bandwidth, "bandwidth")
    cap = np.inf if per_sm_bandwidth_cap is None else positive_float(per_sm_bandwidth_cap, "per_sm_bandwidth_cap")
    b = np.asarray(blocks)
    if b.dtype.kind not in "iu" and not (b.dtype.kind == "f" and np.all(b == np.round(b))):
        raise TypeError(f"blocks must be integers, got dtype {b.dtype}")
    b = b.astype(np.int64)
    if np.any(b < 1):
        raise ValueError(f"blocks must be >= 1, got min {int(b.min())}")
    t_c = np.asarray(compute_time, dtype=float)
    by = np.asarray(block_bytes, dtype=float)
    if np.any(t_c < 0) or np.any(by < 0) or not (np.all(np.isfinite(t_c)) and np.all(np.isfinite(by))):
        raise ValueError("compute_time and block_bytes must be finite and >= 0")
    waves = cdiv(b, sms)
    run_full = np.minimum(b, sms)
    run_last = b - (waves - 1) * sms
    t_full = _cta_time(t_c, by, np.minimum(cap, bandwidth / run_full))
    # "full": waves x t_full, computed as such (bit for bit the lecture's product, no rounding of a sum)
    total = waves * t_full
    if last_wave == "full":
        t_last = t_full
    else:
        t_last = _cta_time(t_c, by, np.minimum(cap, bandwidth / run_last))
        # (waves - 1) x t_full + t_last; where the last wave costs a full one, the "full" product itself, and
        # never above it (a sum can round one ulp above the product)
        total = np.where(t_last == t_full, total, np.minimum(total, (waves - 1) * t_full + t_last))
    return {"waves": waves, "running_full": run_full, "running_last": run_last,
            "cta_time_full": t_full, "cta_time_last": t_last, "total": total}
