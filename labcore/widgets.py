"""Interactive figures that work both in a live kernel and in the static HTML book.

An :class:`Explorer` is one interactive figure: a numpy-only ``compute(**params)`` (the model), a
``draw(data, **params)`` that returns a matplotlib Figure, and a tuple of :class:`Slider` objects whose
values are valid by construction. :func:`show` displays it:

- in a live kernel (Jupyter, Binder, Colab) as ipywidgets controls over the ``live`` values;
- in the book build (``FLASHBOOK_STATIC=1``, set by the book's Sphinx extension ``book/_ext``) as a
  self-contained HTML player: every combination of the sliders' ``values`` is rendered at build time
  with the same compute/draw code, and a few lines of inline JavaScript swap the frames. No kernel, no
  CDN, no dead controls.

Both go through :meth:`Explorer.png`, which draws every figure of an explorer in one frozen layout
(the axes positions constrained layout chose for its defaults; a figure that would not fit gets its
own): the axes stay put while a slider moves, and each update draws the figure once.

This module imports matplotlib and ipywidgets lazily, so ``import labcore`` stays light.
"""
from __future__ import annotations

import base64
import functools
import html
import io
import itertools
import json
import numbers
import os
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Slider", "Explorer", "LiveFigure", "Table", "show", "static_mode", "frozen_layout", "MAX_FRAMES",
           "STATIC_DPI", "LIVE_DPI", "LIVE_PNG_COMPRESSION", "LAYOUT_PAD", "LIVE_CACHE_SIZE", "STEP_ASIDE_S", "Prefetcher",
           "prefetch_enabled", "serve_drawings"]

#: Upper bound on precomputed frames per explorer (page weight: ~20-40 KB per frame).
MAX_FRAMES = 96

#: PNG resolution of the static players' frames and of the live widgets' figures.
STATIC_DPI = 80
LIVE_DPI = 90

#: zlib level of the live figures' PNGs (0-9). Level 1 encodes the explorers' figures in 50-65% of the
#: CPU time of PIL's default 6 (6-12 ms instead of 13-18 ms, measured under load), for files 0-12%
#: larger (30-46 KB; they go to the kernel's own front end, not over the web).
LIVE_PNG_COMPRESSION = 1

#: Seconds the prefetch helper process stands still after each move (:meth:`Prefetcher.step_aside`): the
#: widget round trip and the browser's decoding of the new image take 40-100 ms on a 2-core machine.
STEP_ASIDE_S = 0.25

#: Settings whose PNG a live explorer keeps (drawn on a move, or prefetched while the reader looks at the
#: figure): 30-46 KB each, so at most ~3 MB per explorer.
LIVE_CACHE_SIZE = 64


def static_mode() -> bool:
    """True when rendering for the static HTML book (``FLASHBOOK_STATIC=1`` in the environment)."""
    return os.environ.get("FLASHBOOK_STATIC", "") == "1"


def prefetch_enabled() -> bool:
    """False when ``FLASHBOOK_PREFETCH=0`` is set (the test runs that execute notebooks without a reader:
    drawing the settings a reader might pick next would only load the machine)."""
    return os.environ.get("FLASHBOOK_PREFETCH", "1") != "0"


@dataclass(frozen=True)
class Slider:
    """One control.

    Args:
        name: the keyword passed to ``compute``/``draw``.
        values: the discrete values the static book precomputes (tuple; numbers, strings or bools).
        default: initial value; must be one of ``values``.
        label: text shown beside the control (defaults to ``name``).
        live: optional denser tuple of values offered in a live kernel (defaults to ``values``).
        fmt: format spec for numbers in the label (e.g. ``",d"`` or ``".2f"``), or a callable value -> str
            (e.g. a ``labcore.units`` formatter, so a byte size is written in the one vocabulary).
    """

    name: str
    values: tuple
    default: Any
    label: str | None = None
    live: tuple | None = None
    fmt: Any = ""

    def __post_init__(self):
        if not self.values:
            raise ValueError(f"slider {self.name!r} needs at least one value")
        if self.default not in self.values:
            raise ValueError(f"slider {self.name!r}: default {self.default!r} is not among values {self.values!r}")
        if self.live is not None and self.default not in self.live:
            raise ValueError(f"slider {self.name!r}: default {self.default!r} is not among live values")

    @property
    def text(self) -> str:
        return self.label or self.name

    def show_value(self, v) -> str:
        if isinstance(v, bool) or isinstance(v, str):
            return str(v)
        if callable(self.fmt):          # e.g. a labcore.units formatter: the one vocabulary of units
            return self.fmt(v)
        try:
            return format(v, self.fmt)
        except (TypeError, ValueError):
            return str(v)

    @property
    def live_values(self) -> tuple:
        return tuple(self.live) if self.live is not None else tuple(self.values)


@dataclass(frozen=True)
class Explorer:
    """An interactive figure: ``compute(**params) -> data`` then ``draw(data, **params) -> Figure``.

    ``compute`` must be numpy-only (it is what a slider move costs in model time; ``make bench`` times
    it separately from ``draw``). Every combination of slider values must be valid.

    ``update`` (optional) is the fast path of a live kernel: ``update(fig, data, **params)`` changes the
    artists of ``fig``, a figure that ``draw`` made earlier (at any other setting), in place so that
    it shows what ``draw(data, **params)`` would (same PNG up to anti-aliasing; tests/test_live_update.py
    checks it at several settings). It returns ``False`` when it cannot (say the number of panels
    changed); :class:`LiveFigure` then draws a new figure. The static book always uses ``draw``.
    """

    name: str
    compute: Callable[..., Any]
    draw: Callable[..., Any]
    sliders: tuple
    caption: str = ""
    fixed: dict = field(default_factory=dict)
    update: Callable[..., Any] | None = None

    def defaults(self) -> dict:
        """The parameter dict at every slider's default (plus ``fixed``)."""
        return {**self.fixed, **{s.name: s.default for s in self.sliders}}

    def figure(self, **params):
        """Compute and draw at ``params`` (missing ones take their defaults); returns the Figure."""
        p = {**self.defaults(), **params}
        return self.draw(self.compute(**p), **p)

    def grid(self):
        """Every combination of the sliders' static ``values`` as parameter dicts."""
        names = [s.name for s in self.sliders]
        for combo in itertools.product(*(s.values for s in self.sliders)):
            yield {**self.fixed, **dict(zip(names, combo))}

    def corners(self):
        """Every combination of the first and last *live* value of each slider (for sweep tests)."""
        names = [s.name for s in self.sliders]
        ends = [tuple(dict.fromkeys((s.live_values[0], s.live_values[-1]))) for s in self.sliders]
        for combo in itertools.product(*ends):
            yield {**self.fixed, **dict(zip(names, combo))}

    def neighbours(self, params: dict, moved: tuple | None = None) -> list[dict]:
        """The settings a reader is likely to pick next from ``params``, likeliest first (live values).

        ``moved`` is ``(slider name, +1 or -1)``, the reader's last step. Its next step in the same
        direction comes first, then the step back and a second step on; then one step either way of
        every other control. A value not among a control's live values has no neighbours on it.
        """
        order = sorted(self.sliders, key=lambda s: moved is None or s.name != moved[0])
        out, seen = [], {_settings_key(params)}
        for s in order:
            vals = s.live_values
            if params.get(s.name) not in vals:
                continue
            i = vals.index(params[s.name])
            d = moved[1] if moved is not None and s.name == moved[0] else 1
            steps = (d, -d, 2 * d) if moved is not None and s.name == moved[0] else (d, -d)
            for k in steps:
                if 0 <= i + k < len(vals):
                    q = {**params, s.name: vals[i + k]}
                    if _settings_key(q) not in seen:
                        seen.add(_settings_key(q))
                        out.append(q)
        return out

    def n_frames(self) -> int:
        n = 1
        for s in self.sliders:
            n *= len(s.values)
        return n

    def png(self, data, params: dict, *, dpi: int = STATIC_DPI) -> bytes:
        """Draw ``data`` (from ``compute(**params)``) and return the PNG bytes, in the explorer's frozen layout.

        Every figure of one explorer uses the axes positions that constrained layout chose for its
        defaults (with extra padding; see :func:`frozen_layout`): the axes stay put while a slider
        moves, and the layout is not solved again on every update (that costs about as much as the
        drawing). A figure whose labels would stick out of the canvas in that layout (a longer title at
        some setting) is drawn again with its own constrained layout instead, so nothing is ever clipped.
        """
        return self._draw_png(data, params, dpi)[1]

    def _draw_png(self, data, params: dict, dpi: int, compress_level: int | None = None) -> tuple:
        """``(figure, PNG bytes, frozen)`` as in :meth:`png`; ``frozen`` is False when the figure has its
        own constrained layout (it did not fit the frozen one)."""
        fig = self.draw(data, **params)
        if _freeze(self, fig, dpi):
            png, inside = _encode_png(fig, dpi, True, compress_level)
            if inside:
                return fig, png, True
            fig = self.draw(data, **params)
        return fig, _encode_png(fig, dpi, False, compress_level)[0], False


def _freeze(explorer: Explorer, fig, dpi: int) -> bool:
    """Put ``fig``'s axes at the explorer's frozen positions (no layout engine); False if the layout does
    not apply (no constrained layout, another size or number of axes)."""
    layout = frozen_layout(explorer, dpi)
    if layout is None or layout[0] != tuple(fig.get_size_inches()) or len(layout[1]) != len(fig.axes):
        return False
    fig.set_layout_engine("none")
    for ax, bounds in zip(fig.axes, layout[1]):
        ax.set_position(bounds)
    return True


class LiveFigure:
    """One explorer's figure in a live kernel: kept between slider moves and, when the explorer has an
    ``update`` hook, changed in place instead of built again.

    :meth:`render` is what a slider move costs: compute, update the persistent figure's artists (or draw
    a new figure when there is no hook, when it declines, or when the updated figure would not fit its
    frozen layout), draw it once on its own canvas and encode the PNG (zlib level
    :data:`LIVE_PNG_COMPRESSION`). A persistent figure saves building the Figure, its axes and tick
    artists on every move, and leaves little garbage for Python's cyclic collector.
    """

    def __init__(self, explorer: Explorer, dpi: int = LIVE_DPI, *, cache_size: int = LIVE_CACHE_SIZE):
        if isinstance(cache_size, bool) or not isinstance(cache_size, numbers.Integral) or cache_size < 0:
            raise ValueError(f"cache_size must be an integer >= 0, got {cache_size!r}")
        self.explorer = explorer
        self.dpi = dpi
        self.fig = None      # the persistent figure (frozen layout), None until the first render
        self.updates = 0     # moves served by the update hook (the rest drew a new figure)
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
        key = _settings_key(params)
        with self._lock:
            png = self._cache.get(key)
            if png is not None:
                self._cache.move_to_end(key)
            return png

    def keep(self, params: dict, png: bytes) -> None:
        """Keep ``png`` as the image of the full setting ``params`` (the least recently used goes first)."""
        with self._lock:
            self._cache[_settings_key(params)] = png
            self._cache.move_to_end(_settings_key(params))
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def png(self, data, params: dict) -> bytes:
        """PNG bytes of ``data`` (from ``compute(**params)``), through the persistent figure."""
        ex = self.explorer
        if self.fig is not None and ex.update is not None and ex.update(self.fig, data, **params) is not False:
            png, blank = _encode_png(self.fig, self.dpi, "edges", LIVE_PNG_COMPRESSION)
            if blank:
                self.updates += 1
                return png
        fig, png, frozen = ex._draw_png(data, params, self.dpi, LIVE_PNG_COMPRESSION)
        self.fig = fig if frozen else None
        return png


def _settings_key(params: dict) -> tuple:
    return tuple(sorted(params.items()))


class Prefetcher:
    """Draws, while the reader looks at a live figure, the settings they are likely to pick next.

    Matplotlib needs 60-400 ms per figure on a 2-core machine (text and tick layout), more than the
    100 ms a slider move may take. So when the widget first shows, and after each move, the
    :meth:`Explorer.neighbours` of the setting shown are drawn into the :class:`LiveFigure`'s cache, one
    at a time and likeliest first (the newest request first). A step to a neighbour is then a cache
    hit, a dictionary lookup; a jump to a setting not drawn yet costs a full draw, as before.

    The drawing happens in a helper process at low CPU priority (``nice`` 10, started on first use
    with :func:`serve_drawings`), so it neither holds the kernel's interpreter lock while a move is
    being answered nor takes a CPU from the reader's browser. One daemon thread of the kernel feeds it,
    for every explorer of the kernel. An explorer that is not in the registry under its name (one made
    in a notebook) is drawn on that thread instead, with its own persistent figure.
    """

    _todo: list = []                        # (Prefetcher, params) to draw, next first
    _now: tuple | None = None               # (Prefetcher, settings key) being drawn
    _cond = threading.Condition()
    _thread: threading.Thread | None = None
    _server = None                          # the helper process (subprocess.Popen), started on first use
    _resume: threading.Timer | None = None  # the timer that lets a stopped helper go on (see step_aside)

    def __init__(self, live: LiveFigure):
        self.live = live
        self.shadow = None        # the thread's own LiveFigure, for an explorer the helper process cannot build
        self.drawn = 0            # settings prefetched so far

    def request(self, params: dict, moved: tuple | None = None) -> None:
        """Queue the neighbours of ``params`` not cached yet, replacing this explorer's older requests:
        after a move (``moved`` given, see :meth:`Explorer.neighbours`) ahead of everything else, since the
        reader is at this figure; when the widget first shows (``moved`` None) behind the figures shown
        before it, as a reader meets them in that order."""
        wanted = [(self, q) for q in self.live.explorer.neighbours(params, moved) if self.live.cached(q) is None]
        cls = Prefetcher
        with cls._cond:
            others = [t for t in cls._todo if t[0] is not self]
            cls._todo = wanted + others if moved is not None else others + wanted
            if cls._todo and (cls._thread is None or not cls._thread.is_alive()):
                cls._thread = threading.Thread(target=cls._work, name="flashbook-prefetch", daemon=True)
                cls._thread.start()
            cls._cond.notify_all()

    def take(self, params: dict, timeout: float = 30.0) -> bytes | None:
        """The PNG of the full setting ``params`` if it is cached or being drawn now (then waits for that
        draw), else None; in either case it is no longer queued (a None means: draw it yourself)."""
        key, cls = _settings_key(params), Prefetcher
        with cls._cond:
            cls._todo = [t for t in cls._todo if not (t[0] is self and _settings_key(t[1]) == key)]
            cls._cond.wait_for(lambda: cls._now != (self, key), timeout)
        return self.live.cached(params)

    @classmethod
    def step_aside(cls, seconds: float = STEP_ASIDE_S) -> None:
        """Stop the helper process for ``seconds`` (POSIX: SIGSTOP, then SIGCONT from a timer), so that the
        move being answered, its image's trip to the browser and the browser's decoding of it get the
        CPUs; called on every move. A no-op where the helper is not running or signals cannot stop it."""
        import signal

        srv = cls._server
        if srv is None or srv.poll() is not None or not hasattr(signal, "SIGSTOP"):
            return
        with cls._cond:
            if cls._resume is not None:
                cls._resume.cancel()
            os.kill(srv.pid, signal.SIGSTOP)
            cls._resume = threading.Timer(seconds, os.kill, (srv.pid, signal.SIGCONT))
            cls._resume.daemon = True
            cls._resume.start()

    @classmethod
    def idle(cls, timeout: float = 120.0) -> bool:
        """Wait until nothing is queued or being drawn (for tests and benchmarks); True if so."""
        with cls._cond:
            return cls._cond.wait_for(lambda: not cls._todo and cls._now is None, timeout)

    def _draw(self, params: dict) -> bytes | None:
        from .plots import all_explorers

        ex = self.live.explorer
        if all_explorers().get(ex.name) is ex:
            try:
                return _draw_elsewhere(ex.name, params, self.live.dpi)
            except (OSError, EOFError, ValueError):      # no helper process here: draw on this thread
                pass
        if self.shadow is None:
            self.shadow = LiveFigure(ex, self.live.dpi, cache_size=0)
        return self.shadow.png(ex.compute(**params), params)

    @classmethod
    def _work(cls):
        while True:
            with cls._cond:
                cls._cond.wait_for(lambda: cls._todo)
                owner, params = cls._todo.pop(0)
                cls._now = (owner, _settings_key(params))
            try:
                if owner.live.cached(params) is None:
                    png = owner._draw(params)
                    if png is not None:
                        owner.live.keep(params, png)
                        owner.drawn += 1
            except Exception:   # noqa: BLE001 -- not kept: a move to it draws on the main thread and raises there
                pass
            finally:
                with cls._cond:
                    cls._now = None
                    cls._cond.notify_all()


def _draw_elsewhere(name: str, params: dict, dpi: int) -> bytes | None:
    """The PNG of registered explorer ``name`` at ``params``, drawn by the helper process (started here on
    first use); None if it failed there. Called only from the prefetch thread."""
    import atexit
    import pickle
    import subprocess
    import sys

    srv = Prefetcher._server
    if srv is None or srv.poll() is not None:
        env = {k: v for k, v in os.environ.items() if k != "FLASHBOOK_STATIC"}
        env["MPLBACKEND"] = "Agg"
        srv = Prefetcher._server = subprocess.Popen(
            [sys.executable, "-c", "from labcore.widgets import serve_drawings; serve_drawings()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            preexec_fn=(lambda: os.nice(10)) if hasattr(os, "nice") else None)
        atexit.register(srv.kill)          # the kernel exits: so does its helper (even a stopped one)
    pickle.dump((name, params, dpi), srv.stdin)
    srv.stdin.flush()
    ok, png = pickle.load(srv.stdout)
    return png if ok else None


def serve_drawings() -> None:
    """The prefetch helper process's main loop (see :class:`Prefetcher`): read ``(explorer name, params,
    dpi)`` requests pickled on stdin, answer ``(True, PNG bytes)`` or ``(False, error text)`` pickled on
    stdout, one persistent :class:`LiveFigure` per explorer, until stdin closes (the kernel exited).
    Anything else written to stdout goes to stderr, so it cannot corrupt the answers."""
    import pickle
    import sys

    from .plots import get_explorer

    inp, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    figures: dict = {}
    while True:
        try:
            name, params, dpi = pickle.load(inp)
        except EOFError:
            return
        try:
            live = figures.get((name, dpi))
            if live is None:
                live = figures[(name, dpi)] = LiveFigure(get_explorer(name), dpi, cache_size=0)
            answer = (True, live.png(live.explorer.compute(**params), params))
        except Exception as exc:   # noqa: BLE001 -- reported to the kernel, which then draws it itself
            answer = (False, f"{type(exc).__name__}: {exc}")
        pickle.dump(answer, out)
        out.flush()


#: Padding (inches) around each axes when the frozen layout is solved: room for tick labels that are
#: wider at other slider values than at the defaults (matplotlib's own default is 3 pt = 0.042 in).
LAYOUT_PAD = 0.09

_LAYOUTS: dict = {}


def frozen_layout(explorer: Explorer, dpi: int = STATIC_DPI):
    """``(figure size in inches, axes positions in figure fractions)`` that constrained layout gives
    ``explorer``'s defaults figure at ``dpi``, with :data:`LAYOUT_PAD` around each axes; ``None`` if its
    figures have no constrained layout. Solved once per explorer, resolution and process (text widths
    depend a little on the resolution). :meth:`Explorer.png` uses it for figures of the same size and
    number of axes."""
    key = (explorer.name, dpi)
    if key not in _LAYOUTS:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        p = explorer.defaults()
        fig = explorer.draw(explorer.compute(**p), **p)
        engine = fig.get_layout_engine()
        if engine is None or "w_pad" not in engine.get():
            _LAYOUTS[key] = None
        else:
            engine.set(w_pad=LAYOUT_PAD, h_pad=LAYOUT_PAD)
            fig.set_dpi(dpi)
            FigureCanvasAgg(fig).draw()
            _LAYOUTS[key] = (tuple(fig.get_size_inches()), [ax.get_position().bounds for ax in fig.axes])
    return _LAYOUTS[key]


def _encode_png(fig, dpi: int, check: bool, compress_level: int | None = None) -> tuple:
    """Draw ``fig`` once at ``dpi`` and encode it (PIL's default zlib level unless ``compress_level``);
    with ``check``, also report whether everything drawn lies inside the canvas (else True).

    ``check="edges"`` is the live path's cheap version (the exact test was a quarter of ``io_vs_N``'s
    update): when the two outermost rows and columns of pixels are still one blank colour, nothing
    sticks out (in a frozen layout, with padding around every axes, a label that grew past the canvas
    edge crosses them); else the exact test decides.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    if fig.dpi != dpi:
        fig.set_dpi(dpi)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    inside = True
    if check == "edges":   # cheap: is the outermost pixel frame still the blank background?
        import numpy as np

        rgba = np.asarray(canvas.buffer_rgba())
        frame = np.concatenate([rgba[:2].reshape(-1, 4), rgba[-2:].reshape(-1, 4), rgba[:, :2].reshape(-1, 4),
                                rgba[:, -2:].reshape(-1, 4)])
        inside = bool((frame == frame[0]).all())
    if (check == "edges" and not inside) or check is True:
        box = fig.get_tightbbox(canvas.get_renderer()).transformed(fig.dpi_scale_trans)
        inside = box.x0 >= -0.5 and box.y0 >= -0.5 and box.x1 <= fig.bbox.x1 + 0.5 and box.y1 <= fig.bbox.y1 + 0.5
    buf = io.BytesIO()
    options = {} if compress_level is None else {"compress_level": compress_level}
    Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
        buf, format="png", **options)
    return buf.getvalue(), inside


def _png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _frame_key(indices) -> str:
    return "-".join(str(i) for i in indices)


#: Element ids handed out in this process (one notebook run), so a repeated player gets a distinct id.
_IDS_USED: dict[str, int] = {}

_PLAYER_JS = """
(function () {
  var root = document.getElementById(%(id)s);
  if (!root) { return; }
  var data = JSON.parse(root.querySelector('script.fb-frames').textContent);
  var img = root.querySelector('img.fb-frame');
  var controls = root.querySelectorAll('[data-fb-slider]');
  function update() {
    var key = [];
    controls.forEach(function (c) {
      var i = parseInt(c.value, 10);
      key.push(i);
      var out = root.querySelector('output[data-fb-for="' + c.getAttribute('data-fb-slider') + '"]');
      if (out) { out.textContent = data.labels[c.getAttribute('data-fb-slider')][i]; }
    });
    var src = data.frames[key.join('-')];
    if (src) { img.src = src; img.setAttribute('data-fb-key', key.join('-')); }
  }
  controls.forEach(function (c) { c.addEventListener('input', update); c.addEventListener('change', update); });
})();
"""


def render_static(explorer: Explorer, *, dpi: int = STATIC_DPI) -> str:
    """The self-contained HTML player for ``explorer`` (all frames precomputed as PNG data URIs)."""
    n = explorer.n_frames()
    if n > MAX_FRAMES:
        raise ValueError(f"explorer {explorer.name!r} has {n} static frames; at most {MAX_FRAMES} are allowed "
                         "(give its sliders fewer static values)")
    frames, labels = {}, {}
    names = [s.name for s in explorer.sliders]
    for s in explorer.sliders:
        labels[s.name] = [s.show_value(v) for v in s.values]
    for idx in itertools.product(*(range(len(s.values)) for s in explorer.sliders)):
        params = {**explorer.fixed, **{nm: s.values[i] for nm, s, i in zip(names, explorer.sliders, idx)}}
        frames[_frame_key(idx)] = _png_data_uri(explorer.png(explorer.compute(**params), params, dpi=dpi))
    default_idx = [s.values.index(s.default) for s in explorer.sliders]
    rows = []
    for s, i in zip(explorer.sliders, default_idx):
        if len(s.values) == 1:   # fixed in the static book: keep its place in the frame key, show no control
            rows.append(f'<input type="hidden" value="0" data-fb-slider="{html.escape(s.name)}">')
            continue
        rows.append(
            f'<label class="fb-control"><span class="fb-label">{html.escape(s.text)}</span> '
            f'<input type="range" min="0" max="{len(s.values) - 1}" step="1" value="{i}" '
            f'data-fb-slider="{html.escape(s.name)}" aria-label="{html.escape(s.text)}"> '
            f'<output data-fb-for="{html.escape(s.name)}">{html.escape(labels[s.name][i])}</output></label>'
        )
    payload = json.dumps({"frames": frames, "labels": labels}).replace("</", "<\\/")
    # The element id comes from the content (explorer name + hash of its frames), never from a random
    # source, so two builds of the same commit write byte-identical HTML (issue 13).
    uid = "fb-" + explorer.name.replace("_", "-") + "-" + hashlib.sha256(payload.encode()).hexdigest()[:8]
    _IDS_USED[uid] = _IDS_USED.get(uid, 0) + 1   # the same player twice in one page: still unique, still stable
    if _IDS_USED[uid] > 1:
        uid += f"-{_IDS_USED[uid]}"
    caption = html.escape(explorer.caption) if explorer.caption else ""
    return (
        f'<div class="fb-explorer" id="{uid}" data-explorer="{html.escape(explorer.name)}">'
        f'<div class="fb-controls">{"".join(rows)}</div>'
        f'<img class="fb-frame" alt="{caption or html.escape(explorer.name)}" '
        f'data-fb-key="{_frame_key(default_idx)}" src="{frames[_frame_key(default_idx)]}">'
        f'<p class="fb-note"><small>Interactive figure: {n} settings precomputed at build time with the same '
        f'<code>labcore</code> code. Launch this page (rocket icon) for a live kernel with finer sliders.</small></p>'
        f'<script type="application/json" class="fb-frames">{payload}</script>'
        f'<script>{_PLAYER_JS % {"id": json.dumps(uid)}}</script>'
        f"</div>"
    )


class _StaticHTML:
    def __init__(self, markup: str):
        self.markup = markup

    def _repr_html_(self):
        return self.markup


def _live_widget(explorer: Explorer):
    """ipywidgets controls over an ``ipywidgets.Image`` whose ``value`` each move replaces (one message to
    the front end, which swaps the image's bytes: no output area cleared and rebuilt), drawn by one
    :class:`LiveFigure`."""
    import ipywidgets as W

    controls = {}
    for s in explorer.sliders:
        vals = s.live_values
        if all(isinstance(v, bool) for v in vals):
            controls[s.name] = W.Checkbox(value=s.default, description=s.text, style={"description_width": "initial"})
        elif any(isinstance(v, str) for v in vals):
            # wide enough for the description and the longest choice (ch: the width of one digit)
            width = f"{len(s.text) + max(len(str(v)) for v in vals) + 8}ch"
            controls[s.name] = W.Dropdown(options=list(vals), value=s.default, description=s.text,
                                          style={"description_width": "initial"}, layout=W.Layout(width=width))
        else:
            controls[s.name] = W.SelectionSlider(options=[(s.show_value(v), v) for v in vals], value=s.default,
                                                 description=s.text, continuous_update=False,
                                                 style={"description_width": "initial"},
                                                 layout=W.Layout(width="480px"))

    live = LiveFigure(explorer)
    prefetch = Prefetcher(live) if prefetch_enabled() else None

    def settings():
        return {**explorer.defaults(), **{k: c.value for k, c in controls.items()}}

    image = W.Image(value=live.render(**settings()), format="png")
    image.add_class("fb-live-figure")
    if prefetch is not None:
        prefetch.request(settings())

    def _update(name, change):
        p = settings()
        if prefetch is not None:
            prefetch.take(p)             # no longer queued; if its draw is under way, wait for it
            Prefetcher.step_aside()
        image.value = live.render(**p)   # from the cache when prefetched, else drawn now
        if prefetch is not None:
            vals = next(s.live_values for s in explorer.sliders if s.name == name)
            step = 1 if vals.index(change["new"]) >= vals.index(change["old"]) else -1
            prefetch.request(p, (name, step))

    for name, c in controls.items():
        c.observe(functools.partial(_update, name), names="value")
    box = W.VBox([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")), image])
    box.live_figure = live     # for tests and benchmarks
    box.prefetcher = prefetch
    return box


def show(explorer: Explorer):
    """Display ``explorer``: frame player in the static book, ipywidgets in a live kernel.

    Returns the displayable object (so a notebook cell can end with ``show(...)``).
    """
    if static_mode():
        return _StaticHTML(render_static(explorer))
    return _live_widget(explorer)


class Table:
    """A small display table (HTML in notebooks and the book, plain text in a terminal).

    Args:
        rows: list of row tuples (raw values). headers: column titles.
        formats: per-column format specs (e.g. ``",.0f"``) or None for ``str``.
        caption: optional caption.
    """

    def __init__(self, rows, headers, formats=None, caption: str = ""):
        self.rows = [tuple(r) for r in rows]
        self.headers = tuple(headers)
        self.formats = tuple(formats) if formats is not None else (None,) * len(self.headers)
        if any(len(r) != len(self.headers) for r in self.rows) or len(self.formats) != len(self.headers):
            raise ValueError("every row and the formats must have one entry per header")
        self.caption = caption

    def _cells(self, row):
        return [str(v) if f is None or isinstance(v, str) else format(v, f) for v, f in zip(row, self.formats)]

    def _repr_html_(self):
        def num(v):
            return isinstance(v, numbers.Number) and not isinstance(v, bool)

        numeric = [bool(self.rows) and all(num(r[i]) for r in self.rows) for i in range(len(self.headers))]
        head = "".join(f'<th class="fb-num">{html.escape(h)}</th>' if n else f"<th>{html.escape(h)}</th>"
                       for h, n in zip(self.headers, numeric))
        body = "".join("<tr>" + "".join(
            f'<td class="fb-num">{html.escape(c)}</td>' if num(v) else f"<td>{html.escape(c)}</td>"
            for v, c in zip(r, self._cells(r))) + "</tr>" for r in self.rows)
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        # the wrapper scrolls sideways when a wide table does not fit the text column (_static/flashbook.css)
        return (f'<div class="fb-table-wrap"><table class="fb-table">{cap}<thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>")

    def __repr__(self):
        cells = [list(self.headers)] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.headers))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)
