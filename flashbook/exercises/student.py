"""The student edition of the book: no worked solution in any page, notebook or download, no readable key, no
instructors' page, no link into the repository, and no sentence about a control it removed.

``make student`` (``python -m flashbook.exercises.student``) builds a second HTML book without editing the
committed notebooks:

1. :func:`prepare` copies the book's sources (``_config.yml``, ``_toc.yml``, ``book/``, ``_static/``,
   ``references.bib``) to ``<out>/src`` and edits the copies only:

   - every worked solution goes (:func:`strip_solutions`): ``{solution}`` directives (the dropdowns under each
     exercise), gated ``{solution-start}`` ... ``{solution-end}`` blocks, and the code cells that print a
     solution (``with solution_output():``);
   - the instructors' page (:data:`INSTRUCTOR_PAGES`) leaves the table of contents and the copy
     (:func:`student_toc`);
   - the Colab install cells go (they install the package from the repository, for a launch button this
     edition does not have);
   - the sentences of the full edition that name a removed control (the launch buttons, the worked solutions,
     the repository's ``make lab``) are replaced by the student edition's (:data:`STUDENT_TEXT`,
     :func:`student_text`); a rule that no longer matches its source fails the build, so a reworded page is
     noticed;
   - the copied ``_config.yml`` drops the launch buttons and the repository, issue and edit buttons
     (:func:`student_config`).
2. :func:`build` runs ``jupyter-book build`` on the copy with ``FLASHBOOK_EDITION=student``: the exercise forms
   then carry salted hashes of the rounded answers (:mod:`flashbook.exercises.keys`) instead of the values,
   the footer names the licences without linking into the repository, the interactive figures' note points at
   the download button instead of the launch button, and ``_sources`` (the notebooks a reader downloads) are
   the edited copies. The HTML lands in ``<out>/html`` (default ``_build/student/html``).
3. :func:`scan` greps every page, notebook and source of the result for each exercise's answer and
   known-mistake values in every format the page could print them (:func:`answer_texts`), and
   :func:`removed_mentions` reads every page and notebook for a link into the repository, the instructors'
   page or a sentence about a removed control (:data:`REMOVED_MENTIONS`); any hit fails.

The check cells still work in a live kernel (the Python grader computes the answers with labcore): that, and
trying numbers against the keys, is what the protection does not stop (the instructors' page says so).

Source: this book's build; Jupyter Book 1.x ``--path-output``.
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

__all__ = ["strip_solutions", "strip_markdown", "student_config", "student_toc", "student_text", "student_notebook",
           "prepare", "build", "main", "SOURCES", "INSTRUCTOR_PAGES", "STUDENT_TEXT", "REMOVED_MENTIONS",
           "answer_texts", "readable_answers", "scan", "visible_text", "removed_mentions"]

#: What the build copies from the repository root (the rest is excluded by ``_config.yml`` anyway).
SOURCES = ("_config.yml", "_toc.yml", "book", "_static", "references.bib")

_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}")

#: Pages of the full edition written for whoever teaches (grading, the answer key, the editions): the student
#: edition leaves them out of its table of contents and its copy of the sources.
INSTRUCTOR_PAGES = ("book/instructors",)

#: The full edition's sentences that name what the student edition removes, and what the student edition says
#: instead: ``(files, full text, student text)``, ``files`` a glob under the copied sources. The full text is
#: matched with any run of whitespace standing for any other (a rewrapped line still matches); every rule must
#: match at least once in its files, else :func:`prepare` fails and names it (the page was reworded: update the
#: rule). The student text names only what the edition has: the forms, the check cells, the download button.
STUDENT_TEXT = (
    ("book/intro.md",
     "the rocket icon at the top of a notebook page opens it in JupyterLab on Binder (or on Colab, or runs its "
     "cells in the page with Thebe).",
     "download a page's notebook (the download icon at the top of the page, `.ipynb`) and open it in the JupyterLab "
     "your course provides, with `flashbook` and its MyST renderer (`jupyterlab-myst`) installed."),
    # the pointer to the instructors' page, which this edition leaves out
    ("book/intro.md",
     "Teaching from the book? {doc}`instructors` maps each learning goal to its sections, exercises and labs, and "
     "says how to grade a class.",
     ""),
    ("book/intro.md",
     " Locally, from a clone of the repository: `make lab` installs JupyterLab with its MyST renderer into "
     "`.venv` and opens the notebooks (the README's \"Run it live\" section says what works where).",
     ""),
    # the checkpoint at the end of each section
    ("book/*.ipynb",
     " (which keeps the whole set and the worked solutions).",
     " (which keeps the whole set)."),
    ("book/12_exercises.ipynb",
     "In a live notebook (rocket icon: Binder, Colab or Thebe; or `make lab`) each exercise",
     "In a live notebook (this page's notebook, downloaded with the download icon at the top of the page and "
     "opened in JupyterLab) each exercise"),
    ("book/12_exercises.ipynb",
     " Solutions are folded under each exercise; their numbers are computed by `labcore` when the page is built. "
     "In JupyterLab the solution's text is a closed box and its code cells are collapsed (click the bar or the "
     "dots to open them, then run the cell).",
     ""),
    ("book/labs/lab*.ipynb",
     "open this page in JupyterLab (`make lab`), Binder or Colab (rocket icon),",
     "download this page's notebook (the download icon at the top of the page), open it in JupyterLab,"),
    ("book/labs/index.md",
     "a starter kernel that runs, a check cell and a folded reference solution.",
     "a starter kernel that runs and a check cell."),
    ("book/labs/lab[1-5]_*.ipynb",
     " To try the reference solution, paste the code shown under the solution below into this cell, as it is, and "
     "run this cell and the check cell.",
     ""),
    ("book/labs/lab[6-9]_cuda_*.ipynb",
     "Kernels run in a live notebook: `make lab`, Binder or Colab (the rocket icon).",
     "Kernels run in a live notebook: download this page's notebook (the download icon at the top of the page) and "
     "open it in JupyterLab."),
    ("book/labs/lab[6-9]_cuda_*.ipynb",
     "(a workstation, or Colab's *Runtime > Change runtime type > GPU*, then",
     "(a workstation, or a GPU runtime your course provides, then"),
    ("book/labs/index.md",
     "Open the lab in a runtime with an NVIDIA GPU: Colab's *Runtime > Change runtime type > GPU*, or a workstation "
     "with `make lab`.",
     "Open the lab's notebook (the download icon at the top of its page) in a JupyterLab with an NVIDIA GPU (a "
     "workstation, or a GPU runtime your course provides)."),
    ("book/labs/index.md",
     "Kernels run only in a live notebook (`make lab`, Binder or Colab);",
     "Kernels run only in a live notebook (download a lab's notebook with the download icon at the top of its page "
     "and open it in JupyterLab);"),
)

#: What no page or notebook of the student edition may mention (:func:`removed_mentions`): ``(regular expression,
#: what it names, where)``. ``"prose"``: the visible text (:func:`visible_text`) of every page but the API
#: reference's, which documents the package's code, worked-solution helpers included; ``"file"``: the whole
#: file, links and attributes included, of every page.
REMOVED_MENTIONS = (
    (r"rocket icon|\bBinder\b|\bColab\b|\bThebe\b|[Ll]aunch this page", "a launch button", "prose"),
    (r"[Ww]orked solutions?|reference solution|[Ss]olutions? (is|are) folded|Show the worked solution",
     "a worked solution", "prose"),
    (r"\bmake lab\b|clone of the repository|README['’]s", "the repository's tooling", "prose"),
    (r"For instructors|instructors\.html|book/instructors|<instructors>", "the instructors' page", "file"),
)


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
    """The student edition's ``_config.yml``: the same, without launch buttons and without the repository, issue
    and edit buttons (each opens the repository, where the full notebooks and the instructors' page are)."""
    import yaml

    cfg = yaml.safe_load(text)
    cfg.pop("launch_buttons", None)
    cfg.setdefault("html", {}).update(use_repository_button=False, use_issues_button=False,
                                      use_edit_page_button=False)
    cfg["title"] = f"{cfg.get('title', 'flashbook')} (student edition)"
    return yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True)


def student_toc(text: str) -> str:
    """The student edition's ``_toc.yml`` (the text of the full one): without :data:`INSTRUCTOR_PAGES`, and
    without a part or a list of sections that is left empty.

    Raises:
        ValueError: the root page is an instructors' page.
    """
    import yaml

    toc = yaml.safe_load(text)
    if toc.get("root") in INSTRUCTOR_PAGES:
        raise ValueError(f"the root page {toc['root']!r} is an instructors' page")

    def entries(items):
        kept = []
        for item in items or []:
            if isinstance(item, dict) and item.get("file") in INSTRUCTOR_PAGES:
                continue
            if isinstance(item, dict):
                item = dict(item)
                for key in ("chapters", "sections", "parts"):
                    if key in item:
                        item[key] = entries(item[key])
                        if not item[key]:
                            del item[key]
                if "file" not in item and "url" not in item and "glob" not in item and not (
                        set(item) & {"chapters", "sections", "parts"}):
                    continue           # a part whose every page was left out
            kept.append(item)
        return kept

    for key in ("parts", "chapters", "sections"):
        if key in toc:
            toc[key] = entries(toc[key])
    return yaml.safe_dump(toc, sort_keys=False, allow_unicode=True)


def _loose(text: str) -> re.Pattern:
    """``text`` as a pattern in which any run of whitespace matches any other (rewrapped prose still matches)."""
    words = text.split()
    pattern = r"\s+".join(re.escape(w) for w in words)
    return re.compile((r"\s*" if text[:1].isspace() else "") + pattern)


def student_text(text: str, relpath: str, counts: dict | None = None) -> str:
    """``text`` (a Markdown file's or cell's source at ``relpath``, a path under the sources such as
    ``"book/intro.md"``) with every :data:`STUDENT_TEXT` rule whose glob matches ``relpath`` applied.
    ``counts``, if given, gains the number of replacements per rule index."""
    from fnmatch import fnmatch

    for i, (files, full, student) in enumerate(STUDENT_TEXT):
        if fnmatch(relpath, files):
            text, n = _loose(full).subn(lambda m, s=student: s, text)
            if counts is not None:
                counts[i] = counts.get(i, 0) + n
    return text


def _colab_cell(cell) -> bool:
    return cell.get("cell_type") == "code" and "google.colab" in _source(cell)


def student_notebook(nb: dict, relpath: str, counts: dict | None = None) -> dict:
    """A copy of notebook ``nb`` as the student edition has it: :func:`strip_solutions`, without the Colab
    install cell (it installs the package from the repository), and :func:`student_text` applied to every
    Markdown cell."""
    nb = strip_solutions(nb)
    cells = []
    for cell in nb["cells"]:
        if _colab_cell(cell):
            continue
        if cell.get("cell_type") == "markdown":
            cell["source"] = student_text(_source(cell), relpath, counts)
        cells.append(cell)
    nb["cells"] = cells
    return nb


def _toc_for(pages) -> str:
    """A ``_toc.yml`` with the root page and ``pages`` only (a quick build of a few pages)."""
    import yaml

    return yaml.safe_dump({"format": "jb-book", "root": "book/intro",
                           "chapters": [{"file": p} for p in pages]}, sort_keys=False)


def prepare(root: Path, dest: Path, pages=None) -> Path:
    """Copy the book's sources from ``root`` to ``dest`` as the student edition has them: every notebook through
    :func:`student_notebook`, every Markdown page through :func:`student_text`, the instructors' pages left out
    (:func:`student_toc`), the configuration through :func:`student_config`.

    Args:
        root: the repository root.
        dest: an empty or absent directory (it is replaced).
        pages: optional list of toc entries (``"book/12_exercises"``) to build alone, besides the root page.
    Returns:
        ``dest``.
    Raises:
        ValueError: a rule of :data:`STUDENT_TEXT` matched nothing (its page was reworded), or ``pages`` names an
            instructors' page.
    """
    root, dest = Path(root), Path(dest)
    if pages and set(pages) & set(INSTRUCTOR_PAGES):
        raise ValueError(f"pages: {sorted(set(pages) & set(INSTRUCTOR_PAGES))} are not part of the student edition")
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
    toc = _toc_for(pages) if pages else (root / "_toc.yml").read_text(encoding="utf-8")
    (dest / "_toc.yml").write_text(student_toc(toc), encoding="utf-8")
    for page in INSTRUCTOR_PAGES:
        for path in (dest / page).parent.glob((dest / page).name + ".*"):
            path.unlink()
    counts: dict[int, int] = {}
    for path in sorted((dest / "book").rglob("*")):
        rel = path.relative_to(dest).as_posix()
        if path.suffix == ".ipynb":
            nb = student_notebook(json.loads(path.read_text(encoding="utf-8")), rel, counts)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        elif path.suffix == ".md":
            path.write_text(student_text(path.read_text(encoding="utf-8"), rel, counts), encoding="utf-8")
    stale = [f"{files}: {full[:60]!r}..." for i, (files, full, _) in enumerate(STUDENT_TEXT) if not counts.get(i)]
    if stale:
        raise ValueError("rules of STUDENT_TEXT that match nothing (the page was reworded; update the rule): "
                         + "; ".join(stale))
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


def visible_text(path: Path) -> str:
    """What a reader reads in ``path``: a page's text without its tags, scripts and styles (entities decoded), a
    notebook's cell sources and text outputs, any other file as it is; whitespace runs become one space."""
    import html as html_lib

    text = Path(path).read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        parts = []
        for cell in json.loads(text).get("cells", []):
            parts.append(_source(cell))
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                for value in [out.get("text"), data.get("text/plain"), data.get("text/markdown")]:
                    if value:
                        parts.append("".join(value) if isinstance(value, list) else value)
        text = "\n".join(parts)
    elif path.suffix == ".html":
        text = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", text)
        text = re.sub(r"(?s)<!--.*?-->|<[^>]+>", " ", text)
        text = html_lib.unescape(text)
    return re.sub(r"\s+", " ", text)


def _repository_urls(root: Path = Path(__file__).resolve().parents[2]) -> list[str]:
    """The repository's address as ``_config.yml`` names it, without its scheme (``github.com/owner/name``)."""
    import yaml

    cfg = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    url = ((cfg.get("repository") or {}).get("url") or "").rstrip("/")
    return [re.sub(r"^https?://", "", url)] if url else []


def removed_mentions(directory: Path, repository=None) -> list[str]:
    """Every place in the pages (``.html``), notebooks (``.ipynb``) and sources (``.md``, ``.txt``) under
    ``directory`` (not a theme's ``_static/``) where the student edition names what it removed: a link into the
    repository (``repository``: addresses without scheme, default the one in ``_config.yml``, searched in the
    whole file, links included), or a :data:`REMOVED_MENTIONS` pattern where its rule looks. One line per hit:
    ``path: what: ...context...``."""
    repository = _repository_urls() if repository is None else list(repository)
    rules = [(re.compile(rx), what, scope) for rx, what, scope in REMOVED_MENTIONS]
    out = []
    for path in sorted(Path(directory).rglob("*")):
        if not path.is_file() or path.suffix not in (".html", ".ipynb", ".md", ".txt") or "_static" in path.parts:
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        for url in repository:
            for m in re.finditer(re.escape(url), raw):
                out.append(f"{path}: a link into the repository: ...{raw[max(0, m.start() - 60):m.end() + 20]}...")
        text = visible_text(path)
        api = "api" in path.relative_to(directory).parts
        for rx, what, scope in rules:
            if scope == "prose" and api:
                continue
            for m in rx.finditer(text if scope == "prose" else raw):
                out.append(f"{path}: {what}: ...{text[max(0, m.start() - 60):m.end() + 40]}...")
    return out


def main(argv=None) -> int:
    """``python -m flashbook.exercises.student [--out DIR] [--pages book/12_exercises ...] [-- jupyter-book args]``."""
    ap = argparse.ArgumentParser(description="Build the student edition of the book (no solutions, hashed keys, "
                                             "no instructors' page, no link into the repository).")
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
    mentions = removed_mentions(Path(a.out), _repository_urls(Path(a.root).resolve()))
    for line in mentions:
        print("removed from this edition, still mentioned:", line, file=sys.stderr)
    problems = [f"{len(leaks)} readable answers"] * bool(leaks) + [f"{len(mentions)} mentions of what it removed"] * bool(
        mentions)
    print(f"The student edition is at {html / 'index.html'}" + (f" ({', '.join(problems)}!)" if problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
