"""Exercises 14-15 (§5b): causal CTAs in launch order against LPT, and packing a ragged batch against padding it.

Written like :mod:`flashbook.exercises.defs_hardware`: parameters (variant 0 = the book's numbers) and the ranges of
a variant, a reference computed from ``labcore`` at run time, known mistakes as functions of the reference, and
texts whose computed values are ``{placeholders}``.

Sources: Graham 1969 (list scheduling, LPT); flash-attn ``flash_fwd_launch_template.h`` (FA2's grid,
``m_block = blockIdx.x``) and ``hopper/tile_scheduler.hpp`` (LPT); ``flash_attn_varlen_func`` (packed batches).
"""
from __future__ import annotations

import labcore

from .feedback import PCT
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

EXERCISES = (_EX14, _EX15)
