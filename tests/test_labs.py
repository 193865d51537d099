"""The labs (flashbook.labs): reference kernels pass, each named mistake gets its own line and no other."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import labcore
from flashbook.labs import FEEDBACK, LABS, TOLERANCE, decode_race, get_lab, grade, run_kernel
import flashbook.labs.grader as grader_module
from flashbook.labs.mistakes import mistake_functions
from flashbook.labs.solutions import lab5_flash_decoding

BEST = lab5_flash_decoding.choose_splits


def _extra(lab):
    return {"choose_splits": BEST} if lab.key == "flash_decoding" else {}


def _check_reference(lab, shape, **params):
    """Run the reference on one shape: exact, traffic equal to the closed form, SRAM peak within M."""
    chip, outputs, err, inputs = run_kernel(lab, lab.reference, shape, **params)
    assert err is None, err
    expected = lab.oracle(inputs, shape)
    full = {**lab.params, **params}
    for k, v in expected.items():
        np.testing.assert_allclose(outputs[k], v, atol=TOLERANCE * max(1.0, float(np.max(np.abs(v[np.isfinite(v)]),
                                                                                          initial=0))), rtol=0)
    assert chip.ledger.by_tensor() == lab.expected_io(shape, full)
    if lab.expected_atomics:
        assert {n: v["write"] for n, v in chip.atomics.by_tensor().items()} == lab.expected_atomics(shape, full)
    assert 0 < chip.sram_peak <= lab.M


@pytest.mark.parametrize("key", list(LABS))
def test_reference_passes_with_no_feedback(key):
    lab = LABS[key]
    r = grade(lab, lab.reference, **_extra(lab))
    assert r.passed and r.mistakes == set() and r.max_error < 1e-10
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
    @given(N=st.integers(1, n_max), N_k=st.integers(1, n_max), B_r=st.integers(1, br_max), B_c=st.integers(1, bc_max),
           causal=st.booleans(), large=st.booleans())
    def check(N, N_k, B_r, B_c, causal, large):
        shape = {"N": N, "N_k": N_k, **({"causal": causal} if key == "backward" else {}),
                 **({"scores": "large"} if large else {})}
        _check_reference(LABS[key], shape, block_q=B_r, block_kv=B_c)

    check()


@settings(max_examples=15, deadline=None)
@given(g=st.integers(1, 4), N_k=st.integers(1, 60), s=st.integers(1, 10), B=st.integers(1, 16))
def test_decoding_reference_on_random_shapes(g, N_k, s, B):
    _check_reference(LABS["flash_decoding"], {"g": g, "N_k": N_k, "num_splits": s}, block_kv=B)


MISTAKES = [(key, name) for key, lab in LABS.items() for name in lab.mistakes]


@pytest.mark.parametrize("key,name", MISTAKES, ids=[f"{k}-{n}" for k, n in MISTAKES])
def test_each_mistake_fails_with_its_own_line_and_only_that_one(key, name):
    lab = LABS[key]
    r = grader_module._grade(lab, mistake_functions(key, name)["kernel"], rebuilt=True, **_extra(lab))
    assert not r.passed
    assert r.mistakes == {name}
    assert FEEDBACK[name] in str(r)
    assert all(FEEDBACK[other] not in str(r) for other in FEEDBACK if other != name)


def test_every_feedback_line_belongs_to_a_mistaken_kernel():
    assert {n for _, n in MISTAKES} == set(FEEDBACK)


def do_nothing(cta, *, block_q, block_kv):
    pass


def do_nothing_row(cta, *, block_kv):
    pass


def program_nothing(chip, *, num_splits, block_kv):
    pass


def program_nothing_bwd(chip, *, block_q, block_kv, causal):
    pass


NOTHING = {"online_softmax": do_nothing_row, "fa1_forward": do_nothing, "fa2_causal": do_nothing,
           "backward": program_nothing_bwd, "flash_decoding": program_nothing}


@pytest.mark.parametrize("key", list(LABS))
def test_a_kernel_that_does_nothing_is_graded_not_yet_without_raising(key):
    r = grade(LABS[key], NOTHING[key])
    text = str(r)
    assert not r.passed and r.max_error == np.inf and "not yet" in text and r.mistakes == set()
    assert "was never written to HBM" in text and "differs from the reference on every shape" in text


def broken(cta, *, block_q, block_kv):
    return 1 // 0


def test_a_kernel_that_raises_is_reported_not_raised():
    r = grade("fa1_forward", broken)
    assert not r.passed and all("ZeroDivisionError: integer division or modulo by zero" in s.raised for s in r.shapes)


def test_the_reader_block_sizes_change_the_closed_form():
    lab = LABS["fa1_forward"]
    a, b = grade(lab, lab.reference), grade(lab, lab.reference, block_q=4, block_kv=6)
    assert a.passed and b.passed
    assert b.shapes[0].expected == labcore.flash_forward_io(40, 8, block_q=4, block_kv=6, loop_order="fa1",
                                                            by_tensor=True)
    assert b.shapes[0].traffic_total()[0] > a.shapes[0].traffic_total()[0]
    too_big = grade(lab, lab.reference, block_q=8, block_kv=40)
    assert not too_big.passed and "SRAM capacity exceeded" in too_big.shapes[0].raised


def one_split(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim):
    return 1


def many_splits(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim):
    return 200


def half_split(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim):
    return 2.5


def test_decode_lab_needs_the_race_and_the_heuristic_can_be_beaten_only_under_the_full_rule():
    lab = LABS["flash_decoding"]
    r = grade(lab, lab.reference)
    assert not r.passed and all(s.ok for s in r.shapes)              # exact, but the race was not run
    assert "pass choose_splits=... to grade" in str(r)
    slow = grade(lab, lab.reference, choose_splits=one_split)
    assert not slow.passed and not any(row["ok"] for row in slow.race)
    rows = decode_race(BEST)
    assert [rule["rule"] for rule in rows[0]["rules"]] == ["full last wave", "shared last wave", "derived occupancy"]
    assert all(row["ok"] for row in rows)
    gain = {rule: max(1 - x["t_yours"] / x["t_heuristic"] for row in rows for x in row["rules"] if x["rule"] == rule)
            for rule in ("full last wave", "shared last wave", "derived occupancy")}
    assert gain["full last wave"] > 0.1 and gain["shared last wave"] < 0.01 and gain["derived occupancy"] < 0.01
    assert {row["scenario"]["gpu"] for row in rows} == {"A100", "H100"}
    text = str(grade(lab, lab.reference, choose_splits=BEST))
    assert "Why does the win vanish" in text and "the heuristic's 23 splits; full last wave: 182.7 µs vs 212.8 µs" in text


def test_a_split_count_above_flash_attns_limit_or_not_an_int_is_a_clear_error():
    lab = LABS["flash_decoding"]
    for chooser, message in ((many_splits, "choose_splits returned 200 for A100, batch 1, seqlen 65,536: "
                                            "flash-attn runs 1 to 128 splits"),
                             (half_split, "choose_splits returned 2.5 (float) for A100")):
        r = grade(lab, lab.reference, choose_splits=chooser)
        assert not r.passed and message in str(r) and message in r.as_row()["error"]
        with pytest.raises((TypeError, ValueError), match="choose_splits returned"):
            decode_race(chooser)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown lab"):
        get_lab("nope")
    with pytest.raises(TypeError):
        get_lab(2.5)
    assert get_lab(3) is LABS["fa2_causal"]
    with pytest.raises(TypeError, match="must be a function"):
        grade(1, "kernel")
    with pytest.raises(TypeError, match="unknown parameter"):
        grade(1, do_nothing, block_q=4)
    with pytest.raises(ValueError):
        grade(2, do_nothing, block_q=0)
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


FA1 = LABS["fa1_forward"].reference


def nan_rows(cta, *, block_q, block_kv):
    FA1(cta, block_q=block_q, block_kv=block_kv)
    cta.store("O", np.zeros((1, cta.shape("O")[1])) * np.nan, rows=(0, 1))   # one row of O ruined


def test_nan_in_an_output_is_named_with_its_count():
    """A kernel whose O holds NaN is told which tensor, how many entries and what usually causes it; one that
    never stores O is told so."""
    lab = LABS["fa1_forward"]
    r = grade(lab, nan_rows)
    text = str(r)
    assert not r.passed and "O holds NaN or inf in" in text and "0 / 0" in text
    rows, d = lab.outputs(lab.shapes[0])["O"]
    first = next(n for n in r.shapes[0].notes if n.startswith("O holds"))
    assert first.startswith(f"O holds NaN or inf in {d:,} of {rows * d:,} entries")
    r = grade(lab, do_nothing)                     # lab 2 stores O, l and m (lse is computed from l and m)
    assert [n.split(" was never")[0] for n in r.shapes[0].notes if "never written" in n] == ["O", "l", "m"]
    assert not any(n.startswith("lse") for s in r.shapes for n in s.notes)


NOTEBOOK = {"online_softmax": "lab1_online_softmax", "fa1_forward": "lab2_flash_forward",
            "fa2_causal": "lab3_causal_fa2", "backward": "lab4_backward", "flash_decoding": "lab5_flash_decoding"}


@pytest.mark.parametrize("key", list(LABS))
def test_each_lab_page_holds_its_starter_in_one_kernel_cell_and_shows_the_self_contained_solution(key):
    """The page's kernel cell is the lab's starter (the grader recognises it), the only cell that defines the
    kernel, so that a solution pasted into it defines all the check cell grades; the solution cell prints the
    solution file, which the pasted-solution tests grade."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "book" / "labs" / f"{NOTEBOOK[key]}.ipynb"
    code = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    defining = [c for c in code if "def kernel" in c or "def split" in c]
    assert defining == [LABS[key].starter.rstrip("\n")]
    assert any("print(solution_text(lab.key))" in c for c in code)
    assert any(c.startswith("report = grade(lab, kernel") for c in code)
