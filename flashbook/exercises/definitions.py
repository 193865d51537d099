"""The exercises of lecture §12 (and those on §4b, §5b and §6b) in order: the registry both graders and the book read.

The definitions live in :mod:`flashbook.exercises.defs_attention` (1-6),
:mod:`flashbook.exercises.defs_hardware` (7-13), :mod:`flashbook.exercises.defs_scheduling` (14-15, 18) and
:mod:`flashbook.exercises.defs_decode_scheduling` (16-17, 19-20), written with the records of
:mod:`flashbook.exercises.model`.
:data:`EXERCISES` holds them in order; :func:`exercise` looks one up by number, :func:`reference` computes the
reference answers of a variant.

The ``title`` is the one source of each exercise's title: the ``{exercise}`` directive of
``book/12_exercises.ipynb`` types the same text (a test compares them), and the graders' messages use
:attr:`~flashbook.exercises.model.Exercise.plain_title` (the title with its ``$...$`` math delimiters removed).
Texts type no preset value: a statement, a mistake's feedback, a label and a choice option hold ``{name}``
placeholders that :func:`fill` replaces with the variant's parameters and computed quantities.

Sources: lecture §12 (exercises and answers); the numbers come from the labcore modules of each section.
"""
from __future__ import annotations

import numbers

from . import defs_attention, defs_decode_scheduling, defs_hardware, defs_scheduling
from .defs_attention import D_EXAMPLE
from .model import Exercise, Mistake, Part
from .variants import fill, solve

__all__ = ["Part", "Mistake", "Exercise", "EXERCISES", "exercise", "reference", "number_range", "D_EXAMPLE", "fill"]

#: The exercise definitions, in order of their numbers (1, 2, ...; a topic's module may hold later numbers too).
EXERCISES: tuple = tuple(sorted(defs_attention.EXERCISES + defs_hardware.EXERCISES + defs_scheduling.EXERCISES
                                + defs_decode_scheduling.EXERCISES, key=lambda ex: ex.number))

_BY_NUMBER = {ex.number: ex for ex in EXERCISES}
if [ex.number for ex in EXERCISES] != sorted(_BY_NUMBER) or EXERCISES[0].number != 1:
    raise ValueError("exercises defined out of order")


def number_range() -> str:
    """The exercise numbers as text: ``"1..17"``, or ``"1..13, 16..17"`` while a number is missing."""
    runs, nums = [], sorted(_BY_NUMBER)
    for k in nums:
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return ", ".join(f"{a}..{b}" for a, b in runs)


def exercise(k) -> Exercise:
    """The definition of exercise ``k``.

    Args:
        k: the exercise number, an integer 1..len(EXERCISES) (not a bool, string or float).
    Raises:
        ValueError: ``k`` is not an integer in 1..len(EXERCISES).
    Source: lecture §12.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) not in _BY_NUMBER:
        raise ValueError(f"exercise number must be an integer {number_range()}, got {k!r}")
    return _BY_NUMBER[int(k)]


def reference(k, variant=0) -> dict:
    """Reference answers of exercise ``k``, variant ``variant``, by part key, computed now with labcore.

    Args:
        k: the exercise number, 1..len(EXERCISES).
        variant: a non-negative integer (0 = the lecture's numbers).
    Returns:
        ``{part key: float}`` in the parts' units (a choice part: its option letter).
    Raises:
        ValueError: ``k`` or ``variant`` out of range.
    """
    return dict(solve(exercise(k), variant).ref)
