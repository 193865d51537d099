"""The numbers book/06b_scheduling_decode quotes (split planners, paged KV caches, MLA decode, mixed batches)."""

from __future__ import annotations

from functools import cache

import numpy as np

import labcore as lc
from labcore.split_plans import zipf_lengths

from . import Numbers, published_value, published_values

__all__ = ["numbers", "PLAN_SETTING", "PAGED_SETTING"]

#: The ragged batch of the split-plan section: requests (one sequence's KV head each), their mean length
#: (FlashInfer Fig. 8's "Zipf, mean 1024"), the clip of the Zipf tail (times the mean), the GQA group and d
#: (Llama-3.1-8B), the GPU.
PLAN_SETTING = {"batch": 64, "mean": 1024, "skew": 16, "group_size": 4, "head_dim": 128, "gpu": "H100"}
#: The paged-cache section's batch of Zipf requests.
PAGED_SETTING = {"batch": 256, "mean": 1024}


def _plans() -> dict:
    s = PLAN_SETTING
    g = lc.get_gpu(s["gpu"])
    L = zipf_lengths(s["batch"], mean=s["mean"], max_factor=s["skew"])
    kw = dict(group_size=s["group_size"], head_dim=s["head_dim"])
    # one key (K and V of d BF16 values) at one SM's share of the HBM bandwidth: the lecture rule's unit
    key_s = lc.kv_cache_bytes(seqlen=1, num_kv_heads=1, head_dim=s["head_dim"]) / (g.hbm_bandwidth / g.num_sms)
    out = {"sp_batch": s["batch"], "sp_mean": s["mean"], "sp_skew": s["skew"], "sp_sms": g.num_sms,
           "sp_group": s["group_size"], "sp_longest": int(L.max()), "sp_shortest": int(L.min()),
           "sp_gpu": g.name, "key_ns": key_s * 1e9, "cap_GBs": lc.per_cta_bandwidth_cap(g) / 1e9,
           "cap_a100_GBs": lc.per_cta_bandwidth_cap("A100") / 1e9}
    for tag, name in (("fa", "flash_attn"), ("fi", "flashinfer"), ("lean", "lean"), ("mla", "flashmla")):
        occ = lc.plan_ctas_per_sm(name, g, **kw)
        p = lc.make_split_plan(name, L, num_sms=g.num_sms, ctas_per_sm=occ, **kw)
        st = lc.plan_stats(p, **kw)
        t = {r: lc.plan_time(p, g, memory_rule=r, **kw) for r in lc.MEMORY_RULES}
        slow = lc.plan_time(p, g, per_cta_cap=lc.per_cta_bandwidth_cap("A100"), **kw)
        out.update({f"{tag}_ctas": p.num_ctas, f"{tag}_occ": occ, f"{tag}_ratio": st["ratio"],
                    f"{tag}_busiest": st["max_work"], f"{tag}_us": t["shared"]["total"] * 1e6,
                    f"{tag}_us_lecture": t["lecture"]["total"] * 1e6, f"{tag}_us_a100cap": slow["total"] * 1e6,
                    f"{tag}_partial_KB": st["partial_bytes_written"] / 1e3, f"{tag}_chunks": int(p.chunks.shape[0]),
                    f"{tag}_max_chunk": int(p.chunk_tokens.max()), f"{tag}_where": lc.PLANNERS[name]["where"]})
    out["floor_us"] = float(L.sum()) * lc.kv_cache_bytes(seqlen=1, num_kv_heads=1, head_dim=s["head_dim"]) \
        / g.hbm_bandwidth * 1e6                                   # every cached key read once at full bandwidth
    out["fa_splits"] = out["fa_ctas"] // L.size
    out["fi_chunk"] = out["fi_max_chunk"]
    out["ideal_keys"] = float(L.sum() / g.num_sms)
    out["lean_block"] = lc.flash_attn_block_n(s["head_dim"])
    out["lean_ratio_keys"] = lc.plan_stats(lc.plan_lean(L, num_ctas=g.num_sms, block_n=1), **kw)["ratio"]
    out["mla_block"], out["mla_overhead_blocks"] = 64, 5
    flat = zipf_lengths(s["batch"], mean=s["mean"], max_factor=1)
    out["fa_ratio_flat"] = lc.plan_stats(lc.make_split_plan("flash_attn", flat, num_sms=g.num_sms,
                                                            ctas_per_sm=out["fa_occ"], **kw), **kw)["ratio"]
    return out


def _paged() -> dict:
    s = PAGED_SETTING
    L = zipf_lengths(s["batch"], mean=s["mean"])
    sizes = np.array(lc.PAGE_SIZES)
    w = lc.page_waste(L, sizes)
    by = dict(zip(lc.PAGE_SIZES, w["waste_fraction"]))
    per = dict(zip(lc.PAGE_SIZES, w["mean_waste_per_request"]))
    entries = dict(zip(lc.PAGE_SIZES, w["pages"] / L.size))
    vllm_ps, mla_ps = published_value("vllm.default_block_size"), published_value("flashmla.page_block_size")
    bm, bn = lc.fa3_forward_tile(128)
    return {"fa3_bm": bm, "fa3_bn": bn, "fa3_bn_causal": lc.fa3_forward_tile(128, causal=True)[1],
            "tma_vllm": lc.fa3_paged_kv_uses_tma(int(vllm_ps)), "tma_mla": lc.fa3_paged_kv_uses_tma(int(mla_ps)),
            "pg_batch": s["batch"], "pg_mean": s["mean"], "pg_vllm_ps": int(vllm_ps), "pg_mla_ps": int(mla_ps),
            "pg_waste_vllm": float(by[vllm_ps]), "pg_waste_mla": float(by[mla_ps]), "pg_waste_128": float(by[128]),
            "pg_slots_vllm": float(per[vllm_ps]), "pg_slots_mla": float(per[mla_ps]),
            "pg_entries_1": float(entries[1]), "pg_entries_vllm": float(entries[vllm_ps]),
            "pg_entries_mla": float(entries[mla_ps])}


def _mla() -> dict:
    dims = lc.MLA_DIMS
    t = lc.mla_compute_bound_threshold()
    row = dims["d_c"] + dims["d_rope"]
    l8 = lc.get_decode_shape("Llama-3.1-8B")
    return {"mla_row": row, "mla_row_bytes": 2 * row, "mla_dv": dims["d_c"], "mla_heads": dims["heads"],
            "mla_head_k": dims["d_nope"] + dims["d_rope"], "mla_head_v": dims["d_v"],
            # the cache MHA would need: every head's up-projected K (nope + rope) and V, BF16
            "mla_mha_bytes": 2 * dims["heads"] * (dims["d_nope"] + dims["d_rope"] + dims["d_v"]),
            "l8_token_bytes": lc.kv_cache_bytes(seqlen=1, num_kv_heads=l8["num_kv_heads"], head_dim=l8["head_dim"]),
            "l8_kv_heads": l8["num_kv_heads"],
            "mla_int_1": lc.mla_intensity(1), "mla_int_128": lc.mla_intensity(dims["heads"]),
            # an example GQA group of 8 query heads per KV head (an input, as in Llama-3.1-70B's 64/8)
            "gqa_group_8": 8, "gqa_int_8": lc.gqa_decode_intensity(8), "mla_ridge": t["ridge"], "mla_exact": t["exact"],
            "mla_approx": t["approx"], "mla_stated": t["stated"],
            "mla_bound_at_heads": bool(lc.mla_decode_roofline(dims["heads"], seqlen=4096)["bound_compute"]),
            "mla_bound_at_2x": bool(lc.mla_decode_roofline(2 * dims["heads"], seqlen=4096)["bound_compute"]),
            **published_values(h800_TFLOPs=("flashmla.h800_throttled_flops", 1e-12),
                               h800_peak_TFLOPs=("flashmla.h800_peak_flops", 1e-12),
                               h800_TBs=("flashmla.h800_bandwidth", 1e-12),
                               fmla_GBs=("flashmla.h800_memory_bandwidth", 1e-9),
                               fmla_TFLOPs=("flashmla.h800_compute_flops", 1e-12),
                               fmla_TFLOPs_new=("flashmla.h800_compute_flops_2025_04", 1e-12))}


def _mixed() -> dict:
    s = lc.POD_STEP
    sh = lc.get_decode_shape(s["shape"])
    kw = dict(context=s["context"], decode_batch=s["decode_batch"], decode_seqlen=s["context"], **sh)
    r = lc.mixed_batch_time(s["gpu"], chunk=s["chunk"], **kw)
    dm = r["demands"]
    chunks = [128, 256, 512, 1024, 2048, 4096]
    sw = lc.mixed_batch_sweep(s["gpu"], chunks=chunks, **kw)
    i = int(np.argmax(sw["gain"]))
    rows = {k: lc.mixed_batch_time(s["gpu"], chunk=s["chunk"], decode_tile_rows=v, **kw)
            for k, v in (("16", 16), ("useful", "useful"))}
    # the chunk charged its own tail (its kernel alone's compute), as exercise 20 does
    tail = lc.fused_step_time(**{**{k: dm[k] for k in ("prefill_memory", "decode_compute", "decode_memory",
                                                       "prefill_overhead", "decode_overhead", "prefill_total",
                                                       "decode_total")},
                                 "prefill_compute": dm["prefill_total"] - dm["prefill_overhead"]})
    lec = lc.mixed_batch_time(s["gpu"], chunk=s["chunk"], memory_rule="lecture", **kw)
    return {"mx_gpu": lc.get_gpu(s["gpu"]).name, "mx_context": s["context"], "mx_batch": s["decode_batch"],
            "mx_chunk": s["chunk"], "mx_prefill_us": r["prefill"] * 1e6, "mx_decode_us": r["decode"] * 1e6,
            "mx_serial_us": r["serial"] * 1e6, "mx_fused_us": r["fused"] * 1e6, "mx_ideal_us": r["ideal"] * 1e6,
            "mx_gain": r["gain"], "mx_bound": r["bound"], "mx_best_gain": float(sw["gain"][i]),
            "mx_best_chunk": int(sw["chunk"][i]), "mx_gain_last": float(sw["gain"][-1]), "mx_last_chunk": chunks[-1],
            "mx_prefill_work_us": dm["prefill_compute"] * 1e6, "mx_decode_compute_us": dm["decode_compute"] * 1e6,
            "mx_decode_rows": dm["decode_rows"], "mx_group": sh["num_q_heads"] // sh["num_kv_heads"],
            "mx_gain_16": rows["16"]["gain"], "mx_bound_16": rows["16"]["bound"],
            "mx_gain_useful": rows["useful"]["gain"], "mx_gain_tail": tail["gain"], "mx_bound_tail": tail["bound"],
            "mx_gain_lecture": lec["gain"], "mx_decode_lecture_us": lec["decode"] * 1e6,
            **published_values(pod_mean="pod.attention_speedup_mean", pod_max="pod.attention_speedup_max",
                               pod_tput="pod.throughput_gain_vs_sarathi")}


@cache
def numbers() -> Numbers:
    """Fields:

    - split plans (:data:`PLAN_SETTING`): ``sp_batch``, ``sp_mean``, ``sp_skew``, ``sp_sms``, ``sp_group``,
      ``sp_gpu``, ``sp_longest`` / ``sp_shortest`` (keys), ``ideal_keys`` (work / SMs), ``key_ns`` (one key at
      one SM's bandwidth share), ``cap_GBs`` / ``cap_a100_GBs`` (one CTA's cap on the H100 and on an A100),
      ``floor_us`` (the cache read once at full bandwidth); per plan (``fa`` flash-attn, ``fi`` FlashInfer,
      ``lean``, ``mla`` FlashMLA) ``_ctas``, ``_occ`` (CTAs per SM), ``_ratio`` (makespan / ideal on its slots),
      ``_busiest`` (keys), ``_us`` (the physical rule), ``_us_lecture``, ``_us_a100cap`` (the physical rule at an
      A100 CTA's cap), ``_partial_KB``, ``_chunks``, ``_max_chunk``, ``_where`` (where the planner runs);
      ``fa_splits``, ``fi_chunk`` (keys per chunk), ``lean_block`` (keys per Lean block), ``lean_ratio_keys`` (Lean
      cut at single keys), ``mla_block``, ``mla_overhead_blocks``, ``fa_ratio_flat`` (flash-attn with every
      request equal);
    - paged caches (:data:`PAGED_SETTING`): FA3's tile at d = 128 ``fa3_bm``, ``fa3_bn``, ``fa3_bn_causal`` and
      whether it fetches vLLM's and FlashMLA's pages by TMA at decode (``tma_vllm``, ``tma_mla``); ``pg_batch``, ``pg_mean``, ``pg_vllm_ps`` / ``pg_mla_ps`` (published
      page sizes), ``pg_waste_vllm`` / ``pg_waste_mla`` / ``pg_waste_128`` (fractions), ``pg_slots_vllm`` /
      ``pg_slots_mla`` (wasted slots per request), ``pg_entries_1`` / ``_vllm`` / ``_mla`` (table entries per request);
    - MLA: ``mla_row`` (576), ``mla_row_bytes``, ``mla_dv``, ``mla_heads``, ``mla_head_k``, ``mla_head_v``,
      ``mla_mha_bytes`` (per token, the up-projected cache), ``l8_token_bytes``, ``l8_kv_heads``, ``mla_int_1``,
      ``mla_int_128`` (FLOP/byte), ``gqa_group_8`` (the example group), ``gqa_int_8``, ``mla_ridge``, ``mla_exact``, ``mla_approx``, ``mla_stated``,
      ``mla_bound_at_heads`` / ``mla_bound_at_2x`` (compute-bound at 128 and 256 rows); published H800 and
      FlashMLA figures ``h800_TFLOPs``, ``h800_peak_TFLOPs``, ``h800_TBs``, ``fmla_GBs``, ``fmla_TFLOPs``,
      ``fmla_TFLOPs_new``;
    - mixed batch (:data:`labcore.POD_STEP`): ``mx_gpu``, ``mx_context``, ``mx_batch``, ``mx_chunk``, ``mx_prefill_us``,
      ``mx_decode_us``, ``mx_serial_us``, ``mx_fused_us``, ``mx_ideal_us``, ``mx_gain``, ``mx_bound``,
      ``mx_best_gain`` at ``mx_best_chunk``, ``mx_gain_last`` at ``mx_last_chunk``, ``mx_prefill_work_us`` and
      ``mx_decode_compute_us`` (the tensor-core demands), ``mx_decode_rows``, ``mx_group``, ``mx_gain_16`` /
      ``mx_bound_16`` (16-row decode tiles), ``mx_gain_useful``, ``mx_gain_tail`` / ``mx_bound_tail`` (the chunk
      charged its own tail), ``mx_gain_lecture``, ``mx_decode_lecture_us``; POD's ``pod_mean``, ``pod_max``,
      ``pod_tput`` / ``pod_tput_hi``;
    - published: ``lean_mean_x``, ``lean_max_x`` (against FlashAttention-2), ``lean_fd_mean_x``, ``lean_fd_max_x``
      (against FlashDecoding), ``graph_launch_us``, ``fi_itl_lo`` / ``fi_itl_hi``, ``vllm_waste``, ``vllm_x_lo`` /
      ``vllm_x_hi``.

    Source: ``labcore.split_plans``, ``labcore.paged``, ``labcore.mla``, ``labcore.mixed_batch``; the published
    store (``labcore/data/published.csv``).
    """
    pub = published_values(lean_mean_x="lean.speedup_vs_fa2_mean", lean_max_x="lean.speedup_vs_fa2_max",
                           lean_fd_mean_x="lean.speedup_vs_flashdecoding_mean",
                           lean_fd_max_x="lean.speedup_vs_flashdecoding_max",
                           fi_itl_lo="flashinfer.itl_reduction_vs_triton", vllm_waste="vllm.kv_waste_fraction",
                           vllm_x_lo="vllm.throughput_vs_orca", graph_launch_us=("hazy.launch_time_graph", 1e6))
    pub["fi_itl_hi"], pub["vllm_x_hi"] = pub.pop("fi_itl_lo_hi"), pub.pop("vllm_x_lo_hi")
    for k in ("lean_mean_x_hi", "lean_max_x_hi", "lean_fd_mean_x_hi", "lean_fd_max_x_hi", "vllm_waste_hi",
              "graph_launch_us_hi"):
        pub.pop(k)
    return Numbers(**_plans(), **_paged(), **_mla(), **_mixed(), **pub)
