"""bench/results.py: the latest measured figures as Markdown, one section per measuring script, none lost."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import results  # noqa: E402

SUITE = {"cores": 2, "calibration_cpu_s": 1.234,
         "stages": {"unit": {"rc": 0, "wall_s": 361.0, "cpu_s": 680.0, "idle_s": 36.1},
                    "live": {"rc": 1, "wall_s": 59.0, "cpu_s": 90.0, "idle_s": 28.0}},
         "make_test": {"rc": 0, "wall_s": 844.0, "cpu_s": 1634.0, "idle_s": 49.0}}
LIVE = {"io_vs_N": {"p50_ms": 40.0, "p95_ms": 55.0}, "roofline": {"p50_ms": 70.0, "p95_ms": 130.0},
        "(floor: images drawn beforehand)": {"p50_ms": 38.0, "p95_ms": 47.0}}


def _write(tmp_path, **files):
    art = tmp_path / "artifacts"
    art.mkdir(exist_ok=True)
    for name, data in files.items():
        (art / f"{name}.json").write_text(json.dumps(data))
    return art


def test_suite_cost_section(tmp_path):
    md = results.render(_write(tmp_path, suite_cost={**SUITE, "date": "2026-12-03"}))
    assert "## What `make test` costs (`make test-cost`, 2026-12-03)" in md
    assert "| `make unit` | 6 min 01 s | 680 | 5% | passed |" in md
    assert "| `make live` | 59 s | 90 | 24% | FAILED |" in md
    assert "| the stages, summed | | **770** | |" in md and "at least 770 / 2 CPU-s, 6.4 minutes" in md
    assert "| **`make test`** | 14 min 04 s | 1,634 | 3% | passed |" in md
    assert "calibration draw 1.23 CPU-s" in md


def test_live_latency_section(tmp_path):
    md = results.render(_write(tmp_path, live_latency=LIVE))
    assert "at most 100 ms: 1 of 2 explorers" in md and "Over the goal: `roofline`." in md
    assert "p50 40-70 ms, p95 55-130 ms" in md and "p50 38 ms, p95 47 ms" in md


def test_a_section_without_its_json_is_kept_and_one_with_it_is_replaced(tmp_path):
    first = results.render(_write(tmp_path, suite_cost={**SUITE, "date": "2026-12-03"}))
    (tmp_path / "artifacts" / "suite_cost.json").unlink()
    second = results.render(_write(tmp_path, live_latency=LIVE), previous=first)
    assert "(`make test-cost`, 2026-12-03)" in second and "1 of 2 explorers" in second
    assert second.index("make test-cost") < second.index("live_latency.py")          # the file's own order
    third = results.render(_write(tmp_path, suite_cost={**SUITE, "date": "2026-12-09"}), previous=second)
    assert "(`make test-cost`, 2026-12-09)" in third and "(`make test-cost`, 2026-12-03)" not in third
    assert "1 of 2 explorers" in third


def test_the_committed_file_is_what_the_script_writes():
    """bench/RESULTS.md is generated: rendering it again from no new numbers changes nothing."""
    text = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    assert results.render(ROOT / "no-such-artifacts", text) == text
