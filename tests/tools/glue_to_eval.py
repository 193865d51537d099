"""Convert myst-nb ``glue`` prose references to the ``{eval}`` role (issue 12), in place.

Usage: ``python tests/tools/glue_to_eval.py book/*.ipynb`` (idempotent: a notebook without ``glue``
is left as it is, so it can be re-run after merging branches that still add ``glue`` calls).

* Markdown: ``{glue:text}`key:spec``` becomes ``{eval}`f"{key:spec}"```, ``{glue:text}`key``` and
  ``{glue}`key``` become ``{eval}`f"{key}"``` (``str``, never a numpy repr). The book evaluates the role
  with myst-nb's inline execution; JupyterLab with jupyterlab-myst when the Markdown cell is run.
* Code: ``glue("key", value, display=False)`` becomes ``key = value`` (dropped when ``value`` is the name
  ``key`` itself); a computed key becomes ``globals()[key] = value``; a loop
  ``for k, v in X.items(): glue(k, v, ...)`` becomes ``globals().update(X)``. The ``myst_nb`` glue import
  and a local ``def glue`` wrapper are removed. A code cell left empty is dropped.

* A code cell tagged ``remove-cell`` (except the Colab install cell) is re-tagged ``remove-input`` +
  ``remove-output``: myst-nb's inline execution never runs a ``remove-cell`` cell before the ``{eval}``
  roles that follow it (it skips the cell and only catches up at the next rendered code cell), whereas a
  cell with both tags runs in order and still shows nothing.

It prints every prose name that no earlier code cell binds (the role is evaluated in reading order) and
every key that was already a different variable of the notebook: fix those by hand.
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

ROLE = re.compile(r"\{glue(?::text)?\}`([^`:]+)(?::([^`]*))?`")


def _offsets(src: str) -> list[int]:
    starts, pos = [], 0
    for line in src.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    return starts


def _span(node, starts):
    return starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset


def _is_glue(node) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "glue")


def convert_code(src: str) -> tuple[str, set[str]]:
    """Return the rewritten cell source and the literal keys it binds."""
    if "glue" not in src:
        return src, set()
    tree = ast.parse(src)
    starts = _offsets(src)
    edits, keys = [], set()
    seg = lambda n: ast.get_source_segment(src, n)  # noqa: E731
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "myst_nb":
            edits.append((*_span(node, starts), ""))
        elif isinstance(node, ast.FunctionDef) and node.name == "glue":
            edits.append((*_span(node, starts), ""))
        elif (isinstance(node, ast.For) and len(node.body) == 1 and _is_glue(node.body[0])
              and isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2
              and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Attribute)
              and node.iter.func.attr == "items" and not node.iter.args):
            call = node.body[0].value
            k, v = (e.id for e in node.target.elts)
            if [seg(a) for a in call.args[:2]] == [k, v]:
                mapping = node.iter.func.value
                if isinstance(mapping, ast.Dict):
                    keys.update(x.value for x in mapping.keys if isinstance(x, ast.Constant))
                elif isinstance(mapping, ast.Call):
                    keys.update(kw.arg for kw in mapping.keywords if kw.arg)
                edits.append((*_span(node, starts), f"globals().update({seg(mapping)})"))
                node.body = []  # handled
    for node in ast.walk(tree):
        if not _is_glue(node):
            continue
        key, value = node.value.args[:2]
        a, b = _span(node, starts)
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys.add(key.value)
            new = "" if seg(value) == key.value else f"{key.value} = {seg(value)}"
        else:
            new = f"globals()[{seg(key)}] = {seg(value)}"
        edits.append((a, b, new))
    for a, b, new in sorted(edits, reverse=True):
        if not new and (a == 0 or src[a - 1] == "\n") and src[b:b + 1] == "\n":
            b += 1  # a removed statement takes its line with it
        src = src[:a] + new + src[b:]
    # tidy: statements emptied on a line shared with ';', blank runs, trailing blanks
    lines = []
    for line in src.splitlines():
        line = re.sub(r";\s*;", ";", line)
        line = re.sub(r"^(\s*);\s*", r"\1", line)
        line = re.sub(r";\s*$", "", line)
        if line.strip() == "" and (not lines or lines[-1].strip() == ""):
            continue
        lines.append(line.rstrip())
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines), keys


def convert_markdown(src: str) -> tuple[str, set[str]]:
    names = set()

    def repl(m):
        key, spec = m.group(1).strip(), (m.group(2) or "").strip()
        names.add(key)
        return f'{{eval}}`f"{{{key}:{spec}}}"`' if spec else f'{{eval}}`f"{{{key}}}"`'

    return ROLE.sub(repl, src), names


def _lines(text: str) -> list[str]:
    out = text.splitlines(keepends=True)
    if out and out[-1].endswith("\n"):
        out[-1] = out[-1][:-1]
    return out


def convert(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems, bound, cells, new_code = [], set(), [], ""
    all_code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code":
            tags = cell["metadata"].get("tags", [])
            if "remove-cell" in tags and "google.colab" not in src:
                cell["metadata"]["tags"] = [t for t in tags if t != "remove-cell"] + ["remove-input", "remove-output"]
            new, keys = convert_code(src)
            for k in keys:
                if re.search(rf"^\s*{re.escape(k)}\s*=(?!=)", all_code, re.M):
                    problems.append(f"{path.name}: glue key {k!r} is also assigned as a variable: check")
            bound |= keys
            new_code += new
            bound |= set(re.findall(r"^\s*([A-Za-z_]\w*)\s*=(?!=)", new, re.M))
            if src.strip() and not new.strip():
                continue
            cell["source"] = _lines(new)
        elif cell["cell_type"] == "markdown":
            new, names = convert_markdown(src)
            late = sorted(n for n in names if n not in bound and "globals()" not in all_code + new_code)
            problems += [f"{path.name}: {{eval}} of {n!r} before any cell binds it" for n in late]
            cell["source"] = _lines(new)
        cells.append(cell)
    nb["cells"] = cells
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return problems


if __name__ == "__main__":
    issues = [p for arg in sys.argv[1:] for p in convert(Path(arg))]
    print("\n".join(issues) or "converted, nothing to check by hand")
    sys.exit(0)
