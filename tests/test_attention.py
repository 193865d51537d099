"""reference_attention and standard_attention: exactness, conventions, ledger, bad input."""
import numpy as np
import pytest

import labcore
from labcore.checks import causal_mask


def _naive(Q, K, V, causal=False, scale=None):
    """Independent loop-per-row implementation (no shared helpers) to check the oracle itself."""
    n_q, d = Q.shape
    n_k = K.shape[0]
    s = 1 / np.sqrt(d) if scale is None else scale
    O = np.zeros((n_q, V.shape[1]))
    lse = np.full(n_q, -np.inf)
    for i in range(n_q):
        keys = [j for j in range(n_k) if not causal or j <= i + n_k - n_q]
        if not keys:
            continue
        x = np.array([Q[i] @ K[j] * s for j in keys])
        w = np.exp(x - x.max())
        O[i] = (w / w.sum()) @ V[keys]
        lse[i] = x.max() + np.log(w.sum())
    return O, lse


@pytest.mark.parametrize("n_q,n_k,d,causal", [(7, 7, 4, False), (7, 7, 4, True), (3, 11, 5, True),
                                              (11, 3, 5, True), (1, 9, 8, True), (1, 1, 1, False), (5, 13, 3, False)])
def test_reference_matches_naive(qkv, n_q, n_k, d, causal):
    Q, K, V = qkv(n_q, n_k, d)
    O, lse = labcore.reference_attention(Q, K, V, causal=causal)
    O2, lse2 = _naive(Q, K, V, causal)
    assert np.max(np.abs(O - O2)) < 1e-12
    assert np.array_equal(np.isinf(lse), np.isinf(lse2))
    fin = np.isfinite(lse)
    assert np.max(np.abs(lse[fin] - lse2[fin]), initial=0) < 1e-12


def test_fully_masked_rows_are_zero_with_minus_inf_lse(qkv):
    Q, K, V = qkv(6, 3, 4)            # N_q > N_k, bottom-right causal: the first 3 rows see no key
    O, lse = labcore.reference_attention(Q, K, V, causal=True)
    assert not np.any(np.isnan(O)) and not np.any(np.isnan(lse))
    assert np.all(O[:3] == 0) and np.all(lse[:3] == -np.inf)
    assert np.all(np.isfinite(lse[3:]))


def test_bottom_right_alignment():
    m = causal_mask(2, 5)
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_default_scale_and_lse_is_natural_log(qkv):
    Q, K, V = qkv(4, 6, 16)
    O1, lse1 = labcore.reference_attention(Q, K, V)
    O2, lse2 = labcore.reference_attention(Q, K, V, scale=0.25)
    assert np.allclose(O1, O2) and np.allclose(lse1, lse2)
    S = Q @ K.T * 0.25
    assert np.allclose(lse1, np.log(np.exp(S).sum(axis=1)))


@pytest.mark.parametrize("causal", [False, True])
def test_standard_attention_and_ledger(qkv, causal):
    Q, K, V = qkv(37, 37, 8, seed=3)
    lg = labcore.Ledger()
    O = labcore.standard_attention(Q, K, V, causal=causal, ledger=lg)
    assert np.max(np.abs(O - labcore.reference_attention(Q, K, V, causal=causal)[0])) < 1e-12
    assert lg.total == labcore.standard_attention_io(37, 8) == 4 * 37 * 8 + 4 * 37 * 37
    t = lg.by_tensor()
    assert t["S"] == {"read": 37 * 37, "write": 37 * 37} and t["O"] == {"read": 0, "write": 37 * 8}
    assert lg.bytes() == 2 * lg.total and lg.bytes(4) == 4 * lg.total


def test_standard_io_lecture_number():
    # lecture §4.3 / exercise 2: N = 4096, d = 64 -> 68,157,440 elements, 136.3 MB in FP16
    assert labcore.standard_attention_io(4096, 64) == 68_157_440
    assert round(labcore.standard_attention_io(4096, 64) * 2 / 1e6, 1) == 136.3


def test_standard_io_rectangular(qkv):
    lg = labcore.Ledger()
    Q, K, V = qkv(5, 9, 3)
    labcore.standard_attention(Q, K, V, ledger=lg)
    assert lg.total == labcore.standard_attention_io(5, 3, N_k=9)


@pytest.mark.parametrize("args,exc,msg", [
    ((np.ones((4, 3)), np.ones((4, 5)), np.ones((4, 5))), ValueError, "head dimension"),
    ((np.ones((4, 3)), np.ones((4, 3)), np.ones((5, 3))), ValueError, "same number of rows"),
    ((np.ones(3), np.ones((4, 3)), np.ones((4, 3))), ValueError, "2-D"),
    ((np.ones((0, 3)), np.ones((4, 3)), np.ones((4, 3))), ValueError, "at least one row"),
    ((np.full((2, 3), np.nan), np.ones((4, 3)), np.ones((4, 3))), ValueError, "NaN"),
    (("abc", np.ones((4, 3)), np.ones((4, 3))), TypeError, "Q"),
    ((np.array([["a"]]), np.ones((4, 3)), np.ones((4, 3))), TypeError, "real numbers"),
])
def test_bad_input_names_the_argument(args, exc, msg):
    with pytest.raises(exc, match=msg):
        labcore.reference_attention(*args)


def test_bad_scale_and_sizes(qkv):
    Q, K, V = qkv(2, 2, 2)
    with pytest.raises(ValueError, match="scale"):
        labcore.reference_attention(Q, K, V, scale=-1.0)
    with pytest.raises(ValueError, match="N must be"):
        labcore.standard_attention_io(-4, 64)
    with pytest.raises(TypeError, match="d must be"):
        labcore.standard_attention_io(4, 6.5)


def test_flags_and_choices_are_typed():
    """A truthy string is not True (``causal="False"`` used to mean causal), an array is not a choice."""
    import labcore as lc

    Q = np.ones((4, 8))
    for call in (lambda: lc.reference_attention(Q, Q, Q, causal="False"),
                 lambda: lc.standard_attention(Q, Q, Q, causal=1),
                 lambda: lc.attention_flops(1024, 64, algorithm="flash", causal="False"),
                 lambda: lc.flash_forward_io(1024, 64, block_q=64, block_kv=64, causal=None)):
        with pytest.raises(TypeError, match="causal must be True or False"):
            call()
    assert lc.attention_flops(1024, 64, algorithm="flash", causal=np.bool_(False)) == \
        lc.attention_flops(1024, 64, algorithm="flash")
    with pytest.raises(TypeError, match="method must be one of"):
        lc.decode_attention_time("A100", batch=1, seqlen=64, num_q_heads=8, num_kv_heads=8, head_dim=64,
                                 method=np.array(["fa2"]))
    with pytest.raises(TypeError, match="loop_order"):
        lc.forward_nonmatmul_terms(1, 1, 1, 1, loop_order=np.array(["fa2"]))
