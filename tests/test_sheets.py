"""Exercise sheets: one Markdown sheet per student with their variant of every exercise, and
one answer-key CSV for the instructor whose answers are the graders' references for that variant."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from flashbook import exercises as E
from flashbook.exercises import sheets

IDS = ["alice", "bob", "carol"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("sheets")
    res = subprocess.run([sys.executable, "-m", "flashbook.exercises.sheets", "--ids", *IDS, "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return out


def test_seeds_come_from_the_ids():
    seeds = [sheets.seed_for(s) for s in IDS]
    assert len(set(seeds)) == 3 and all(1 <= s < 10**6 for s in seeds)
    assert seeds == [sheets.seed_for(s) for s in IDS]                 # deterministic
    assert sheets.seed_for("alice", course="2027") != sheets.seed_for("alice")
    for bad in ("", "../x", "a b", 3):
        with pytest.raises(ValueError):
            sheets.seed_for(bad)


def test_one_sheet_per_student_with_their_numbers(written):
    assert sorted(p.name for p in written.iterdir()) == ["alice.md", "answer_key.csv", "bob.md", "carol.md"]
    texts = {s: (written / f"{s}.md").read_text(encoding="utf-8") for s in IDS}
    assert len(set(texts.values())) == 3
    for s, text in texts.items():
        seed = sheets.seed_for(s)
        assert text.startswith(f"# Exercises for {s}") and f"variant is **{seed}**" in text
        assert text.count("\n## Exercise ") == len(E.EXERCISES)
        for ex in E.EXERCISES:
            assert E.exercise(ex.number).statement(variant=seed) in text
            assert f"check({ex.number}, answer, variant={seed})" in text
        assert "Example: P_i = " in text and "to one decimal" in text and "to 3 significant digits" in text


def test_answer_key_is_the_graders_reference(written):
    with (written / "answer_key.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == sheets.KEY_COLUMNS
    assert len(rows) == len(IDS) * sum(len(ex.parts) for ex in E.EXERCISES)
    for r in rows:
        k, s = int(r["exercise"]), int(r["variant"])
        assert s == sheets.seed_for(r["student"])
        ref = E.reference(k, s)[r["part"]]
        if r["tolerance"]:
            assert float(r["answer"]) == ref and float(r["tolerance"]) > 0
            # the key's rounded answer is accepted by check() for that student's variant
            answer = {**E.reference(k, s), r["part"]: float(r["answer_rounded"])}
            assert E.check(k, answer, variant=s, quiet=True).correct
        else:
            assert r["answer"] == ref and r["rounding"] == "option letter"


def test_seeds_option_and_bad_input(tmp_path):
    assert sheets.main(["--seeds", "5", "7", "--out", str(tmp_path), "--exercises", "2", "12"]) == 0
    text = (tmp_path / "variant-5.md").read_text(encoding="utf-8")
    assert E.exercise(2).statement(variant=5) in text and "## Exercise 3" not in text
    with pytest.raises(SystemExit):
        sheets.main(["--seeds", "0", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        sheets.main(["--ids", "a", "a", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        sheets.main(["--ids", "a", "--out", str(tmp_path), "--exercises", "99"])
