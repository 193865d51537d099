"""The student edition of the book: no worked solution in any page, notebook or download, no readable key.

``make student`` (``python -m flashbook.exercises.student``) builds a second HTML book without editing the
committed notebooks:

1. :func:`prepare` copies the book's sources (``_config.yml``, ``_toc.yml``, ``book/``, ``_static/``,
   ``references.bib``) to ``<out>/src`` and strips every worked solution from the copies of the notebooks
   (:func:`strip_solutions`): ``{solution}`` directives (the dropdowns under each exercise), gated
   ``{solution-start}`` ... ``{solution-end}`` blocks, and the code cells that print a solution
   (``with solution_output():``). The copied ``_config.yml`` drops the launch buttons and the repository
   button (they open the full notebooks).
2. :func:`build` runs ``jupyter-book build`` on the copy with ``FLASHBOOK_EDITION=student``: the exercise forms
   then carry salted hashes of the rounded answers (:mod:`flashbook.exercises.keys`) instead of the values,
   and ``_sources`` (the notebooks a reader downloads) are the stripped copies. The HTML lands in
   ``<out>/html`` (default ``_build/student/html``).
3. :func:`scan` greps every page, notebook and source of the result for each exercise's answer and
   known-mistake values in every format the page could print them (:func:`answer_texts`); any hit fails.

The check cells still work in a live kernel (the Python grader computes the answers with labcore): that, and
trying numbers against the keys, is what the protection does not stop (``book/instructors.md``).

Source: this book's build (an edition to hand to students); Jupyter Book 1.x ``--path-output``.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .definitions import EXERCISES, exercise
from .grader import payload
from .rounding import canonical
from .variants import FORM_VARIANTS

__all__ = ["strip_solutions", "strip_markdown", "student_config", "prepare", "build", "main", "SOURCES",
           "answer_texts", "readable_answers", "scan"]

#: What the build copies from the repository root (the rest is excluded by ``_config.yml`` anyway).
SOURCES = ("_config.yml", "_toc.yml", "book", "_static", "references.bib")

_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}")


def strip_markdown(text: str) -> str:
    """``text`` without its ``{solution}`` directives (fenced with backticks or colons, nested fences kept
    inside the one removed). Other directives stay as they are."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m and m.group("name") == "solution":
            fence = m.group("fence")
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != fence:
                j += 1
            i = j + 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out).strip("\n")


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def strip_solutions(nb: dict) -> dict:
    """A copy of notebook ``nb`` (nbformat 4 JSON) without worked solutions.

    Removes: the ``{solution}`` directives of Markdown cells (a cell left empty goes), every cell from a
    ``{solution-start}`` to its ``{solution-end}``, and code cells whose source starts with
    ``with solution_output():`` (their printed output is the solution). Outputs of the kept cells are cleared.

    Raises:
        ValueError: a ``{solution-start}`` without its ``{solution-end}``.
    """
    nb = copy.deepcopy(nb)
    cells, gated = [], False
    for cell in nb.get("cells", []):
        src = _source(cell)
        if cell.get("cell_type") == "markdown" and "{solution-start}" in src:
            gated = True
        if gated:
            if cell.get("cell_type") == "markdown" and "{solution-end}" in src:
                gated = False
            continue
        if cell.get("cell_type") == "code" and src.lstrip().startswith("with solution_output():"):
            continue
        if cell.get("cell_type") == "markdown" and "{solution}" in src:
            src = strip_markdown(src)
            if not src.strip():
                continue
            cell["source"] = src
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    if gated:
        raise ValueError("a {solution-start} block has no {solution-end}")
    nb["cells"] = cells
    return nb


def student_config(text: str) -> str:
    """The student edition's ``_config.yml``: the same, without launch buttons or repository button."""
    import yaml

    cfg = yaml.safe_load(text)
    cfg.pop("launch_buttons", None)
    cfg.setdefault("html", {})["use_repository_button"] = False
    cfg["title"] = f"{cfg.get('title', 'flashbook')} (student edition)"
    return yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True)


def _toc_for(pages) -> str:
    """A ``_toc.yml`` with the root page and ``pages`` only (a quick build of a few pages)."""
    import yaml

    return yaml.safe_dump({"format": "jb-book", "root": "book/intro",
                           "chapters": [{"file": p} for p in pages]}, sort_keys=False)


def prepare(root: Path, dest: Path, pages=None) -> Path:
    """Copy the book's sources from ``root`` to ``dest`` with every notebook stripped (:func:`strip_solutions`).

    Args:
        root: the repository root.
        dest: an empty or absent directory (it is replaced).
        pages: optional list of toc entries (``"book/12_exercises"``) to build alone, besides the root page.
    Returns:
        ``dest``.
    """
    root, dest = Path(root), Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in SOURCES:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    (dest / "_config.yml").write_text(student_config((root / "_config.yml").read_text(encoding="utf-8")),
                                      encoding="utf-8")
    if pages:
        (dest / "_toc.yml").write_text(_toc_for(pages), encoding="utf-8")
    for path in sorted((dest / "book").rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps(strip_solutions(nb), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return dest


def build(root: Path, out: Path, pages=None, extra_args=()) -> Path:
    """Build the student edition of the book at ``root`` into ``out/html``; returns that directory.

    Runs ``jupyter-book build`` (the one next to this Python) on :func:`prepare`'s copy with
    ``FLASHBOOK_EDITION=student`` and this checkout first on ``PYTHONPATH``.

    Raises:
        subprocess.CalledProcessError: the build failed.
    """
    root, out = Path(root).resolve(), Path(out).resolve()
    src = prepare(root, out / "src", pages)
    env = {**os.environ, "FLASHBOOK_EDITION": "student",
           "PYTHONPATH": os.pathsep.join([str(root)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(src), "--path-output", str(out), *extra_args]
    subprocess.run(cmd, check=True, env=env)
    html = out / "html"
    if html.exists():
        shutil.rmtree(html)
    shutil.move(str(out / "_build" / "html"), str(html))
    return html


_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?(?![\w])")


def _significant(token: str) -> int:
    """Significant digits of a number's text (``"136.30"`` -> 4, ``"0.050"`` -> 1, ``"100"`` -> 1)."""
    mantissa = token.lower().split("e")[0].lstrip("-").replace(",", "").replace(".", "")
    return len(mantissa.strip("0"))


def _formats(v: float, canon: str) -> set[str]:
    """Every way a page could print ``v``: repr, fixed 0-4 decimals (with and without thousands commas),
    2-5 significant digits, and the rounded text the graders compare."""
    out = {repr(v), canon, str(v)}
    for d in range(5):
        out |= {f"{v:.{d}f}", f"{v:,.{d}f}"}
    for g in range(2, 6):
        out |= {f"{v:.{g}g}", f"{v:,.{g}g}"}
    return out


def _inputs(numbers, shown) -> set[str]:
    """The numbers the questions of exercises ``numbers``, variants ``shown``, show (statement, example,
    labels, options, hint): inputs, not answers."""
    out = set()
    for k in numbers:
        for s in shown:
            pl = payload(k, s)
            text = " ".join([pl["statement"], pl["example"], pl["hint"]] + [p["label"] for p in pl["parts"]]
                            + [o["text"] for p in pl["parts"] for o in p.get("options") or []])
            out |= {t.replace(",", "") for t in _NUMBER.findall(text)}
    return out


def answer_texts(numbers=None, variants=(0,), min_digits: int = 3, shown=range(FORM_VARIANTS + 1)) -> dict:
    """``{text: "exercise k, variant s, part: what"}``: every text of an answer or known-mistake value of
    exercises ``numbers`` (default all), variants ``variants``, that a reader could recognise.

    Left out: texts with fewer than ``min_digits`` significant digits (``"3"``, ``"64"``, ``"100"`` are
    everywhere on a page about 64-wide heads; the default 3 keeps ``"136.3"``, ``"0.516"``, ``"1.135"``) and
    numbers that a question of these exercises shows in variants ``shown`` (the forms show 0..FORM_VARIANTS).
    """
    numbers = list(numbers or [ex.number for ex in EXERCISES])
    inputs = _inputs(numbers, shown)
    found = {}
    for k in numbers:
        ex = exercise(k)
        for s in variants:
            for p in payload(k, s)["parts"]:
                if p["kind"] != "number":
                    continue
                part = ex.part(p["key"])
                values = [("answer", p["ref"])] + [(f"mistake {m['id']}", m["value"]) for m in p["mistakes"]]
                for what, v in values:
                    for t in _formats(v, canonical(part, v)):
                        if _significant(t) >= min_digits and t.replace(",", "") not in inputs:
                            found.setdefault(t, f"exercise {k}, variant {s}, {p['key']}: {what} {v!r}")
    return found


def readable_answers(text: str, answers: dict) -> list[str]:
    """The entries of ``answers`` (:func:`answer_texts`) that stand as a whole number in ``text``."""
    present = set(_NUMBER.findall(text))
    return sorted(f"{t!r} ({answers[t]})" for t in present if t in answers)


def scan(directory: Path, numbers=None, pages=("12_exercises",)) -> list[str]:
    """Every readable answer (:func:`readable_answers`, variant 0: the page's own numbers, 3 significant
    digits or more) in the pages, notebooks and sources under ``directory`` (not the theme's ``_static/``)
    whose file name starts with one of ``pages`` (default: the exercises page; ``None``: every file). Other
    pages teach some of the lecture's worked numbers that exercises reuse: variants are the answer to that. The forms' variants are checked
    form by form (each exercise's own values, 2 digits or more) by the tests."""
    answers = answer_texts(numbers)
    out = []
    for path in sorted(Path(directory).rglob("*")):
        # the book's own files; the theme's vendored _static/ scripts hold SVG paths full of numbers
        if (path.is_file() and path.suffix in (".html", ".ipynb", ".txt", ".md", ".py") and "_static" not in path.parts
                and (pages is None or path.name.startswith(tuple(pages)))):
            out += [f"{path}: {hit}" for hit in readable_answers(path.read_text(encoding="utf-8", errors="replace"),
                                                                 answers)]
    return out


def main(argv=None) -> int:
    """``python -m flashbook.exercises.student [--out DIR] [--pages book/12_exercises ...] [-- jupyter-book args]``."""
    ap = argparse.ArgumentParser(description="Build the student edition of the book (no solutions, hashed keys).")
    ap.add_argument("--root", default=".", help="the repository root (default: .)")
    ap.add_argument("--out", default="_build/student", help="output directory (default: _build/student)")
    ap.add_argument("--pages", nargs="*", help="build only these toc entries besides the root page")
    ap.add_argument("extra", nargs="*", help="arguments passed on to jupyter-book build (after --)")
    a = ap.parse_args(argv)
    html = build(Path(a.root), Path(a.out), a.pages, a.extra)
    leaks = scan(Path(a.out))
    for line in leaks:
        print("readable answer:", line, file=sys.stderr)
    for line in sorted(set(scan(Path(a.out) / "html", pages=None)) - set(leaks)):
        print("note, a lecture number an exercise reuses:", line, file=sys.stderr)
    print(f"The student edition is at {html / 'index.html'}" + (f" ({len(leaks)} readable answers!)" if leaks else ""))
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
