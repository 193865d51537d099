"""The prefill model's kernel-level pieces: CTAs per SM, partial unit overlap, and the CTAs' schedule on the SMs.

Three things :func:`labcore.prefill_time` needs beyond one tile's cycles (:func:`labcore.tile_roofline`):

- :func:`prefill_ctas_per_sm`: how many CTAs of a forward kernel one SM holds (FlashAttention-2: from its tile's
  shared memory, threads and registers, by :func:`labcore.decode_ctas_per_sm`, the book's one occupancy
  function; FlashAttention-3/4: one, their warpgroups' registers fill the register file);
- :func:`overlap_cycles` and :func:`ablation_overlap`: a tile's cost when the softmax hides only a share
  ``omega`` of itself under the MMAs (or the reverse), that share read off FlashAttention-3's own ablation;
- :func:`kernel_makespan`: the kernel's CTAs (unequal with a causal mask) list-scheduled on the slots
  (SMs x CTAs per SM) in the generation's order, FA2's launch order or FA3/FA4's persistent LPT, each CTA
  paying a start-up latency (the first K/V tile's round trip) before its first tile (:mod:`labcore.causal_schedule`,
  :func:`labcore.scheduler.list_schedule`).

Sources: flash-attn v2.0.9 ``flash_fwd_launch_template.h`` (FA2's forward tiles, "we get 2 CTAs per SM");
flash-attn ``hopper/flash_fwd_kernel.h`` (FA3: 2 consumer warpgroups at 240 registers, a producer at 24);
Shah et al. 2024 (FlashAttention-3) Table 2 (ablation); flash-attn ``hopper/tile_scheduler.hpp`` (LPT).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .causal_schedule import causal_cta_costs
from .checks import (MAX_ELEMENTS, MAX_HEAD_DIM, MAX_ITEMS, at_most, cdiv, choice, flag, positive_float, positive_int,
                     real)
from .decode_time import SM_LIMITS, decode_ctas_per_sm
from .hardware import get_gpu
from .hbm import causal_block_counts
from .scheduler import list_schedule
from .splits import MAX_SEQLEN

__all__ = ["FA2_FORWARD_BLOCK_N", "PERSISTENT_REGISTERS", "prefill_ctas_per_sm", "overlap_cycles",
           "ablation_overlap", "kernel_makespan"]

#: FlashAttention-2's forward key tile (kBlockN) on sm80 by head dim, all with 128 query rows and 4 warps:
#: flash-attn v2.0.9 ``flash_fwd_launch_template.h`` (``run_mha_fwd_hdim64``: 128 x 128; ``hdim128``: 128 x 64 on
#: A100/H100, "we get 2 CTAs per SM"; ``hdim256``: 128 x 64). Other head dims: 64.
FA2_FORWARD_BLOCK_N = {32: 128, 64: 128, 96: 64, 128: 64, 160: 64, 192: 64, 224: 64, 256: 64}

#: Registers per thread of FlashAttention-3's warp-specialised forward kernel (``setmaxnreg``) and its warpgroups
#: (128 threads each): 2 consumer warpgroups at 240, 1 producer at 24: 2 x 128 x 240 + 128 x 24 = 64,512 of the
#: SM's 65,536, so one CTA per SM (the persistent grid is one CTA per SM). FA4 is taken to be alike.
#: Source: flash-attn ``hopper/flash_fwd_kernel.h`` (``MmaRegisterRequirement = 240``,
#: ``LoadRegisterRequirement = 24`` for two MMA warpgroups).
PERSISTENT_REGISTERS = dict(consumer_warpgroups=2, consumer_registers=240, producer_warpgroups=1,
                            producer_registers=24)



def _finite(x: float, message: str) -> float:
    """``x`` if it is a finite float, else a ValueError with ``message`` (which names the caller's arguments)."""
    if not np.isfinite(x):
        raise ValueError(message)
    return float(x)


def prefill_ctas_per_sm(gpu, generation: str, head_dim: int, *, block_q: int = 128) -> int:
    """CTAs of a prefill forward kernel resident on one SM of ``gpu`` at once.

    FlashAttention-2 (``"fa2"``): :func:`labcore.decode_ctas_per_sm` of its 4-warp forward kernel with
    ``block_q`` rows and :data:`FA2_FORWARD_BLOCK_N` keys (2 on an A100 or H100 at d = 64 and 128: the
    register bound, 128 threads x 255 registers). FlashAttention-3 and -4: the SM's registers over
    :data:`PERSISTENT_REGISTERS` (1), whatever ``head_dim`` and ``block_q`` (both are still checked).

    Args:
        gpu: preset name or GPU.
        generation: ``"fa2"``, ``"fa3"`` or ``"fa4"``.
        head_dim: d (int in [1, 1024]).
        block_q: query rows per CTA (int in [1, :data:`labcore.splits.MAX_SEQLEN`]).

    Returns:
        int >= 1 (a kernel whose tiles do not fit is still run one CTA at a time).
    Raises:
        TypeError: a generation that is not a string, a size that is not an integer (a fraction, a bool, a string).
        ValueError: unknown GPU or generation, sizes out of range.
    Source:
        as :data:`FA2_FORWARD_BLOCK_N`, :data:`PERSISTENT_REGISTERS` and :data:`labcore.decode_time.SM_LIMITS`.
    """
    g = get_gpu(gpu)
    generation = choice(generation, "generation", ("fa2", "fa3", "fa4"))
    d = positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    bq = positive_int(block_q, "block_q", maximum=MAX_SEQLEN)       # checked whichever generation uses it
    if generation == "fa2":
        occ = decode_ctas_per_sm(g, method="fa2", head_dim=d, fa2_block_m=bq,
                                 fa2_block_n=FA2_FORWARD_BLOCK_N.get(d, 64))
        return max(1, occ["ctas_per_sm"])
    r = PERSISTENT_REGISTERS
    regs = 128 * (r["consumer_warpgroups"] * r["consumer_registers"] + r["producer_warpgroups"] * r["producer_registers"])
    return max(1, SM_LIMITS["registers"] // regs)


def overlap_cycles(mma: float, softmax: float, omega: float) -> float:
    """One tile's cycles when a share ``omega`` of the shorter of MMA and softmax runs under the longer one.

    ``max(mma, softmax) + (1 - omega) min(mma, softmax)``: ``omega = 0`` is the two in sequence, ``omega = 1``
    perfect overlap (the tile roofline's max).

    Args:
        mma, softmax: cycles (finite floats >= 0).
        omega: share in [0, 1].
    Returns:
        float cycles.
    Raises:
        TypeError: an argument that is not a real number (a string, a bool).
        ValueError: mma or softmax negative or not finite, or so large that the sum is not a finite float64; omega
        outside [0, 1] or NaN.
    """
    mma = positive_float(mma, "mma", allow_zero=True)
    softmax = positive_float(softmax, "softmax", allow_zero=True)
    omega = real(omega, "omega", minimum=0.0, maximum=1.0)
    return _finite(max(mma, softmax) + (1.0 - omega) * min(mma, softmax),
                   f"mma={mma:g} and softmax={softmax:g} cycles add up past float64 (not finite): give cycles of "
                   "a tile")


def ablation_overlap(mma: float, softmax: float, before: float, after: float) -> float:
    """The overlap share ``omega`` a measured speed-up implies for a tile of ``mma`` and ``softmax`` cycles.

    Taking the configuration ``before`` (FLOP/s) as MMA and softmax in sequence and ``after`` as the overlapped
    kernel, ``(mma + softmax) / overlap_cycles(mma, softmax, omega) = after / before``. Applied to
    FlashAttention-3's Table 2 (570 TFLOP/s without warp specialisation, 661 with it, d = 128), it measures the
    share of the softmax warp specialisation really hides (the 570 configuration already pipelines GEMM and
    softmax inside a warpgroup; FA3 §3.1 credits ping-pong alone with 570 -> 620-640).

    Args:
        mma, softmax: cycles (finite, > 0).
        before, after: FLOP/s (finite, > 0, after >= before: a speed-up).
    Returns:
        float omega, clipped to [0, 1].
    Raises:
        TypeError: an argument that is not a real number. ValueError: an argument not finite and > 0; after below
        before; values so large that the arithmetic leaves float64.
    Source:
        Shah et al. 2024 (FlashAttention-3) Table 2 (the ablation measures a partial overlap, not a perfect one).
    """
    mma, softmax = positive_float(mma, "mma"), positive_float(softmax, "softmax")
    before, after = positive_float(before, "before"), positive_float(after, "after")
    if after < before:
        raise ValueError(f"after must be >= before (the overlapped kernel's speed-up), got before={before:g}, "
                         f"after={after:g}")
    exposed = _finite((mma + softmax) * before / after - max(mma, softmax),
                      f"mma={mma:g}, softmax={softmax:g}, before={before:g} and after={after:g} overflow float64: "
                      "give cycles of a tile and FLOP/s of a GPU")
    return float(min(1.0, max(0.0, 1.0 - exposed / min(mma, softmax))))


@lru_cache(maxsize=4096)
def _makespan_tiles(seqlen: int, reps: int, slots: int, block_q: int, block_kv: int, causal: bool, backward: bool,
                    order: str, startup_tiles: float) -> float:
    """Makespan in tile times of one kernel's CTAs (cached; ``startup_tiles`` rounded by the caller)."""
    if not causal:
        n = reps * -(-seqlen // (block_kv if backward else block_q))
        per = -(-seqlen // (block_q if backward else block_kv))
        return float(-(-n // slots)) * (per + startup_tiles)
    if backward:
        _, J, _ = causal_block_counts(seqlen, block_q=block_q, block_kv=block_kv, causal=True)
        T_c = -(-seqlen // block_kv)
        per_kv = (J[:, None] > np.arange(T_c)[None, :]).sum(axis=0).astype(float)
        costs = np.tile(per_kv, reps)
    else:
        costs = causal_cta_costs(seqlen, batch=reps, heads=1, block_q=block_q, block_kv=block_kv)
    return list_schedule(costs, slots, order=order, item_overhead=startup_tiles).makespan


def kernel_makespan(seqlen: int, *, reps: int, slots: int, tile_time: float, startup: float, block_q: int,
                    block_kv: int, causal: bool, backward: bool = False, order: str = "launch") -> float:
    """Seconds until the last CTA of one attention kernel ends, its CTAs list-scheduled on ``slots`` slots.

    Forward: one CTA per (sequence, head, query block), query block m visiting ``J_m`` key blocks
    (:func:`labcore.causal_cta_costs`); backward: one per key block, visited by the query blocks at or below the
    diagonal. Each CTA costs its tiles x ``tile_time`` + ``startup``. Without a mask all CTAs are equal and the
    makespan is ``ceil(CTAs / slots)`` of them.

    Args:
        seqlen: N (int in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        reps: batch x heads (int >= 1).
        slots: SMs x CTAs per SM (int in [1, :data:`labcore.checks.MAX_ITEMS`]).
        tile_time: seconds per tile on one slot (finite, > 0).
        startup: seconds per CTA (finite, >= 0; ``startup / tile_time`` and the result must be finite floats).
        block_q, block_kv: B_r, B_c (ints in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        causal, backward: bools.
        order: ``"launch"`` (FA2's grid order), ``"longest_first"`` or ``"lpt"`` (a persistent LPT scheduler).
            With a causal mask the CTAs are scheduled one by one: at most MAX_ITEMS of them, and a backward's
            ``T_r x T_c`` block pairs at most :data:`labcore.checks.MAX_ELEMENTS`.

    Returns:
        float seconds.

    Raises:
        TypeError: a size that is not an integer, a time that is not a real number, a flag that is not a bool.
        ValueError: sizes < 1, times out of range (or a startup / tile_time ratio or a makespan beyond float64),
        too many CTAs or slots, an unknown order.
    Source:
        :func:`labcore.scheduler.list_schedule`; flash-attn ``flash_fwd_launch_template.h`` (grid order),
        ``hopper/tile_scheduler.hpp`` (LPT).
    """
    order = choice(order, "order", ("launch", "longest_first", "lpt"))
    N, reps = positive_int(seqlen, "seqlen", maximum=MAX_SEQLEN), positive_int(reps, "reps")
    S = positive_int(slots, "slots", maximum=MAX_ITEMS)
    B_r = positive_int(block_q, "block_q", maximum=MAX_SEQLEN)
    B_c = positive_int(block_kv, "block_kv", maximum=MAX_SEQLEN)
    t = positive_float(tile_time, "tile_time")
    s0 = positive_float(startup, "startup", allow_zero=True)
    causal, backward = flag(causal, "causal"), flag(backward, "backward")
    if causal:                                     # the CTAs are unequal: list-scheduled one by one
        at_most(reps * cdiv(N, B_c if backward else B_r), "seqlen and reps", MAX_ITEMS, "CTAs")
        if backward:
            at_most(cdiv(N, B_r) * cdiv(N, B_c), "seqlen", MAX_ELEMENTS, "block pairs")
    too_far = (f"startup={s0:g} s and tile_time={t:g} s give a makespan beyond float64 (not finite): give "
               "seconds of a real GPU")
    st = round(_finite(s0 / t, too_far), 6)
    if causal:                          # the simulation adds up every CTA's tiles and start-up: keep the sum finite
        _finite(float(reps * cdiv(N, B_c if backward else B_r)) * (cdiv(N, B_r if backward else B_c) + st), too_far)
    tiles = _finite(_makespan_tiles(N, reps, S, B_r, B_c, causal, backward, order, st), too_far)
    return _finite(t * tiles, too_far)
