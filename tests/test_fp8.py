"""labcore.fp8: FlashAttention-3's FP8 error experiment (paper Section 4.3, Table 3) emulated with numpy."""
from __future__ import annotations

import numpy as np
import pytest

import labcore
from labcore import fp8

ORDER = ("fp16", "fp8_block_incoherent", "fp8_per_tensor")


def test_ordering_at_the_default_setting():
    """FP16 < FP8 with both tricks < FP8 baseline in error, as in the paper; every FP8 variant > FP16."""
    r = fp8.fp8_attention_errors()
    e = r["rmse"]
    assert e["fp16"] < e["fp8_block_incoherent"] < e["fp8_per_tensor"]
    assert e["fp16"] < e["fp16_standard"]                         # FP32 softmax beats FP16 intermediates
    assert max(e["fp16"], e["fp16_standard"]) * 10 < min(v for k, v in e.items() if k.startswith("fp8"))
    assert r["ratio"] == pytest.approx(e["fp8_per_tensor"] / e["fp8_block_incoherent"]) and r["ratio"] > 1.2
    assert [row[0] for row in r["rows"]] == list(fp8.VARIANTS)
    assert all(row[2] == e[row[0]] and row[3] == fp8.FA3_TABLE3[row[0]]["rmse"] for row in r["rows"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ordering_over_seeds(seed):
    e = fp8.fp8_attention_errors(seed=seed, variants=ORDER)["rmse"]
    assert e["fp16"] < e["fp8_block_incoherent"] < e["fp8_per_tensor"]


def test_outliers_are_what_incoherent_processing_fixes():
    """Without outliers the rotation buys nothing; with many it buys more (the paper's motivation)."""
    none = fp8.fp8_attention_errors(outlier_fraction=0.0, variants=ORDER[1:])
    many = fp8.fp8_attention_errors(outlier_fraction=0.01, variants=ORDER[1:])
    assert none["ratio"] < 1.1 and many["ratio"] > 2 * none["ratio"]


def test_paper_table_is_the_papers():
    t = {k: v["rmse"] for k, v in fp8.FA3_TABLE3.items()}
    assert t == {"fp16_standard": 3.2e-4, "fp16": 1.9e-4, "fp8_per_tensor": 2.4e-2, "fp8_block": 2.4e-2,
                 "fp8_incoherent": 9.3e-3, "fp8_block_incoherent": 9.1e-3}
    r = fp8.fp8_attention_errors(N=64, d=16, variants=("fp16",))
    assert round(r["paper_ratio"], 1) == 2.6 and r["ratio"] is None
    assert set(fp8.FA3_TABLE3) == set(fp8.VARIANTS)


def test_inputs_follow_the_papers_distribution():
    Q, K, V = fp8.fa3_inputs(512, 128, seed=3)
    assert Q.shape == K.shape == V.shape == (512, 128)
    X = np.concatenate([Q.ravel(), K.ravel(), V.ravel()])
    # variance 1 + 100 * 0.001 = 1.1; outliers (|x| > 6) are rare but present
    assert X.var() == pytest.approx(1.1, rel=0.1)
    assert 0 < np.mean(np.abs(X) > 6) < 0.002
    Q0, _, _ = fp8.fa3_inputs(512, 128, outlier_fraction=0.0, seed=3)
    assert np.abs(Q0).max() < 6
    with pytest.raises(ValueError):
        fp8.fa3_inputs(8, 8, outlier_fraction=1.5)
    with pytest.raises(ValueError):
        fp8.fa3_inputs(0, 8)


def test_random_hadamard_is_orthogonal_and_spreads_outliers():
    M = fp8.random_hadamard(128, seed=5)
    assert np.allclose(M @ M.T, np.eye(128), atol=1e-12)
    e = np.zeros(128)
    e[7] = 40.0
    assert np.allclose(np.abs(e @ M), 40 / np.sqrt(128))           # one spike -> d equal entries
    Q, K, V = fp8.fa3_inputs(64, 128, seed=1)
    O, lse = labcore.reference_attention(Q, K, V)
    O_rot, lse_rot = labcore.reference_attention(Q @ M, K @ M, V)  # Q K^T is unchanged
    assert np.allclose(O, O_rot, atol=1e-12) and np.allclose(lse, lse_rot, atol=1e-12)
    assert not np.array_equal(M, fp8.random_hadamard(128, seed=6))
    with pytest.raises(ValueError, match="power of two"):
        fp8.random_hadamard(96)


def test_quantize_rows_uses_each_blocks_range():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 16))
    X[3, 2] = 80.0                                                  # an outlier in the first block only
    codes, scales = fp8.quantize_rows(X, block=32)
    assert codes.dtype == labcore.FORMATS["fp8_e4m3"].dtype and scales.shape == (4,)   # ragged last block
    row_scale = np.repeat(scales, 32)[:100]
    c = codes.astype(np.float64)
    for b in range(4):
        assert np.abs(c[32 * b:32 * (b + 1)]).max() == 448.0        # each block's amax maps to 448
    assert scales[0] == pytest.approx(80.0 / 448) and scales[1] < scales[0] / 10
    deq = c * row_scale[:, None]
    normal = np.abs(X) > 2.0 ** -6 * row_scale[:, None]              # in E4M3's normal range after scaling
    assert np.all(np.abs(deq - X)[normal] <= 2.0 ** -4 * np.abs(X)[normal] * (1 + 1e-12))
    _, one = fp8.quantize_rows(X)
    assert one.shape == (1,) and one[0] == pytest.approx(80.0 / 448)
    zero_codes, zero_scales = fp8.quantize_rows(np.zeros((4, 4)), block=2)
    assert np.all(zero_scales == 1.0) and np.all(zero_codes.astype(float) == 0)


def test_low_precision_attention_against_the_reference():
    Q, K, V = fp8.fa3_inputs(96, 64, outlier_fraction=0.0, seed=2)
    O, _ = labcore.reference_attention(Q, K, V)
    for variant, tol in (("fp16", 2e-3), ("fp16_standard", 2e-3), ("fp8_block_incoherent", 0.1)):
        got = fp8.low_precision_attention(Q, K, V, variant, block=32)
        assert got.shape == O.shape and 0 < np.abs(got - O).max() < tol
    with pytest.raises(ValueError, match="variant"):
        fp8.low_precision_attention(Q, K, V, "fp8")
    with pytest.raises(ValueError, match="hadamard"):
        fp8.low_precision_attention(Q, K, V, "fp8_incoherent", hadamard=np.eye(32))


def test_a_block_whose_scale_would_underflow_gets_scale_one_and_no_nan():
    """A reader's report: amax / 448 underflowed to 0 for [[5e-324, 0]] (codes [inf/448, NaN])."""
    from labcore.fp8 import quantize_rows

    codes, scales = quantize_rows([[5e-324, 0.0]])
    assert scales.tolist() == [1.0]
    recon = codes.astype(np.float64) * scales[0]
    assert np.isfinite(recon).all() and recon.tolist() == [[0.0, 0.0]]
    codes, scales = quantize_rows([[1e-310, 2e-310], [3.0, -1.0]], block=1)     # a subnormal block beside a normal one
    assert scales[0] == 1.0 and scales[1] == 3.0 / 448
    assert (scales >= np.finfo(np.float64).tiny).all()
    assert np.isfinite(codes.astype(np.float64)).all()
