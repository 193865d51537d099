"""flashbook: the presentation package that puts the ``labcore`` engine in front of readers.

It may import ``labcore``; ``labcore`` never imports it. Layers, bottom up: ``mode`` (static build or live
kernel) and ``drawing`` (PNG in a frozen layout) -> ``explorer`` (the explorer model and its registry) ->
``live`` (the persistent live figure and its cache) and ``player`` (the static frame player) -> ``prefetch``
-> ``display`` (``show`` and ``Table``) -> ``figures`` (one module per topic) -> ``exercises``, ``labs`` and
``sections``. matplotlib, PIL and ipywidgets are imported lazily, where a figure is drawn or a widget made.
"""
from __future__ import annotations

from labcore import __version__

from .display import Table, show
from .explorer import Explorer, Slider, get_explorer

__all__ = ["__version__", "show", "Table", "Explorer", "Slider", "get_explorer"]
