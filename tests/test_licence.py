"""The book may be adopted: licences, citation, version and changelog agree."""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import flashbook
import labcore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from flashbook_html import footer_html  # noqa: E402  (what every page's footer shows)


def test_licence_files_name_both_licences():
    top = (ROOT / "LICENSE").read_text()
    assert "CC BY 4.0" in top and "MIT" in top
    assert (ROOT / "LICENSE-CC-BY-4.0").read_text().startswith("Attribution 4.0 International")
    assert "Creative Commons Attribution 4.0 International Public License" in (ROOT / "LICENSE-CC-BY-4.0").read_text()
    assert (ROOT / "LICENSE-MIT").read_text().startswith("MIT License")


def test_pyproject_names_the_licences_and_reads_the_version_from_labcore():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "CC-BY-4.0 AND MIT"        # SPDX (PEP 639), no licence classifier
    assert not any(c.startswith("License ::") for c in meta["project"].get("classifiers", []))
    assert meta["project"]["license-files"] == ["LICENSE", "LICENSE-CC-BY-4.0", "LICENSE-MIT"]
    assert meta["project"]["dynamic"] == ["version"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "labcore.__version__"}


def test_one_version_everywhere():
    version = labcore.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert flashbook.__version__ == version
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf"^version: {re.escape(version)}$", cff, re.M)
    assert re.search(r"^license:\n  - CC-BY-4.0\n  - MIT$", cff, re.M)
    assert f"## {version} " in (ROOT / "CHANGELOG.md").read_text()
    footer = footer_html(version)
    assert f"flashbook {version}" in footer and "CC BY 4.0" in footer and "MIT" in footer
    assert "CITATION.cff" in footer and "CHANGELOG.md" in footer
