"""The numbers book/04b_what_limits quotes (per-SM rates, the tile roofline, the prefill model's check)."""

from __future__ import annotations

from functools import cache

import numpy as np

import labcore as lc
from labcore.published import published
from labcore.units import unit_label

from ..display import Table, Tables
from . import Numbers, published_values

__all__ = ["numbers", "prefill_comparison_summary", "fa3_over_fa2_h100", "measured_prefill_table", "measured_numbers"]


@cache
def numbers() -> Numbers:
    """Fields:

    - H100 rates: ``h100_sms``, ``h100_tensor_flop_per_clock`` (per SM), ``h100_clock_GHz``,
      ``h100_derived_TFLOPs`` (their product), ``h100_exp_TFLOPs`` (exponentials per second / 1e12),
      ``h100_tensor_over_exp`` (quoted tensor FLOP/s over exponentials/s), ``h100_smem_TBs``;
      ``a100_tensor_per_exp`` / ``b200_tensor_per_exp`` (tensor FLOP per exponential, per clock and SM);
    - tiles (:func:`labcore.tile_roofline`, cycles in ``.mma``, ``.exp``, ``.smem``, and ``.bound``):
      ``b200_forward`` (M = N = d = 128), ``b200_forward_2cta`` (M = 256), ``b200_backward``, ``a100_forward``,
      ``h100_forward``; ``b200_backward_excess_pct`` (backward bottleneck over its MMA, %);
    - published figures in display units (a range as ``name`` and ``name_hi``): ``fa4_excess_over_mma_pct``,
      ``fa2_speedup_vs_fa1``, ``fa2_a100_pct``, ``fa2_h100_pct``, ``mma_sync_pct``, ``fa3_fwd_speedup``,
      ``fa3_bwd_speedup``, ``fa3_fp16_TFLOPs``, ``fa3_fp16_pct``, ``fa3_figure_max_TFLOPs``, ``fa3_fp8_PFLOPs``,
      ``fa4_bf16_TFLOPs``, ``fa4_bf16_pct``, ``fa4_emulated_exp_pct``; ``fa4_rescale_threshold`` (log2 units);
    - ``mma_efficiency_pct`` (the model's one calibrated constant, %);
    - ``check``: :func:`prefill_comparison_summary` of the default comparison, as a record;
    - ``tensor_growth`` (B200 over A100 tensor FLOP per clock per SM), ``tile_2cta_growth`` (2-CTA over 1-CTA tile
      MMA cycles), ``fp32_lanes_b200`` (the FMA lanes charged on B200), ``fa4_balance``
      (:func:`labcore.fa4_emulation_balance` on B200, a record), ``fa4_balance_with_cvt`` (its share with one more
      FP32 op per score, the BF16 conversion); :func:`fa3_over_fa2_h100`'s fields.

    Source: the GPU presets' rate notes; Zadouri et al. 2026 (FlashAttention-4), Tables 1 and 3; labcore.published.
    """
    A100, H100, B200 = (lc.get_gpu(g) for g in ("A100", "H100", "B200"))
    h100_exp = H100.exp_ops_per_clock_per_sm * H100.num_sms * H100.tensor_clock
    b200_backward = lc.tile_roofline("B200", pass_="backward")
    pub = published_values(
        fa4_excess_over_mma_pct=("fa4.bottleneck_excess_over_mma", 100),
        fa2_speedup_vs_fa1="fa2.speedup_vs_fa1",
        fa2_a100_pct=("fa2.a100_fraction_of_peak", 100),
        fa2_h100_pct=("fa3.fa2_h100_utilization", 100),
        mma_sync_pct=("fa3.mma_sync_fraction_hopper", 100),
        fa3_fwd_speedup="fa3.fwd_speedup_vs_fa2",
        fa3_bwd_speedup="fa3.bwd_speedup_vs_fa2",
        fa3_fp16_TFLOPs=("fa3.h100_fp16_peak", 1e-12),
        fa3_fp16_pct=("fa3.h100_fp16_fraction", 100),
        fa3_figure_max_TFLOPs=("fa3.h100_fp16_figure_max", 1e-12),
        fa3_fp8_PFLOPs=("fa3.h100_fp8_peak", 1e-15),
        fa4_bf16_TFLOPs=("fa4.b200_bf16_peak", 1e-12),
        fa4_bf16_pct=("fa4.b200_bf16_fraction", 100),
        fa4_emulated_exp_pct=("fa4.exp_emulation_share", 100),
    )
    return Numbers(
        h100_sms=H100.num_sms,
        h100_tensor_flop_per_clock=H100.tensor_flop_per_clock_per_sm,
        h100_clock_GHz=H100.tensor_clock / 1e9,
        h100_derived_TFLOPs=H100.derived_tensor_flops / 1e12,
        h100_exp_TFLOPs=h100_exp / 1e12,
        h100_tensor_over_exp=H100.tensor_flops / h100_exp,
        h100_smem_TBs=H100.smem_bytes_per_clock_per_sm * H100.num_sms * H100.tensor_clock / 1e12,
        a100_tensor_per_exp=A100.tensor_flop_per_clock_per_sm / A100.exp_ops_per_clock_per_sm,
        b200_tensor_per_exp=B200.tensor_flop_per_clock_per_sm / B200.exp_ops_per_clock_per_sm,
        b200_forward=lc.tile_roofline("B200"),
        b200_forward_2cta=lc.tile_roofline("B200", M=256),
        b200_backward=b200_backward,
        b200_backward_excess_pct=100 * b200_backward.excess_over_mma(),
        a100_forward=lc.tile_roofline("A100"),
        h100_forward=lc.tile_roofline("H100"),
        **pub,
        fa4_rescale_threshold=published("fa4.rescale_threshold").value,
        mma_efficiency_pct=100 * lc.PREFILL_DEFAULTS["mma_efficiency"],
        check=Numbers(**prefill_comparison_summary()),
        tensor_growth=B200.tensor_flop_per_clock_per_sm / A100.tensor_flop_per_clock_per_sm,
        tile_2cta_growth=lc.tile_roofline("B200", M=256).mma / lc.tile_roofline("B200").mma,
        fp32_lanes_b200=lc.PREFILL_DEFAULTS["fp32_lanes"],
        fa4_balance=Numbers(**lc.fa4_emulation_balance("B200")),
        fa4_balance_with_cvt=lc.fa4_emulation_balance(
            "B200", fwd_fma_ops=lc.PREFILL_DEFAULTS["fwd_fma_ops"] + 1)["share"],
        **fa3_over_fa2_h100(),
    )


def fa3_over_fa2_h100() -> dict:
    """The model's FlashAttention-3 / FlashAttention-2 throughput ratio on an H100 over the papers' settings.

    Returns:
        dict: ``fa3_over_fa2_d128`` (forward, d = 128, 16k tokens, no mask), ``fa3_over_fa2_lo`` / ``fa3_over_fa2_hi``
        (over d in 64, 128, 256; 512 to 16k tokens; with and without a causal mask; forward and forward + backward;
        batch x seqlen = 16k, hidden size 2048).
    Source:
        :func:`labcore.prefill_time`.
    """
    r = {}
    for d in (64, 128, 256):
        for N in (512, 1024, 2048, 4096, 8192, 16384):
            for causal in (False, True):
                for pass_ in ("forward", "forward+backward"):
                    kw = dict(batch=16384 // N, heads=2048 // d, seqlen=N, head_dim=d, causal=causal, pass_=pass_)
                    r[d, N, causal, pass_] = float(lc.prefill_time("H100", generation="fa3", **kw)["tflops"]
                                                   / lc.prefill_time("H100", generation="fa2", **kw)["tflops"])
    return dict(fa3_over_fa2_d128=r[128, 16384, False, "forward"], fa3_over_fa2_lo=min(r.values()),
                fa3_over_fa2_hi=max(r.values()))


def prefill_comparison_summary(c: dict | None = None) -> dict:
    """The numbers §4b.5 quotes about the prefill model against the published bars, by name.

    The checked bars, fixed in advance, are FlashAttention-2 on the A100 (FA2 paper Fig. 4) and
    FlashAttention-3 on the H100 (the FA3 bars of FA3 paper Fig. 5), as in :func:`labcore.compare_prefill`'s
    ``summary["checked"]``. Percentages are in % (errors signed: model / measured - 1).

    Args:
        c: a result of :func:`labcore.compare_prefill` (dict); default: ``compare_prefill()`` with the defaults.

    Returns:
        dict: ``n_checked`` and ``n_within`` (int: checked bars, and those within +-15%), ``share``,
        ``share_fa2``, ``share_fa3`` (% within +-15%: all checked, the A100 set, the H100 set), ``worst`` (%,
        the largest error among checked bars), ``worst_desc`` (str, e.g. ``"FA3, with a causal mask,"``),
        ``worst_seqlen`` and ``worst_d`` (int, that bar's shape); ``long_max`` (% largest absolute error over checked
        bars with seqlen >= 8192 and d >= 128); ``short_blocks`` (key blocks a CTA visits at 512 tokens) and
        ``short_mean`` (% mean error of checked bars at 512 tokens); ``a100_512_causal`` / ``a100_512_noncausal``
        (% mean error of the A100 bars at 512 tokens with / without a causal mask); ``fa3_d64`` (% mean error of
        FlashAttention-3 at d = 64, 16k tokens); ``fa2_h100_16k`` (% mean error on the FA2 paper's H100 bars,
        Fig. 7, at 16k tokens); ``fa2_d256`` (% mean error of FlashAttention-2, FA3 paper Fig. 5e, 16k tokens);
        ``d256_n``, ``d256_within``, ``d256_worst`` and the same with ``_causal`` (FlashAttention-2's bars at d = 256
        on the H100, Fig. 5e and 5f: bars, bars within the tolerance, % worst error); ``tolerance_pct`` (the
        acceptance tolerance, :data:`labcore.PREFILL_CHECK_TOLERANCE`, in %);
        ``fa4_model_TFLOPs`` (the model's FlashAttention-4 on a B200, batch 1, 16 heads, 32k tokens, d = 128),
        ``fa4_err`` (% against the published ``fa4.b200_bf16_peak``) and ``fa4_bound`` (its forward tile's
        bound, str); ``fp8_model_PFLOPs`` (the model's FlashAttention-3 in FP8 on an H100, batch 1, 8 heads,
        16896 tokens, d = 256); ``missed_fa2`` / ``missed_fa3`` (int) and ``missed_fa2_list`` / ``missed_fa3_list``
        (str, e.g. ``"no mask, 512 tokens: d = 64, 128; causal, 1k tokens: d = 64"``): the checked bars outside
        +-15% per set; ``miss_min`` (% the smallest error among them: all are the model too fast) and
        ``miss_max_seqlen`` (the longest of them); ``overlap_pct`` (% of the shorter unit hidden,
        :func:`labcore.fa3_ablation_overlap`), ``cta_latency_us`` (µs, per-CTA start-up), ``wgmma_pct`` (% WGMMA
        efficiency), ``goal_pct`` (the 80% goal), ``ablation_before_TFLOPs`` / ``ablation_after_TFLOPs``
        (FlashAttention-3's Table 2 without / with warp specialisation) and ``a100_ctas_per_sm`` (FlashAttention-2's occupancy on the A100 at d = 128).

    Raises: TypeError if ``c`` is not a dict; ValueError if it lacks a key of ``compare_prefill``'s result.

    Source: as :func:`labcore.compare_prefill` and :func:`labcore.prefill_time`; the FA4 figure from
    ``labcore.published`` (Zadouri et al. 2026, FlashAttention-4).
    """
    if c is None:
        c = lc.compare_prefill()
    if not isinstance(c, dict):
        raise TypeError(f"c must be the dict compare_prefill() returns, got {type(c).__name__}")
    missing = [k for k in ("figure", "generation", "causal", "seqlen", "head_dim", "error", "summary") if k not in c]
    if missing:
        raise ValueError(f"c lacks {', '.join(missing)}: pass the dict compare_prefill() returns")
    fig, gen, err = c["figure"].astype(str), c["generation"], c["error"]
    seqlen, head_dim, causal = c["seqlen"], c["head_dim"], c["causal"]
    a100 = np.char.startswith(fig, "fa2_fig4")
    checked = a100 | (gen == "fa3")
    n, share, worst = c["summary"]["checked"]
    iw = int(np.flatnonzero(checked)[np.argmax(np.abs(err[checked]))])
    mean = lambda mask: 100 * float(err[mask].mean())  # noqa: E731
    r4 = lc.prefill_time("B200", batch=1, heads=16, seqlen=32768, head_dim=128, generation="fa4")
    r8 = lc.prefill_time("H100", batch=1, heads=8, seqlen=16896, head_dim=256, generation="fa3", dtype="fp8")
    return {
        "n_checked": n,
        "n_within": round(share * n),
        "share": 100 * share,
        "worst": 100 * worst,
        "share_fa2": 100 * c["summary"]["fa2_a100"][1],
        "share_fa3": 100 * c["summary"]["fa3_h100"][1],
        "worst_desc": f"{gen[iw].upper()}, {'with' if causal[iw] else 'without'} a causal mask,",
        "worst_seqlen": int(seqlen[iw]),
        "worst_d": int(head_dim[iw]),
        "long_max": 100 * float(np.abs(err[checked & (seqlen >= 8192) & (head_dim >= 128)]).max()),
        "short_blocks": 512 // lc.PREFILL_DEFAULTS["block_kv"],
        "short_mean": mean(checked & (seqlen == 512)),
        "a100_512_noncausal": mean(a100 & (seqlen == 512) & ~causal),
        "a100_512_causal": mean(a100 & (seqlen == 512) & causal),
        "fa3_d64": mean((gen == "fa3") & (head_dim == 64) & (seqlen == 16384)),
        "fa2_h100_16k": mean(np.char.startswith(fig, "fa2_fig7") & (seqlen == 16384)),
        "fa2_d256": mean((fig == "fa3_fig5e") & (gen == "fa2") & (seqlen == 16384)),
        "tolerance_pct": 100 * lc.PREFILL_CHECK_TOLERANCE,
        **_d256(c),
        "fa4_model_TFLOPs": float(r4["tflops"]),
        "fa4_err": 100 * (float(r4["tflops"]) * 1e12 / published("fa4.b200_bf16_peak").value - 1),
        "fa4_bound": r4["fwd_tile"]["bound"],
        "fp8_model_PFLOPs": float(r8["tflops"]) / 1e3,
        **_misses(c, a100, checked),
        "overlap_pct": 100 * lc.fa3_ablation_overlap(),
        "goal_pct": 80,                         # the share of checked bars the model was set to match, fixed before it was
        "ablation_before_TFLOPs": published("fa3.ablation_no_warp_specialization_flops").value / 1e12,
        "ablation_after_TFLOPs": published("fa3.ablation_flops").value / 1e12,
        "cta_latency_us": 1e6 * lc.PREFILL_DEFAULTS["cta_latency"],
        "wgmma_pct": 100 * lc.PREFILL_DEFAULTS["wgmma_efficiency"],
        "a100_ctas_per_sm": lc.prefill_schedule.prefill_ctas_per_sm("A100-80GB-SXM", "fa2", 128),
    }


def _d256(c: dict) -> dict:
    """FlashAttention-2 at d = 256 on the H100 (FA3 paper Fig. 5e without a mask, 5f with one): bars, bars within the
    tolerance, and the signed error of the worst, per panel, from ``compare_prefill``'s summary."""
    out = {}
    for tag, fig in (("d256", "fa3_fig5e/fa2"), ("d256_causal", "fa3_fig5f/fa2")):
        n, share, worst = c["summary"][fig]
        out.update({f"{tag}_n": n, f"{tag}_within": round(share * n), f"{tag}_worst": 100 * worst})
    return out


def _misses(c: dict, a100, checked) -> dict:
    """The checked bars outside +-15%, per generation: counts, a readable list, and their error range (%)."""
    err, seqlen, d, causal = c["error"], c["seqlen"], c["head_dim"], c["causal"]
    miss = checked & (np.abs(err) > lc.PREFILL_CHECK_TOLERANCE)
    out = {}
    for name, sel in (("fa2", miss & a100), ("fa3", miss & ~a100)):
        groups = {}
        for i in np.flatnonzero(sel):
            groups.setdefault((bool(causal[i]), int(seqlen[i])), []).append(int(d[i]))
        out[f"missed_{name}"] = int(sel.sum())
        out[f"missed_{name}_list"] = "; ".join(
            f"{'causal' if cz else 'no mask'}, {n // 1024}k tokens: d = {', '.join(map(str, sorted(ds)))}"
            if n >= 1024 else f"{'causal' if cz else 'no mask'}, {n} tokens: d = {', '.join(map(str, sorted(ds)))}"
            for (cz, n), ds in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])))
    out["miss_min"] = 100 * float(err[miss].min()) if miss.any() else 0.0
    out["miss_max_seqlen"] = int(seqlen[miss].max()) if miss.any() else 0
    return out


# ------------------------------------------------------------------ measured on an H200 (§4b.6)

_PREFILL_GENERATION = {"flash": "fa2", "cudnn": "fa3"}


@cache
def _prefill_measured(kernel: str) -> dict:
    from labcore.measured import compare_prefill_measured

    return compare_prefill_measured(kernel, generation=_PREFILL_GENERATION[kernel])


def measured_prefill_table(kernel: str = "flash") -> Tables:
    """§4b.6's tables: the measured throughput of one prefill kernel on the H200 beside the model's, per sequence
    length, one table per pass (forward, then forward + backward), a row per head dimension and mask.

    Args:
        kernel: ``"flash"`` (PyTorch's FlashAttention-2, against the model's FA2) or ``"cudnn"`` (cuDNN's fused
            attention, against the model's FA3, the closest Hopper kernel it has).
    Returns:
        :class:`flashbook.display.Tables` of two tables, cells ``"measured / model"`` in TFLOP/s (the papers' FLOP
        count).
    Raises:
        ValueError: an unknown kernel.
    Source: :func:`labcore.measured.compare_prefill_measured`.
    """
    if kernel not in _PREFILL_GENERATION:
        raise ValueError(f"kernel must be one of {', '.join(_PREFILL_GENERATION)}, got {kernel!r}")
    c = _prefill_measured(kernel)
    seqlens = sorted(set(int(n) for n in c["seqlen"]))
    cell = {(str(p), int(d), bool(m), int(n)): (mt, mo) for p, d, m, n, mt, mo in
            zip(c["pass_"], c["head_dim"], c["causal"], c["seqlen"], c["measured_tflops"], c["model_tflops"])}
    name = {"flash": "PyTorch's FlashAttention-2 (SDPA flash backend)",
            "cudnn": "cuDNN's fused attention (SDPA cuDNN backend)"}[kernel]
    model = {"flash": "FA2", "cudnn": "FA3"}[kernel]
    tables = []
    for p in ("forward", "forward+backward"):
        rows = [(f"d = {d}" + (", causal" if m else ""),
                 *(f"{cell[p, d, m, n][0]:.0f} / {cell[p, d, m, n][1]:.0f}" if (p, d, m, n) in cell else "—"
                   for n in seqlens))
                for d in (64, 128) for m in (False, True)]
        tables.append(Table(rows, ("", *(f"N = {n:,}" for n in seqlens)), caption=(
            f"{p.capitalize()}: {name} measured on an H200 / labcore.prefill_time's {model} model on the H200 "
            f"preset, {unit_label('', 'TFLOP/s')}; BF16, batch x N = {int(c['batch'][0] * c['seqlen'][0]):,} "
            f"tokens, heads x d = {int(c['heads'][0] * c['head_dim'][0]):,} (labcore/data/measured_h200.csv)")))
    return Tables(*tables)


@cache
def measured_numbers() -> Numbers:
    """The numbers §4b.6 quotes about the H200 measurements (percentages in %, errors model time / measured - 1).

    Fields: ``tokens`` and ``hidden`` (batch x N and heads x d of the prefill rows), ``long_from`` (the length from
    which the forward's error is summarised, 2,048 tokens), ``short`` (the shortest length); ``copy_GiB`` (the copy's
    buffer); ``copy_TBs`` and ``copy_pct`` (the measured copy bandwidth, TB/s and % of the preset's),
    ``preset_TBs``; ``mm_TFLOPs``, ``mm_pct``, ``preset_TFLOPs`` (the BF16 matrix product likewise);
    ``sm_clock_GHz`` (nvidia-smi's reading after the run), ``preset_clock_GHz`` (the preset's model clock),
    ``mm_at_clock_pct`` (the matrix product as % of the peak at the read clock); ``date`` and
    ``machine``; for PyTorch's FlashAttention-2 against the FA2 model: ``fwd_long_max`` (largest absolute error of the
    forward at N >= 2,048), ``fwd_short_worst`` (most negative forward error, at 512 tokens with a mask),
    ``fb_lo``/``fb_hi`` (range of the absolute error of forward + backward), ``fb_long_lo``/``fb_long_hi`` (the same at N >= 2,048);
    ``fa2_peak`` (its best measured TFLOP/s) and ``fa2_peak_pct_mm`` (% of the measured matrix product);
    for cuDNN: ``cudnn_peak``, ``cudnn_peak_pct_mm``, ``cudnn_over_fa2`` (best over best), ``cudnn_fwd_hi``
    (largest forward error against the FA3 model, %), ``cudnn_fb_lo``/``cudnn_fb_hi`` (forward + backward absolute error
    range, %), ``cudnn_fb_slow_lo``/``cudnn_fb_slow_hi`` (its forward + backward, measured over modelled time),
    ``cudnn_fwd_slow_hi`` (its forward's largest measured over modelled time); ``bwd_long_lo``/``bwd_long_hi``
    (% by which FA2's backward alone, forward + backward less the forward, is shorter in the model than measured,
    from ``long_from`` up) and ``bwd_hi`` (the largest, at any length).
    Source: :mod:`labcore.measured`.
    """
    from labcore.measured import ceiling_check, measured_rows

    ce = ceiling_check("H200")
    f, cu = _prefill_measured("flash"), _prefill_measured("cudnn")
    fwd, fb = f["pass_"] == "forward", f["pass_"] == "forward+backward"
    long_from = 2048
    long_ = f["seqlen"] >= long_from
    copy = [r for r in measured_rows("ceiling") if r["kernel"] == "copy"][0]
    err = 100 * f["err"]
    cerr = 100 * cu["err"]
    cfwd, cfb = cu["pass_"] == "forward", cu["pass_"] == "forward+backward"
    # the backward alone: forward + backward less the forward, measured and modelled, per shape
    key = lambda i: (int(f["head_dim"][i]), bool(f["causal"][i]), int(f["seqlen"][i]))  # noqa: E731
    fwd_of = {key(i): (f["measured"][i], f["model"][i]) for i in np.flatnonzero(fwd)}
    bwd = {key(i): ((f["model"][i] - fwd_of[key(i)][1]) / (f["measured"][i] - fwd_of[key(i)][0]) - 1)
           for i in np.flatnonzero(fb)}
    bwd_err = 100 * np.array(list(bwd.values()))
    bwd_long = 100 * np.array([e for k, e in bwd.items() if k[2] >= long_from])
    return Numbers(
        tokens=int(f["batch"][0] * f["seqlen"][0]), hidden=int(f["heads"][0] * f["head_dim"][0]),
        long_from=long_from, short=int(f["seqlen"].min()), copy_GiB=copy["bytes"] / 2 / 2 ** 30,
        copy_TBs=ce["bandwidth"] / 1e12, copy_pct=100 * ce["bandwidth_ratio"], preset_TBs=ce["preset_bandwidth"] / 1e12,
        mm_TFLOPs=ce["matmul"] / 1e12, mm_pct=100 * ce["flops_ratio"], preset_TFLOPs=ce["preset_flops"] / 1e12,
        sm_clock_GHz=ce["sm_clock"] / 1e9, preset_clock_GHz=ce["preset_clock"] / 1e9,
        mm_at_clock_pct=100 * ce["matmul"] / (ce["preset_flops"] * ce["sm_clock"] / ce["preset_clock"]),
        date=ce["date"], machine=ce["machine"],
        fwd_long_max=float(np.max(np.abs(err[fwd & long_]))), fwd_short_worst=float(np.min(err[fwd])),
        fb_lo=float(np.min(np.abs(err[fb]))), fb_hi=float(np.max(np.abs(err[fb]))),
        fb_long_lo=float(np.min(np.abs(err[fb & long_]))), fb_long_hi=float(np.max(np.abs(err[fb & long_]))),
        bwd_long_lo=float(np.min(-bwd_long)), bwd_long_hi=float(np.max(-bwd_long)), bwd_hi=float(np.max(-bwd_err)),
        cudnn_fb_slow_lo=float(np.min(cu["measured"][cfb] / cu["model"][cfb])),
        cudnn_fb_slow_hi=float(np.max(cu["measured"][cfb] / cu["model"][cfb])),
        cudnn_fwd_slow_hi=float(np.max(cu["measured"][cfwd] / cu["model"][cfwd])),
        fa2_peak=float(np.max(f["measured_tflops"])),
        fa2_peak_pct_mm=float(100 * np.max(f["measured_tflops"]) * 1e12 / ce["matmul"]),
        cudnn_peak=float(np.max(cu["measured_tflops"])),
        cudnn_peak_pct_mm=float(100 * np.max(cu["measured_tflops"]) * 1e12 / ce["matmul"]),
        cudnn_over_fa2=float(np.max(cu["measured_tflops"]) / np.max(f["measured_tflops"])),
        cudnn_fwd_hi=float(np.max(cerr[cfwd])),
        cudnn_fb_lo=float(np.min(np.abs(cerr[cfb]))), cudnn_fb_hi=float(np.max(np.abs(cerr[cfb]))),
    )
