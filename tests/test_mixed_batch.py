"""labcore.mixed_batch: chunked prefill + decode, serial (sum) vs POD-style fused (towards the max)."""
import numpy as np
import pytest

from labcore import decode_attention_time, prefill_time
from labcore.mixed_batch import chunk_prefill_time, fused_step_time, mixed_batch_demands, mixed_batch_sweep, \
    mixed_batch_time
from labcore.prefill import PREFILL_DEFAULTS
from labcore.waves import per_cta_bandwidth_cap
from labcore.published import published

SHAPE = dict(num_q_heads=32, num_kv_heads=8, head_dim=128)


def test_one_tile_chunk_costs_one_tile():
    """A lone CTA has its SM to itself: one tile plus the start-up latency; its work spread over the SMs is a tile
    over the SM count."""
    lat = PREFILL_DEFAULTS["cta_latency"]
    r = chunk_prefill_time("A100-80GB-SXM", chunk=128, context=0, heads=1, head_dim=128)
    assert r["ctas"] == 1 and r["compute"] == pytest.approx(r["tile_time"] + lat)
    assert r["compute_work"] == pytest.approx(r["tile_time"] / 108) and r["ctas_per_sm"] == 2
    assert r["total"] == pytest.approx(max(r["compute"], r["memory"]) + r["overhead"])
    # 128 new tokens after 384 cached ones: one CTA visits 4 key blocks
    assert chunk_prefill_time("A100-80GB-SXM", chunk=128, context=384, heads=1, head_dim=128)["compute"] == \
        pytest.approx(4 * r["tile_time"] + lat)
    # two CTAs per SM share its tensor cores: two one-tile CTAs on a one-SM A100 take two tiles
    one_sm = __import__("labcore").get_gpu("A100-80GB-SXM").with_(num_sms=1)
    two = chunk_prefill_time(one_sm, chunk=128, context=0, heads=2, head_dim=128)
    assert two["compute"] == pytest.approx(2 * (two["tile_time"] + lat))


def test_chunk_agrees_with_the_prefill_model_at_zero_context():
    for n in (1024, 4096):
        a = chunk_prefill_time("A100-80GB-SXM", chunk=n, context=0, heads=32, head_dim=128)["total"]
        b = float(prefill_time("A100-80GB-SXM", batch=1, heads=32, seqlen=n, head_dim=128, causal=True)["total"])
        # same tile cost, occupancy and start-up; the chunk's CTAs share each SM's tensor cores only while both run,
        # the prefill model charges every CTA half an SM: the chunk is the faster of the two, by at most a quarter
        assert 0.75 * b <= a <= b


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


def test_the_same_step_under_both_memory_rules_and_tile_rows():
    """The decode part alone is decode_attention_time under each rule's settings; the decodes' tensor-core demand is
    their FLOPs over every SM and scales with the rows their tiles compute (64 padded, 16, or the group's 4)."""
    kw = dict(chunk=1024, context=8192, decode_batch=64, decode_seqlen=8192, **SHAPE)
    dk = dict(batch=64, seqlen=8192, method="flash_decoding", **SHAPE)
    sh = mixed_batch_demands("A100-80GB-SXM", **kw)
    assert sh["decode_total"] == decode_attention_time("A100-80GB-SXM", last_wave="shared", ctas_per_sm="derived",
                                                       per_sm_bandwidth_cap=per_cta_bandwidth_cap("A100"), **dk).total
    lec = mixed_batch_demands("A100-80GB-SXM", memory_rule="lecture", **kw)
    assert lec["decode_total"] == decode_attention_time("A100-80GB-SXM", **dk).total
    de = decode_attention_time("A100-80GB-SXM", num_splits=sh["decode_splits"], last_wave="shared",
                               ctas_per_sm="derived", per_sm_bandwidth_cap=per_cta_bandwidth_cap("A100"), **dk)
    assert sh["decode_compute"] == pytest.approx(de.num_ctas * de.flops_per_cta / (de.flops_per_sm * 108))
    r16 = mixed_batch_demands("A100-80GB-SXM", decode_tile_rows=16, **kw)
    use = mixed_batch_demands("A100-80GB-SXM", decode_tile_rows="useful", **kw)
    assert r16["decode_compute"] == pytest.approx(sh["decode_compute"] / 4)
    assert use["decode_compute"] == pytest.approx(sh["decode_compute"] / 16) and use["decode_rows"] == 4
    # the fused bound's gain grows as the decodes' tensor-core demand shrinks
    g = [mixed_batch_time("A100-80GB-SXM", decode_tile_rows=r, **kw)["gain"] for r in ("padded", 16, "useful")]
    assert g[0] < g[1] <= g[2]
    with pytest.raises(ValueError):
        mixed_batch_demands("A100-80GB-SXM", decode_tile_rows=2, **kw)      # fewer rows than the group's
    with pytest.raises(ValueError, match="memory_rule"):
        mixed_batch_demands("A100-80GB-SXM", memory_rule="full", **kw)


def test_sweep_over_chunk_sizes():
    s = mixed_batch_sweep("A100-80GB-SXM", chunks=[256, 512, 1024, 2048], context=8192, decode_batch=64,
                          decode_seqlen=8192, **SHAPE)
    assert np.all(np.diff(s["prefill"]) > 0) and np.all(s["decode"] == s["decode"][0])
    assert np.all(s["fused"] <= s["serial"]) and np.all(s["fused"] >= s["ideal"])
    # the gain peaks where the two kernels take about as long (here near 512-1024) and is at most 2x
    assert s["gain"].max() < 1.0 and np.argmax(s["gain"]) in (1, 2)
    # the prefill part's tensor-core demand is its tiles over the SMs, without the tail of its own last round
    c = chunk_prefill_time("A100-80GB-SXM", chunk=1024, context=8192, heads=32, head_dim=128)
    J = np.arange(8192 // 128 + 1, 8192 // 128 + 9)                 # query block i sees 65 + i key blocks
    assert c["compute_work"] == pytest.approx(32 * J.sum() * c["tile_time"] / 108)
    assert published("pod.attention_speedup_max").value == 0.59


def test_errors():
    with pytest.raises(ValueError):
        chunk_prefill_time("A100", chunk=0, context=0, heads=1, head_dim=64)
    with pytest.raises(ValueError):
        mixed_batch_time("A100", chunk=64, context=0, decode_batch=1, decode_seqlen=64, num_q_heads=6,
                         num_kv_heads=4, head_dim=64)
