"""labcore.units: the one formatting helper for bytes, seconds, rates and FLOP."""
import pytest
from hypothesis import given, strategies as st

from labcore.units import KiB, MiB, fmt_bytes, fmt_flop_rate, fmt_flops, fmt_rate, fmt_seconds


def test_decimal_and_binary_bytes():
    assert fmt_bytes(68.7e9) == "68.7 GB"
    assert fmt_bytes(100 * KiB, binary=True, digits=0) == "100 KiB"     # FA paper's "100 KB" SRAM
    assert fmt_bytes(100 * KiB, digits=1) == "102.4 KB"                 # the same bytes, decimal
    assert fmt_bytes(13 * 16 * KiB, binary=True, digits=0) == "208 KiB"  # Hazy's 13 pages of 16 KiB
    assert fmt_bytes(13 * 16 * KiB, digits=0) == "213 KB"
    assert fmt_bytes(2 * MiB, binary=True) == "2.0 MiB"
    assert fmt_bytes(512) == "512.0 B"
    assert fmt_bytes(0) == "0.0 B"
    assert fmt_bytes(80e9, unit="GB", digits=0) == "80 GB"


def test_time_rate_flops():
    assert fmt_seconds(102e-6) == "102.0 µs"
    assert fmt_seconds(4.486e-3, digits=2) == "4.49 ms"
    assert fmt_seconds(500e-9, digits=0) == "500 ns"
    assert fmt_rate(3.35e12) == "3.4 TB/s"
    assert fmt_rate(24e9, digits=0) == "24 GB/s"
    assert fmt_flops(3.1e12) == "3.1 TFLOP"
    assert fmt_flop_rate(989e12, digits=0) == "989 TFLOP/s"
    assert fmt_flop_rate(19.5e12, unit="TFLOP") == "19.5 TFLOP/s"


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
                                      ("1", TypeError), (True, TypeError), (None, TypeError)])
def test_bad_values(bad, exc):
    with pytest.raises(exc):
        fmt_bytes(bad)


def test_bad_unit_and_digits():
    with pytest.raises(ValueError, match="unit must be one of"):
        fmt_bytes(1e6, unit="KiB")          # a binary symbol in the decimal family
    with pytest.raises(ValueError, match="digits"):
        fmt_seconds(1.0, digits=9)


@given(st.floats(min_value=1.0, max_value=1e15, allow_nan=False))
def test_mantissa_in_range(x):
    """The chosen prefix keeps the printed mantissa in [1, 1000) (before rounding)."""
    text = fmt_bytes(x, digits=6)
    value = float(text.split()[0].replace(",", ""))
    assert 1.0 <= value <= 1000.0 or text.endswith(" TB")
