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
from .keys import student_edition
from .rounding import rounding_text
from .variants import solve

__all__ = ["check", "show_exercise", "exercise_text", "CHECKPOINTS", "checkpoint", "checkpoint_text"]


def check(k, answer=None, *, variant=0, quiet: bool = False) -> Verdict:
    """Grade ``answer`` to exercise ``k`` (variant ``variant``) and print the verdict (unless ``quiet``); never raises.

    Args:
        k: exercise number 1..len(EXERCISES) (anything else gives a ``malformed`` verdict naming the range).
        answer: see ``flashbook.exercises.grader`` for the formats; ``None`` (the stub) means not attempted.
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


#: The exercises each section ends with ("checkpoints"): the same definitions and graders as the exercises
#: page, shown where the section that teaches them ends. Keys are the pages' file names.
CHECKPOINTS: dict[str, tuple[int, ...]] = {
    "01_bottlenecks": (10,), "02_io_awareness": (2,), "03_online_softmax": (1, 7), "04_flash_forward": (3,),
    "04b_what_limits": (13,), "05_flash_backward": (4, 5, 6), "06_flash_decoding": (8, 9), "07_fusion": (11,),
    "08_megakernel": (12,), "06b_scheduling_decode": (16, 17),
}


class _Statement:
    """One exercise's statement as Markdown (rendered by myst-nb in the book, by JupyterLab live)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self):
        return self.text

    def __repr__(self):
        return self.text


def checkpoint_text(k) -> str:
    """Markdown for exercise ``k`` at the end of its section: its title and statement (variant 0, from the one
    definition), the answer format, and where to check it and find its worked solution.

    Raises:
        ValueError: ``k`` out of range.
    """
    ex = exercise(k)
    inst = solve(ex, 0)
    # the static book renders this Markdown as MyST (a cross-reference to the exercise's label); JupyterLab as
    # plain Markdown (a link to the exercises notebook)
    if static_mode():
        where = f"{{ref}}`exercise {ex.number} <{ex.label}>`"
    else:
        where = f"[exercise {ex.number}](12_exercises.ipynb)"
    lines = [f"**Exercise {ex.number} ({ex.title}).** {inst.statement}"]
    if inst.example:
        lines.append(inst.example)
    lines.append(f"Answer format: {ex.hint}. " + (
        # the class lets print hide the sentence with the form's fields (_static/flashbook.css)
        f'<span class="fb-form-pointer">Check it in the form below, or live with `check({ex.number}, answer)` '
        "(`from flashbook.exercises import check`).</span>" if static_mode()
        else f"Check it in a new cell: `from flashbook.exercises import check`, then `check({ex.number}, answer)` "
        "with your answer in place of `answer`.")
        + (f" On the exercises page: {where}." if student_edition()
           else f" Worked solution: {where} on the exercises page."))
    return "\n\n".join(lines)


def checkpoint(page: str) -> None:
    """Display the exercises that section ``page`` ends with (:data:`CHECKPOINTS`): each statement, and in the
    static book its self-grading form (the same form as on the exercises page).

    Args:
        page: a key of :data:`CHECKPOINTS`, the section's file name such as ``"02_io_awareness"``.
    Raises:
        ValueError: ``page`` has no checkpoint (the message lists those that do).
    """
    from IPython.display import HTML, display

    if page not in CHECKPOINTS:
        raise ValueError(f"no checkpoint for {page!r}; the sections with one: {', '.join(CHECKPOINTS)}")
    for k in CHECKPOINTS[page]:
        display(_Statement(checkpoint_text(k)))
        if static_mode():
            display(HTML(static_form(k)))
