"""GPU presets: per-SM rates with sources; derived peaks agree with the quoted ones within 2%."""
from __future__ import annotations

import pytest

from labcore.hardware import GPUS, get_gpu
from labcore.published import published

RATE_FIELDS = ("tensor_clock", "tensor_flop_per_clock_per_sm", "fp8_tensor_flops", "fp8_flop_per_clock_per_sm",
               "exp_ops_per_clock_per_sm", "smem_bytes_per_clock_per_sm", "l2_capacity")


@pytest.mark.parametrize("name", list(GPUS))
def test_every_rate_has_a_source_or_a_reason(name):
    g = GPUS[name]
    for f in RATE_FIELDS:
        note = g.rate_source(f)
        assert isinstance(note, str) and len(note) > 10, (name, f)
        if getattr(g, f) is None:
            assert any(w in note for w in ("not", "no ")), f"{name}.{f} is None without saying why: {note}"


@pytest.mark.parametrize("name", list(GPUS))
def test_derived_tensor_peak_matches_quoted_within_2_percent(name):
    g = GPUS[name]
    if g.tensor_clock is None:  # H200: no published clock; the model's clock is implied by the quoted peak
        assert g.model_clock == pytest.approx(1.83e9, rel=0.01)
        return
    assert g.derived_tensor_flops == pytest.approx(g.tensor_flops, rel=0.02)
    if g.fp8_flop_per_clock_per_sm is not None:
        assert g.fp8_flop_per_clock_per_sm * g.num_sms * g.tensor_clock == pytest.approx(g.fp8_tensor_flops, rel=0.02)


def test_worked_example_h100():
    h = get_gpu("H100")
    assert h.derived_tensor_flops == pytest.approx(989.4e12, rel=1e-3)   # 4096 x 132 x 1.83 GHz
    # FA3 footnote 5: 16 x 132 x 1830 MHz = 3.9 TFLOP/s of exponentials; Table 1: 31 TB/s of shared memory
    assert h.exp_ops_per_clock_per_sm * h.num_sms * h.tensor_clock == pytest.approx(
        published("fa3.h100_exp_flops").value, rel=0.02)
    assert h.smem_bytes_per_clock_per_sm * h.num_sms * h.tensor_clock == pytest.approx(
        published("fa3.h100_smem_bandwidth").value, rel=0.02)
    assert h.tensor_clock == published("fa3.h100_clock").value


def test_a100_smem_matches_fa2_estimate_and_b200_matches_fa4():
    a = get_gpu("A100")
    assert a.smem_bytes_per_clock_per_sm * a.num_sms * a.tensor_clock == pytest.approx(
        published("fa2.a100_smem_bandwidth").value, rel=0.03)
    b = get_gpu("B200")
    assert b.tensor_flop_per_clock_per_sm == published("fa4.b200_mma_flop_per_clock").value
    assert b.exp_ops_per_clock_per_sm == published("fa4.b200_mufu_per_clock").value
    assert b.smem_bytes_per_clock_per_sm == published("fa4.smem_bytes_per_clock").value


def test_a_preset_whose_peak_disagrees_fails_the_check():
    bad = get_gpu("H100").with_(tensor_clock=1.98e9)  # the boost clock, not the tensor-peak clock
    assert bad.derived_tensor_flops / bad.tensor_flops - 1 > 0.02


def test_no_fp8_on_ampere_and_fp32_lanes():
    a = get_gpu("A100")
    assert a.fp8_tensor_flops is None and a.fp8_flop_per_clock_per_sm is None
    assert a.fp32_ops_per_clock_per_sm == pytest.approx(64, rel=0.01)
    assert get_gpu("B200").fp32_ops_per_clock_per_sm is None


def test_rate_validation_and_lookup_errors():
    with pytest.raises(ValueError):
        get_gpu("H100").with_(exp_ops_per_clock_per_sm=-1)
    with pytest.raises(ValueError, match="not a rate field"):
        get_gpu("H100").rate_source("num_sms")
