"""The decode time model on the one wave machinery (labcore.waves.waves_time): the two last-wave rules (§6).

"full" is the lecture's charge (every lecture figure uses it); "shared" lets the CTAs of the last wave share
the HBM bandwidth among themselves. Tests: the full rule is, bit for bit, the lecture's formula; the shared
rule is never slower; where the two differ and by how much; each rule's error on every measured row.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labcore as lc

CODELLAMA = dict(num_q_heads=16, num_kv_heads=2, head_dim=128)
A100 = lc.get_gpu("A100")
MD = lc.MODEL_DEFAULTS


def lecture_formula(gpu, batch, seqlen, method, splits):
    """The base model's formula of lecture §6.3 written out on its own (no labcore.waves), same operation order:
    t = ceil(CTAs / SMs) x max(FLOPs / (F_SM eta), bytes / min(cap, B / active SMs)) + kernels x launch."""
    batch, seqlen, splits = (np.asarray(x, dtype=np.int64) for x in (batch, seqlen, splits))
    d, db, hq, hkv = 128, 2, 16, 2
    if method == "fa2":
        rows_real, rows_pad, ctas, keys, n_k = 1, MD["fa2_block_m"], batch * hq, seqlen, 1
    else:
        rows_real, rows_pad = hq // hkv, MD["fd_block_m"]
        ctas, keys = batch * hkv * splits, -(-seqlen // splits)
        n_k = np.where(splits > 1, 2, 1)
    flops = 4.0 * rows_pad * keys * d
    bytes_ = 2.0 * keys * d * db + rows_real * d * db
    waves = -(-ctas // gpu.num_sms)
    b_sm = np.minimum(MD["per_sm_bandwidth_cap"], gpu.hbm_bandwidth / np.minimum(ctas, gpu.num_sms))
    t_cta = np.maximum(flops / (gpu.tensor_flops_per_sm * MD["efficiency"]), bytes_ / b_sm)
    return waves * t_cta + n_k * MD["kernel_overhead"]


def test_full_is_the_default_and_the_lecture_formula_bit_for_bit():
    assert MD["last_wave"] == "full" and lc.LAST_WAVE_RULES == ("full", "shared")
    b = np.array([1, 3, 7, 64, 100, 256])[:, None, None]
    n = np.array([1, 300, 2048, 65536, 131072])[None, :, None]
    s = np.array([1, 2, 7, 32, 64])[None, None, :]
    n_s = np.maximum(n, s)  # every split needs a key
    for method in ("fa2", "flash_decoding"):
        kw = dict(batch=b, seqlen=n_s, method=method, **CODELLAMA)
        if method == "flash_decoding":
            kw["num_splits"] = s
        got = lc.decode_time_grid("A100", **kw)["total"]
        explicit = lc.decode_time_grid("A100", last_wave="full", **kw)["total"]
        want = np.broadcast_to(lecture_formula(A100, b, n_s, method, s), got.shape)
        assert np.array_equal(got, want) and np.array_equal(explicit, got)


def test_full_keeps_the_lecture_figures():
    kw = dict(method="flash_decoding", **CODELLAMA)
    e = lc.decode_attention_time("A100", batch=64, seqlen=2048, num_splits=1, **kw)
    assert (e.num_ctas, e.waves, round(e.total * 1e6)) == (128, 2, 151)          # §6.4: a nearly empty 2nd wave
    assert e.last_wave == "full" and e.running_last == 20 and e.cta_time_last == e.cta_time
    e64 = lc.decode_attention_time("A100", batch=1, seqlen=65536, method="fa2", **CODELLAMA)
    assert round(e64.total * 1e3, 2) == 2.13                                       # §6.3: FA2 at batch 1, 64K
    c = lc.compare_flash_decoding_a100()
    assert c["last_wave"] == "full" and np.all(np.abs(c["err_model_fa2"]) <= 0.12)


def test_shared_rule_on_the_nearly_empty_second_wave():
    kw = dict(batch=64, seqlen=2048, num_splits=1, method="flash_decoding", **CODELLAMA)
    full = lc.decode_attention_time("A100", **kw)
    sh = lc.decode_attention_time("A100", last_wave="shared", **kw)
    assert sh.last_wave == "shared" and sh.running_last == 128 - 108 == 20
    # a full wave is unchanged; the 20 CTAs of the last wave share 1555 GB/s (capped at 80 GB/s each)
    assert sh.cta_time == full.cta_time and sh.bandwidth_per_sm == full.bandwidth_per_sm
    share = min(80e9, A100.hbm_bandwidth / 20)
    assert sh.cta_time_last == pytest.approx(max(sh.compute_time, sh.bytes_per_cta / share), rel=1e-12)
    assert sh.total == pytest.approx(full.cta_time + sh.cta_time_last + 5e-6, rel=1e-12)
    assert sh.cta_time_last < 0.5 * sh.cta_time  # the nearly empty second wave costs less than half the first


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 600), n=st.integers(1, 200_000), s=st.integers(1, 128),
       method=st.sampled_from(["fa2", "flash_decoding"]), variant=st.sampled_from(["base", "refined"]))
def test_shared_is_never_slower_and_equal_without_a_partial_wave(b, n, s, method, variant):
    kw = dict(batch=b, seqlen=max(n, s), method=method, variant=variant, **CODELLAMA)
    if method == "flash_decoding":
        kw["num_splits"] = s
    full = lc.decode_attention_time("A100", **kw)
    sh = lc.decode_attention_time("A100", last_wave="shared", **kw)
    assert (sh.num_ctas, sh.waves) == (full.num_ctas, full.waves)
    assert sh.total <= full.total and sh.cta_time_last <= sh.cta_time
    if full.num_ctas <= 108 or full.num_ctas % 108 == 0:  # one wave, or only full waves: the rules agree
        assert sh.total == full.total


def test_best_split_under_each_rule_is_that_rules_argmin():
    kw = dict(batch=64, seqlen=2048, **CODELLAMA)
    for rule in ("full", "shared"):
        best = lc.best_num_splits("A100", last_wave=rule, **kw)
        t = [lc.decode_attention_time("A100", method="flash_decoding", num_splits=k, last_wave=rule, **kw).total
             for k in range(1, 17)]
        assert t[best - 1] == min(t)
    g = lc.decode_time_grid("A100", batch=np.array([1, 16, 64, 256]), seqlen=2048, method="flash_decoding",
                            **CODELLAMA)["total"]
    gs = lc.decode_time_grid("A100", batch=np.array([1, 16, 64, 256]), seqlen=2048, method="flash_decoding",
                             last_wave="shared", **CODELLAMA)["total"]
    assert np.all(gs <= g)  # each split count is no slower, so neither is the best one


def test_error_per_point_under_each_rule():
    m = lc.load_flash_decoding_a100()
    one_wave = m["batch"] * 16 <= 108  # FlashAttention-2: one CTA per (sequence, query head)
    c = {r: lc.compare_flash_decoding_a100(last_wave=r) for r in ("full", "shared")}
    for r, cr in c.items():
        assert cr["last_wave"] == r
        for tag, meas in (("fa2", "fa2"), ("fd", "flash_decoding")):
            for v in ("model", "refined"):
                np.testing.assert_array_equal(cr[f"err_{v}_{tag}"], cr[f"{v}_{tag}"] / m[meas] - 1)
    f, s = c["full"], c["shared"]
    for k in ("model_fa2", "refined_fa2", "model_fd", "refined_fd"):
        assert np.all(s[k] <= f[k])
    # FlashAttention-2: the rules agree exactly on the one-wave rows, differ on every row with a partial wave
    assert one_wave.sum() == 4
    np.testing.assert_array_equal(s["model_fa2"][one_wave], f["model_fa2"][one_wave])
    assert np.all(s["model_fa2"][~one_wave] < f["model_fa2"][~one_wave])
    # the lecture's ±12% holds under both rules; the shared rule lowers the mean |error| of FA2 ...
    assert np.abs(s["err_model_fa2"]).max() <= 0.12
    assert np.abs(s["err_model_fa2"]).mean() < np.abs(f["err_model_fa2"]).mean()
    assert np.abs(s["err_refined_fa2"]).max() < np.abs(f["err_refined_fa2"]).max()
    # ... and makes flash-decoding, already optimistic, more optimistic (the split search uses the cheap tail)
    assert np.all(s["err_model_fd"] < 0)
    assert np.abs(s["err_model_fd"]).mean() > np.abs(f["err_model_fd"]).mean()


@pytest.mark.parametrize("call", [
    lambda: lc.decode_attention_time("A100", batch=1, seqlen=8, method="fa2", last_wave="half", **CODELLAMA),
    lambda: lc.decode_time_grid("A100", batch=1, seqlen=8, method="fa2", last_wave=None, **CODELLAMA),
    lambda: lc.compare_flash_decoding_a100(last_wave="empty"),
])
def test_unknown_last_wave_rule_is_refused(call):
    with pytest.raises((ValueError, TypeError), match="last_wave"):
        call()


def test_last_wave_table_lists_both_rules_errors():
    from flashbook.figures.decode import last_wave_table

    by = {r: lc.compare_flash_decoding_a100(last_wave=r) for r in lc.LAST_WAVE_RULES}
    t = last_wave_table(by)
    assert t.headers == ("batch", "seqlen", "FA2 (full)", "FA2 (shared)", "FD (full)", "FD (shared)")
    assert len(t.rows) == 10 + 2 and t.rows[-2][0] == "mean |error|" and t.rows[-1][0] == "max |error|"
    assert t.rows[0][2] == f"{by['full']['err_model_fa2'][0]:+.1%}"
    assert t.rows[-1][3] == f"{np.abs(by['shared']['err_model_fa2']).max():.1%}"
    refined = last_wave_table(by, variant="refined")
    assert refined.rows[-1][4] == f"{np.abs(by['full']['err_refined_fd']).max():.1%}"
    with pytest.raises(ValueError, match="variant"):
        last_wave_table(by, variant="fitted")
    with pytest.raises(ValueError, match="empty"):
        last_wave_table({})
    # four rules: one table per kernel, each six columns wide (the text column holds it)
    four = {f"{r}, {k}": by[r] for r in lc.LAST_WAVE_RULES for k in ("a", "b")}
    fa2, fd = last_wave_table(four)
    assert fa2.headers == ("batch", "seqlen", "FA2 (full, a)", "FA2 (full, b)", "FA2 (shared, a)", "FA2 (shared, b)")
    assert fd.headers[2:] == ("FD (full, a)", "FD (full, b)", "FD (shared, a)", "FD (shared, b)")
    assert fd.rows[0][2] == f"{by['full']['err_model_fd'][0]:+.1%}" and "Flash-decoding" in fd.caption
