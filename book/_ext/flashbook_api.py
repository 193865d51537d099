"""Sphinx extension: the ``labcore-api`` directive that renders the API reference (``book/api.md``).

The page is generated, never hand-maintained: every public module of ``labcore`` and then of ``flashbook`` (found with
``pkgutil``; private ``_*`` modules skipped) gets a section, and every name in its ``__all__`` an autodoc
entry built from its docstring. A name re-exported at the top level is documented as ``labcore.NAME``
(what notebooks call) and is also resolvable under its defining module (``labcore.attention.NAME``), so
``{py:func}`labcore.reference_attention``` and ``:func:`reference_attention``` inside docstrings both
link here. Under each entry, "Explained in" links to the section named in ``flashbook.sections`` (d2l's
API appendix is the model); a page named there that is missing from the book fails the strict build.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: Presentation-layer packages documented after the algorithm modules (their names keep the dotted path).
PACKAGES = ("labcore", "flashbook")


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


def api_entries():
    """[(module name, module, [(documented name, section_for key, canonical name, object, kind)])].

    Each object appears once (the first module whose ``__all__`` lists it wins), so no duplicate
    descriptions. ``kind`` is the autodoc directive: function, class or data.
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


class LabcoreAPI(SphinxDirective):
    """``{labcore-api}``: one section per public labcore module, one autodoc entry per public name."""

    has_content = False

    def run(self):
        from flashbook.sections import section_for

        result = []
        py = self.env.get_domain("py")
        for modname, mod, rows in api_entries():
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
            if _is_myst(self.state):  # autodoc output is reStructuredText: hand it to MyST's eval-rst
                fence = "`" * 4
                lines = [f"{fence}{{eval-rst}}", *lines, fence]
            body = StringList(lines, source=self.get_location())
            nested_parse_with_titles(self.state, body, sec)
            result.append(sec)
            # Also resolve the canonical (defining-module) name of re-exported objects.
            for documented, _key, canon, _obj, kind in rows:
                if canon != documented and canon not in py.objects and documented in py.objects:
                    entry = py.objects[documented]
                    py.note_object(canon, entry.objtype, entry.node_id, aliased=True, location=self.get_location())
        return result


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.add_directive("labcore-api", LabcoreAPI)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
