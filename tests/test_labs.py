"""The labs (flashbook.labs): reference kernels pass, each named mistake gets its own line and no other."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import labcore
from flashbook.labs import FEEDBACK, LABS, TOLERANCE, decode_race, get_lab, grade, run_kernel

def BEST(gpu, **shape):
    return labcore.best_num_splits(gpu, **shape)


def _extra(lab):
    return {"choose_splits": BEST} if lab.key == "flash_decoding" else {}


def _check_reference(lab, shape, **params):
    """Run the reference on one shape: exact, traffic equal to the closed form, SRAM peak within M."""
    chip, outputs, err, inputs = run_kernel(lab, lab.reference, shape, **params)
    assert err is None, err
    expected = lab.oracle(inputs, shape)
    for k, v in expected.items():
        np.testing.assert_allclose(outputs[k], v, atol=TOLERANCE, rtol=0)
    assert chip.ledger.by_tensor() == lab.expected_io(shape, params)
    assert 0 < chip.sram_peak <= lab.M


@pytest.mark.parametrize("key", list(LABS))
def test_reference_passes_with_no_feedback(key):
    lab = LABS[key]
    r = grade(lab, lab.reference, **_extra(lab))
    assert r.passed and r.mistakes == set() and r.max_error < 1e-12
    assert all(s.traffic == s.expected and s.sram_peak <= lab.M for s in r.shapes)
    assert r.time["total"] > 0 and "passed" in str(r)


@settings(max_examples=15, deadline=None)
@given(N=st.integers(1, 60), B=st.integers(1, 16))
def test_online_softmax_reference_on_random_shapes(N, B):
    _check_reference(LABS["online_softmax"], {"N": N}, block_kv=B)


#: (lab, largest N and N_k, largest B_r, largest B_c, examples): the reference on random shapes, ragged included
REFERENCE_GRID = [("fa1_forward", 50, 8, 13, 15), ("fa2_causal", 60, 20, 20, 15), ("backward", 40, 16, 16, 10)]


@pytest.mark.parametrize("key, n_max, br_max, bc_max, examples", REFERENCE_GRID, ids=[r[0] for r in REFERENCE_GRID])
def test_reference_on_random_shapes(key, n_max, br_max, bc_max, examples):
    @settings(max_examples=examples, deadline=None)
    @given(N=st.integers(1, n_max), N_k=st.integers(1, n_max), B_r=st.integers(1, br_max), B_c=st.integers(1, bc_max))
    def check(N, N_k, B_r, B_c):
        _check_reference(LABS[key], {"N": N, "N_k": N_k}, block_q=B_r, block_kv=B_c)

    check()


@settings(max_examples=15, deadline=None)
@given(g=st.integers(1, 4), N_k=st.integers(1, 60), s=st.integers(1, 10), B=st.integers(1, 16))
def test_decoding_reference_on_random_shapes(g, N_k, s, B):
    _check_reference(LABS["flash_decoding"], {"g": g, "N_k": N_k, "num_splits": s}, block_kv=B)


MISTAKES = [(key, name) for key, lab in LABS.items() for name in lab.mistakes]


@pytest.mark.parametrize("key,name", MISTAKES, ids=[f"{k}-{n}" for k, n in MISTAKES])
def test_each_mistake_fails_with_its_own_line_and_only_that_one(key, name):
    lab = LABS[key]
    r = grade(lab, lab.mistakes[name], **_extra(lab))
    assert not r.passed
    assert r.mistakes == {name}
    assert FEEDBACK[name] in str(r)


def test_every_feedback_line_belongs_to_a_mistaken_kernel():
    assert {n for _, n in MISTAKES} == set(FEEDBACK)


def _do_nothing(cta, **params):
    pass


@pytest.mark.parametrize("key", list(LABS))
def test_a_kernel_that_does_nothing_is_graded_not_yet_without_raising(key):
    lab = LABS[key]
    kernel = (lambda chip, **p: None) if lab.runner == "chip" else _do_nothing
    r = grade(lab, kernel)
    assert not r.passed and r.max_error == np.inf and "not yet" in str(r) and r.mistakes == set()


def test_a_kernel_that_raises_is_reported_not_raised():
    def broken(cta, *, block_q, block_kv):
        raise ZeroDivisionError("oops")

    r = grade("fa1_forward", broken)
    assert not r.passed and all("ZeroDivisionError: oops" in s.raised for s in r.shapes)


def test_the_reader_block_sizes_change_the_closed_form():
    lab = LABS["fa1_forward"]
    a, b = grade(lab, lab.reference), grade(lab, lab.reference, block_q=4, block_kv=6)
    assert a.passed and b.passed
    assert b.shapes[0].expected == labcore.flash_forward_io(40, 8, block_q=4, block_kv=6, loop_order="fa1",
                                                            by_tensor=True)
    assert b.shapes[0].traffic_total()[0] > a.shapes[0].traffic_total()[0]
    too_big = grade(lab, lab.reference, block_q=8, block_kv=40)
    assert not too_big.passed and "SRAM capacity exceeded" in too_big.shapes[0].raised


def test_decode_lab_needs_the_race_and_the_heuristic_can_be_beaten():
    lab = LABS["flash_decoding"]
    assert not grade(lab, lab.reference).passed                    # exact, but the race was not run
    slow = grade(lab, lab.reference, choose_splits=lambda gpu, **s: 1)
    assert not slow.passed and not any(r["ok"] for r in slow.race)
    rows = decode_race(BEST)
    assert all(r["ok"] and r["t_yours"] < r["t_heuristic"] for r in rows)
    assert {r["scenario"]["gpu"] for r in rows} == {"A100", "H100"}


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown lab"):
        get_lab("nope")
    with pytest.raises(TypeError):
        get_lab(2.5)
    assert get_lab(3) is LABS["fa2_causal"]
    with pytest.raises(TypeError, match="must be a function"):
        grade(1, "kernel")
    with pytest.raises(TypeError, match="unknown parameter"):
        grade(1, _do_nothing, block_q=4)
    with pytest.raises(ValueError):
        grade(2, _do_nothing, block_q=0)
    with pytest.raises(TypeError, match="choose_splits"):
        decode_race(3)


def test_the_ledger_figure_reads_like_the_books_figures(monkeypatch):
    """The lab page's ledger figure: the traffic per tensor sums to the closed form at every block size; the
    figure is at most a column wide with text of at least 9 pt, and it is shown at 2 PNG px per CSS px."""
    import io

    from PIL import Image

    from flashbook.drawing import smallest_text
    from flashbook.figures.base import MAX_WIDTH
    from flashbook.labs import figures

    lab = get_lab("fa1_forward")
    data = figures.ledger_sweep(lab)
    assert len(data["sizes"]) >= 3
    for k in range(len(data["sizes"])):
        assert sum(ys[k] for ys in data["tensors"].values()) == data["expected"][k]
    fig = figures.ledger_figure(lab)
    assert fig.get_figwidth() <= MAX_WIDTH
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    figures.show_figure(fig)
    assert smallest_text(fig) >= 9
    png = Image.open(io.BytesIO(shown[0].data))
    assert shown[0].width == round(fig.get_figwidth() * 100) and png.width == 2 * shown[0].width


def test_nan_in_an_output_is_named_with_its_count():
    """A kernel whose O holds NaN is told which tensor, how many entries and what usually causes it; one that
    never stores O is told so."""
    from flashbook.labs import LABS

    lab = LABS["fa1_forward"]

    def nan_rows(cta, *, block_q, block_kv):
        lab.reference(cta, block_q=block_q, block_kv=block_kv)
        cta.store("O", np.full((1, cta.shape("O")[1]), np.nan), rows=(0, 1))   # one row of O ruined

    r = grade(lab, nan_rows)
    text = str(r)
    assert not r.passed and "O holds NaN or inf in" in text and "0 / 0" in text
    rows, d = lab.outputs(lab.shapes[0])["O"]
    first = next(n for n in r.shapes[0].notes if n.startswith("O holds"))
    assert first.startswith(f"O holds NaN or inf in {d:,} of {rows * d:,} entries")
    r = grade(lab, _do_nothing)                     # lab 2 stores O, l and m (lse is computed from l and m)
    assert [n.split(" was never")[0] for n in r.shapes[0].notes if "never written" in n] == ["O", "l", "m"]
    assert not any(n.startswith("lse") for s in r.shapes for n in s.notes)


def test_a_kernel_that_moves_less_than_the_closed_form_is_told_why():
    """Tiles copied out of their ``with`` blocks (outside the counted SRAM): exact, but fewer elements than
    Algorithm 1's closed form; the report says so instead of "no known mistake"."""
    lab = LABS["fa1_forward"]

    def hoarder(cta, *, block_q, block_kv):
        tiles = {}
        for name in ("Q", "K", "V"):
            rows = cta.shape(name)[0]
            parts = []
            for r0 in range(0, rows, block_kv):
                with cta.load(name, rows=(r0, min(rows, r0 + block_kv))) as t:
                    parts.append(np.array(t))            # kept after the block: not in SRAM any more
            tiles[name] = np.concatenate(parts)
        Q, K, V = tiles["Q"], tiles["K"], tiles["V"]
        S = Q @ K.T / np.sqrt(Q.shape[1])
        m = S.max(axis=1)
        P = np.exp(S - m[:, None])
        l = P.sum(axis=1)
        for name, value in (("O", P @ V / l[:, None]), ("l", l), ("m", m)):
            rows = cta.shape(name)[0]
            cta.store(name, value.reshape(cta.shape(name)), rows=(0, rows))

    r = grade(lab, hoarder)
    text = str(r)
    assert r.max_error < 1e-9 and not r.passed
    assert all(s.traffic_total()[0] < s.traffic_total()[1] for s in r.shapes)
    assert "Fewer elements moved than this lab's closed form" in text and "No known mistake" not in text
