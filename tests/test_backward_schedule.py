"""labcore.backward_schedule: FA2's backward in kernel order, dQ by FP32 atomics, and the deterministic chain."""
import numpy as np
import pytest

from labcore import Ledger, flash_attention_backward, reference_attention, standard_attention_backward
from labcore.backward_schedule import count_distinct_dq, dq_atomic_counts, dq_serialisation_time, \
    dq_ulp_differences, flash_backward_kernel_order


def _inputs(qkv, n_q, n_k, d=8, causal=False, seed=0):
    Q, K, V = qkv(n_q, n_k, d, seed=seed)
    dO = np.random.default_rng(seed + 1).standard_normal((n_q, d))
    O, lse = reference_attention(Q, K, V, causal=causal)
    return Q, K, V, O, dO, lse


@pytest.mark.parametrize("n_q,n_k,bq,bk,causal", [(64, 64, 16, 16, False), (37, 37, 8, 16, True),
                                                  (20, 45, 16, 8, True), (45, 20, 8, 8, True), (1, 30, 16, 8, False)])
@pytest.mark.parametrize("mode", ["atomic", "deterministic"])
def test_gradients_match_the_backward(qkv, n_q, n_k, bq, bk, causal, mode):
    Q, K, V, O, dO, lse = _inputs(qkv, n_q, n_k, causal=causal)
    r = flash_backward_kernel_order(Q, K, V, O, dO, lse, block_q=bq, block_kv=bk, causal=causal, mode=mode, seed=3)
    dQ, dK, dV = standard_attention_backward(Q, K, V, dO, causal=causal)
    np.testing.assert_allclose(r.dK, dK, atol=1e-12)
    np.testing.assert_allclose(r.dV, dV, atol=1e-12)
    np.testing.assert_allclose(r.dQ, dQ, atol=1e-5 * np.abs(dQ).max())   # FP32 accumulation
    assert r.dq_accum.dtype == np.float32
    assert r.atomic_adds == dq_atomic_counts(n_q, 8, block_q=bq, block_kv=bk, causal=causal, N_k=n_k)["atomic_adds"]


def test_atomic_order_changes_bits_deterministic_does_not(qkv):
    Q, K, V, O, dO, lse = _inputs(qkv, 64, 64)
    kw = dict(block_q=16, block_kv=8)
    assert count_distinct_dq(Q, K, V, O, dO, lse, mode="atomic", trials=20, **kw) > 1
    assert count_distinct_dq(Q, K, V, O, dO, lse, mode="deterministic", trials=20, **kw) == 1
    a = flash_backward_kernel_order(Q, K, V, O, dO, lse, seed=0, **kw).dq_accum
    b = flash_backward_kernel_order(Q, K, V, O, dO, lse, seed=1, **kw).dq_accum
    ulp = dq_ulp_differences(a, b)
    assert ulp.max() >= 1 and (ulp == 0).any()            # some elements differ, some do not
    assert np.abs(a - b).max() <= 1e-6 * np.abs(a).max()   # by rounding only (large ulps where dQ ~ 0)


def test_counts_and_ledger(qkv):
    c = dq_atomic_counts(64, 8, block_q=16, block_kv=16)
    assert c["atomic_adds"] == 4 * 4 * 16 * 8 and c["rmw_bytes"] == 8 * c["atomic_adds"]
    assert c["total_bytes"] == c["rmw_bytes"] + 4 * 64 * 8 + 6 * 64 * 8
    assert dq_atomic_counts(64, 8, block_q=16, block_kv=16, causal=True)["atomic_adds"] == 10 * 16 * 8
    Q, K, V, O, dO, lse = _inputs(qkv, 64, 64)
    lg, ref = Ledger(), Ledger()
    flash_backward_kernel_order(Q, K, V, O, dO, lse, block_q=16, block_kv=16, ledger=lg)
    flash_attention_backward(Q, K, V, O, dO, lse, block_q=16, block_kv=16, ledger=ref)
    for t in ("Q", "K", "V", "dO", "lse", "D", "O", "dK", "dV"):
        assert lg.by_tensor()[t] == ref.by_tensor()[t], t
    assert lg.by_tensor()["dQaccum"]["write"] == 64 * 8 + c["atomic_adds"]


def test_serialisation_hand_worked():
    r = dq_serialisation_time(2, block_q=1, block_kv=1, tile_time=1.0, add_time=0.5, slots=2)
    assert r["atomic"].makespan == 3.0 and r["deterministic"].makespan == 3.5
    asc = dq_serialisation_time(4, block_q=1, block_kv=1, tile_time=1.0, add_time=0.5, slots=4, causal=True)
    assert asc["atomic"].makespan == 6.0 and asc["deterministic"].makespan == 7.5
    assert asc["slowdown"] == 1.25 and asc["fraction"] == 0.8
    desc = dq_serialisation_time(4, block_q=1, block_kv=1, tile_time=1.0, add_time=0.5, slots=4, causal=True,
                                 row_order="descending")
    assert desc["deterministic"].makespan == 6.0


def test_serialisation_with_fewer_slots_than_ctas_and_heads():
    r = dq_serialisation_time(512, block_q=128, block_kv=128, tile_time=1.0, add_time=0.1, heads=6, slots=8,
                              causal=True)
    assert r["deterministic"].makespan >= r["atomic"].makespan
    assert r["atomic"].costs.size == 6 * 4


def test_errors(qkv):
    Q, K, V, O, dO, lse = _inputs(qkv, 8, 8)
    with pytest.raises(ValueError, match="mode"):
        flash_backward_kernel_order(Q, K, V, O, dO, lse, block_q=4, block_kv=4, mode="fast")
    with pytest.raises(ValueError, match="O and dO"):
        flash_backward_kernel_order(Q, K, V, O[:4], dO, lse, block_q=4, block_kv=4)
    with pytest.raises(TypeError):
        dq_ulp_differences(np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="row_order"):
        dq_serialisation_time(4, block_q=1, block_kv=1, tile_time=1.0, add_time=0.0, slots=1, row_order="up")
    with pytest.raises(ValueError, match="tile_time"):
        dq_serialisation_time(4, block_q=1, block_kv=1, tile_time=0.0, add_time=0.0, slots=1)
