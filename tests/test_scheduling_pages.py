"""§5b (scheduling the prefill kernels): the page's numbers, its explorers' data, and exercises 14-15 and 18 worked by
hand."""
from __future__ import annotations

import numpy as np
import pytest

from flashbook import exercises as E
from flashbook.figures import scheduling as S
from flashbook.pages import scheduling_prefill


@pytest.fixture(scope="module")
def n():
    return scheduling_prefill.numbers()


def test_dq_bits_atomic_orders_differ_deterministic_does_not(n):
    assert n.distinct_det == 1 and 1 < n.distinct_atomic <= n.trials
    assert 0 < n.differ_share < 1 and 0 < n.rel_diff < 1e-6          # rounding only, in a share of the elements
    assert n.bits_ctas == n.bits_N // n.bits_block


def test_dq_atomic_traffic_and_designs(n):
    # causal, N = 4096, 128 x 128 blocks: 32 x 33 / 2 visited pairs of 128 x 128 adds; 4 B each sent to L2, where the
    # read-modify-write happens; HBM sees the 2 MB buffer zeroed and read and dQ written in BF16
    assert n.adds_M * 1e6 == 32 * 33 // 2 * 128 * 128
    assert n.payload_MB == pytest.approx(4 * n.adds_M) and n.rmw_MB == pytest.approx(8 * n.adds_M)
    assert n.buffer_MB == pytest.approx(4 * 4096 * 128 / 1e6) and n.hbm_MB == pytest.approx(10 * 4096 * 128 / 1e6)
    # one add: 4 x 128 x 128 B at 12 TB/s / 132 against 10 x 128^3 FLOP at 989 TFLOP/s / 132
    assert n.add_share_est == pytest.approx((4 * 128 * 128 / (12e12 / 132)) / (10 * 128**3 / (989e12 / 132)), rel=1e-3)
    assert n.add_share == 0.25 and abs(n.add_share_est - n.add_share) < 0.05     # the slider default, rounded
    # causal: the old increasing order serialises, FA3's reversed order with SPT keeps most, DASH's descending more
    assert n.c_semaphore_ascending_hi < n.c_fa3_lo <= n.c_fa3_hi < n.c_dash_descending_hi <= 100
    assert n.f_dash_shift_lo == n.f_dash_shift_hi == 100 and n.f_semaphore_ascending_lo < 100
    assert n.c_fa2_split_buffers_lo < 60 and (n.fa2_splits_16k, n.fa2_ctas_16k) == (9, 144)
    assert (n.fa4_det, n.fa4_blog, n.fa4_blog_hi, n.dash_loss, n.dash_x) == (75, 85, 90, 37.9, 1.28)


def test_causal_gain_against_fa4(n):
    assert 0 < n.gain1_lo <= n.gain1_hi < n.gain2_lo <= n.gain2_hi
    assert n.sec1_hi <= n.gain1_hi + 0.5 and n.fa3_ctas_per_sm == 1
    assert n.gain1_lo < n.lpt_mha_hi and n.gain1_hi < n.lpt_mha + 0.5          # one CTA per SM: the low end only
    assert n.lpt_mha <= n.gain2_hi <= n.lpt_mha_hi                              # two CTAs per SM: inside the range
    assert (n.l2_heads, n.l2_MiB, n.l2_budget_MiB, n.l2_heads_fa4, n.l2_budget_fa4_MiB) == (8, 32.0, 32.0, 8, 50.0)
    assert n.prefill_ms == pytest.approx(n.prefill_lpt_ms * (1 + n.prefill_gain / 100))
    assert 3.3 < n.prefill_ms < 3.45 and 2.85 < n.prefill_lpt_ms < 3.0


def test_varlen_savings(n):
    assert 0 < n.uniform_flops_saved < n.zipf_flops_saved < 1
    assert n.zipf_working < n.zipf_launched
    d = S.varlen_data("zipf")
    assert d["grid"]["launched"] == -(-n.zipf_longest // 128) * 16 * 16


def test_explorer_data_shapes():
    c = S.dq_chain_data("H100-SXM", add_share=0.25)
    assert c["seqlen"].tolist() == list(S.BWD_SEQLENS) and np.all(c["semaphore_ascending"] < c["dash_descending"])
    assert c["designs"] == S.DQ_DESIGNS[True] and c["causal"]
    d = S.causal_data("H200-SXM", seqlen=1024, ctas_per_sm=1)
    assert set(d["schedules"]) == set(S.CAUSAL_ORDERS)
    assert d["schedules"]["lpt"].makespan <= d["schedules"]["launch"].makespan
    assert d["schedules"]["fa3_sections"].makespan <= d["schedules"]["launch"].makespan
    with pytest.raises(ValueError, match="kind"):
        S.varlen_lengths("normal")
    u = S.varlen_lengths("uniform", batch=64, mean=1000)
    assert u.min() >= 500 and u.max() <= 1500


def test_ex14_by_hand():
    """6 CTAs of 1..6 units on 4 SMs: launch 1,2,3,4 | 5 after the 1 (ends 6) | 6 after the 2 (ends 8); LPT
    6,5,4,3 | 2 after the 3 (ends 5) | 1 after the 4 (ends 5): makespan 6."""
    ref = E.reference(14)
    assert ref == {"launch": 8.0, "lpt": 6.0, "gain_pct": pytest.approx(100 / 3)}
    v = E.check(14, {**ref, "lpt": 21 / 4}, quiet=True)
    assert v.mistakes() == ["ideal_lpt"]


def test_ex15_by_hand():
    """256, 512, 1024, 2048 tokens, no mask: FLOPs ~ n^2, so 1 - (1 + 4 + 16 + 64) / (4 x 64) = 66.8% saved;
    16 blocks per sequence launched, 2 + 4 + 8 + 16 working: (64 - 30) x 16 heads = 544 empty CTAs."""
    ref = E.reference(15)
    assert ref["flops_pct"] == pytest.approx(100 * (1 - 85 / 256)) and ref["empty"] == 544
    assert E.check(15, {**ref, "empty": 34}, quiet=True).mistakes() == ["one_head"]


def test_ex18_by_hand(n):
    """Causal, N = 4096, d = 128, 128 x 128 blocks: 32 x 33 / 2 = 528 visited pairs of 128 x 128 adds, 8 bytes each
    (an FP32 read and write); the page's prose quotes the same counts."""
    ref = E.reference(18)
    assert ref == {"adds_M": 528 * 128 * 128 / 1e6, "rmw_MB": 8 * 528 * 128 * 128 / 1e6}
    assert ref["adds_M"] == n.adds_M and ref["rmw_MB"] == n.rmw_MB
    v = E.check(18, {**ref, "adds_M": 32 * 32 * 128 * 128 / 1e6, "rmw_MB": 4 * 528 * 128 * 128 / 1e6}, quiet=True)
    assert v.mistakes() == ["mask_blocks", "four_bytes"]
    # a variant without a mask: every CTA visits all T_r query blocks, and the mask mistake now says so
    s = next(s for s in range(1, 41) if not E.variants.params(E.exercise(18), s)["causal"])
    p, r = E.variants.params(E.exercise(18), s), E.reference(18, s)
    assert r["adds_M"] == (p["N"] // p["block_q"]) * (p["N"] // p["block_kv"]) * p["block_q"] * p["d"] / 1e6
    half = E.check(18, {**r, "adds_M": E.exercise(18).compute(p)[1]["other_adds_M"]}, variant=s, quiet=True)
    assert half.mistakes() == ["mask_blocks"] and "without a mask" in half.message
