"""The student edition (issue 22, item 4): no worked solution in the stripped notebooks, no answer or known-mistake
value readable from the forms' source, and the hashed forms grade as the full ones at the statement's rounding,
in Python and in grader.js (under node).

The build of the edition itself (jupyter-book on the stripped copy of page 12) is slow: it runs when
FLASHBOOK_STUDENT_BUILD=1 is set (``make student`` builds the whole book and runs the same scan).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from flashbook import exercises as E
from flashbook.exercises import student as S
from flashbook.exercises.rounding import canonical, rounded

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "book" / "12_exercises.ipynb"
GRADER = ROOT / "flashbook" / "exercises" / "grader.js"
KS = [ex.number for ex in E.EXERCISES]
NODE = shutil.which("node") or "/usr/bin/node"


def _src(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


# ------------------------------------------------------------------------------------- stripped notebooks
def test_stripped_notebook_has_no_solution():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    out = S.strip_solutions(nb)
    text = "\n".join(_src(c) for c in out["cells"])
    assert "{solution" not in text and "with solution_output()" not in text
    assert text.count("```{exercise}") == len(E.EXERCISES)           # every exercise is still there
    assert sum("check(" in _src(c) for c in out["cells"] if c["cell_type"] == "code") == len(E.EXERCISES)
    assert nb["cells"] != out["cells"] and len(out["cells"]) < len(nb["cells"])
    assert S.readable_answers(json.dumps(out), S.answer_texts()) == []
    # the scanner is not blind: the full edition's solution outputs print the answers
    assert S.readable_answers("P: 68.7 GB    L: 4.19 MB; 136.3 MB", S.answer_texts())


def test_strip_handles_gated_blocks_and_inline_directives():
    def md(s):
        return {"cell_type": "markdown", "metadata": {}, "source": s}
    def code(s):
        return {"cell_type": "code", "metadata": {}, "source": s, "outputs": [{"x": 1}], "execution_count": 3}
    nb = {"cells": [md("intro\n\n````{solution} ex-a\n:class: dropdown\n\nsecret 136.3\n```python\nx\n```\n````\nafter"),
                    md("```{solution-start} ex-b\n```\nhidden"), code("print(42)"), md("```{solution-end}\n```"),
                    code("with solution_output():\n    print(1)"), code("check(1, answer)")]}
    out = S.strip_solutions(nb)
    assert [_src(c) for c in out["cells"]] == ["intro\n\nafter", "check(1, answer)"]
    assert out["cells"][1]["outputs"] == [] and out["cells"][1]["execution_count"] is None
    with pytest.raises(ValueError):
        S.strip_solutions({"cells": [md("```{solution-start} ex\n```")]})


def test_student_config_drops_the_launch_buttons():
    cfg = S.student_config((ROOT / "_config.yml").read_text(encoding="utf-8"))
    import yaml

    c = yaml.safe_load(cfg)
    assert "launch_buttons" not in c and c["html"]["use_repository_button"] is False
    assert "student edition" in c["title"] and c["sphinx"]["local_extensions"]


# ---------------------------------------------------------------------------------------- hashed payloads
def _numbers_in_texts(fp) -> set:
    out = set()
    texts = [fp["hint"]] + list(fp["messages"].values())
    for v in fp["variants"]:
        texts += [v["statement"], v["example"]] + [p["label"] for p in v["parts"]]
        for p in v["parts"]:
            texts += [m["feedback"] for m in p["mistakes"]] + [o["text"] for o in p.get("options", [])]
    for t in texts:
        out |= set(re.findall(r"-?\d[\d,]*(?:\.\d+)?", t))
    return out


@pytest.mark.parametrize("k", KS)
def test_student_payload_holds_no_value(k):
    """No reference, tolerance or mistake value in any variant's numeric fields: every number of the payload
    outside its texts is a variant index or a rounding digit."""
    fp = E.form_payload(k, student=True)
    for v in fp["variants"]:
        for p in v["parts"]:
            assert not {"ref", "tol", "tol_text", "value", "answer"} & set(p)
            assert all(set(m) <= {"id", "keys", "feedback"} for m in p["mistakes"])
            if p["kind"] == "choice":
                assert all(set(o) == {"letter", "text"} for o in p["options"])
    shown = _numbers_in_texts(fp)
    text = json.dumps({**fp, "variants": [{**v, "variant": 0, "data": {}} for v in fp["variants"]]})
    own = S.answer_texts([k], range(len(fp["variants"])), min_digits=1)
    leaks = [t for t in S._NUMBER.findall(text) if t in own and t not in shown and S._significant(t) >= 2]
    assert leaks == []


@pytest.mark.parametrize("k", KS)
def test_student_form_html_reads_no_answer(k, monkeypatch):
    monkeypatch.setenv("FLASHBOOK_EDITION", "student")
    html = E.static_form(k).replace(E.GRADER_JS, "")
    assert '"edition": "student"' in html and "Another variant" in html
    assert S.readable_answers(html, S.answer_texts()) == []
    monkeypatch.setenv("FLASHBOOK_EDITION", "full")
    assert S.readable_answers(E.static_form(k), S.answer_texts([k], range(21), 2)), "the full form holds its values"


def _cases(k, fp, plain_fp):
    """(variant index, form inputs, plain-edition verdict) for rounded answers, rounded mistakes, wrong values."""
    ex = E.exercise(k)
    out = []
    for i, (v, pv) in enumerate(zip(fp["variants"], plain_fp["variants"])):
        ref = {p["key"]: (p["answer"] if p["kind"] == "choice" else canonical(ex.part(p["key"]), p["ref"]))
               for p in pv["parts"]}
        out.append((i, ref))
        for p in pv["parts"]:
            if p["kind"] == "choice":
                out += [(i, {**ref, p["key"]: o["letter"]}) for o in p["options"]]
                continue
            part = ex.part(p["key"])
            for m in p["mistakes"]:
                out.append((i, {**ref, p["key"]: repr(rounded(part, m["value"]))}))
            out.append((i, {**ref, p["key"]: repr(rounded(part, 1.7 * p["ref"] + 0.37))}))
            out.append((i, {**ref, p["key"]: "12 MB"}))
            out.append((i, {**ref, p["key"]: ""}))
    return out


def _py_form(pl, form):
    def val(p, s):
        if s == "":
            return None
        if p["kind"] == "choice":
            return s
        try:
            return float(s)
        except ValueError:
            return s
    return E.grade_payload(pl, {p["key"]: val(p, form[p["key"]]) for p in pl["parts"]})


@pytest.mark.parametrize("k", KS)
def test_hashed_forms_grade_like_the_full_ones_in_both_graders(k, tmp_path):
    """For every precomputed variant: an answer at the statement's rounding is right, each known mistake at
    that rounding gets its feedback, a wrong value is "not right", in Python and grader.js, student and full."""
    fp, plain = E.form_payload(k, student=True), E.form_payload(k, student=False)
    def join(f, i):
        return {**{a: b for a, b in f.items() if a != "variants"}, **f["variants"][i]}
    cases = _cases(k, fp, plain)
    py = []
    for i, form in cases:
        hv, pv = _py_form(join(fp, i), form), _py_form(join(plain, i), form)
        assert [(p.key, p.status if p.status != "wrong" else "wrong", p.mistake) for p in hv.parts] == [
            (p.key, p.status, p.mistake) for p in pv.parts], (i, form)
        assert hv.status == pv.status
        py.append({"status": hv.status, "parts": [[p.key, p.status, p.mistake] for p in hv.parts], "message": hv.message})
    statuses = {s for r in py for s in [r["status"]]}
    assert {"correct", "wrong", "malformed"} <= statuses and ("incomplete" in statuses or len(fp["variants"][0]["parts"]) == 1)
    script = tmp_path / "run.js"
    script.write_text(f"const g = require({json.dumps(str(GRADER))});\n" + r"""
const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(d.cases.map(c => {
  const v = g.fbGrade(g.fbVariant(d.fp, c[0]), c[1]);
  return {status: v.status, parts: v.parts.map(p => [p.key, p.status, p.mistake]), message: v.message};
})));""")
    res = subprocess.run([NODE, str(script)], input=json.dumps({"fp": fp, "cases": cases}), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    js = json.loads(res.stdout)
    for r in js + py:
        if r["status"] == "not_attempted":
            r["parts"] = []
    assert js == py


def test_js_canonical_and_digest_match_python(tmp_path):
    from flashbook.exercises.model import Part
    from flashbook.exercises.rounding import digest

    parts = [Part("a", "a", atol=1, decimals=d) for d in (0, 1, 3)] + [Part("b", "b", rtol=1e-2, digits=g) for g in (2, 3)]
    xs = [68.157, 68.15, 0.125, 0.0, -0.0004, -2.25, 1355.38, 99.96, 1e-7, 4.3, 0.515625, 123456.789, 2.5, 1.005]
    want = [[canonical(p, x) for x in xs] for p in parts]
    script = tmp_path / "c.js"
    script.write_text(f"const g = require({json.dumps(str(GRADER))});\n" + r"""
const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify({c: d.r.map(r => d.xs.map(x => g.fbCanonical(r, x))),
                                     h: d.t.map(t => g.fbDigest('s/v1/k', t))}));""")
    texts = ["68.2", "µs", "", "x" * 200]
    res = subprocess.run([NODE, str(script)], input=json.dumps({"r": [p.rounding for p in parts], "xs": xs, "t": texts}),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["c"] == want
    assert out["h"] == [digest("s/v1/k", t) for t in texts]


def test_the_edition_variable(monkeypatch):
    from flashbook.exercises import keys

    monkeypatch.delenv("FLASHBOOK_EDITION", raising=False)
    assert keys.edition() == "full" and not keys.student_edition()
    monkeypatch.setenv("FLASHBOOK_EDITION", "student")
    assert keys.student_edition()
    monkeypatch.setenv("FLASHBOOK_EDITION", "teacher")
    with pytest.raises(ValueError):
        keys.edition()


def test_live_check_still_works_in_the_student_edition(monkeypatch, capsys):
    monkeypatch.setenv("FLASHBOOK_EDITION", "student")
    assert E.check(2, 136.3).correct and "Correct!" in capsys.readouterr().out
    with E.solution_output():
        print("136.3 MB")
    # solution_output withholds the printed solution (IPython display is captured as text by pytest)
    assert "136.3" not in capsys.readouterr().out


# --------------------------------------------------------------------------------------- the slow build
@pytest.mark.skipif(os.environ.get("FLASHBOOK_STUDENT_BUILD") != "1",
                    reason="builds the student edition of page 12 (minutes): set FLASHBOOK_STUDENT_BUILD=1")
def test_student_build_of_page_12(tmp_path):
    html = S.build(ROOT, tmp_path / "student", pages=["book/12_exercises"])
    page = (html / "book" / "12_exercises.html").read_text(encoding="utf-8")
    assert page.count('class="fb-exercise-form"') == len(E.EXERCISES) and "Another variant" in page
    assert '"edition": "student"' in page and "fb-solution" not in page and "solution-start" not in page
    assert "Show the worked solution" not in page
    assert S.scan(tmp_path / "student") == []          # html, _sources, the executed notebooks
    assert (html / "_sources" / "book" / "12_exercises.ipynb").exists()
