"""The student edition: no worked solution in the stripped notebooks, no answer or known-mistake value readable
from the forms' source, and the hashed forms grade as the full ones at the statement's rounding, in Python and in
grader.js (under node). It is one edition: no instructors' page, no link into the repository, no sentence about
a control it removed, in its sources (checked here on every run) and in its built pages and notebooks.

The build of the edition itself (jupyter-book on the edited copy of a few pages) is slow: it runs when
FLASHBOOK_STUDENT_BUILD=1 is set (``make student`` builds the whole book and runs the same scans).
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
from flashbook.sections import toc_pages

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "github.com/flashbook-org/flashbook"
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
    assert c["html"]["use_issues_button"] is False and c["html"]["use_edit_page_button"] is False
    assert "student edition" in c["title"] and c["sphinx"]["local_extensions"]


# ------------------------------------------------------------------------------- one edition: what it leaves out
def test_student_toc_leaves_out_the_instructors_page(tmp_path):
    full = toc_pages(ROOT / "_toc.yml")
    assert "book/instructors" in full                      # the full edition has it, so the test can fail
    toc = tmp_path / "_toc.yml"
    toc.write_text(S.student_toc((ROOT / "_toc.yml").read_text(encoding="utf-8")), encoding="utf-8")
    assert toc_pages(toc) == [p for p in full if p not in S.INSTRUCTOR_PAGES]
    text = toc.read_text(encoding="utf-8")
    assert "instructors" not in text and "caption: Teaching" not in text   # its part, left empty, goes too
    with pytest.raises(ValueError, match="instructors"):
        S.student_toc("format: jb-book\nroot: book/instructors\n")


def test_prepared_sources_mention_nothing_removed(tmp_path):
    """The edited copy of every page: no instructors' page, no Colab install cell (it installs from the
    repository), no link into the repository, no sentence about a launch button, a worked solution or the
    repository's tooling; every STUDENT_TEXT rule matched (prepare raises otherwise)."""
    src = S.prepare(ROOT, tmp_path / "src")
    assert not list((src / "book").glob("instructors*"))
    assert S.removed_mentions(src, [REPOSITORY]) == []
    for path in (src / "book").rglob("*.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert not any("google.colab" in _src(c) for c in nb["cells"]), path
    # what replaced the full edition's sentences names the download button, which the student edition keeps
    intro = (src / "book" / "intro.md").read_text(encoding="utf-8")
    assert "download icon" in intro and "Run All Cells" in intro
    lab = json.loads((src / "book" / "labs" / "lab1_online_softmax.ipynb").read_text(encoding="utf-8"))
    assert "download icon" in _src(lab["cells"][0]) and "edit the starter kernel" in _src(lab["cells"][0])
    # the scanner is not blind: the full edition's sources name every kind of removed thing
    full = S.removed_mentions(ROOT / "book", [REPOSITORY])
    for what in ["a link into the repository", "the instructors' page", "a launch button", "a worked solution",
                 "the repository's tooling"]:
        assert any(f": {what}:" in line for line in full), what


def test_a_reworded_page_fails_the_build(tmp_path):
    """A STUDENT_TEXT rule that matches nothing (its page was reworded) stops prepare and names the rule."""
    root = tmp_path / "root"
    shutil.copytree(ROOT / "book", root / "book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, root / name)
    intro = root / "book" / "intro.md"
    intro.write_text(intro.read_text(encoding="utf-8").replace("rocket icon at the top", "rocket icon on top"),
                     encoding="utf-8")
    with pytest.raises(ValueError, match="book/intro.md"):
        S.prepare(root, tmp_path / "src")


def test_student_text_matches_rewrapped_prose():
    files, full, student = S.STUDENT_TEXT[0]
    words = full.split()
    wrapped = "before " + " ".join(words[:5]) + "\n  " + " ".join(words[5:]) + " after"
    assert S.student_text(wrapped, files) == "before " + student + " after"
    assert S.student_text(wrapped, "book/other.md") == wrapped          # another file's rule does not apply


def test_removed_mentions_reads_what_a_reader_reads(tmp_path):
    """Visible text only (a script that says "Binder" is no mention), links into the repository anywhere in
    the file, and the API reference's pages (the package's docstrings) exempt from the prose rules only."""
    (tmp_path / "book" / "api").mkdir(parents=True)
    (tmp_path / "book" / "a.html").write_text(
        '<script>const x = "Binder, Colab";</script><p>Open it with the <b>download</b> icon.</p>', encoding="utf-8")
    assert S.removed_mentions(tmp_path, [REPOSITORY]) == []
    (tmp_path / "book" / "b.html").write_text(
        f'<p>Launch this page (rocket\n icon)</p><a href="https://{REPOSITORY}/blob/main/LICENSE">MIT</a>',
        encoding="utf-8")
    (tmp_path / "book" / "api" / "c.html").write_text(
        "<p>solution_output: a worked solution's cell</p><a href='../instructors.html'>Teaching</a>",
        encoding="utf-8")
    hits = S.removed_mentions(tmp_path, [REPOSITORY])
    assert {h.split(": ")[1] for h in hits} == {"a launch button", "a link into the repository",
                                                 "the instructors' page"}, hits
    assert not any(": a worked solution:" in h for h in hits)           # an API page's docstring
    nb = {"cells": [{"cell_type": "markdown", "source": ["In a live notebook (rocket icon: Binder)"]}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert sum(h.startswith(str(tmp_path / "n.ipynb")) for h in S.removed_mentions(tmp_path, [])) == 2  # icon, Binder


def test_student_footer_and_figure_note_link_nowhere_into_the_repository(monkeypatch):
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from flashbook_html import footer_html

    from flashbook import player

    assert REPOSITORY in footer_html("1.2.3")
    student = footer_html("1.2.3", student=True)
    assert REPOSITORY not in student and "CC BY 4.0" in student and "MIT" in student and "1.2.3" in student
    monkeypatch.setenv("FLASHBOOK_EDITION", "student")
    assert player.launch_note() == player.NOTE_STUDENT and "download icon" in player.launch_note()
    monkeypatch.setenv("FLASHBOOK_EDITION", "full")
    assert player.launch_note() == player.NOTE and "rocket icon" in player.NOTE


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
#: Pages the slow test builds: the root, the exercises, the labs' index and a lab (each kind of edited sentence).
SLOW_PAGES = ["book/12_exercises", "book/labs/index", "book/labs/lab1_online_softmax"]


@pytest.mark.skipif(os.environ.get("FLASHBOOK_STUDENT_BUILD") != "1",
                    reason="builds the student edition of four pages (minutes): set FLASHBOOK_STUDENT_BUILD=1")
def test_student_build_of_a_few_pages(tmp_path):
    html = S.build(ROOT, tmp_path / "student", pages=SLOW_PAGES)
    page = (html / "book" / "12_exercises.html").read_text(encoding="utf-8")
    assert page.count('class="fb-exercise-form"') == len(E.EXERCISES) and "Another variant" in page
    assert '"edition": "student"' in page and "fb-solution" not in page and "solution-start" not in page
    assert "Show the worked solution" not in page
    assert S.scan(tmp_path / "student") == []          # html, _sources, the executed notebooks
    assert (html / "_sources" / "book" / "12_exercises.ipynb").exists()
    # one edition: no instructors' page, no link into the repository, no sentence about what it removed, in
    # the pages, the downloadable notebooks and the executed ones
    assert not (html / "book" / "instructors.html").exists()
    assert S.removed_mentions(tmp_path / "student", [REPOSITORY]) == []
    lab = (html / "book" / "labs" / "lab1_online_softmax.html").read_text(encoding="utf-8")
    assert "download icon" in lab and "dropdown-download-buttons" in lab       # the button the prose names
    assert "student edition" in S.visible_text(html / "book" / "intro.html")   # its footer
