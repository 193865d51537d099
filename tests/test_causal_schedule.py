"""labcore.causal_schedule: causal CTA costs, three dispatch orders on a GPU's SMs, FA3's L2 sections."""
import pytest

from labcore.causal_schedule import benchmark_shapes, causal_cta_costs, causal_load_balance, causal_schedule_table, \
    l2_section
from labcore.published import published


def test_costs_in_fa2_launch_order():
    c = causal_cta_costs(512, batch=2, heads=3, block_q=128, block_kv=128)
    assert c.tolist() == [1, 2, 3, 4] * 6
    assert causal_cta_costs(300, batch=1, heads=1, block_q=128, block_kv=64).tolist() == [2, 4, 5]


def test_shapes():
    s = benchmark_shapes("fa2", head_dim=128)
    assert [(r["seqlen"], r["batch"], r["heads"]) for r in s][:2] == [(512, 32, 16), (1024, 16, 16)]
    assert benchmark_shapes("fa4", head_dim=64)[-1] == {"seqlen": 32768, "batch": 1, "heads": 32, "head_dim": 64}
    with pytest.raises(ValueError, match="divide"):
        benchmark_shapes("fa2", head_dim=96)


def test_hand_worked_two_sms():
    # one head, 4 query blocks (costs 1, 2, 3, 4) on 2 SMs: launch ends at 6 (1+3 | 2+4), LPT at 5 (4+1 | 3+2)
    gpu = __import__("labcore").get_gpu("H100").with_(num_sms=2)
    r = causal_load_balance(gpu, seqlen=512, batch=1, heads=1)
    assert r["launch"].makespan == 6.0 and r["lpt"].makespan == 5.0 and r["longest_first"].makespan == 5.0
    assert r["lpt_gain"] == pytest.approx(0.2)
    assert r["launch"].slot_idle.tolist() == [2.0, 0.0]


def test_lpt_beats_launch_on_the_benchmark_shapes():
    rows = causal_schedule_table("H100", paper="fa2")
    for row in rows:
        assert row["ratio_lpt"] <= row["ratio_launch"] + 1e-12
        assert row["ratio_lpt"] >= 1.0
    long_ = rows[-1]                                       # 16k, batch 1, 16 heads: 2048 CTAs on 132 SMs
    assert long_["ctas"] == 16 * 128
    assert long_["lpt_gain"] > 0.0
    lo, hi = published("fa4.lpt_gain_mha").value
    assert 0 < lo < hi < 0.2                               # the published gain the page compares against


def test_l2_section():
    # FA3 rule: 8k keys, d = 128, BF16: one KV head = 8192 * 256 * 2 * 2 = 8 MiB -> 4 heads in 32 MiB
    r = l2_section(8192, head_dim=128)
    assert r["size_one_kv_head"] == 8 * 2 ** 20 and r["kv_heads"] == 4 and r["swizzle"] == 4
    assert r["working_set"] == 16 * 2 ** 20
    assert l2_section(8192, head_dim=128, qhead_per_khead=8)["swizzle"] == 32
    assert l2_section(8192, head_dim=128, qhead_per_khead=8, pack_gqa=True)["swizzle"] == 4
    assert l2_section(131072, head_dim=128)["kv_heads"] == 1
    assert l2_section(8192, head_dim=128, rule="fa4")["kv_heads"] == 8     # 50 MiB / 4 MiB = 12.5 -> 8
    with pytest.raises(ValueError, match="rule"):
        l2_section(8192, head_dim=128, rule="fa5")
