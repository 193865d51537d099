"""The numbers book/06_flash_decoding quotes (the CTA x wave decode model against the flash-decoding post)."""

from __future__ import annotations

from functools import cache

import numpy as np

import labcore as lc
from labcore.units import unit_label

from ..display import Table
from . import Numbers

__all__ = ["numbers", "last_wave_summary", "occupancy_comparisons", "occupancy_summary", "kernel_gap_summary",
           "measured_decode_table", "measured_decode_numbers"]

@cache
def numbers() -> Numbers:
    """Fields (A100, the post's CodeLlama-34B shape with 4-way tensor parallelism, unless named otherwise):

    - §6.1, batch 1 at 64K keys: ``fa2_ctas``, ``a100_sms``, ``fa2_sm_share`` (share of SMs with work),
      ``fa2_row_share`` (real rows of the padded tile), ``fa2_useful_share`` (their product), ``fa2_tile_rows``;
    - the model's assumptions: ``efficiency``, ``bandwidth_cap_GBs`` (per SM), ``bytes_in_flight_per_sm``,
      ``wave_latency_us`` (and ``wave_latency_s``), ``launch_us``, ``fd_tile_rows``, ``bandwidth_efficiency``;
      the A100's ``a100_GBs``, ``a100_TFLOPs`` and ``a100_TFLOPs_per_sm``;
    - against the post's table: ``fa2_max_err`` (the base model's largest FlashAttention-2 error), ``fa2_64k_ms``
      (the model's total), ``fa2_64k_compute_ms`` (its one wave of compute alone), ``fa2_64k_fixed_us`` (its fixed
      per-kernel cost),
      ``fa2_64k_measured_ms``, ``fa2_64k_GFLOP_per_cta``, ``fa2_padding_rows``, ``gqa_group``; measured speed-ups
      ``speedup_64k``, ``speedup_128k``, ``speedup_max`` (over FlashAttention) and ``speedup_eager_max``;
      flash-decoding errors ``fd_optimism_lo`` / ``fd_optimism_hi`` (base model, fractions), ``fd_refined_max_err``,
      ``fd_base_mean_err``, ``fd_refined_mean_err``, ``fa2_refined_max_err``; ``n_rows`` (rows of the table),
      ``n_const_rows`` (leading rows with the same batch x seqlen); ``fa2_b256_term_gap`` (batch 256, 256 keys:
      how far apart FlashAttention-2's per-CTA compute and memory terms are, a fraction);
    - the worst row (batch 64, 1K keys): ``row3_best_splits``, ``row3_best_us``, ``row3_heuristic_ctas``,
      ``row3_heuristic_waves``,
      ``row3_heuristic_us``, ``row3_measured_us``;
    - ``last_wave``: :func:`last_wave_summary` as a record; ``occupancy``: :func:`occupancy_summary`; ``gap``:
      :func:`kernel_gap_summary`;
    - §6.4 splits: ``b64_unsplit_ctas``, ``b64_unsplit_us``, ``b64_4_splits_us``, ``b64_16_splits_us`` (batch 64,
      2K keys) and ``s32_ctas``, ``s32_us``, ``s32_GBs_per_sm``, ``s64_ctas``, ``s64_waves``, ``s64_us`` (batch 1,
      64K keys);
    - Llama-3.1-8B on an H100 at 128K tokens: ``l8_kv_MB`` (one layer), ``l8_floor_us``, ``l8_layers``,
      ``l8_all_layers_ms``, ``l8_weights_GB``, ``l8_weights_ms``, ``l8_fd_us``, ``l8_fd_splits``, ``l8_fa2_ms``.

    Source: dao2023flashdecoding (the post's table); :func:`labcore.decode_attention_time`; lecture §6.
    """
    A100, H100 = lc.get_gpu("A100"), lc.get_gpu("H100")
    code, l8 = lc.get_decode_shape("CodeLlama-34B (4-way TP)"), lc.get_decode_shape("Llama-3.1-8B")
    md = lc.MODEL_DEFAULTS
    e = lc.decode_attention_time(A100, batch=1, seqlen=65536, method="fa2", **code)
    c = lc.compare_flash_decoding_a100()
    h = lc.compare_flash_decoding_a100(num_splits="heuristic")
    sp = c["fa2"] / c["flash_decoding"]
    mx = lambda k: float(np.abs(c[k]).max())  # noqa: E731
    mean = lambda k: float(np.abs(c[k]).mean())  # noqa: E731
    t = {
        s: lc.decode_attention_time(A100, batch=64, seqlen=2048, method="flash_decoding", num_splits=s, **code)
        for s in (1, 4, 16)
    }
    s32, s64 = (
        lc.decode_attention_time(A100, batch=1, seqlen=65536, method="flash_decoding", num_splits=s, **code)
        for s in (32, 64)
    )
    kv = lc.kv_cache_bytes(seqlen=131072, num_kv_heads=l8["num_kv_heads"], head_dim=l8["head_dim"])
    fd8 = lc.decode_attention_time(H100, batch=1, seqlen=131072, method="flash_decoding", **l8)
    fa8 = lc.decode_attention_time(H100, batch=1, seqlen=131072, method="fa2", **l8)
    layers = lc.DECODE_SHAPES["Llama-3.1-8B"]["num_layers"]
    row3 = lc.decode_attention_time(A100, batch=64, seqlen=1024, method="flash_decoding", num_splits=1, **code)
    weights = lc.get_model("Llama-3.1-8B").weight_bytes()         # every parameter in BF16, untied embeddings too
    return Numbers(
        fa2_ctas=e.num_ctas,
        a100_sms=A100.num_sms,
        fa2_sm_share=e.active_sms / A100.num_sms,
        fa2_row_share=e.rows_real / e.rows_padded,
        fa2_useful_share=e.active_sms / A100.num_sms * e.rows_real / e.rows_padded,
        fa2_tile_rows=e.rows_padded,
        efficiency=md["efficiency"],
        bandwidth_cap_GBs=md["per_sm_bandwidth_cap"] / 1e9,
        bytes_in_flight_per_sm=md["per_sm_bandwidth_cap"] * md["wave_latency"],
        wave_latency_us=md["wave_latency"] * 1e6,
        wave_latency_s=md["wave_latency"],
        launch_us=md["kernel_overhead"] * 1e6,
        fd_tile_rows=md["fd_block_m"],
        bandwidth_efficiency=md["bandwidth_efficiency"],
        a100_GBs=A100.hbm_bandwidth / 1e9,
        a100_TFLOPs=A100.tensor_flops / 1e12,
        a100_TFLOPs_per_sm=A100.tensor_flops_per_sm / 1e12,
        fa2_max_err=mx("err_model_fa2"),
        fa2_64k_ms=e.total * 1e3,
        fa2_64k_compute_ms=e.compute_time * e.waves * 1e3,
        fa2_64k_fixed_us=e.launch_time * 1e6,
        fa2_64k_measured_ms=c["fa2"][8] * 1e3,
        fa2_64k_GFLOP_per_cta=e.flops_per_cta / 1e9,
        fa2_padding_rows=e.rows_padded - e.rows_real,
        gqa_group=code["num_q_heads"] // code["num_kv_heads"],
        speedup_64k=sp[8],
        speedup_128k=sp[9],
        speedup_max=sp.max(),
        speedup_eager_max=(c["eager"] / c["flash_decoding"]).max(),
        fd_optimism_lo=-float(c["err_model_fd"].max()),
        fd_optimism_hi=-float(c["err_model_fd"].min()),
        fd_refined_max_err=mx("err_refined_fd"),
        fd_base_mean_err=mean("err_model_fd"),
        fd_refined_mean_err=mean("err_refined_fd"),
        fa2_refined_max_err=mx("err_refined_fa2"),
        row3_best_splits=int(c["splits_fd"][2]),
        row3_best_us=c["model_fd"][2] * 1e6,
        row3_heuristic_ctas=row3.num_ctas,
        row3_heuristic_waves=row3.waves,
        row3_heuristic_us=h["model_fd"][2] * 1e6,
        row3_measured_us=c["flash_decoding"][2] * 1e6,
        last_wave=Numbers(**last_wave_summary()),
        occupancy=Numbers(**occupancy_summary()),
        n_rows=len(c["batch"]),
        n_const_rows=int(np.sum(c["batch"] * c["seqlen"] == c["batch"][0] * c["seqlen"][0])),
        fa2_b256_term_gap=_term_gap(lc.decode_attention_time(A100, batch=256, seqlen=256, method="fa2", **code)),
        gap=Numbers(**kernel_gap_summary()),
        b64_unsplit_ctas=t[1].num_ctas,
        b64_unsplit_us=t[1].total * 1e6,
        b64_4_splits_us=t[4].total * 1e6,
        b64_16_splits_us=t[16].total * 1e6,
        s32_ctas=s32.num_ctas,
        s32_us=s32.total * 1e6,
        s32_GBs_per_sm=s32.bandwidth_per_sm / 1e9,
        s64_ctas=s64.num_ctas,
        s64_waves=s64.waves,
        s64_us=s64.total * 1e6,
        l8_kv_MB=kv / 1e6,
        l8_floor_us=kv / H100.hbm_bandwidth * 1e6,
        l8_layers=layers,
        l8_all_layers_ms=layers * kv / H100.hbm_bandwidth * 1e3,
        l8_weights_GB=weights / 1e9,
        l8_weights_ms=weights / H100.hbm_bandwidth * 1e3,
        l8_fd_us=fd8.total * 1e6,
        l8_fd_splits=fd8.num_splits,
        l8_fa2_ms=fa8.total * 1e3,
    )


def _term_gap(e) -> float:
    """How far apart a CTA's compute and memory terms are: ``|t_c - t_m| / max(t_c, t_m)``."""
    return abs(e.compute_time - e.memory_time) / max(e.compute_time, e.memory_time)


def last_wave_summary(by_rule: dict | None = None, gpu="A100") -> dict:
    """The numbers §6 quotes on the two last-wave rules against the flash-decoding post's ten rows, by name.

    Args:
        by_rule: ``{"full": ..., "shared": ...}``, results of
            :func:`labcore.compare_flash_decoding_a100` under each rule
            (dict of dicts); default: computed here with the defaults on ``gpu``.
        gpu: the preset the comparison ran on (name or :class:`labcore.GPU`; default the A100).

    Returns:
        dict; errors are absolute relative errors (fractions, 0.07 = 7%): ``fa2_changed`` (int, FlashAttention-2
        rows whose time the shared rule lowers), ``fa2_mae_full`` / ``fa2_mae_shared`` and ``fa2_max_full`` /
        ``fa2_max_shared`` (mean / largest base-model error under each rule), ``fa2_ref_max_full`` /
        ``fa2_ref_max_shared`` (largest refined-model error); the row the shared rule helps most:
        ``row_batch``, ``row_seqlen`` (int), ``row_ctas``, ``row_waves``, ``row_last`` (CTAs in all, waves,
        CTAs of the last wave, from :func:`labcore.decode_attention_time`), ``row_err_full`` / ``row_err_shared``;
        flash-decoding: ``fd_mae_full`` / ``fd_mae_shared``, ``fd_ref_mae_full`` / ``fd_ref_mae_shared``,
        ``fd_ref_max_shared`` and ``fd_fewer`` (int, rows where the shared rule picks fewer splits).

    Raises: ValueError if ``by_rule`` lacks the rule ``"full"`` or ``"shared"``; TypeError if it is not a dict.

    Source: dao2023flashdecoding (the post's table); lecture §6.3; the rules of :func:`labcore.waves.waves_time`.
    """
    if by_rule is None:
        by_rule = {rule: lc.compare_flash_decoding_a100(gpu, last_wave=rule) for rule in ("full", "shared")}
    if not isinstance(by_rule, dict):
        raise TypeError(
            f"by_rule must be a dict {{rule: compare_flash_decoding_a100(...)}}, got {type(by_rule).__name__}"
        )
    missing = [r for r in ("full", "shared") if r not in by_rule]
    if missing:
        raise ValueError(f"by_rule lacks the rule(s) {', '.join(missing)}; it needs both 'full' and 'shared'")
    f, s = by_rule["full"], by_rule["shared"]
    mae = lambda c, k: float(np.abs(c[k]).mean())  # noqa: E731
    mx = lambda c, k: float(np.abs(c[k]).max())  # noqa: E731
    i = int(np.argmax(np.abs(f["err_model_fa2"]) - np.abs(s["err_model_fa2"])))
    row = lc.decode_attention_time(
        gpu,
        batch=int(f["batch"][i]),
        seqlen=int(f["seqlen"][i]),
        method="fa2",
        num_q_heads=f["num_q_heads"],
        num_kv_heads=f["num_kv_heads"],
        head_dim=f["head_dim"],
    )
    return {
        "fa2_changed": int(np.sum(s["model_fa2"] < f["model_fa2"])),
        "fa2_mae_full": mae(f, "err_model_fa2"),
        "fa2_mae_shared": mae(s, "err_model_fa2"),
        "fa2_max_full": mx(f, "err_model_fa2"),
        "fa2_max_shared": mx(s, "err_model_fa2"),
        "fa2_ref_max_full": mx(f, "err_refined_fa2"),
        "fa2_ref_max_shared": mx(s, "err_refined_fa2"),
        "row_batch": int(f["batch"][i]),
        "row_seqlen": int(f["seqlen"][i]),
        "row_ctas": row.num_ctas,
        "row_waves": row.waves,
        "row_last": row.running_last,
        "row_err_full": abs(float(f["err_model_fa2"][i])),
        "row_err_shared": abs(float(s["err_model_fa2"][i])),
        "fd_mae_full": mae(f, "err_model_fd"),
        "fd_mae_shared": mae(s, "err_model_fd"),
        "fd_ref_mae_full": mae(f, "err_refined_fd"),
        "fd_ref_mae_shared": mae(s, "err_refined_fd"),
        "fd_ref_max_shared": mx(s, "err_refined_fd"),
        "fd_fewer": int(np.sum(s["splits_fd"] < f["splits_fd"])),
    }


#: The four (occupancy, last-wave rule) settings of §6.3's occupancy table, in column order: label -> assumptions.
OCCUPANCY_SETTINGS = {
    "full, 1 CTA/SM": dict(last_wave="full", ctas_per_sm=1),
    "shared, 1 CTA/SM": dict(last_wave="shared", ctas_per_sm=1),
    "full, derived": dict(last_wave="full", ctas_per_sm="derived"),
    "shared, derived": dict(last_wave="shared", ctas_per_sm="derived"),
}


@cache
def occupancy_comparisons(gpu="A100") -> dict:
    """``{label: labcore.compare_flash_decoding_a100(**settings)}`` for the four :data:`OCCUPANCY_SETTINGS`."""
    return {k: lc.compare_flash_decoding_a100(gpu, **a) for k, a in OCCUPANCY_SETTINGS.items()}


def occupancy_summary(gpu="A100") -> dict:
    """The numbers §6.3 quotes on occupancy (CTAs resident per SM) against the flash-decoding post's ten rows.

    Returns:
        dict: the derived occupancy of each kernel on ``gpu`` at d = 128 (``fa2_ctas_per_sm``,
        ``fd_ctas_per_sm``), their shared memory per CTA (``fa2_smem``, ``fd_smem``, bytes), the GPU's
        ``smem_per_sm`` (bytes) and the register-limited count (``by_registers``); for each of the four settings
        of :data:`OCCUPANCY_SETTINGS`, keyed ``<kernel>_<mae|max>_<rule>_<occ>`` with kernel ``fa2``/``fd``, rule
        ``full``/``shared``, occ ``one``/``derived``: the mean and largest absolute base-model error (fractions);
        the worst row (batch 64, 1K keys) with flash-attn's unsplit choice under the derived occupancy:
        ``row3_slots`` (CTA slots), ``row3_ctas``, ``row3_derived_us`` (base model, µs), ``row3_measured_us``;
        and the batch-64, 2K-key unsplit call of §6.4 under the derived occupancy: ``b64_derived_waves``,
        ``b64_derived_us``.
    Source: :func:`labcore.decode_ctas_per_sm`; dao2023flashdecoding; flash-attn ``flash_api.cpp`` (>= 2.5.7).
    """
    g = lc.get_gpu(gpu)
    code = lc.get_decode_shape("CodeLlama-34B (4-way TP)")
    fa = lc.decode_ctas_per_sm(g, method="fa2", head_dim=code["head_dim"])
    fd = lc.decode_ctas_per_sm(g, method="flash_decoding", head_dim=code["head_dim"])
    out = dict(fa2_ctas_per_sm=fa["ctas_per_sm"], fd_ctas_per_sm=fd["ctas_per_sm"], fa2_smem=fa["smem_per_cta"],
               fd_smem=fd["smem_per_cta"], smem_per_sm=g.smem_per_sm, by_registers=fd["by_registers"])
    for label, c in occupancy_comparisons(g).items():
        rule, occ = label.split(", ")
        tag = f"{rule}_{'one' if occ.startswith('1') else 'derived'}"
        for k in ("fa2", "fd"):
            e = np.abs(c[f"err_model_{k}"])
            out[f"{k}_mae_{tag}"], out[f"{k}_max_{tag}"] = float(e.mean()), float(e.max())
    m = lc.load_flash_decoding_a100()
    r3 = lc.decode_attention_time(g, batch=64, seqlen=1024, method="flash_decoding", num_splits=1,
                                  ctas_per_sm="derived", **code)
    b64 = lc.decode_attention_time(g, batch=64, seqlen=2048, method="flash_decoding", num_splits=1,
                                   ctas_per_sm="derived", **code)
    out.update(row3_slots=r3.num_sms * r3.ctas_per_sm, row3_ctas=r3.num_ctas, row3_derived_us=r3.total * 1e6,
               row3_measured_us=float(m["flash_decoding"][2]) * 1e6, b64_derived_waves=b64.waves,
               b64_derived_us=b64.total * 1e6)
    return out


def kernel_gap_summary(gpu="A100") -> dict:
    """The share of the lecture's per-kernel cost in the flash-decoding estimates, and the errors at a graph gap.

    Returns:
        dict: ``launch_us`` (the lecture's ``kernel_overhead``, µs), ``graph_us`` (Hazy's empty-kernel gap inside a
        CUDA graph, µs); ``fd_share_lo`` / ``fd_share_hi``: the fixed per-kernel cost as a fraction of the base
        model's flash-decoding estimate over the ten rows; ``fd_mae_lecture`` / ``fd_mae_graph`` (mean absolute
        base-model error with each gap) and ``fd_ref_mae_lecture`` / ``fd_ref_mae_graph`` (refined);
        ``fa2_max_graph`` (largest FlashAttention-2 base-model error with the graph gap).
    Source: lecture §6.3 (5 µs); spector2025nobubbles (1.3 µs in a CUDA graph); xformers
    ``benchmarks/benchmark_attn_decoding.py`` (replays each call in a CUDA graph).
    """
    lecture = lc.MODEL_DEFAULTS["kernel_overhead"]
    graph = lc.published.published("hazy.launch_time_graph").value
    m = lc.load_flash_decoding_a100()
    shape = {k: m[k] for k in ("num_q_heads", "num_kv_heads", "head_dim")}
    fd = lc.decode_time_grid(gpu, batch=m["batch"], seqlen=m["seqlen"], method="flash_decoding", **shape)
    share = np.where(fd["num_splits"] > 1, 2, 1) * lecture / fd["total"]
    c, cg = lc.compare_flash_decoding_a100(gpu), lc.compare_flash_decoding_a100(gpu, kernel_overhead=graph)
    mae = lambda x, k: float(np.abs(x[k]).mean())  # noqa: E731
    return dict(launch_us=lecture * 1e6, graph_us=graph * 1e6, fd_share_lo=float(share.min()),
                fd_share_hi=float(share.max()), fd_mae_lecture=mae(c, "err_model_fd"),
                fd_mae_graph=mae(cg, "err_model_fd"), fd_ref_mae_lecture=mae(c, "err_refined_fd"),
                fd_ref_mae_graph=mae(cg, "err_refined_fd"), fa2_max_graph=float(np.abs(cg["err_model_fa2"]).max()))


# ------------------------------------------------------------------ measured on an H200 (§6.5)

@cache
def _decode_measured() -> dict:
    from labcore.measured import compare_decode_measured

    return compare_decode_measured()


def measured_decode_table() -> Table:
    """§6.5's table: decode attention at the post's ten shapes, measured on an H200, beside the model.

    Columns: batch, keys, the flash backend (µs), the model (µs), the model's time against the measured (%), the
    kernels the backend ran (split-KV and combine, or one kernel), the model's split count (flash-attn's heuristic
    with the SM count doubled), PyTorch eager (µs).
    Source: :func:`labcore.measured.compare_decode_measured`.
    """
    d = _decode_measured()
    # the measured time and the model's first (a phone shows the first columns without scrolling)
    rows = [(int(b), int(n), 1e6 * f, 1e6 * m, 100 * err, "split + combine" if s else "one kernel", int(k), 1e6 * e)
            for b, n, e, f, s, k, m, err in zip(d["batch"], d["seqlen"], d["eager"], d["flash"], d["split_kv"],
                                               d["splits"], d["model_fd"], d["err_fd"])]
    return Table(rows, ("batch", "keys", unit_label("flash", "µs"), unit_label("model", "µs"), "model vs measured (%)",
                        "kernels seen", "model splits", unit_label("eager", "µs")),
                 (",d", ",d", ".1f", ".1f", "+.0f", None, "d", ".1f"),
                 caption="Decode attention on an H200: 16 query heads, 2 KV heads, d = 128, FP16 (the post's shape); "
                         "measured (PyTorch's eager attention and its flash backend with enable_gqa) beside "
                         "labcore.decode_time_grid on the H200 preset (labcore/data/measured_h200.csv)")


@cache
def measured_decode_numbers() -> Numbers:
    """The numbers §6.5 quotes about the H200 decode measurements.

    Fields: ``n_rows``; ``n_split`` (rows where the flash backend ran split-KV and combine kernels), ``first_split_batch``
    and ``first_split_keys`` (the first such row); ``agree_doubled`` / ``agree_plain`` (rows where the model's
    heuristic with the SM count doubled / as in flash-attn before 2.5.7 splits exactly when the kernel did);
    ``plain_row_ctas`` (CTAs without a split on the row where only the doubled count splits) and ``sms``;
    ``flash_lo_us``/``flash_hi_us`` (measured range); ``eager_over_flash_longest`` (at the longest row);
    ``err_lo``/``err_hi`` (% model vs measured, most and least negative), ``worst_batch``/``worst_keys``;
    ``kv_GBs_longest`` (KV-cache bytes over the flash time at the longest row, GB/s) and its share of the measured
    copy bandwidth, ``kv_pct_copy``; ``kv_GBs_max`` and ``kv_max_pct_copy`` (the fastest row's); whether the model
    has every unsplit row faster than every split one (``model_unsplit_faster``) and whether the measured unsplit
    rows were slower than the first two split ones (``measured_unsplit_slower``).
    Source: :mod:`labcore.measured`.
    """
    from labcore.measured import ceiling_check, compare_decode_measured

    d = _decode_measured()
    plain = compare_decode_measured(num_splits="heuristic")
    split, n = d["split_kv"], len(d["batch"])
    first = int(np.argmax(split))
    disagree = np.flatnonzero((plain["splits"] > 1) != split)
    g = lc.get_gpu("H200")
    plain_ctas = int(d["batch"][disagree[0]]) * d["num_kv_heads"] if len(disagree) else 0
    worst = int(np.argmin(d["err_fd"]))
    longest = int(np.argmax(d["seqlen"]))
    return Numbers(
        n_rows=n, n_split=int(split.sum()), first_split_batch=int(d["batch"][first]),
        first_split_keys=int(d["seqlen"][first]),
        agree_doubled=int(np.sum((d["splits"] > 1) == split)), agree_plain=int(np.sum((plain["splits"] > 1) == split)),
        plain_row_ctas=plain_ctas, sms=g.num_sms,
        flash_lo_us=float(1e6 * d["flash"].min()), flash_hi_us=float(1e6 * d["flash"].max()),
        eager_over_flash_longest=float(d["eager"][longest] / d["flash"][longest]),
        err_lo=float(100 * d["err_fd"].min()), err_hi=float(100 * d["err_fd"].max()),
        worst_batch=int(d["batch"][worst]), worst_keys=int(d["seqlen"][worst]),
        kv_GBs_longest=float(d["kv_bandwidth"][longest] / 1e9),
        kv_pct_copy=float(100 * d["kv_bandwidth"][longest] / ceiling_check("H200")["bandwidth"]),
        kv_GBs_max=float(d["kv_bandwidth"].max() / 1e9),
        kv_max_pct_copy=float(100 * d["kv_bandwidth"].max() / ceiling_check("H200")["bandwidth"]),
        # the rows the kernel left unsplit against the split ones: the model's order and the measured one
        model_unsplit_faster=bool(d["model_fd"][~split].max() < d["model_fd"][split].min()),
        measured_unsplit_slower=bool(d["flash"][~split].min() > d["flash"][split][:2].max()),
    )
