"""Sphinx extension: the ``labcore-api`` directives that render the API reference (``book/api/``).

The reference is one page per group of modules (``book/api/algorithms.md``, ...), each generated, never
hand-maintained: its ``{labcore-api}`` directive names its modules (``:modules:``, dotted prefixes: ``labcore.chip``
is that package and every module below it), and every selected public module of ``labcore`` or ``flashbook``
(found with ``pkgutil``; private ``_*`` modules skipped) gets a section, every name in its ``__all__`` an autodoc
entry built from its docstring. ``{labcore-api-index}`` (``book/api/index.md``) lists the pages with their
modules, read from those options; ``tests/test_api_pages.py`` checks that each public module is on exactly one
page. A name re-exported at the top level is documented as ``labcore.NAME``
(what notebooks call) and is also resolvable under its defining module (``labcore.attention.NAME``), so
``{py:func}`labcore.reference_attention``` and ``:func:`reference_attention``` inside docstrings both
link here. Under each entry, "Explained in" links to the section named in ``flashbook.sections`` (d2l's
API appendix is the model); a page named there that is missing from the book fails the strict build.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import cache
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: The packages documented: the engine, the CUDA labs' harness, then the presentation (their names keep the dotted
#: path).
PACKAGES = ("labcore", "cudalab", "flashbook")
ROOT = Path(__file__).resolve().parents[2]
#: The API pages: ``_toc.yml`` entries below this folder (the index and one page per group of modules).
API_DIR = "book/api"
_BLOCK = re.compile(r"^```\{labcore-api\}[^\n]*\n(.*?)^```", re.M | re.S)
_OPTION = re.compile(r"^:modules:(.*)$", re.M)


def _public_modules():
    """(dotted module name, module) for every public labcore module, the engine first, then the presentation package."""
    out = []
    for package in PACKAGES:
        top = importlib.import_module(package)
        for info in sorted(pkgutil.walk_packages(top.__path__, f"{package}."), key=lambda i: i.name):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            out.append((info.name, importlib.import_module(info.name)))
    return out


@cache
def api_entries():
    """[(module name, module, [(documented name, section_for key, canonical name, object, kind)])].

    Each object appears once in the whole reference (the first module whose ``__all__`` lists it wins, over
    every module, whichever page shows it), so no duplicate descriptions. ``kind`` is the autodoc directive:
    function, class or data.
    """
    import labcore

    seen, out = set(), []
    for modname, mod in _public_modules():
        rows = []
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            top = getattr(labcore, name, None) is obj
            documented = f"labcore.{name}" if top else f"{modname}.{name}"
            key = name if top else f"{modname.split('.', 1)[1]}.{name}"
            kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "data"
            rows.append((documented, key, f"{modname}.{name}", obj, kind))
        out.append((modname, mod, rows))
    return out


def covers(prefix: str, modname: str) -> bool:
    """True when the dotted ``prefix`` selects module ``modname``: the module itself or one below it
    (``labcore.chip`` covers ``labcore.chip.tile``; ``labcore.decode`` does not cover ``labcore.decode_time``)."""
    return modname == prefix or modname.startswith(prefix + ".")


def select(prefixes):
    """The :func:`api_entries` of the modules the dotted ``prefixes`` cover, in the prefixes' order (each
    prefix's modules alphabetically), each module once.

    Args:
        prefixes: a sequence of dotted module names such as ``["labcore.attention", "labcore.chip"]``.
    Returns:
        list of :func:`api_entries` rows.
    Raises:
        TypeError: ``prefixes`` is a string, not a sequence of them.
        ValueError: no prefix given, or one covers no public module (a typo would otherwise drop a page's modules).
    """
    if isinstance(prefixes, str):
        raise TypeError(f"prefixes must be a sequence of dotted module names, got the string {prefixes!r}")
    if not prefixes:
        raise ValueError("select needs at least one dotted module prefix, such as 'labcore.attention'")
    out, seen = [], set()
    for prefix in prefixes:
        found = [e for e in api_entries() if covers(prefix, e[0])]
        if not found:
            raise ValueError(f"{prefix!r} covers no public module of {' or '.join(PACKAGES)}")
        out += [e for e in found if e[0] not in seen]
        seen.update(e[0] for e in found)
    return out


def page_modules(root: Path = ROOT) -> dict[str, list[str]]:
    """{API page (docname as in ``_toc.yml``): the prefixes of its ``{labcore-api}`` ``:modules:`` options}, in
    reading order; pages below :data:`API_DIR` without the directive (the index) are left out.

    Args: root: the repository root (``_toc.yml`` and the pages). Returns: dict of str -> list of str.
    """
    from flashbook.sections import toc_pages

    out: dict[str, list[str]] = {}
    for page in toc_pages(root / "_toc.yml"):
        path = root / f"{page}.md"
        if not page.startswith(API_DIR + "/") or not path.exists():
            continue
        for block in _BLOCK.findall(path.read_text(encoding="utf-8")):
            for option in _OPTION.findall(block):
                out.setdefault(page, []).extend(option.replace(",", " ").split())
    return out


def _first_paragraph(doc: str | None) -> str:
    doc = inspect.cleandoc(doc or "")
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip()


def _attribute_comments(modname: str) -> dict[str, list[str]]:
    """The ``#:`` documentation comments of a module's attributes, by name (Sphinx's own analyzer)."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
    except Exception:  # no source available: the entry simply has no description
        return {}
    return {name: list(lines) for (scope, name), lines in docs.items() if scope == ""}


def _is_myst(state) -> bool:
    """True when the directive sits in a MyST (Markdown) page, whose nested parser reads Markdown."""
    return type(state).__module__.startswith("myst_parser")


def _parse(directive, lines, node):
    """Parse reStructuredText ``lines`` into ``node`` (through MyST's eval-rst in a Markdown page)."""
    if _is_myst(directive.state):  # autodoc output is reStructuredText: hand it to MyST's eval-rst
        fence = "`" * 4
        lines = [f"{fence}{{eval-rst}}", *lines, fence]
    nested_parse_with_titles(directive.state, StringList(lines, source=directive.get_location()), node)


class LabcoreAPI(SphinxDirective):
    """``{labcore-api}`` with ``:modules: labcore.attention labcore.softmax ...``: one section per public module
    the prefixes cover, one autodoc entry per public name."""

    has_content = False
    option_spec = {"modules": directives.unchanged_required}

    def run(self):
        from flashbook.sections import section_for

        prefixes = self.options.get("modules", "").replace(",", " ").split()
        try:
            entries = select(prefixes)
        except (TypeError, ValueError) as e:
            raise self.error(f"labcore-api :modules: {e}") from None
        result = []
        py = self.env.get_domain("py")
        for modname, mod, rows in entries:
            if not rows:
                continue
            sec = nodes.section()
            sec["ids"].append(nodes.make_id(f"api-{modname}"))
            sec["names"].append(nodes.fully_normalize_name(modname))
            self.state.document.note_implicit_target(sec, sec)
            sec += nodes.title(modname, "", nodes.literal(modname, modname))
            # a py:module target, so :mod:`labcore.x` resolves to this section from any docstring or page
            lines = [f".. py:module:: {modname}", "", _first_paragraph(mod.__doc__), ""]
            comments = _attribute_comments(modname)
            for documented, key, _canon, obj, kind in rows:
                if kind == "data":  # autodata would print the docstring of dict/list itself
                    lines += [f".. py:data:: {documented}", f"   :type: {type(obj).__name__}", ""]
                    lines += ["   " + ln for ln in comments.get(documented.rsplit(".", 1)[1], [])] + [""]
                elif kind == "class":
                    lines += [f".. autoclass:: {documented}", "   :members:", ""]
                else:
                    lines += [f".. autofunction:: {documented}", ""]
                page = section_for(key)
                if page:
                    lines += [f"   *Explained in* :doc:`/{page}`.", ""]
            _parse(self, lines, sec)
            result.append(sec)
            # Also resolve the canonical (defining-module) name of re-exported objects.
            for documented, _key, canon, _obj, kind in rows:
                if canon != documented and canon not in py.objects and documented in py.objects:
                    entry = py.objects[documented]
                    py.note_object(canon, entry.objtype, entry.node_id, aliased=True, location=self.get_location())
        return result


class LabcoreAPIIndex(SphinxDirective):
    """``{labcore-api-index}``: each API page (its title as a link) and the modules it documents, read from the
    pages' ``:modules:`` options (:func:`page_modules`)."""

    has_content = False

    def run(self):
        root = Path(self.env.srcdir)
        lines = []
        for page, prefixes in page_modules(root).items():
            self.env.note_dependency(str(root / f"{page}.md"))   # a page's modules change: the index is rebuilt
            mods = ", ".join(f":mod:`{name}`" for name, _mod, rows in select(prefixes) if rows)
            lines += [f"- :doc:`/{page}`: {mods}", ""]
        container = nodes.container()
        _parse(self, lines, container)
        return container.children


def factory_defaults(signature: str | None, obj) -> str | None:
    """``signature`` with each dataclass field's ``<factory>`` (what :mod:`inspect` shows for a
    ``field(default_factory=...)``) replaced by the value a new instance gets: ``parts: dict = {}``, not
    ``parts: dict = <factory>``. A long or unprintable value is written as the factory's call (``deque()``).
    Other objects and signatures are returned as they are."""
    import dataclasses

    if signature is None or "<factory>" not in signature or not dataclasses.is_dataclass(obj):
        return signature
    for f in dataclasses.fields(obj):
        if f.default_factory is dataclasses.MISSING:
            continue
        try:
            shown = repr(f.default_factory())
        except Exception:                              # a factory that needs the instance: name it
            shown = ""
        if not shown or len(shown) > 30 or shown.startswith("<"):
            shown = getattr(f.default_factory, "__name__", "factory") + "()"
        signature = re.sub(rf"(\b{re.escape(f.name)}\b[^=]*?=\s*)<factory>", lambda m: m.group(1) + shown, signature,
                           count=1)
    return signature


def _factory_defaults(app, what, name, obj, options, signature, return_annotation):
    """``autodoc-process-signature``: :func:`factory_defaults` on a class's signature."""
    if what == "class":
        return factory_defaults(signature, obj), return_annotation
    return None


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.connect("autodoc-process-signature", _factory_defaults)
    app.add_directive("labcore-api", LabcoreAPI)
    app.add_directive("labcore-api-index", LabcoreAPIIndex)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
