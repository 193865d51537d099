"""The decode-scheduling page (book/06b): the numbers its prose quotes, its four explorers, and exercises 16-17 and
19-20."""
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
    """The Zipf batch on an H100: flash-attn's one split count piles the work on the longest request's splits;
    under the physical rule the idle SMs' bandwidth makes up most of it, under the lecture's rule it does not."""
    assert (n.sp_batch, n.sp_mean, n.sp_sms) == (64, 1024, 132) and n.sp_longest == 16 * n.sp_mean
    assert n.fa_splits == 4 and n.fa_ctas == n.fa_splits * n.sp_batch and n.fa_busiest == n.sp_longest / n.fa_splits
    assert (n.fa_occ, n.fi_occ, n.lean_occ, n.mla_occ) == (2, 2, 1, 1)
    assert n.fi_busiest == n.fi_chunk == n.fi_max_chunk and n.fi_chunk % 16 == 0 and n.fi_chunk >= 128
    assert n.lean_busiest % n.lean_block == 0 and n.lean_ratio_keys < 1.01 < n.lean_ratio
    assert n.mla_partial_KB < n.fi_partial_KB < n.fa_partial_KB and n.lean_partial_KB < n.fi_partial_KB
    assert n.fa_partial_KB == pytest.approx(n.fa_ctas * 4 * (128 * 4 + 4) / 1e3)       # FP32 o and lse, every split
    assert n.fi_partial_KB == pytest.approx(n.fi_chunks * 4 * (128 * 2 + 4) / 1e3)     # BF16 tmp_v, FP32 tmp_s
    assert n.fa_ratio_flat < 1.1                                  # equal lengths: the one split count is fine
    assert n.key_ns == pytest.approx(512 / (3.35e12 / 132) * 1e9)
    # the physical rule: every plan between the floor and 1.2 times it; the lecture's rule: flash-attn ~8x
    assert n.floor_us == pytest.approx(n.sp_batch * n.sp_mean * 512 / 3.35e12 * 1e6, rel=0.01)
    for t in ("fa", "fi", "lean", "mla"):
        us = getattr(n, f"{t}_us")
        assert n.floor_us <= us <= getattr(n, f"{t}_us_lecture") and us < 1.2 * n.floor_us
    assert n.fa_us_lecture > 7 * n.floor_us and n.fa_us_a100cap > 2 * n.floor_us > n.fa_us
    assert (n.cap_GBs, n.cap_a100_GBs) == pytest.approx((180224 / 0.8e-6 / 1e9, 65536 / 0.8e-6 / 1e9))
    assert (n.fa_where, n.fi_where, n.mla_where) == ("host", "host", "device")


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
    assert n.mx_fused_us == pytest.approx(n.mx_prefill_work_us + n.mx_decode_compute_us + 5)   # one launch
    assert n.mx_gain == pytest.approx(n.mx_serial_us / n.mx_fused_us - 1)
    assert n.mx_gain_last < n.mx_gain <= n.mx_best_gain < 1 and 512 <= n.mx_best_chunk <= 2048   # POD's chunk range
    assert (n.pod_mean, n.pod_max, n.pod_tput, n.pod_tput_hi) == (0.28, 0.59, 0.19, 0.22)
    # the agreement with POD rests on 64-row decode tiles: smaller tiles or the chunk's own tail move the bound
    assert (n.mx_decode_rows, n.mx_group) == (64, 4) and n.mx_gain_16 >= n.mx_gain_useful * 0.99 > n.pod_max
    assert n.mx_gain_tail < n.mx_gain and abs(n.mx_gain_tail - n.pod_mean) < 0.05


def test_published_figures(n):
    assert (n.lean_mean_x, n.lean_max_x, n.fi_itl_lo, n.fi_itl_hi, n.vllm_x_lo, n.vllm_x_hi) == (2.6, 8.33, 0.29, 0.69, 2, 4)
    assert (n.lean_fd_mean_x, n.lean_fd_max_x, n.graph_launch_us) == (1.73, 2.18, 1.3)
    assert (n.fa3_bm, n.fa3_bn, n.fa3_bn_causal) == (128, 176, 128) and not (n.tma_vllm or n.tma_mla)


def test_split_plans_explorer_data():
    d = fig.split_plans_data("H100", batch=64, skew=16)
    for name in lc.SPLIT_PLANS:
        r = d[name]
        assert r["busy"].sum() == pytest.approx(d["lengths"].sum()) and r["busy"].size == d["num_sms"]
        assert d["sweep"][name][fig.SKEWS.index(16)] == pytest.approx(r["time"] / r["floor"])
        assert r["floor"] <= r["time"] <= r["time_lecture"]
    assert np.all(d["sweep"]["lean"] < 1.05) and d["sweep"]["flash_attn"][-1] > d["sweep"]["flash_attn"][0]
    assert d["sweep_lecture"][-1] > 5 * d["sweep"]["flash_attn"][-1]


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
    assert ref == {"fa_keys": 3840.0, "lean_keys": 640.0, "ratio": pytest.approx(3840 / 640)}
    # by hand: 118 blocks of 128 keys, 4 splits of 30 blocks; Lean: 118 + 63 x 8 = 622 whole blocks over 132 shares,
    # at most 5 blocks each, 640 keys (cut at single keys it would be 79,512 / 132 rounded up, 603)
    assert math.ceil(math.ceil(15_000 / 128) / 4) * 128 == 3840 and math.ceil(622 / 132) * 128 == 640
    _, ctx = E.exercise(16).compute()
    assert ctx["splits"] == 4 and ctx["no_round"] == 3750 and ctx["total"] == 79_512 and ctx["all_blocks"] == 622
    assert E.check(16, {**ref, "lean_keys": 603.0}, quiet=True).mistakes() == ["single_keys"]


def test_ex17_variant0_is_flashmla_deep_dive():
    ref = E.reference(17)
    assert ref["intensity"] == pytest.approx(128 * 2 * 1088 / 1152)
    assert ref["threshold"] == pytest.approx((865e12 / 3.35e12) * 1152 / (2 * 1088))
    v = E.check(17, {**ref, "threshold": 129.1}, quiet=True)
    assert v.status == "wrong" and v.mistakes() == ["rounded_rule"]


def test_ex19_variant0_is_the_pages_small_batch():
    """0, 1, 700, 3, 2048, 129 tokens in pages of 16: 0 + 1 + 44 + 1 + 128 + 9 = 183 pages, 2,928 slots for 2,881
    tokens: 15 + 4 + 13 + 15 = 47 empty (the empty and the 2048-token requests waste none), 47 / 2,928 = 1.61%."""
    ref = E.reference(19)
    assert ref == {"pages": 183, "wasted": 47, "waste_pct": pytest.approx(100 * 47 / 2928)}
    assert E.check(19, {**ref, "pages": 179}, quiet=True).mistakes() == ["rounded_down"]       # floor(L / 16)
    assert E.check(19, {**ref, "wasted": 64}, quiet=True).mistakes() == ["full_pages"]          # 4 partial pages
    assert E.check(19, {**ref, "waste_pct": 1.63}, quiet=True).mistakes() == ["of_used"]        # 47 / 2,881


def test_ex20_variant0_is_the_pages_mixed_step():
    """The page's mixed step as whole-µs demands; serial = the two rooflines plus their launches, fused = the larger
    summed demand plus one launch (labcore.fused_step_time, the rule of labcore.mixed_batch_time)."""
    p, ref = E.exercise(20).params, E.reference(20)
    serial = max(p["p_compute"], p["p_memory"]) + p["p_launch"] + max(p["d_compute"], p["d_memory"]) + p["d_launch"]
    fused = max(p["p_compute"] + p["d_compute"], p["p_memory"] + p["d_memory"]) + max(p["p_launch"], p["d_launch"])
    assert ref["serial_us"] == pytest.approx(serial) and ref["fused_us"] == pytest.approx(fused)
    assert ref["gain_pct"] == pytest.approx(100 * (serial / fused - 1))
    # the page's own step: the same serial time; the exercise charges the chunk its own idle last round, so its fused
    # time lies above the page's bound, which lets a fused kernel fill that round with decode work
    n = scheduling_decode.numbers()
    assert ref["serial_us"] == pytest.approx(n.mx_serial_us, abs=2) and ref["fused_us"] > n.mx_fused_us
    assert ref["gain_pct"] == pytest.approx(100 * n.mx_gain_tail, abs=0.3)
    ideal = max(max(p["p_compute"], p["p_memory"]) + p["p_launch"], max(p["d_compute"], p["d_memory"]) + p["d_launch"])
    v = E.check(20, {**ref, "fused_us": ideal}, quiet=True)
    assert v.status == "wrong" and v.mistakes() == ["ideal"]


@pytest.mark.parametrize("k", [16, 17, 19, 20])
def test_new_exercises_have_sound_variants(k):
    ex = E.exercise(k)
    for s in range(1, 21):
        inst = E.variants.solve(ex, s)
        assert E.variants.sound(ex, inst) and E.check(k, inst.ref, variant=s, quiet=True).status == "correct"
    assert len({tuple(sorted(E.variants.params(ex, s).items())) for s in range(1, 21)}) > 10
