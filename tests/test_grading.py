"""The class grader (``flashbook-grade``) on a made-up class: every kind of submission gets its row and reason, a
crash or an endless loop never stops the batch, the Gradescope files and reports are written, and one student can be
graded again."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from flashbook.grading import cli
from flashbook.grading.demo import KINDS, make_class
from flashbook.grading.submissions import find_submissions, items_in

# each test grades whole classes in processes of their own: make test runs them, make check does not
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    kinds = make_class(root / "submissions")
    # a kernel that never ends is stopped by the simulator's launch time limit (a generous multiple of the ~0.1 s a
    # launch of these labs takes), not by the process's
    mp = pytest.MonkeyPatch()
    mp.setenv("FLASHBOOK_CUDA_TIME_LIMIT", "8")
    try:
        assert cli.main([str(root / "submissions"), "--out", str(root / "grades"), "--jobs", "2",
                         "--timeout", "300", "--points", "lab7_cuda_fa2=5"]) == 0
    finally:
        mp.undo()
    with open(root / "grades" / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return root, kinds, rows


def _rows(rows, kinds, kind):
    (student,) = [s for s, k in kinds.items() if k == kind]
    return {r["item"]: r for r in rows if r["student"] == student}


def test_every_kind_of_submission_gets_its_row_and_reason(graded):
    _, kinds, rows = graded
    assert set(kinds.values()) == {k for k, _ in KINDS}
    assert _rows(rows, kinds, "chip_correct")["lab1_online_softmax"]["passed"] == "True"
    ok = _rows(rows, kinds, "cuda_correct")
    assert set(ok) == {"lab6a_cuda_softmax_two_pass", "lab6b_cuda_softmax_online"}
    assert all(r["passed"] == "True" and r["traffic"] == "1.0" and r["on_chip_unit"] == "bytes" for r in ok.values())
    bad = _rows(rows, kinds, "cuda_mistake")["lab7_cuda_fa2"]
    assert bad["passed"] == "False" and "barrier is missing" in bad["feedback"]
    assert "rescale factor" in _rows(rows, kinds, "chip_mistake")["lab1_online_softmax"]["feedback"]
    assert "does not parse" in _rows(rows, kinds, "syntax_error")["lab1_online_softmax"]["error"]
    endless = _rows(rows, kinds, "cuda_endless")
    assert "time limit" in endless["lab6b_cuda_softmax_online"]["error"]
    assert endless["lab6a_cuda_softmax_two_pass"]["passed"] == "True"      # the same file's other kernel
    assert "import is not allowed" in _rows(rows, kinds, "cuda_cheat")["lab7_cuda_fa2"]["error"]
    assert _rows(rows, kinds, "notebook_correct")["lab8_cuda_decoding"]["passed"] == "True"
    assert "no function named fa2_forward" in _rows(rows, kinds, "missing_kernel")["lab7_cuda_fa2"]["error"]
    answers = _rows(rows, kinds, "answers")
    assert set(answers) == {"exercise01", "exercise02"} and 0 < float(answers["exercise01"]["score"]) < 1
    assert "no lab found" in _rows(rows, kinds, "not_a_lab")["submission"]["error"]


def test_gradescope_files_and_reports_are_written_per_student(graded):
    root, kinds, rows = graded
    for student in kinds:
        data = json.loads((root / "grades" / "gradescope" / student / "results.json").read_text())
        assert data["tests"] and {t["status"] for t in data["tests"]} <= {"passed", "failed"}
        assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
        assert (root / "grades" / "reports" / f"{student}.md").read_text().startswith(f"# Grades of {student}")
    (mistake,) = [s for s, k in kinds.items() if k == "cuda_mistake"]
    data = json.loads((root / "grades" / "gradescope" / mistake / "results.json").read_text())
    assert data["tests"][0]["max_score"] == 5.0 and "race on shared array" in data["tests"][0]["output"]


def test_the_gradebook_keeps_the_students_order_whatever_order_they_finish_in(graded):
    root, _, rows = graded
    # graded two at a time, so students finish out of order; the gradebook follows the folder
    assert list(dict.fromkeys(r["student"] for r in rows)) == [s.student for s in find_submissions(root / "submissions")]


def test_one_student_graded_again_replaces_only_their_rows(graded, capsys):
    root, kinds, rows = graded
    (student,) = [s for s, k in kinds.items() if k == "chip_correct"]
    (root / "submissions" / f"{student}_lab1.py").write_text("def kernel(cta, *, block_kv):\n    pass\n")
    capsys.readouterr()
    assert cli.main([str(root / "submissions"), "--out", str(root / "grades"), "--student", student]) == 0
    mine = sum(r["student"] == student for r in rows)
    others = len({r["student"] for r in rows}) - 1
    assert (f"({mine} rows for 1 student(s) graded now; with the {len(rows) - mine} rows of {others} other "
            f"student(s) kept, {len(rows)} rows in all)") in capsys.readouterr().err
    with open(root / "grades" / "gradebook.csv", newline="") as f:
        again = list(csv.DictReader(f))
    assert len(again) == len(rows)
    assert [r for r in again if r["student"] != student] == [r for r in rows if r["student"] != student]
    assert next(r for r in again if r["student"] == student)["passed"] == "False"
    with pytest.raises(SystemExit):
        cli.main([str(root / "submissions"), "--student", "nobody"])


def test_a_process_past_its_time_limit_becomes_a_row(tmp_path):
    make_class(tmp_path / "s", 1)
    (sub,) = find_submissions(tmp_path / "s")
    items = [{"item": it.item, "kind": it.kind, "lab": it.lab, "path": str(it.path)} for it in items_in(sub.paths[0])]
    rows, _ = cli.run_worker(sub.student, items, timeout=0.01, memory_mb=2048)
    assert len(rows) == 1 and "time limit" in rows[0]["error"] and rows[0]["passed"] is False


def test_the_folder_layout_and_the_lab_of_each_file(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "lab7_cuda_fa2.ipynb").write_text("{}")
    (tmp_path / "alice" / "answers.csv").write_text("exercise,part,answer\n")
    (tmp_path / "bob_lab3.py").write_text("def kernel(cta): pass\n")
    (tmp_path / "carol.py").write_text("@cuda.jit\ndef split_kernel(q):\n    pass\ndef combine_kernel(O):\n    pass\n")
    (tmp_path / "dave_lab6.txt").write_text("not a notebook")
    (tmp_path / "ahmed_lab6.py").write_text("")
    (tmp_path / "ahmed_labib_lab6.py").write_text("")
    (tmp_path / "x y_lab6.py").write_text("")
    (tmp_path / ".DS_Store").write_text("")
    subs = {s.student: s for s in find_submissions(tmp_path)}
    assert set(subs) == {"alice", "bob", "carol", "dave", "ahmed", "ahmed_labib", "x y"}
    # a name with "_lab" in it is one student, never merged with another's
    assert [p.name for p in subs["ahmed"].paths] == ["ahmed_lab6.py"]
    assert [p.name for p in subs["ahmed_labib"].paths] == ["ahmed_labib_lab6.py"]
    # a file that is not a notebook, .py or .csv is a problem of its student's, not dropped without a word
    assert subs["dave"].paths == [] and "dave_lab6.txt is not graded" in subs["dave"].problems[0]
    # an id that is not valid is reported and nothing of it is graded
    assert subs["x y"].paths == [] and "nothing of it was graded" in subs["x y"].problems[0]
    assert all(not s.problems for k, s in subs.items() if k not in ("dave", "x y"))
    assert sorted(i.item for p in subs["alice"].paths for i in items_in(p)) == ["exercises", "lab7_cuda_fa2"]
    assert [i.item for i in items_in(subs["bob"].paths[0])] == ["lab3_fa2_causal"]
    assert [i.item for i in items_in(subs["carol"].paths[0])] == ["lab8_cuda_decoding"]
    with pytest.raises(ValueError, match="no submission"):
        find_submissions(_empty(tmp_path))
    only_notes = tmp_path / "only_notes"
    only_notes.mkdir()
    (only_notes / "readme.txt").write_text("")
    with pytest.raises(ValueError, match="no submission"):
        find_submissions(only_notes)
    with pytest.raises(FileNotFoundError):
        find_submissions(tmp_path / "missing")


def _empty(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    return d


@pytest.mark.parametrize("flag, value, message", [
    ("--jobs", "0", "--jobs must be at least 1, got 0"),
    ("--memory", "100", "--memory must be between 256 and 4194304 MB, got 100"),
    ("--timeout", "0", "--timeout must be a number of seconds between 1 and 3600, got 0"),
    ("--timeout", "inf", "--timeout must be a number of seconds between 1 and 3600, got inf"),
    ("--timeout", "nan", "--timeout must be a number of seconds between 1 and 3600, got nan"),
    # past what the operating system's wait takes (it raised OverflowError once a student was graded)
    ("--timeout", "3e6", "--timeout must be a number of seconds between 1 and 3600, got 3e+06"),
    ("--timeout", "1e-320", "--timeout must be a number of seconds between 1 and 3600, got 9.99989e-321"),
    ("--out", "", "--out must name a folder, got an empty name"),
    ("--seed", "-1", "--seed must be an integer between 0 and 9007199254740992, got -1"),
    ("--seed", str(2 ** 60), "--seed must be an integer between 0 and 9007199254740992, got 1152921504606846976"),
    ("--memory", "10000000000000", "--memory must be between 256 and 4194304 MB, got 10000000000000"),
    ("--gpu", "nosuchgpu", "--gpu: unknown GPU 'nosuchgpu'; known presets: A100-40GB-SXM"),
    ("--points", "lab1_online_softmax=nan", "--points: an item's points must be a finite number >= 0, got "
                                            "'lab1_online_softmax=nan'"),
    ("--points", "exercise03=-3", "--points: an item's points must be a finite number >= 0, got 'exercise03=-3'"),
    ("--points", "lab1=5", "--points: no item 'lab1'; the items are lab1_online_softmax, lab2_fa1_forward"),
    ("--points", "=5", "--points: no item ''; the items are lab1_online_softmax"),
])
def test_a_bad_limit_is_named_alone(tmp_path, capsys, flag, value, message):
    with pytest.raises(SystemExit) as e:
        cli.main([str(tmp_path), flag, value])
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err
    # only the limit that is wrong is named
    others = {"--jobs", "--memory", "--timeout"} - {flag}
    assert not [o for o in others if o + " must" in err]


def test_an_output_path_that_is_a_file_is_refused_before_anyone_is_graded(tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada_lab1.py").write_text("def kernel(S):\n    raise RuntimeError('must not run')\n")
    taken = tmp_path / "grades"
    taken.write_text("not a folder")
    with pytest.raises(SystemExit) as e:
        cli.main([str(subs), "--out", str(taken)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"--out {taken}: cannot make the output folder there" in err
    assert "[1/1]" not in err                   # nobody was graded
    assert taken.read_text() == "not a folder"


def test_gradescope_mode_refuses_a_missing_folder_and_explains_an_empty_one(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as e:
        cli.main([str(tmp_path / "nowhere"), "--gradescope"])
    assert e.value.code == 2
    assert "--gradescope: the submission folder" in capsys.readouterr().err
    empty = _empty(tmp_path)
    (empty / "notes.txt").write_text("nothing to grade")
    target = tmp_path / "results.json"
    monkeypatch.setenv("FLASHBOOK_GRADESCOPE_RESULTS", str(target))
    assert cli.main([str(empty), "--gradescope"]) == 0
    data = json.loads(target.read_text())
    assert data["score"] == 0 and data["tests"] == []
    assert data["output"].startswith("No file of this submission could be graded")


def test_the_items_points_may_name_are_the_gradebooks():
    items = cli.gradable_items()
    assert items[0] == "lab1_online_softmax" and "lab9b_cuda_backward_deterministic" in items
    assert "exercise01" in items and "exercise20" in items and "exercise21" not in items
    assert len(items) == len(set(items)) == 11 + 20


def test_a_memory_limit_past_what_the_c_type_holds_is_no_crash():
    from flashbook.grading.worker import _limit_memory

    _limit_memory(2 ** 70)              # OverflowError inside setrlimit: no limit set, no crash (the CLI bounds it)


def test_two_files_for_one_item_are_one_row_naming_both_and_neither_is_graded(tmp_path):
    good = (Path(__file__).parents[1] / "flashbook" / "labs" / "solutions" / "lab1_online_softmax.py").read_text()
    erin = tmp_path / "subs" / "erin"
    erin.mkdir(parents=True)
    (erin / "lab1.py").write_text(good)
    (erin / "lab1_v2.py").write_text("def kernel(S):\n    pass\n")
    (erin / "lab2.py").write_text("def kernel(S):\n    pass\n")
    (sub,) = find_submissions(tmp_path / "subs")
    rows, reports, _ = cli.grade_student(sub, timeout=120, memory_mb=2048, seed=1)
    lab1 = [r for r in rows if r["item"] == "lab1_online_softmax"]
    assert len(lab1) == 1 and str(lab1[0]["passed"]) == "False"
    assert lab1[0]["error"] == ("2 files are lab1_online_softmax (lab1.py, lab1_v2.py): keep one and grade this "
                                "student again")
    assert "lab1_online_softmax" not in reports                 # nothing of either file ran
    assert [r["item"] for r in rows if r["item"] != "lab1_online_softmax"] == ["lab2_fa1_forward"]


def test_gradescope_mode_refuses_an_out_folder_it_would_ignore(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([str(tmp_path), "--gradescope", "--out", str(tmp_path / "g")])
    assert e.value.code == 2 and "--out does not go with --gradescope" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()
