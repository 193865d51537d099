"""labcore.split_plans: three split-KV plans for ragged decode batches, checked against the oracle."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from labcore import reference_attention
from labcore.split_plans import SPLIT_PLANS, make_split_plan, plan_flash_attn, plan_flashinfer, plan_lean, \
    plan_stats, run_split_plan, zipf_lengths


def _batch(lengths, g=2, d=8, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((len(lengths), g, d))
    Ks = [rng.standard_normal((n, d)) for n in lengths]
    Vs = [rng.standard_normal((n, d)) for n in lengths]
    return q, Ks, Vs


def _check(plan, lengths):
    q, Ks, Vs = _batch(lengths)
    O, lse = run_split_plan(plan, q, Ks, Vs)
    assert not np.any(np.isnan(O)) and not np.any(np.isnan(lse))
    for b, n in enumerate(lengths):
        if n == 0:
            assert np.all(O[b] == 0) and np.all(lse[b] == -np.inf)
            continue
        o_ref, l_ref = reference_attention(q[b], Ks[b], Vs[b])
        np.testing.assert_allclose(O[b], o_ref, atol=1e-12)
        np.testing.assert_allclose(lse[b], l_ref, atol=1e-12)
    covered = np.zeros(sum(lengths), int)              # every key of every request exactly once
    offs = np.concatenate([[0], np.cumsum(lengths)])
    for b, a, e in plan.chunks.tolist():
        covered[offs[b] + a:offs[b] + e] += 1
    assert np.all(covered == 1)


LENGTHS = [0, 1, 700, 3, 2048, 0, 129, 1]


@pytest.mark.parametrize("name", SPLIT_PLANS)
def test_every_plan_matches_the_oracle(name):
    _check(make_split_plan(name, LENGTHS, num_sms=6, head_dim=8), LENGTHS)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=6), st.integers(1, 9), st.sampled_from(SPLIT_PLANS))
def test_random_batches(lengths, sms, name):
    _check(make_split_plan(name, lengths, num_sms=sms, head_dim=8, page_size=4), lengths)


def test_flash_attn_uses_one_split_count_from_the_longest():
    p = plan_flash_attn([10, 1000], num_sms=132, head_dim=128, sm_doubling=False)
    # 2 CTAs, 8 KV blocks of 128: the heuristic picks 8 splits of one block each; request 0 fills one split only
    assert p.num_ctas == 16
    assert p.chunk_tokens.tolist() == [10] + [0] * 7 + [128] * 7 + [104]
    assert p.writes_partials.tolist() == [True, True]


def test_flashinfer_chunk_size_and_packing():
    p = plan_flashinfer([100, 30, 0], num_ctas=4, page_size=16)
    # 48-key chunks: 3 + 1 + 1 (empty) = 5 > 4; 64-key chunks: 2 + 1 + 1 = 4
    assert p.chunk_tokens.tolist() == [64, 36, 30, 0]
    assert sorted(p.cta.tolist()) == [0, 1, 2, 3]
    assert p.writes_partials.tolist() == [True, False, False]
    q = plan_flashinfer([100, 30], num_ctas=2, chunk_size=20)
    assert q.work_per_cta.tolist() == [60, 70] or q.work_per_cta.tolist() == [70, 60]


def test_lean_equal_work_across_requests():
    p = plan_lean([5, 0, 7], num_ctas=4)
    assert p.work_per_cta.tolist() == [3, 3, 3, 3]
    assert p.chunks.tolist() == [[0, 0, 3], [0, 3, 5], [2, 0, 1], [2, 1, 4], [2, 4, 7]]
    assert p.cta.tolist() == [0, 1, 1, 2, 3]
    assert p.merge_indptr.tolist() == [0, 2, 2, 5]


def test_stats_makespan_and_bytes():
    L = zipf_lengths(64, mean=1024, seed=1)
    assert L.min() >= 1 and abs(L.mean() - 1024) < 20 and L.max() <= 16 * 1024 + 16
    out = {n: plan_stats(make_split_plan(n, L, num_sms=132), group_size=4) for n in SPLIT_PLANS}
    assert out["lean"]["max_work"] - out["lean"]["work_per_cta"].min() <= 1
    assert out["lean"]["makespan"] <= out["flashinfer"]["makespan"] <= out["flash_attn"]["makespan"]
    for r in out.values():
        assert r["partial_bytes_written"] == r["combine_bytes_read"] == r["partials"] * 4 * 129 * 4
        assert r["makespan"] >= r["schedule"].lower_bound
    s = plan_stats(plan_lean([5, 0, 7], num_ctas=4), time_per_key=2.0, chunk_overhead=1.0)
    assert s["makespan"] == 8.0 and s["partials"] == 5


def test_errors():
    with pytest.raises(ValueError, match="lengths"):
        plan_lean([-1], num_ctas=2)
    with pytest.raises(ValueError, match="name"):
        make_split_plan("stream", [1], num_sms=1)
    p = plan_lean([3, 4], num_ctas=2)
    q, Ks, Vs = _batch([3, 5])
    with pytest.raises(ValueError, match="lengths"):
        run_split_plan(p, q, Ks, Vs)
    with pytest.raises(ValueError, match="> 1"):
        zipf_lengths(4, mean=10, a=1.0)
