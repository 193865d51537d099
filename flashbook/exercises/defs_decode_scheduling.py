"""Exercises 16-17 and 19-20 (the decode-scheduling page, §6b): two split plans on a skewed batch, MLA's compute-bound
threshold, the last pages of a paged cache, and a mixed batch run serial or fused.

Written like :mod:`flashbook.exercises.defs_hardware`: parameters (variant 0 = the page's numbers) and the ranges
of a variant, a reference computed from ``labcore`` at run time (:func:`labcore.plan_flash_attn`,
:func:`labcore.plan_lean`, :func:`labcore.mla_intensity`, :func:`labcore.mla_compute_bound_threshold`,
:func:`labcore.page_waste`, :func:`labcore.fused_step_time`), known mistakes as functions of the reference, and
texts whose preset values are ``{placeholders}``.

Sources: flash-attn ``num_splits_heuristic`` and ``flash_fwd_kernel.h`` (one split count, whole KV blocks);
Sanovar et al. 2024 (LeanAttention: equal shares of whole KV blocks across requests); FlashMLA README and deep-dive
docs/20250422;
Kwon et al. 2023 (PagedAttention) §4.2; Kamath et al. 2025 (POD-Attention) §3.
"""
from __future__ import annotations

import numpy as np

import labcore
from labcore.checks import cdiv
from labcore.splits import flash_attn_block_n
from labcore.published import published
from labcore.units import fmt_flop_rate, fmt_rate

from .feedback import PCT, an
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
    bn = flash_attn_block_n(_HEAD_DIM)
    lean = labcore.plan_lean(L, num_ctas=g.num_sms, block_n=bn)
    a, b = float(fa.chunk_tokens.max()), float(lean.work_per_cta.max())
    splits = fa.num_ctas // L.size
    return ({"fa_keys": a, "lean_keys": b, "ratio": a / b},
            {"splits": splits, "block_n": bn, "blocks": int(cdiv(p["long"], bn)), "num_sms": g.num_sms,
             "n_short": p["batch"] - 1, "total": int(L.sum()), "gpu_an": an(p["gpu"]), "group": _GROUP,
             "d": _HEAD_DIM, "no_round": float(cdiv(p["long"], splits)), "mean_len": float(L.mean()),
             "all_blocks": int(cdiv(L, bn).sum()), "single_keys": float(cdiv(int(L.sum()), g.num_sms))})


_EX16 = Exercise(
    number=16, label="ex-split-plans", title="Two split plans on a skewed batch", derive=_answer16,
    template="A decode batch on {gpu_an} ({num_sms} SMs) has {batch} requests (GQA group {group}, d = {d}): one of "
             "{long:,} keys and {n_short} of {short:,} keys. flash-attn gives every request {splits} splits; a split covers "
             "ceil(blocks / {splits}) blocks of {block_n} keys, with blocks = ceil(longest / {block_n}), clipped to the "
             "request's length. (a) How many keys does the busiest flash-attn CTA read? (b) LeanAttention cuts every "
             "request into blocks of {block_n} keys (a request's last block may be shorter) and deals all the blocks, "
             "in request order, into {num_sms} shares of as equal a number of whole blocks as possible: how many keys "
             "does the largest share hold? (c) The ratio (a) / (b).",
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
        Mistake("single_keys", "lean_keys", lambda r, c: c["single_keys"],
                "that cuts the {total:,} keys at single keys; a kernel iterates over whole blocks of {block_n} keys, "
                "and the shares are equal numbers of whole blocks"),
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


# ---- exercise 19: the last pages of a paged cache ---------------------------------------------------------------
def _answer19(p):
    L, ps = np.array(p["lengths"], dtype=np.int64), p["page_size"]
    w = labcore.page_waste(L, ps)
    return ({"pages": float(w["pages"]), "wasted": float(w["wasted"]), "waste_pct": 100 * w["waste_fraction"]},
            {"allocated": w["allocated"], "used": w["used"], "batch": int(L.size),
             "lengths_text": ", ".join(f"{x:,}" for x in L.tolist()), "floor_pages": float((L // ps).sum()),
             "pooled_pages": float(cdiv(int(L.sum()), ps)), "filled_last": float((L % ps).sum()),
             "partial": int(np.count_nonzero(L % ps)), "half_rule": L.size * (ps - 1) / 2,
             "of_used_pct": 100 * w["wasted"] / w["used"],
             "empty_note": " (a request of 0 tokens owns none)" if np.any(L == 0) else ""})


def _draw19(rng):
    return {"lengths": tuple(rng.randint(1, 4000) for _ in range(rng.choice((4, 5, 6))))}


_EX19 = Exercise(
    number=19, label="ex-page-waste", title="The last pages of a paged cache", derive=_answer19,
    template="A paged KV cache with pages of {page_size} tokens holds a batch of {batch} requests of {lengths_text} "
             "tokens. Each request owns whole pages of its own, taken from the pool one at a time{empty_note}. "
             "(a) How many pages does the batch hold? (b) How many token slots of those pages are empty? (c) What "
             "share of the allocated slots is that (%)?",
    params={"lengths": (0, 1, 700, 3, 2048, 129), "page_size": 16},
    ranges={"page_size": (8, 16, 32, 64)},
    draw=_draw19,
    valid=lambda p, r, c: c["partial"] >= 2 and r["pages"] > c["batch"],
    parts=(Part("pages", "pages", "", atol=0.5, decimals=0),
           Part("wasted", "empty slots", "slots", atol=0.5, decimals=0),
           Part("waste_pct", "share of the allocated slots", "%", atol=0.005, decimals=2)),
    mistakes=(
        Mistake("rounded_down", "pages", lambda r, c: c["floor_pages"],
                "that rounds each request's pages down; a request of L tokens needs ceil(L / {page_size}) pages, "
                "its last one partly filled"),
        Mistake("pooled", "pages", lambda r, c: c["pooled_pages"],
                "that packs all {used:,} tokens into shared pages; each request owns pages of its own, so every "
                "request with a partial last page keeps it"),
        Mistake("filled_slots", "wasted", lambda r, c: c["filled_last"],
                "those are the filled slots of the partial last pages; the question asks for their empty ones"),
        Mistake("full_pages", "wasted", lambda r, c: float(c["partial"] * c["page_size"]),
                "that counts each partial last page as wasted in full; only its empty slots are"),
        Mistake("half_page_rule", "wasted", lambda r, c: c["half_rule"],
                "that is the average rule, (page size - 1) / 2 per request; count each request's last page"),
        Mistake("of_used", "waste_pct", lambda r, c: c["of_used_pct"],
                "that is the waste over the {used:,} slots in use; the question asks for its share of the "
                "{allocated:,} allocated slots"),
        Mistake("fraction", "waste_pct", lambda r, c: r["waste_pct"] / 100, PCT)),
    hint="a dict {'pages': ..., 'wasted': ..., 'waste_pct': ...} or a tuple in that order",
    source="page §6b.2; Kwon et al. 2023 (PagedAttention) §4.2 (waste only in a request's last block)")


# ---- exercise 20: a mixed batch, serial or fused ----------------------------------------------------------------
def _mixed_demands() -> dict:
    """The page's mixed step (:data:`labcore.POD_STEP`) as whole-µs demands: the chunk's
    compute as its kernel alone spends it (its last round's tail included), the decodes' tensor-core work and each
    part's bytes, from :func:`labcore.mixed_batch_demands` (the physical memory rule, 64-row decode tiles)."""
    s = labcore.POD_STEP
    sh = labcore.get_decode_shape(s["shape"])
    dm = labcore.mixed_batch_demands(s["gpu"], chunk=s["chunk"], context=s["context"], decode_batch=s["decode_batch"],
                                     decode_seqlen=s["context"], **sh)
    us = {"p_compute": dm["prefill_total"] - dm["prefill_overhead"], "p_memory": dm["prefill_memory"],
          "d_compute": dm["decode_compute"], "d_memory": dm["decode_memory"], "p_launch": dm["prefill_overhead"],
          "d_launch": dm["decode_overhead"]}
    return {k: round(v * 1e6) for k, v in us.items()}


def _answer20(p):
    r = labcore.fused_step_time(prefill_compute=p["p_compute"] * 1e-6, prefill_memory=p["p_memory"] * 1e-6,
                                decode_compute=p["d_compute"] * 1e-6, decode_memory=p["d_memory"] * 1e-6,
                                prefill_overhead=p["p_launch"] * 1e-6, decode_overhead=p["d_launch"] * 1e-6)
    launch = max(p["p_launch"], p["d_launch"])
    sums = {"compute": p["p_compute"] + p["d_compute"], "memory": p["p_memory"] + p["d_memory"]}
    other = "memory" if r["bound"] == "compute" else "compute"
    serial, fused = 1e6 * r["serial"], 1e6 * r["fused"]
    return ({"serial_us": serial, "fused_us": fused, "gain_pct": 100 * r["gain"]},
            {"bound": r["bound"], "other": other, "launch": launch, "ideal_us": 1e6 * r["ideal"],
             "other_us": float(sums.get(other, 0) + launch), "no_launch_serial": serial - p["p_launch"] - p["d_launch"],
             "no_overlap": float(sum(p[k] for k in ("p_compute", "p_memory", "d_compute", "d_memory", "p_launch",
                                                     "d_launch")))})


_EX20 = Exercise(
    number=20, label="ex-mixed-batch", title="A prefill chunk beside the decodes", derive=_answer20,
    template="One step of a mixed batch: a prefill chunk whose attention needs {p_compute:,} µs of tensor-core time "
             "and {p_memory:,} µs of HBM time, and decodes that need {d_compute:,} µs and {d_memory:,} µs. Alone, a "
             "kernel takes the larger of its two demands plus its launch cost ({p_launch} µs for the chunk's kernel, "
             "{d_launch} µs for the decodes' kernels). (a) The step's time with the two kernels in "
             "series (µs)? (b) In one fused kernel that shares every SM between both parts, the tensor cores serve "
             "both compute demands and the HBM both memory demands; the step pays the larger launch cost once and "
             "is never shorter than either part alone: its time (µs)? (c) The gain, serial / fused - 1 (%)?",
    params=_mixed_demands(),
    ranges={"p_compute": tuple(range(200, 2001, 50)), "p_memory": tuple(range(20, 401, 20)),
            "d_compute": tuple(range(100, 1001, 50)), "d_memory": tuple(range(200, 2001, 50)),
            "p_launch": (5,), "d_launch": (5, 10)},
    # the chunk compute-bound, the decodes memory-bound, and a summed demand (not one part alone) binds the fused step
    valid=lambda p, r, c: p["p_compute"] > p["p_memory"] and p["d_memory"] > p["d_compute"]
    and c["bound"] in ("compute", "memory"),
    parts=(Part("serial_us", "serial", "µs", atol=0.5, decimals=0),
           Part("fused_us", "fused", "µs", atol=0.5, decimals=0),
           Part("gain_pct", "gain", "%", atol=0.05, decimals=1)),
    mistakes=(
        Mistake("no_overlap", "serial_us", lambda r, c: c["no_overlap"],
                "that adds each kernel's compute and memory demands; within one kernel they overlap, so a kernel "
                "alone takes the larger of the two"),
        Mistake("no_launch", "serial_us", lambda r, c: c["no_launch_serial"],
                "each kernel also pays its launch cost"),
        Mistake("ideal", "fused_us", lambda r, c: c["ideal_us"],
                "that is the longer kernel alone; fused, both parts still share the same tensor cores and the same "
                "HBM, and the summed {bound} demand is longer"),
        Mistake("other_sum", "fused_us", lambda r, c: c["other_us"],
                "that is the summed {other} demand; the summed {bound} demand is larger and sets the fused time"),
        Mistake("no_fused_launch", "fused_us", lambda r, c: r["fused_us"] - c["launch"],
                "the fused kernel still pays one launch cost, the larger of the two ({launch} µs)"),
        Mistake("saved_share", "gain_pct", lambda r, c: 100 * (1 - r["fused_us"] / r["serial_us"]),
                "that is the time fusing saves as a share of the serial time; the gain is serial / fused - 1"),
        Mistake("fraction", "gain_pct", lambda r, c: r["gain_pct"] / 100, PCT)),
    hint="a dict {'serial_us': ..., 'fused_us': ..., 'gain_pct': ...} or a tuple in that order",
    source="page §6b.4; Kamath et al. 2025 (POD-Attention) §3; labcore.fused_step_time")

EXERCISES = (_EX16, _EX17, _EX19, _EX20)
