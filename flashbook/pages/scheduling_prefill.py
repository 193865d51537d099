"""The numbers book/05b_scheduling_prefill quotes (the backward's dQ atomics, causal load balance, packed batches)."""

from __future__ import annotations

from functools import cache

import numpy as np

import labcore as lc
from labcore.prefill_schedule import prefill_ctas_per_sm

from . import Numbers, published_values
from ..figures.scheduling import causal_sweep, dq_add_share, dq_bits_data, dq_chain_data, varlen_data

__all__ = ["numbers", "ADD_SHARE"]

#: The dQ add's time over one tile's compute that the page quotes (the chain explorer's default): the no-overlap
#: estimate ``add_share_est`` below, rounded to the slider value nearest it.
ADD_SHARE = 0.25


def _lo_hi(a):
    return 100 * float(np.min(a)), 100 * float(np.max(a))


@cache
def numbers() -> Numbers:
    """Fields:

    - dQ bits (:func:`flashbook.figures.scheduling.dq_bits_data`, N = 256, d = 64, 32 x 32 blocks, causal):
      ``bits_N``, ``bits_d``, ``bits_block``, ``bits_ctas``, ``trials``, ``distinct_atomic``, ``distinct_det``,
      ``differ_share``, ``rel_diff``;
    - dQ atomics of one head at N = 4096, d = 128, 128 x 128 blocks, causal (:func:`labcore.dq_atomic_counts`):
      ``adds_M`` (millions), ``payload_MB`` (4 B per add sent to L2), ``rmw_MB`` (the read-modify-write done in L2),
      ``buffer_MB`` (dQaccum in FP32), ``hbm_MB`` (what HBM sees: the buffer zeroed and read, dQ written);
    - the deterministic designs on an H100 at :data:`ADD_SHARE` (:func:`~flashbook.figures.scheduling.dq_chain_data`):
      ``add_share_est`` (one add's 4 B_r d bytes at the L2's per-SM share over one tile's 5 matmuls at the SM's
      tensor rate), ``add_share``; per design, causal ``c_<design>_lo/_hi`` and without a mask ``f_<design>_lo/_hi``
      (% of the atomic kernel's throughput kept over FA2's benchmark shapes); ``fa2_splits_16k`` (FA2's CTAs per head
      at 16 heads), ``fa2_ctas_16k``; published ``fa4_det``, ``fa4_blog`` / ``fa4_blog_hi`` (%), ``dash_loss`` (%),
      ``dash_x``;
    - causal (FA4's benchmark shapes on an H200, :func:`flashbook.figures.scheduling.causal_sweep`): ``gain1_lo/_hi``
      (%, launch over a global LPT, one CTA per SM), ``sec1_lo/_hi`` (launch over FA3/FA4's sectioned order),
      ``gain2_lo/_hi`` (two CTAs per SM); ``fa3_ctas_per_sm`` (FA3's forward: 1); published ``lpt_mha`` /
      ``lpt_mha_hi``, ``lpt_mqa`` / ``lpt_mqa_hi`` (%); ``sms``; the L2 sections at 8k keys, d = 128: ``l2_heads``,
      ``l2_MiB``, ``l2_budget_MiB`` (FA3), ``l2_heads_fa4``, ``l2_budget_fa4_MiB``;
    - the prefill model (FA2, H100, causal forward, 16k tokens: batch 1, 16 heads, d = 128): ``prefill_ms`` (FA2's
      launch order, as the model deals it), ``prefill_lpt_ms`` (the same model with an LPT scheduler),
      ``prefill_gain`` (%, what launch order costs);
    - varlen (16 sequences of mean length 1024, causal, :func:`~flashbook.figures.scheduling.varlen_data`):
      ``zipf_flops_saved``, ``zipf_bytes_saved``, ``uniform_flops_saved``, ``uniform_bytes_saved`` (fractions),
      ``zipf_longest``, ``zipf_launched``, ``zipf_working``.

    Source: Dao 2023 §3.1 and Algorithm 2; flash-attn ``flash_bwd_kernel.h``, ``hopper/tile_scheduler.hpp``,
    ``hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp``, ``flash_attn_varlen_func``; Zadouri et al. 2026 §3.3 and §5.2;
    Qiang et al. 2026 (DASH); Graham 1969.
    """
    bits = dq_bits_data(256, block=32, causal=True)
    cnt = lc.dq_atomic_counts(4096, 128, block_q=128, block_kv=128, causal=True)
    est = dq_add_share("H100-SXM")
    chains = {c: dq_chain_data("H100-SXM", add_share=ADD_SHARE, causal=c) for c in (True, False)}
    designs = {}
    for c, tag in ((True, "c"), (False, "f")):
        for k in chains[c]["designs"]:
            designs[f"{tag}_{k}_lo"], designs[f"{tag}_{k}_hi"] = _lo_hi(chains[c][k])
    one, two = causal_sweep("H200-SXM", 1), causal_sweep("H200-SXM", 2)
    l2, l2_fa4 = lc.l2_section(8192, head_dim=128), lc.l2_section(8192, head_dim=128, rule="fa4")
    kw = dict(batch=1, heads=16, seqlen=16384, head_dim=128, causal=True, generation="fa2")
    pre, pre_lpt = lc.prefill_time("H100", **kw), lc.prefill_time("H100", schedule="lpt", **kw)
    zipf, uni = varlen_data("zipf"), varlen_data("uniform")
    h100 = lc.get_gpu("H100")
    splits = lc.fa2_deterministic_splits(h100.num_sms, 16)
    return Numbers(
        bits_N=bits["N"], bits_d=bits["d"], bits_block=bits["block"], bits_ctas=bits["T_c"], trials=bits["trials"],
        distinct_atomic=bits["distinct_atomic"], distinct_det=bits["distinct_det"],
        differ_share=bits["differ_share"], rel_diff=bits["rel_diff"],
        adds_M=cnt["atomic_adds"] / 1e6, payload_MB=cnt["l2_payload_bytes"] / 1e6, rmw_MB=cnt["rmw_bytes"] / 1e6,
        buffer_MB=cnt["buffer_bytes"] / 1e6, hbm_MB=cnt["hbm_bytes"] / 1e6,
        add_share_est=est["share"], add_share=ADD_SHARE, **designs,
        fa2_splits_16k=splits, fa2_ctas_16k=16 * splits, bwd_sms=h100.num_sms,
        gain1_lo=_lo_hi(one["lpt_gain"])[0], gain1_hi=_lo_hi(one["lpt_gain"])[1],
        sec1_lo=_lo_hi(one["sections_gain"])[0], sec1_hi=_lo_hi(one["sections_gain"])[1],
        gain2_lo=_lo_hi(two["lpt_gain"])[0], gain2_hi=_lo_hi(two["lpt_gain"])[1],
        fa3_ctas_per_sm=prefill_ctas_per_sm("H200", "fa3", 128),
        sms=lc.get_gpu("H200").num_sms,
        l2_heads=l2["kv_heads"], l2_MiB=l2["working_set"] / 2**20, l2_budget_MiB=l2["budget"] / 2**20,
        l2_heads_fa4=l2_fa4["kv_heads"], l2_budget_fa4_MiB=l2_fa4["budget"] / 2**20,
        prefill_ms=float(pre["forward"]) * 1e3, prefill_lpt_ms=float(pre_lpt["forward"]) * 1e3,
        prefill_gain=100 * (float(pre["forward"]) / float(pre_lpt["forward"]) - 1),
        zipf_flops_saved=zipf["savings"]["flops_saved"], zipf_bytes_saved=zipf["savings"]["bytes_saved"],
        uniform_flops_saved=uni["savings"]["flops_saved"], uniform_bytes_saved=uni["savings"]["bytes_saved"],
        zipf_longest=int(zipf["lengths"].max()), zipf_launched=zipf["grid"]["launched"],
        zipf_working=zipf["grid"]["working"],
        **published_values(fa4_det=("fa4.deterministic_bwd_fraction", 100),
                           fa4_blog=("fa4.blog_deterministic_bwd_fraction", 100),
                           lpt_mha=("fa4.lpt_gain_mha", 100), lpt_mqa=("fa4.lpt_gain_mqa", 100),
                           dash_loss=("dash.fa3_deterministic_loss_max", 100), dash_x="dash.speedup_max"),
    )
