"""Where the book explains each public name, derived from the pages themselves (d2l's "Defined in" model).

:func:`section_for` maps a public name to the book page that explains it: the page's path in ``_toc.yml``
(e.g. ``"book/02_io_awareness"``), or ``None`` for presentation plumbing that no section discusses. Nothing is
kept by hand: the page is the **first page in ``_toc.yml`` order that uses the name**, where a use is

- a call or reference in a code cell: ``lc.name`` / ``labcore.name`` (any alias of ``import labcore``),
  ``from labcore... import name``, ``from flashbook... import name``, or ``alias.name`` for a module imported
  from ``labcore`` or ``flashbook`` (``decode_plots.measured_table`` is ``figures.decode.measured_table``);
- a ``{py:func}`` (or ``py:class``, ``py:data``) role in the page's Markdown.

A name no page uses is explained where its module is first used (then its parent package's), so a
dataclass that a function returns lands beside that function. The API reference (the pages below ``book/api/``,
rendered by ``book/_ext/flashbook_api.py``, themselves not scanned) prints "Explained in <section>" under each entry;
``tests/test_sections.py`` checks that every public name resolves and that every page exists.

Names: a top-level name (``"reference_attention"``) or, below ``labcore``, ``cudalab`` or ``flashbook``, the
dotted path without the package (``"published.published"``, ``"sim.Device"``, ``"display.show"``,
``"figures.decode.splits_figure"``); the three packages name their modules apart, so the path is unambiguous.
"""
from __future__ import annotations

import ast
import importlib
import json
import re
from functools import cache
from pathlib import Path

__all__ = ["PLUMBING", "section_for", "toc_pages", "page_uses"]

ROOT = Path(__file__).resolve().parents[1]
#: Presentation modules (below ``flashbook``) whose names no section explains: they map to None.
PLUMBING = ("display", "explorer", "live", "player", "prefetch", "drawing", "dark", "mode", "sections", "figures",
            "figures.base")
#: The folder of pages that are not explanations (the API reference links to the others).
_NOT_SCANNED = "book/api/"
_ROLE = re.compile(r"\{py:(?:func|class|data|obj|meth|attr)\}`~?([\w.]+)`")
_PACKAGES = ("labcore", "cudalab", "flashbook")


@cache
def _key(package: str, dotted: tuple[str, ...]) -> str | None:
    """The API key of ``package.a.b.c`` (a tuple of parts): a labcore top-level name, or ``module.name``."""
    import labcore

    if not dotted:
        return None
    if package == "labcore" and dotted[0] in labcore.__all__:
        return dotted[0]
    for i in range(len(dotted) - 1, 0, -1):       # the longest module prefix that exists
        modpath = ".".join(dotted[:i])
        try:
            mod = importlib.import_module(f"{package}.{modpath}")
        except ImportError:
            continue
        return f"{modpath}.{dotted[i]}" if dotted[i] in getattr(mod, "__all__", ()) else None
    if package == "flashbook":                    # a top-level re-export: key it by its defining module
        obj = getattr(importlib.import_module("flashbook"), dotted[0], None)
        mod = getattr(obj, "__module__", "") or ""
        if mod.startswith("flashbook."):
            return f"{mod.split('.', 1)[1]}.{dotted[0]}"
    return None


@cache
def _is_module(package: str, parts: tuple[str, ...]) -> bool:
    try:
        importlib.import_module(".".join((package, *parts)))
        return True
    except ImportError:
        return False


def _chain(node) -> list[str]:
    """``a.b.c`` as ["a", "b", "c"] (empty when the expression is not a plain dotted name)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else []


def _code_uses(source: str, aliases: dict[str, tuple[str, tuple[str, ...]]]) -> set[str]:
    """API keys a code cell uses; ``aliases`` (name -> (package, module parts)) carries over between cells."""
    try:
        tree = ast.parse(source)
    except SyntaxError:                           # IPython syntax: no uses counted from this cell
        return set()
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top, *rest = a.name.split(".")
                if top in _PACKAGES:
                    aliases[a.asname or top] = (top, tuple(rest) if a.asname else ())
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _PACKAGES:
            top, *rest = node.module.split(".")
            for a in node.names:
                if _is_module(top, (*rest, a.name)):
                    aliases[a.asname or a.name] = (top, (*rest, a.name))
                elif (k := _key(top, (*rest, a.name))):
                    keys.add(k)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = _chain(node)
            if parts and parts[0] in aliases:
                package, base = aliases[parts[0]]
                for n in range(2, len(parts) + 1):          # lc.published.published -> published.published
                    if (k := _key(package, (*base, *parts[1:n]))):
                        keys.add(k)
                        break
    return keys


def _page_cells(path: Path):
    """(kind, text) of a page's cells: a notebook's code and Markdown cells, or a .md page as one Markdown cell."""
    if path.suffix == ".ipynb":
        for c in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            yield c["cell_type"], "".join(c["source"])
    else:
        yield "markdown", path.read_text(encoding="utf-8")


@cache
def page_uses() -> dict[str, str]:
    """Every used API key -> the first page (in ``_toc.yml`` order) that uses it. Source: the pages themselves."""
    first: dict[str, str] = {}
    for page in toc_pages(ROOT / "_toc.yml"):
        if page.startswith(_NOT_SCANNED):
            continue
        path = next((p for p in (ROOT / f"{page}.ipynb", ROOT / f"{page}.md") if p.exists()), None)
        if path is None:
            continue
        aliases: dict[str, tuple[str, tuple[str, ...]]] = {}
        for kind, text in _page_cells(path):
            if kind == "code":
                keys = _code_uses(text, aliases)
            else:
                keys = {k for ref in _ROLE.findall(text) if (k := _key(*_split(ref)))}
            for k in keys:
                first.setdefault(k, page)
    return first


def _split(ref: str) -> tuple[str, tuple[str, ...]]:
    top, *rest = ref.split(".")
    return (top, tuple(rest)) if top in _PACKAGES else ("labcore", (top, *rest))


@cache
def _module_of(key: str) -> str:
    """The module (below its package) that defines the API key ``key``."""
    import labcore

    if "." in key:
        return key.rpartition(".")[0]
    for name in sorted(m for m in dir(labcore) if not m.startswith("_")):
        mod = getattr(labcore, name)
        if getattr(mod, "__name__", "").startswith("labcore.") and key in getattr(mod, "__all__", ()):
            return name
    return ""


def _is_public(key: str) -> bool:
    import labcore

    if key in labcore.__all__:
        return True
    modpath, _, attr = key.rpartition(".")
    for package in _PACKAGES:
        if modpath and _is_module(package, tuple(modpath.split("."))):
            return attr in getattr(importlib.import_module(f"{package}.{modpath}"), "__all__", ())
    return False


def section_for(name: str) -> str | None:
    """The book page (path as in ``_toc.yml``) that explains the public name ``name``, or None.

    Args:
        name: a public name such as ``"reference_attention"``, ``"display.show"`` or
            ``"figures.decode.splits_figure"``; a leading ``"labcore."``, ``"cudalab."`` or ``"flashbook."`` is
            accepted and ignored.
    Returns:
        The first page that uses the name (see the module documentation), else the first page that uses its
        module or a parent package, e.g. ``"book/02_io_awareness"``; None for presentation plumbing
        (:data:`PLUMBING`) and for names of a module no page uses.
    Raises:
        TypeError: ``name`` is not a string.
        ValueError: ``name`` is not a public labcore or flashbook name.
    Source:
        d2l.ai's API appendix (each function links to the section that introduces it).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string such as 'reference_attention', got {type(name).__name__}")
    key = name.split(".", 1)[1] if name.startswith(("labcore.", "cudalab.", "flashbook.")) else name
    if not key or not _is_public(key):
        raise ValueError(f"name {name!r} is not a public labcore name (see the __all__ of the labcore modules)")
    module = _module_of(key)
    if module in PLUMBING:
        return None
    uses = page_uses()
    if key in uses:
        return uses[key]
    pages = [(p, k) for k, p in uses.items()]
    order = {p: i for i, p in enumerate(toc_pages(ROOT / "_toc.yml"))}
    parts = module.split(".")
    for n in range(len(parts), 0, -1):                 # its module, then each parent package
        prefix = ".".join(parts[:n])
        found = [p for p, k in pages if _module_of(k) == prefix or _module_of(k).startswith(prefix + ".")]
        if found:
            return min(found, key=order.__getitem__)
    return None


def toc_pages(toc_path) -> list[str]:
    """Every page of the book's table of contents in reading order, root first, as docnames
    (``["book/intro", "book/01_bottlenecks", ...]``).

    Args:
        toc_path: path of ``_toc.yml``.
    Returns:
        list of str.
    Raises:
        ``sphinx_external_toc``'s errors: for a malformed table of contents.
        ImportError: without it (it comes with Jupyter Book, which parses the same file the same way).
    """
    from sphinx_external_toc.parsing import parse_toc_yaml

    site = parse_toc_yaml(str(toc_path))

    def walk(doc) -> list[str]:
        pages = [doc.docname]
        for tree in doc.subtrees:
            for item in tree.items:
                if str(item) in site:          # a page (URLs and globs are not pages of this book)
                    pages += walk(site[str(item)])
        return pages

    return walk(site.root)
