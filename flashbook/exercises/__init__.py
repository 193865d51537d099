"""The exercises of lecture §12 (and one on §4b), self-graded in a live kernel and in the static HTML book.

One definition per exercise drives everything; the package has one module per job:

- :mod:`flashbook.exercises.definitions`: each exercise's title, statement, answer parts with units and
  tolerances, the function computing its reference answer from ``labcore`` at run time, and its known
  mistakes with feedback (:data:`EXERCISES`, :func:`exercise`, :func:`reference`).
- :mod:`flashbook.exercises.grader`: the grading payload (:func:`payload`), the Python grader
  (:func:`grade_payload`) and :func:`check` (live kernel: ``check(k, answer)`` prints a verdict and returns a
  :class:`Verdict`; never raises).
- :mod:`flashbook.exercises.form`: :func:`static_form` (book build, ``FLASHBOOK_STATIC=1``), a small
  self-contained HTML form graded in the browser by ``grader.js`` (:data:`GRADER_JS`), which applies the
  same rules to the same payload; the tests run it under node and compare verdicts with the Python grader.

Sources: lecture §12 (exercises and answers); the numbers come from the labcore modules of each section.
Importing this package imports only numpy, the standard library and labcore's leaf modules checks and units.
"""
from __future__ import annotations

from . import definitions, form, grader
from .definitions import Exercise, ExerciseUnavailable, Mistake, Part, exercise, fill, reference
from .form import solution_output, static_form
from .grader import PartVerdict, Verdict, check, grade_payload, payload

__all__ = [
    "Part", "Mistake", "Exercise", "ExerciseUnavailable", "PartVerdict", "Verdict", "EXERCISES", "exercise",
    "check", "reference", "fill", "payload", "grade_payload", "static_form", "solution_output", "GRADER_JS", "D_EXAMPLE", "MESSAGES",
]

#: The exercise definitions, in order (``EXERCISES[k - 1].number == k``).
EXERCISES = definitions.EXERCISES

#: The small numeric example of exercise 6 (shown in the statement and the static form).
D_EXAMPLE = definitions.D_EXAMPLE

#: The message templates both graders fill in (plain ``{name}`` substitution).
MESSAGES = grader.MESSAGES

#: The browser grader (the package file ``grader.js``): the rules of
#: :func:`flashbook.exercises.grade_payload` in JavaScript.
GRADER_JS = form.GRADER_JS
