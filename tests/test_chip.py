"""The simulated chip of the labs (labcore.chip): traffic, SRAM budget, HBM tensors, FLOPs, grid order, time."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import labcore
from labcore.chip import CHIP_PROFILE, Chip, DataRaceError, SRAMCapacityError, modelled_time, rebuild, rebuild_from_text
from labcore.waves import per_cta_bandwidth_cap
from flashbook.labs.solutions import lab2_flash_forward, lab5_flash_decoding, solution_text

D = 8
fa1_forward = rebuild(lab2_flash_forward.kernel, CHIP_PROFILE)
#: Lab 3's kernel (one CTA per query block), causal as written, and without the mask (every key visible).
fa2_causal = rebuild_from_text(solution_text("fa2_causal"), ("kernel",), CHIP_PROFILE)["kernel"]
fa2_full = rebuild_from_text(solution_text("fa2_causal").replace("[:, None] + (N_k - N)", "[:, None] + N_k")
                             .replace("stop = min(N_k, r1 + N_k - N)", "stop = N_k"), ("kernel",),
                             CHIP_PROFILE)["kernel"]
flash_decoding = rebuild(lab5_flash_decoding.kernel, CHIP_PROFILE)


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
        chip.launch(fa2_causal if causal else fa2_full, grid=-(-N // B_r), block_q=B_r, block_kv=B_c)
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
                assert cta._state.sram.used == 60
        assert cta._state.sram.used == 0

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
        flash_decoding(chip.program(), num_splits=5, block_kv=4)
        out.append((chip.read_back("O"), chip.read_back("lse"), chip.ledger.by_tensor()))
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])
    assert out[0][2] == out[1][2]
    O_ref, lse_ref = labcore.reference_attention(q, K, V)
    np.testing.assert_allclose(out[0][0], O_ref, atol=1e-12)
    # and a kernel whose result would depend on the order (every CTA writes the same rows) is a data race
    chip = Chip(512, {"q": q}, order="reversed")
    chip.allocate("O", (1, D))
    with pytest.raises(DataRaceError, match="CTA 3 writes O\\[0:1\\], which CTA 4 of the same launch wrote"):
        chip.launch(_order_dependent, grid=5, num_splits=5, block_kv=4)


def test_modelled_time_goes_through_the_wave_machinery():
    q, K, V = _qkv(1, 37, seed=3)
    chip = Chip(512, {"q": q, "K": K, "V": V})
    chip.allocate("O", (1, D))
    chip.allocate("lse", (1,))
    flash_decoding(chip.program(), num_splits=5, block_kv=4)
    t = modelled_time(chip, "A100", kernel_overhead=0.0)
    g = labcore.get_gpu("A100")
    split = chip.launches[0]
    comp = max(m / g.tensor_flops_per_sm + n / (g.fp32_flops / g.num_sms)
               for m, n in zip(split.matmul, split.nonmatmul))
    # five CTAs, each on its own SM at the A100's per-CTA cap (5 x 82 GB/s < 1.94 TB/s): each takes the longer of
    # its compute and its bytes over the cap; the launch ends with its slowest CTA
    cap = per_cta_bandwidth_cap(g)
    each = [max(m / g.tensor_flops_per_sm + n / (g.fp32_flops / g.num_sms), e * 2 / cap)
            for m, n, e in zip(split.matmul, split.nonmatmul, split.elements)]
    assert t["launches"][0]["time"] == pytest.approx(max(each), rel=1e-9)
    assert comp <= max(each)
    assert t["launches"][0]["ctas"] == 5 and t["launches"][1]["ctas"] == 1
    assert t["hbm_bytes"] == 2 * chip.ledger.total
    assert modelled_time(chip, "A100")["total"] == pytest.approx(t["total"] + 2 * 5e-6)
    with pytest.raises(ValueError, match="run no kernel"):
        modelled_time(Chip(10), "A100")
    with pytest.raises(ValueError, match="FP32"):
        modelled_time(chip, "B200")


def test_atomic_adds_are_counted_apart_and_land_in_any_order():
    """Many CTAs add into the same rows with cta.atomic_add: every add lands, the count is in chip.atomics (not the
    plain ledger), and the time model charges 4 bytes per added element."""
    def add_pid(cta):
        cta.atomic_add("acc", np.full((2, 3), float(cta.pid + 1)), rows=(0, 2))

    for order in ("sequential", "shuffled"):
        chip = Chip(64, {"acc": np.zeros((2, 3))}, order=order, seed=3)
        chip.launch(add_pid, grid=4)
        np.testing.assert_array_equal(chip.read_back("acc"), np.full((2, 3), 10.0))
        assert chip.atomics.by_tensor() == {"acc": {"read": 0, "write": 24}} and chip.ledger.total == 0
    t = modelled_time(chip, "A100", kernel_overhead=0.0)
    assert t["atomic_bytes"] == 24 * 4 and t["hbm_bytes"] == 0 and chip.launches[0].atomics == [6, 6, 6, 6]

    def add_then_read(cta):
        cta.atomic_add("acc", np.ones((2, 3)), rows=(0, 2))
        with cta.load("acc", rows=(0, 2)):
            pass

    with pytest.raises(DataRaceError, match="CTA 1 adds atomically into acc\\[0:2\\], which CTA 0 of the same launch read"):
        Chip(64, {"acc": np.zeros((2, 3))}).launch(add_then_read, grid=2)


def test_tiles_carry_their_sources_through_numpy_functions_views_and_indexing():
    """What is derived from a tile (np.where, np.concatenate, a view, a 0-d tile from indexing) and used after the
    tile's block counts against M; inside the block it is a temporary."""
    from labcore.chip.tile import carriers

    seen = {}

    def kernel(cta):
        with cta.load("K", rows=(0, 2)) as K_0:
            picked = np.where(K_0 > 0, K_0, 0.0)
            joined = np.concatenate((K_0, K_0))
            view = K_0.T
            scalar = K_0[0, 0]
            seen["inside"] = [bool(carriers(x)) for x in (picked, joined, scalar)] + [view._root is not None]
            assert cta._state.sram.used == 6                 # only K_0 itself
        with cta.load("K", rows=(2, 4)) as K_1:
            cta.store("O", picked + joined[:2] + scalar + K_1, rows=(0, 2))
        seen["peak"] = cta._state.sram.peak

    chip = Chip(100, {"K": np.ones((4, 3))})
    chip.allocate("O", (2, 3))
    chip.launch(kernel)
    assert seen["inside"] == [True, True, True, True]
    assert seen["peak"] == 6 + 6 + 12 + 1                    # K_1, and the kept picked, joined and scalar
    np.testing.assert_array_equal(chip.read_back("O"), np.full((2, 3), 4.0))


def test_the_budget_the_peak_and_the_ledger_are_read_only():
    from labcore.chip import SRAM

    chip = Chip(10, {"x": np.zeros(3)})
    sram = SRAM(10)
    for obj, attr in ((chip, "M"), (chip, "ledger"), (chip, "atomics"), (sram, "M"), (sram, "peak"),
                      (sram, "used"), (chip["x"], "name")):
        with pytest.raises(AttributeError):
            setattr(obj, attr, 1)

    def kernel(cta):
        cta.M = 1000

    with pytest.raises(AttributeError, match="cannot set cta.M"):
        chip.launch(kernel)


def test_a_kept_copy_is_counted_from_the_end_of_its_block_when_it_is_used_later():
    """The copy is found at its first use after the block, then charged over the whole window since the block
    ended: here a tile loaded in between overflows M only together with it."""
    def kernel(cta):
        with cta.load("K", rows=(0, 3)) as K_0:
            kept = K_0 * 1.0
        with cta.load("K", rows=(3, 6)):                     # 9 elements: fits alone, not beside the copy
            pass
        cta.store("O", kept, rows=(0, 3))

    chip = Chip(15, {"K": np.ones((6, 3))})
    chip.allocate("O", (3, 3))
    with pytest.raises(SRAMCapacityError, match="a copy kept on chip") as e:
        chip.launch(kernel)
    assert "at a moment since its block ended" in str(e.value) and e.value.at_used == 9


def test_run_limits_stop_an_endless_loop_and_count_steps():
    from labcore.chip import KernelLimitError, run_limits
    from labcore.chip.limits import steps_taken, tick

    with run_limits(steps=50):
        for _ in range(50):
            tick()
        assert steps_taken() == 50
        with pytest.raises(KernelLimitError, match="more than 50 steps"):
            tick()
    with pytest.raises(KernelLimitError, match="longer than"):
        with run_limits(steps=10 ** 9, seconds=1e-6):
            for _ in range(10 ** 6):
                tick()
