"""Variants of an exercise: the lecture's numbers are variant 0, variant s (an integer seed) draws new ones.

An exercise is defined over parameters (:class:`flashbook.exercises.model.Exercise`): ``params`` (variant 0),
``ranges`` (the values a variant draws uniformly), ``draw`` (the parameters ``ranges`` cannot express) and
``valid`` (the relations that keep the statement meaningful: valid block sizes, a second wave, the unit the
question names still bounding the tile). :func:`params` draws variant s from a generator seeded by the
exercise's label and s (``random.Random("flashbook/<label>/<s>")``, the same on every platform and Python
3 release), redrawing until the variant is sound: ``valid`` holds, every reference and known mistake is
finite and no two of their windows (:func:`flashbook.exercises.rounding.windows`) overlap, so each known
mistake can still be told apart from the answer and from the others at the statement's rounding.

:func:`solve` computes one variant: parameters, reference answers, intermediate quantities, windows, and the
filled statement, labels and worked example. Everything a grader or a sheet shows comes from it.

Source: this book's presentation layer (other numbers for each student, the lecture's own as variant 0).
"""
from __future__ import annotations

import math
import numbers
import random
from dataclasses import dataclass

from .rounding import grid, windows

__all__ = ["Instance", "FORM_VARIANTS", "fill", "check_variant", "params", "solve", "sound"]

#: The variants a static form precomputes besides variant 0 (seeds 1..FORM_VARIANTS).
FORM_VARIANTS = 20

#: Draws tried before a variant is given up (a definition whose ranges are almost never sound).
MAX_TRIES = 500

_PARAMS: dict = {}


def fill(text: str, ctx: dict) -> str:
    """``text`` with its ``{name}`` placeholders replaced by ``ctx[name]`` (the rules of ``str.format_map``).

    Args:
        text: a statement, feedback, label or option text of an exercise; ``{name}`` or ``{name:spec}`` names
            an entry of ``ctx`` (a parameter, a text already formatted by a ``labcore.units`` helper, a count).
        ctx: the exercise's parameters and the intermediate quantities its ``compute`` returned.
    Raises:
        KeyError: a placeholder names no entry of ``ctx``.
    Source: this book's presentation layer.
    """
    return text.format_map(ctx)


def check_variant(variant) -> int:
    """``variant`` as an int; ValueError unless it is a non-negative integer (not a bool or float)."""
    if isinstance(variant, bool) or not isinstance(variant, numbers.Integral) or int(variant) < 0:
        raise ValueError(f"variant must be a non-negative integer (0 = the lecture's numbers), got {variant!r}")
    return int(variant)


@dataclass(frozen=True)
class Instance:
    """One variant of one exercise, computed.

    Attributes:
        number, variant: the exercise and the variant.
        params: its parameters.
        ref: reference answers by part key.
        ctx: parameters and intermediate quantities (what the texts are filled from).
        windows: :func:`flashbook.exercises.rounding.windows`.
        statement, example: the filled texts.
        labels: the filled part labels by key.
    """

    number: int
    variant: int
    params: dict
    ref: dict
    ctx: dict
    windows: dict
    statement: str
    example: str
    labels: dict


def _instance(ex, variant: int, p: dict) -> Instance:
    ref, ctx = ex.compute(p)
    wins = windows(ex, ref, ctx)
    return Instance(ex.number, variant, dict(p), ref, ctx, wins, fill(ex.template, ctx),
                    fill(ex.example, ctx) if ex.example else "", {q.key: fill(q.label, ctx) for q in ex.parts})


def sound(ex, inst: Instance) -> bool:
    """True when ``inst`` keeps the statement meaningful and every known mistake recognisable.

    ``ex.valid(params, ref, ctx)`` holds; every reference and mistake value is finite; no two windows of a
    part overlap; each window holds at least one and at most 2000 rounded values; a choice answer is a letter.
    """
    if not ex.valid(inst.params, inst.ref, inst.ctx):
        return False
    for q in ex.parts:
        if q.kind == "choice":
            if inst.ref[q.key] not in [o[0] for o in q.options]:
                return False
            continue
        w = inst.windows[q.key]
        wins = [(w["ref"], w["tol"])] + [(v, t) for _, v, t in w["mistakes"]]
        if not all(math.isfinite(v) and math.isfinite(t) for v, t in wins):
            return False
        for i, (va, ta) in enumerate(wins):
            for vb, tb in wins[i + 1:]:
                if abs(va - vb) <= ta + tb:
                    return False
            try:
                if not grid(q, va - ta, va + ta):
                    return False
            except ValueError:
                return False
    return True


def params(ex, variant=0) -> dict:
    """The parameters of ``variant`` of exercise ``ex`` (variant 0: ``ex.params``, the lecture's numbers).

    Args:
        ex: an :class:`flashbook.exercises.model.Exercise`.
        variant: a non-negative integer seed.
    Returns:
        A dict with the keys of ``ex.params``; the same for the same (exercise, variant), in any process.
    Raises:
        ValueError: ``variant`` is not a non-negative integer.
        RuntimeError: no sound variant within :data:`MAX_TRIES` draws (a definition error).
    """
    variant = check_variant(variant)
    if variant == 0:
        return dict(ex.params)
    key = (ex.label, variant)
    if key not in _PARAMS:
        rng = random.Random(f"flashbook/{ex.label}/{variant}")
        for _ in range(MAX_TRIES):
            p = {name: rng.choice(values) for name, values in ex.ranges.items()}
            if ex.draw is not None:
                p.update(ex.draw(rng))
            if set(p) != set(ex.params):
                raise RuntimeError(f"exercise {ex.number}: a variant draws {sorted(p)}, not {sorted(ex.params)}")
            if sound(ex, _instance(ex, variant, p)):
                _PARAMS[key] = p
                break
        else:
            raise RuntimeError(f"exercise {ex.number}: no sound variant {variant} in {MAX_TRIES} draws")
    return dict(_PARAMS[key])


def solve(ex, variant=0) -> Instance:
    """Variant ``variant`` of exercise ``ex``, computed now with labcore (see :class:`Instance`).

    Raises:
        ValueError: ``variant`` is not a non-negative integer.
    """
    variant = check_variant(variant)
    return _instance(ex, variant, params(ex, variant))
