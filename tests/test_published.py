"""labcore.published: every figure has its source; values agree with the papers as read."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from labcore.published import PUBLISHED, Published, published, published_keys

ROOT = Path(__file__).resolve().parents[1]


def test_every_entry_has_source_where_and_a_known_bib_key():
    bib = (ROOT / "references.bib").read_text()
    keys = set(re.findall(r"@\w+\{([^,]+),", bib))
    assert len(PUBLISHED) >= 80
    for k, e in PUBLISHED.items():
        assert e.key == k and e.source and e.where, k
        assert e.source in keys, f"{k}: source {e.source!r} has no entry in references.bib"


@pytest.mark.parametrize("key, value", [
    # FlashAttention-2 (Dao 2023)
    ("fa2.speedup_vs_fa1", (1.7, 3.0)),
    ("fa2.a100_fraction_of_peak", (0.50, 0.73)),
    ("fa2.a100_forward_peak", 230e12),
    ("fa2.h100_fwd_bwd_peak", 335e12),
    # §2 (FlashAttention-3)
    ("fa3.h100_fp16_peak", 740e12),
    ("fa3.h100_fp16_fraction", 0.75),
    ("fa3.h100_fp8_peak", 1.2e15),
    ("fa3.fwd_speedup_vs_fa2", (1.5, 2.0)),
    ("fa3.bwd_speedup_vs_fa2", (1.5, 1.75)),
    ("fa3.fa2_h100_utilization", 0.35),
    ("fa3.rmse_fp8_baseline", 2.4e-2),
    ("fa3.rmse_fp8_fa3", 9.1e-3),
    ("fa3.h100_exp_flops", 3.9e12),
    # §3 (FlashAttention-4)
    ("fa4.b200_bf16_peak", 1613e12),
    ("fa4.b200_bf16_fraction", 0.71),
    ("fa4.roofline.fwd_128.mma", 1024.0),
    ("fa4.roofline.fwd_128.smem", 768.0),
    ("fa4.roofline.bwd_128.smem", 3328.0),
    ("fa4.exp_emulation_share", (0.10, 0.25)),
    # §5, §6
    ("hazy.h100_speedup_vs_vllm", 2.5),
    ("hazy.throughput_gain_vs_sglang", 0.22),
    ("flashmla.h800_compute_flops", 580e12),
    ("pod.attention_speedup_max", 0.59),
    ("lean.speedup_vs_fa2_max", 8.33),
])
def test_values_match_measurements_md(key, value):
    assert published(key).value == value


def test_caveats_carry_the_wording_that_qualifies_a_number():
    assert "almost" in published("hazy.h100_speedup_vs_vllm").caveat
    assert "forward" in published("fa3.fwd_speedup_vs_fa2").caveat
    assert "756" in published("fa3.h100_fp16_peak").caveat
    assert "around 2x" in published("fa2.speedup_vs_fa1").caveat
    assert published("fa3.h100_fp16_figure_max").caveat.startswith("label")


def test_derived_published_figures_are_consistent():
    # FA3's 2.6x is the ratio of its two RMSEs; FA2's 16x is 312 / 19.5
    assert published("fa3.rmse_fp8_baseline").value / published("fa3.rmse_fp8_fa3").value == pytest.approx(2.64, abs=0.01)
    assert published("fa2.a100_matmul_flops").value / published("fa2.a100_nonmatmul_flops").value == 16
    assert published("fa2.a100_forward_peak").value / published("fa2.a100_matmul_flops").value == pytest.approx(0.737, abs=1e-3)


def test_record_helpers():
    r = published("fa2.speedup_vs_fa1")
    assert (r.low, r.high) == (1.7, 3.0)
    assert "dao2023flashattention2, Sec. 4" in r.citation
    assert published_keys("fa4.roofline.fwd_128") == ["fa4.roofline.fwd_128.exp", "fa4.roofline.fwd_128.mma",
                                                        "fa4.roofline.fwd_128.smem"]


@pytest.mark.parametrize("bad, exc", [(3, TypeError), ("fa3.nope", ValueError), ("nope", ValueError)])
def test_lookup_errors(bad, exc):
    with pytest.raises(exc):
        published(bad)


@pytest.mark.parametrize("kw, exc", [
    (dict(value=1.0, unit="TFLOP/s"), ValueError),
    (dict(value=(2.0, 1.0), unit="x"), ValueError),
    (dict(value="1", unit="x"), TypeError),
])
def test_record_validation(kw, exc):
    with pytest.raises(exc):
        Published("k", source="s", where="w", **kw)
    with pytest.raises(ValueError):
        Published("k", 1.0, "x", "", "w")
