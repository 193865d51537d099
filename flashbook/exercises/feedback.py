"""Feedback and wording shared by several exercises' definitions (one text, one home).

Source: this book's presentation layer.
"""
from __future__ import annotations

from typing import Callable

from labcore.units import GiB, MiB

from .model import Mistake

__all__ = ["PCT", "FP16_ELEMENTS", "K_ONLY", "binary_unit", "an", "kilo"]

PCT = "That looks like a fraction; the question asks for a percentage (multiply by 100)."
FP16_ELEMENTS = "that is the number of elements (in millions); each FP16 element is 2 bytes"
K_ONLY = "you counted K but not V: the cache holds both"
_BINARY = {"MiB": (MiB, "that is MiB (2^20 bytes); the question asks for MB = 10^6 bytes"),
           "GiB": (GiB, "that is GiB (2^30 bytes); the question asks for GB = 10^9 bytes")}


def binary_unit(unit: str, part: str, n_bytes: Callable[[dict, dict], float], id: str | None = None) -> Mistake:
    """The mistake of answering in ``unit`` (MiB or GiB) where the question asks for MB or GB.

    ``n_bytes(ref, ctx)`` is the right number of bytes; the mistake's value is it over 2^20 or 2^30.
    """
    size, text = _BINARY[unit]
    return Mistake(id or unit, part, lambda r, c: n_bytes(r, c) / size, text)


def an(name: str) -> str:
    """``"an A100"``, ``"an H100"``, ``"a B200"``: the article a GPU's name takes when read aloud."""
    return ("an " if name[:1].upper() in "AEFHILMNORSX" else "a ") + name


def kilo(n: int) -> str:
    """A token count in units of 1024 (``65_536 -> "64K"``), as the lecture writes context lengths."""
    return f"{n // 1024}K" if n % 1024 == 0 else f"{n:,}"
