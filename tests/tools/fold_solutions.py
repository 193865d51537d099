"""Fold every worked solution of a notebook (issue 12: no answer in front of a reader who has not tried).

Usage: ``python tests/tools/fold_solutions.py book/12_exercises.ipynb`` (idempotent).

A gated solution ``{solution-start}`` (Markdown with the prose) / code cell(s) / Markdown prose and
``{solution-end}`` becomes:

* all of its prose (before and after the code) inside one ``{solution}`` directive with ``:class: dropdown``
  (closed in the book and, through jupyterlab-myst, in JupyterLab); prose that came after the code and speaks
  of what is printed "above" now says "below", since the printed answer follows the dropdown;
* each code cell wrapped in ``with solution_output():`` (labcore.exercises): it still runs and checks its
  asserts, but what it prints is shown inside a closed ``<details>``; its source is folded in JupyterLab
  (``jupyter.source_hidden``) and in the book (``hide-input``);
* the ``{solution-end}`` fence is dropped (and its cell, once the prose has moved).

Running it again on a folded notebook also repairs a fold in which trailing prose was left in its own cell
after the solution's code (visible to a reader, with a raw ``{solution-end}`` fence).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

START = re.compile(r"^```\{solution-start\}\s+(\S+)\n(?::class:[^\n]*\n)?```\n*", re.S)
END = re.compile(r"\n*```\{solution-end\}\s*\n```\s*$")
FOLDED = re.compile(r"^(````\{solution\} \S+\n:class: dropdown\n)(.*?)\n*````\s*$", re.S)


def _is_solution_md(c: dict) -> bool:
    return c["cell_type"] == "markdown" and "".join(c["source"]).lstrip().startswith("````{solution}")


def _append_prose(cell: dict, prose: str) -> None:
    m = FOLDED.match("".join(cell["source"]))
    body = m.group(2).strip()
    if body.endswith(":"):   # it introduced the printed answer, which now comes after all of the prose
        body = body[:-1].rstrip() + " (printed below)."
    body = f"{body}\n\n{prose}" if body else prose
    cell["source"] = f"{m.group(1)}\n{body}\n````".splitlines(keepends=True)


def fold(path: Path) -> int:
    nb = json.loads(path.read_text(encoding="utf-8"))
    out, n = [], 0
    current = None   # the {solution} Markdown cell of the solution being folded, until its end
    for c in nb["cells"]:
        src = "".join(c["source"])
        if c["cell_type"] == "markdown" and current is not None and (END.search(src) or (
                c["metadata"].get("jupyter", {}).get("source_hidden") and out and out[-1]["cell_type"] == "code")):
            prose = END.sub("", src).strip().replace("printed above", "printed below")
            if prose:
                _append_prose(current, prose)
            if END.search(src):
                current = None
            continue
        m = START.match(src) if c["cell_type"] == "markdown" else None
        if m:
            body = src[m.end():].strip()
            src = f"````{{solution}} {m.group(1)}\n:class: dropdown\n\n{body}\n````"
            c["metadata"].pop("jupyter", None)
            n += 1
            current = c
        elif _is_solution_md(c):
            current = c
        elif c["cell_type"] == "markdown":
            current = None
        elif c["cell_type"] == "code" and out and current is not None \
                and not src.startswith("with solution_output():"):
            src = "with solution_output():\n" + "".join("    " + ln if ln.strip() else ln
                                                        for ln in src.splitlines(keepends=True))
        if c["cell_type"] == "code" and current is not None:
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
