"""Binder installs requirements.txt; it must install labcore from this repository (``-e .``)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lines(name: str) -> list[str]:
    return [ln.split("#", 1)[0].strip() for ln in (ROOT / name).read_text().splitlines()
            if ln.split("#", 1)[0].strip()]


def test_requirements_install_labcore_from_the_repo():
    assert "-e ." in _lines("requirements.txt"), "requirements.txt must install labcore with '-e .'"
    import tomllib

    from setuptools import find_packages

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    found = set(find_packages(str(ROOT), include=include))
    assert {"labcore", "labcore.chip", "cudalab", "flashbook", "flashbook.figures", "flashbook.exercises",
            "flashbook.labs", "flashbook.labs.cuda"} <= found
    assert not any(p.split(".")[0] in ("tests", "book", "bench") for p in found)


def test_binder_reads_requirements_txt():
    """repo2docker prefers binder/ or .binder/ over the root files: there must be none."""
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists()
    assert not (ROOT / "environment.yml").exists(), "environment.yml would take precedence over requirements.txt"


def test_requirements_are_bounded():
    """Every requirement has a lower and an upper bound (a known-good range), so Binder matches CI."""
    for name in ("requirements.txt", "requirements-dev.txt"):
        for ln in _lines(name):
            if ln.startswith("-"):
                continue
            assert re.search(r">=?[\w.]+", ln) and "<" in ln, f"{name}: {ln!r} needs a known-good range"


def test_dev_requirements_include_runtime():
    assert "-r requirements.txt" in _lines("requirements-dev.txt")


def test_requirements_install_the_live_front_end():
    """Binder (repo2docker) and `make lab` get JupyterLab 4 with the MyST renderer from requirements.txt."""
    names = {re.split(r"[<>=!~\[ ]", ln, maxsplit=1)[0].lower().replace("_", "-") for ln in _lines("requirements.txt")}
    assert {"jupyterlab", "jupyterlab-myst"} <= names, sorted(names)
    assert any(re.match(r"jupyterlab>=4", ln) for ln in _lines("requirements.txt")), "JupyterLab 4 (jupyterlab-myst 2 needs it)"
