"""The simulated chip of the labs (labcore.chip): traffic, SRAM budget, HBM tensors, FLOPs, grid order, time."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import labcore
from labcore.chip import Chip, SRAMCapacityError, modelled_time
from labcore.waves import waves_time
from flashbook.labs.kernels_decode import flash_decoding
from flashbook.labs.kernels_forward import fa1_forward, fa2_forward

D = 8


def _qkv(N, N_k, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, D)), rng.standard_normal((N_k, D)), rng.standard_normal((N_k, D))


def _forward_on_chip(loop_order, Q, K, V, B_r, B_c, causal=False):
    N = Q.shape[0]
    chip = Chip(10 ** 6, {"Q": Q, "K": K, "V": V})
    chip.allocate("O", (N, D))
    if loop_order == "fa1":
        chip.allocate("l", (N,))
        chip.allocate("m", (N,))
        chip.launch(fa1_forward, block_q=B_r, block_kv=B_c)
        lse = labcore.safe_lse(chip.read_back("m"), chip.read_back("l"))
    else:
        chip.allocate("lse", (N,))
        chip.launch(fa2_forward, block_q=B_r, block_kv=B_c, causal=causal)
        lse = chip.read_back("lse")
    return chip, chip.read_back("O"), lse


@settings(max_examples=25, deadline=None)
@given(N=st.integers(1, 40), N_k=st.integers(1, 40), B_r=st.integers(1, 12), B_c=st.integers(1, 12),
       loop_order=st.sampled_from(["fa1", "fa2"]), causal=st.booleans())
def test_book_forward_ported_to_chip_moves_the_closed_form(N, N_k, B_r, B_c, loop_order, causal):
    causal = causal and loop_order == "fa2"      # the Algorithm 1 lab kernel is unmasked
    Q, K, V = _qkv(N, N_k)
    chip, O, lse = _forward_on_chip(loop_order, Q, K, V, B_r, B_c, causal)
    assert chip.ledger.by_tensor() == labcore.flash_forward_io(N, D, block_q=B_r, block_kv=B_c, loop_order=loop_order,
                                                               causal=causal, N_k=N_k, by_tensor=True)
    lg = labcore.Ledger()
    O_book, lse_book = labcore.flash_attention_forward(Q, K, V, block_q=B_r, block_kv=B_c, loop_order=loop_order,
                                                       causal=causal, ledger=lg)
    assert chip.ledger.total == lg.total
    np.testing.assert_allclose(O, O_book, atol=1e-12)
    np.testing.assert_allclose(lse, lse_book, atol=1e-12)


def test_paper_check_counts_on_chip_at_the_lecture_numbers_scaled_down():
    # M = 400, d = 8 gives the paper's B_r = 8, B_c = 13; the chip's peak stays below M.
    B_r, B_c = labcore.paper_block_sizes(400, D)
    assert (B_r, B_c) == (8, 13)
    Q, K, V = _qkv(45, 31)
    chip, _, _ = _forward_on_chip("fa1", Q, K, V, B_r, B_c)
    assert chip.sram_peak == 2 * B_c * D + 2 * B_r * D + 2 * B_r == 352


def test_exceeding_M_raises_capacity_error_naming_what_is_held():
    chip = Chip(100, {"K": np.zeros((10, 8)), "V": np.zeros((10, 8))})

    def greedy(cta):
        with cta.load("K"), cta.load("V"):
            pass

    with pytest.raises(SRAMCapacityError) as e:
        chip.launch(greedy)
    msg = str(e.value)
    assert "K[0:10] (80)" in msg and "V[0:10] needs 80" in msg and "M = 100" in msg
    assert e.value.held == [("K[0:10]", 80)] and e.value.M == 100


def test_sram_is_released_at_the_end_of_the_with_block_and_the_peak_is_kept():
    chip = Chip(100, {"K": np.zeros((10, 8))})

    def two_halves(cta):
        for r in ((0, 5), (5, 10)):
            with cta.load("K", rows=r), cta.buffer(20, name="acc"):
                assert cta.sram.used == 60
        assert cta.sram.used == 0

    rec = chip.launch(two_halves)
    assert rec.sram_peak == [60] and chip.sram_peak == 60
    assert chip.ledger.by_tensor() == {"K": {"read": 80, "write": 0}}


@pytest.mark.parametrize("op", [lambda t: t + 1, lambda t: 2 * t, lambda t: t @ np.ones(3), lambda t: t[0],
                                lambda t: np.exp(t), lambda t: np.asarray(t), lambda t: np.sum(t), lambda t: len(t)])
def test_direct_arithmetic_on_an_hbm_tensor_fails_clearly(op):
    chip = Chip(100, {"Q": np.ones((4, 3))})
    with pytest.raises(TypeError, match="load a tile first"):
        op(chip["Q"])


def test_a_tile_used_without_with_fails_clearly():
    chip = Chip(100, {"Q": np.ones((4, 3))})

    def forgot_with(cta):
        return cta.load("Q") + 1

    with pytest.raises(TypeError, match="use it in a with block"):
        chip.launch(forgot_with)


def test_bad_ranges_shapes_and_names():
    chip = Chip(100, {"Q": np.ones((4, 3))})
    with pytest.raises(ValueError, match="0 <= start <= stop <= 4"):
        chip.launch(lambda cta: cta.load("Q", rows=(2, 5)))
    with pytest.raises(TypeError, match="pair of ints"):
        chip.launch(lambda cta: cta.load("Q", rows=(0.5, 2)))
    with pytest.raises(ValueError, match="must have shape"):
        chip.launch(lambda cta: cta.store("Q", np.ones((2, 3)), rows=(0, 1)))
    with pytest.raises(KeyError, match="no tensor 'X'"):
        chip.launch(lambda cta: cta.load("X"))
    with pytest.raises(ValueError, match="already holds"):
        chip.allocate("Q", (2,))
    with pytest.raises(TypeError):
        Chip(0.5)
    with pytest.raises(ValueError):
        Chip(10, order="random")


def test_flops_are_counted_on_tiles():
    chip = Chip(1000, {"A": np.ones((4, 3)), "B": np.ones((3, 5))})

    def work(cta):
        with cta.load("A") as A, cta.load("B") as B:
            C = A @ B                       # 2 * 4 * 3 * 5 = 120 matmul FLOP
            E = np.exp(C)                   # 20
            E.max(axis=1)                   # reduce over 20 inputs
            E += 1                          # 20, in place
            assert type(E).__name__ == "Tile"

    chip.launch(work)
    assert chip.flops == {"matmul": 120, "nonmatmul": 60}


def _order_dependent(cta, *, num_splits, block_kv):
    # a wrong kernel: accumulates into one HBM row, so the last CTA to run wins
    with cta.load("q") as q:
        cta.store("O", q * cta.pid, rows=(0, q.shape[0]))


@pytest.mark.parametrize("order", ["reversed", "shuffled", [2, 0, 3, 1, 4]])
def test_a_correct_grid_kernel_gives_the_same_result_in_any_cta_order(order):
    q, K, V = _qkv(1, 37, seed=3)
    out = []
    for o in ("sequential", order):
        chip = Chip(512, {"q": q, "K": K, "V": V}, order=o, seed=7)
        chip.allocate("O", (1, D))
        chip.allocate("lse", (1,))
        flash_decoding(chip, num_splits=5, block_kv=4)
        out.append((chip.read_back("O"), chip.read_back("lse"), chip.ledger.by_tensor()))
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])
    assert out[0][2] == out[1][2]
    O_ref, lse_ref = labcore.reference_attention(q, K, V)
    np.testing.assert_allclose(out[0][0], O_ref, atol=1e-12)
    # and a kernel that depends on the order does give different results (the check can fail)
    res = []
    for o in ("sequential", "reversed"):
        chip = Chip(512, {"q": q}, order=o)
        chip.allocate("O", (1, D))
        chip.launch(_order_dependent, grid=5, num_splits=5, block_kv=4)
        res.append(chip.read_back("O"))
    assert not np.array_equal(res[0], res[1])


def test_modelled_time_goes_through_the_wave_machinery():
    q, K, V = _qkv(1, 37, seed=3)
    chip = Chip(512, {"q": q, "K": K, "V": V})
    chip.allocate("O", (1, D))
    chip.allocate("lse", (1,))
    flash_decoding(chip, num_splits=5, block_kv=4)
    t = modelled_time(chip, "A100", kernel_overhead=0.0)
    g = labcore.get_gpu("A100")
    split = chip.launches[0]
    comp = max(m / g.tensor_flops_per_sm + n / (g.fp32_flops / g.num_sms)
               for m, n in zip(split.matmul, split.nonmatmul))
    w = waves_time(5, g.num_sms, comp, max(split.elements) * 2, g.hbm_bandwidth, per_sm_bandwidth_cap=80e9)
    assert t["launches"][0]["time"] == pytest.approx(float(w["total"]))
    assert t["launches"][0]["ctas"] == 5 and t["launches"][1]["ctas"] == 1
    assert t["hbm_bytes"] == 2 * chip.ledger.total
    assert modelled_time(chip, "A100")["total"] == pytest.approx(t["total"] + 2 * 5e-6)
    with pytest.raises(ValueError, match="run no kernel"):
        modelled_time(Chip(10), "A100")
    with pytest.raises(ValueError, match="FP32"):
        modelled_time(chip, "B200")
