"""Occupancy in the decode model: a wave has SMs x CTAs-per-SM slots.

The occupancy is derived from each kernel's tiles, threads and registers against the GPU preset
(:func:`labcore.decode_ctas_per_sm`); the lecture's one CTA per SM stays the default, so its figures stay.
"""
import numpy as np
import pytest

import labcore as lc
from flashbook.pages import flash_decoding

CODE = lc.get_decode_shape("CodeLlama-34B (4-way TP)")


def test_both_kernels_fit_two_ctas_on_an_a100_sm():
    fa = lc.decode_ctas_per_sm("A100", method="fa2", head_dim=128)
    fd = lc.decode_ctas_per_sm("A100", method="flash_decoding", head_dim=128)
    # v2.0.9's 128 x 64 tile: (128 + 2 x 64) x 128 x 2 B = 64 KiB; the split kernel 64 x 128: 80 KiB
    assert (fa["smem_per_cta"], fd["smem_per_cta"]) == (64 * 1024, 80 * 1024)
    assert fa["ctas_per_sm"] == fd["ctas_per_sm"] == 2            # flash-attn >= 2.5.7 hard-codes this factor
    assert fd["by_smem"] == 2 and fd["by_threads"] == 16 and fd["by_registers"] == 2


def test_a_tile_too_big_for_one_block_gives_zero():
    r = lc.decode_ctas_per_sm("A100", method="flash_decoding", head_dim=512, block_n=256)
    assert r["ctas_per_sm"] == 0


def test_default_is_the_lecture_one_cta_per_sm():
    e = lc.decode_attention_time("A100", batch=64, seqlen=2048, method="flash_decoding", num_splits=1, **CODE)
    assert (e.ctas_per_sm, e.num_ctas, e.waves, round(e.total * 1e6)) == (1, 128, 2, 151)


def test_derived_occupancy_puts_128_ctas_in_one_wave():
    e1 = lc.decode_attention_time("A100", batch=64, seqlen=2048, method="flash_decoding", num_splits=1, **CODE)
    e2 = lc.decode_attention_time("A100", batch=64, seqlen=2048, method="flash_decoding", num_splits=1,
                                  ctas_per_sm="derived", **CODE)
    assert (e2.ctas_per_sm, e2.waves) == (2, 1)
    assert e2.total < 0.7 * e1.total           # memory-bound: no second wave, the bandwidth is shared by 128 CTAs


def test_compute_bound_ctas_gain_nothing_from_co_residence():
    # FlashAttention-2 at batch 1, 64K: 16 compute-bound CTAs, the same time with room for two per SM
    a = lc.decode_attention_time("A100", batch=1, seqlen=65536, method="fa2", **CODE)
    b = lc.decode_attention_time("A100", batch=1, seqlen=65536, method="fa2", ctas_per_sm=2, **CODE)
    assert b.total == a.total
    # batch 8: 128 CTAs, 20 SMs hold two; they share the SM's tensor cores, so one wave costs two CTA times
    c = lc.decode_attention_time("A100", batch=8, seqlen=65536, method="fa2", ctas_per_sm=2, **CODE)
    assert (c.waves, c.bound) == (1, "compute")
    assert c.total == pytest.approx(2 * a.compute_time + a.launch_time, rel=1e-12)


def test_ctas_per_sm_is_checked():
    for bad in (0, -1, "two"):
        with pytest.raises((ValueError, TypeError)):
            lc.decode_attention_time("A100", batch=1, seqlen=1024, method="fa2", ctas_per_sm=bad, **CODE)


def test_grid_and_scalar_agree_under_derived_occupancy():
    m = lc.load_flash_decoding_a100()
    for rule in lc.LAST_WAVE_RULES:
        g = lc.decode_time_grid("A100", batch=m["batch"], seqlen=m["seqlen"], method="flash_decoding", num_splits=4,
                                ctas_per_sm="derived", last_wave=rule, **CODE)
        one = [lc.decode_attention_time("A100", batch=int(b), seqlen=int(n), method="flash_decoding", num_splits=4,
                                        ctas_per_sm="derived", last_wave=rule, **CODE).total
               for b, n in zip(m["batch"], m["seqlen"])]
        np.testing.assert_allclose(g["total"], one, rtol=1e-12)


def test_shared_rule_never_above_full_rule_with_two_ctas_per_sm():
    b, n = np.array([1, 8, 64, 256])[:, None], np.array([256, 1024, 65536])[None, :]
    for method in lc.DECODE_METHODS:
        kw = dict(batch=b, seqlen=n, method=method, ctas_per_sm=2, **CODE)
        full = lc.decode_time_grid("A100", last_wave="full", **kw)["total"]
        shared = lc.decode_time_grid("A100", last_wave="shared", **kw)["total"]
        assert np.all(shared <= full)


def test_occupancy_table_numbers():
    s = flash_decoding.occupancy_summary()
    # the worst row's agreement (unsplit, 128 CTAs) does not survive two CTAs per SM: 128 CTAs fit 216 slots
    assert (s["row3_ctas"], s["row3_slots"]) == (128, 216)
    assert s["row3_derived_us"] < 0.7 * s["row3_measured_us"]
    assert s["fa2_max_full_derived"] > s["fa2_max_full_one"]
    assert set(flash_decoding.occupancy_comparisons()) == set(flash_decoding.OCCUPANCY_SETTINGS)


def test_kernel_gap_share():
    g = flash_decoding.kernel_gap_summary()
    assert 0.05 < g["fd_share_lo"] < g["fd_share_hi"] < 0.25
    assert g["fd_mae_graph"] > g["fd_mae_lecture"]          # a smaller gap makes the optimistic model worse
