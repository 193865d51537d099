"""Browser-side latency of live slider moves, what a reader waits for, run by ``make bench``, never by ``make test``.

What a reader feels in JupyterLab: for every explorer of every notebook, the time from the input event (a key
press on the first slider, or a new dropdown choice) to the new image decoded in the page, measured in the page's
own clock (``performance.now()`` at the event, a MutationObserver on the image, then ``img.decode()``) in
headless Chromium against a JupyterLab on 127.0.0.1 that runs the notebook's own kernel. It reuses the
live-notebook test's server and page (``tests/browser/test_live_notebooks.py``) and writes
``artifacts/live_latency.json``.

Two kinds of move, reported apart:

- **steps**: :data:`MOVES` one-step moves of the first control (back at its ends), each after the reader has
  looked at the figure for :data:`READ_S` seconds. While the reader looks, ``flashbook.prefetch.Prefetcher``
  draws the likely next settings, so a step is usually a cache hit;
- **jumps**: :data:`JUMPS` moves to a setting several steps away (the slider's Home/End keys, or a dropdown
  choice two or more places on), which the prefetcher does not foresee: a full compute and draw.

Run: ``.venv/bin/python -m pytest -q -s -p no:cacheprovider bench/live_latency.py``.
"""
from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import pytest  # noqa: E402
from conftest import browser  # noqa: E402,F401  (the one Chromium of the session)
from test_live_notebooks import NOTEBOOKS, _cells, _open_and_run_all, _shutdown_kernels, lab, lab_page  # noqa: E402,F401

#: One-step moves timed per explorer (the first control, stepped on and back at its ends).
MOVES = 20
#: Jumps timed per explorer (settings the prefetcher cannot foresee).
JUMPS = 3
#: Seconds the reader looks at the figure before each move, and before the first move of an explorer (after
#: Run All, scrolling to it and reading its caption).
READ_S = 1.0
READ_FIRST_S = 3.0
OUT = ROOT / "artifacts" / "live_latency.json"
EXPLORER = re.compile(r"show\(get_explorer\(\"(\w+)\"\)")
RESULTS: dict[str, dict] = {}
LIVE_NOTEBOOKS = [n for n in NOTEBOOKS if any(EXPLORER.search("".join(c["source"])) for c in _cells(n))]

# Arm one measurement: the input event's time, then the time the cell's figure has a new, decoded image.
_ARM_JS = """(cell) => {
  const fb = window.__fbLatency = {t0: null, t1: null};
  const mark = () => { if (fb.t0 === null) { fb.t0 = performance.now(); } };
  for (const ev of ['keydown', 'input', 'change']) { cell.addEventListener(ev, mark, {capture: true, once: true}); }
  const last = () => { const imgs = cell.querySelectorAll('.jp-OutputArea img'); return imgs[imgs.length - 1]; };
  const before = last() ? last().getAttribute('src') : null;
  const obs = new MutationObserver(() => {
    const img = last();
    if (img && img.getAttribute('src') !== before) {
      obs.disconnect();
      const done = () => { fb.t1 = performance.now(); };
      img.decode().then(done, done);
    }
  });
  obs.observe(cell, {subtree: true, childList: true, attributes: true, attributeFilter: ['src']});
}"""


def _timed(page, cell, act, read_s: float = READ_S) -> float | None:
    """Milliseconds from the input event that ``act()`` causes to the new image (None: no new image in 15 s)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_timeout(1e3 * read_s)       # the reader looks at the figure first
    page.evaluate(_ARM_JS, cell.element_handle())
    act()
    try:
        page.wait_for_function("() => window.__fbLatency.t1 !== null", timeout=15_000, polling="raf")
    except PlaywrightTimeout:
        return None
    return page.evaluate("() => window.__fbLatency.t1 - window.__fbLatency.t0")


def _time_moves(page, cell) -> tuple[list[float], list[float]]:
    """(step latencies, jump latencies) in ms for the explorer in ``cell`` (see the module docstring)."""
    slider = cell.locator(".widget-slider [role=slider], .widget-hslider [role=slider], "
                          ".widget-slider .noUi-handle, .widget-hslider .noUi-handle")
    select = cell.locator(".widget-dropdown select")
    steps, jumps, key = [], [], "ArrowRight"
    page.wait_for_timeout(1e3 * (READ_FIRST_S - READ_S))
    if slider.count():
        handle = slider.first
        handle.focus()

        def at(end: str) -> bool:           # the handle's position against its aria bounds
            return float(handle.get_attribute("aria-valuenow")) == float(handle.get_attribute(f"aria-value{end}"))

        for _ in range(MOVES):
            if at("max" if key == "ArrowRight" else "min"):     # at the slider's end: step the other way
                key = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"
            t = _timed(page, cell, lambda: page.keyboard.press(key))
            if t is not None:
                steps.append(t)
        for _ in range(JUMPS):
            k = "Home" if at("max") else "End"
            t = _timed(page, cell, lambda: page.keyboard.press(k))
            if t is not None:
                jumps.append(t)
    elif select.count():
        sel = select.first
        values = [o.get_attribute("value") for o in sel.locator("option").all()]
        direction = 1
        for _ in range(MOVES):
            i = values.index(sel.input_value())
            if not 0 <= i + direction < len(values):     # at the end of the list: step back
                direction = -direction
            t = _timed(page, cell, lambda: sel.select_option(values[i + direction]))
            if t is not None:
                steps.append(t)
        for _ in range(JUMPS if len(values) > 3 else 0):
            i = values.index(sel.input_value())
            j = (i + len(values) // 2) % len(values)
            t = _timed(page, cell, lambda: sel.select_option(values[j]))
            if t is not None:
                jumps.append(t)
    return steps, jumps


def _p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[18] if len(xs) >= 2 else xs[0]


@pytest.mark.parametrize("name", LIVE_NOTEBOOKS)
def test_live_latency(lab, lab_page, name):  # noqa: F811 (the live test's fixtures, imported above)
    base, token = lab
    page = lab_page
    _open_and_run_all(page, base, token, name)
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
    for i, c in enumerate(_cells(name)):
        m = EXPLORER.search("".join(c["source"]))
        if c["cell_type"] == "code" and m:
            cell = cells.nth(i)
            cell.scroll_into_view_if_needed()
            steps, jumps = _time_moves(page, cell)
            assert steps, f"{name}: explorer {m.group(1)} never redrew"
            RESULTS[m.group(1)] = {"notebook": name, "moves": len(steps), "p50_ms": statistics.median(steps),
                                   "p95_ms": _p95(steps), "max_ms": max(steps), "jumps": len(jumps),
                                   "jump_p50_ms": statistics.median(jumps) if jumps else None,
                                   "jump_max_ms": max(jumps) if jumps else None}
    _shutdown_kernels(base, token)


#: The floor: the same widget round trip with nothing to draw (a slider over images drawn beforehand).
FLOOR_NOTEBOOK = {
    "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": [
        "import ipywidgets as W\n",
        "from flashbook import get_explorer\n",
        "from flashbook.live import LiveFigure\n",
        "ex = get_explorer('io_vs_N'); live = LiveFigure(ex); s = ex.sliders[0]\n",
        "pngs = {v: live.render(**{s.name: v}) for v in s.live_values}\n",
        "slider = W.SelectionSlider(options=[(str(v), v) for v in s.live_values], value=s.default,\n",
        "                           description=s.text, continuous_update=False)\n",
        "image = W.Image(value=pngs[s.default], format='png')\n",
        "slider.observe(lambda change: setattr(image, 'value', pngs[change['new']]), names='value')\n",
        "W.VBox([W.HBox([slider]), image])"]}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5}


def test_floor(lab, lab_page):  # noqa: F811 (the live test's fixtures, imported above)
    """The round trip alone (no compute, no drawing): what every move costs on top of its figure."""
    import urllib.request

    base, token = lab
    req = urllib.request.Request(f"{base}/api/contents/zz_floor.ipynb?token={token}", method="PUT",
                                 data=json.dumps({"type": "notebook", "format": "json",
                                                  "content": FLOOR_NOTEBOOK}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).close()
    _open_and_run_all(lab_page, base, token, "zz_floor.ipynb")
    cell = lab_page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell").nth(0)
    steps, jumps = _time_moves(lab_page, cell)
    assert steps, "the floor widget never redrew"
    RESULTS["(floor: images drawn beforehand)"] = {
        "notebook": "zz_floor.ipynb", "moves": len(steps), "p50_ms": statistics.median(steps),
        "p95_ms": _p95(steps), "max_ms": max(steps), "jumps": len(jumps),
        "jump_p50_ms": statistics.median(jumps) if jumps else None, "jump_max_ms": max(jumps) if jumps else None}
    _shutdown_kernels(base, token)


def test_report():
    """Print the table and write ``artifacts/live_latency.json`` (runs last: pytest keeps file order)."""
    assert RESULTS, "no explorer was timed"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(RESULTS, indent=1))
    print(f"\nbrowser-side live update (input event -> new image decoded), ms; steps after {READ_S} s of reading:")
    print(f"{'explorer':28} {'steps':>5} {'p50':>6} {'p95':>6} {'max':>6} {'jumps':>5} {'p50':>6} {'max':>6}"
          "  step p95 <= 100 ms")
    for k, r in sorted(RESULTS.items()):
        jp = f"{r['jump_p50_ms']:6.0f} {r['jump_max_ms']:6.0f}" if r["jumps"] else f"{'-':>6} {'-':>6}"
        print(f"{k:28} {r['moves']:5d} {r['p50_ms']:6.0f} {r['p95_ms']:6.0f} {r['max_ms']:6.0f} {r['jumps']:5d} {jp}"
              f"  {'met' if r['p95_ms'] <= 100 else 'not met'}")
