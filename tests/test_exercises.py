"""All the exercises: references match the lecture, known mistakes get their feedback, the stub and bad
input get friendly messages, the static forms are reproducible, and the book's exercise titles are the
definitions' titles. The JavaScript grader of the static forms is tested in test_exercises_js.py."""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flashbook import exercises as E

KS = [ex.number for ex in E.EXERCISES]


def _payload(k):
    """The payload of exercise ``k`` (never skipped: a missing labcore reference fails the import itself)."""
    return E.payload(k)


def _ref_answer(pl):
    return {p["key"]: (p["answer"] if p["kind"] == "choice" else p["ref"]) for p in pl["parts"]}


# ----------------------------------------------------------------------------- the lecture's answers (§12)
LECTURE = {  # exercise: {part: (lecture value, absolute tolerance at the lecture's rounding)}
    1: {"m1": (3, 1e-12), "l1": (1.1353, 5e-5), "m2": (5, 1e-12), "l2": (1.2034, 5e-5)},
    2: {"MB": (136.3, 0.05)},
    3: {"MB": (35.3, 0.05), "ratio": (3.9, 0.05)},
    4: {"fraction": (0.516, 5e-4)},
    5: {"P_GB": (68.7, 0.05), "L_MB": (4.2, 0.05)},
    6: {"D": (4.3, 1e-12)},
    7: {"pct": (16, 0.5)},
    8: {"GFLOP": (4.29, 0.005), "ms": (2.13, 0.02)},
    10: {"layer_MB": (537, 0.5), "total_GB": (17.2, 0.05), "ms": (5.1, 0.05)},
    11: {"fps": (1350, 15), "util_pct": (62, 0.5)},  # lecture: 2.48 GB; the preset: 2.47 GB
    12: {"util192_pct": (73, 0.5), "util128_pct": (97, 0.5)},
    14: {"launch": (8, 1e-9), "lpt": (6, 1e-9), "gain_pct": (33.3, 0.05)},
    15: {"flops_pct": (66.8, 0.05), "empty": (544, 1e-9)},
    18: {"adds_M": (8.65, 0.005), "rmw_MB": (69.2, 0.05)},
    19: {"pages": (183, 1e-9), "wasted": (47, 1e-9), "waste_pct": (1.61, 0.005)},
}


@pytest.mark.parametrize("k", sorted(LECTURE))
def test_reference_matches_lecture(k):
    pl = _payload(k)
    ref = _ref_answer(pl)
    for key, (want, tol) in LECTURE[k].items():
        assert abs(ref[key] - want) <= tol, (k, key, ref[key], want)


def test_ex9_32_splits_beat_64_by_a_wave():
    pl = _payload(9)
    ref = _ref_answer(pl)
    assert ref["t32_us"] < ref["t64_us"]
    _, ctx = E.exercise(9).compute()
    assert ctx["est32"].num_ctas == 64 and ctx["est64"].num_ctas == 128
    assert math.ceil(ctx["est32"].waves) == 1 and math.ceil(ctx["est64"].waves) == 2


def test_ex13_from_the_per_sm_rates():
    """B200, BF16, M = N = 128, d = 64: the cycles of each unit from the preset's per-SM rates."""
    import labcore

    pl = _payload(13)
    ref = _ref_answer(pl)
    g = labcore.get_gpu("B200")
    M = N = 128
    d = 64
    mma = 4 * M * N * d / g.tensor_flop_per_clock_per_sm
    exp = M * N / g.exp_ops_per_clock_per_sm
    smem = 2 * 3 * M * N * d / 128 / g.smem_bytes_per_clock_per_sm
    assert exp > mma > smem and ref["bound"] == "B"          # the exponential unit alone bounds the tile
    assert ref["excess_pct"] == pytest.approx(100 * (exp / mma - 1), abs=1e-9)
    assert ref["share_pct"] == pytest.approx(100 * (1 - mma / exp), abs=1e-9)
    # the emulated share leaves exactly the MMA cycles on the exponential unit
    assert (1 - ref["share_pct"] / 100) * exp == pytest.approx(mma)
    # at the paper's d = 128 the two units tie (FlashAttention-4 Table 1): no share is needed
    _, ctx = E.exercise(13).compute()
    assert ctx["tile_d128"].mma == ctx["tile_d128"].exp and ctx["tile_d128"].bound == "MMA = exp"
    wrong = E.check(13, {**ref, "bound": "D"}, quiet=True)
    assert wrong.status == "wrong" and wrong.mistakes() == ["option_D"]


# ------------------------------------------------------------------------------------- the definitions
@pytest.mark.parametrize("k", KS)
def test_definition_is_complete(k):
    ex = E.exercise(k)
    assert ex.number == k and ex.label.startswith("ex-") and ex.statement and ex.hint
    numeric = [p for p in ex.parts if p.kind == "number"]
    assert len(ex.mistakes) >= 2 if numeric else True
    assert {m.part for m in ex.mistakes} <= set(ex.keys())
    assert len({m.id for m in ex.mistakes}) == len(ex.mistakes)
    for p in numeric:
        assert p.rtol > 0 or p.atol > 0


def test_labels_unique():
    assert len({e.label for e in E.EXERCISES}) == len(E.EXERCISES)


@pytest.mark.parametrize("k", KS)
def test_windows_are_disjoint(k):
    """No known mistake can be confused with the reference or with another mistake."""
    pl = _payload(k)
    for p in pl["parts"]:
        if p["kind"] != "number":
            continue
        wins = [("ref", p["ref"], p["tol"])] + [(m["id"], m["value"], m["tol"]) for m in p["mistakes"]]
        for i, (a, va, ta) in enumerate(wins):
            assert math.isfinite(va)
            for b, vb, tb in wins[i + 1:]:
                assert abs(va - vb) > ta + tb, f"exercise {k}, part {p['key']}: {a} and {b} overlap"


# ------------------------------------------------------------------------------------------- the grader
@pytest.mark.parametrize("k", KS)
def test_reference_accepted(k, capsys):
    pl = _payload(k)
    ans = _ref_answer(pl)
    v = E.check(k, ans)
    assert v.status == "correct", v.message
    assert "Correct!" in capsys.readouterr().out
    if len(ans) > 1:   # the same as a tuple in part order
        assert E.check(k, tuple(ans.values()), quiet=True).status == "correct"
    else:
        assert E.check(k, next(iter(ans.values())), quiet=True).status == "correct"


@pytest.mark.parametrize("k", KS)
def test_known_mistakes_get_their_feedback(k):
    pl = _payload(k)
    n = 0
    for p in pl["parts"]:
        for m in p.get("mistakes", []):
            ans = {**_ref_answer(pl), p["key"]: m["value"]}
            v = E.check(k, ans, quiet=True)
            assert v.status == "wrong" and v.mistakes() == [m["id"]], (m["id"], v.message)
            assert m["feedback"] in v.message
            n += 1
        for o in p.get("options") or []:
            if o["letter"] != p["answer"]:
                v = E.check(k, {**_ref_answer(pl), p["key"]: o["letter"].lower()}, quiet=True)
                assert v.status == "wrong" and o["feedback"] in v.message
    assert n >= 2


@pytest.mark.parametrize("k", KS)
def test_random_wrong_value(k):
    pl = _payload(k)
    p = next(p for p in pl["parts"] if p["kind"] == "number")
    wins = [(m["value"], m["tol"]) for m in p["mistakes"]]
    x = next(x for x in (p["ref"] * f + 0.731 for f in (1.53, 1.91, 2.37, 3.1))
             if all(abs(x - v) > t for v, t in wins))
    ans = {**_ref_answer(pl), p["key"]: x}
    v = E.check(k, ans, quiet=True)
    assert v.status == "wrong" and v.mistakes() == []
    assert "too high" in v.message


@pytest.mark.parametrize("k", KS)
def test_stub_not_attempted(k):
    v = E.check(k, None, quiet=True)
    assert v.status == "not_attempted"
    assert "Not attempted" in v.message and E.exercise(k).hint in v.message


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("bad", ["136.3", [1.0, 2.0, 3.0, 4.0, 5.0], np.zeros((2, 2)), float("nan"),
                                 float("inf"), True, {"nope": 1}, object()])
def test_malformed_input_is_friendly(k, bad, capsys):
    _payload(k)
    v = E.check(k, bad)
    assert v.status == "malformed", v.message
    out = capsys.readouterr().out
    assert "Traceback" not in out and out.strip()


@pytest.mark.parametrize("k", [2, 7])
def test_nan_part_and_string_part(k):
    key = E.exercise(k).keys()[0]
    assert E.check(k, {key: float("nan")}, quiet=True).status == "malformed"
    assert "plain number" in E.check(k, {key: "12 MB"}, quiet=True).message


def test_partial_answer_is_incomplete():
    pl = _payload(5)
    v = E.check(5, {"P_GB": _ref_answer(pl)["P_GB"]}, quiet=True)
    assert v.status == "incomplete"


def test_bad_exercise_number():
    n = E.EXERCISES[-1].number
    for k in (0, n + 1, "1", 2.5, None):
        v = E.check(k, 1.0, quiet=True)
        assert v.status == "malformed" and E.definitions.number_range() in v.message
    assert E.definitions.number_range().startswith("1..") and E.definitions.number_range().endswith(f"..{n}")
    with pytest.raises(ValueError):
        E.exercise(n + 1)


def test_choice_part_letters():
    pl = _payload(9)
    ref = _ref_answer(pl)
    assert E.check(9, {**ref, "cause": "Z"}, quiet=True).status == "malformed"
    assert E.check(9, {**ref, "cause": " a "}, quiet=True).status == "correct"


# -------------------------------------------------------------------------------- exercise 6: a function
def test_ex6_function_graded_numerically():
    assert E.check(6, lambda O, dO: np.sum(dO * O, axis=1), quiet=True).status == "correct"
    assert E.check(6, lambda O, dO: np.einsum("ik,ik->i", dO, O)[:, None], quiet=True).status == "correct"
    cases = {
        "wrong_axis": lambda O, dO: np.sum(dO * O, axis=0),
        "full_matrix": lambda O, dO: dO @ O.T,
        "scalar": lambda O, dO: float(np.sum(dO * O)),
        "prod_of_sums": lambda O, dO: dO.sum(1) * O.sum(1),
        "mismatch": lambda O, dO: np.sum(dO * O, axis=1) + 1.0,
    }
    for mid, fn in cases.items():
        v = E.check(6, fn, quiet=True)
        assert v.status == "wrong" and v.mistakes() == [mid], (mid, v.message)


def test_ex6_reader_exceptions_are_reported():
    def boom(O, dO):
        raise KeyError("oops")

    v = E.check(6, boom, quiet=True)
    assert v.status == "malformed" and "KeyError" in v.message
    assert E.check(6, lambda O, dO: "text", quiet=True).status == "malformed"
    assert E.check(2, lambda O, dO: 1, quiet=True).status == "malformed"


def test_ex6_identity_holds_in_labcore_backward():
    """D_i = dO_i . O_i is what flash_attention_backward relies on (the reference of exercise 6)."""
    rng = np.random.default_rng(0)
    from labcore.attention import masked_scores, row_softmax

    Q, K, V, dO = (rng.standard_normal(s) for s in [(6, 4), (9, 4), (9, 3), (6, 3)])
    P, _ = row_softmax(masked_scores(Q, K))
    assert np.allclose(np.sum((dO @ V.T) * P, 1), np.sum(dO * (P @ V), 1), rtol=1e-12)


# ------------------------------------------------------------------------------------ the static form
@pytest.mark.parametrize("k", KS)
def test_static_form_is_self_contained(k):
    _payload(k)
    html = E.static_form(k)
    assert html.startswith("<form") and "fbGrade" in html and "<script" in html
    if True:
        assert "fb-ex-payload" in html and "</script>" in html and "Check</button>" in html
        assert html.count("<script") == 2 and "http" not in html.split("fb-ex-payload", 1)[1].split("</script>")[0]


@pytest.mark.parametrize("k", [ex.number for ex in E.EXERCISES if any(p.kind == "choice" for p in ex.parts)])
def test_choice_labels_look_like_the_other_labels(k):
    """A choice part's label ("bounding unit", "why") is a <legend>, which the book's theme sets in heading
    type: its inline style brings it back to body text, written "label:" like a numeric part's label."""
    html = E.static_form(k)
    legends = re.findall(r'<legend style="([^"]*)">([^<]*)</legend>', html)
    choices = [p.label for p in E.exercise(k).parts if p.kind == "choice"]
    assert [text for _, text in legends] == [f"{lab}:" for lab in choices]
    for style, _ in legends:
        assert "font-size:inherit" in style and "font-weight:inherit" in style and "float:none" in style
    assert "<h" not in html.split("<script", 1)[0]


def test_static_mode_check_shows_form(monkeypatch, capsys):
    monkeypatch.setenv("FLASHBOOK_STATIC", "1")
    v = E.check(2, None)
    assert v.status == "not_attempted" and capsys.readouterr().out == ""


def _form_ids(html):
    return re.findall(r'<form class="fb-exercise-form" id="([^"]+)"', html)


def test_static_forms_are_reproducible():
    """Two builds of the same commit give the same HTML: the form ids come from content, never uuid4."""
    forms = {}
    for k in KS:
        _payload(k)
        first, second = E.static_form(k), E.static_form(k)
        assert first == second, f"exercise {k}: two builds of the form differ"
        (uid,) = _form_ids(first)
        assert re.fullmatch(rf"fb-ex{k}-[0-9a-f]{{10}}", uid), uid
        forms[k] = first
    ids = [_form_ids(h)[0] for h in forms.values()]
    assert len(set(ids)) == len(ids)
    # the same bytes in a fresh interpreter with another hash seed (a second book build is a new process)
    code = ("import hashlib, flashbook.exercises as E; "
            f"print(' '.join(hashlib.sha256(E.static_form(k).encode()).hexdigest() for k in {sorted(forms)}))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [hashlib.sha256(forms[k].encode()).hexdigest() for k in sorted(forms)]


def test_form_id_follows_the_payload(monkeypatch):
    """A changed reference (another preset, another tolerance) gives another id; the number stays in it."""
    before = _form_ids(E.static_form(2))[0]
    real = E.payload

    def shifted(k, *args, **kw):
        pl = real(k, *args, **kw)
        pl["parts"][0]["ref"] += 1.0
        return pl

    monkeypatch.setattr(E.form, "payload", shifted)
    after = _form_ids(E.static_form(2))[0]
    assert after != before and after.startswith("fb-ex2-")


# ----------------------------------------------------------------------------------- one source for titles
NOTEBOOK = Path(__file__).resolve().parents[1] / "book" / "12_exercises.ipynb"


def _notebook_exercise_titles() -> dict:
    """{label: title} of every ``{exercise}`` directive in the exercises notebook."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    found = re.findall(r"^```\{exercise\}[ \t]*(.*?)[ \t]*\n:label:[ \t]*(\S+)", text, flags=re.M)
    return {label: title for title, label in found}


def test_notebook_titles_are_the_definitions_titles():
    titles = _notebook_exercise_titles()
    assert len(titles) == len(E.EXERCISES), sorted(titles)
    assert titles == {ex.label: ex.title for ex in E.EXERCISES}


@pytest.mark.parametrize("k", [3, 4, 5, 6, 10])
def test_grader_messages_use_the_same_title(k):
    ex = E.exercise(k)
    assert "$" not in ex.plain_title
    pl = _payload(k)
    assert pl["title"] == ex.plain_title
    v = E.check(k, _ref_answer(pl), quiet=True)
    assert v.message.startswith(f"Exercise {k} ({ex.plain_title}): Correct!")
    bad = E.check(k, [1.0] * 7, quiet=True)
    assert bad.message.startswith(f"Exercise {k} ({ex.plain_title}): ")


# ------------------------------------------------------------ known mistakes typed at the statement's rounding
def test_ex2_elements_not_bytes_at_one_decimal():
    """The readers' report: counting elements and answering to one decimal, as asked, types 68.2."""
    for typed in (68.2, 68.16, 68.157):
        v = E.check(2, typed, quiet=True)
        assert v.mistakes() == ["elements_not_bytes"], (typed, v.message)
        assert "number of elements" in v.message


@pytest.mark.parametrize("k", KS)
def test_known_mistakes_at_the_statements_rounding(k):
    """Each known mistake's value rounded as the statement asks (one decimal, three decimals, 3 significant
    digits, ...) gets its own feedback, and so does the reference rounded the same way."""
    from flashbook.exercises.rounding import canonical

    ex = E.exercise(k)
    pl = _payload(k)
    ref = _ref_answer(pl)
    asked = {p["key"]: (ref[p["key"]] if p["kind"] == "choice" else float(canonical(ex.part(p["key"]), p["ref"])))
             for p in pl["parts"]}
    assert E.check(k, asked, quiet=True).status == "correct"
    for p in pl["parts"]:
        for m in p.get("mistakes", []):
            typed = float(canonical(ex.part(p["key"]), m["value"]))
            v = E.check(k, {**ref, p["key"]: typed}, quiet=True)
            assert v.mistakes() == [m["id"]] and m["feedback"] in v.message, (m["id"], typed, v.message)
