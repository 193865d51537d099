"""Variants of the exercises: variant 0 is the lecture's exercise unchanged, and every other
variant keeps the statement meaningful, its reference accepted and each known mistake recognised, at the
statement's rounding, in both graders (the JavaScript side: test_exercises_js.py and test_student_edition.py).

tests/exercise_variant0.json is the payload of every exercise before variants existed (statement, labels,
reference values, mistake values and feedback, options): variant 0 must reproduce it exactly.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashbook import exercises as E
from flashbook.exercises import variants as V
from flashbook.exercises.rounding import canonical, rounded, windows

KS = [ex.number for ex in E.EXERCISES]
SEEDS = list(range(1, 41))
SNAPSHOT = json.loads((Path(__file__).parent / "exercise_variant0.json").read_text(encoding="utf-8"))


def _ref_answer(pl):
    return {p["key"]: (p["answer"] if p["kind"] == "choice" else p["ref"]) for p in pl["parts"]}


# ------------------------------------------------------------------------------------- variant 0 = today
@pytest.mark.parametrize("k", [k for k in KS if str(k) in SNAPSHOT])     # later exercises: their own tests
def test_variant0_is_the_lecture_exercise(k):
    old, pl = SNAPSHOT[str(k)], E.payload(k)
    assert pl["statement"] == old["statement"] == E.exercise(k).statement() == E.exercise(k).statement(variant=0)
    assert (pl["title"], pl["hint"], pl["data"], pl["variant"]) == (old["title"], old["hint"], old["data"], 0)
    for p, q in zip(pl["parts"], old["parts"], strict=True):
        assert (p["key"], p["label"], p["unit"]) == (q["key"], q["label"], q["unit"])
        if p["kind"] == "choice":
            assert (p["answer"], p["options"]) == (q["answer"], q["options"])
        else:
            assert p["ref"] == q["ref"]
            assert [(m["id"], m["value"], m["feedback"]) for m in p["mistakes"]] == [
                (m["id"], m["value"], m["feedback"]) for m in q["mistakes"]]
    assert E.reference(k) == E.reference(k, variant=0) == _ref_answer(pl)


def test_variant0_tolerances_only_widen():
    """Deriving the windows from the rounding never narrows a window the lecture's exercise had."""
    for k in KS:
        for p in E.payload(k)["parts"]:
            if p["kind"] == "number":
                ex_part = E.exercise(k).part(p["key"])
                assert p["tol"] >= max(ex_part.atol, ex_part.rtol * abs(p["ref"]))


# ------------------------------------------------------------------------------------------ the variants
@pytest.mark.parametrize("k", KS)
def test_variant_parameters_stay_in_range(k):
    ex = E.exercise(k)
    assert set(ex.ranges) <= set(ex.params)
    ref0, ctx0 = ex.compute()
    assert ex.valid(ex.params, ref0, ctx0), "the lecture's own numbers must satisfy the definition's relations"
    seen = set()
    for s in SEEDS:
        p = V.params(ex, s)
        assert set(p) == set(ex.params)
        for name, allowed in ex.ranges.items():
            assert p[name] in allowed, (s, name, p[name])
        ref, ctx = ex.compute(p)
        assert ex.valid(p, ref, ctx), (s, p)
        seen.add(json.dumps(p, sort_keys=True))
    assert len(seen) >= 10, f"exercise {k}: only {len(seen)} distinct variants in {len(SEEDS)} seeds"


@pytest.mark.parametrize("k", KS)
def test_every_variant_grades_its_reference_and_mistakes(k):
    """For many seeds: the reference passes (as computed and rounded as asked), each known mistake gets its own
    feedback (as computed and rounded as asked), and no two windows overlap."""
    ex = E.exercise(k)
    for s in [0] + SEEDS:
        pl = E.payload(k, s)
        ref = _ref_answer(pl)
        assert E.check(k, ref, variant=s, quiet=True).status == "correct", (s, pl["statement"])
        rounded_ref = {p["key"]: (ref[p["key"]] if p["kind"] == "choice"
                                  else rounded(ex.part(p["key"]), p["ref"])) for p in pl["parts"]}
        assert E.check(k, rounded_ref, variant=s, quiet=True).status == "correct", (s, rounded_ref)
        for p in pl["parts"]:
            if p["kind"] != "number":
                continue
            wins = [(p["ref"], p["tol"])] + [(m["value"], m["tol"]) for m in p["mistakes"]]
            for i, (va, ta) in enumerate(wins):
                for vb, tb in wins[i + 1:]:
                    assert abs(va - vb) > ta + tb, (s, p["key"])
            for m in p["mistakes"]:
                for x in (m["value"], rounded(ex.part(p["key"]), m["value"])):
                    v = E.check(k, {**ref, p["key"]: x}, variant=s, quiet=True)
                    assert v.mistakes() == [m["id"]] and m["feedback"] in v.message, (s, m["id"], x, v.message)


def test_variants_differ_from_the_lecture_and_name_their_numbers():
    st2 = E.exercise(2).statement(variant=5)
    p = V.params(E.exercise(2), 5)
    assert f"N = {p['N']}, d = {p['d']}" in st2
    assert E.reference(2, 5)["MB"] == pytest.approx(2 * (4 * p["N"] * p["d"] + 4 * p["N"] ** 2) / 1e6)
    assert any(E.exercise(k).statement(variant=7) != E.exercise(k).statement() for k in KS)
    # exercise 3's statement says "Same head" only for the lecture's head (exercise 2's, variant 0)
    assert E.exercise(3).statement().startswith("Same head") and E.exercise(3).statement(variant=3).startswith("One head")
    # exercise 12's labels name the variant's block counts
    p12 = V.params(E.exercise(12), 4)
    assert [q["label"] for q in E.payload(12, 4)["parts"]] == [f"{p12['a']} blocks", f"{p12['b']} blocks"]


def test_check_with_a_variant(capsys):
    ref = E.reference(2, 9)
    v = E.check(2, ref["MB"], variant=9)
    assert v.correct and capsys.readouterr().out.startswith("Exercise 2 (HBM traffic of standard attention, variant 9): Correct!")
    wrong = E.check(2, E.reference(2)["MB"], variant=9, quiet=True)   # the lecture's answer to another variant
    assert wrong.status == "wrong" or E.reference(2) == ref
    for bad in (-1, 1.5, "3", True, None):
        v = E.check(2, 1.0, variant=bad, quiet=True)
        assert v.status == "malformed" and "variant" in v.message, bad
    with pytest.raises(ValueError):
        E.exercise(2).statement(variant=-1)


def test_show_exercise_prints_the_variants_numbers(capsys):
    E.show_exercise(6, variant=3)
    out = capsys.readouterr().out
    p = V.params(E.exercise(6), 3)
    assert out.startswith("Exercise 6 (The identity behind D), variant 3:")
    assert f"Example: P_i = {p['P_i']}, V = {p['V']}, dO_i = {p['dO_i']}." in out
    assert "check(6, answer, variant=3)" in out and "to 3 decimals" in out
    E.show_exercise(9)
    out = capsys.readouterr().out
    assert E.exercise(9).statement() in out and "variant" not in out.split("\n")[0]


def test_variants_are_the_same_in_a_fresh_process():
    """A variant is a pure function of (exercise, seed): another process with another hash seed agrees."""
    code = ("import json, flashbook.exercises as E; "
            "print(json.dumps([E.reference(k, s) for k in range(1, 14) for s in (1, 17, 123456)]))")
    env = {**os.environ, "PYTHONHASHSEED": "987"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [E.reference(k, s) for k in range(1, 14) for s in (1, 17, 123456)]


def test_the_rounding_rules():
    from flashbook.exercises.model import Part

    one = Part("x", "x", atol=0.06, decimals=1)
    three = Part("y", "y", rtol=1e-2, digits=3)
    assert [canonical(one, v) for v in (68.157, 68.15, 0.04, -0.04, -2.25, 1350.0)] == [
        "68.2", "68.2", "0", "0", "-2.3", "1350.0"]      # 68.15 is 68.150000000000005684...: up
    assert [canonical(three, v) for v in (68.157, 1350.0, 0.000123456, 99.96, 0.0)] == [
        "6.82e+1", "1.35e+3", "1.23e-4", "1.00e+2", "0"]
    assert canonical(one, 0.25) == "0.3" and canonical(Part("z", "z", atol=1, decimals=2), 0.125) == "0.13"  # ties up
    # the window of exercise 2's "elements, not bytes": 68.157 at one decimal is 68.2, inside the window
    ex = E.exercise(2)
    ref, ctx = ex.compute()
    (m, v, tol), = [w for w in windows(ex, ref, ctx)["MB"]["mistakes"] if w[0].id == "elements_not_bytes"]
    assert v == pytest.approx(68.15744) and abs(68.2 - v) <= tol < 0.05
    with pytest.raises(ValueError):
        Part("bad", "bad", atol=1.0)                  # no rounding
    with pytest.raises(ValueError):
        Part("bad", "bad", atol=1.0, decimals=1, digits=3)
