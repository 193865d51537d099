"""One implementation of the safe log-sum-exp, the online update and the lse merge (labcore.softmax), and one
overflow policy (labcore.softmax.scaled_scores): every algorithm agrees with them and fails the same way."""
import numpy as np
import pytest

import labcore as lc
from labcore import attention, decode, flash, softmax
from labcore.checks import causal_mask
from labcore.softmax import merge_states, normalise, online_update, safe_lse, scaled_scores


def _one(Q, K, V, *, causal=False):
    """Attention through the one implementation, in a single tile: scores, one online update, normalise, lse."""
    S = scaled_scores(Q, K, 1 / np.sqrt(Q.shape[1]))
    if causal:
        S = np.where(causal_mask(Q.shape[0], K.shape[0]), S, -np.inf)
    m, l, acc = online_update(np.full(Q.shape[0], -np.inf), np.zeros(Q.shape[0]), np.zeros((Q.shape[0], V.shape[1])),
                              S, V)
    return normalise(acc, l), safe_lse(m, l)


def test_callers_import_the_one_implementation():
    assert attention.row_softmax is softmax.row_softmax and attention.scaled_scores is softmax.scaled_scores
    assert flash.online_update is softmax.online_update and flash.safe_lse is softmax.safe_lse
    assert flash.normalise is softmax.normalise and flash.scaled_scores is softmax.scaled_scores
    assert decode.merge_states is softmax.merge_states and decode.row_softmax is softmax.row_softmax


@pytest.mark.parametrize("n_q, n_k", [(6, 3), (40, 40), (1, 50), (17, 5)])
@pytest.mark.parametrize("causal", [False, True])
def test_every_caller_agrees_with_the_one_implementation(qkv, n_q, n_k, causal):
    """Random data; with causal and N_q > N_k the first rows are fully masked (O = 0, lse = -inf)."""
    Q, K, V = qkv(n_q, n_k, 8, d_v=5, seed=n_q + n_k)
    O1, lse1 = _one(Q, K, V, causal=causal)
    masked = ~np.isfinite(lse1)
    assert masked.sum() == (max(n_q - n_k, 0) if causal else 0)
    assert np.all(O1[masked] == 0) and not np.any(np.isnan(O1))
    outs = {"reference": lc.reference_attention(Q, K, V, causal=causal),
            "standard": (lc.standard_attention(Q, K, V, causal=causal), lse1)}
    for order in lc.checks.LOOP_ORDERS:
        for bq, bk in ((4, 3), (64, 64), (1, 7)):
            outs[f"{order} {bq}x{bk}"] = lc.flash_attention_forward(Q, K, V, block_q=bq, block_kv=bk, loop_order=order,
                                                                    causal=causal)
    for name, (O, lse) in outs.items():
        assert np.array_equal(np.isfinite(lse), ~masked), name
        np.testing.assert_allclose(O, O1, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(lse[~masked], lse1[~masked], atol=1e-13, err_msg=name)
    if not causal:   # split-KV (more splits than keys: empty splits) and the one-row algorithms
        for num_splits in (1, 3, n_k + 4):
            o, lse = lc.split_kv_attention(Q, K, V, num_splits=num_splits)
            np.testing.assert_allclose(o, O1, atol=1e-14)
            np.testing.assert_allclose(lse, lse1, atol=1e-13)
        for algo in (lc.row_attention_three_pass, lc.row_attention_two_pass, lc.row_attention_one_pass):
            r = algo(Q[0], K, V) if algo is lc.row_attention_three_pass else algo(Q[0], K, V, block=3)
            np.testing.assert_allclose(r.o, O1[0], atol=1e-14)
            assert abs(r.lse - lse1[0]) < 1e-13


def test_merges_are_the_one_merge(qkv):
    """merge_state, combine_splits and merge_segments all equal merge_states, empty parts included."""
    Q, K, V = qkv(3, 20, 4, seed=7)
    o, lse, (o_parts, lse_parts) = lc.split_kv_attention(Q, K, V, split_sizes=[0, 7, 0, 13, 0], return_partials=True)
    assert np.sum(np.isneginf(lse_parts)) == 9
    o1, lse1 = merge_states(o_parts, lse_parts)
    o2, lse2 = lc.combine_splits(o_parts, lse_parts)
    assert np.array_equal(o1, o2) and np.array_equal(lse1, lse2) and np.array_equal(o, o1)
    folded = (np.zeros_like(o_parts[0]), np.full(3, -np.inf))
    for p in zip(o_parts, lse_parts):
        folded = lc.merge_state(*folded, *p)
    np.testing.assert_allclose(folded[0], o1, atol=1e-15)
    np.testing.assert_allclose(folded[1], lse1, atol=1e-14)
    # every part empty: the identity (0, -inf), never NaN
    o_e, lse_e = merge_states(np.zeros((4, 2, 3)), np.full((4, 2), -np.inf))
    assert np.all(o_e == 0) and np.all(np.isneginf(lse_e))


def test_safe_lse_and_normalise_of_empty_rows():
    assert np.isneginf(safe_lse(-np.inf, 0.0)) and safe_lse(2.0, 1.0) == 2.0
    assert np.array_equal(normalise(np.ones((2, 3)), np.array([0.0, 2.0])), [[0, 0, 0], [0.5, 0.5, 0.5]])
    P, lse = lc.row_softmax(np.full((2, 3), -np.inf))            # every score -inf: zeros, -inf, no NaN
    assert np.all(P == 0) and np.all(np.isneginf(lse))
    st = lc.OnlineSoftmax(2).update(np.full(3, -np.inf), np.ones((3, 2)))
    o, lse = st.result()
    assert np.all(o == 0) and lse == -np.inf and st.trace[0]["alpha"] == 1.0


# ---------------------------------------------------------------- one overflow policy for every softmax
def _entry_points():
    def fwd(order):
        return lambda Q, K, V: lc.flash_attention_forward(Q, K, V, block_q=1, block_kv=1, loop_order=order)
    return {
        "reference_attention": lambda Q, K, V: lc.reference_attention(Q, K, V),
        "standard_attention": lambda Q, K, V: lc.standard_attention(Q, K, V),
        "masked_scores": lambda Q, K, V: lc.masked_scores(Q, K),
        "flash forward fa1": fwd("fa1"),
        "flash forward fa2": fwd("fa2"),
        "flash backward": lambda Q, K, V: lc.flash_attention_backward(Q, K, V, V[:1] * 0, V[:1], np.zeros(1),
                                                                     block_q=1, block_kv=1),
        "standard backward": lambda Q, K, V: lc.standard_attention_backward(Q, K, V, V[:1]),
        "row_attention_three_pass": lambda Q, K, V: lc.row_attention_three_pass(Q[0], K, V),
        "row_attention_two_pass": lambda Q, K, V: lc.row_attention_two_pass(Q[0], K, V),
        "row_attention_one_pass": lambda Q, K, V: lc.row_attention_one_pass(Q[0], K, V),
        "online_softmax_trace": lambda Q, K, V: lc.online_softmax_trace(Q[0], K, V),
        "split_kv_attention": lambda Q, K, V: lc.split_kv_attention(Q[0], K, V, num_splits=2),
        "gqa_decode_attention": lambda Q, K, V: lc.gqa_decode_attention(Q, K[None], V[None]),
    }


@pytest.mark.parametrize("entry", sorted(_entry_points()))
@pytest.mark.parametrize("Q, K", [([[1e155]], [[1e155]]),              # q.k = 1e310: +inf
                                  ([[1e155]], [[-1e155]]),             # q.k = -1e310: every score -inf
                                  ([[1e155, 1e155]], [[1e155, -1e155]])],  # inf - inf: NaN
                         ids=["overflow", "underflow-to-minus-inf", "inf-minus-inf"])
def test_every_entry_point_refuses_overflowing_scores_the_same_way(entry, Q, K):
    Q, K = np.array(Q), np.array(K)
    V = np.ones((1, 1))
    with np.errstate(all="raise"):       # and no numpy warning on the way
        with pytest.raises(ValueError, match=r"scores overflow float64: \|q\.k\| \* scale is not finite for query row 0 "
                                             r"and key 0 \(max \|q\| = 1e\+155"):
            _entry_points()[entry](Q, K, V)


def test_large_finite_scores_still_work():
    O, lse = lc.reference_attention([[1e154]], [[1e154]], [[2.0]], scale=1.0)   # score 1e308: finite
    assert O[0, 0] == 2.0 and lse[0] == 1e308
    O2, lse2 = lc.flash_attention_forward([[1e154]], [[1e154]], [[2.0]], block_q=1, block_kv=1, scale=1.0)
    assert O2[0, 0] == 2.0 and lse2[0] == 1e308
