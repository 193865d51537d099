"""labcore.mla: absorbed MLA decode equals the naive per-head form; intensity and the roofline crossing."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from labcore.mla import MLA_DIMS, gqa_decode_intensity, mla_compute_bound_threshold, mla_decode_absorbed, \
    mla_decode_naive, mla_decode_roofline, mla_intensity


def _inputs(h=3, s_q=2, n=7, d_c=16, d_rope=4, d_nope=8, d_v=6, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((h, s_q, d_nope)), rng.standard_normal((h, s_q, d_rope)),
            rng.standard_normal((n, d_c)), rng.standard_normal((n, d_rope)),
            rng.standard_normal((h, d_c, d_nope)) / 4, rng.standard_normal((h, d_c, d_v)) / 4)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [dict(), dict(h=1, s_q=1, n=1), dict(h=4, s_q=5, n=5), dict(h=2, s_q=3, n=40)])
def test_absorbed_equals_naive(causal, shape):
    args = _inputs(**shape)
    O_a, lse_a = mla_decode_absorbed(*args, causal=causal)
    O_n, lse_n = mla_decode_naive(*args, causal=causal)
    np.testing.assert_allclose(O_a, O_n, atol=1e-12, rtol=0)
    np.testing.assert_allclose(lse_a, lse_n, atol=1e-12, rtol=0)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 12), st.integers(0, 10_000), st.booleans())
def test_absorbed_equals_naive_random(h, s_q, n, seed, causal):
    args = _inputs(h=h, s_q=s_q, n=n, seed=seed)
    np.testing.assert_allclose(mla_decode_absorbed(*args, causal=causal)[0], mla_decode_naive(*args, causal=causal)[0],
                               atol=1e-12, rtol=0)


def test_scale_is_the_models_not_576():
    args = _inputs()
    O_default = mla_decode_absorbed(*args)[0]
    np.testing.assert_allclose(O_default, mla_decode_absorbed(*args, scale=1 / np.sqrt(8 + 4))[0], atol=0)
    assert not np.allclose(O_default, mla_decode_absorbed(*args, scale=1 / np.sqrt(16 + 4))[0])


def test_intensity_and_threshold():
    assert MLA_DIMS["d_c"] + MLA_DIMS["d_rope"] == 576
    assert mla_intensity(128) == pytest.approx(128 * 2 * 1088 / 1152)
    assert mla_intensity(1) == pytest.approx(1.889, abs=1e-3)
    assert gqa_decode_intensity(8) == 8.0
    t = mla_compute_bound_threshold()
    assert t["ridge"] == pytest.approx(865 / 3.35)
    assert t["approx"] == pytest.approx(129.1, abs=0.05) and t["exact"] == pytest.approx(136.7, abs=0.05)
    assert t["stated"] == 128
    r = mla_decode_roofline(np.array([64, 128, 256]), seqlen=4096)
    assert r["bound_compute"].tolist() == [False, False, True]
    assert r["time"][0] == r["memory_time"][0] == pytest.approx(4096 * 1152 / 3.35e12)


def test_errors():
    q_nope, q_rope, c_kv, k_rope, W_UK, W_UV = _inputs()
    with pytest.raises(ValueError, match="MLA inputs"):
        mla_decode_absorbed(q_nope, q_rope, c_kv, k_rope[:3], W_UK, W_UV)
    with pytest.raises(ValueError, match="NaN"):
        mla_decode_naive(q_nope, q_rope, c_kv * np.nan, k_rope, W_UK, W_UV)
    with pytest.raises(ValueError, match=">= 1"):
        mla_intensity(0)
