"""Waves: how equal blocks (CTAs) are dealt to the SMs of a GPU, one per SM at a time.

The one home of the wave arithmetic that the decode time model (lecture §6.4), the megakernel timeline
(§8.1, §8.4) and the exercises use: ``waves = ceil(blocks / SMs)``, the utilisation of the last wave,
and the time lost to it. Source: the wave-quantisation argument of the lecture §6.4/§8.1; Hazy Research,
"Look Ma, No Bubbles!" (2025), 512 blocks on 148 SMs.
"""
from __future__ import annotations

from .checks import cdiv, positive_float, positive_int

__all__ = ["wave_count", "wave_utilization", "idle_sms_last_wave", "tail_time"]



def wave_count(blocks: int, sms: int) -> int:
    """Number of waves ``ceil(blocks / sms)`` when each SM runs one block at a time.

    Args: blocks, sms: ints >= 1. Raises: TypeError/ValueError for non-integers or values < 1.
    Source: the wave-quantisation argument of the lecture §8.1 (tail effects) and §6.4.
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
