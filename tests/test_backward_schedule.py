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
    # the adds' read-modify-write happens in L2: the SMs send 4 bytes per add, HBM sees the buffer zeroed and read once
    assert c["l2_payload_bytes"] == 4 * c["atomic_adds"] and c["buffer_bytes"] == 4 * 64 * 8
    assert c["hbm_bytes"] == c["total_bytes"] == 4 * 64 * 8 + 6 * 64 * 8
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


def test_deterministic_designs_by_hand():
    """Four causal key blocks of 1 to 4 tiles on four slots, a tile 1 and an add 0.5: atomic 6. The adds in increasing
    key block serialise the chain (7.5); FA3's diagonal-first adds with its shortest-first launch never stall (6), as
    DASH's descending rows do. Without a mask: the chain in key-block order skews by one add per CTA (7.5 against 6);
    DASH's shifted start meets no one (6)."""
    from labcore.backward_schedule import deterministic_backward_time as dbt
    kw = dict(block_q=1, block_kv=1, tile_time=1.0, add_time=0.5, slots=4)
    causal = {d: dbt(4, causal=True, design=d, **kw) for d in ("semaphore_ascending", "fa3", "dash_descending")}
    assert {d: r["deterministic"].makespan for d, r in causal.items()} == {
        "semaphore_ascending": 7.5, "fa3": 6.0, "dash_descending": 6.0}
    assert all(r["atomic"].makespan == 6.0 for r in causal.values())
    assert causal["fa3"]["deterministic"].start.tolist() == [0.0] * 4
    full = {d: dbt(4, design=d, **kw) for d in ("semaphore_ascending", "fa3", "dash_shift")}
    assert [full[d]["deterministic"].makespan for d in full] == [7.5, 7.5, 6.0]
    assert full["fa3"]["fraction"] == 0.8 == dq_serialisation_time(4, **kw)["fraction"]
    with pytest.raises(ValueError, match="without a mask"):
        dbt(4, causal=True, design="dash_shift", **kw)


def test_fa2_split_buffers_by_hand():
    """Four key blocks, two slots: two CTAs per head (ceil(2 / 1)), blocks {0, 2} and {1, 3}, 12 each, the same
    makespan as four CTAs of 6; the convert kernel reads one extra buffer and the zeroing writes one: 2 x buffer."""
    from labcore.backward_schedule import deterministic_backward_time as dbt, fa2_deterministic_splits
    r = dbt(4, block_q=1, block_kv=1, tile_time=1.0, add_time=0.5, slots=2, design="fa2_split_buffers",
            buffer_time=0.25)
    assert r["splits"] == 2 == fa2_deterministic_splits(2, 1) and r["deterministic"].costs.tolist() == [12.0, 12.0]
    assert r["atomic"].makespan == 12.0 and r["extra"] == 0.5 and r["fraction"] == pytest.approx(12 / 12.5)
    # FA2's grid: ceil(SMs / (b h)) CTAs per head, a little over one wave (16 heads on 132 SMs: 9 each, 144 CTAs)
    assert fa2_deterministic_splits(132, 16) == 9


def test_an_order_that_cannot_progress_is_refused():
    """Diagonal-first adds with the longest CTA launched first on one slot: CTA 0 waits for CTA 1 forever."""
    from labcore.backward_schedule import _chain, _dispatch
    kinds = np.tril(np.ones((3, 3), np.int8))
    with pytest.raises(ValueError, match="deadlocks"):
        _chain(kinds, 1.0, 0.5, 1, 1, rows="ascending", adds="descending", order=_dispatch("launch", 3, 1, 1))
    ok = _chain(kinds, 1.0, 0.5, 1, 1, rows="ascending", adds="descending", order=_dispatch("sections_spt", 3, 1, 1))
    assert ok["deterministic"].makespan == ok["atomic"].makespan == 9.0


def test_designs_on_the_benchmark_shapes():
    """FA2's benchmark shapes (16k tokens, 16 heads of d = 128) on an H100, an add a quarter of a tile: FA3's causal
    order keeps more than the old ascending chain, DASH's descending rows more still; FA2's buffers lose most where
    few heads leave a grid of a little over one wave."""
    from labcore.backward_schedule import deterministic_backward_time as dbt
    kw = dict(block_q=128, block_kv=128, tile_time=1.0, add_time=0.25, slots=132, causal=True)
    for n, bh in ((2048, 128), (16384, 16)):
        f = {d: dbt(n, heads=bh, design=d, **kw)["fraction"] for d in ("semaphore_ascending", "fa3", "dash_descending")}
        assert f["semaphore_ascending"] < 0.85 < f["fa3"] < f["dash_descending"] <= 1.0
    assert dbt(16384, heads=16, design="fa2_split_buffers", **kw)["fraction"] < 0.6


def test_shift_needs_a_heads_ctas_resident():
    from labcore.backward_schedule import deterministic_backward_time as dbt
    with pytest.raises(ValueError, match="resident"):
        dbt(8, block_q=1, block_kv=1, tile_time=1.0, add_time=0.5, slots=4, design="dash_shift")
