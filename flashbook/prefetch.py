"""Prefetching for the live face: draw the settings a reader is likely to pick next while they look."""
from __future__ import annotations

import os
import threading

from .explorer import all_explorers, get_explorer, settings_key
from .live import LiveFigure

__all__ = ["Prefetcher", "serve_drawings", "STEP_ASIDE_S"]


#: Seconds the prefetch helper process stands still after each move (:meth:`Prefetcher.step_aside`): the
#: widget round trip and the browser's decoding of the new image take 40-100 ms on a 2-core machine.
STEP_ASIDE_S = 0.25

class Prefetcher:
    """Draws, while the reader looks at a live figure, the settings they are likely to pick next.

    Matplotlib needs 60-400 ms per figure on a 2-core machine (text and tick layout), more than the
    100 ms a slider move may take. So when the widget first shows, and after each move, the
    :meth:`flashbook.explorer.Explorer.neighbours` of the setting shown are drawn into the :class:`LiveFigure`'s cache, one
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
    _finished = 0                           # draws finished (or failed) so far, for idle()

    def __init__(self, live: LiveFigure):
        self.live = live
        self.shadow = None        # the thread's own LiveFigure, for an explorer the helper process cannot build
        self.drawn = 0            # settings prefetched so far

    def request(self, params: dict, moved: tuple | None = None) -> None:
        """Queue the neighbours of ``params`` not cached yet, replacing this explorer's older requests:
        after a move (``moved`` given, see :meth:`flashbook.explorer.Explorer.neighbours`) ahead of everything else, since the
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

    def take(self, params: dict) -> bytes | None:
        """The PNG of the full setting ``params`` if it is cached, else None (then the caller draws it); either
        way it is no longer queued.

        It never waits for a draw under way in the helper process: that process runs at low priority, so on a
        busy machine the kernel would wait on the slowest process there is (on a loaded 2-core machine a move
        waited 6.5 s for it); the helper's picture, when it comes, only refreshes the cache.
        """
        key, cls = settings_key(params), Prefetcher
        with cls._cond:
            cls._todo = [t for t in cls._todo if not (t[0] is self and settings_key(t[1]) == key)]
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
    def idle(cls, stall_s: float = 120.0) -> bool:
        """Wait until nothing is queued or being drawn (for tests and benchmarks); True if so, False when no draw
        finished for ``stall_s`` seconds (a stall, not a busy machine: the helper runs at low priority, so its
        queue may take minutes to empty while other work has the CPUs, and the wait lasts as long as it moves)."""
        with cls._cond:
            while cls._todo or cls._now is not None:
                finished = cls._finished
                if not cls._cond.wait_for(lambda: (not cls._todo and cls._now is None) or cls._finished != finished,
                                          stall_s):
                    return False
            return True

    def _draw(self, params: dict) -> bytes | None:
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
                cls._now = (owner, settings_key(params))
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
                    cls._finished += 1
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
            [sys.executable, "-c", "from flashbook.prefetch import serve_drawings; serve_drawings()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            preexec_fn=_helper_starts if os.name == "posix" else None)
        atexit.register(srv.kill)          # the kernel exits: so does its helper (even a stopped one)
    pickle.dump((name, params, dpi), srv.stdin)
    srv.stdin.flush()
    ok, png = pickle.load(srv.stdout)
    return png if ok else None


def _helper_starts() -> None:
    """In the helper process before it runs Python (POSIX): nice 10, and SIGINT ignored from the start. A
    kernel's interrupt (Jupyter sends SIGINT to the kernel's whole process group, also before it shuts the
    kernel down) is the kernel's business: the helper goes on, and prints no ``KeyboardInterrupt``."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(10)


def serve_drawings() -> None:
    """The prefetch helper process's main loop (see :class:`Prefetcher`): read ``(explorer name, params,
    dpi)`` requests pickled on stdin, answer ``(True, PNG bytes)`` or ``(False, error text)`` pickled on
    stdout, one persistent :class:`LiveFigure` per explorer, until stdin closes (the kernel exited) or
    stdout does: then it returns quietly. It ignores SIGINT (the kernel's interrupt). Anything else written
    to stdout goes to stderr, so it cannot corrupt the answers."""
    import pickle
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inp, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    figures: dict = {}
    while True:
        try:
            name, params, dpi = pickle.load(inp)
        except (EOFError, pickle.UnpicklingError):     # the kernel closed the pipe (or died mid-request)
            return
        try:
            live = figures.get((name, dpi))
            if live is None:
                live = figures[(name, dpi)] = LiveFigure(get_explorer(name), dpi, cache_size=0)
            answer = (True, live.png(live.explorer.compute(**params), params))
        except Exception as exc:   # noqa: BLE001 -- reported to the kernel, which then draws it itself
            answer = (False, f"{type(exc).__name__}: {exc}")
        try:
            pickle.dump(answer, out)
            out.flush()
        except BrokenPipeError:    # nobody reads the answers any more: the kernel is gone
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())   # no second error when Python closes it
            return

