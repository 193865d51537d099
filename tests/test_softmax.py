"""Online softmax: the three one-row algorithms, the running state, merge_state properties."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import labcore


def test_three_algorithms_agree_lecture_setting(qkv):
    Q, K, V = qkv(1, 4096, 64)
    q = Q[0]
    o_ref, lse_ref = labcore.reference_attention(q[None], K, V)
    results = [labcore.row_attention_three_pass(q, K, V), labcore.row_attention_two_pass(q, K, V, block=256),
               labcore.row_attention_one_pass(q, K, V, block=256)]
    assert [r.passes for r in results] == [3, 2, 1]
    assert [r.scores_stored for r in results] == [4096, 0, 0]
    for r in results:
        assert np.max(np.abs(r.o - o_ref[0])) < 1e-15
        assert abs(r.lse - lse_ref[0]) < 1e-13


@pytest.mark.parametrize("block", [1, 7, 256, 5000])
def test_one_pass_any_block(qkv, block):
    Q, K, V = qkv(1, 1000, 8, seed=2)
    q = Q[0]
    r = labcore.row_attention_one_pass(q, K, V, block=block)
    assert np.max(np.abs(r.o - labcore.reference_attention(q[None], K, V)[0][0])) < 1e-14


def test_trace_alpha_and_l_behaviour():
    st_ = labcore.OnlineSoftmax(2)
    st_.update(np.array([1.0, 3.0]), np.eye(2))
    st_.update(np.array([2.0, 5.0]), np.eye(2))
    t = st_.trace
    # lecture exercise 1: l = e^-2 + 1 after block 0; alpha = e^(3-5); l = 1.2034 after block 1
    assert t[0]["m"] == 3 and abs(t[0]["l"] - (np.exp(-2) + 1)) < 1e-15
    assert abs(t[1]["alpha"] - np.exp(-2)) < 1e-15
    assert round(t[1]["l"], 4) == 1.2034
    assert abs(t[1]["l"] - np.exp([1 - 5, 3 - 5, 2 - 5, 0]).sum()) < 1e-15


def test_online_state_masked_blocks_are_identity():
    st_ = labcore.OnlineSoftmax(3)
    st_.update(np.array([-np.inf, -np.inf]), np.ones((2, 3)))
    o, lse = st_.result()
    assert np.all(o == 0) and lse == -np.inf
    st_.update(np.array([0.5]), np.array([[1.0, 2.0, 3.0]]))
    o, lse = st_.result()
    assert np.allclose(o, [1, 2, 3]) and abs(lse - 0.5) < 1e-15


def test_online_state_rejects_nan_and_shape():
    st_ = labcore.OnlineSoftmax(2)
    with pytest.raises(ValueError, match="NaN"):
        st_.update(np.array([np.nan]), np.ones((1, 2)))
    with pytest.raises(ValueError, match="values_block"):
        st_.update(np.array([1.0]), np.ones((2, 2)))
    with pytest.raises(ValueError, match="d_v"):
        labcore.OnlineSoftmax(0)


def test_segments_merge_in_any_order():
    rng = np.random.default_rng(1)
    x, V = rng.standard_normal(3000), rng.standard_normal((3000, 64))
    ref_o, ref_lse = labcore.partial_state(x, V)
    segs = labcore.random_segments(3000, 12, rng)
    assert len(segs) == 12 and segs[0][0] == 0 and segs[-1][1] == 3000
    for order in ("sequential", "tree", "random"):
        o, lse = labcore.merge_segments(x, V, segs, order=order, rng=rng)
        assert np.max(np.abs(o - ref_o)) < 1e-15
        assert abs(lse - ref_lse) / abs(ref_lse) < 1e-15
    with pytest.raises(ValueError, match="order"):
        labcore.merge_segments(x, V, segs, order="diagonal")
    with pytest.raises(ValueError, match="rng"):
        labcore.merge_segments(x, V, segs, order="random")
    with pytest.raises(ValueError, match="k \\(segments\\)"):
        labcore.random_segments(3, 5, rng)


_state = st.tuples(st.lists(st.floats(-5, 5), min_size=3, max_size=3), st.one_of(st.floats(-30, 30), st.just(-np.inf)))


def _s(t):
    o, lse = t
    return (np.zeros(3) if lse == -np.inf else np.array(o)), np.float64(lse)


@settings(max_examples=200, deadline=None)
@given(_state, _state)
def test_merge_commutative(a, b):
    o1, l1 = labcore.merge_state(*_s(a), *_s(b))
    o2, l2 = labcore.merge_state(*_s(b), *_s(a))
    assert np.allclose(o1, o2, rtol=1e-14, atol=1e-14) and (l1 == l2 or abs(l1 - l2) < 1e-14)


@settings(max_examples=200, deadline=None)
@given(_state, _state, _state)
def test_merge_associative(a, b, c):
    left = labcore.merge_state(*labcore.merge_state(*_s(a), *_s(b)), *_s(c))
    right = labcore.merge_state(*_s(a), *labcore.merge_state(*_s(b), *_s(c)))
    assert np.allclose(left[0], right[0], rtol=1e-12, atol=1e-12)
    assert (left[1] == right[1]) or abs(left[1] - right[1]) < 1e-12


@settings(max_examples=100, deadline=None)
@given(_state)
def test_merge_identity(a):
    o, lse = _s(a)
    o2, lse2 = labcore.merge_state(o, lse, np.zeros(3), -np.inf)
    assert np.array_equal(o2, o) and (lse2 == lse)
    assert not np.any(np.isnan(o2))


def test_merge_state_matches_concatenation():
    rng = np.random.default_rng(5)
    x, V = rng.standard_normal(50), rng.standard_normal((50, 4))
    a = labcore.partial_state(x[:20], V[:20])
    b = labcore.partial_state(x[20:], V[20:])
    o, lse = labcore.merge_state(*a, *b)
    ref = labcore.partial_state(x, V)
    assert np.allclose(o, ref[0], atol=1e-15) and abs(lse - ref[1]) < 1e-14
    # an empty split changes nothing
    e = labcore.partial_state(np.zeros(0), np.zeros((0, 4)))
    assert e[1] == -np.inf and np.all(e[0] == 0)


def test_merge_state_shape_errors():
    with pytest.raises(ValueError, match="matching shapes"):
        labcore.merge_state(np.zeros(3), 0.0, np.zeros(4), 0.0)
    with pytest.raises(ValueError, match="NaN"):
        labcore.merge_state(np.zeros(3), np.nan, np.zeros(3), 0.0)


def test_bad_states_and_segments_are_refused():
    with pytest.raises(ValueError, match="o_a must be finite"):
        labcore.merge_state(np.array([np.nan, 0.0]), 0.0, np.zeros(2), 0.0)
    x, V = np.arange(8.0), np.ones((8, 2))
    for segs in ([(0, 8), (0, 8)], [(0, 3)], [(5, 2)], [(0, 20)], []):
        with pytest.raises(ValueError, match="contiguous"):
            labcore.merge_segments(x, V, segs)
    for S in (np.array([[1.0, np.nan]]), np.array([[np.inf, 0.0]]), np.zeros((2, 0))):
        with pytest.raises(ValueError, match="S must"):
            labcore.row_softmax(S)
