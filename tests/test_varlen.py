"""labcore.varlen: packed forward against per-sequence reference attention; padding savings; CTAs and waves."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from labcore import Ledger, flash_attention_forward, reference_attention
from labcore.varlen import flash_attention_forward_varlen, varlen_grid, varlen_savings


def _packed(lq, lk, d=8, seed=0):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((sum(lq), d)), rng.standard_normal((sum(lk), d)),
               rng.standard_normal((sum(lk), d + 2)))
    return Q, K, V, np.concatenate([[0], np.cumsum(lq)]), np.concatenate([[0], np.cumsum(lk)])


def _check(lq, lk, causal, bq=16, bk=8):
    Q, K, V, cq, ck = _packed(lq, lk)
    O, lse = flash_attention_forward_varlen(Q, K, V, cq, ck, block_q=bq, block_kv=bk, causal=causal)
    for b in range(len(lq)):
        q, k = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
        if lq[b] == 0:
            continue
        if lk[b] == 0:
            assert np.all(O[q] == 0) and np.all(lse[q] == -np.inf)
            continue
        O_ref, lse_ref = reference_attention(Q[q], K[k], V[k], causal=causal)
        np.testing.assert_allclose(O[q], O_ref, atol=1e-12)
        np.testing.assert_array_equal(np.isinf(lse[q]), np.isinf(lse_ref))
        fin = np.isfinite(lse_ref)
        np.testing.assert_allclose(lse[q][fin], lse_ref[fin], atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_packed_equals_per_sequence(causal):
    _check([5, 0, 33, 1, 17], [5, 3, 33, 40, 0], causal)      # empty, N_q != N_k (bottom-right), no keys
    _check([20, 20], [7, 64], causal)                          # N_q > N_k: rows with no visible key


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), min_size=1, max_size=5), st.booleans())
def test_packed_random(lens, causal):
    _check([a for a, _ in lens], [b for _, b in lens], causal)


def test_ledger_is_the_sum_of_the_sequences():
    Q, K, V, cq, ck = _packed([16, 40], [16, 40])
    lg = Ledger()
    flash_attention_forward_varlen(Q, K, V, cq, ck, block_q=16, block_kv=16, causal=True, ledger=lg)
    parts = [Ledger(), Ledger()]
    for b, part in enumerate(parts):
        flash_attention_forward(Q[cq[b]:cq[b + 1]], K[ck[b]:ck[b + 1]], V[ck[b]:ck[b + 1]], block_q=16,
                                block_kv=16, causal=True, ledger=part)
    assert lg.by_tensor() == {t: {k: parts[0].by_tensor()[t][k] + parts[1].by_tensor()[t][k] for k in ("read", "write")}
                              for t in lg.by_tensor()}
    assert lg.by_tensor()["lse"]["write"] == 56


def test_savings_hand_worked():
    # two sequences of 128 and 384 keys, one 128 x 128 tile each unit: packed 1 + 9 tiles, padded 2 x 9 tiles
    s = varlen_savings([128, 384], d=64, block_q=128, block_kv=128)
    assert s["flops_packed"] == 10 * 4 * 128 * 128 * 64 and s["flops_padded"] == 18 * 4 * 128 * 128 * 64
    assert s["flops_saved"] == pytest.approx(8 / 18)
    c = varlen_savings([128, 384], d=64, causal=True)
    assert c["flops_packed"] == (1 + 6) * 4 * 128 * 128 * 64 and c["flops_padded"] == 2 * 6 * 4 * 128 * 128 * 64
    assert 0 < s["bytes_saved"] < 1
    with pytest.raises(ValueError, match="one entry per sequence"):
        varlen_savings([1, 2], [1], d=8)


def test_grid():
    g = varlen_grid([1000, 100, 30, 0], heads=16, block_q=128, num_sms=132)
    assert g["launched"] == 8 * 4 * 16 and g["working"] == (8 + 1 + 1) * 16
    assert g["waves_launched"] == 4 and g["waves_working"] == 2 and g["empty"] == 22 * 16


def test_errors():
    Q, K, V, cq, ck = _packed([4, 4], [4, 4])
    with pytest.raises(ValueError, match="start at 0"):
        flash_attention_forward_varlen(Q, K, V, cq + 1, ck, block_q=4, block_kv=4)
    with pytest.raises(ValueError, match="end at the packed length"):
        flash_attention_forward_varlen(Q, K, V, np.array([0, 4, 7]), ck, block_q=4, block_kv=4)
    with pytest.raises(ValueError, match="same batch"):
        flash_attention_forward_varlen(Q, K, V, np.array([0, 8]), ck, block_q=4, block_kv=4)
    with pytest.raises(TypeError, match="integers"):
        flash_attention_forward_varlen(Q, K, V, cq.astype(float), ck, block_q=4, block_kv=4)
