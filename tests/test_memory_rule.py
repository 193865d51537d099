"""labcore.waves' physical memory-bound rule: bandwidth shared by the running CTAs, a per-CTA cap per generation,
occupancy from the kernel's resources; each checked against an independent computation."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import labcore as lc
from labcore.waves import (DRAM_LATENCY, MEMORY_RULES, PIPELINE_BYTES_IN_FLIGHT, kernel_occupancy, kernel_time,
                           per_cta_bandwidth_cap, shared_bandwidth_schedule, waves_time)


def test_per_cta_cap_is_littles_law_on_each_generations_pipeline():
    # the rings of K and V tiles, at d = 128 in BF16: A100 one 128-key K and V pair, H100 two stages of 176 keys,
    # B200 five stages of 128 x 128 tiles
    assert PIPELINE_BYTES_IN_FLIGHT == {"ampere": 2 * 128 * 128 * 2, "hopper": 2 * 2 * 176 * 128 * 2,
                                        "blackwell": 5 * 128 * 128 * 2}
    assert per_cta_bandwidth_cap("A100") == pytest.approx(65536 / 0.8e-6)          # ~82 GB/s, the lecture's ~80
    assert per_cta_bandwidth_cap("H100") == pytest.approx(180224 / 0.8e-6)
    assert per_cta_bandwidth_cap("B200") == pytest.approx(163840 / 0.8e-6)
    assert per_cta_bandwidth_cap("H100") > 2.5 * per_cta_bandwidth_cap("A100")     # TMA keeps more in flight
    assert per_cta_bandwidth_cap("A100", bytes_in_flight=1e5, latency=1e-6) == pytest.approx(1e11)
    assert DRAM_LATENCY == lc.MODEL_DEFAULTS["wave_latency"]
    with pytest.raises(ValueError):
        per_cta_bandwidth_cap("A100", latency=0)


def test_occupancy_is_the_decode_models():
    for gpu in ("A100", "H100", "B200"):
        for method in lc.DECODE_METHODS:
            a = lc.decode_ctas_per_sm(gpu, method=method, head_dim=128)
            b = kernel_occupancy(gpu, smem_per_cta=a["smem_per_cta"], threads_per_cta=128)
            assert a == b
    # by hand: A100, 80 KiB + 1 KiB reserved per CTA in 164 KiB -> 2; 255 registers x 128 threads -> 2
    r = kernel_occupancy("A100", smem_per_cta=80 * 1024)
    assert (r["by_smem"], r["by_registers"], r["by_threads"], r["ctas_per_sm"]) == (2, 2, 16, 2)
    assert kernel_occupancy("A100", smem_per_cta=200 * 1024)["ctas_per_sm"] == 0     # more than a block may hold
    assert kernel_occupancy("H100", smem_per_cta=1024, registers_per_thread=32)["ctas_per_sm"] == 16


@pytest.mark.parametrize("n", [1, 7, 132, 133, 200, 264, 400, 1000])
@pytest.mark.parametrize("cap", [None, 80e9, 225e9])
def test_equal_ctas_give_the_shared_last_wave_rule(n, cap):
    """One CTA per SM, equal memory-bound CTAs: the fluid rule is waves_time's "shared" last wave, CTA for CTA."""
    s = shared_bandwidth_schedule(np.full(n, 2e6), slots=132, bandwidth=3.35e12, per_cta_cap=cap)
    w = waves_time(n, 132, 0.0, 2e6, 3.35e12, per_sm_bandwidth_cap=cap, last_wave="shared")
    assert s.makespan == pytest.approx(float(w["total"]), rel=1e-12)


def test_two_ctas_per_sm_never_slower_than_waves():
    for n in (100, 264, 300):
        for tc in (0.0, 2e-6, 3e-5):
            s = shared_bandwidth_schedule(np.full(n, 1e6), slots=264, sms=132, bandwidth=3.35e12, per_cta_cap=8e10,
                                          compute_time=tc)
            w = waves_time(n, 264, tc * -(-min(n, 264) // 132), 1e6, 3.35e12, per_sm_bandwidth_cap=8e10,
                           last_wave="shared")
            assert s.makespan <= float(w["total"]) * (1 + 1e-12)


def test_unequal_ctas_by_hand():
    """1 MB and 3 MB on two slots at 1 GB/s: both at 0.5 GB/s until the 1 MB one ends (2 ms), then the other has
    2 MB left at the whole 1 GB/s: 4 ms, every byte at full bandwidth. With a cap of 0.6 GB/s per CTA the second
    phase takes 2 MB / 0.6 GB/s: 2 + 3.33 ms."""
    s = shared_bandwidth_schedule([1e6, 3e6], slots=2, bandwidth=1e9)
    assert s.end.tolist() == pytest.approx([2e-3, 4e-3])
    c = shared_bandwidth_schedule([1e6, 3e6], slots=2, bandwidth=1e9, per_cta_cap=0.6e9)
    assert c.end.tolist() == pytest.approx([2e-3, 2e-3 + 2e-3 / 0.6])
    # one slot: in launch order, one after the other at the cap; LPT order starts the 3 MB one first
    one = shared_bandwidth_schedule([1e6, 3e6], slots=1, bandwidth=1e9, order="lpt")
    assert one.start.tolist() == pytest.approx([3e-3, 0.0]) and one.makespan == pytest.approx(4e-3)
    # a compute-bound CTA streams no faster than it computes: 1 MB over 5 ms leaves the rest to the other
    m = shared_bandwidth_schedule([1e6, 3e6], slots=2, bandwidth=1e9, compute_time=[5e-3, 0.0])
    assert m.end.tolist() == pytest.approx([5e-3, 3e-3 / 0.8])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 10**7), min_size=1, max_size=40), st.integers(1, 16), st.sampled_from([None, 3e9]))
def test_shared_rule_bounds(sizes, slots, cap):
    """Never faster than all bytes at full bandwidth or than the largest CTA at its cap; never slower than the CTAs
    one after another at their cap; every CTA's time at least its own bytes at the cap."""
    by = np.array(sizes, float)
    bw = 1e10
    s = shared_bandwidth_schedule(by, slots=slots, bandwidth=bw, per_cta_cap=cap)
    rate = bw if cap is None else min(cap, bw)
    assert s.makespan >= max(by.sum() / bw, by.max() / rate) * (1 - 1e-9)
    assert s.makespan <= by.sum() / rate * (1 + 1e-9) + 1e-15
    assert np.all(s.end - s.start >= by / rate * (1 - 1e-9))


def test_kernel_time_derives_occupancy_and_cap():
    r = kernel_time("H100", np.full(300, 1e6), ctas_per_sm="derived", smem_per_cta=81 * 1024)
    assert r["ctas_per_sm"] == 2 and r["slots"] == 264 and r["per_cta_cap"] == per_cta_bandwidth_cap("H100")
    assert r["total"] >= r["floor"] * (1 - 1e-12) and r["floor"] == pytest.approx(300e6 / 3.35e12)
    assert MEMORY_RULES == ("lecture", "shared")
    with pytest.raises(ValueError, match="smem_per_cta"):
        kernel_time("H100", [1e6], ctas_per_sm="derived")
    with pytest.raises(ValueError, match="does not fit"):
        kernel_time("A100", [1e6], ctas_per_sm="derived", smem_per_cta=300 * 1024)
    with pytest.raises(ValueError):
        shared_bandwidth_schedule([1.0, -1.0], slots=1, bandwidth=1.0)
    with pytest.raises(ValueError):
        shared_bandwidth_schedule([1.0], slots=2, sms=3, bandwidth=1.0)
