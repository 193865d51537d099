"""tools/build_stamp.py: ``make test`` after ``make book`` reuses the strict build only when nothing it could
read changed (a file's bytes, a file added or removed, an environment variable, the command, the HTML)."""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("build_stamp", Path(__file__).resolve().parents[1] / "tools" /
                                               "build_stamp.py")
stamp = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(stamp)

CMD = "jupyter-book build . -n -W --keep-going"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git checkout with a notebook, an ignored _build/ and a "built" _build/html."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("_build/\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "page.ipynb").write_text('{"cells": []}')
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    (tmp_path / "_build" / "html").mkdir(parents=True)
    (tmp_path / "_build" / "html" / "index.html").write_text("<html>built</html>")
    for key in [k for k in __import__("os").environ if k.startswith("FLASHBOOK_")]:
        monkeypatch.delenv(key)
    return tmp_path


def _built(root: Path) -> None:
    stamp.begin(root, CMD)
    ok, why = stamp.end(root, CMD)
    assert ok, why


def test_the_same_source_and_html_is_reused(repo):
    assert stamp.check(repo, CMD) == (False, "no stamp of a strict build in _build/")
    _built(repo)
    ok, why = stamp.check(repo, CMD)
    assert ok and "strict build of this exact source" in why


@pytest.mark.parametrize("change", ["edit", "add", "add_ignored", "delete", "command", "env", "html"])
def test_any_change_runs_the_build_again(repo, monkeypatch, change):
    _built(repo)
    command = CMD
    if change == "edit":
        (repo / "book" / "page.ipynb").write_text('{"cells": [1]}')
    elif change == "add":
        (repo / "book" / "new.md").write_text("# new")            # untracked, not ignored: the build may read it
    elif change == "add_ignored":
        (repo / "_build" / "other.txt").write_text("ignored")     # ignored: not the build's input
    elif change == "delete":
        (repo / "book" / "page.ipynb").unlink()
    elif change == "command":
        command = "jupyter-book build ."
    elif change == "env":
        monkeypatch.setenv("FLASHBOOK_EDITION", "student")
    elif change == "html":
        (repo / "_build" / "html" / "index.html").write_text("<html>edited by hand</html>")
    ok, why = stamp.check(repo, command)
    if change == "add_ignored":
        assert ok, why
    else:
        assert not ok and "changed" in why, (change, why)


def test_a_source_changed_during_the_build_leaves_no_stamp(repo):
    stamp.begin(repo, CMD)
    (repo / "book" / "page.ipynb").write_text('{"cells": ["edited while building"]}')
    ok, why = stamp.end(repo, CMD)
    assert not ok and "changed during the build" in why
    assert stamp.check(repo, CMD)[0] is False


def test_begin_forgets_the_old_stamp(repo):
    _built(repo)
    stamp.begin(repo, CMD)                  # a build that then fails never reaches end
    assert stamp.check(repo, CMD) == (False, "no stamp of a strict build in _build/")


def test_no_git_checkout_no_stamp(tmp_path):
    (tmp_path / "_build" / "html").mkdir(parents=True)
    (tmp_path / "_build" / "html" / "index.html").write_text("x")
    assert stamp.source_fingerprint(tmp_path, CMD) is None
    stamp.begin(tmp_path, CMD)
    assert stamp.end(tmp_path, CMD)[0] is False
    assert stamp.check(tmp_path, CMD)[0] is False
