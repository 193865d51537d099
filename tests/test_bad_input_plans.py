"""split_plans, prefill_schedule and mla refuse bad input by the caller's argument name, and still compute.

Each table row is one call that must fail with a ValueError or TypeError whose message names the argument at fault:
element sizes and head dims no kernel has, counts beyond any machine, plans whose fields contradict each other,
arrays that do not match a plan, and finite floats whose results would leave float64. A few good calls check
real values, so that the checks do not change what the models compute.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from labcore import mla, prefill_schedule as ps, split_plans as sp
from labcore.attention import reference_attention

GPU = "H100"
PLAN = sp.plan_lean([3, 0, 5], num_ctas=2)                    # chunks (0, 0, 3) on CTA 0 and (2, 0, 5) on CTA 1


def _requests(lengths=(3, 0, 5), g=2, d=4, d_v=3, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((len(lengths), g, d)), [rng.standard_normal((n, d)) for n in lengths],
            [rng.standard_normal((n, d_v)) for n in lengths])


def _mla(h=2, s_q=2, n=5, d_c=3, d_nope=4, d_rope=2, d_v=3, seed=1):
    rng = np.random.default_rng(seed)
    return dict(q_nope=rng.standard_normal((h, s_q, d_nope)), q_rope=rng.standard_normal((h, s_q, d_rope)),
                c_kv=rng.standard_normal((n, d_c)), k_rope=rng.standard_normal((n, d_rope)),
                W_UK=rng.standard_normal((h, d_c, d_nope)), W_UV=rng.standard_normal((h, d_c, d_v)))


def _fields(plan, **override):
    return {**{f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}, **override}


Q, KS, VS = _requests()
MAKESPAN = dict(reps=4, slots=8, tile_time=1e-6, startup=1e-7, block_q=128, block_kv=128, causal=True)
HUGE = 10 ** 30

# (call, the argument its message must name)
BAD = [
    # FlashInfer's decode kernel: its compiled head dims and element sizes only
    (lambda: sp.flashinfer_decode_ctas_per_sm("A100", head_dim=16, dtype_bytes=32), "head_dim"),
    (lambda: sp.flashinfer_decode_ctas_per_sm("A100", head_dim=128, dtype_bytes=32), "dtype_bytes"),
    (lambda: sp.flashinfer_decode_ctas_per_sm("A100", dtype_bytes=3), "dtype_bytes"),
    (lambda: sp.flashinfer_decode_ctas_per_sm("A100", head_dim=1), "head_dim"),
    (lambda: sp.flashinfer_decode_ctas_per_sm("A100", head_dim=7), "head_dim"),
    (lambda: sp.flashinfer_decode_ctas_per_sm("A100", group_size=65), "group_size"),
    (lambda: sp.flashinfer_decode_ctas_per_sm("A100", group_size=HUGE), "group_size"),
    (lambda: sp.plan_ctas_per_sm("flashinfer", GPU, head_dim=96), "head_dim"),
    # a kernel that does not fit is the documented error, not 0
    (lambda: sp.plan_ctas_per_sm("flash_attn", GPU, head_dim=1000), "head_dim"),
    (lambda: sp.plan_ctas_per_sm("flash_attn", GPU, head_dim=HUGE), "head_dim"),
    (lambda: sp.plan_ctas_per_sm("lean", GPU, group_size=HUGE), "group_size"),
    (lambda: sp.make_split_plan("lean", [5, 3], num_sms=2, head_dim=HUGE), "head_dim"),
    # byte models: bounded sizes, element sizes 1, 2 or 4, every argument checked whatever the rule
    (lambda: sp.plan_time(PLAN, GPU, group_size=2 ** 53), "group_size"),
    (lambda: sp.plan_time(PLAN, GPU, head_dim=2 ** 53), "head_dim"),
    (lambda: sp.plan_time(PLAN, GPU, dtype_bytes=2 ** 53), "dtype_bytes"),
    (lambda: sp.plan_time(PLAN, GPU, dtype_bytes=3), "dtype_bytes"),
    (lambda: sp.plan_time(PLAN, GPU, memory_rule="lecture", per_cta_cap="abc"), "per_cta_cap"),
    (lambda: sp.plan_time(PLAN, GPU, memory_rule="lecture", per_cta_cap=-1), "per_cta_cap"),
    (lambda: sp.plan_time(PLAN, GPU, per_cta_cap=1e-320), "per_cta_cap"),
    (lambda: sp.plan_stats(PLAN, group_size=HUGE), "group_size"),
    (lambda: sp.plan_stats(PLAN, head_dim=HUGE), "head_dim"),
    (lambda: sp.plan_stats(PLAN, partial_bytes=3), "partial_bytes"),
    (lambda: sp.plan_stats(PLAN, out_bytes=8), "out_bytes"),
    (lambda: sp.plan_stats(PLAN, time_per_key=1e308), "time_per_key"),
    (lambda: sp.plan_stats(PLAN, chunk_overhead=1e308, time_per_key=1e308), "chunk_overhead"),
    (lambda: sp.zipf_lengths(8, mean=100, seed=HUGE), "seed"),
    (lambda: sp.zipf_lengths(8, mean=100, max_factor=HUGE), "max_factor"),
    (lambda: sp.plan_flashmla([5, 3], num_sm_parts=2, block_n=2 ** 40, fixed_overhead_blocks=2 ** 40),
     "fixed_overhead_blocks"),
    # run_split_plan: the arrays must match the plan, and the message names the one that does not
    (lambda: sp.run_split_plan(PLAN, Q, KS[:2], VS), "K_list"),
    (lambda: sp.run_split_plan(PLAN, Q, KS, VS[:2]), "V_list"),
    (lambda: sp.run_split_plan(PLAN, Q, [KS[0], KS[1], KS[2][:4]], VS), "K_list"),
    (lambda: sp.run_split_plan(PLAN, Q, [KS[0], KS[1], KS[2][:, :3]], VS), "K_list"),
    (lambda: sp.run_split_plan(PLAN, Q, KS, [VS[0], VS[1], VS[2][:, :2]]), "V_list"),
    (lambda: sp.run_split_plan(PLAN, Q[:2], KS, VS), "q"),
    (lambda: sp.run_split_plan(PLAN, Q[:, :0], KS, VS), "q"),
    (lambda: sp.run_split_plan(PLAN, Q, "KV", VS), "K_list"),
    (lambda: sp.run_split_plan({"name": "lean"}, Q, KS, VS), "plan"),
    # prefill_schedule: block_q checked whatever the generation; overflowing floats named at entry
    *[(lambda g=g, b=b: ps.prefill_ctas_per_sm(GPU, g, 128, block_q=b), "block_q")
      for g in ("fa3", "fa4") for b in (2.5, "128", None, np.nan, -1, 0, True)],
    (lambda: ps.prefill_ctas_per_sm(GPU, "fa2", HUGE), "head_dim"),
    (lambda: ps.kernel_makespan(1024, **{**MAKESPAN, "tile_time": 1e308}), "tile_time"),
    (lambda: ps.kernel_makespan(1024, **{**MAKESPAN, "tile_time": 1e-320}), "tile_time"),
    (lambda: ps.kernel_makespan(1024, **{**MAKESPAN, "causal": False, "tile_time": 1e308}), "tile_time"),
    (lambda: ps.kernel_makespan(1024, **{**MAKESPAN, "startup": 1e300, "tile_time": 1e-20}), "startup"),
    (lambda: ps.kernel_makespan(2 ** 50, **MAKESPAN), "seqlen"),
    (lambda: ps.overlap_cycles(1e308, 1e308, 0.0), "mma"),
    (lambda: ps.ablation_overlap(100.0, 50.0, 661e12, 570e12), "after"),
    (lambda: ps.ablation_overlap(1e308, 1e308, 1e12, 1e12), "softmax"),
    # mla: bounded counts, finite results
    (lambda: mla.mla_intensity(10 ** 400), "h_q_s_q"),
    (lambda: mla.mla_intensity(128, d_qk=10 ** 400), "d_qk"),
    (lambda: mla.mla_intensity(128, dtype_bytes=10 ** 400), "dtype_bytes"),
    (lambda: mla.gqa_decode_intensity(10 ** 400), "rows"),
    (lambda: mla.gqa_decode_intensity(8, head_dim=10 ** 400), "head_dim"),
    (lambda: mla.mla_decode_roofline(10 ** 400, seqlen=1), "h_q_s_q"),
    (lambda: mla.mla_decode_roofline(1, seqlen=10 ** 400), "seqlen"),
    (lambda: mla.mla_decode_roofline(1, seqlen=1, batch=10 ** 300), "batch"),
    (lambda: mla.mla_decode_roofline(1, seqlen=1, d_v=10 ** 400), "d_v"),
    (lambda: mla.mla_decode_roofline(1, seqlen=1, flops=1e-320), "flops"),
    (lambda: mla.mla_decode_roofline(1, seqlen=1, bandwidth=1e-320), "bandwidth"),
    (lambda: mla.mla_compute_bound_threshold(bandwidth=1e-320), "bandwidth"),
    (lambda: mla.mla_compute_bound_threshold(flops=1e308, dtype_bytes=2 ** 53), "dtype_bytes"),
    (lambda: mla.mla_decode_naive(**{**_mla(), "c_kv": np.full((5, 3), 1e200), "W_UK": np.full((2, 3, 4), 1e200)}),
     "W_UK"),
    (lambda: mla.mla_decode_absorbed(**{**_mla(), "c_kv": np.full((5, 3), 1e200), "W_UV": np.full((2, 3, 3), 1e200)}),
     "W_UV"),
    (lambda: mla.mla_decode_absorbed(**{**_mla(), "q_nope": np.full((2, 2, 4), 1e200),
                                        "W_UK": np.full((2, 3, 4), 1e200)}), "q_nope"),
    (lambda: mla.mla_decode_naive(**{**_mla(), "q_rope": np.full((2, 2, 2), 1e200),
                                     "k_rope": np.full((5, 2), 1e200)}), "q_rope"),
    (lambda: mla.mla_decode_naive(**_mla(d_v=0)), "W_UV"),
    (lambda: mla.mla_decode_absorbed(**_mla(d_rope=0)), "q_rope"),
]

# SplitPlan fields that contradict each other or are of the wrong kind: (override, the field named)
BAD_PLANS = [
    (dict(name=5), "name"),
    (dict(name="nope"), "name"),
    (dict(lengths="x"), "lengths"),
    (dict(lengths=np.array([3.0, 0.0, 5.0])), "lengths"),
    (dict(num_ctas=-1), "num_ctas"),
    (dict(num_ctas=2.5), "num_ctas"),
    (dict(num_ctas=HUGE), "num_ctas"),
    (dict(slots=0), "slots"),
    (dict(chunks=np.array([[0, 0, 3], [7, 0, 5]])), "chunks"),             # request 7 of 3
    (dict(chunks=np.array([[0, 0, 4], [2, 0, 5]])), "chunks"),             # k_stop past lengths[0] = 3
    (dict(chunks=np.array([[0, 2, 1], [2, 0, 5]])), "chunks"),             # k_start > k_stop
    (dict(chunks=np.array([[0, 0, 3], [2, 1, 5]])), "chunks"),             # keys 0 of request 2 never read
    (dict(chunks=np.array([[0, 0, 3, 0], [2, 0, 5, 0]])), "chunks"),
    (dict(chunks=np.array([[0.0, 0.0, 3.0], [2.0, 0.0, 5.0]])), "chunks"),
    (dict(cta=np.array([0, 2])), "cta"),                                   # CTA 2 of num_ctas = 2
    (dict(cta=np.array([0])), "cta"),
    (dict(merge_indptr=np.array([0, 1, 2])), "merge_indptr"),
    (dict(merge_indptr=np.array([0, 2, 1, 2])), "merge_indptr"),
    (dict(merge_indices=np.array([0, 0])), "merge_indices"),
    (dict(merge_indices=np.array([1, 0])), "merge_indices"),
    (dict(writes_partials=np.array([0, 0, 1])), "writes_partials"),
    (dict(writes_partials="yes"), "writes_partials"),
    (dict(writes_partials=np.array([False, False])), "writes_partials"),
    (dict(partial_o_bytes=3), "partial_o_bytes"),
    (dict(partial_lse_bytes=0), "partial_lse_bytes"),
    (dict(chunk_overhead_keys=-1), "chunk_overhead_keys"),
]


@pytest.mark.parametrize("call, name", BAD, ids=[f"{i}-{n}" for i, (_, n) in enumerate(BAD)])
def test_a_bad_argument_is_refused_by_name(call, name):
    with pytest.raises((ValueError, TypeError), match=rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])"):
        call()


@pytest.mark.parametrize("override, name", BAD_PLANS, ids=[f"{i}-{n}" for i, (_, n) in enumerate(BAD_PLANS)])
def test_a_split_plan_checks_its_fields(override, name):
    with pytest.raises((ValueError, TypeError), match=rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])"):
        sp.SplitPlan(**_fields(PLAN, **override))


def test_a_split_request_must_write_partials():
    """Request 0 cut in two merges partial states: a plan that says it writes none is refused."""
    p = sp.plan_lean([4], num_ctas=2, block_n=1)
    assert p.writes_partials.tolist() == [True]
    with pytest.raises(ValueError, match="writes_partials"):
        sp.SplitPlan(**_fields(p, writes_partials=np.array([False])))


def test_a_plan_is_read_only_and_rebuilds_equal():
    for a in (PLAN.lengths, PLAN.chunks, PLAN.cta, PLAN.merge_indptr, PLAN.merge_indices, PLAN.writes_partials):
        assert not a.flags.writeable
    again = sp.SplitPlan(**_fields(PLAN))
    assert again.chunks.tolist() == [[0, 0, 3], [2, 0, 5]] and again.work_per_cta.tolist() == [3, 5]


def test_good_calls_give_their_values():
    assert sp.flashinfer_decode_ctas_per_sm("H100", group_size=4, head_dim=128) == 2
    assert sp.plan_ctas_per_sm("lean", GPU, group_size=8, head_dim=128) == 1
    assert ps.prefill_ctas_per_sm(GPU, "fa3", 128, block_q=64) == 1
    assert ps.prefill_ctas_per_sm(GPU, "fa2", 128) == 2
    # 4 reps x 8 query blocks = 32 equal CTAs of 8 tiles on 8 slots: 4 rounds of 8 tiles
    assert ps.kernel_makespan(1024, **{**MAKESPAN, "causal": False, "startup": 0.0}) == pytest.approx(32e-6)
    assert ps.overlap_cycles(100.0, 50.0, 0.5) == 125.0
    st = sp.plan_stats(PLAN, time_per_key=2.0, chunk_overhead=1.0)
    assert st["makespan"] == 11.0 and st["work_per_cta"].tolist() == [3, 5]
    O, lse = sp.run_split_plan(PLAN, Q, KS, VS)
    o_ref, l_ref = reference_attention(Q[2], KS[2], VS[2])
    np.testing.assert_allclose(O[2], o_ref, atol=1e-12)
    np.testing.assert_allclose(lse[2], l_ref, atol=1e-12)
    assert np.all(O[1] == 0) and np.all(lse[1] == -np.inf)
    r = mla.mla_decode_roofline(128, seqlen=4096, flops=1e15, bandwidth=1e12)
    assert float(r["memory_time"]) == pytest.approx(4096 * 576 * 2 / 1e12)


def test_lean_cuts_stay_exact_past_int64_products():
    """4096 CTAs over 2^52 one-key blocks: ``c x W`` would pass 2^63; every CTA still gets one whole request."""
    p = sp.plan_lean([2 ** 40] * 4096, num_ctas=4096, block_n=1)
    assert np.all(p.work_per_cta == 2 ** 40) and p.chunks[:, 0].tolist() == list(range(4096))


@pytest.mark.parametrize("form", [mla.mla_decode_naive, mla.mla_decode_absorbed])
def test_mla_causal_queries_past_the_cache_are_documented_empty_rows(form):
    """s_q = 4 new tokens on N = 2 cached ones, causal: the first two queries see no token (zeros, lse -inf),
    as the docstring says; the others equal the reference on the keys they see."""
    x = _mla(s_q=4, n=2)
    O, lse = form(**x, causal=True)
    assert np.all(O[:, :2] == 0) and np.all(lse[:, :2] == -np.inf) and np.all(np.isfinite(lse[:, 2:]))
    other = mla.mla_decode_absorbed if form is mla.mla_decode_naive else mla.mla_decode_naive
    np.testing.assert_allclose(O, other(**x, causal=True)[0], atol=1e-12)
