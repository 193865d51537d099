"""The exercise model: parts, known mistakes, exercises over parameters, and the rounding rules both graders use.

An :class:`Exercise` is defined over parameters: ``params`` are the lecture's numbers (variant 0), and
``ranges`` / ``draw`` / ``valid`` say which other parameters keep the statement meaningful (the variants, see
:mod:`flashbook.exercises.variants`). ``derive(params) -> (ref, ctx)`` gives the reference answers and the
intermediate quantities the statement, the known mistakes and their feedback are made of, so the statement,
the answer, the tolerances and every known mistake derive from one definition for every variant.

Each numeric :class:`Part` says how the statement asks the reader to round (``decimals`` or significant
``digits``); :mod:`flashbook.exercises.rounding` derives the accepted windows from it.

Source: this book's presentation layer (lecture §12 for the exercises themselves).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .variants import fill, solve

__all__ = ["Part", "Mistake", "Exercise", "fill"]


# ---------------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Part:
    """One answer field.

    Args:
        key: dict key of this part in a multi-part answer (e.g. ``"P_GB"``).
        label: what the reader sees beside the field (may hold ``{name}`` placeholders, filled per variant).
        unit: display unit of the answer (``"MB"`` = 10^6 bytes, ``"%"``, ...); "" for a pure number.
        rtol, atol: the precision the question asks for: ``tol = max(atol, rtol * |ref|)``, widened by
            :func:`flashbook.exercises.rounding.windows` to accept the reference rounded as asked.
        decimals, digits: the rounding the statement asks for (a fixed number of decimals, or of significant
            digits); exactly one is set for a numeric part.
        options: for a multiple-choice part, ``((letter, text, feedback), ...)``; the feedback of the right
            option is ignored. ``None`` for a numeric part.
    Raises:
        ValueError: a numeric part without exactly one of ``decimals`` / ``digits``, or without a tolerance.
    """

    key: str
    label: str
    unit: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    decimals: int | None = None
    digits: int | None = None
    options: tuple | None = None

    def __post_init__(self):
        if self.options is None:
            if (self.decimals is None) == (self.digits is None):
                raise ValueError(f"part {self.key!r}: give exactly one of decimals= or digits=")
            if self.digits is not None and self.digits < 1 or self.decimals is not None and self.decimals < 0:
                raise ValueError(f"part {self.key!r}: decimals >= 0, digits >= 1")
            if self.rtol <= 0 and self.atol <= 0:
                raise ValueError(f"part {self.key!r}: give rtol or atol")

    @property
    def kind(self) -> str:
        """``"choice"`` for a multiple-choice part, ``"number"`` otherwise."""
        return "choice" if self.options else "number"

    @property
    def rounding(self) -> list:
        """``["decimals", k]`` or ``["digits", k]``: the rounding the statement asks for, as JSON."""
        return ["decimals", self.decimals] if self.decimals is not None else ["digits", self.digits]


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer to one part.

    Args:
        id: stable identifier (``"elements_not_bytes"``).
        part: key of the part it applies to.
        value: ``f(ref, ctx) -> float``: the value this mistake produces, from the reference answers
            ``ref`` (dict by part key) and the reference's intermediate quantities ``ctx``.
        feedback: what to tell a reader who made it (never the answer itself); ``{name}`` placeholders
            are filled from ``ctx`` by :func:`fill`.
    """

    id: str
    part: str
    value: Callable[[dict, dict], float]
    feedback: str


@dataclass(frozen=True)
class Exercise:
    """One exercise of lecture §12 (1-12) or of the book's own (13-20, on §4b, §5b, §6b), over parameters.

    Args:
        number: 1..len(EXERCISES).
        label: stable sphinx-exercise label (``"ex-online-softmax"``).
        title: the title exactly as the book's ``{exercise}`` directive shows it (MyST; may hold ``$...$``).
        template: the question in one or two sentences with ``{name}`` placeholders (:meth:`statement` fills it).
        parts: the answer fields (:class:`Part`).
        derive: ``(params) -> (ref, ctx)``: reference answers by part key (in the parts' units) and
            intermediate quantities, computed with labcore at run time (:meth:`compute` calls it).
        mistakes: known mistakes (:class:`Mistake`), at least two per numeric exercise.
        hint: the answer format, shown by "not attempted" and malformed-input messages.
        params: the lecture's parameters (variant 0).
        ranges: ``{name: allowed values}`` for the parameters a variant draws uniformly.
        draw: optional ``(rng: random.Random) -> dict`` drawing the parameters ``ranges`` cannot (arrays).
        valid: ``(params, ref, ctx) -> bool``: the relations that keep the statement meaningful (fits in SRAM,
            a second wave, the named unit still bounds the tile, ...); variant 0 satisfies them too.
        example: optional text (placeholders filled per variant) shown under the statement: a worked input.
        function_check: optional ``fn -> (status, mistake_id, message)`` grading a reader's function for
            the exercise's single part (exercise 6); status is ``correct``, ``wrong`` or ``malformed``.
        source: where the exercise and its answer come from.
    """

    number: int
    label: str
    title: str
    template: str
    parts: tuple
    derive: Callable[[dict], tuple]
    mistakes: tuple
    hint: str
    params: dict
    ranges: dict = field(default_factory=dict)
    draw: Callable | None = None
    valid: Callable[[dict, dict, dict], bool] = lambda p, r, c: True
    example: str = ""
    function_check: Callable | None = None
    source: str = "lecture §12"

    @property
    def plain_title(self) -> str:
        """The title as plain text (``$D$`` -> ``D``), for the graders' messages."""
        return self.title.replace("$", "")

    @property
    def data(self) -> dict:
        """Variant 0's worked input (exercise 6's example), ``{}`` if the exercise has none."""
        return dict(self.params) if self.example else {}

    def keys(self) -> list[str]:
        """The part keys in order (the order of a tuple answer)."""
        return [p.key for p in self.parts]

    def part(self, key: str) -> Part:
        """The :class:`Part` with this key; KeyError if there is none."""
        for p in self.parts:
            if p.key == key:
                return p
        raise KeyError(key)

    def compute(self, params: dict | None = None) -> tuple:
        """``(ref, ctx)`` for ``params`` (default: variant 0's), computed now; ``ctx`` includes the parameters."""
        p = dict(self.params if params is None else params)
        ref, ctx = self.derive(p)
        return ref, {**p, **ctx}

    def statement(self, variant: int = 0) -> str:
        """The question of ``variant`` with its numbers (variant 0: the lecture's).

        Raises:
            ValueError: ``variant`` is not a non-negative integer.
        """
        return solve(self, variant).statement
