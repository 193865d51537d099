"""labcore.mixed_batch: chunked prefill + decode, serial (sum) vs POD-style fused (towards the max)."""
import numpy as np
import pytest

from labcore import prefill_time
from labcore.mixed_batch import chunk_prefill_time, fused_step_time, mixed_batch_sweep, mixed_batch_time
from labcore.published import published

SHAPE = dict(num_q_heads=32, num_kv_heads=8, head_dim=128)


def test_one_tile_chunk_costs_one_tile():
    r = chunk_prefill_time("A100-80GB-SXM", chunk=128, context=0, heads=1, head_dim=128)
    assert r["ctas"] == 1 and r["compute"] == pytest.approx(r["tile_time"])
    assert r["total"] == pytest.approx(max(r["compute"], r["memory"]) + r["overhead"])
    # 128 new tokens after 384 cached ones: one CTA visits 4 key blocks
    assert chunk_prefill_time("A100-80GB-SXM", chunk=128, context=384, heads=1, head_dim=128)["compute"] == \
        pytest.approx(4 * r["tile_time"])


def test_chunk_agrees_with_the_prefill_model_at_zero_context():
    for n in (1024, 4096):
        a = chunk_prefill_time("A100-80GB-SXM", chunk=n, context=0, heads=32, head_dim=128)["total"]
        b = float(prefill_time("A100-80GB-SXM", batch=1, heads=32, seqlen=n, head_dim=128, causal=True)["total"])
        # same tile cost; the prefill model itself list-schedules the CTAs (2 per SM on the
        # A100, each with a start-up latency), while the chunk model still runs 1 CTA per SM without start-up:
        # it is 11-20% faster here (follow-up for labcore.mixed_batch: take ref["ctas_per_sm"] and cta_latency)
        assert 0.75 * b <= a <= 1.25 * b


def test_serial_is_the_sum_fused_lies_between_max_and_sum():
    r = mixed_batch_time("A100-80GB-SXM", chunk=1024, context=8192, decode_batch=64, decode_seqlen=8192, **SHAPE)
    assert r["serial"] == r["prefill"] + r["decode"]
    assert r["ideal"] == max(r["prefill"], r["decode"])
    assert r["ideal"] <= r["fused"] <= r["serial"]
    assert 0 < r["gain"] < 1 and r["bound"] in ("compute", "memory", "prefill", "decode")


def test_fused_step_time_from_given_demands():
    """By hand (µs): prefill 1036 compute / 82 memory, decodes 631 / 1053, 10 µs per launch: alone 1046 and 1063,
    serial 2109; fused: the summed compute 1667 binds (memory 1135), plus one launch: 1677."""
    r = fused_step_time(prefill_compute=1036, prefill_memory=82, decode_compute=631, decode_memory=1053,
                        prefill_overhead=10, decode_overhead=10)
    assert (r["prefill"], r["decode"], r["serial"], r["fused"], r["ideal"], r["bound"]) == (
        1046, 1063, 2109, 1677, 1063, "compute")
    assert r["gain"] == pytest.approx(2109 / 1677 - 1)
    # a tiny decode hides under the prefill entirely: the fused step is the prefill alone
    small = fused_step_time(prefill_compute=100, prefill_memory=10, decode_compute=0, decode_memory=5)
    assert small["fused"] == small["prefill"] == small["serial"] - 5 == 100
    # mixed_batch_time is this rule applied to the two models' demands
    full = mixed_batch_time("A100-80GB-SXM", chunk=1024, context=8192, decode_batch=64, decode_seqlen=8192, **SHAPE)
    assert full["serial"] == full["prefill"] + full["decode"]
    with pytest.raises(ValueError):
        fused_step_time(prefill_compute=-1, prefill_memory=0, decode_compute=0, decode_memory=0)
    with pytest.raises(ValueError):
        fused_step_time(prefill_compute=1, prefill_memory=0, decode_compute=0, decode_memory=0, prefill_overhead=2,
                        prefill_total=1)
    with pytest.raises(TypeError):
        fused_step_time(prefill_compute="1", prefill_memory=0, decode_compute=0, decode_memory=0)


def test_sweep_over_chunk_sizes():
    s = mixed_batch_sweep("A100-80GB-SXM", chunks=[256, 512, 1024, 2048], context=8192, decode_batch=64,
                          decode_seqlen=8192, **SHAPE)
    assert np.all(np.diff(s["prefill"]) > 0) and np.all(s["decode"] == s["decode"][0])
    assert np.all(s["fused"] <= s["serial"]) and np.all(s["fused"] >= s["ideal"])
    # the gain peaks where the two kernels take about as long (here near 512-1024) and is at most 2x
    assert s["gain"].max() < 1.0 and np.argmax(s["gain"]) in (1, 2)
    assert published("pod.attention_speedup_max").value == 0.59


def test_errors():
    with pytest.raises(ValueError):
        chunk_prefill_time("A100", chunk=0, context=0, heads=1, head_dim=64)
    with pytest.raises(ValueError):
        mixed_batch_time("A100", chunk=64, context=0, decode_batch=1, decode_seqlen=64, num_q_heads=6,
                         num_kv_heads=4, head_dim=64)
