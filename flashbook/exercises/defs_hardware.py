"""Exercises 7-13 (lecture §12 and §4b): non-matmul cost, decode padding and splits, the KV-cache floor, the
megakernel's ideal, the tail of the last wave, what bounds the forward tile on Blackwell.

Written like :mod:`flashbook.exercises.defs_attention`: parameters (variant 0 = the lecture's numbers) and
the ranges of a variant, a reference computed from ``labcore`` at run time, known mistakes as functions of
the reference, and texts whose preset values are ``{placeholders}`` filled from the computed quantities.
Presets are looked up through ``labcore.get_gpu`` / ``labcore.get_model`` at run time (a changed preset
changes every text, a test says so).

Sources: lecture §12 (exercises and answers); FlashAttention-4 (Zadouri et al. 2026) for exercise 13.
"""
from __future__ import annotations

from fractions import Fraction

import labcore
from labcore import MODEL_DEFAULTS, decode_attention_time, kv_cache_bytes, tile_roofline, wave_utilization
from labcore.checks import cdiv
from labcore.units import GB, MB, GiB, fmt_bytes, fmt_flop_rate, fmt_rate, fmt_seconds

from .feedback import K_ONLY, PCT, an, binary_unit, kilo
from .model import Exercise, Mistake, Part

__all__ = ["EXERCISES"]

_CONTEXTS = (16_384, 32_768, 65_536, 131_072)


# ---- exercise 7: non-matmul cost ----------------------------------------------------------------------------
def _answer7(p):
    g = labcore.get_gpu(p["gpu"])
    r = g.nonmatmul_cost_ratio
    return {"pct": p["nonmatmul_share_pct"] * r}, {
        "ratio": r, "matmul_rate": fmt_flop_rate(g.tensor_flops, digits=0),
        "nonmatmul_rate": fmt_flop_rate(g.fp32_flops, digits=1), "share_pct": p["nonmatmul_share_pct"]}


_EX7 = Exercise(
    number=7, label="ex-nonmatmul-cost", title="Why non-matmul FLOPs are expensive", derive=_answer7,
    template="{gpu}: {matmul_rate} FP16 matmul, {nonmatmul_rate} FP32 non-matmul. If non-matmul work is "
             "{share_pct:g}% of the matmul FLOPs, its time is what percentage of the matmul time?",
    params={"gpu": "A100", "nonmatmul_share_pct": 1.0},
    ranges={"gpu": ("A100", "H100"), "nonmatmul_share_pct": tuple(k / 2 for k in range(1, 13))},
    parts=(Part("pct", "non-matmul time", "% of matmul time", atol=0.5, decimals=1),),
    mistakes=(
        Mistake("no_cost_ratio", "pct", lambda r, c: r["pct"] / c["ratio"],
                "a non-matmul FLOP is not as cheap as a matmul FLOP: scale by {matmul_rate} / {nonmatmul_rate}"),
        Mistake("ratio_inverted", "pct", lambda r, c: r["pct"] / c["ratio"] ** 2,
                "you divided by the cost ratio; non-matmul FLOPs are slower, so multiply by {matmul_rate} / "
                "{nonmatmul_rate}"),
        Mistake("share_of_total", "pct", lambda r, c: 100 * r["pct"] / (100 + r["pct"]),
                "that is the share of the total time; the question compares with the matmul time alone"),
        Mistake("fraction", "pct", lambda r, c: r["pct"] / 100, PCT)),
    hint="one number in percent, e.g. answer = 12.5")

# the decode shapes of exercises 8 and 9 (lecture §12: batch 1, 64K keys, 16 query heads, 2 KV heads, d = 128)
_DECODE = {"batch": 1, "seqlen": 65_536, "num_q_heads": 16, "num_kv_heads": 2, "head_dim": 128}
_DECODE_RANGES = {"batch": (1,), "seqlen": _CONTEXTS, "num_q_heads": (8, 16, 32), "num_kv_heads": (2,),
                  "head_dim": (64, 128)}


def _decode(p, **kw):
    shape = {k: p[k] for k in _DECODE}
    return decode_attention_time(labcore.get_gpu(p["gpu"]), **{**shape, **kw})


# ---- exercise 8: padding at decode --------------------------------------------------------------------------
def _answer8(p):
    g = labcore.get_gpu(p["gpu"])
    est = _decode(p, method="fa2")
    flops = float(est.flops_per_cta)     # 2 matmuls x 2 FLOP per multiply-add x padded rows x N x d
    eff = float(est.flops_per_sm / g.tensor_flops_per_sm)   # the model's efficiency assumption
    return ({"GFLOP": flops / 1e9, "ms": est.total * 1e3},
            {"flops": flops, "rows": est.rows_padded, "per_sm": g.tensor_flops_per_sm, "eff": eff,
             "heads": p["num_q_heads"], "gpu_flops": g.tensor_flops, "est": est,
             "rows_real": est.rows_real, "eff_pct": 100 * eff, "num_sms": g.num_sms, "keys": kilo(p["seqlen"]),
             "gpu_rate": fmt_flop_rate(g.tensor_flops, digits=0),
             "sm_rate": fmt_flop_rate(g.tensor_flops_per_sm, unit="TFLOP", digits=2)})


_EX8 = Exercise(
    number=8, label="ex-decode-padding", title="Padding at decode", derive=_answer8,
    template="Batch {batch}, {keys} keys, {num_q_heads} query heads, d = {head_dim}: FLOPs of one CTA of the non-split "
             "FlashAttention-2 kernel (flash-attn v2.0.9, the flash-decoding post's baseline; from v2.2 flash-attn "
             "splits the keys itself) computing two matmuls on a {rows}-row Q tile, and the time at {eff_pct:.0f}% of "
             "one {gpu} SM's tensor throughput.",
    params={"gpu": "A100", **_DECODE}, ranges={"gpu": ("A100", "H100"), **_DECODE_RANGES},
    # one query row per CTA, every CTA in one wave: one CTA's time is the kernel's
    valid=lambda p, r, c: c["rows_real"] == 1 and c["est"].num_ctas <= c["num_sms"],
    parts=(Part("GFLOP", "FLOPs per CTA", "GFLOP", rtol=1e-2, digits=3),
           Part("ms", "time", "ms", rtol=3e-2, digits=3)),
    mistakes=(
        Mistake("no_padding", "GFLOP", lambda r, c: r["GFLOP"] / c["rows"],
                "the tensor cores compute the whole {rows}-row tile, of which {rows_real} row is real: count the "
                "padded rows too"),
        Mistake("no_factor_2", "GFLOP", lambda r, c: r["GFLOP"] / 2,
                "a multiply-add is 2 FLOPs: each of the two matmuls is 2 x rows x N x d"),
        Mistake("all_heads", "GFLOP", lambda r, c: r["GFLOP"] * c["heads"],
                "that is all {heads} CTAs together; the question asks for one CTA (one query head)"),
        Mistake("no_efficiency", "ms", lambda r, c: c["flops"] / c["per_sm"] * 1e3,
                "you used the SM's peak; at {eff_pct:.0f}% efficiency the time is longer"),
        Mistake("whole_gpu", "ms", lambda r, c: c["flops"] / (c["gpu_flops"] * c["eff"]) * 1e3,
                "one CTA runs on one SM: use one SM's share of the tensor throughput ({gpu_rate} / "
                "{num_sms} SMs = {sm_rate}), not the whole GPU's"),
        Mistake("no_factor_2_time", "ms", lambda r, c: c["flops"] / 2 / (c["per_sm"] * c["eff"]) * 1e3,
                "a multiply-add is 2 FLOPs; your time is half of what the tile costs")),
    hint="a dict {'GFLOP': ..., 'ms': ...} or a tuple (GFLOP, ms)")


# ---- exercise 9: choosing the number of splits --------------------------------------------------------------
_SPLITS = (32, 64)      # the parts' labels and keys name them


def _answer9(p):
    g = labcore.get_gpu(p["gpu"])
    a, b = (_decode(p, method="flash_decoding", num_splits=s) for s in _SPLITS)
    # the mistake "query heads instead of KV heads": one CTA per query head and split
    qa = _decode({**p, "num_kv_heads": p["num_q_heads"]}, method="flash_decoding", num_splits=_SPLITS[0])
    return ({"t32_us": a.total * 1e6, "t64_us": b.total * 1e6, "cause": "A"},
            {"est32": a, "est64": b, "one_wave_64_us": (b.total - (b.waves - 1) * b.cta_time) * 1e6,
             "qheads_32_us": qa.total * 1e6, "num_sms": g.num_sms, "splits_b": b.num_splits,
             "ctas_a": a.num_ctas, "ctas_b": b.num_ctas, "waves_b": b.waves, "last_wave_b": b.running_last,
             "kv_heads": p["num_kv_heads"], "q_heads": p["num_q_heads"], "keys": kilo(p["seqlen"]),
             "group": p["num_q_heads"] // p["num_kv_heads"], "gpu_an": an(p["gpu"]),
             "bandwidth": fmt_rate(g.hbm_bandwidth, unit="GB", digits=0),
             "share_a": fmt_rate(a.bandwidth_per_sm, unit="GB", digits=0),
             "share_a_bytes": a.bandwidth_per_sm, "cap_bytes": MODEL_DEFAULTS["per_sm_bandwidth_cap"],
             "cap": fmt_rate(MODEL_DEFAULTS["per_sm_bandwidth_cap"], unit="GB", digits=0)})


def _valid9(p, r, c):
    # 32 splits fit in one wave, 64 spill a small second wave, the cap does not bind: option A stays the cause
    return (c["ctas_a"] <= c["num_sms"] < c["ctas_b"] and c["waves_b"] == 2 and 2 * c["last_wave_b"] <= c["num_sms"]
            and r["t32_us"] < r["t64_us"] and c["share_a_bytes"] < c["cap_bytes"])


_CAUSE_OPTIONS = (
    ("A", "under the model's rule (one CTA per SM, a partial last wave charged in full), {splits_b} splits give "
     "{ctas_b} CTAs on {num_sms} SMs, and a second wave of only {last_wave_b} CTAs costs a whole per-CTA time", ""),
    ("B", "64 splits do more floating-point work than 32",
     "Both split counts visit the same keys, so the FLOPs are the same; and decode attention here is bound by "
     "reading K and V, not by arithmetic."),
    ("C", "merging 64 partial results costs more than the attention itself",
     "The merge reads {splits_b} partial outputs of {q_heads} x {head_dim} numbers, tiny next to the {keys}-long K "
     "and V; it is not what separates the two."),
    ("D", "each CTA is capped at {cap}, so more CTAs cannot go faster",
     "With {ctas_a} CTAs each gets about {bandwidth} / {ctas_a} = {share_a} of HBM bandwidth, well below the "
     "{cap} cap; the cap does not bind here. Count the CTAs against the {num_sms} SMs instead."),
)

_EX9 = Exercise(
    number=9, label="ex-num-splits", title="Choosing the number of splits", derive=_answer9,
    template="Batch {batch}, {keys} keys, {num_q_heads} query heads, {num_kv_heads} KV heads, d = {head_dim} on "
             "{gpu_an} ({num_sms} SMs): the model's time with 32 and with 64 splits, and why 32 wins in the "
             "model (one CTA per SM, the last wave charged in full).",
    params={"gpu": "A100", **_DECODE}, ranges={"gpu": ("A100", "A100-80GB", "H100", "B200"), **_DECODE_RANGES},
    valid=_valid9,
    parts=(Part("t32_us", "32 splits", "µs", rtol=5e-2, digits=3), Part("t64_us", "64 splits", "µs", rtol=5e-2, digits=3),
           Part("cause", "why", options=_CAUSE_OPTIONS)),
    mistakes=(
        Mistake("one_wave", "t64_us", lambda r, c: c["one_wave_64_us"],
                "that is the time if all {ctas_b} CTAs ran at once; {ctas_b} CTAs on {num_sms} SMs take "
                "{waves_b} waves"),
        Mistake("query_heads", "t32_us", lambda r, c: c["qheads_32_us"],
                "flash-decoding launches one CTA per (sequence, KV head, split): {kv_heads} KV heads, not "
                "{q_heads} query heads (the {group} query heads of a group are packed into one tile)"),
        Mistake("swapped", "t32_us", lambda r, c: r["t64_us"],
                "that is the 64-split time; the two answers look swapped")),
    hint="a dict {'t32_us': ..., 't64_us': ..., 'cause': 'A'/'B'/'C'/'D'} (times from "
         "labcore.decode_attention_time, in µs)")


# ---- exercise 10: the floor of decode attention (reading the KV cache once) --------------------------------
_MODELS = ("Llama-3.2-1B", "Llama-3.1-8B", "CodeLlama-34B")
_GPUS = ("A100", "A100-80GB", "H100", "H200", "B200")


def _answer10(p):
    m, g = labcore.get_model(p["model"]), labcore.get_gpu(p["gpu"])
    shape = dict(seqlen=p["seqlen"], batch=p["batch"], num_kv_heads=m.num_kv_heads, head_dim=m.head_dim,
                 dtype_bytes=2)
    per_layer = float(kv_cache_bytes(**shape))
    total = float(kv_cache_bytes(**shape, num_layers=m.num_layers))
    return ({"layer_MB": per_layer / MB, "total_GB": total / GB, "ms": total / g.hbm_bandwidth * 1e3},
            {"per_layer": per_layer, "total": total, "bw": g.hbm_bandwidth, "layers": total / per_layer,
             "q_over_kv": m.num_heads / m.num_kv_heads, "kv_heads": m.num_kv_heads, "q_heads": m.num_heads,
             "context": kilo(p["seqlen"]), "gpu_an": an(p["gpu"])})


_EX10 = Exercise(
    number=10, label="ex-kv-cache", title="The floor of decode attention", derive=_answer10,
    template="{model}, batch {batch}, {context} context, BF16: KV-cache bytes per layer (MB) and in all (GB), and "
             "the least time to read it once on {gpu_an} (ms).",
    params={"model": "Llama-3.1-8B", "gpu": "H100", "seqlen": 131_072, "batch": 1},
    ranges={"model": _MODELS, "gpu": _GPUS, "seqlen": _CONTEXTS, "batch": (1, 2, 4)},
    valid=lambda p, r, c: c["q_over_kv"] > 1,      # GQA: the query-heads mistake differs from the answer
    parts=(Part("layer_MB", "per layer", "MB", rtol=1e-2, digits=3),
           Part("total_GB", "all layers", "GB", rtol=1e-2, digits=3),
           Part("ms", "time at full bandwidth", "ms", rtol=2e-2, digits=3)),
    mistakes=(
        Mistake("K_only", "layer_MB", lambda r, c: r["layer_MB"] / 2, K_ONLY),
        Mistake("query_heads", "layer_MB", lambda r, c: r["layer_MB"] * c["q_over_kv"],
                "with GQA the cache holds the {kv_heads} KV heads, not the {q_heads} query heads"),
        binary_unit("MiB", "layer_MB", lambda r, c: c["per_layer"]),
        Mistake("K_only_total", "total_GB", lambda r, c: r["total_GB"] / 2, K_ONLY),
        binary_unit("GiB", "total_GB", lambda r, c: c["total"]),
        Mistake("one_layer_time", "ms", lambda r, c: r["ms"] / c["layers"],
                "that is one layer's time; one decode step reads the cache of all layers"),
        Mistake("K_only_time", "ms", lambda r, c: r["ms"] / 2, K_ONLY)),
    hint="a dict {'layer_MB': ..., 'total_GB': ..., 'ms': ...} or a tuple in that order")


# ---- exercise 11: the megakernel's ideal --------------------------------------------------------------------
def _answer11(p):
    m, g = labcore.get_model(p["model"]), labcore.get_gpu(p["gpu"])
    w = float(m.weight_bytes())
    t = w / g.hbm_bandwidth
    n_kernels = p["kernels_per_layer"] * m.num_layers + p["extra_kernels"]
    over = n_kernels * p["overhead_s"]
    return ({"fps": 1 / t, "util_pct": 100 * t / (t + over)},
            {"weights": w, "t": t, "kernels": n_kernels, "overhead": over, "params": float(m.num_params),
             "per_layer_overhead": p["kernels_per_layer"] * p["overhead_s"],
             "weights_text": fmt_bytes(w, unit="GB", digits=2), "layers": m.num_layers, "gpu_an": an(p["gpu"]),
             "gap": fmt_seconds(p["overhead_s"], unit="µs", digits=0)})


_EX11 = Exercise(
    number=11, label="ex-megakernel-ideal", title="The megakernel's ideal", derive=_answer11,
    template="{model} in BF16 on {gpu_an}: the most forward passes per second at batch 1 (weights read "
             "once per pass), and the bandwidth utilisation if {kernels} kernels each add {gap}.",
    params={"model": "Llama-3.2-1B", "gpu": "H100", "kernels_per_layer": 7, "extra_kernels": 2, "overhead_s": 4e-6},
    ranges={"model": ("Llama-3.2-1B", "Llama-3.1-8B"), "gpu": _GPUS, "kernels_per_layer": (5, 6, 7, 8, 9),
            "extra_kernels": (1, 2, 3), "overhead_s": (2e-6, 3e-6, 4e-6, 5e-6, 6e-6)},
    valid=lambda p, r, c: 10 <= r["util_pct"] <= 95,
    parts=(Part("fps", "forwards per second", "1/s", rtol=1e-2, digits=3),
           Part("util_pct", "bandwidth utilisation", "%", atol=1.0, digits=2)),
    mistakes=(
        Mistake("params_not_bytes", "fps", lambda r, c: r["fps"] * c["weights"] / c["params"],
                "you divided by the number of parameters; each BF16 parameter is 2 bytes"),
        Mistake("GiB", "fps", lambda r, c: r["fps"] * GB / GiB,
                "you read {weights_text} as GiB; bandwidth and weight sizes here are decimal (10^9 bytes)"),
        Mistake("time_not_rate", "fps", lambda r, c: c["t"] * 1e3,
                "that is the time per forward in ms; the question asks for forwards per second"),
        Mistake("overhead_share", "util_pct", lambda r, c: 100 - r["util_pct"],
                "that is the share of time lost to the gaps; utilisation is the weight-reading time over the "
                "total"),
        Mistake("one_layer_only", "util_pct",
                lambda r, c: 100 * c["t"] / (c["t"] + c["per_layer_overhead"]),
                "you counted the {kernels_per_layer} kernels of one layer; all {kernels} kernels "
                "({kernels_per_layer} x {layers} layers + {extra_kernels}) add their {gap}"),
        Mistake("fraction", "util_pct", lambda r, c: r["util_pct"] / 100, PCT)),
    hint="a dict {'fps': ..., 'util_pct': ...} or a tuple (fps, util_pct)")


# ---- exercise 12: the tail ----------------------------------------------------------------------------------
def _answer12(p):
    sms, a, b = labcore.get_gpu(p["gpu"]).num_sms, p["a"], p["b"]
    return ({"util192_pct": 100 * float(wave_utilization(a, sms)), "util128_pct": 100 * float(wave_utilization(b, sms))},
            {"sms": sms, "waves_a": cdiv(a, sms), "gpu_an": an(p["gpu"])})


_EX12 = Exercise(
    number=12, label="ex-wave-tail", title="The tail", derive=_answer12,
    template="{a} equal blocks on {gpu_an}'s {sms} SMs: average SM utilisation (%)? And with {b} larger blocks?",
    params={"gpu": "H100", "a": 192, "b": 128},
    ranges={"gpu": ("A100", "H100", "B200"), "a": tuple(range(112, 296, 8)), "b": tuple(range(64, 152, 8))},
    # the first count spills a second wave, the larger blocks fit in one
    valid=lambda p, r, c: c["sms"] < p["a"] < 2 * c["sms"] and p["b"] <= c["sms"] and p["b"] < p["a"],
    parts=(Part("util192_pct", "{a} blocks", "%", atol=0.5, digits=2),
           Part("util128_pct", "{b} blocks", "%", atol=0.5, digits=2)),
    mistakes=(
        Mistake("fractional_waves", "util192_pct", lambda r, c: 100.0,
                "waves are whole: {a} blocks on {sms} SMs take {waves_a} waves, the last only partly full"),
        Mistake("last_wave_only", "util192_pct", lambda r, c: 100 * (c["a"] - c["sms"]) / c["sms"],
                "that is the last wave alone; average over both waves"),
        Mistake("blocks_over_sms", "util192_pct", lambda r, c: 100 * c["a"] / c["sms"],
                "blocks / SMs is more than 100%; divide by (waves x SMs) with whole waves"),
        Mistake("fraction", "util192_pct", lambda r, c: r["util192_pct"] / 100, PCT),
        Mistake("idle_share", "util128_pct", lambda r, c: 100 - r["util128_pct"],
                "that is the idle share; utilisation is the busy share"),
        Mistake("fraction128", "util128_pct", lambda r, c: r["util128_pct"] / 100, PCT)),
    hint="a dict {'util192_pct': ..., 'util128_pct': ...} or a tuple, in percent")


# ---- exercise 13: what bounds the forward tile on Blackwell ---------------------------------------------------
_BOUND_OPTIONS = (
    ("A", "the tensor cores (MMA)",
     "Count both units' cycles: MMA is 4 B_q B_k d / (tensor FLOP per clock), exp is B_q B_k / (exps per clock). "
     "At d = {d} the MMA cycles {shrink}, the exponentials do not."),
    ("B", "the exponential unit (MUFU)", ""),
    ("C", "shared memory",
     "Shared memory reads 3 B_k d operand elements of 2 bytes per 128-row MMA at {smem_per_clock:.0f} bytes "
     "per clock: fewer cycles than the exponentials at d = {d}."),
    ("D", "MMA and the exponential unit, tied",
     "That is the paper's d = 128 tile. At d = {d} the MMA work {shrinks} while the number of exponentials "
     "(one per score, B_q x B_k) stays the same."),
)


def _answer13(p):
    g = labcore.get_gpu(p["gpu"])
    t = tile_roofline(g, M=p["M"], N=p["N"], d=p["d"], dtype=p["dtype"])
    units = {"A": t.mma, "B": t.exp, "C": t.smem}
    top = max(units, key=units.get)
    letter = "D" if t.mma == t.exp and top in ("A", "B") else top
    # the least share s of each row's exponentials moved to the FMA units with (1 - s) x exp <= MMA
    share = max(0.0, 1.0 - t.mma / t.exp)
    f = Fraction(p["d"], 128)
    return ({"bound": letter, "excess_pct": 100 * (t.exp / t.mma - 1), "share_pct": 100 * share},
            {"tile": t, "mma": t.mma, "exp": t.exp, "smem": t.smem,
             "mma_half": t.mma / 2,          # one matmul only, or a multiply-add counted as 1 FLOP
             "tile_d128": tile_roofline(g, M=p["M"], N=p["N"], d=128, dtype=p["dtype"]),
             "mma_per_clock": g.tensor_flop_per_clock_per_sm, "exp_per_clock": g.exp_ops_per_clock_per_sm,
             "smem_per_clock": g.smem_bytes_per_clock_per_sm,
             "tile_shape": f"B_q = B_k = {p['M']}" if p["M"] == p["N"] else f"B_q = {p['M']}, B_k = {p['N']}",
             "shrink": "halve" if f == Fraction(1, 2) else f"fall to {f} of d = 128's",
             "shrinks": "halves" if f == Fraction(1, 2) else f"falls to {f} of d = 128's"})


_EX13 = Exercise(
    number=13, label="ex-fa4-exp-bound", title="What bounds the forward tile on Blackwell", derive=_answer13,
    template="{gpu}, BF16, one forward tile of {tile_shape} and head dim d = {d}, from the per-SM rates "
             "({mma_per_clock:,.0f} tensor FLOP, {exp_per_clock:.0f} exponentials, {smem_per_clock:.0f} bytes "
             "of shared memory per clock): which unit bounds the "
             "tile, by how much (%) it exceeds the MMA cycles, and what share (%) of each row's "
             "exponentials the FMA units must emulate so that MMA bounds the tile again.",
    params={"gpu": "B200", "M": 128, "N": 128, "d": 64, "dtype": "bf16"},
    ranges={"gpu": ("B200",), "M": (64, 128), "N": (64, 128, 256), "d": (32, 48, 64, 80, 96), "dtype": ("bf16",)},
    # the exponential unit alone bounds the tile (below the paper's d = 128 tie), shared memory below both
    valid=lambda p, r, c: r["bound"] == "B" and c["smem"] < c["exp"] and p["d"] < 128,
    parts=(Part("bound", "bounding unit", options=_BOUND_OPTIONS),
           Part("excess_pct", "excess over MMA", "%", atol=0.5, digits=3),
           Part("share_pct", "share emulated on FMA units", "%", atol=0.5, digits=3)),
    mistakes=(
        Mistake("ratio_not_excess", "excess_pct", lambda r, c: c["exp"] / c["mma"],
                "that is the ratio exp / MMA; the excess is (ratio - 1), in percent"),
        Mistake("share_for_excess", "excess_pct", lambda r, c: r["share_pct"],
                "that is the share to remove from the exponential unit; the excess compares the exp cycles "
                "with the MMA cycles: exp / MMA - 1"),
        Mistake("mma_halved", "excess_pct", lambda r, c: 100 * (c["exp"] / c["mma_half"] - 1),
                "the tile runs two matmuls (S = Q K^T and O = P V), each 2 FLOP per multiply-add: "
                "MMA cycles = 4 B_q B_k d / {mma_per_clock:.0f}"),
        Mistake("excess_for_share", "share_pct", lambda r, c: r["excess_pct"],
                "that is the excess of exp over MMA; the emulated share f must satisfy (1 - f) x exp <= MMA, "
                "so f = 1 - MMA / exp"),
        Mistake("mma_halved_share", "share_pct", lambda r, c: 100 * (1 - c["mma_half"] / c["exp"]),
                "the tile runs two matmuls (S = Q K^T and O = P V), each 2 FLOP per multiply-add: "
                "MMA cycles = 4 B_q B_k d / {mma_per_clock:.0f}"),
        Mistake("fraction", "share_pct", lambda r, c: r["share_pct"] / 100, PCT)),
    hint="a dict {'bound': 'A'/'B'/'C'/'D', 'excess_pct': ..., 'share_pct': ...} or a tuple in that order",
    source="FlashAttention-4 (Zadouri et al. 2026), Sec. 2.2 (per-SM rates), Sec. 3.1.1 (tile roofline), "
           "Sec. 3.1.3 (exp emulation on 10-25% of each row)")

EXERCISES = (_EX7, _EX8, _EX9, _EX10, _EX11, _EX12, _EX13)
