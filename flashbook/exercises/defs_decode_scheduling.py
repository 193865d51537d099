"""Exercises 16-17 (the decode-scheduling page, §6b): two split plans on a skewed batch, MLA's compute-bound threshold.

Written like :mod:`flashbook.exercises.defs_hardware`: parameters (variant 0 = the page's numbers) and the ranges
of a variant, a reference computed from ``labcore`` at run time (:func:`labcore.plan_flash_attn`,
:func:`labcore.plan_lean`, :func:`labcore.mla_intensity`, :func:`labcore.mla_compute_bound_threshold`), known
mistakes as functions of the reference, and texts whose preset values are ``{placeholders}``.

Sources: flash-attn ``num_splits_heuristic`` and ``flash_fwd_kernel.h`` (one split count, whole KV blocks);
Sanovar et al. 2024 (LeanAttention: equal shares across requests); FlashMLA README and deep-dive docs/20250422.
"""
from __future__ import annotations

import numpy as np

import labcore
from labcore.checks import cdiv
from labcore.decode_model import flash_attn_block_n
from labcore.published import published
from labcore.units import fmt_flop_rate, fmt_rate

from .feedback import an
from .model import Exercise, Mistake, Part

__all__ = ["EXERCISES", "H800_DEEP_DIVE"]

#: The rates exercise 17's variant 0 uses: the FlashMLA deep-dive's H800 at its throttled clock.
H800_DEEP_DIVE = "H800 (FlashMLA deep-dive)"


# ---- exercise 16: two split plans on a skewed batch ------------------------------------------------------------
_GROUP, _HEAD_DIM = 4, 128     # Llama-3.1-8B's GQA group and head dimension (the page's setting)


def _answer16(p):
    g = labcore.get_gpu(p["gpu"])
    L = np.array([p["long"]] + [p["short"]] * (p["batch"] - 1), dtype=np.int64)
    fa = labcore.plan_flash_attn(L, num_sms=g.num_sms, group_size=_GROUP, head_dim=_HEAD_DIM)
    lean = labcore.plan_lean(L, num_ctas=g.num_sms)
    a, b = float(fa.chunk_tokens.max()), float(lean.work_per_cta.max())
    splits = fa.num_ctas // L.size
    bn = flash_attn_block_n(_HEAD_DIM)
    return ({"fa_keys": a, "lean_keys": b, "ratio": a / b},
            {"splits": splits, "block_n": bn, "blocks": int(cdiv(p["long"], bn)), "num_sms": g.num_sms,
             "n_short": p["batch"] - 1, "total": int(L.sum()), "gpu_an": an(p["gpu"]), "group": _GROUP,
             "d": _HEAD_DIM, "no_round": float(cdiv(p["long"], splits)), "mean_len": float(L.mean())})


_EX16 = Exercise(
    number=16, label="ex-split-plans", title="Two split plans on a skewed batch", derive=_answer16,
    template="A decode batch on {gpu_an} ({num_sms} SMs) has {batch} requests (GQA group {group}, d = {d}): one of "
             "{long:,} keys and {n_short} of {short:,} keys. flash-attn gives every request {splits} splits; a split covers "
             "ceil(blocks / {splits}) blocks of {block_n} keys, with blocks = ceil(longest / {block_n}), clipped to the "
             "request's length. (a) How many keys does the busiest flash-attn CTA read? (b) LeanAttention cuts all "
             "{total:,} keys into {num_sms} shares as equal as whole keys allow: keys of the largest share? "
             "(c) The ratio (a) / (b).",
    params={"gpu": "H100", "batch": 64, "long": 15_000, "short": 1024},
    ranges={"gpu": ("A100", "H100", "B200"), "batch": (16, 32, 48, 64),
            "long": tuple(range(9_000, 30_001, 1_000)), "short": (256, 384, 512, 768, 1024, 1536)},
    # flash-attn splits (fewer CTAs than SMs), the longest request alone sets its makespan, and Lean is better
    valid=lambda p, r, c: c["splits"] > 1 and r["ratio"] > 1.5 and p["short"] < r["fa_keys"] < p["long"],
    parts=(Part("fa_keys", "busiest flash-attn CTA", "keys", atol=0.5, decimals=0),
           Part("lean_keys", "largest Lean share", "keys", atol=0.5, decimals=0),
           Part("ratio", "(a) / (b)", "", rtol=1e-2, decimals=2)),
    mistakes=(
        Mistake("no_block_rounding", "fa_keys", lambda r, c: c["no_round"],
                "flash-attn splits whole blocks of {block_n} keys: a split is ceil({blocks} / {splits}) blocks, "
                "not ceil({long:,} / {splits}) keys"),
        Mistake("no_split", "fa_keys", lambda r, c: float(c["long"]),
                "that is the whole longest request; it is cut into {splits} splits"),
        Mistake("per_request", "lean_keys", lambda r, c: c["mean_len"],
                "that is the mean request length; Lean cuts the keys of all requests together into {num_sms} shares"),
        Mistake("long_only", "lean_keys", lambda r, c: float(cdiv(c["long"], c["num_sms"])),
                "you shared only the longest request; Lean cuts all {total:,} keys of the batch"),
        Mistake("inverted", "ratio", lambda r, c: 1 / r["ratio"], "that is (b) / (a); the question asks for (a) / (b)")),
    hint="a dict {'fa_keys': ..., 'lean_keys': ..., 'ratio': ...} or a tuple in that order",
    source="page §6b.1; flash-attn flash_api.cpp (num_splits_heuristic), LeanAttention (Sanovar et al. 2024)")


# ---- exercise 17: MLA's compute-bound threshold -----------------------------------------------------------------
def _rates17(gpu: str) -> tuple[float, float]:
    if gpu == H800_DEEP_DIVE:
        return published("flashmla.h800_throttled_flops").value, published("flashmla.h800_bandwidth").value
    g = labcore.get_gpu(gpu)
    return g.tensor_flops, g.hbm_bandwidth


def _answer17(p):
    F, B = _rates17(p["gpu"])
    dims = labcore.MLA_DIMS
    d_qk, d_v = dims["d_c"] + dims["d_rope"], dims["d_c"]
    t = labcore.mla_compute_bound_threshold(flops=F, bandwidth=B, d_qk=d_qk, d_v=d_v)
    inten = labcore.mla_intensity(p["rows"], d_qk=d_qk, d_v=d_v)
    return ({"intensity": inten, "threshold": t["exact"]},
            {"d_qk": d_qk, "d_v": d_v, "ridge": t["ridge"], "approx": t["approx"], "qk_only": float(p["rows"]),
             "gpu_text": "an H800 at its throttled clock" if p["gpu"] == H800_DEEP_DIVE else an(p["gpu"]),
             "flops": fmt_flop_rate(F, digits=0), "bandwidth": fmt_rate(B, unit="TB", digits=2)})


_EX17 = Exercise(
    number=17, label="ex-mla-threshold", title="When MLA decode turns compute-bound", derive=_answer17,
    template="Absorbed MLA decode reads one cached row of {d_qk} BF16 values per token, shared by all h_q x s_q "
             "query rows; per row and token it does 2 x {d_qk} FLOPs for the score and 2 x {d_v} for its share of "
             "P V. On {gpu_text} ({flops}, {bandwidth}): (a) the FLOPs per byte at h_q x s_q = {rows}; (b) the "
             "h_q x s_q at which decode stops being memory-bound (exactly, not with a rounded rule).",
    params={"gpu": H800_DEEP_DIVE, "rows": 128},
    ranges={"gpu": (H800_DEEP_DIVE, "A100-80GB", "H100", "H200", "B200"), "rows": (16, 32, 64, 128, 256, 512)},
    parts=(Part("intensity", "FLOPs per byte", "FLOP/byte", rtol=1e-2, digits=3),
           Part("threshold", "compute-bound from h_q x s_q", "", rtol=1e-2, digits=3)),
    mistakes=(
        Mistake("elements_not_bytes", "intensity", lambda r, c: 2 * r["intensity"],
                "that is FLOPs per element; each BF16 value is 2 bytes"),
        Mistake("qk_only", "intensity", lambda r, c: c["qk_only"],
                "you counted the scores only; P V adds 2 x {d_v} FLOPs per row and token"),
        Mistake("rounded_rule", "threshold", lambda r, c: c["approx"],
                "that is the rounded rule (F / B) / 2; count the FLOPs per byte of one row exactly"),
        Mistake("ridge", "threshold", lambda r, c: c["ridge"],
                "that is the ridge point F / B in FLOP/byte; divide it by the FLOPs per byte of one query row"),
        Mistake("elements_threshold", "threshold", lambda r, c: r["threshold"] / 2,
                "each cached value is 2 bytes: one row's intensity is FLOPs over 2 x {d_qk} bytes")),
    hint="a dict {'intensity': ..., 'threshold': ...} or a tuple (intensity, threshold)",
    source="page §6b.3; FlashMLA deep-dive docs/20250422 (FLOPs per byte, the threshold); DeepSeek-V2 §2.1")

EXERCISES = (_EX16, _EX17)
