"""Published measurements and constants, as data, each with its citation.

Every figure the book quotes from a paper, a post or a README lives once, in SI units, with where it
is stated and its caveat (read off a plot, stated as "close to", a range, ...), as one row of
``labcore/data/published.csv``, read at import into :data:`PUBLISHED`. Prose inserts them through
:func:`published` like any other computed number; the prefill time model (:mod:`labcore.prefill`) reads its
published inputs from here too. The per-seqlen benchmark bars of the FlashAttention-2/3 papers live in
``labcore/data/`` (see :func:`labcore.prefill.load_prefill_measurements`).

Units: FLOP/s, bytes, bytes/s, s; fractions of a peak as fractions (0.75, not 75); speed-ups as ratios
(``unit="x"``). A range is a ``(low, high)`` tuple. Each row names its source (a bibliography key and the place in it) and its
caveat, so a value can be checked against the paper, post or repository it comes from.

Bibliography keys (``references.bib``): dao2023flashattention2, shah2024flashattention3,
zadouri2026flashattention4, dao2023flashdecoding, spector2025nobubbles, hazy2025throughput,
flashinfer2024blog, ye2025flashinfer, deepseek2025flashmla, kamath2025pod, sanovar2024lean,
spector2025thundermla.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Published", "PUBLISHED", "published", "published_keys"]

_UNITS = ("FLOP/s", "FLOP", "bytes", "bytes/s", "s", "fraction", "x", "ops/clock/SM", "FLOP/clock/SM",
          "bytes/clock/SM", "cycles", "count", "1", "Hz")


@dataclass(frozen=True)
class Published:
    """One published figure.

    Attributes:
        key: dotted name, e.g. ``"fa3.h100_fp16_peak"``.
        value: float, or a ``(low, high)`` tuple of floats for a stated range; SI units.
        unit: one of ``FLOP/s, FLOP, bytes, bytes/s, s, fraction, x`` (a ratio), ``ops/clock/SM``,
            ``FLOP/clock/SM``, ``bytes/clock/SM``, ``cycles``, ``count``, ``1`` (dimensionless), ``Hz``.
        source: bibliography key in ``references.bib``.
        where: table, figure, section or passage of the source.
        caveat: how the number is stated or obtained ("" when it is stated plainly in the text).
    """

    key: str
    value: float | tuple
    unit: str
    source: str
    where: str
    caveat: str = ""

    def __post_init__(self):
        if self.unit not in _UNITS:
            raise ValueError(f"{self.key}: unit {self.unit!r} is not one of {', '.join(_UNITS)}")
        if not self.source or not self.where:
            raise ValueError(f"{self.key}: every published figure needs its source and where it is stated")
        vals = self.value if isinstance(self.value, tuple) else (self.value,)
        if isinstance(self.value, tuple) and (len(vals) != 2 or vals[0] > vals[1]):
            raise ValueError(f"{self.key}: a range is (low, high) with low <= high, got {self.value!r}")
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"{self.key}: values must be numbers, got {v!r}")

    @property
    def low(self) -> float:
        """The value, or the low end of a range."""
        return self.value[0] if isinstance(self.value, tuple) else self.value

    @property
    def high(self) -> float:
        """The value, or the high end of a range."""
        return self.value[1] if isinstance(self.value, tuple) else self.value

    @property
    def citation(self) -> str:
        """``"source, where"`` (plus the caveat in parentheses when there is one)."""
        return f"{self.source}, {self.where}" + (f" ({self.caveat})" if self.caveat else "")


_CSV = Path(__file__).parent / "data" / "published.csv"


def _number(text: str, key: str) -> float:
    try:
        return float(text) if any(c in text for c in ".eEn") else int(text)
    except ValueError:
        raise ValueError(f"{_CSV.name}: {key}: value {text!r} is not a number") from None


def _load() -> list[Published]:
    """The rows of ``labcore/data/published.csv`` (lines starting with ``#`` are comments) as records."""
    with open(_CSV, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    out = []
    for r in rows:
        value = _number(r["value"], r["key"])
        if r["high"]:
            value = (value, _number(r["high"], r["key"]))
        out.append(Published(r["key"], value, r["unit"], r["source"], r["where"], r["caveat"]))
    return out


#: Every published figure by key.
PUBLISHED: dict[str, Published] = {}
for _e in _load():
    if _e.key in PUBLISHED:
        raise ValueError(f"duplicate published key {_e.key!r}")
    PUBLISHED[_e.key] = _e
del _e


def published(key: str) -> Published:
    """The :class:`Published` record for ``key`` (e.g. ``published("fa3.h100_fp16_peak").value``).

    Args:
        key: a key of :data:`PUBLISHED` (str).
    Raises:
        TypeError: if ``key`` is not a string.
        ValueError: for an unknown key (the message names keys that share its prefix).
    Source:
        each record's ``source`` and ``where``.
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, got {type(key).__name__}")
    if key not in PUBLISHED:
        prefix = key.split(".")[0] + "."
        near = [k for k in PUBLISHED if k.startswith(prefix)]
        raise ValueError(f"unknown published key {key!r}; " +
                         (f"keys under {prefix!r}: {', '.join(near)}" if near else
                          f"prefixes: {', '.join(sorted({k.split('.')[0] for k in PUBLISHED}))}"))
    return PUBLISHED[key]


def published_keys(prefix: str = "") -> list[str]:
    """Keys of :data:`PUBLISHED` starting with ``prefix`` (str), sorted."""
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
    return sorted(k for k in PUBLISHED if k.startswith(prefix))
