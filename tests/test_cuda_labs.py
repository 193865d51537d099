"""The CUDA labs (6-9): every reference passes, every named mistake fails with its own line and no other, a correct
kernel with other tile sizes passes, the starters are graded "not yet" without blame, the shown solution passes
when pasted, and the reports say what the runs showed."""
from __future__ import annotations

import json
import linecache
from pathlib import Path

import numpy as np
import pytest

from flashbook.labs.cuda import CUDA_LABS, get_cuda_lab, grade, grade_text, order_dependence, solution_source
from flashbook.labs.cuda.mistakes import MISTAKES, variant
from flashbook.labs.cuda import ref_forward, ref_backward
from numba import cuda  # after flashbook.labs.cuda: cudalab chooses the simulator before numba loads

ROOT = Path(__file__).resolve().parents[1]
MISTAKE_CASES = [(lab, name) for lab, table in MISTAKES.items() for name in table]


@pytest.mark.parametrize("key", list(CUDA_LABS))
def test_each_reference_passes_every_shape(key):
    lab = CUDA_LABS[key]
    report = grade(lab, *lab.reference.values(), seed=3)
    assert report.passed, str(report)
    assert report.feedback == [] and report.max_error < 1e-3
    for s in report.shapes:
        assert s.moved == s.closed_form and s.atomics == s.expected_atomics and not s.races and not s.findings
    assert report.time["total"] > 0 and report.score == 1.0


@pytest.mark.slow   # whole grades in the simulator: make test
@pytest.mark.parametrize("key, name", MISTAKE_CASES, ids=[f"{k}-{n}" for k, n in MISTAKE_CASES])
def test_each_named_mistake_fails_with_its_own_line_and_no_other(key, name):
    lab = CUDA_LABS[key]
    report = grade(lab, *MISTAKES[key][name], seed=5)
    assert not report.passed
    expected = {"missing_barrier": "missing_barrier", "early_return": "barrier_divergence",
                "kv_whole": "over_budget"}.get(name, name)
    assert report.mistakes == {expected}, str(report)


@pytest.mark.slow   # whole grades in the simulator: make test
def test_a_correct_kernel_with_other_tile_sizes_passes():
    for bq, bkv in ((8, 16), (32, 8)):
        (k,) = variant(ref_forward, f"fa2_{bq}x{bkv}", [("BLOCK_Q = 16 ", f"BLOCK_Q = {bq} "),
                                                        ("BLOCK_KV = 16 ", f"BLOCK_KV = {bkv} ")], ("fa2_forward",))
        report = grade("7", k, block_q=bq, block_kv=bkv, seed=1)
        assert report.passed, str(report)
    (k,) = variant(ref_backward, "bwd_4x16", [("BLOCK_Q = 8 ", "BLOCK_Q = 4 "), ("BLOCK_KV = 8 ", "BLOCK_KV = 16 ")],
                   ("bwd_deterministic",))
    assert grade("9b", k, block_q=4, block_kv=16, seed=1).passed


def test_a_kernel_launched_with_a_block_size_it_does_not_use_fails():
    # the grader launches ceil(N / 8) blocks of 8 threads; the kernel thinks each block covers 16 rows
    report = grade("7", ref_forward.fa2_forward, block_q=8, block_kv=16, seed=1)
    assert not report.passed and report.mistakes == set()


def test_reading_less_than_the_closed_form_is_not_wrong():
    # the two-pass kernel graded as part A reads S twice; the one-pass kernel graded as part A reads it once and
    # is still exact: better than the closed form, so it passes and the report says by how much
    report = grade("6a", get_cuda_lab("6b").reference["row_lse_online"], seed=2)
    assert report.passed, str(report)
    assert all(s.moved < s.closed_form for s in report.shapes)
    assert "fewer than the closed form" in str(report)
    # what the kernel beats is the lab's reference kernel, not a loop
    assert str(report).count("better than the reference kernel") == len(report.shapes)
    assert "reference loop" not in str(report)
    assert not any(line.startswith("  Why not yet") for line in report.lines())


def test_a_kernel_that_fails_only_on_traffic_is_told_so_near_the_top():
    # the two-pass kernel graded as part B: exact on every shape, no race, no finding, but S is read twice
    report = grade("6b", get_cuda_lab("6a").reference["row_lse_two_pass"], seed=2)
    assert not report.passed and all(s.exact and s.raised is None and not s.races for s in report.shapes)
    extra = sum(s.traffic["S"]["read"] - s.expected["S"]["read"] for s in report.shapes)
    moved, closed = sum(s.moved for s in report.shapes), sum(s.closed_form for s in report.shapes)
    assert extra == closed - 4 * len(report.shapes)     # every score read once more; lse written once per row
    head = report.lines()[1]
    assert head == ("  Why not yet: the global-memory traffic alone (the values are exact on every shape, with no "
                    f"race, error or barrier finding). On 5 of 5 shapes your kernel moved {moved:,} elements where the closed "
                    f"form moves {closed:,} ({moved - closed:,} more): {extra:,} more reads of S.")
    assert "<b>&nbsp;&nbsp;Why not yet: the global-memory traffic alone" in report._repr_html_()


def test_the_traffic_headline_counts_atomic_adds_and_arrays_moved_less():
    from flashbook.labs.cuda.report import CudaReport, CudaShapeResult

    def shape(label, q_read, adds):
        return CudaShapeResult(label, 1e-7, True, {"Q": {"read": q_read, "write": 0}, "dQ": {"read": 0, "write": 0}},
                               {"Q": {"read": 12, "write": 0}, "dQ": {"read": 0, "write": 0}}, {"dQ": adds},
                               {"dQ": 40}, 100, 2048)

    shapes = [shape("a", 10, 50), shape("b", 12, 40), shape("c", 11, 43)]
    assert [s.ok for s in shapes] == [False, True, False]
    report = CudaReport(get_cuda_lab("9a"), False, 1e-7, shapes, {"block_q": 8, "block_kv": 8})
    assert report.lines()[1] == (
        "  Why not yet: the global-memory traffic alone (the values are exact on every shape, with no race, error or "
        "barrier finding). On 2 of 3 shapes your kernel made more atomic adds than the closed form (it moved 21 elements, "
        "the closed form 24): 3 fewer reads of Q; 13 more atomic adds to dQ.")


def test_a_kernel_that_fails_for_another_reason_gets_no_traffic_headline():
    report = grade("7", *MISTAKES["cuda_fa2"]["kv_whole"], seed=1)       # over the shared-memory budget
    assert not report.passed and not any("Why not yet" in line for line in report.lines())


def test_a_report_repr_is_one_line():
    lab = get_cuda_lab("6b")
    report = grade(lab, *lab.reference.values(), seed=3)
    assert repr(report) == f"<CudaReport lab 6b: passed, max error {report.max_error:.1e}, 5/5 shapes ok>"
    failed = grade("6b", get_cuda_lab("6a").reference["row_lse_two_pass"], seed=2)
    assert repr(failed) == f"<CudaReport lab 6b: not yet, max error {failed.max_error:.1e}, 0/5 shapes ok>"
    refused = grade("7", fa2_without_scratch, seed=1)
    assert repr(refused) == "<CudaReport lab 7: not yet, source refused (1 finding)>"
    assert str(report).startswith("Lab 6b, ") and "\n" in str(report)        # the whole report is still str()


@cuda.jit
def fa2_without_scratch(Q, K, V, O, lse, N, N_k, scale, causal):
    O[0, 0] = Q[0, 0]


@cuda.jit
def combine_with_extra(O_part, lse_part, O, lse, num_splits, extra):
    O[0, 0] = O_part[0, 0, 0]


def test_a_kernel_with_the_wrong_parameters_is_told_the_ones_the_lab_passes():
    report = grade("7", fa2_without_scratch, seed=1)
    assert not report.passed and report.shapes == [] and report.score == 0.0
    assert report.source == ["fa2_forward: your kernel takes 9 parameters (Q, K, V, O, lse, N, N_k, scale, causal); "
                             "lab 7 launches it with 10 arguments: fa2_forward(Q, K, V, O, lse, scratch, N, N_k, "
                             "scale, causal)"]
    lab = get_cuda_lab("8")
    report = grade(lab, lab.reference["split_kernel"], combine_with_extra, seed=1)
    assert report.source == ["combine_kernel: your kernel takes 6 parameters (O_part, lse_part, O, lse, num_splits, "
                             "extra); lab 8 launches it with 5 arguments: combine_kernel(O_part, lse_part, O, lse, "
                             "num_splits)"]
    text = "def fa2_forward(Q, K, V, O, lse, N, N_k, scale, causal):\n    O[0, 0] = Q[0, 0]\n"
    assert grade_text("7", text, seed=1).source[0].startswith("fa2_forward: your kernel takes 9 parameters")
    assert lab.kernel_parameters("combine_kernel") == ("O_part", "lse_part", "O", "lse", "num_splits")
    with pytest.raises(ValueError, match="split_kernel, combine_kernel"):
        lab.kernel_parameters("fa2_forward")


@cuda.jit
def lse_that_never_ends(S, lse, N):
    x = 0
    while N > 0:
        x += 1
    lse[0] = x


def test_shapes_skipped_after_a_timeout_say_not_run_without_calling_it_a_failure(monkeypatch):
    from flashbook.labs.cuda import grader

    monkeypatch.setattr(grader, "TIME_LIMIT", 0.2)
    report = grade("6b", lse_that_never_ends, seed=1, threads=2)
    first, *rest = report.shapes
    assert first.ran and "time limit" in first.raised and rest
    assert all(not s.ran and s.raised == "not run: the kernel did not finish an earlier shape" for s in rest)
    lines = report.lines()
    for s in rest:
        assert f"  [no] {s.label}: not run: the kernel did not finish an earlier shape" in lines
    assert "failed: not run" not in str(report) and str(report).count("the kernel failed:") == 1


def _run_cell(source, ns, name):
    """Run ``source`` as a notebook cell runs: IPython registers each cell's text in linecache, so the grader can
    read a kernel's source as it does in a live notebook."""
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    exec(compile(source, name, "exec"), ns)


def _cells(page):
    nb = json.loads((ROOT / "book" / "labs" / f"{page}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def _namespace(page):
    """The page's set-up cell run, as a reader's kernel would see it."""
    ns: dict = {}
    setup = next(c for c in _cells(page) if c.startswith("import cudalab"))
    exec(setup, ns)
    return ns


@pytest.mark.parametrize("page", ["lab6_cuda_softmax", "lab7_cuda_fa2", "lab8_cuda_decoding", "lab9_cuda_backward"])
def test_each_starter_runs_and_is_graded_not_yet_without_blame(page):
    ns = _namespace(page)
    cells = _cells(page)
    for k, cell in enumerate(cells):
        if "@cuda.jit" in cell and "TODO" in cell:
            _run_cell(cell, ns, f"<{page} cell {k}>")
    for cell in cells:
        if cell.startswith("grade("):
            report = eval(cell, ns)
            assert not report.passed and report.feedback == [], str(report)
            assert all(s.raised is None and not s.races and not s.findings for s in report.shapes), str(report)


@pytest.mark.slow   # whole grades in the simulator: make test
@pytest.mark.parametrize("key", ["cuda_softmax_online", "cuda_fa2", "cuda_decoding", "cuda_backward_atomic",
                                 "cuda_backward_deterministic"])
def test_the_shown_solution_passes_when_pasted_into_the_kernel_cell(key):
    lab = get_cuda_lab(key)
    ns: dict = {}
    _run_cell(solution_source(lab), ns, f"<pasted {key}>")
    kernels = [ns[name] for name in lab.kernels]
    params = {k: ns[k.upper()] for k in lab.params}
    assert grade(lab, *kernels, seed=4, **params).passed


@pytest.mark.slow   # whole grades in the simulator: make test
def test_the_atomic_dq_depends_on_the_block_order_and_the_deterministic_one_does_not():
    atomic, det = order_dependence("9a"), order_dependence("9b")
    assert not atomic["identical"] and atomic["differing"]["dQ"] > 0
    assert atomic["max_difference"]["dQ"] < 1e-5            # the last bits only
    assert det["identical"] and det["differing"] == {"dQ": 0, "dK": 0, "dV": 0}


@pytest.mark.slow   # whole grades in the simulator: make test
def test_a_fresh_seed_is_drawn_and_not_shown_unless_the_caller_fixes_one():
    lab = get_cuda_lab("6b")
    a = grade(lab, *lab.reference.values())
    assert a.seed is None and "seed" not in str(a)
    b = grade(lab, *lab.reference.values(), seed=9)
    assert b.seed == 9 and "seed 9" in str(b)


@pytest.mark.slow   # whole grades in the simulator: make test
def test_the_report_as_a_gradebook_row():
    lab = get_cuda_lab("8")
    row = grade(lab, *MISTAKES["cuda_decoding"]["mean_combine"], seed=1).as_dict()
    assert row["lab"] == "cuda_decoding" and row["passed"] is False and 0 <= row["score"] < 1
    assert row["moved"] == row["closed_form"] > 0 and row["shared_peak"] > 0
    assert any("lse weights" in f for f in row["feedback"]) and len(row["shapes"]) == len(lab.shapes)


def test_bad_calls_are_refused_clearly():
    with pytest.raises(ValueError, match="unknown CUDA lab"):
        get_cuda_lab("cuda_nope")
    with pytest.raises(TypeError, match="2 kernel"):
        grade("8", ref_forward.fa2_forward)
    with pytest.raises(TypeError, match="@cuda.jit"):
        grade("7", lambda *a: None)
    with pytest.raises(TypeError, match="unknown parameter"):
        grade("7", ref_forward.fa2_forward, block_n=16)
    with pytest.raises(ValueError, match="power of two"):
        grade("6b", get_cuda_lab("6b").reference["row_lse_online"], threads=24)
    with pytest.raises(TypeError, match="block_q"):
        grade("7", ref_forward.fa2_forward, block_q=2.5)


def test_a_kernel_that_raises_is_reported_not_raised():
    from numba import cuda

    @cuda.jit
    def broken(Q, K, V, O, lse, scratch, N, N_k, scale, causal):
        O[0, 0] = undefined_name  # noqa: F821

    report = grade("7", broken, seed=0)
    assert not report.passed and all("NameError" in s.raised for s in report.shapes)
    assert report.mistakes == set() and np.isinf(report.max_error)


CHEATS = {
    "a private attribute": ("                    s += q[k] * K_s[c, k]", "                    s += q[k] * K._root.flat[0]"),
    "an import": ("    t = cuda.threadIdx.x\n    r0", "    import gc\n    t = cuda.threadIdx.x\n    r0"),
    "getattr": ("    t = cuda.threadIdx.x\n    r0", "    t = getattr(cuda, 'threadIdx').x\n    r0"),
    "a list": ("    m = -math.inf\n    l = 0.0\n    for jb", "    m = -math.inf\n    l = 0.0\n    keep = []\n    for jb"),
    "a module global": ("    t = cuda.threadIdx.x\n    r0", "    t = cuda.threadIdx.x + len(sys.argv)\n    r0"),
}


@pytest.mark.parametrize("what", list(CHEATS))
def test_a_kernel_reaching_past_its_arrays_is_refused_before_it_runs(what):
    old, new = CHEATS[what]
    lab = get_cuda_lab("7")
    src = solution_source(lab)
    assert src.count(old) == 1
    ns: dict = {"sys": __import__("sys")}
    _run_cell(src.replace(old, new), ns, f"<cheat {what}>")
    report = grade(lab, ns["fa2_forward"], seed=1)
    assert not report.passed and report.source and report.shapes == [] and report.score == 0.0
    assert "cannot be graded" in str(report)
    text = src.replace(old, new)
    assert grade_text(lab, text).source                       # the class grader refuses it too


@pytest.mark.slow   # whole grades in the simulator: make test
def test_grade_text_takes_the_kernels_and_their_constants_from_a_file_and_runs_nothing_else(tmp_path):
    lab = get_cuda_lab("7")
    marker = tmp_path / "ran"
    text = (f"open({str(marker)!r}, 'w').write('x')\n" + solution_source(lab)
            .replace("BLOCK_Q = 16 ", "BLOCK_Q = 32 "))
    report = grade_text(lab, text, filename="alice.py", seed=2)
    assert report.passed and report.params["block_q"] == 32 and not marker.exists()
    assert grade_text(lab, "def other(): pass\n").source[0].endswith("(a top-level `def fa2_forward(...)`)")
    row = report.as_row("alice")
    assert row["item"] == "lab7_cuda_fa2" and row["traffic"] == 1.0 and row["on_chip_unit"] == "bytes"


@pytest.mark.parametrize("text", ['{"cells": 5}', '{"cells": [{"cell_type": "code", "source": 5}]}'])
def test_a_malformed_notebook_is_a_finding_of_the_student_not_a_crash(text):
    from flashbook.labs.cuda import grade_text as cuda_grade_text
    from flashbook.labs.grader import grade_text as chip_grade_text

    cuda = cuda_grade_text("7", text, filename="bob.ipynb", seed=1)
    assert not cuda.passed and cuda.source[0].startswith("bob.ipynb: malformed notebook")
    chip = chip_grade_text("fa2_causal", text, filename="bob.ipynb", seed=1)
    assert not chip.passed and chip.findings[0].startswith("bob.ipynb: malformed notebook")
