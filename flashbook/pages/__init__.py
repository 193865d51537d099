"""The numbers each page of the book quotes, one small module per page.

A page's prose never types a result and never reads a hidden alias: its one set-up cell imports the page's
module here and binds ``n = <module>.numbers()``, and every inline eval role of the prose reads a field of that
record (such as ``n.fa2_ctas``), so the HTML build and a live JupyterLab reader see the same value from the same
code. Each module computes with ``labcore`` (and ``labcore.published`` for published figures); the
engine holds the algorithms and models, these modules only gather what a page quotes, in display units
named in each field (``_us`` µs, ``_ms`` ms, ``_pct`` %, ``_MB`` MB, ``_GB`` GB; a bare ratio is a plain
float; a ``_share`` or ``_err`` is a fraction shown with ``:.0%``).
"""

from __future__ import annotations

from types import SimpleNamespace

from labcore.published import published

__all__ = ["Numbers", "published_value", "published_low", "published_high", "published_values"]


class Numbers(SimpleNamespace):
    """A page's numbers: a frozen record read by attribute (``n.fa2_ctas``); ``repr`` lists every field.

    Raises: AttributeError on assignment or deletion (the prose must read what the module computed), and for an
    unknown field (with the field names in the message).
    """

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only; compute {name!r} in the page module")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getattr__(self, name):  # only called for a missing field
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"no number {name!r} on this page; fields: {', '.join(sorted(vars(self)))}")


def published_value(key: str):
    """``labcore.published.published(key).value`` (SI units). Raises: as :func:`labcore.published.published`."""
    return published(key).value


def published_low(key: str) -> float:
    """The low end of a published range (SI units); the value itself when it is not a range."""
    return published(key).low


def published_high(key: str) -> float:
    """The high end of a published range (SI units); the value itself when it is not a range."""
    return published(key).high


def published_values(**names) -> dict:
    """Published figures (or both ends of a range) by the names a page quotes them under, in display units.

    Args:
        **names: ``name=key`` or ``name=(key, scale)``: a key of ``labcore.published.PUBLISHED`` (str) and a factor
            (int or float, default 1) from SI to the unit the page shows (100 for a percentage, 1e-12 for TFLOP/s).

    Returns:
        dict: for each ``name``, ``name`` -> the value (or a range's low end) times ``scale`` and
        ``name + "_hi"`` -> the high end times ``scale`` (the value itself when it is not a range).

    Raises: TypeError if an argument is neither a string nor a (key, scale) pair, or ``scale`` is not a number;
    ValueError for an unknown key (see :func:`labcore.published.published`).

    Source: each record's ``source`` and ``where``.
    """
    out = {}
    for name, spec in names.items():
        key, scale = (
            (spec, 1)
            if isinstance(spec, str)
            else (spec if isinstance(spec, tuple) and len(spec) == 2 else (None, None))
        )
        if key is None:
            raise TypeError(f"{name}: give a key (str) or a (key, scale) pair, got {spec!r}")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise TypeError(f"{name}: scale must be a number, got {scale!r}")
        rec = published(key)
        out[name], out[name + "_hi"] = rec.low * scale, rec.high * scale
    return out
