"""Fold every worked solution of a notebook (issue 12: no answer in front of a reader who has not tried).

Usage: ``python tests/tools/fold_solutions.py book/12_exercises.ipynb`` (idempotent).

A gated solution ``{solution-start}`` (Markdown with the prose) / code cell(s) / ``{solution-end}`` becomes:

* the prose inside one ``{solution}`` directive with ``:class: dropdown`` (closed in the book and, through
  jupyterlab-myst, in JupyterLab);
* each code cell wrapped in ``with solution_output():`` (labcore.exercises): it still runs and checks its
  asserts, but what it prints is shown inside a closed ``<details>``; its source is folded in JupyterLab
  (``jupyter.source_hidden``) and in the book (``hide-input``);
* the ``{solution-end}`` cell is dropped; prose between the code and ``{solution-end}`` goes into a second
  ``{solution}`` dropdown of the same exercise.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

START = re.compile(r"^```\{solution-start\}\s+(\S+)\n(?::class:[^\n]*\n)?```\n*", re.S)
END = re.compile(r"\n*```\{solution-end\}\s*\n```\s*$")


def _dropdown(label: str, body: str) -> str:
    return f"````{{solution}} {label}\n:class: dropdown\n\n{body.strip()}\n````"


def fold(path: Path) -> int:
    nb = json.loads(path.read_text(encoding="utf-8"))
    out, n, label = [], 0, None
    for c in nb["cells"]:
        src = "".join(c["source"])
        if c["cell_type"] == "markdown" and src.lstrip().startswith("```{solution-end}"):
            continue
        m = START.match(src) if c["cell_type"] == "markdown" else None
        end = END.search(src) if c["cell_type"] == "markdown" else None
        folded = re.match(r"````\{solution\} (\S+)", src) if c["cell_type"] == "markdown" else None
        if folded:
            label = folded.group(1)
        if m:
            label = m.group(1)
            src = _dropdown(label, src[m.end():])
            c["metadata"].pop("jupyter", None)
            n += 1
        elif end:  # prose after the solution's code, closed by solution-end: a second dropdown of the same solution
            src = _dropdown(label, src[:end.start()])
            c["metadata"].pop("jupyter", None)
        elif c["cell_type"] == "code" and out and "{solution}" in "".join(out[-1]["source"]) \
                and not src.startswith("with solution_output():"):
            src = "with solution_output():\n" + "".join("    " + ln if ln.strip() else ln
                                                        for ln in src.splitlines(keepends=True))
            c["metadata"]["jupyter"] = {"source_hidden": True}
            c["metadata"]["tags"] = sorted(set(c["metadata"].get("tags", [])) | {"hide-input"})
        c["source"] = src.splitlines(keepends=True)
        out.append(c)
    nb["cells"] = out
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return n


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(f"{p}: {fold(Path(p))} solutions folded")
