"""The exercises of lecture §12 and the book's own on §4b, §5b and §6b, self-graded in a live kernel and in the
static HTML book.

One definition per exercise drives everything, over parameters (variant 0 = the lecture's numbers). The
package has one module per job, imported one way (each module imports only those above it):

- :mod:`~flashbook.exercises.rounding`: the rounding a statement asks for, the windows derived from it, the
  keys of the student edition (a leaf: standard library only).
- :mod:`~flashbook.exercises.variants`: drawing and solving a variant (parameters, reference, windows, texts).
- :mod:`~flashbook.exercises.model`: the records :class:`Part`, :class:`Mistake`, :class:`Exercise`.
- :mod:`~flashbook.exercises.feedback`, :mod:`~flashbook.exercises.defs_attention` (exercises 1-6),
  :mod:`~flashbook.exercises.defs_hardware` (7-13): the definitions, computed from ``labcore`` at run time.
- :mod:`~flashbook.exercises.definitions`: the registry (:data:`EXERCISES`, :func:`exercise`, :func:`reference`).
- :mod:`~flashbook.exercises.grader`: the grading rules as data (:data:`GRADING_RULES`), the grading payload
  (:func:`payload`), the Python grader (:func:`grade_payload`, :func:`grade`), verdicts.
- :mod:`~flashbook.exercises.keys`: the student edition's hashed payload (:func:`hashed`, ``FLASHBOOK_EDITION``).
- :mod:`~flashbook.exercises.form`: :func:`static_form` (book build, ``FLASHBOOK_STATIC=1``), a small
  self-contained HTML form with precomputed variants, graded in the browser by ``grader.js``
  (:data:`GRADER_JS`), which applies the rules the payload carries; the tests run it under node.
- :mod:`~flashbook.exercises.cell`: what a notebook cell calls: :func:`check` (``check(k, answer,
  variant=s)`` prints a verdict, never raises), :func:`show_exercise` (a variant's statement) and
  :func:`checkpoint` (the exercises a section ends with, :data:`CHECKPOINTS`).
- :mod:`~flashbook.exercises.sheets` (``python -m flashbook.exercises.sheets``): one Markdown sheet per
  student and the instructor's answer key; :mod:`~flashbook.exercises.student`: the student edition's build.

Sources: lecture §12 (exercises and answers); the numbers come from the labcore modules of each section.
"""
from __future__ import annotations

from . import definitions, form, grader, keys, variants  # noqa: F401  (the submodules, as flashbook.exercises.<name>)
from .cell import CHECKPOINTS, check, checkpoint, checkpoint_text, exercise_text, show_exercise
from .definitions import D_EXAMPLE, EXERCISES, Exercise, Mistake, Part, exercise, fill, reference
from .form import form_payload, solution_output, static_form
from .grader import GRADING_RULES, MESSAGES, PartVerdict, Verdict, grade, grade_payload, payload
from .keys import hashed

__all__ = [
    "Part", "Mistake", "Exercise", "PartVerdict", "Verdict", "EXERCISES", "exercise", "check", "grade",
    "reference", "fill", "payload", "grade_payload", "static_form", "form_payload", "solution_output",
    "GRADER_JS", "D_EXAMPLE", "MESSAGES", "GRADING_RULES", "show_exercise", "exercise_text", "hashed", "CHECKPOINTS",
    "checkpoint", "checkpoint_text",
]

#: The browser grader (the package file ``grader.js``): JavaScript that applies the grading rules each payload
#: carries (:data:`GRADING_RULES`).
GRADER_JS = form.GRADER_JS
