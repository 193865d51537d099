"""The live path's cache and prefetcher (flashbook.live.LiveFigure, Prefetcher, serve_drawings): a slider
step to a setting drawn while the reader looked at the figure is answered from the cache, with the same
picture a draw at that setting gives."""
from __future__ import annotations

import io
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from flashbook.explorer import all_explorers
from flashbook.figures.base import new_figure  # noqa: E402
from flashbook.drawing import LIVE_DPI
from flashbook.explorer import Explorer, Slider, settings_key
from flashbook.live import LiveFigure
from flashbook.prefetch import Prefetcher
from flashbook.display import show  # noqa: E402


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def _same_picture(a: bytes, b: bytes) -> bool:
    """Equal up to anti-aliasing, as tests/test_live_update.py allows an in-place update."""
    pa, pb = _pixels(a), _pixels(b)
    return pa.shape == pb.shape and (np.abs(pa - pb).max(axis=2) > 16).mean() <= 0.002


def _toy(name: str = "t_toy") -> Explorer:
    def draw(data, a=1, b="x", **_):
        fig, ax = new_figure(width=3, height=2)
        ax.plot([0, 1], [0, data])
        ax.set_title(f"{b}")
        return fig

    return Explorer(name, lambda a, b: float(a) * (1 + "xyz".index(b)), draw,
                    (Slider("a", (1, 3, 5), 3, live=(1, 2, 3, 4, 5)), Slider("b", ("x", "y", "z"), "y")))


def test_neighbours_likeliest_first():
    ex = _toy()
    p = {"a": 3, "b": "y"}
    # after a step of `a` upwards: the next step on, the step back, two steps on; then `b` either way
    assert ex.neighbours(p, ("a", 1)) == [{"a": 4, "b": "y"}, {"a": 2, "b": "y"}, {"a": 5, "b": "y"},
                                          {"a": 3, "b": "z"}, {"a": 3, "b": "x"}]
    assert ex.neighbours(p, ("b", -1)) == [{"a": 3, "b": "x"}, {"a": 3, "b": "z"}, {"a": 4, "b": "y"},
                                           {"a": 2, "b": "y"}]
    # no move yet: one step either way of each control, in the controls' order
    assert ex.neighbours(p) == [{"a": 4, "b": "y"}, {"a": 2, "b": "y"}, {"a": 3, "b": "z"}, {"a": 3, "b": "x"}]
    # at the end of a range only the steps that exist; a value outside the live values has no neighbours
    assert ex.neighbours({"a": 5, "b": "z"}, ("a", 1)) == [{"a": 4, "b": "z"}, {"a": 5, "b": "y"}]
    assert ex.neighbours({"a": 7, "b": "x"}) == [{"a": 7, "b": "y"}]


def test_the_cache_answers_a_setting_drawn_before_and_forgets_the_oldest():
    live = LiveFigure(_toy(), cache_size=2)
    first = live.render(a=1)
    assert live.hits == 0
    assert live.render(a=1) == first and live.hits == 1
    live.render(a=2)
    live.render(a=3)                          # a=1 is now the least recently used of three: forgotten
    assert live.cached({"a": 1, "b": "y"}) is None
    assert live.cached({"a": 3, "b": "y"}) is not None
    assert live.render(a=1) == first and live.hits == 1   # drawn again, the same picture


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_cache_size_must_be_a_count(bad):
    with pytest.raises(ValueError, match="cache_size"):
        LiveFigure(_toy(), cache_size=bad)


def test_prefetch_draws_the_neighbours_in_a_low_priority_helper_process():
    """A registered explorer is drawn by the helper process (nice +10): after the prefetch, every
    neighbour of the defaults is in the cache, with the picture a fresh draw gives."""
    ex = all_explorers()["io_vs_N"]
    live = LiveFigure(ex)
    live.render()
    pre = Prefetcher(live)
    pre.request(ex.defaults())
    assert Prefetcher.idle()
    wanted = ex.neighbours(ex.defaults())
    assert len(wanted) >= 2 and pre.drawn == len(wanted)
    for q in wanted:
        assert _same_picture(live.cached(q), ex.png(ex.compute(**q), q, dpi=LIVE_DPI)), q
    server = Prefetcher._server
    assert server is not None and server.poll() is None
    assert os.getpriority(os.PRIO_PROCESS, server.pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)


def _state(pid: int) -> str:
    """The process state letter from /proc (T: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _wait_for_state(pid: int, wanted: str, deadline_s: float = 60.0) -> str:
    """The state of ``pid`` once it is one of ``wanted`` (a signal is delivered asynchronously: a stopped
    process shows "T" some time after the SIGSTOP), or the last one seen after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while (state := _state(pid)) not in wanted and time.monotonic() < end:
        time.sleep(0.01)
    return state


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads the process state from /proc")
def test_the_helper_steps_aside_while_a_move_is_answered():
    """step_aside stops the helper (SIGSTOP) and lets it go on after the given time (SIGCONT from a timer); a
    second call while it stands aside replaces the first one's timer. No step races the scheduler: the first
    stop lasts far longer than the test waits for it, and each state is waited for with a deadline."""
    ex = all_explorers()["roofline"]
    live = LiveFigure(ex)
    Prefetcher(live).request(ex.defaults())
    assert Prefetcher.idle()
    pid = Prefetcher._server.pid
    Prefetcher.step_aside(600)
    assert _wait_for_state(pid, "T") == "T"               # stopped while the move's image travels
    first = Prefetcher._resume
    Prefetcher.step_aside(0.05)                           # the next move: a new, short stop
    assert first.finished.is_set() and Prefetcher._resume is not first   # cancelled at once: it never sends SIGCONT
    first.join(60)                                        # its thread ends when it next wakes (a deadline, not a race)
    assert not first.is_alive()
    assert _wait_for_state(pid, "SR") in "SR"             # and going on afterwards
    Prefetcher._resume.join(60)
    assert not Prefetcher._resume.is_alive() and _wait_for_state(pid, "SR") in "SR"


def test_an_explorer_outside_the_registry_is_prefetched_on_the_thread():
    ex = _toy("t_unregistered")
    live = LiveFigure(ex)
    live.render()
    pre = Prefetcher(live)
    pre.request(ex.defaults(), ("a", 1))
    assert Prefetcher.idle()
    assert pre.drawn == len(ex.neighbours(ex.defaults(), ("a", 1))) == 5
    q = {"a": 4, "b": "y"}
    assert _same_picture(live.cached(q), ex.png(ex.compute(**q), q, dpi=LIVE_DPI))
    # take() of a setting that is neither cached nor queued: None (the caller draws it)
    assert pre.take({"a": 1, "b": "x"}) is None
    assert pre.take(q) == live.cached(q)


class _NoWaiting(threading.Condition):
    """A condition that fails any wait on it."""

    def wait(self, timeout=None):
        raise AssertionError("waited on the prefetcher's condition")

    def wait_for(self, predicate, timeout=None):
        raise AssertionError("waited on the prefetcher's condition")


def test_a_move_never_waits_for_the_helpers_draw(monkeypatch):
    """take() of the setting the helper is drawing right now returns at once, with None (the kernel then draws
    it itself): the helper runs at low priority, and a move waiting for it on a busy machine would wait on the
    slowest process there is. The setting is no longer queued either."""
    ex = _toy("t_busy")
    pre = Prefetcher(LiveFigure(ex))
    drawing, queued = {"a": 4, "b": "y"}, {"a": 2, "b": "y"}
    monkeypatch.setattr(Prefetcher, "_cond", _NoWaiting())
    monkeypatch.setattr(Prefetcher, "_now", (pre, settings_key(drawing)))
    monkeypatch.setattr(Prefetcher, "_todo", [(pre, queued)])
    assert pre.take(drawing) is None
    assert pre.take(queued) is None and Prefetcher._todo == []


def test_idle_waits_while_draws_finish_and_reports_a_stall(monkeypatch):
    """Prefetcher.idle waits as long as draws keep finishing (a busy machine only makes them slower), and says
    False once none finished for stall_s seconds (the draw under way never ends here)."""
    pre = Prefetcher(LiveFigure(_toy("t_stalled")))
    monkeypatch.setattr(Prefetcher, "_now", (pre, settings_key({"a": 4, "b": "y"})))
    monkeypatch.setattr(Prefetcher, "_todo", [])
    assert Prefetcher.idle(stall_s=0.2) is False
    monkeypatch.setattr(Prefetcher, "_now", None)
    assert Prefetcher.idle(stall_s=0.2) is True


def test_the_widget_answers_a_step_from_the_prefetched_cache(monkeypatch):
    W = pytest.importorskip("ipywidgets")
    monkeypatch.delenv("FLASHBOOK_STATIC", raising=False)
    monkeypatch.setenv("FLASHBOOK_PREFETCH", "1")
    ex = all_explorers()["io_vs_N"]
    box = show(ex)
    controls, image, _ = box.children
    assert isinstance(image, W.Image) and box.prefetcher is not None
    assert Prefetcher.idle()
    slider = next(c for c in controls.children if c.description == "N")
    vals = [v for _, v in slider.options]
    step = vals[vals.index(slider.value) + 1]
    slider.value = step
    assert box.live_figure.hits == 1                     # answered from the cache, not drawn
    p = {**ex.defaults(), "N": step}
    assert _same_picture(bytes(image.value), ex.png(ex.compute(**p), p, dpi=LIVE_DPI))
    monkeypatch.setenv("FLASHBOOK_PREFETCH", "0")
    assert show(ex).prefetcher is None


_KERNEL = r"""
import os, signal
from flashbook.explorer import get_explorer
from flashbook.live import LiveFigure
from flashbook.prefetch import Prefetcher

ex = get_explorer("roofline")
pre = Prefetcher(LiveFigure(ex))
pre.request(ex.defaults())
assert Prefetcher.idle()
signal.signal(signal.SIGINT, signal.SIG_IGN)   # the kernel handles its own interrupt (ipykernel does)
helper, drawn = Prefetcher._server, pre.drawn
os.killpg(0, signal.SIGINT)      # Jupyter interrupts the kernel's process group, also before a shutdown
print(helper.pid)
pre.request(ex.defaults(), ("d", 1))           # one setting more: d two steps on
assert Prefetcher.idle()
assert pre.drawn == drawn + 1 and Prefetcher._server is helper and helper.poll() is None   # drawn by the same helper
"""


def test_a_kernel_interrupt_and_shutdown_print_nothing():
    """A kernel (a fresh process group, as Jupyter starts one) prefetches, gets the interrupt Jupyter sends
    before a shutdown, draws on and exits: the helper survives the interrupt, and neither prints anything
    (no ``KeyboardInterrupt`` traceback from serve_drawings in the terminal of ``make lab``)."""
    env = {**os.environ, "MPLBACKEND": "Agg", "FLASHBOOK_PREFETCH": "1"}
    env.pop("FLASHBOOK_STATIC", None)
    run = subprocess.run([sys.executable, "-c", _KERNEL], capture_output=True, text=True, env=env, timeout=600,
                         start_new_session=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    pid = int(run.stdout)
    end = time.monotonic() + 60
    while os.path.exists(f"/proc/{pid}") and _state(pid) != "Z" and time.monotonic() < end:
        time.sleep(0.05)            # the kernel's atexit killed its helper
    assert not os.path.exists(f"/proc/{pid}") or _state(pid) == "Z"


def _helper(env=None):
    env = {**os.environ, "MPLBACKEND": "Agg", **(env or {})}
    env.pop("FLASHBOOK_STATIC", None)
    return subprocess.Popen([sys.executable, "-c", "from flashbook.prefetch import serve_drawings; serve_drawings()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


@pytest.mark.slow
def test_the_helper_ignores_sigint_and_leaves_quietly_when_the_kernel_goes():
    """serve_drawings on its own: SIGINT does not stop it; a closed stdin (the kernel exited, or was killed)
    and a closed stdout (nobody reads the answers) each end it with status 0 and nothing on stderr."""
    ex = all_explorers()["roofline"]
    request = pickle.dumps(("roofline", ex.defaults(), LIVE_DPI))
    srv = _helper()
    srv.stdin.write(request)
    srv.stdin.flush()
    assert pickle.load(srv.stdout)[0] is True          # running its loop
    srv.send_signal(signal.SIGINT)
    srv.stdin.write(request)
    srv.stdin.flush()
    assert pickle.load(srv.stdout)[0] is True          # still answering after the interrupt
    srv.stdin.close()                                  # the kernel exits
    assert srv.wait(timeout=600) == 0 and srv.stderr.read() == b""
    srv.stdout.close()
    srv.stderr.close()

    srv = _helper()
    srv.stdout.close()                                 # nobody will read the answer
    srv.stdin.write(request)
    srv.stdin.close()
    assert srv.wait(timeout=600) == 0 and srv.stderr.read() == b""
    srv.stderr.close()


def test_serve_drawings_answers_each_request_and_reports_errors():
    """The helper process's protocol: pickled (name, params, dpi) in, (ok, PNG or error text) out."""
    ex = all_explorers()["roofline"]
    reqs = b"".join(pickle.dumps(r) for r in [("no_such_explorer", {}, LIVE_DPI), ("roofline", ex.defaults(), LIVE_DPI)])
    env = {**os.environ, "MPLBACKEND": "Agg"}
    env.pop("FLASHBOOK_STATIC", None)
    out = subprocess.run([sys.executable, "-c", "from flashbook.prefetch import serve_drawings; serve_drawings()"],
                         input=reqs, capture_output=True, env=env, timeout=600, check=True).stdout
    buf = io.BytesIO(out)
    ok, err = pickle.load(buf)
    assert not ok and "unknown explorer 'no_such_explorer'" in err
    ok, png = pickle.load(buf)
    assert ok and _same_picture(png, ex.png(ex.compute(**ex.defaults()), ex.defaults(), dpi=LIVE_DPI))
    assert buf.read() == b""                              # nothing else on stdout
