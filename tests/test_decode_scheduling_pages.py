"""The decode-scheduling page (book/06b): the numbers its prose quotes, its four explorers, and exercises 16-17."""
from __future__ import annotations

import math

import numpy as np
import pytest

import labcore as lc
from flashbook import exercises as E
from flashbook.exercises.defs_decode_scheduling import H800_DEEP_DIVE
from flashbook.figures import decode_scheduling as fig
from flashbook.pages import scheduling_decode


@pytest.fixture(scope="module")
def n():
    return scheduling_decode.numbers()


def test_split_plan_numbers(n):
    """The Zipf batch on an H100: flash-attn's one split count is worst, Lean's equal shares are ideal."""
    assert (n.sp_batch, n.sp_mean, n.sp_sms) == (64, 1024, 132) and n.sp_longest == 16 * n.sp_mean
    assert n.fa_splits == 4 and n.fa_ctas == n.fa_splits * n.sp_batch and n.fa_makespan == n.sp_longest / n.fa_splits
    assert n.lean_ratio < 1.01 < n.fi_ratio < 2 < n.fa_ratio
    assert n.lean_makespan == math.ceil(n.ideal_keys) and n.fi_makespan == n.fi_chunk == n.fi_max_chunk
    assert n.fi_chunk % 16 == 0                                   # whole pages of the default page size
    assert n.fi_partial_KB < n.lean_partial_KB < n.fa_partial_KB  # one-chunk requests write no partial
    assert n.fa_partial_KB == pytest.approx(n.fa_ctas * 4 * 129 * 4 / 1e3)
    assert n.fa_ratio_flat < 1.1                                  # equal lengths: the one split count is fine
    assert n.key_ns == pytest.approx(512 / (3.35e12 / 132) * 1e9)
    assert n.fa_us == pytest.approx(n.fa_makespan * n.key_ns / 1e3)


def test_paged_numbers(n):
    assert (n.pg_vllm_ps, n.pg_mla_ps) == (16, 64)
    assert n.pg_waste_vllm < n.pg_waste_mla < n.pg_waste_128 and n.pg_waste_vllm < n.vllm_waste
    assert n.pg_slots_vllm == pytest.approx((16 - 1) / 2, abs=1.5)   # about half a page per request
    assert n.pg_slots_mla == pytest.approx((64 - 1) / 2, abs=4)
    assert n.pg_entries_1 == pytest.approx(n.pg_mean, rel=0.01) and n.pg_entries_vllm > n.pg_entries_mla


def test_mla_numbers(n):
    assert (n.mla_row, n.mla_row_bytes, n.mla_mha_bytes, n.l8_token_bytes) == (576, 1152, 81920, 4096)
    assert n.mla_int_1 == pytest.approx(17 / 9) and n.mla_int_128 == pytest.approx(128 * 17 / 9)
    assert round(n.mla_exact, 1) == 136.7 and round(n.mla_approx, 1) == 129.1 and n.mla_stated == 128
    assert not n.mla_bound_at_heads and n.mla_bound_at_2x          # one token of 128 heads below, two above
    assert (n.h800_TFLOPs, n.h800_TBs, n.fmla_GBs, n.fmla_TFLOPs, n.fmla_TFLOPs_new) == (865, 3.35, 3000, 580, 660)


def test_mixed_numbers(n):
    assert n.mx_serial_us == pytest.approx(n.mx_prefill_us + n.mx_decode_us)
    assert n.mx_ideal_us <= n.mx_fused_us <= n.mx_serial_us and n.mx_bound == "compute"
    assert n.mx_gain == pytest.approx(n.mx_serial_us / n.mx_fused_us - 1)
    assert n.mx_gain_last < n.mx_gain <= n.mx_best_gain < 1 and 512 <= n.mx_best_chunk <= 2048   # POD's chunk range
    assert (n.pod_mean, n.pod_max, n.pod_tput, n.pod_tput_hi) == (0.28, 0.59, 0.19, 0.22)


def test_published_figures(n):
    assert (n.lean_mean_x, n.lean_max_x, n.fi_itl_lo, n.fi_itl_hi, n.vllm_x_lo, n.vllm_x_hi) == (2.6, 8.33, 0.29, 0.69, 2, 4)


def test_split_plans_explorer_data():
    d = fig.split_plans_data("H100", batch=64, skew=16)
    for name in lc.SPLIT_PLANS:
        r = d[name]
        assert r["busy"].sum() == pytest.approx(d["lengths"].sum()) and r["busy"].size == d["num_sms"]
        assert r["ratio"] == pytest.approx(r["makespan"] / (d["lengths"].sum() / d["num_sms"]))
        assert d["sweep"][name][fig.SKEWS.index(16)] == r["ratio"]
    assert np.all(d["sweep"]["lean"] < 1.01) and d["sweep"]["flash_attn"][-1] > d["sweep"]["flash_attn"][0]


def test_page_waste_and_mla_and_mixed_data():
    w = fig.page_waste_data(mean=1024, page_size=16)
    assert np.all(np.diff(w["curves"][1024]) >= 0) and w["curves"][1024][0] == 0
    m = fig.mla_roofline_data(H800_DEEP_DIVE, s_q=1, group=8)
    assert np.all(np.diff(m["mha"]) > 0) and m["mla"][0] == m["mla"][4]        # MLA flat below the crossing
    assert m["mla"][-1] > m["mla"][0] and m["threshold"]["exact"] == pytest.approx(136.7, abs=0.05)
    assert np.allclose(m["intensity"]["gqa"], np.minimum(m["rows"], 8)) and np.allclose(m["intensity"]["mha"], 1)
    x = fig.mixed_batch_data(decode_batch=64, context=8192)
    assert np.all(x["fused"] <= x["serial"]) and np.all(x["fused"] >= x["ideal"]) and x["pod_max"] == 0.59


# ------------------------------------------------------------------------------------- exercises 16 and 17
def test_ex16_variant0_is_the_pages_setting():
    ref = E.reference(16)
    assert ref == {"fa_keys": 3840.0, "lean_keys": 603.0, "ratio": pytest.approx(3840 / 603)}
    # by hand: 118 blocks of 128 keys, 4 splits of 30 blocks; 79,512 keys over 132 SMs rounded up
    assert math.ceil(math.ceil(15_000 / 128) / 4) * 128 == 3840 and math.ceil((15_000 + 63 * 1024) / 132) == 603
    _, ctx = E.exercise(16).compute()
    assert ctx["splits"] == 4 and ctx["no_round"] == 3750 and ctx["total"] == 79_512


def test_ex17_variant0_is_flashmla_deep_dive():
    ref = E.reference(17)
    assert ref["intensity"] == pytest.approx(128 * 2 * 1088 / 1152)
    assert ref["threshold"] == pytest.approx((865e12 / 3.35e12) * 1152 / (2 * 1088))
    v = E.check(17, {**ref, "threshold": 129.1}, quiet=True)
    assert v.status == "wrong" and v.mistakes() == ["rounded_rule"]


@pytest.mark.parametrize("k", [16, 17])
def test_new_exercises_have_sound_variants(k):
    ex = E.exercise(k)
    for s in range(1, 21):
        inst = E.variants.solve(ex, s)
        assert E.variants.sound(ex, inst) and E.check(k, inst.ref, variant=s, quiet=True).status == "correct"
    assert len({tuple(sorted(E.variants.params(ex, s).items())) for s in range(1, 21)}) > 10
