"""The live face's figure: one persistent figure per explorer and a cache of the settings it has drawn."""
from __future__ import annotations

import numbers
import threading
from collections import OrderedDict

from .drawing import LIVE_DPI, LIVE_PNG_COMPRESSION, draw_png, encode_png
from .explorer import Explorer, settings_key

__all__ = ["LiveFigure", "LIVE_CACHE_SIZE"]


#: Settings whose PNG a live explorer keeps (drawn on a move, or prefetched while the reader looks at the
#: figure): 30-46 KB each, so at most ~3 MB per explorer.
LIVE_CACHE_SIZE = 64

class LiveFigure:
    """One explorer's figure in a live kernel: kept between slider moves and, when the explorer has a
    set-up and a content (:class:`flashbook.explorer.Explorer`), changed in place instead of built again.

    :meth:`render` is what a slider move costs: compute, draw the content again into the persistent figure
    (:meth:`flashbook.explorer.Explorer.update`; or draw a new figure when the explorer has no set-up/content
    split, when the setting needs another set-up, or when the updated figure would not fit its frozen
    layout), draw it once on its own canvas and encode the PNG (zlib level
    :data:`LIVE_PNG_COMPRESSION`). A persistent figure saves building the Figure, its axes and tick
    artists on every move, and leaves little garbage for Python's cyclic collector.
    """

    def __init__(self, explorer: Explorer, dpi: int = LIVE_DPI, *, cache_size: int = LIVE_CACHE_SIZE):
        if isinstance(cache_size, bool) or not isinstance(cache_size, numbers.Integral) or cache_size < 0:
            raise ValueError(f"cache_size must be an integer >= 0, got {cache_size!r}")
        self.explorer = explorer
        self.dpi = dpi
        self.fig = None      # the persistent figure (frozen layout), None until the first render
        self.updates = 0     # moves served in place (the rest drew a new figure)
        self.hits = 0        # renders served from the cache (drawn before, or prefetched)
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()   # settings key -> PNG, least recently used first
        self._lock = threading.Lock()               # the cache is shared with a Prefetcher's thread

    def render(self, **params) -> bytes:
        """PNG bytes of the explorer at ``params`` (missing ones take their defaults): from the cache
        when this setting was drawn or prefetched before, else computed and drawn (and kept)."""
        p = {**self.explorer.defaults(), **params}
        png = self.cached(p)
        if png is not None:
            self.hits += 1
            return png
        png = self.png(self.explorer.compute(**p), p)
        self.keep(p, png)
        return png

    def cached(self, params: dict) -> bytes | None:
        """The kept PNG of the full setting ``params``, or None."""
        key = settings_key(params)
        with self._lock:
            png = self._cache.get(key)
            if png is not None:
                self._cache.move_to_end(key)
            return png

    def keep(self, params: dict, png: bytes) -> None:
        """Keep ``png`` as the image of the full setting ``params`` (the least recently used goes first)."""
        with self._lock:
            self._cache[settings_key(params)] = png
            self._cache.move_to_end(settings_key(params))
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def png(self, data, params: dict) -> bytes:
        """PNG bytes of ``data`` (from ``compute(**params)``), through the persistent figure."""
        ex = self.explorer
        if self.fig is not None and ex.update(self.fig, data, **params):
            png, blank = encode_png(self.fig, self.dpi, "edges", LIVE_PNG_COMPRESSION)
            if blank:
                self.updates += 1
                return png
        fig, png, frozen = draw_png(ex, data, params, self.dpi, LIVE_PNG_COMPRESSION)
        self.fig = fig if frozen else None
        return png

