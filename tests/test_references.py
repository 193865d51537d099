"""references.bib parses (sphinxcontrib-bibtex reads it with pybtex; a lost brace fails the whole build)."""
from pathlib import Path

import pybtex.database

BIB = Path(__file__).resolve().parents[1] / "references.bib"


def test_the_bibliography_parses_with_unique_keys():
    entries = pybtex.database.parse_file(str(BIB)).entries
    text = BIB.read_text(encoding="utf-8")
    assert len(entries) == text.count("\n@") + text.startswith("@")
    assert text.count("{") == text.count("}")
