"""Exercises 14-15 and 18 (§5b): causal CTAs in launch order against LPT, packing a ragged batch against padding it,
and the backward's FP32 atomic adds into dQ.

Written like :mod:`flashbook.exercises.defs_hardware`: parameters (variant 0 = the book's numbers) and the ranges of
a variant, a reference computed from ``labcore`` at run time, known mistakes as functions of the reference, and
texts whose computed values are ``{placeholders}``.

Sources: Graham 1969 (list scheduling, LPT); flash-attn ``flash_fwd_launch_template.h`` (FA2's grid,
``m_block = blockIdx.x``) and ``hopper/tile_scheduler.hpp`` (LPT); ``flash_attn_varlen_func`` (packed batches);
``flash_bwd_kernel.h`` (dQaccum in FP32, ``atomicAdd``) and Dao 2023, Algorithm 2.
"""
from __future__ import annotations

import labcore

from .feedback import PCT, binary_unit
from .model import Exercise, Mistake, Part

__all__ = ["EXERCISES"]


# ---- exercise 14: causal CTAs, launch order against LPT -------------------------------------------------------
def _answer14(p):
    costs = labcore.causal_cta_costs(p["blocks"] * p["block"], batch=1, heads=p["heads"], block_q=p["block"],
                                     block_kv=p["block"])
    launch = labcore.list_schedule(costs, p["sms"], order="launch")
    lpt = labcore.list_schedule(costs, p["sms"], order="lpt")
    return ({"launch": launch.makespan, "lpt": lpt.makespan, "gain_pct": 100 * (launch.makespan / lpt.makespan - 1)},
            {"ideal": launch.ideal, "longest": float(costs.max()), "ctas": int(costs.size), "work": float(costs.sum()),
             "blocks_1": p["blocks"] - 1, "heads_text": "one head" if p["heads"] == 1 else f"{p['heads']} heads"})


_EX14 = Exercise(
    number=14, label="ex-causal-lpt", title="Causal CTAs: launch order against LPT", derive=_answer14,
    template="A causal forward with {heads_text} of {blocks} query blocks: CTA m (m = 0 .. {blocks_1}) of each "
             "head visits m + 1 key blocks and takes m + 1 time units. The {ctas} CTAs run on {sms} SMs, one at a "
             "time each; a free SM takes the next CTA. Give the makespan in FA2's launch order (each head's CTAs "
             "shortest first, head after head), the makespan in LPT order (longest first), and the throughput LPT "
             "adds (launch makespan / LPT makespan - 1, in %).",
    params={"blocks": 6, "heads": 1, "sms": 4, "block": 128},
    ranges={"blocks": tuple(range(4, 11)), "heads": (1, 2), "sms": (2, 3, 4, 5, 6), "block": (128,)},
    valid=lambda p, r, c: r["lpt"] < r["launch"] and c["ctas"] > p["sms"],
    parts=(Part("launch", "launch order", "time units", atol=0.05, decimals=1),
           Part("lpt", "LPT order", "time units", atol=0.05, decimals=1),
           Part("gain_pct", "LPT's gain", "%", atol=0.5, decimals=1)),
    mistakes=(
        Mistake("ideal_launch", "launch", lambda r, c: c["ideal"],
                "that is the total work over the SMs ({work:g} / {sms}), the makespan only if the work could be cut "
                "anywhere; deal the CTAs one by one, each to the SM that frees up first"),
        Mistake("swapped", "launch", lambda r, c: r["lpt"],
                "that is the LPT makespan; in launch order the longest CTAs of each head start last"),
        Mistake("ideal_lpt", "lpt", lambda r, c: c["ideal"],
                "that is the total work over the SMs ({work:g} / {sms}); whole CTAs cannot be split, so LPT ends "
                "later than that"),
        Mistake("inverted_gain", "gain_pct", lambda r, c: 100 * (1 - r["lpt"] / r["launch"]),
                "that is the time LPT saves as a share of the launch order's; the gain in throughput is launch / "
                "LPT - 1"),
        Mistake("fraction", "gain_pct", lambda r, c: r["gain_pct"] / 100, PCT)),
    hint="a dict {'launch': ..., 'lpt': ..., 'gain_pct': ...} or a tuple in that order",
    source="Graham 1969 (list scheduling; LPT); flash-attn hopper/tile_scheduler.hpp; FlashAttention-4 §3.3")


# ---- exercise 15: packing against padding ---------------------------------------------------------------------
def _answer15(p):
    n = list(p["lengths"])
    s = labcore.varlen_savings(n, d=p["d"], block_q=p["block"], block_kv=p["block"], causal=False)
    g = labcore.varlen_grid(n, heads=p["heads"], block_q=p["block"], num_sms=1)
    tokens = 1 - sum(n) / (len(n) * max(n))
    return ({"flops_pct": 100 * s["flops_saved"], "empty": float(g["empty"])},
            {"tokens_pct": 100 * tokens, "launched": g["launched"], "working": g["working"],
             "lengths_text": ", ".join(f"{x:,}" for x in n), "batch": len(n), "longest": max(n),
             "per_head": g["empty"] // p["heads"]})


def _draw15(rng):
    k = rng.choice((3, 4, 5))
    return {"lengths": tuple(sorted(128 * rng.randint(1, 32) for _ in range(k)))}


_EX15 = Exercise(
    number=15, label="ex-varlen-padding", title="Packing against padding", derive=_answer15,
    template="A batch of {batch} sequences of {lengths_text} tokens, {heads} heads of d = {d}, no mask, "
             "{block} x {block} tiles. Padded to its longest sequence, every sequence costs as much as the longest; "
             "packed (flash-attn's varlen call), each costs its own tiles. What share of the tensor-core FLOPs "
             "does packing save (%)? FA2's varlen kernel still launches ceil(longest / {block}) query-block CTAs "
             "per sequence and head, and those past their sequence's end return at once: how many such empty CTAs "
             "does it launch?",
    params={"lengths": (256, 512, 1024, 2048), "heads": 16, "d": 128, "block": 128},
    ranges={"heads": (8, 16, 32), "d": (64, 128), "block": (128,)},
    draw=_draw15,
    valid=lambda p, r, c: len(set(p["lengths"])) == len(p["lengths"]) and r["empty"] > 0,
    parts=(Part("flops_pct", "FLOPs saved", "%", atol=0.5, decimals=1),
           Part("empty", "empty CTAs", "", atol=0.5, decimals=0)),
    mistakes=(
        Mistake("tokens_not_flops", "flops_pct", lambda r, c: c["tokens_pct"],
                "that is the share of padding tokens; attention's FLOPs grow with the square of a sequence's "
                "length (queries x keys), so the saving is larger"),
        Mistake("fraction", "flops_pct", lambda r, c: r["flops_pct"] / 100, PCT),
        Mistake("one_head", "empty", lambda r, c: c["per_head"],
                "that is one head's empty CTAs; the grid has a CTA per (query block, sequence, head) for all "
                "{heads} heads"),
        Mistake("launched", "empty", lambda r, c: float(c["launched"]),
                "that is every CTA FA2 launches; the question asks for those with no work"),
        Mistake("working", "empty", lambda r, c: float(c["working"]),
                "those are the CTAs with work (a query block inside its sequence); the empty ones are the rest")),
    hint="a dict {'flops_pct': ..., 'empty': ...} or a tuple (flops_pct, empty)",
    source="flash-attn flash_attn_varlen_func and flash_fwd_kernel.h (CTAs past a sequence's end return)")


# ---- exercise 18: the backward's atomic adds into dQ ----------------------------------------------------------
def _answer18(p):
    kw = dict(block_q=p["block_q"], block_kv=p["block_kv"])
    cnt = labcore.dq_atomic_counts(p["N"], p["d"], causal=p["causal"], **kw)
    other = labcore.dq_atomic_counts(p["N"], p["d"], causal=not p["causal"], **kw)
    mask = ("that counts every pair of blocks; with a causal mask the pairs entirely above the diagonal are "
            "skipped and add nothing into dQ") if p["causal"] else \
        "that skips the blocks above the diagonal; without a mask every CTA visits every query block"
    return ({"adds_M": cnt["atomic_adds"] / 1e6, "rmw_MB": cnt["rmw_bytes"] / 1e6},
            {"T_r": cnt["T_r"], "T_c": cnt["T_c"], "rmw_bytes": cnt["rmw_bytes"],
             "total_MB": (cnt["rmw_bytes"] + cnt["hbm_bytes"]) / 1e6, "other_adds_M": other["atomic_adds"] / 1e6,
             "other_MB": other["rmw_bytes"] / 1e6, "dq_M": p["N"] * p["d"] / 1e6, "mask_feedback": mask,
             "mask_text": "causal (a pair of blocks entirely above the diagonal is skipped)" if p["causal"]
             else "no mask"})


_EX18 = Exercise(
    number=18, label="ex-dq-atomics", title="Atomic adds into $dQ$", derive=_answer18,
    template="FlashAttention-2's backward for one head with N = {N:,}, d = {d}, B_r = {block_q}, B_c = {block_kv}, "
             "{mask_text}. Each CTA owns one key block and, for every query block i it visits, adds its partial "
             "dQ_i (B_r x d values) into an FP32 buffer dQaccum, one atomic add per element. (a) How many atomic "
             "adds does the kernel make (millions)? (b) How many bytes of read-modify-write traffic do they move "
             "(MB = 10^6 bytes)?",
    params={"N": 4096, "d": 128, "block_q": 128, "block_kv": 128, "causal": True},
    ranges={"N": (1024, 2048, 4096, 8192, 16384), "d": (64, 128), "block_q": (64, 128), "block_kv": (64, 128),
            "causal": (True, False)},
    valid=lambda p, r, c: c["T_c"] > 1,
    parts=(Part("adds_M", "atomic adds", "million", rtol=5e-3, digits=3),
           Part("rmw_MB", "read-modify-write traffic", "MB", rtol=5e-3, digits=3)),
    mistakes=(
        Mistake("mask_blocks", "adds_M", lambda r, c: c["other_adds_M"], "{mask_feedback}"),
        Mistake("dq_size", "adds_M", lambda r, c: c["dq_M"],
                "that is the size of dQ; each element receives an add from every CTA whose key block its query "
                "block visits ({T_c} CTAs for a query block that sees every key block)"),
        Mistake("no_d", "adds_M", lambda r, c: r["adds_M"] / c["d"],
                "that is one add per row of a tile; the partial dQ_i has d = {d} columns, one add per element"),
        Mistake("four_bytes", "rmw_MB", lambda r, c: r["rmw_MB"] / 2,
                "that is 4 bytes per add (2-byte elements read and written, or only the write of an FP32 value); "
                "dQaccum is FP32 and an atomic add reads the 4-byte value and writes it back: 8 bytes per add"),
        Mistake("bf16_once", "rmw_MB", lambda r, c: r["rmw_MB"] / 4,
                "that counts each add as one 2-byte element moved; dQaccum is FP32 (4 bytes), read and written "
                "by every add"),
        Mistake("mask_bytes", "rmw_MB", lambda r, c: c["other_MB"], "{mask_feedback}"),
        Mistake("side_kernels", "rmw_MB", lambda r, c: c["total_MB"],
                "that adds the pre-kernel's zeroing of dQaccum and the post-kernel's conversion to dQ; the "
                "question asks for the atomic adds' own traffic"),
        binary_unit("MiB", "rmw_MB", lambda r, c: c["rmw_bytes"])),
    hint="a dict {'adds_M': ..., 'rmw_MB': ...} or a tuple (adds_M, rmw_MB), 3 significant digits",
    source="page §5b.1; flash-attn flash_bwd_kernel.h (dQaccum in FP32, atomicAdd); Dao 2023, Algorithm 2")

EXERCISES = (_EX14, _EX15, _EX18)
