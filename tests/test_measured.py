"""The timings measured on an H200 (labcore/data/measured_h200.csv), the models beside them, and the parts of
bench/gpu/measure.py that need no GPU (its arguments, shapes and CSV writer)."""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from labcore.decode_model import load_flash_decoding_a100
from labcore.measured import (COLUMNS, KINDS, MEASURED_CSV, ceiling_check, compare_decode_measured,
                              compare_prefill_measured, lab_measured, load_measured, measured_rows)
from labcore.prefill import attention_flops_papers, load_prefill_measurements

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("gpu_measure", ROOT / "bench" / "gpu" / "measure.py")
measure = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(measure)


# ------------------------------------------------------------------ the stored file

def test_the_stored_file_is_read_checked_and_complete():
    rows = load_measured()
    kinds = {k: [r for r in rows if r["kind"] == k] for k in KINDS}
    assert [r["kernel"] for r in kinds["ceiling"]] == ["copy", "matmul", "sm_clock"]
    # 2 kernels x 2 head dims x 6 lengths x 2 masks x 2 passes, the ten decode shapes x 2, six CUDA lab items
    assert len(kinds["prefill"]) == 96 and len(kinds["decode"]) == 20 and len(kinds["cuda_lab"]) == 6
    for r in rows:
        assert r["machine"].startswith("NVIDIA H200") and r["date"] == "2026-12-04"
        assert "torch" in r["versions"] and "driver" in r["versions"]
        if r["kernel"] != "sm_clock":           # every row but the clock reading is a timing
            assert r["seconds"] > 0 and r["repeats"] >= 20 and "CUDA events" in r["method"]
        else:
            assert r["method"].startswith("nvidia-smi") and r["unit"] == "Hz"
    # the header names where the log is, and the log is there
    head = [ln for ln in MEASURED_CSV.read_text().splitlines() if ln.startswith("#")]
    assert any("bench/gpu/h200-2026-12-04" in ln for ln in head)
    assert (ROOT / "bench" / "gpu" / "h200-2026-12-04" / "run1-log.txt").is_file()


def test_each_prefill_row_is_a_papers_shape_and_its_throughput_is_its_flops_over_its_time():
    seqlens = set(int(n) for n in load_prefill_measurements()["seqlen"])
    for r in measured_rows("prefill"):
        assert r["seqlen"] in seqlens and r["batch"] * r["seqlen"] == 16384 and r["heads"] * r["head_dim"] == 2048
        flops = float(attention_flops_papers(batch=r["batch"], heads=r["heads"], seqlen=r["seqlen"],
                                             head_dim=r["head_dim"], causal=r["causal"], pass_=r["pass"]))
        assert r["flops"] == pytest.approx(flops, rel=1e-12)
        assert r["value"] == pytest.approx(flops / r["seconds"], rel=1e-9) and r["unit"] == "FLOP/s"
        assert r["q1_s"] <= r["seconds"] <= r["q3_s"]


def test_the_decode_rows_are_the_posts_shapes():
    post = load_flash_decoding_a100()
    for kernel in ("flash", "eager"):
        rows = measured_rows("decode", kernel=kernel)
        assert [(r["batch"], r["seqlen"]) for r in rows] == list(zip(post["batch"].tolist(), post["seqlen"].tolist()))
        for r in rows:
            assert (r["heads"], r["kv_heads"], r["head_dim"], r["dtype"]) == (16, 2, 128, "fp16")
            assert r["bytes"] == 2 * r["batch"] * r["seqlen"] * 2 * 128 * 2     # K and V, FP16


@pytest.mark.parametrize("bad, message", [
    ({"machine": ""}, "machine"),
    ({"date": "04/12/2026"}, "date"),
    ({"repeats": "10"}, "at least 20"),
    ({"q1_s": "0.002"}, "quartiles"),
    ({"kind": "training"}, "kind"),
    ({"seconds": "-1"}, "positive"),
    ({"causal": "yes"}, "causal"),
    ({"unit": "GB/s"}, "unit"),
])
def test_a_row_without_provenance_or_with_an_impossible_value_is_refused(tmp_path, bad, message):
    good = {c: "" for c in COLUMNS}
    good.update(kind="ceiling", kernel="copy", seconds="0.001", q1_s="0.0009", q3_s="0.0011", repeats="30",
                value="4e12", unit="bytes/s", machine="NVIDIA H200, 132 SMs", versions="torch 2.11",
                date="2026-12-04", method="CUDA events")
    path = tmp_path / "m.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerow(good)
    assert len(load_measured(path)) == 1
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerow({**good, **bad})
    with pytest.raises(ValueError, match=message):
        load_measured(path)


def test_a_file_missing_a_column_is_refused(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("kind,kernel\nceiling,copy\n")
    with pytest.raises(ValueError, match="missing columns"):
        load_measured(path)


# ------------------------------------------------------------------ the models beside it

def test_the_ceilings_are_below_the_datasheet_and_say_by_how_much():
    c = ceiling_check("H200")
    assert c["preset_bandwidth"] == 4.8e12 and c["preset_flops"] == 989e12
    assert 0.5 < c["bandwidth_ratio"] < 1 and 0.5 < c["flops_ratio"] < 1
    assert c["bandwidth"] == pytest.approx(c["bandwidth_ratio"] * 4.8e12)
    # the preset's model clock is the one its datasheet peak implies; nvidia-smi read the card's maximum after the run
    assert c["sm_clock"] == 1.98e9 and c["preset_clock"] == pytest.approx(989e12 / (4096 * 132))


def test_the_prefill_comparison_is_the_model_against_each_measured_row():
    c = compare_prefill_measured("flash")
    assert len(c["seqlen"]) == 48 and c["generation"] == "fa2"
    assert np.all(np.isfinite(c["model"])) and np.all(c["model"] > 0)
    assert np.allclose(c["err"], c["model"] / c["measured"] - 1)
    assert np.allclose(c["measured_tflops"] / c["model_tflops"], c["model"] / c["measured"])
    # what §4b.6 says of it: the forward holds from 2,048 tokens up; forward + backward is optimistic everywhere
    fwd, long_ = c["pass_"] == "forward", c["seqlen"] >= 2048
    assert np.max(np.abs(c["err"][fwd & long_])) < 0.10
    assert np.all(c["err"][c["pass_"] == "forward+backward"] < -0.10)
    with pytest.raises(ValueError, match="kernel"):
        compare_prefill_measured("triton")


def test_the_decode_comparison_and_the_split_heuristic_the_kernel_follows():
    d = compare_decode_measured()
    assert len(d["batch"]) == 10 and np.all(d["model_fd"] > 0)
    # the profiler's split-KV kernels appear exactly where the heuristic with the SM count doubled splits ...
    assert np.array_equal(d["splits"] > 1, d["split_kv"])
    # ... and the plain SM count misses one row (batch 64 at 1K keys: 128 CTAs on 132 SMs)
    plain = compare_decode_measured(num_splits="heuristic")
    miss = np.flatnonzero((plain["splits"] > 1) != d["split_kv"])
    assert [(int(d["batch"][i]), int(d["seqlen"][i])) for i in miss] == [(64, 1024)]
    assert np.all(d["eager"] > d["flash"])


def test_a_lab_row_gives_its_launches_and_they_add_up():
    for key in ("cuda_softmax_two_pass", "cuda_decoding", "cuda_backward_deterministic"):
        m = lab_measured(key)
        assert len(m["launches"]) == {"cuda_softmax_two_pass": 1, "cuda_decoding": 2,
                                      "cuda_backward_deterministic": 3}[key]
        assert sum(m["launches"]) == pytest.approx(m["seconds"], rel=1e-3)
    with pytest.raises(ValueError, match="no timed row"):
        lab_measured("cuda_nothing")
    with pytest.raises(TypeError):
        lab_measured(7)


def test_the_lab_pages_table_sets_each_launch_of_the_model_beside_its_measured_time():
    from flashbook.labs.cuda.pages import measured_beside_model

    t = measured_beside_model("9b")
    assert [r[0] for r in t.rows] == ["1. bwd_preprocess", "2. bwd_deterministic", "3. dq_reduce", "all launches"]
    assert t.rows[-1][2] == pytest.approx(1e6 * lab_measured("cuda_backward_deterministic")["seconds"])
    assert t.rows[-1][3] == pytest.approx(sum(r[3] for r in t.rows[:-1]))
    # the model's time is its fixed per-launch charge plus the work, which at a lab's size is a sliver of it
    assert all(r[3] - r[4] == pytest.approx(5.0) for r in t.rows[:-1]) and all(0 <= r[4] < 0.1 for r in t.rows)


def test_the_pages_numbers_follow_from_the_file():
    from flashbook.pages import flash_decoding, what_limits

    m = what_limits.measured_numbers()
    assert m.copy_pct == pytest.approx(100 * ceiling_check()["bandwidth_ratio"])
    assert 0 < m.fwd_long_max < 10 and m.fb_long_lo > 10 and m.fa2_peak < m.cudnn_peak
    dm = flash_decoding.measured_decode_numbers()
    assert dm.agree_doubled == dm.n_rows == 10 and dm.agree_plain == 9 and dm.plain_row_ctas == 128
    assert dm.err_lo < dm.err_hi < 0
    assert dm.model_unsplit_faster and dm.measured_unsplit_slower         # what §6.4 says of the first rows
    assert dm.kv_GBs_max < 0.6 * ceiling_check()["bandwidth"] / 1e9
    fwd, both = what_limits.measured_prefill_table("flash")
    assert len(fwd.rows) == len(both.rows) == 4 and fwd.headers[1] == "N = 512" and len(fwd.headers) == 7
    assert fwd.caption.startswith("Forward:") and both.caption.startswith("Forward+backward:")
    assert fwd.rows[3][0] == "d = 128, causal" and len(list(what_limits.measured_prefill_table("cudnn"))) == 2
    decode = flash_decoding.measured_decode_table()
    assert len(decode.rows) == 10 and decode.headers[2] == "flash (µs)" and decode.headers[-1] == "eager (µs)"
    assert [r[5] for r in decode.rows].count("split + combine") == dm.n_split


# ------------------------------------------------------------------ the script's CPU parts

def test_the_scripts_arguments():
    a = measure.parse_args(["--out", "/tmp/x", "--sections", "decode, labs"])
    assert a.sections == ["decode", "labs"] and a.repeats == 30
    for bad in (["--out", "x", "--sections", "prefil"], ["--out", "x", "--repeats", "5"], ["--sections", "labs"],
                ["--out", "x", "--sections", ","]):
        with pytest.raises(SystemExit):
            measure.parse_args(bad)


def test_the_scripts_shapes_are_the_books():
    shapes = measure.prefill_shapes()
    assert len(shapes) == 12 and shapes[0] == (512, 32, 32, 64) and shapes[-1] == (16384, 1, 16, 128)
    assert measure.decode_shapes()[0] == (256, 256) and measure.decode_shapes()[-1] == (1, 131072)


def test_the_scripts_writer_makes_a_file_the_engine_reads(tmp_path):
    w = measure.Writer(tmp_path / "m.csv", machine="NVIDIA H200, 132 SMs", versions="torch 2.11", date="2026-12-04",
                       method="CUDA events, median of 30")
    w.add(kind="prefill", kernel="flash", pass_="forward", causal=True, dtype="bf16", batch=2, seqlen=8192,
          heads=16, kv_heads=16, head_dim=128, flops=1e12, value=4e14, unit="FLOP/s", seconds=2.5e-3, q1_s=2.4e-3,
          q3_s=2.6e-3, repeats=30, note="x")
    w.add(kind="prefill", kernel="cudnn", pass_="forward", causal=False, note="failed: no kernel", value=float("nan"))
    rows = load_measured(tmp_path / "m.csv")
    assert rows[0]["pass"] == "forward" and rows[0]["causal"] is True and rows[0]["seconds"] == 2.5e-3
    assert rows[1]["seconds"] is None and rows[1]["value"] is None and rows[1]["machine"]
    with pytest.raises(ValueError, match="unknown columns"):
        w.add(kind="prefill", speed=3)
    with pytest.raises(ValueError, match="kind"):
        w.add(kind="train")


def test_a_second_run_on_a_fresh_machine_agrees_closely_with_the_stored_one():
    again = {(r["kind"], r["kernel"], r["pass"], r["causal"], r["head_dim"], r["seqlen"], r["batch"]): r["seconds"]
             for r in load_measured(ROOT / "bench" / "gpu" / "h200-2026-12-04" / "run4-measured.csv")}
    stored = [r for r in load_measured() if r["kind"] != "cuda_lab" and r["seconds"] is not None]
    diff = np.array([again[(r["kind"], r["kernel"], r["pass"], r["causal"], r["head_dim"], r["seqlen"], r["batch"])]
                     / r["seconds"] - 1 for r in stored])
    assert len(diff) == 118
    assert np.median(np.abs(diff)) < 0.01 and np.max(np.abs(diff)) < 0.05     # what the header and NOTES.md say


def _write(path, rows, *, comments=(), bom=False):
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as f:
        for c in comments:
            f.write(f"# {c}\n")
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path


_GOOD = dict(kind="ceiling", kernel="copy", seconds="0.001", q1_s="0.0009", q3_s="0.0011", repeats="30", value="4e12",
             unit="bytes/s", machine="NVIDIA H200, 132 SMs", versions="torch 2.11", date="2026-12-04",
             method="CUDA events")


def _row(**kw):
    return {**{c: "" for c in COLUMNS}, **_GOOD, **kw}


def test_a_bad_file_is_refused_with_its_name_and_physical_line(tmp_path):
    p = _write(tmp_path / "m.csv", [_row(), _row(kernel="matmul", batch="-2")], comments=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"m\.csv line 6: batch must be >= 1"):       # 3 comments, header, 2 rows
        load_measured(p)
    for bad, message in (({"batch": "nan"}, "batch must be a whole number"), ({"seconds": "fast"}, "seconds must be a number"),
                         ({"pass": "backward"}, "pass must be one of"), ({"dtype": "int8"}, "dtype must be one of")):
        with pytest.raises(ValueError, match=message):
            load_measured(_write(tmp_path / "b.csv", [_row(**bad)]))
    with pytest.raises(ValueError, match="the same measurement as"):
        load_measured(_write(tmp_path / "d.csv", [_row(), _row()]))
    assert len(load_measured(_write(tmp_path / "bom.csv", [_row()], bom=True))) == 1     # a spreadsheet's BOM
    (tmp_path / "e.csv").write_text("# only a comment\n")
    with pytest.raises(ValueError, match="no header and no rows"):
        load_measured(tmp_path / "e.csv")
    (tmp_path / "h.csv").write_text("kind,kernel\n")
    with pytest.raises(ValueError, match="no rows"):
        load_measured(tmp_path / "h.csv")
    with pytest.raises(ValueError, match="folder"):
        load_measured(tmp_path)
    with pytest.raises(ValueError, match="folder"):
        load_measured("")
    with pytest.raises(TypeError, match="path"):
        load_measured(3)
    with pytest.raises(FileNotFoundError):
        load_measured(tmp_path / "missing.csv")


def test_the_models_compare_only_with_the_gpu_and_shapes_measured():
    with pytest.raises(ValueError, match="not on the A100"):
        ceiling_check("A100")
    with pytest.raises(TypeError, match="causal"):
        measured_rows("prefill", causal="1")
    assert len(measured_rows("prefill", causal=True, kernel="flash")) == 24
    with pytest.raises(ValueError, match="come from the measured rows"):
        compare_prefill_measured("flash", batch=3)
    with pytest.raises(ValueError, match="come from the measured rows"):
        compare_decode_measured(seqlen=4)
