"""The scheduling modules (``paged``, ``varlen``, ``mixed_batch``, ``backward_schedule``, ``causal_schedule``,
``scheduler``) refuse bad input where it enters, by the caller's argument name: a width of 0, a size whose product
would wrap or allocate too much, a time so large that a total would be inf, an lse of -inf where a row sees keys,
a ragged offset list, a ``run`` callable that returns no number. A few good inputs near those edges give their real
values.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import labcore
from labcore import backward_schedule as bs
from labcore import causal_schedule as cs
from labcore import mixed_batch as mb
from labcore import paged, varlen
from labcore import scheduler as sc
from labcore.hbm import Ledger

GPU = "H100-SXM"
_RNG = np.random.default_rng(0)
_Q4 = _RNG.standard_normal((4, 3))
_BIG = 1e308
# a mixed step small enough to run in milliseconds
_STEP = dict(chunk=256, context=512, decode_batch=4, decode_seqlen=1024, num_q_heads=8, num_kv_heads=2, head_dim=128)


def _bwd(n_q=4, n_k=4, *, lse=None, scale=1.0, causal=False, ledger=None):
    """flash_backward_kernel_order on random inputs (the forward's O and lse unless ``lse`` is given)."""
    rng = np.random.default_rng(1)
    Q, K, V = rng.standard_normal((n_q, 3)), rng.standard_normal((n_k, 3)), rng.standard_normal((n_k, 2))
    O, lse0 = labcore.flash_attention_forward(Q, K, V, block_q=2, block_kv=2, causal=causal)
    return bs.flash_backward_kernel_order(Q, K, V, O, scale * rng.standard_normal(O.shape),
                                          lse0 if lse is None else lse, block_q=2, block_kv=2, causal=causal,
                                          ledger=ledger)


def _two(n):
    return np.zeros((n, 1))


#: (id, call, exception, the argument its message must name)
BAD = [
    # paged
    ("paginate-width-0", lambda: paged.paginate([np.ones((1, 0))], [np.ones((1, 0))], page_size=4,
                                                spare_pages=10 ** 12), ValueError, "K_list"),
    ("paginate-v-width-0", lambda: paged.paginate([np.ones((1, 2))], [np.ones((1, 0))], page_size=4),
     ValueError, "V_list"),
    ("paginate-widths-differ", lambda: paged.paginate([np.ones((1, 2)), np.ones((1, 3))], [np.ones((1, 2))] * 2,
                                                      page_size=4), ValueError, "K_list"),
    ("paginate-rows-differ", lambda: paged.paginate([np.ones((2, 2))], [np.ones((1, 2))], page_size=4),
     ValueError, "V_list"),
    ("paginate-spare", lambda: paged.paginate([np.ones((1, 2))], [np.ones((1, 2))], page_size=4,
                                              spare_pages=10 ** 12), ValueError, "spare_pages"),
    ("paginate-spare-bool", lambda: paged.paginate([np.ones((1, 2))], [np.ones((1, 2))], page_size=4,
                                                   spare_pages=True), TypeError, "spare_pages"),
    ("paginate-table", lambda: paged.paginate([_two(10 ** 5)] + [_two(0)] * 2000, [_two(10 ** 5)] + [_two(0)] * 2000,
                                              page_size=1), ValueError, "K_list"),
    ("paginate-string", lambda: paged.paginate("KV", "KV", page_size=4), TypeError, "K_list"),
    ("gather-width-0", lambda: paged.gather_pages(np.ones((1, 4, 0)), np.array([0]), 2), ValueError, "cache"),
    ("gather-huge", lambda: paged.gather_pages(np.ones((1, 4096, 1)), np.zeros(40_000, int), 4096 * 40_000),
     ValueError, "length"),
    ("decode-d-0", lambda: paged.paged_decode_attention(np.ones((1, 1, 0)), np.ones((1, 4, 0)), np.ones((1, 4, 2)),
                                                        np.zeros((1, 1), int), np.array([2])), ValueError, "q"),
    ("decode-g-0", lambda: paged.paged_decode_attention(np.ones((1, 0, 2)), np.ones((1, 4, 2)), np.ones((1, 4, 2)),
                                                        np.zeros((1, 1), int), np.array([2])), ValueError, "q"),
    ("decode-dv-0", lambda: paged.paged_decode_attention(np.ones((1, 1, 2)), np.ones((1, 4, 2)), np.ones((1, 4, 0)),
                                                         np.zeros((1, 1), int), np.array([2])), ValueError, "v_cache"),
    ("decode-float-table", lambda: paged.paged_decode_attention(np.ones((1, 1, 2)), np.ones((1, 4, 2)),
                                                                np.ones((1, 4, 2)), np.zeros((1, 1)), np.array([2])),
     TypeError, "block_table"),
    ("decode-gathers-too-much", lambda: paged.paged_decode_attention(
        np.ones((1, 1, 1)), np.ones((1, 2 ** 20, 1)), np.ones((1, 2 ** 20, 1)), np.zeros((1, 200), int),
        np.array([2 ** 20 * 200])), ValueError, "lengths"),
    ("fa3-tile-head-dim", lambda: paged.fa3_forward_tile(512), ValueError, "head_dim"),
    ("fa3-tma-head-dim", lambda: paged.fa3_paged_kv_uses_tma(16, head_dim=10 ** 30), ValueError, "head_dim"),
    ("fa3-tma-page-str", lambda: paged.fa3_paged_kv_uses_tma("128"), TypeError, "page_size"),
    # varlen
    ("cu-ragged", lambda: varlen.check_cu_seqlens([0, [1, 2]], 2), TypeError, "cu_seqlens"),
    ("cu-none", lambda: varlen.check_cu_seqlens(None, 2), TypeError, "cu_seqlens"),
    ("cu-unsigned-decreasing", lambda: varlen.check_cu_seqlens(np.array([0, 5, 3, 5], np.uint64), 5), ValueError,
     "cu_seqlens"),
    ("cu-unsigned-past-total", lambda: varlen.check_cu_seqlens(np.array([0, 2 ** 63, 5], np.uint64), 5),
     ValueError, "cu_seqlens"),
    ("varlen-fwd-ragged", lambda: varlen.flash_attention_forward_varlen(_Q4, _Q4, _Q4, [0, [1, 2]], [0, 4],
                                                                        block_q=2, block_kv=2),
     TypeError, "cu_seqlens_q"),
    ("varlen-fwd-pairs", lambda: varlen.flash_attention_forward_varlen(_two(2000) + 1, _two(2000), _two(2000),
                                                                       [0, 2000], [0, 2000], block_q=1, block_kv=1),
     ValueError, "block_q"),
    ("savings-d-2^53", lambda: varlen.varlen_savings([100], d=2 ** 53), ValueError, "d"),
    ("savings-d-1e30", lambda: varlen.varlen_savings([100], d=10 ** 30), ValueError, "d"),
    ("savings-scores", lambda: varlen.varlen_savings([2 ** 30], [2 ** 30], d=128), ValueError, "seqlens_q"),
    ("savings-empty-batch", lambda: varlen.varlen_savings([0, 0], d=128), ValueError, "seqlens_q"),
    ("grid-ctas", lambda: varlen.varlen_grid([2 ** 40], heads=2 ** 53, num_sms=132), ValueError, "heads"),
    ("grid-sms", lambda: varlen.varlen_grid([10], heads=1, num_sms=2 ** 53), ValueError, "num_sms"),
    ("grid-heads-1e30", lambda: varlen.varlen_grid([10], heads=10 ** 30, num_sms=132), ValueError, "heads"),
    # mixed_batch
    ("chunk-head-dim", lambda: mb.chunk_prefill_time(GPU, chunk=128, context=0, heads=1, head_dim=2 ** 53),
     ValueError, "head_dim"),
    ("chunk-dtype-bytes", lambda: mb.chunk_prefill_time(GPU, chunk=128, context=0, heads=1, head_dim=128,
                                                        dtype_bytes=16), ValueError, "dtype_bytes"),
    ("demands-head-dim", lambda: mb.mixed_batch_demands(GPU, **{**_STEP, "head_dim": 2 ** 53}), ValueError,
     "head_dim"),
    ("demands-tile-rows", lambda: mb.mixed_batch_demands(GPU, **_STEP, decode_tile_rows=10 ** 9), ValueError,
     "decode_tile_rows"),
    ("demands-tile-rows-frac", lambda: mb.mixed_batch_demands(GPU, **_STEP, decode_tile_rows=2.5), TypeError,
     "decode_tile_rows"),
    ("fused-overflow", lambda: mb.fused_step_time(prefill_compute=_BIG, prefill_memory=0.0, decode_compute=_BIG,
                                                  decode_memory=0.0), ValueError, "decode_compute"),
    ("fused-overhead-overflow", lambda: mb.fused_step_time(prefill_compute=_BIG, prefill_memory=0.0,
                                                           decode_compute=0.0, decode_memory=1.0,
                                                           prefill_overhead=_BIG), ValueError, "prefill_overhead"),
    ("sweep-ctas", lambda: mb.mixed_batch_sweep(GPU, chunks=[2 ** 20] * 32, **{k: v for k, v in _STEP.items()
                                                                           if k != "chunk"}),
     ValueError, "chunks"),
    # backward_schedule
    ("ulp-empty", lambda: bs.dq_ulp_differences(np.ones(0, np.float32), np.ones(0, np.float32)), ValueError, "a"),
    ("ulp-0d", lambda: bs.dq_ulp_differences(np.float32([1.0]), np.float32(2.0)), ValueError, "b"),
    ("lse-minus-inf", lambda: _bwd(lse=np.full(4, -np.inf)), ValueError, "lse"),
    ("lse-minus-inf-causal-row-with-keys", lambda: _bwd(5, 3, causal=True, lse=np.array([-np.inf] * 3 + [0.0] * 2)),
     ValueError, "lse"),
    ("gradients-overflow", lambda: _bwd(scale=1e300), ValueError, "dO"),
    ("bwd-block-pairs", lambda: bs.flash_backward_kernel_order(_two(2000) + 1, _two(2000) + 1, _two(2000),
                                                               _two(2000), _two(2000), np.zeros(2000), block_q=1,
                                                               block_kv=1), ValueError, "block_q"),
    ("count-distinct-steps", lambda: bs.count_distinct_dq(_two(100) + 1, _two(100) + 1, _two(100), _two(100),
                                                          _two(100), np.zeros(100), block_q=2, block_kv=2,
                                                          trials=1024), ValueError, "trials"),
    ("atomic-counts-d", lambda: bs.dq_atomic_counts(64, 2 ** 53, block_q=16, block_kv=16), ValueError, "d"),
    ("atomic-counts-scores", lambda: bs.dq_atomic_counts(2 ** 40, 128, block_q=2 ** 20, block_kv=2 ** 20),
     ValueError, "N_k"),
    ("atomic-counts-huge-all", lambda: bs.dq_atomic_counts(2 ** 53, 8, block_q=2 ** 53, block_kv=1, N_k=2 ** 53),
     ValueError, "N"),
    ("serial-tile-time", lambda: bs.dq_serialisation_time(1024, block_q=128, block_kv=128, tile_time=_BIG,
                                                          add_time=0.0, slots=4), ValueError, "tile_time"),
    ("serial-add-time", lambda: bs.dq_serialisation_time(1024, block_q=128, block_kv=128, tile_time=1.0,
                                                         add_time=_BIG, slots=4), ValueError, "add_time"),
    ("det-tile-time", lambda: bs.deterministic_backward_time(1024, block_q=128, block_kv=128, tile_time=_BIG,
                                                             add_time=1.0, slots=4), ValueError, "tile_time"),
    ("det-buffer-time", lambda: bs.deterministic_backward_time(1024, block_q=128, block_kv=128, tile_time=1.0,
                                                               add_time=1.0, slots=4, design="fa2_split_buffers",
                                                               buffer_time=_BIG), ValueError, "buffer_time"),
    ("det-head-dim", lambda: bs.deterministic_backward_time(64, block_q=16, block_kv=16, tile_time=1.0, add_time=0.1,
                                                            slots=4, head_dim=2 ** 53), ValueError, "head_dim"),
    # causal_schedule
    ("cta-costs-tile-time", lambda: cs.causal_cta_costs(1024, batch=1, heads=1, tile_time=_BIG), ValueError,
     "tile_time"),
    ("balance-tile-time", lambda: cs.causal_load_balance(GPU, seqlen=1024, batch=1, heads=1, tile_time=_BIG),
     ValueError, "tile_time"),
    ("balance-overhead", lambda: cs.causal_load_balance(GPU, seqlen=1024, batch=1, heads=1, item_overhead=_BIG),
     ValueError, "item_overhead"),
    ("balance-orders-string", lambda: cs.causal_load_balance(GPU, seqlen=1024, batch=1, heads=1, orders="lpt"),
     TypeError, "orders"),
    ("l2-seqlen", lambda: cs.l2_section(2 ** 53, head_dim=128), ValueError, "seqlen_k"),
    ("l2-head-dim", lambda: cs.l2_section(4096, head_dim=10 ** 30), ValueError, "head_dim"),
    ("l2-head-dim-v", lambda: cs.l2_section(4096, head_dim=128, head_dim_v=2 ** 20), ValueError, "head_dim_v"),
    ("l2-element-size", lambda: cs.l2_section(4096, head_dim=128, element_size=16), ValueError, "element_size"),
    ("l2-pack-gqa-str", lambda: cs.l2_section(4096, head_dim=128, pack_gqa="False"), TypeError, "pack_gqa"),
    ("tile-order-seqlen", lambda: cs.tile_scheduler_order(2 ** 53, batch=1, heads=1, block_q=2 ** 40), ValueError,
     "seqlen"),
    ("benchmark-head-dim", lambda: cs.benchmark_shapes("fa2", head_dim=2 ** 20, hidden=2 ** 20), ValueError,
     "head_dim"),
    # scheduler
    ("list-overhead", lambda: sc.list_schedule([1.0, 2.0], 2, item_overhead=_BIG), ValueError, "item_overhead"),
    ("list-costs", lambda: sc.list_schedule([_BIG, _BIG], 1), ValueError, "costs"),
    ("run-str", lambda: sc.simulate_dispatch([0], 1, lambda i, s, t: "3"), TypeError, "run"),
    ("run-none", lambda: sc.simulate_dispatch([0], 1, lambda i, s, t: None), TypeError, "run"),
    ("run-array", lambda: sc.simulate_dispatch([0], 1, lambda i, s, t: np.ones(2)), TypeError, "run"),
    ("run-bool", lambda: sc.simulate_dispatch([0], 1, lambda i, s, t: True), TypeError, "run"),
    ("run-nan", lambda: sc.simulate_dispatch([0], 1, lambda i, s, t: float("nan")), ValueError, "run"),
    ("order-ragged", lambda: sc.dispatch_order([1.0, 2.0], [[0], [1, 2]]), TypeError, "order"),
    ("order-floats", lambda: sc.dispatch_order([1.0, 2.0], np.array([1.0, 0.0])), TypeError, "order"),
    ("from-times-span", lambda: sc.Schedule.from_times([1.0], 1, [0], [0], [-_BIG], [_BIG]), ValueError, "start"),
]


@pytest.mark.parametrize("call,exc,name", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_refused_by_name_without_numpy_warnings(call, exc, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a refusal, never an overflow or divide-by-zero on the way
        with pytest.raises(exc, match=rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])"):
            call()


def test_a_refused_backward_leaves_the_callers_ledger_untouched():
    lg = Ledger()
    with pytest.raises(ValueError, match="lse"):
        _bwd(lse=np.full(4, -np.inf), ledger=lg)
    with pytest.raises(ValueError, match="dO"):
        _bwd(scale=1e300, ledger=lg)
    assert lg.total == 0
    _bwd(ledger=lg)
    assert lg.total > 0


def test_good_inputs_near_the_edges():
    # a causal backward with more queries than keys: rows 0 and 1 see no key, the forward's lse there is -inf
    r = _bwd(5, 3, causal=True)
    assert np.all(r.dQ[:2] == 0) and np.all(np.isfinite(r.dQ)) and np.any(r.dQ[2:] != 0)
    # FA2's causal dQ adds at N = 4096, d = 128, 128 x 128 blocks: 128 rows x (1 + ... + 32) blocks x 128
    assert bs.dq_atomic_counts(4096, 128, block_q=128, block_kv=128, causal=True)["atomic_adds"] == 128 * 528 * 128
    np.testing.assert_array_equal(bs.dq_ulp_differences(np.float32([1.0]), np.float32([1.0])), [0])
    # packed [4, 2] in 2 x 2 tiles, d = 1: 4 x (16 + 4) FLOPs packed, 2 x 4 x 16 padded
    s = varlen.varlen_savings([4, 2], d=1, block_q=2, block_kv=2)
    assert (s["flops_packed"], s["flops_padded"], s["flops_saved"]) == (80, 128, 0.375)
    assert varlen.check_cu_seqlens(np.array([0, 2, 5], np.uint32), 5).tolist() == [0, 2, 5]
    assert varlen.varlen_grid([3, 0, 5], heads=2, block_q=2, num_sms=4)["launched"] == 3 * 3 * 2   # ceil(5 / 2) x batch x heads
    np.testing.assert_array_equal(cs.causal_cta_costs(512, batch=1, heads=1, tile_time=0.5), [0.5, 1.0, 1.5, 2.0])
    assert cs.l2_section(8192, head_dim=128)["kv_heads"] == 8          # 4 MiB per KV head in a 32 MiB budget
    assert paged.fa3_forward_tile(256) == (128, 80)
    # one item with a huge but finite overhead ends at that overhead plus its cost
    assert sc.list_schedule([1.0], 1, item_overhead=_BIG).makespan == _BIG + 1.0
    slot, start, end = sc.simulate_dispatch([1, 0], 1, lambda i, s, t: np.float32(t + 2))
    assert end.tolist() == [4.0, 2.0]
    assert mb.mixed_batch_demands(GPU, **_STEP, decode_tile_rows=256)["decode_rows"] == 256
    f = mb.fused_step_time(prefill_compute=2.0, prefill_memory=1.0, decode_compute=0.5, decode_memory=3.0)
    assert (f["serial"], f["fused"], f["bound"]) == (5.0, 4.0, "memory")


def test_paged_decode_with_a_shuffled_pool_equals_the_reference():
    rng = np.random.default_rng(3)
    Ks, Vs = [rng.standard_normal((n, 4)) for n in (5, 0, 3)], [rng.standard_normal((n, 2)) for n in (5, 0, 3)]
    q = rng.standard_normal((3, 2, 4))
    kc, vc, table, L = paged.paginate(Ks, Vs, page_size=2, shuffle_seed=7, spare_pages=3)
    assert kc.shape == (3 + 2 + 3, 2, 4) and L.tolist() == [5, 0, 3]
    O, lse = paged.paged_decode_attention(q, kc, vc, table, L)
    for b in (0, 2):
        O_ref, lse_ref = labcore.reference_attention(q[b], Ks[b], Vs[b])
        np.testing.assert_allclose(O[b], O_ref, atol=1e-12)
        np.testing.assert_allclose(lse[b], lse_ref, atol=1e-12)
    assert np.all(O[1] == 0) and np.all(lse[1] == -np.inf)
