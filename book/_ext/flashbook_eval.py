"""Sphinx extension: an ``{eval}`` role sees every code cell above it executed (myst-nb inline mode).

myst-nb's inline execution runs a code cell only when it renders that cell's outputs
(``NotebookClientInline.code_cell_outputs``). A cell the page hides with the ``remove-cell`` tag is never
rendered, so it runs only when the next *shown* code cell renders. An ``{eval}`` role in the Markdown right
after such a cell would be evaluated before the cell ran and fail with a NameError (pages lost their numbers that
way before this extension). This extension makes the role first run every cell up to its own Markdown cell, so the
prose reads the kernel in notebook order, as JupyterLab does when a reader runs the cells.

Source: myst-nb 1.x, ``myst_nb/core/execute/inline.py`` and ``myst_nb/ext/eval/__init__.py``.
"""
import bisect

from myst_nb.ext.eval import EvalRoleAny


def _run_cells_above(role) -> None:
    document = role.document
    if "nb_renderer" not in document:
        return
    client = getattr(document["nb_renderer"].renderer, "nb_client", None)
    source_map = getattr(client, "_source_map", None)
    if not source_map or not hasattr(client, "code_cell_outputs") or not isinstance(role.line, int):
        return
    index = bisect.bisect_right(source_map, role.line) - 1   # the Markdown cell that holds the role
    if index >= 0:
        client.code_cell_outputs(index)   # runs every cell up to it (nbclient skips Markdown cells)


def setup(app):
    original = EvalRoleAny.run
    if not getattr(original, "_flashbook_in_order", False):     # once, however often Sphinx loads the extension
        def run(self):
            _run_cells_above(self)
            return original(self)

        run._flashbook_in_order = True
        EvalRoleAny.run = run
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
