"""The rounding rules both graders share: how a statement asks a part to be rounded, and the windows that follow.

Each numeric part of an exercise says how the statement asks the reader to round (``decimals`` or significant
``digits``). :func:`windows` derives the accepted windows from it: the reference's tolerance is at least the
distance from the reference to its own rounded value, and a known mistake's window is the reference's relative
precision scaled to the mistake's size, widened where needed so that the mistake's value *rounded as the
statement asks* is recognised (exercise 2's "elements, not bytes" answered at one decimal, 68.2, was missed before).
:func:`canonical` is the rounded text of a value (``toFixed`` / ``toExponential`` in ``grader.js``), and
:func:`grid` lists the rounded values inside a window (the student edition hashes those, see
:mod:`flashbook.exercises.keys`).

This module is a leaf: it reads the parts and mistakes it is given (``kind``, ``key``, ``rtol``, ``atol``,
``decimals``, ``digits``; ``part``, ``value``) and imports only the standard library.

Source: this book's presentation layer (the rounding of JavaScript's ``Number.prototype.toFixed`` and
``toExponential``, ECMA-262 §21.1.3: the exact binary value, ties away from zero).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal

__all__ = ["Spec", "spec", "canonical", "rounded", "rounding_text", "windows", "grid", "digest", "MARGIN"]

#: Relative safety margin on every derived window (float noise of a typed decimal, never a rounding step).
MARGIN = 1e-9


@dataclass(frozen=True)
class Spec:
    """A rounding read back from a payload: ``decimals`` or significant ``digits`` (the other is None)."""

    decimals: int | None = None
    digits: int | None = None


def spec(rounding) -> Spec:
    """``["decimals", k]`` or ``["digits", k]`` (a payload part's ``rounding``) -> :class:`Spec`.

    Raises:
        ValueError: anything else.
    """
    kind, k = rounding
    if kind not in ("decimals", "digits") or not isinstance(k, int):
        raise ValueError(f"a rounding is ['decimals', k] or ['digits', k], got {rounding!r}")
    return Spec(**{kind: k})


def digest(salt: str, text: str) -> str:
    """The key of a rounded answer: the first 16 hex digits of SHA-256(``salt + "|" + text``) (UTF-8).

    ``grader.js`` computes the same with its own SHA-256 (FIPS 180-4), so the student edition's form can
    compare a typed answer with the keys without the page holding the answer itself.
    """
    return hashlib.sha256(f"{salt}|{text}".encode("utf-8")).hexdigest()[:16]


def _decimal_rounded(p, x) -> Decimal:
    d = x if isinstance(x, Decimal) else Decimal(float(x))
    if p.decimals is not None:
        return d.quantize(Decimal(1).scaleb(-p.decimals), rounding=ROUND_HALF_UP)
    return Context(prec=p.digits, rounding=ROUND_HALF_UP).plus(d)


def canonical(p, x) -> str:
    """The text of ``x`` rounded as part ``p`` asks (half away from zero): what both graders compare.

    ``decimals=k``: fixed notation with k decimals (JavaScript ``x.toFixed(k)``); ``digits=k``: exponent
    notation with k significant digits (``x.toExponential(k - 1)``, e.g. ``"6.87e+1"``). Zero (either sign)
    is ``"0"``. ``x`` is a float or a :class:`decimal.Decimal` (rounded exactly from its binary value).
    """
    d = _decimal_rounded(p, x)
    if d == 0:
        return "0"
    return format(d, f".{p.decimals}f") if p.decimals is not None else format(d, f".{p.digits - 1}e")


def rounded(p, x: float) -> float:
    """``x`` rounded as part ``p`` asks, as a float (what a reader who follows the statement types)."""
    return float(_decimal_rounded(p, x))


def rounding_text(p) -> str:
    """``"one decimal"``, ``"3 decimals"``, ``"3 significant digits"``: the rounding of ``p`` in words."""
    if p.decimals is not None:
        return {0: "a whole number", 1: "one decimal"}.get(p.decimals, f"{p.decimals} decimals")
    return f"{p.digits} significant digit" + ("s" if p.digits > 1 else "")


def _tol_for(p, v: float, base: float) -> float:
    """At least ``base``, and wide enough that ``v`` rounded as asked lies inside ``v ± tol``."""
    need = abs(rounded(p, v) - v)
    return max(base, need + MARGIN * max(abs(v), need, 1e-300))


def windows(ex, ref: dict, ctx: dict) -> dict:
    """The accepted windows of every numeric part: ``{key: {"ref", "tol", "mistakes": [(Mistake, v, tol)]}}``.

    The reference's tolerance is the part's ``max(atol, rtol * |ref|)``, or the distance to the reference's
    rounded value if that is larger. A known mistake of value v keeps the same relative precision
    (``tol * |v| / |ref|``), or the distance from v to its own rounded value if that is larger, so
    a mistake answered at the statement's rounding is recognised.
    """
    out = {}
    for p in ex.parts:
        if p.kind != "number":
            continue
        r = float(ref[p.key])
        tol = _tol_for(p, r, max(p.atol, p.rtol * abs(r)))
        ms = []
        for m in ex.mistakes:
            if m.part == p.key:
                v = float(m.value(ref, ctx))
                scaled = tol * abs(v) / abs(r) if r != 0 else tol
                ms.append((m, v, _tol_for(p, v, scaled)))
        out[p.key] = {"ref": r, "tol": tol, "mistakes": ms}
    return out


def grid(p, lo: float, hi: float, limit: int = 2000) -> list[str]:
    """The :func:`canonical` texts of every value rounded as ``p`` asks that lies in ``[lo, hi]``.

    Raises:
        ValueError: more than ``limit`` values (the window is far wider than the rounding step).
    """
    lo_d, hi_d = Decimal(float(lo)), Decimal(float(hi))
    vals: list[Decimal] = []
    if p.decimals is not None:
        step = Decimal(1).scaleb(-p.decimals)
        n0, n1 = math.ceil(lo_d / step), math.floor(hi_d / step)
        if n1 - n0 + 1 > limit:
            raise ValueError(f"part {p.key!r}: {n1 - n0 + 1} rounded values in one window")
        vals = [Decimal(n) * step for n in range(n0, n1 + 1)]
    else:
        k = p.digits
        for sign, a, b in ((1, max(lo_d, Decimal(0)), hi_d), (-1, max(-hi_d, Decimal(0)), -lo_d)):
            if b <= 0 or a > b:
                continue
            a = max(a, b.scaleb(-30))
            for e in range(math.floor(a.log10()) - 1, math.floor(b.log10()) + 2):
                step = Decimal(1).scaleb(e - k + 1)
                n0 = max(10 ** (k - 1), math.ceil(a / step))
                n1 = min(10 ** k - 1, math.floor(b / step))
                if n1 - n0 + 1 > limit:
                    raise ValueError(f"part {p.key!r}: too many rounded values in one window")
                vals += [sign * Decimal(n) * step for n in range(n0, n1 + 1)]
        if lo_d <= 0 <= hi_d:
            vals.append(Decimal(0))
    out = sorted({canonical(p, v) for v in vals})
    if len(out) > limit:
        raise ValueError(f"part {p.key!r}: {len(out)} rounded values in one window")
    return out
