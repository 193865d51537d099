"""flashbook.pages: the numbers each page's prose quotes (moved here with the page modules: the asserts the
pages' hidden cells made, and the tests of the report functions that used to live in labcore)."""
from __future__ import annotations

import numpy as np
import pytest

import labcore as lc
from labcore import fp8
from labcore import prefill as P
from labcore.published import published
from flashbook.pages import (Numbers, bottlenecks, flash_backward, flash_decoding, flash_forward, io_awareness,
                             online_softmax, published_values, state_of_the_field, what_limits)
from flashbook.pages import exercises as exercises_page
from flashbook.pages import megakernel as megakernel_page


def test_numbers_is_a_read_only_record():
    n = Numbers(a=1)
    assert n.a == 1 and "a=1" in repr(n)
    with pytest.raises(AttributeError):
        n.a = 2
    with pytest.raises(AttributeError):
        del n.a
    with pytest.raises(AttributeError, match="fields: a"):
        n.b


def test_bottlenecks_and_io_awareness_pages():
    b, io = bottlenecks.numbers(), io_awareness.numbers()
    assert round(b.score_to_q_ratio) == 64 and b.kernels_per_layer * 16 + 2 == b.decode_kernels
    assert io.hbm_elements == 4 * 4096 * 64 + 4 * 4096 ** 2 and io.a100_ridge / io.intensity > 1


def test_online_softmax_page():
    n = online_softmax.numbers()
    assert round(n.per_step_nonmatmul_pct, 1) == 1.6 and round(n.deferred_nonmatmul_pct, 1) == 1.0
    assert round(n.per_step_time_pct) == 25 and round(n.deferred_time_pct) == 16
    assert 0.05 < n.fp16_l_rel_error < 0.5       # "of order 1e-1" in the lecture
    assert round(n.fp16_exp_overflow_x, 2) == 11.09


def test_flash_forward_page():
    n = flash_forward.numbers()
    assert (round(n.per_step_nonmatmul_pct, 1), round(n.deferred_nonmatmul_pct, 1)) == (1.6, 1.0)
    assert n.fa1_hbm_elements == 17_653_760
    assert (round(n.standard_hbm_MB, 1), round(n.fa1_hbm_MB, 1), round(n.standard_over_fa1, 1)) == (136.3, 35.3, 3.9)
    assert round(n.fa1_over_bound_lo, 1) == 12.6 and round(n.fa1_over_bound_hi) == 19
    assert round(n.fa2_over_bound_lo) == 25 and round(n.fa2_over_bound_hi) == 28
    assert (round(n.fa1_MB_at_16KiB), round(n.fa1_MB_at_256KiB)) == (207, 14)
    assert n.fp8.gain_rotation > n.fp8.gain_block_scales                  # the prose says the rotation does most


def test_fp8_numbers_hold_what_section_4_5_quotes():
    """The record §4.5 reads: the format's constants, the setting, and ratios of the RMSE it ran."""
    r = flash_forward.fp8_numbers()
    e, p = r.errors["rmse"], fp8.FA3_TABLE3
    assert (r.precision_bits, r.max_value) == (4, 448.0)
    assert (r.N, r.d, r.block, r.outlier_std) == (1024, 128, 128, 10.0)
    assert r.outlier_pct == pytest.approx(0.1)
    assert (r.baseline_rmse, r.both_tricks_rmse) == (e["fp8_per_tensor"], e["fp8_block_incoherent"])
    assert r.gain_both == pytest.approx(r.baseline_rmse / r.both_tricks_rmse) and r.gain_both > 1.2
    assert r.gain_rotation == pytest.approx(e["fp8_per_tensor"] / e["fp8_incoherent"])
    assert r.gain_block_scales == pytest.approx(e["fp8_per_tensor"] / e["fp8_block"])
    assert r.gain_rotation > r.gain_block_scales > 1          # the prose: the rotation does most of the gain
    assert r.fp16_flash_gain == pytest.approx(e["fp16_standard"] / e["fp16"]) and r.fp16_flash_gain > 1
    # the paper's side, from its Table 3: 2.4e-2 / 9.1e-3, 2.4e-2 / 9.3e-3, 2.4e-2 / 2.4e-2, 3.2e-4 / 1.9e-4
    assert r.paper_gain_both == pytest.approx(2.4e-2 / 9.1e-3)
    assert r.paper_gain_rotation == pytest.approx(2.4e-2 / 9.3e-3)
    assert r.paper_gain_block_scales == 1.0
    assert r.paper_fp16_flash_gain == pytest.approx(3.2e-4 / 1.9e-4)
    assert p["fp8_per_tensor"]["rmse"] / p["fp8_block_incoherent"]["rmse"] == r.paper_gain_both


def test_fp8_numbers_pass_their_setting_and_refuse_variants():
    small = flash_forward.fp8_numbers(N=64, d=16, block=16, outlier_fraction=0.01)
    assert (small.N, small.d, small.block) == (64, 16, 16)
    assert small.outlier_pct == pytest.approx(1.0)
    with pytest.raises(TypeError, match="variants"):
        flash_forward.fp8_numbers(variants=("fp16",))


def test_what_limits_page():
    n = what_limits.numbers()
    assert (n.b200_forward.mma, n.b200_forward.exp, n.b200_forward.smem) == (1024, 1024, 768)
    assert (n.b200_forward_2cta.mma, n.b200_forward_2cta.exp, n.b200_forward_2cta.smem) == (2048, 2048, 1536)
    assert (n.b200_backward.mma, n.b200_backward.exp, n.b200_backward.smem) == (2560, 1024, 3328)
    assert round(lc.calibrate_mma_efficiency(), 2) == lc.PREFILL_DEFAULTS["mma_efficiency"]
    assert n.mma_efficiency_pct == 100 * lc.PREFILL_DEFAULTS["mma_efficiency"]
    assert n.check.n_checked == 60 and n.fa2_speedup_vs_fa1 < n.fa2_speedup_vs_fa1_hi


def test_comparison_summary_holds_the_numbers_section_4b5_quotes():
    """The record §4b.5 reads, checked against the comparison it summarises and the claims its prose makes."""
    c = P.compare_prefill()
    s = what_limits.prefill_comparison_summary(c)
    err, fig, gen = c["error"], c["figure"].astype(str), c["generation"]
    a100 = np.char.startswith(fig, "fa2_fig4")
    checked = a100 | (gen == "fa3")
    assert s["n_checked"] == int(checked.sum()) == 60
    # with causal scheduling, occupancy, start-up and partial overlap in the model: 49 of 60, up from 33 (18/24, 15/36)
    assert s["n_within"] == int(np.sum(np.abs(err[checked]) <= 0.15)) == 49
    assert s["share"] == pytest.approx(100 * 49 / 60) and s["share"] >= 80       # the 80% goal is met
    assert (s["share_fa2"], s["share_fa3"]) == (pytest.approx(100 * 19 / 24), pytest.approx(100 * 30 / 36))
    assert s["worst"] == pytest.approx(100 * np.abs(err[checked]).max())       # the worst error is positive
    assert (s["worst_desc"], s["worst_seqlen"], s["worst_d"]) == ("FA3, with a causal mask,", 512, 64)
    assert s["missed_fa2"] + s["missed_fa3"] == 60 - s["n_within"] and s["miss_min"] > 15
    assert s["miss_max_seqlen"] == 1024 and "causal, 1k tokens: d = 64" in s["missed_fa2_list"]
    assert 0 < s["long_max"] <= 15                                              # long sequences: the model holds
    assert s["short_blocks"] == 512 // P.PREFILL_DEFAULTS["block_kv"] == 4
    assert s["short_mean"] == pytest.approx(100 * err[checked & (c["seqlen"] == 512)].mean()) and s["short_mean"] > 15
    assert s["a100_512_causal"] > s["a100_512_noncausal"] > 0                   # the mask makes it worse
    assert abs(s["fa3_d64"]) < 15 and s["fa2_h100_16k"] > 0 and s["fa2_d256"] > 15   # d = 64 now holds
    r4 = P.prefill_time("B200", batch=1, heads=16, seqlen=32768, head_dim=128, generation="fa4")
    assert s["fa4_model_TFLOPs"] == pytest.approx(float(r4["tflops"]))
    assert s["fa4_err"] == pytest.approx(100 * (s["fa4_model_TFLOPs"] * 1e12 / published("fa4.b200_bf16_peak").value - 1))
    assert abs(s["fa4_err"]) < 15 and s["fa4_bound"] == "MMA"
    assert abs(s["fp8_model_PFLOPs"] / (published("fa3.h100_fp8_peak").value / 1e15) - 1) < 0.05  # "close to 1.2"


def test_comparison_summary_rejects_what_is_not_a_comparison():
    assert what_limits.prefill_comparison_summary()["n_checked"] == 60          # computes the comparison itself
    with pytest.raises(TypeError, match="compare_prefill"):
        what_limits.prefill_comparison_summary([1, 2])
    with pytest.raises(ValueError, match="error"):
        what_limits.prefill_comparison_summary({"figure": 1})


def test_published_values_binds_ranges_and_scales():
    v = published_values(fa2=("fa2.a100_fraction_of_peak", 100), up="fa2.speedup_vs_fa1",
                         peak=("fa3.h100_fp16_peak", 1e-12))
    assert v == {"fa2": pytest.approx(50.0), "fa2_hi": pytest.approx(73.0), "up": 1.7, "up_hi": 3.0,
                 "peak": pytest.approx(740.0), "peak_hi": pytest.approx(740.0)}
    with pytest.raises(ValueError, match="unknown published key"):
        published_values(x="fa2.no_such_figure")
    with pytest.raises(TypeError, match="key"):
        published_values(x=3)
    with pytest.raises(TypeError, match="scale"):
        published_values(x=("fa2.speedup_vs_fa1", "100"))


def test_flash_backward_page():
    n = flash_backward.numbers()
    assert (round(n.P_GB, 1), round(n.L_MB, 1), round(n.flop_ratio, 3)) == (68.7, 4.2, 1.167)
    rat = [lc.training_step_io(N, 128, algorithm="standard") / lc.training_step_io(N, 128, algorithm="flash")
           for N in (1024, 4096, 32768)]
    assert all(round(r, 1) == 1.8 for r in rat) and (n.step_io_ratio_1k, n.step_io_ratio_32k) == (rat[0], rat[2])
    assert abs(n.standard_GB - 25.4) / 25.4 < 0.01
    assert round(n.paper_extra_flops_pct / 100, 2) == 0.13 and 0.13 <= round(n.extra_flops_pct / 100, 2) <= 0.17


def test_flash_decoding_page():
    n = flash_decoding.numbers()
    assert round(n.fa2_64k_ms, 2) == 2.13 and round(n.fa2_64k_GFLOP_per_cta, 2) == 4.29
    assert round(n.speedup_64k) == 36 and round(n.speedup_128k) == 43
    assert n.fa2_max_err <= 0.12                                # the lecture: FA2 within ±12% on every row
    assert n.s32_us < n.s64_us and n.b64_unsplit_ctas == 128 and round(n.b64_unsplit_us) == 151
    e32, e64 = (lc.decode_attention_time("A100", batch=1, seqlen=65536, method="flash_decoding", num_splits=s,
                                         **lc.get_decode_shape("CodeLlama-34B (4-way TP)")) for s in (32, 64))
    assert (e32.waves, e64.waves) == (1, 2) and (n.s32_ctas, n.s64_ctas) == (e32.num_ctas, e64.num_ctas)
    assert round(n.l8_kv_MB) == 537 and round(n.l8_fd_us, -1) == 170 and round(n.l8_fa2_ms, 2) == 1.64
    assert n.last_wave.fa2_mae_shared < n.last_wave.fa2_mae_full


def test_last_wave_summary_holds_the_numbers_section_6_quotes():
    """The record §6 reads on the two last-wave rules, checked against the comparisons it summarises."""
    by_rule = {rule: lc.compare_flash_decoding_a100(last_wave=rule) for rule in ("full", "shared")}
    s = flash_decoding.last_wave_summary(by_rule)
    f, sh = by_rule["full"], by_rule["shared"]
    assert np.all(sh["model_fa2"] <= f["model_fa2"]) and np.all(sh["model_fd"] <= f["model_fd"])
    assert s["fa2_changed"] == int(np.sum(sh["model_fa2"] < f["model_fa2"])) > 0
    # the prose: the shared rule helps FlashAttention-2 (mean, worst, refined worst) and hurts flash-decoding
    assert s["fa2_mae_shared"] < s["fa2_mae_full"] and s["fa2_max_shared"] < s["fa2_max_full"]
    assert s["fa2_ref_max_shared"] < s["fa2_ref_max_full"]
    assert s["fd_mae_shared"] > s["fd_mae_full"] and s["fd_ref_mae_shared"] > s["fd_ref_mae_full"]
    assert s["fd_ref_max_shared"] == pytest.approx(np.abs(sh["err_refined_fd"]).max())
    assert s["fd_fewer"] == int(np.sum(sh["splits_fd"] < f["splits_fd"]))
    # the row the shared rule helps most: more CTAs than SMs, a partial last wave, its error falls
    a100 = lc.get_gpu("A100")
    assert s["row_ctas"] > a100.num_sms and s["row_waves"] == -(-s["row_ctas"] // a100.num_sms)
    assert s["row_last"] == s["row_ctas"] - (s["row_waves"] - 1) * a100.num_sms
    assert s["row_err_shared"] < s["row_err_full"]
    assert (s["row_batch"], s["row_seqlen"]) in set(zip(f["batch"].tolist(), f["seqlen"].tolist()))
    assert flash_decoding.last_wave_summary() == s                # computes the comparisons itself
    with pytest.raises(ValueError, match="shared"):
        flash_decoding.last_wave_summary({"full": f})
    with pytest.raises(TypeError, match="dict"):
        flash_decoding.last_wave_summary([f, sh])


def test_megakernel_page():
    r = megakernel_page.numbers()
    assert r is megakernel_page.numbers() and r == megakernel_page.megakernel_report()
    assert round(r.ideal_us) == 739 and round(r.multi_prologues_us) == 81 and round(r.multi_launch_gaps_us) == 148
    assert set(r.layer_instruction_kinds) >= {"qkv", "attention", "reduction", "o_proj", "gate_up", "down"}
    assert r.multi_total_us > r.mega_total_us and r.speedup == pytest.approx(r.multi_total_us / r.mega_total_us)
    with pytest.raises(ValueError):
        megakernel_page.megakernel_report(gpu="no-such-gpu")


def test_state_of_the_field_and_exercises_pages():
    sp = state_of_the_field.numbers().speedup
    assert sp[("GPT-2-medium", "B200")] > sp[("Llama-3.2-1B", "H100")] > sp[("Llama-3.1-8B", "H100")] > 1
    ex = exercises_page.numbers()
    assert ex.ex9_sms == lc.get_gpu("A100").num_sms and set(ex.ex9_options) == {"A", "B", "C", "D"}
