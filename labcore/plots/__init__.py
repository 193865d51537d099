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


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 3.6, **kw):
    """A matplotlib Figure and its axes, built without pyplot.

    No global pyplot state: the figure is never auto-displayed twice (no stray ``<Figure size ...>``
    text) and needs no ``plt.close``. A notebook displays it by ending a cell with it.
    """
    from matplotlib.figure import Figure

    _ipython_png_display()
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots(nrows, ncols, **kw)
    return fig, ax


def _ipython_png_display() -> None:
    """In an IPython kernel, display a matplotlib ``Figure`` as PNG (idempotent; no-op elsewhere).

    IPython registers a PNG formatter for Figures only once pyplot loads the inline backend. Figures
    built without pyplot (as here) would otherwise show as the text ``<Figure size 700x360 with 1 Axes>``
    in Jupyter and in the book. IPython is never imported here: only used if already running.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or getattr(shell, "_labcore_png_display", False):
        return
    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    shell.display_formatter.formatters["image/png"].for_type(
        Figure, lambda fig: print_figure(fig, fmt="png", bbox_inches="tight"))
    shell._labcore_png_display = True
