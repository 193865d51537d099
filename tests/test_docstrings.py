"""Every public docstring of labcore and flashbook reads cleanly as the API page renders it (Google style through
napoleon, then reStructuredText), so the strict book build cannot fail on one; checked in a second, not a build."""
from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import re

import pytest
from docutils import nodes
from docutils.core import publish_doctree
from sphinx.ext.napoleon import Config
from sphinx.ext.napoleon.docstring import GoogleDocstring

CONFIG = Config(napoleon_google_docstring=True, napoleon_numpy_docstring=False,
                napoleon_custom_sections=["Source", "Sources", "Units", "Shapes"])   # as _config.yml
#: Sphinx roles and directives docutils alone does not know (the build resolves them).
SPHINX_ONLY = ("Unknown interpreted text role", "No role entry", "Unknown directive type", "No directive entry")
#: Section words napoleon knows (its own and CONFIG's); ``Word:`` heads a section only alone on its line.
_SECTION = (r"(?:Args|Arguments|Attributes|Parameters|Returns|Return|Raises|Yields|Sources|Source|Units|Shapes"
            r"|Examples|Example|Notes|Note|See [Aa]lso):")
_STARTS_WITH_SECTION = re.compile(rf"^{_SECTION}")
_SECTION_LATER = re.compile(rf"\b{_SECTION}")


def _documented():
    """(name, object) for every public module (its first paragraph: what the API page shows), public function,
    class and method of a public class."""
    for package in ("labcore", "flashbook"):
        top = importlib.import_module(package)
        for info in pkgutil.walk_packages(top.__path__, f"{package}."):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            mod = importlib.import_module(info.name)
            yield info.name, mod
            for name in getattr(mod, "__all__", ()):
                obj = getattr(mod, name, None)
                if inspect.isfunction(obj) or inspect.isclass(obj):
                    yield f"{info.name}.{name}", obj
                    if inspect.isclass(obj):
                        for attr, member in vars(obj).items():
                            if not attr.startswith("_") and inspect.isfunction(member):
                                yield f"{info.name}.{name}.{attr}", member


def rst_problems(doc: str, *, first_paragraph: bool = False, trailing_underscore_params=(), params=()) -> list[str]:
    """docutils' warnings and errors for ``doc`` rendered as the API page renders it; with ``params`` (the
    signature's names), also an Args entry that holds another parameter's entry (``Q: (N, d). K: (N, d).``)."""
    if first_paragraph:
        doc = doc.split("\n\n")[0]
    out = io.StringIO()
    rst = str(GoogleDocstring(doc, CONFIG, what="function"))
    tree = publish_doctree(rst, settings_overrides={"warning_stream": out, "report_level": 2, "halt_level": 5})
    # an Attributes entry napoleon could not split into ``name[, name] (type): text`` (the page shows it raw)
    problems = [f"attribute entry {line.split('::', 1)[1].strip()!r} is not a list of names"
                for line in rst.splitlines() if line.startswith(".. attribute::")
                and not all(n.strip().isidentifier() for n in line.split("::", 1)[1].split(","))]
    problems += _inline_sections(tree)
    problems += _entries_run_together(rst, params)
    for line in out.getvalue().splitlines():
        if not line.startswith("<string>:") or any(s in line for s in SPHINX_ONLY):
            continue
        # napoleon escapes a parameter such as ``pass_`` inside Sphinx; docutils alone reads it as a link target
        if any(f'Unknown target name: "{p.rstrip("_")}"' in line for p in trailing_underscore_params):
            continue
        problems.append(line.split(": ", 1)[-1])
    return problems


def _entries_run_together(rst: str, params) -> list[str]:
    """Args entries that run several parameters together on one line (``Q: (N, d). K: (N, d).``): napoleon reads
    one parameter ``Q`` whose text holds ``K: ...``, and the API page lists K under Q."""
    names = "|".join(sorted((re.escape(p) for p in params), key=len, reverse=True))
    if not names:
        return []
    later = re.compile(rf"[.;]\s+\*{{0,2}}({names})(?:, \*{{0,2}}(?:{names}))*(?: \([^)]*\))?: ")
    problems, entry = [], None
    for line in rst.splitlines() + [":end:"]:
        head = re.match(r":param ([^:]+):(.*)", line)
        if head or line.startswith(":"):
            if entry and (m := later.search(entry[1])):
                problems.append(f"Args entry {entry[0]!r} holds the entry of {m.group(1)!r}: one parameter per entry")
            entry = [head.group(1).strip(), head.group(2)] if head else None
        elif entry:
            entry[1] += " " + line.strip()
    return problems


def _inline_sections(tree) -> list[str]:
    """Sections written inline (``Source: text`` on the header's line) that napoleon left as text: with an
    indented continuation, a definition list whose bold term is ``Source: ...``; without, a paragraph that
    runs two sections together (``Args: ... Returns: ...``)."""
    problems = []
    for item in tree.findall(nodes.definition_list_item):
        term = item.next_node(nodes.term).astext()
        if _STARTS_WITH_SECTION.match(term):
            problems.append(f"inline section renders as a definition-list term: {term[:60]!r}")
    for para in tree.findall(nodes.paragraph):
        text = para.astext()
        head = _STARTS_WITH_SECTION.match(text)
        if head and _SECTION_LATER.search(text, head.end()):
            problems.append(f"two sections run together in one paragraph: {text[:60]!r}")
    return problems


@pytest.mark.parametrize("name, obj", list(_documented()), ids=lambda v: v if isinstance(v, str) else "")
def test_docstring_renders_without_warnings(name, obj):
    doc = inspect.getdoc(obj)
    if not doc:
        return
    names = ()
    if inspect.isfunction(obj) or inspect.isclass(obj):
        try:
            names = tuple(inspect.signature(obj).parameters)
        except (TypeError, ValueError):   # a class without an inspectable __init__
            names = ()
    trailing = [p for p in names if p.endswith("_")] if inspect.isfunction(obj) else []
    assert rst_problems(doc, first_paragraph=inspect.ismodule(obj), trailing_underscore_params=trailing,
                        params=names) == []
