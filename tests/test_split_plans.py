"""labcore.split_plans: three split-KV plans for ragged decode batches, checked against the oracle."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from labcore import reference_attention
from labcore.splits import num_splits_heuristic
from labcore.split_plans import PLANNERS, SPLIT_PLANS, flashinfer_decode_ctas_per_sm, make_split_plan, \
    plan_flash_attn, plan_flashinfer, plan_flashmla, plan_lean, plan_stats, plan_time, run_split_plan, zipf_lengths
from labcore.waves import per_cta_bandwidth_cap


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


def test_flash_attn_splits_from_the_allocated_cache():
    """flash_attn_with_kvcache sees kcache.size(1), not the lengths: a 4,096-key cache gives 32 blocks of 128 keys."""
    p = plan_flash_attn([10, 1000], num_sms=132, head_dim=128, sm_doubling=False, cache_len=4096)
    splits = num_splits_heuristic(2, 132, 32)
    span = -(-32 // splits) * 128
    assert p.num_ctas == 2 * splits and p.chunk_tokens[splits:].tolist() == [
        max(0, min(1000, (s + 1) * span) - min(1000, s * span)) for s in range(splits)]
    assert p.slots == 132 and plan_flash_attn([10, 1000], num_sms=132, ctas_per_sm=2).slots == 264
    with pytest.raises(ValueError, match="cache_len"):
        plan_flash_attn([10, 1000], num_sms=132, cache_len=999)


def test_flashinfer_decode_plan_as_it_runs():
    """Pages [63, 19, 3] (page 16) on a grid of 6: at least 8 pages per chunk; 16 pages give 4 + 2 + 1 = 7 chunks,
    19 give 4 + 1 + 1 = 6: chunks of 304 keys, one CTA each, every request through tmp_v / tmp_s under a graph."""
    p = plan_flashinfer([1000, 300, 40], num_ctas=6, page_size=16)
    assert p.chunk_tokens.tolist() == [304, 304, 304, 88, 300, 40]
    assert p.cta.tolist() == list(range(6)) and p.num_ctas == p.slots == 6
    assert p.writes_partials.tolist() == [True] * 3 and (p.partial_o_bytes, p.partial_lse_bytes) == (2, 4)
    # short requests: the 128-token lower bound on the chunk; without a graph nothing is split then
    q = plan_flashinfer([100, 30, 0], num_ctas=4, page_size=16, cuda_graph=False)
    assert q.chunk_tokens.tolist() == [100, 30, 0] and not q.writes_partials.any()
    # a batch that fills the grid alone is not split
    r = plan_flashinfer([500] * 8, num_ctas=8, page_size=16)
    assert r.chunk_tokens.tolist() == [500] * 8
    assert flashinfer_decode_ctas_per_sm("H100", group_size=4, head_dim=128) == 2           # register bound


def test_flashmla_schedule_by_hand():
    """1000 keys, 4 parts: 16 blocks of 64 + 5 of overhead = 21, payload ceil(21 / 4) + 5 = 11: the parts take
    6, 6 and the last 4 blocks (4 + 5 <= 11 ends the request), the fourth nothing."""
    p = plan_flashmla([1000], num_sm_parts=4)
    assert p.chunks.tolist() == [[0, 0, 384], [0, 384, 768], [0, 768, 1000]] and p.cta.tolist() == [0, 1, 2]
    assert p.writes_partials.tolist() == [True] and p.chunk_overhead_keys == 5 * 64
    # whole requests fit a part's payload: 2 + 5 blocks and 5 + 5 fill part 0's 17; the empty request counts a block
    q = plan_flashmla([100, 300, 0], num_sm_parts=2)
    assert q.chunks.tolist() == [[0, 0, 100], [1, 0, 300], [2, 0, 0]] and q.cta.tolist() == [0, 0, 1]
    assert not q.writes_partials.any()


def test_lean_cuts_whole_kv_blocks():
    p = plan_lean([5, 0, 7], num_ctas=4, block_n=1)
    assert p.work_per_cta.tolist() == [3, 3, 3, 3]
    assert p.chunks.tolist() == [[0, 0, 3], [0, 3, 5], [2, 0, 1], [2, 1, 4], [2, 4, 7]]
    assert p.cta.tolist() == [0, 1, 1, 2, 3]
    assert p.merge_indptr.tolist() == [0, 2, 2, 5]
    L = zipf_lengths(64, mean=1024, max_factor=16)
    q = plan_lean(L, num_ctas=132)                     # 128-key blocks by default
    assert all(a % 128 == 0 for _, a, _ in q.chunks.tolist())
    blocks = -(-q.chunk_tokens // 128)
    per_cta = np.bincount(q.cta, weights=blocks, minlength=132)
    assert per_cta.max() - per_cta.min() <= 1         # equal numbers of whole blocks (a last block may be partial)
    assert plan_stats(q)["ratio"] > plan_stats(plan_lean(L, num_ctas=132, block_n=1))["ratio"]


def test_stats_makespan_and_bytes():
    L = zipf_lengths(64, mean=1024, seed=1)
    assert L.min() >= 1 and abs(L.mean() - 1024) < 20 and L.max() <= 16 * 1024 + 16
    out = {n: plan_stats(make_split_plan(n, L, num_sms=132, group_size=4), group_size=4) for n in SPLIT_PLANS}
    assert out["lean"]["makespan"] <= out["flash_attn"]["makespan"] and out["flashinfer"]["ratio"] < 2
    for n, r in out.items():
        o = 2 if n == "flashinfer" else 4
        assert r["partial_bytes_written"] == r["combine_bytes_read"] == r["partials"] * 4 * (128 * o + 4)
        assert r["makespan"] >= r["schedule"].lower_bound
    s = plan_stats(plan_lean([5, 0, 7], num_ctas=4, block_n=1), time_per_key=2.0, chunk_overhead=1.0)
    assert s["makespan"] == 8.0 and s["partials"] == 5
    assert set(PLANNERS) == set(SPLIT_PLANS) and PLANNERS["flashmla"]["where"] == "device"


def test_the_same_plan_under_both_memory_rules():
    """Equal CTAs that fill the SMs once cost the same under both rules; a skewed plan costs less when the idle SMs'
    bandwidth goes to the busy CTAs, never less than its bytes at full bandwidth or its largest CTA at the cap."""
    even = plan_lean([256] * 132, num_ctas=132)
    a, b = (plan_time(even, "H100", group_size=4, memory_rule=r)["total"] for r in ("shared", "lecture"))
    assert a == pytest.approx(b, rel=1e-12)
    L = zipf_lengths(64, mean=1024, max_factor=16)
    fa = plan_flash_attn(L, num_sms=132, group_size=4, ctas_per_sm=2)
    sh, lec = plan_time(fa, "H100", group_size=4), plan_time(fa, "H100", group_size=4, memory_rule="lecture")
    assert sh["total"] < lec["total"] / 5
    by = sh["bytes_per_cta"]
    assert sh["total"] >= max(sh["floor"], by.max() / per_cta_bandwidth_cap("H100")) * (1 - 1e-12)
    # the lecture rule: the busiest CTA's bytes at one SM's share, the CTAs dealt one per SM
    assert lec["total"] == pytest.approx(plan_stats(plan_flash_attn(L, num_sms=132, group_size=4), group_size=4,
                                                    time_per_key=1.0)["makespan"] * 512 / (3.35e12 / 132), rel=0.01)
    # at the A100-era cap of 80 GB/s the tail of the longest request costs more
    assert plan_time(fa, "H100", group_size=4, per_cta_cap=80e9)["total"] > 2 * sh["floor"]


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
