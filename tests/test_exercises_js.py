"""The browser grader (flashbook/exercises/grader.js) as JavaScript: it parses, it is what the forms inline and
what the wheel ships, and under node it gives the same verdicts as the Python grader on the same inputs."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from flashbook import exercises as E

KS = [ex.number for ex in E.EXERCISES]
GRADER = Path(str(resources.files("flashbook.exercises").joinpath("grader.js")))
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def node():
    exe = shutil.which("node") or ("/usr/bin/node" if Path("/usr/bin/node").exists() else None)
    assert exe is not None, "node is not installed: the JavaScript grader of the static book cannot be tested"
    return exe


def _run(node, tmp_path, body: str, stdin: str) -> str:
    """Run ``body`` under node with ``g`` bound to the grader module; return its stdout."""
    script = tmp_path / "run.js"
    script.write_text(f"const g = require({json.dumps(str(GRADER))});\n" + body)
    res = subprocess.run([node, str(script)], input=stdin, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _ref_answer(pl):
    return {p["key"]: (p["answer"] if p["kind"] == "choice" else p["ref"]) for p in pl["parts"]}


# ------------------------------------------------------------------------------------- the file itself
def test_grader_js_parses(node):
    res = subprocess.run([node, "--check", str(GRADER)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr


def test_grader_js_exports_and_is_strict(node, tmp_path):
    out = _run(node, tmp_path, "process.stdout.write(JSON.stringify(Object.keys(g).sort()));", "")
    assert json.loads(out) == ["fbAttachForm", "fbCanonical", "fbDigest", "fbGrade", "fbParse", "fbSha256",
                               "fbShowVariant", "fbSub", "fbVariant"]
    code = "\n".join(ln for ln in GRADER.read_text(encoding="utf-8").splitlines() if not ln.startswith("//"))
    assert code.lstrip().startswith("'use strict';")


def test_forms_inline_the_shipped_file():
    text = GRADER.read_text(encoding="utf-8")
    assert E.GRADER_JS == text
    assert "<script" not in text and "</" not in text   # safe to inline in a script element
    assert "require(" not in text and "import " not in text   # dependency-free
    html = E.static_form(2)
    assert text in html


def test_wheel_ships_the_grader():
    """pyproject.toml lists the package and its .js as package data, so a non-editable install has it."""
    tomllib = pytest.importorskip("tomllib")
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    from setuptools import find_packages

    assert "flashbook.exercises" in find_packages(str(ROOT), include=cfg["packages"]["find"]["include"])
    globs = cfg["package-data"]["flashbook.exercises"]
    pkg = ROOT / "flashbook" / "exercises"
    shipped = [f.name for f in pkg.iterdir() if f.is_file() and f.suffix not in (".py", ".pyc")]
    assert shipped == ["grader.js"]
    assert all(any(Path(name).match(g) for g in globs) for name in shipped)


# ------------------------------------------------------------------------------- the same verdicts as Python
def _cases():
    """(k, python answer, per-part strings for the form) for every exercise that can be graded here."""
    rng = np.random.default_rng(7)
    out = []
    for k in KS:
        pl = E.payload(k)
        ref = _ref_answer(pl)
        variants = [ref, {key: None for key in ref}]
        for p in pl["parts"]:
            for m in p.get("mistakes", []):
                variants.append({**ref, p["key"]: m["value"]})
            if p["kind"] == "number":
                variants.append({**ref, p["key"]: p["ref"] * float(rng.uniform(1.2, 3.0))})
                variants.append({**ref, p["key"]: -p["ref"] * float(rng.uniform(0.2, 0.9))})
            else:
                variants += [{**ref, p["key"]: o["letter"]} for o in p["options"]]
                variants += [{**ref, p["key"]: s} for s in (" a ", "b", "Z", "AB")]
        variants.append({**{key: None for key in ref}, pl["parts"][0]["key"]: ref[pl["parts"][0]["key"]]})
        for ans in variants:
            form = {key: ("" if v is None else (v if isinstance(v, str) else repr(float(v))))
                    for key, v in ans.items()}
            out.append((k, ans, form))
        out.append((k, None, {key: "" for key in ref}))
    return out


def _py(v):
    return {"status": v.status, "parts": [[p.key, p.status, p.mistake] for p in v.parts], "message": v.message}


def test_js_grader_agrees_with_python(node, tmp_path):
    cases = _cases()
    assert len({c[0] for c in cases}) == len(KS)
    payloads = {k: E.payload(k) for k in {c[0] for c in cases}}
    stdin = json.dumps({"payloads": {str(k): pl for k, pl in payloads.items()},
                        "cases": [{"k": str(k), "form": form} for k, ans, form in cases]})
    out = _run(node, tmp_path, r"""
const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = data.cases.map(c => {
  const v = g.fbGrade(data.payloads[c.k], c.form);
  return {status: v.status, parts: v.parts.map(p => [p.key, p.status, p.mistake]), message: v.message};
});
process.stdout.write(JSON.stringify(out));
""", stdin)
    js = json.loads(out)
    assert len(js) == len(cases)
    statuses = set()
    for (k, ans, form), j in zip(cases, js):
        py = _py(E.check(k, ans, quiet=True))
        if py["status"] == "not_attempted":   # the stub: same message; Python lists no parts
            j["parts"] = []
        assert py == j, (k, ans, form)
        statuses.add(py["status"])
    assert {"correct", "wrong", "not_attempted", "incomplete", "malformed"} <= statuses


def _forms(pl, rng):
    """Form inputs for one payload: the reference, each known mistake, a value above and below, unreadable text,
    nothing, and the first part alone."""
    ref = {p["key"]: (p["answer"] if p["kind"] == "choice" else repr(float(p["ref"]))) for p in pl["parts"]}
    first = pl["parts"][0]["key"]
    out = [ref, {key: "" for key in ref}, {**{key: "" for key in ref}, first: ref[first]}]
    for p in pl["parts"]:
        if p["kind"] == "choice":
            out += [{**ref, p["key"]: o["letter"]} for o in p["options"]] + [{**ref, p["key"]: "Z"}]
            continue
        out += [{**ref, p["key"]: repr(float(m["value"]))} for m in p["mistakes"]]
        out += [{**ref, p["key"]: repr(float(p["ref"] * rng.uniform(1.2, 3.0) + 1))},
                {**ref, p["key"]: repr(float(-abs(p["ref"]) * rng.uniform(0.2, 0.9) - 1))},
                {**ref, p["key"]: "12 MB"}]
    return out


def _grade_py(pl, form):
    """The Python grader on the form's text, read as grader.js reads it (empty: None; a number part's text
    that float() reads: a float, else unreadable)."""
    values = {}
    for p in pl["parts"]:
        t = form[p["key"]].strip()
        if not t:
            values[p["key"]] = None
        elif p["kind"] == "choice":
            values[p["key"]] = t
        else:
            try:
                values[p["key"]] = float(t)
            except ValueError:
                values[p["key"]] = t
    return _py(E.grade_payload(pl, values))


def _grade_js(node, tmp_path, fps: dict, cases: list) -> list:
    out = _run(node, tmp_path, r"""
const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(d.cases.map(c => {
  const v = g.fbGrade(g.fbVariant(d.fps[c[0]], c[1]), c[2]);
  return {status: v.status, parts: v.parts.map(p => [p.key, p.status, p.mistake]), message: v.message};
})));
""", json.dumps({"fps": fps, "cases": cases}))
    return json.loads(out)


def test_js_grader_agrees_with_python_on_every_variant(node, tmp_path):
    """Every variant a static form carries, every exercise: the same verdict from both graders, which apply the
    one rule set the payload carries."""
    rng = np.random.default_rng(11)
    fps = {str(k): E.form_payload(k, student=False) for k in KS}
    cases = [(k, i, form) for k, fp in fps.items() for i in range(len(fp["variants"]))
             for form in _forms({**fp, **fp["variants"][i]}, rng)]
    js = _grade_js(node, tmp_path, fps, cases)
    assert len(js) == len(cases) > len(KS) * (E.variants.FORM_VARIANTS + 1) * 5
    statuses = set()
    for (k, i, form), j in zip(cases, js):
        py = _grade_py({**fps[k], **fps[k]["variants"][i]}, form)
        assert py == j, (k, i, form)
        statuses.add(py["status"])
    assert statuses == {"correct", "wrong", "not_attempted", "incomplete", "malformed"}


def test_the_rules_are_the_payloads_not_the_scripts(node, tmp_path):
    """grader.js holds no rule of its own: other rules in the payload give other verdicts, the same in both
    graders, and its source names no message and no exercise status."""
    code = GRADER.read_text(encoding="utf-8")
    statuses = {r["status"] for r in E.GRADING_RULES["exercise"]} | {"empty", "malformed", "correct", "wrong"}
    assert not [w for w in [*E.MESSAGES, *statuses] if f"'{w}'" in code or f'"{w}"' in code]
    rules = {**E.GRADING_RULES,
             "number": [["mistake", "wrong", "part_wrong"], ["always", "correct", "part_correct"]],
             "exercise": [{"when": "all", "parts": ["correct"], "status": "correct", "head": "correct"},
                          {"when": "always", "status": "incomplete", "head": "incomplete"}]}
    fp = {**E.form_payload(2, variants=0, student=False), "rules": rules}
    pl = {**fp, **fp["variants"][0]}
    p = pl["parts"][0]
    forms = [{"MB": repr(float(p["ref"] * 7))}, {"MB": repr(float(p["mistakes"][0]["value"]))}, {"MB": ""}]
    js = _grade_js(node, tmp_path, {"2": fp}, [("2", 0, f) for f in forms])
    py = [_grade_py(pl, f) for f in forms]
    assert js == py
    assert [v["status"] for v in py] == ["correct", "incomplete", "incomplete"]   # what these rules say


def test_js_grader_malformed_and_empty_inputs(node, tmp_path):
    pl = E.payload(2)
    out = _run(node, tmp_path, r"""
const pl = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const inputs = ['', '   ', 'abc', '136.3 MB', '1,363', 'NaN', 'Infinity', '1e999', ' 136.3 '];
process.stdout.write(JSON.stringify(inputs.map(s => g.fbGrade(pl, {MB: s}).status)));
""", json.dumps(pl))
    assert json.loads(out) == ["not_attempted", "not_attempted"] + ["malformed"] * 6 + ["correct"]
    # the Python grader says the same about the values a kernel can hold
    assert E.check(2, float("inf"), quiet=True).status == "malformed"
    assert E.check(2, "136.3 MB", quiet=True).status == "malformed"


def test_js_parse_reads_what_a_reader_types(node, tmp_path):
    texts = ["12.5", "+1.2e3", ".5", "5.", "-0.25", " 7 ", "1e-3", "1.2.3", "0x10", "12,5", "1e", "", None]
    out = _run(node, tmp_path, r"""
const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(texts.map(g.fbParse)));
""", json.dumps(texts))
    bad = {"bad": True}
    assert json.loads(out) == [12.5, 1200, 0.5, 5, -0.25, 7, 0.001, bad, bad, bad, bad, None, None]
    # every number it accepts is a float Python reads the same way
    for t, x in zip(texts[:7], json.loads(out)[:7]):
        assert float(t) == x


def test_js_substitution_matches_python(node, tmp_path):
    kw = {"label": "P (FP16)", "tol": "±0.06 MB", "feedback": "uses {braces} and $1"}
    out = _run(node, tmp_path, r"""
const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(Object.keys(d.M).map(k => g.fbSub(d.M[k], d.kw))));
""", json.dumps({"M": E.MESSAGES, "kw": kw}))
    expected = []
    for template in E.MESSAGES.values():
        s = template
        for k, v in kw.items():
            s = s.replace("{" + k + "}", v)
        expected.append(s)
    assert json.loads(out) == expected
    assert not any(re.search(r"\{(label|tol|feedback)\}", s) for s in expected)


@pytest.mark.parametrize("k", KS)
def test_js_recognises_each_mistake_at_the_statements_rounding(k, node, tmp_path):
    """The rounding rule in the browser grader: each known mistake typed as the statement asks it rounded (the text a
    reader types, e.g. "68.2") gets its own feedback, as in the Python grader, for variant 0 and variants 1-20."""
    from flashbook.exercises.rounding import canonical

    ex = E.exercise(k)
    fp = E.form_payload(k, student=False)
    cases = []
    for i, v in enumerate(fp["variants"]):
        ref = {p["key"]: (p["answer"] if p["kind"] == "choice" else repr(float(canonical(ex.part(p["key"]), p["ref"]))))
               for p in v["parts"]}
        cases.append((i, ref, None))
        for p in v["parts"]:
            for m in p.get("mistakes", []):
                cases.append((i, {**ref, p["key"]: repr(float(canonical(ex.part(p["key"]), m["value"])))}, m["id"]))
    out = _run(node, tmp_path, r"""
const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(d.cases.map(c => {
  const v = g.fbGrade(g.fbVariant(d.fp, c[0]), c[1]);
  return [v.status, v.parts.filter(p => p.mistake).map(p => p.mistake), v.message];
})));
""", json.dumps({"fp": fp, "cases": [[i, form] for i, form, _ in cases]}))
    js = json.loads(out)
    assert len(js) == len(cases) > len(fp["variants"])
    for (i, form, mid), (status, mistakes, message) in zip(cases, js):
        s = fp["variants"][i]["variant"]
        answer = {key: (val if ex.part(key).kind == "choice" else float(val)) for key, val in form.items()}
        py = E.check(k, answer, variant=s, quiet=True)
        assert (status, message) == (py.status, py.message), (s, form)
        assert mistakes == ([] if mid is None else [mid]) == py.mistakes(), (s, form)
        assert status == ("correct" if mid is None else "wrong")
