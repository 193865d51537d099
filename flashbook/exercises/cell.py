"""What a notebook cell calls: :func:`check` (grade and print) and :func:`show_exercise` (a variant's statement).

In a live kernel :func:`check` prints the verdict of :func:`flashbook.exercises.grader.grade`. In the static
book (``FLASHBOOK_STATIC=1``) the stub prints nothing and the returned verdict displays the self-grading
form (:func:`flashbook.exercises.form.static_form`) instead, so the check cell of each exercise becomes its
form in the HTML.

Source: lecture §12 (the exercises); this book's presentation layer.
"""
from __future__ import annotations

import dataclasses

from ..mode import static_mode
from .definitions import exercise
from .form import static_form
from .grader import Verdict, grade
from .rounding import rounding_text
from .variants import solve

__all__ = ["check", "show_exercise", "exercise_text"]


def check(k, answer=None, *, variant=0, quiet: bool = False) -> Verdict:
    """Grade ``answer`` to exercise ``k`` (variant ``variant``) and print the verdict (unless ``quiet``); never raises.

    Args:
        k: exercise number 1..len(EXERCISES) (anything else gives a ``malformed`` verdict naming the range).
        answer: see :mod:`flashbook.exercises.grader` for the formats; ``None`` (the stub) means not attempted.
        variant: 0 (the lecture's numbers, the default) or the seed of another variant
            (:func:`show_exercise` prints its statement).
        quiet: do not print the message.
    Returns:
        :class:`~flashbook.exercises.grader.Verdict`. In the static book (``FLASHBOOK_STATIC=1``) nothing is
        printed for the stub and the returned verdict displays the self-grading HTML form instead.
    Source: lecture §12 (the exercises and their answers).
    """
    v = grade(k, answer, variant=variant)
    if static_mode() and v.exercise:
        if v.status == "not_attempted":
            quiet = True
        v = dataclasses.replace(v, html=static_form(v.exercise))
    if not quiet:
        print(v.message)
    return v


def exercise_text(k, variant=0) -> str:
    """The plain-text statement of exercise ``k``, variant ``variant``: title, statement, worked example,
    the parts with their units and rounding, and the answer format.

    Raises:
        ValueError: ``k`` or ``variant`` out of range.
    """
    ex = exercise(k)
    inst = solve(ex, variant)
    lines = [f"Exercise {ex.number} ({ex.plain_title})" + (f", variant {inst.variant}" if inst.variant else "") + ":",
             inst.statement]
    if inst.example:
        lines.append(inst.example)
    for p in ex.parts:
        if p.kind == "choice":
            opts = "; ".join(f"{a}: {t.format_map(inst.ctx)}" for a, t, _ in p.options)
            lines.append(f"  {p.key} ({inst.labels[p.key]}): one of {opts}")
        else:
            unit = f" in {p.unit}" if p.unit and p.unit != "x" else ""
            lines.append(f"  {p.key} ({inst.labels[p.key]}){unit}, to {rounding_text(p)}")
    lines.append(f"Answer format: {ex.hint}" + (f"; check({ex.number}, answer, variant={inst.variant})"
                                               if inst.variant else ""))
    return "\n".join(lines)


def show_exercise(k, variant=0) -> None:
    """Print :func:`exercise_text` (the statement of a variant with its numbers).

    Raises:
        ValueError: ``k`` or ``variant`` out of range.
    """
    print(exercise_text(k, variant))
