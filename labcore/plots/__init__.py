"""Presentation layer: figure functions and the registry of interactive figures (explorers).

Each section's module (``labcore.plots.softmax``, ``.flash``, ``.decode``, ``.megakernel``, ...) defines
pure figure functions (parameters in, matplotlib Figure out) and registers its :class:`Explorer` objects
with :func:`register`. Only this layer imports matplotlib.
"""
from __future__ import annotations

import importlib
import sys

from ..widgets import Explorer

__all__ = ["EXPLORERS", "register", "get_explorer", "all_explorers", "new_figure", "SECTION_MODULES"]

#: Section modules that define explorers; imported on demand by :func:`all_explorers`.
SECTION_MODULES = ["softmax", "flash", "decode", "megakernel"]

EXPLORERS: dict[str, Explorer] = {}


def register(explorer: Explorer) -> Explorer:
    """Add ``explorer`` to the registry (names are unique) and return it."""
    if explorer.name in EXPLORERS and EXPLORERS[explorer.name] is not explorer:
        raise ValueError(f"an explorer named {explorer.name!r} is already registered")
    EXPLORERS[explorer.name] = explorer
    return explorer


def all_explorers() -> dict[str, Explorer]:
    """Import every section module that exists and return the full registry."""
    for mod in SECTION_MODULES:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{mod}":
                raise
    return dict(EXPLORERS)


def get_explorer(name: str) -> Explorer:
    """Look up a registered explorer by name; raises ValueError listing the known ones."""
    reg = all_explorers()
    if name not in reg:
        raise ValueError(f"unknown explorer {name!r}; known: {', '.join(sorted(reg))}")
    return reg[name]


_FIGURE_CLASS = None


def _book_figure_class():
    """A matplotlib Figure subclass that displays itself as PNG in IPython, with or without pyplot."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        import io

        from matplotlib.figure import Figure

        class BookFigure(Figure):
            def _repr_png_(self):
                buf = io.BytesIO()
                self.savefig(buf, format="png", dpi=100, bbox_inches="tight")
                return buf.getvalue()

            def __repr__(self):
                return f"<figure: {len(self.axes)} axes>"

        _FIGURE_CLASS = BookFigure
    return _FIGURE_CLASS


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 3.6, **kw):
    """A matplotlib Figure and its axes, built without pyplot.

    No global pyplot state: the figure is never auto-displayed twice (no stray ``<Figure size ...>``
    text) and needs no ``plt.close``. A notebook displays it by ending a cell with it.
    """
    fig = _book_figure_class()(figsize=(width, height), layout="constrained")
    ax = fig.subplots(nrows, ncols, **kw)
    return fig, ax
