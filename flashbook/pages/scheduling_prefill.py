"""The numbers book/05b_scheduling_prefill quotes (the backward's dQ atomics, causal load balance, packed batches)."""

from __future__ import annotations

from functools import cache

import numpy as np

import labcore as lc
from labcore.published import published

from . import Numbers, published_values
from ..figures.scheduling import causal_sweep, dq_bits_data, dq_chain_data, varlen_data

__all__ = ["numbers", "ADD_SHARE"]

#: The dQ add's time over one tile's compute that the page quotes (the chain explorer's default): the no-overlap
#: estimate ``add_share_est`` below, rounded to the slider value nearest it.
ADD_SHARE = 0.5


@cache
def numbers() -> Numbers:
    """Fields:

    - dQ bits (:func:`flashbook.figures.scheduling.dq_bits_data`, N = 256, d = 64, 32 x 32 blocks, causal):
      ``bits_N``, ``bits_d``, ``bits_block``, ``bits_ctas``, ``trials``, ``distinct_atomic``, ``distinct_det``,
      ``differ_share``, ``rel_diff``;
    - dQ atomics of one head at N = 4096, d = 128, 128 x 128 blocks, causal (:func:`labcore.dq_atomic_counts`):
      ``adds_M`` (millions), ``rmw_MB``, ``rmw_over_dq`` (read-modify-write bytes over dQ's own BF16 bytes);
    - the chain on an H100 (:func:`~flashbook.figures.scheduling.dq_chain_data` at :data:`ADD_SHARE`):
      ``add_share_est`` (one add's 8 B_r d bytes at the L2's per-SM share over one tile's 5 matmuls at the SM's
      tensor rate), ``frac_full_lo/_hi``, ``frac_asc_lo/_hi``, ``frac_desc_lo/_hi``; published ``fa4_det`` and
      ``fa4_blog`` / ``fa4_blog_hi`` (%);
    - causal (FA4's benchmark shapes on an H200, :func:`flashbook.figures.scheduling.causal_sweep`): ``gain1_lo/_hi``
      (%, one CTA per SM), ``gain2_lo/_hi`` (two); published ``lpt_mha`` / ``lpt_mha_hi``, ``lpt_mqa`` /
      ``lpt_mqa_hi`` (%); ``sms``; the FA3 L2 section at 8k keys, d = 128: ``l2_heads``, ``l2_MiB``,
      ``l2_budget_MiB``; FA4's rule: ``l2_heads_fa4``;
    - the prefill model (FA2, H100, causal forward, 16k tokens: batch 1, 16 heads, d = 128): ``prefill_ms`` (CTAs as
      equal), ``prefill_launch_ms`` (times the launch order's makespan over LPT's), ``prefill_gain`` (%);
    - varlen (16 sequences of mean length 1024, causal, :func:`~flashbook.figures.scheduling.varlen_data`):
      ``zipf_flops_saved``, ``zipf_bytes_saved``, ``uniform_flops_saved``, ``uniform_bytes_saved`` (fractions),
      ``zipf_longest``, ``zipf_launched``, ``zipf_working``.

    Source: Dao 2023 §3.1 and Algorithm 2; flash-attn ``flash_bwd_kernel.h``, ``hopper/tile_scheduler.hpp``,
    ``flash_attn_varlen_func``; Zadouri et al. 2026 §3.3 and §5.2; Graham 1969.
    """
    bits = dq_bits_data(256, block=32, causal=True)
    cnt = lc.dq_atomic_counts(4096, 128, block_q=128, block_kv=128, causal=True)
    h100 = lc.get_gpu("H100")
    tile = 5 * 2 * 128 * 128 * 128 / h100.tensor_flops_per_sm
    add = 8 * 128 * 128 / (published("fa3.h100_l2_bandwidth").value / h100.num_sms)
    chain = dq_chain_data("H100-SXM", add_share=ADD_SHARE)
    one, two = causal_sweep("H200-SXM", 1), causal_sweep("H200-SXM", 2)
    l2, l2_fa4 = lc.l2_section(8192, head_dim=128), lc.l2_section(8192, head_dim=128, rule="fa4")
    pre = lc.prefill_time("H100", batch=1, heads=16, seqlen=16384, head_dim=128, causal=True, generation="fa2")
    bal = lc.causal_load_balance("H100", seqlen=16384, batch=1, heads=16, orders=("launch", "lpt"))
    launch_over_lpt = bal["launch"].makespan / bal["lpt"].makespan
    zipf, uni = varlen_data("zipf"), varlen_data("uniform")
    lo_hi = lambda a: (100 * float(np.min(a)), 100 * float(np.max(a)))  # noqa: E731
    return Numbers(
        bits_N=bits["N"], bits_d=bits["d"], bits_block=bits["block"], bits_ctas=bits["T_c"], trials=bits["trials"],
        distinct_atomic=bits["distinct_atomic"], distinct_det=bits["distinct_det"],
        differ_share=bits["differ_share"], rel_diff=bits["rel_diff"],
        adds_M=cnt["atomic_adds"] / 1e6, rmw_MB=cnt["rmw_bytes"] / 1e6, rmw_over_dq=cnt["rmw_bytes"] / (2 * 4096 * 128),
        add_share_est=add / tile, add_share=ADD_SHARE,
        frac_full_lo=lo_hi(chain["full"])[0], frac_full_hi=lo_hi(chain["full"])[1],
        frac_asc_lo=lo_hi(chain["ascending"])[0], frac_asc_hi=lo_hi(chain["ascending"])[1],
        frac_desc_lo=lo_hi(chain["descending"])[0], frac_desc_hi=lo_hi(chain["descending"])[1],
        gain1_lo=lo_hi(one["lpt_gain"])[0], gain1_hi=lo_hi(one["lpt_gain"])[1],
        gain2_lo=lo_hi(two["lpt_gain"])[0], gain2_hi=lo_hi(two["lpt_gain"])[1],
        sms=lc.get_gpu("H200").num_sms,
        l2_heads=l2["kv_heads"], l2_MiB=l2["working_set"] / 2**20, l2_budget_MiB=l2["budget"] / 2**20,
        l2_heads_fa4=l2_fa4["kv_heads"],
        prefill_ms=float(pre["forward"]) * 1e3, prefill_launch_ms=float(pre["forward"]) * launch_over_lpt * 1e3,
        prefill_gain=100 * (launch_over_lpt - 1),
        zipf_flops_saved=zipf["savings"]["flops_saved"], zipf_bytes_saved=zipf["savings"]["bytes_saved"],
        uniform_flops_saved=uni["savings"]["flops_saved"], uniform_bytes_saved=uni["savings"]["bytes_saved"],
        zipf_longest=int(zipf["lengths"].max()), zipf_launched=zipf["grid"]["launched"],
        zipf_working=zipf["grid"]["working"],
        **published_values(fa4_det=("fa4.deterministic_bwd_fraction", 100),
                           fa4_blog=("fa4.blog_deterministic_bwd_fraction", 100),
                           lpt_mha=("fa4.lpt_gain_mha", 100), lpt_mqa=("fa4.lpt_gain_mqa", 100)),
    )
