"""Browser-side latency of live slider moves (issue 12, item 5), run by ``make bench``, never by ``make test``.

What a reader feels in JupyterLab: for every explorer of every notebook, the time from the input event (a key
press on the first slider, or a new dropdown choice) to a new image in the page, measured in headless Chromium
against a JupyterLab on 127.0.0.1 that runs the notebook's own kernel. It reuses the live-notebook test's
server and page (``tests/browser/test_live_notebooks.py``) and writes ``artifacts/live_latency.json``.

The time includes Playwright's round trip to the page (a few ms), so it slightly overstates the latency.

Run: ``.venv/bin/python -m pytest -q -s -p no:cacheprovider bench/live_latency.py``.
"""
from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import pytest  # noqa: E402
from conftest import browser  # noqa: E402,F401  (the one Chromium of the session)
from test_live_notebooks import (NOTEBOOKS, _cells, _image_changed, _image_src, _open_and_run_all,  # noqa: E402,F401
                                 _shutdown_kernels, lab, lab_page)

#: Moves timed per explorer (the first control, stepped back and forth).
MOVES = 12
OUT = ROOT / "artifacts" / "live_latency.json"
EXPLORER = re.compile(r"show\(get_explorer\(\"(\w+)\"\)")
RESULTS: dict[str, dict] = {}
LIVE_NOTEBOOKS = [n for n in NOTEBOOKS if any(EXPLORER.search("".join(c["source"])) for c in _cells(n))]


def _time_moves(page, cell) -> list[float]:
    """Milliseconds from each input event to the next new image, over :data:`MOVES` moves."""
    slider = cell.locator(".widget-slider [role=slider], .widget-hslider [role=slider], "
                          ".widget-slider .noUi-handle, .widget-hslider .noUi-handle")
    select = cell.locator(".widget-dropdown select")
    times, key = [], "ArrowRight"
    for _ in range(MOVES):
        before = _image_src(cell)
        if slider.count():
            slider.first.focus()
            t0 = time.perf_counter()
            page.keyboard.press(key)
        elif select.count():
            values = [o.get_attribute("value") for o in select.first.locator("option").all()]
            current = select.first.input_value()
            nxt = values[(values.index(current) + 1) % len(values)]
            t0 = time.perf_counter()
            select.first.select_option(nxt)
        else:
            return times
        if _image_changed(page, cell, before, 15_000):
            times.append(1e3 * (time.perf_counter() - t0))
        else:                               # a slider at its end: the image did not change, step the other way
            key = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"
    return times


@pytest.mark.parametrize("name", LIVE_NOTEBOOKS)
def test_live_latency(lab, lab_page, name):
    base, token = lab
    page = lab_page
    _open_and_run_all(page, base, token, name)
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
    for i, c in enumerate(_cells(name)):
        m = EXPLORER.search("".join(c["source"]))
        if c["cell_type"] == "code" and m:
            t = _time_moves(page, cells.nth(i))
            assert t, f"{name}: explorer {m.group(1)} never redrew"
            q = statistics.quantiles(t, n=20, method="inclusive") if len(t) >= 2 else t * 19
            RESULTS[m.group(1)] = {"notebook": name, "moves": len(t), "p50_ms": statistics.median(t),
                                   "p95_ms": q[18], "max_ms": max(t)}
    _shutdown_kernels(base, token)


def test_report():
    """Print the table and write ``artifacts/live_latency.json`` (runs last: pytest keeps file order)."""
    assert RESULTS, "no explorer was timed"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(RESULTS, indent=1))
    print(f"\nbrowser-side live update (input event -> new image), {MOVES} moves each, ms:")
    print(f"{'explorer':28} {'p50':>7} {'p95':>7} {'max':>7}  <= 100 ms p95")
    for k, r in sorted(RESULTS.items()):
        print(f"{k:28} {r['p50_ms']:7.0f} {r['p95_ms']:7.0f} {r['max_ms']:7.0f}  {'met' if r['p95_ms'] <= 100 else 'not met'}")
