"""One vocabulary of units for display: the only place where SI values become text.

labcore computes in SI units (seconds, bytes, FLOP, bytes/s, FLOP/s). Everything the book shows as text
(prose, table cells, axis labels, slider labels) goes through these helpers, so a byte count is written
the same way everywhere: a value with its unit by ``fmt_*`` (``fmt_seconds(102e-6) == '102.0 µs'``), a
label that names its unit by :func:`unit_label` (``"model time (µs)"``), both from :data:`SYMBOLS` only:

- **decimal** prefixes for bytes, rates and FLOP: kB is not used; ``KB`` = 10^3, ``MB`` = 10^6,
  ``GB`` = 10^9, ``TB`` = 10^12 bytes (as the GPU datasheets and the lecture write bandwidth and memory);
- **binary** prefixes where a size is a power of two in hardware (SRAM, shared memory, pages):
  ``KiB`` = 2^10, ``MiB`` = 2^20 bytes.

So the FlashAttention paper's "100 KB of SRAM" (51,200 FP16 elements = 102,400 bytes) is written
``100 KiB`` here, and Hazy's 213 KB of shared memory (13 pages of 16 KiB = 212,992 bytes) is ``208 KiB``
or ``213 KB``, never a mixture. Source: IEC 80000-13 (binary prefixes); SI brochure (decimal prefixes).
"""
from __future__ import annotations

import math
import numbers

__all__ = ["DECIMAL", "BINARY", "SYMBOLS", "fmt_bytes", "fmt_seconds", "fmt_rate", "fmt_flops", "fmt_flop_rate",
           "fmt_intensity", "unit_label", "KB", "MB", "GB", "KiB", "MiB", "GiB"]

#: Decimal byte prefixes (factor, symbol), largest first.
DECIMAL = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1.0, "B"))
#: Binary byte prefixes (factor, symbol), largest first.
BINARY = ((2.0 ** 30, "GiB"), (2.0 ** 20, "MiB"), (2.0 ** 10, "KiB"), (1.0, "B"))

#: Bytes in one KB, MB and GB (decimal: 10^3, 10^6, 10^9), for converting a byte count to the unit a
#: question or a table asks for (``n_bytes / MB``).
KB = 1000
MB = 1000 ** 2
GB = 1000 ** 3

#: Bytes in one KiB, MiB and GiB (binary: 2^10, 2^20, 2^30), for sizes typed as inputs (``100 * KiB``).
KiB = 1024
MiB = 1024 ** 2
GiB = 1024 ** 3

_TIME = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_FLOP = ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1e3, "kFLOP"), (1.0, "FLOP"))
_INTENSITY = "FLOP/byte"

#: Every unit symbol the helpers write: bytes (KB ... TB, KiB ... GiB), bandwidths (``GB/s``), times
#: (s, ms, ``µs`` with the micro sign U+00B5, ns), FLOP counts and rates (``TFLOP``, ``TFLOP/s``) and
#: arithmetic intensity (``FLOP/byte``). An axis, slider or table-header label names its unit through
#: :func:`unit_label`, which accepts only these.
SYMBOLS = frozenset([sym for _, sym in DECIMAL + BINARY] + [sym + "/s" for _, sym in DECIMAL]
                    + [sym for _, sym in _TIME] + [sym for _, sym in _FLOP] + [sym + "/s" for _, sym in _FLOP]
                    + [_INTENSITY])


def _number(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r} ({type(x).__name__})")
    x = float(x)
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {x}")
    return x


def _pick(x: float, table, unit):
    if unit is not None:
        for factor, sym in table:
            if sym == unit:
                return factor, sym
        raise ValueError(f"unit must be one of {[s for _, s in table]}, got {unit!r}")
    for factor, sym in table:
        if x >= factor:
            return factor, sym
    return table[-1]


def _fmt(x: float, table, unit, digits: int) -> str:
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or not 0 <= digits <= 6:
        raise ValueError(f"digits must be an integer in [0, 6], got {digits!r}")
    factor, sym = _pick(x, table, unit)
    return f"{x / factor:,.{digits}f} {sym}"


def fmt_bytes(n, *, binary: bool = False, unit: str | None = None, digits: int = 1) -> str:
    """A byte count as text: ``fmt_bytes(68.7e9) == '68.7 GB'``, ``fmt_bytes(102400, binary=True) == '100.0 KiB'``.

    Args:
        n: bytes (real number >= 0).
        binary: use KiB/MiB/GiB (powers of 1024) instead of KB/MB/GB/TB
        (powers of 1000).
        unit: force a unit (one of the chosen family's symbols), else the largest that
        keeps the value >= 1.
        digits: decimals (0-6).
    Raises: TypeError for a non-number; ValueError for a negative/non-finite value or an unknown unit.
    """
    return _fmt(_number(n, "n"), BINARY if binary else DECIMAL, unit, digits)


def fmt_seconds(t, *, unit: str | None = None, digits: int = 1) -> str:
    """A duration in seconds as text (s, ms, µs, ns): ``fmt_seconds(102e-6) == '102.0 µs'``; raises as fmt_bytes."""
    return _fmt(_number(t, "t"), _TIME, unit, digits)


def fmt_flops(flop, *, unit: str | None = None, digits: int = 1) -> str:
    """A count of floating-point operations as text: ``fmt_flops(3.1e12) == '3.1 TFLOP'``; raises as fmt_bytes."""
    return _fmt(_number(flop, "flop"), _FLOP, unit, digits)


def fmt_rate(bytes_per_s, *, unit: str | None = None, digits: int = 1) -> str:
    """A bandwidth in bytes/s as text with decimal prefixes: ``fmt_rate(3.35e12) == '3.4 TB/s'``.

    ``unit`` is a byte symbol without "/s" (e.g. ``"GB"``). Raises: TypeError/ValueError as :func:`fmt_bytes`.
    """
    return fmt_bytes(bytes_per_s, unit=unit, digits=digits) + "/s"


def fmt_flop_rate(flop_per_s, *, unit: str | None = None, digits: int = 1) -> str:
    """A compute rate in FLOP/s as text: ``fmt_flop_rate(989e12, digits=0) == '989 TFLOP/s'``.

    ``unit`` is a FLOP symbol without "/s" (e.g. ``"TFLOP"``). Raises: TypeError/ValueError as :func:`fmt_bytes`.
    """
    return fmt_flops(flop_per_s, unit=unit, digits=digits) + "/s"


def fmt_intensity(flop_per_byte, *, digits: int = 0) -> str:
    """An arithmetic intensity in FLOP per byte as text: ``fmt_intensity(201.2) == '201 FLOP/byte'``.

    Source:
        the roofline model (Williams, Waterman and Patterson 2009).
    Raises:
        TypeError/ValueError as :func:`fmt_bytes`.
    """
    return _fmt(_number(flop_per_byte, "flop_per_byte"), ((1.0, _INTENSITY),), None, digits)


def unit_label(quantity: str, unit: str, detail: str = "") -> str:
    """An axis, slider or table-header label that names its unit: ``"quantity (unit)"``.

    ``unit_label("model time", "µs") == "model time (µs)"``; ``detail`` follows the unit inside the
    parentheses: ``unit_label("SRAM M", "KiB", "of FP16") == "SRAM M (KiB of FP16)"``.

    Args:
        quantity: what is measured (text without a unit symbol); "" gives the unit alone.
        unit: one of :data:`SYMBOLS`.
        detail: optional words after the unit (e.g. ``"of FP16"``), "" for none.
    Raises:
        TypeError: a non-string argument. ValueError: ``unit`` is not one of :data:`SYMBOLS` (e.g. ``"us"``
        or ``"TFLOPS"``); the message lists the symbols.
    Source: this book's one vocabulary of units (IEC 80000-13 and the SI brochure, as the module says).
    """
    for name, v in (("quantity", quantity), ("unit", unit), ("detail", detail)):
        if not isinstance(v, str):
            raise TypeError(f"{name} must be a string, got {v!r} ({type(v).__name__})")
    if unit not in SYMBOLS:
        raise ValueError(f"unit must be one of {sorted(SYMBOLS)}, got {unit!r}")
    inner = f"{unit} {detail}" if detail else unit
    return f"{quantity} ({inner})" if quantity else inner
