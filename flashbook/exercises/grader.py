"""The Python grader of the exercises: the grading payload, verdicts, and :func:`check`.

Both graders grade through the same JSON payload (:func:`payload`), built at run time from an exercise's
definition: reference values, absolute tolerances, mistake values and feedback, and the message
templates (:data:`MESSAGES`). :func:`grade_payload` applies the rules in Python; ``grader.js`` (the
browser grader of the static book, see :mod:`flashbook.exercises.form`) applies the same rules in
JavaScript, and the tests run it under node on the same inputs and compare the verdicts.

Answer formats (what ``answer`` may be):

- a single-part exercise: one real number (int, float, numpy scalar) in the unit the statement asks for;
- a multi-part exercise: a dict keyed by the part keys (``exercise(k).keys()``), or a tuple/list in the
  order of the parts; a missing key or a ``None`` entry counts as "not answered yet";
- a multiple-choice part (exercise 9, ``"cause"``): the option letter, e.g. ``"A"``;
- exercise 6 also accepts a *function* ``D(O, dO)`` returning one number per row; it is checked against
  ``rowsum(dP * P)`` on random inputs (the static page grades the numeric example instead).

Verdict statuses: ``"correct"``, ``"not_attempted"`` (``None`` or an untouched stub), ``"incomplete"``
(some parts right, the rest not answered), ``"wrong"`` (with per-part feedback), ``"malformed"`` (a
friendly message: a string, a list of the wrong length, an array of the wrong shape, NaN), and
``"unavailable"`` (the labcore function the reference needs is not in this checkout). :func:`check` never
raises for any ``answer``.

Source: lecture §12 (the exercises); the grading rules are this book's.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .definitions import Exercise, ExerciseUnavailable, Part, exercise, fill

__all__ = ["MESSAGES", "payload", "PartVerdict", "Verdict", "grade_payload", "check"]

#: The message templates both graders fill with plain ``{name}`` substitution (no format specs).
MESSAGES = {
    "correct": "Correct!",
    "part_correct": "{label}: correct.",
    "part_empty": "{label}: not answered yet.",
    "part_malformed": "{label}: please enter a plain number (like 12.5 or 1.2e3), without units or commas.",
    "choice_malformed": "{label}: please pick one of the options ({letters}).",
    "part_mistake": "{label}: {feedback}",
    "part_high": "{label}: not right, your value is too high (tolerance {tol}).",
    "part_low": "{label}: not right, your value is too low (tolerance {tol}).",
    "choice_wrong": "{label}: not quite. {feedback}",
    "not_attempted": "Not attempted yet. Answer format: {hint}.",
    "incomplete": "So far so good; some parts are not answered yet.",
    "wrong": "Not yet. Feedback:",
    "malformed": "I could not read that answer.",
}


# ------------------------------------------------------------------------------------------------- payload
def _fmt_tol(t: float, unit: str) -> str:
    s = f"{t:.3g}"
    return f"±{s} {unit}".rstrip() if unit and unit != "x" else f"±{s}"


def _tol(p: Part, v: float) -> float:
    return max(p.atol, p.rtol * abs(v))


def payload(k) -> dict:
    """The JSON-ready grading payload of exercise ``k``: everything both graders need, computed now.

    Args:
        k: the exercise number, 1..len(EXERCISES).
    Returns:
        A dict with keys ``id``, ``label``, ``title`` (plain text), ``statement``, ``hint``, ``messages``,
        ``data``, and ``parts`` (each: ``key``, ``label``, ``unit``, ``kind``; numeric parts: ``ref``, ``tol``
        (absolute), ``tol_text``, ``mistakes`` (``id``, ``value``, ``tol``, ``feedback``); choice parts:
        ``answer`` and ``options`` (``letter``, ``text``, ``feedback``)). The statement, feedback and
        option texts are filled from the computed quantities (:func:`flashbook.exercises.fill`).
    Raises:
        ValueError: ``k`` is not an integer in 1..len(EXERCISES).
        ExerciseUnavailable: a labcore function the reference needs is not in this checkout.
    """
    ex = exercise(k)
    ref, ctx = ex.compute()
    parts = []
    for p in ex.parts:
        d = {"key": p.key, "label": p.label, "unit": p.unit, "kind": p.kind}
        if p.kind == "choice":
            d["answer"] = ref[p.key]
            d["options"] = [{"letter": a, "text": fill(t, ctx), "feedback": fill(f, ctx)} for a, t, f in p.options]
        else:
            r = float(ref[p.key])
            d["ref"] = r
            d["tol"] = _tol(p, r)
            d["tol_text"] = _fmt_tol(d["tol"], p.unit)
            d["mistakes"] = []
            for m in ex.mistakes:
                if m.part == p.key:
                    v = float(m.value(ref, ctx))
                    # the same relative precision as the reference's window, scaled to the mistake's size
                    tol = d["tol"] * abs(v) / abs(r) if r != 0 else d["tol"]
                    d["mistakes"].append({"id": m.id, "value": v, "tol": tol, "feedback": fill(m.feedback, ctx)})
        parts.append(d)
    return {"id": ex.number, "label": ex.label, "title": ex.plain_title, "statement": fill(ex.statement, ctx),
            "hint": ex.hint, "messages": MESSAGES, "parts": parts, "data": ex.data}


# ----------------------------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class PartVerdict:
    """Verdict on one part: status ``correct|empty|mistake|wrong|malformed``, the mistake id, the line shown."""

    key: str
    status: str
    mistake: str | None
    message: str


@dataclass(frozen=True)
class Verdict:
    """Verdict on one exercise.

    Attributes:
        exercise: the number. status: ``correct``, ``not_attempted``, ``incomplete``, ``wrong``,
        ``malformed`` or ``unavailable``. parts: per-part :class:`PartVerdict`. message: the text shown.
    """

    exercise: int
    status: str
    parts: tuple = ()
    message: str = ""

    @property
    def correct(self) -> bool:
        """True when every part is right."""
        return self.status == "correct"

    def mistakes(self) -> list[str]:
        """Ids of the known mistakes recognised in the answer."""
        return [p.mistake for p in self.parts if p.mistake]

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self):
        # check() has already printed the message; in the static book the check cell shows the form.
        if _static():
            from IPython.display import HTML, display

            from .form import static_form

            display(HTML(static_form(self.exercise)))


def _static() -> bool:
    from ..mode import static_mode

    return static_mode()


def _sub(template: str, **kw) -> str:
    # the same plain "{name}" substitution as the JavaScript grader (no format specs)
    out = template
    for k, v in kw.items():
        out = out.replace("{" + k + "}", str(v))
    return out


class _Bad:
    def __repr__(self):
        return "<unreadable>"


#: Marks a part value that could not be read (a non-finite number, a bool, an unknown type).
_BAD = _Bad()


def _grade_number(p: dict, x: float) -> PartVerdict:
    msg = MESSAGES
    if abs(x - p["ref"]) <= p["tol"]:
        return PartVerdict(p["key"], "correct", None, _sub(msg["part_correct"], label=p["label"]))
    for m in p["mistakes"]:
        if abs(x - m["value"]) <= m["tol"]:
            return PartVerdict(p["key"], "mistake", m["id"],
                               _sub(msg["part_mistake"], label=p["label"], feedback=m["feedback"]))
    key = "part_high" if x > p["ref"] else "part_low"
    return PartVerdict(p["key"], "wrong", None, _sub(msg[key], label=p["label"], tol=p["tol_text"]))


def _grade_choice(p: dict, v) -> PartVerdict:
    msg = MESSAGES
    letters = [o["letter"] for o in p["options"]]
    s = v.strip().upper() if isinstance(v, str) else None
    if s not in letters:
        return PartVerdict(p["key"], "malformed", None,
                           _sub(msg["choice_malformed"], label=p["label"], letters=", ".join(letters)))
    if s == p["answer"]:
        return PartVerdict(p["key"], "correct", None, _sub(msg["part_correct"], label=p["label"]))
    o = p["options"][letters.index(s)]
    return PartVerdict(p["key"], "mistake", "option_" + o["letter"],
                       _sub(msg["choice_wrong"], label=p["label"], feedback=o["feedback"]))


def grade_payload(pl: dict, values: dict) -> Verdict:
    """Grade parsed part values against a payload: the rules ``grader.js`` implements too.

    Args:
        pl: :func:`payload` output.
        values: ``{part key: float | str | None}``; ``None`` (or a missing key) = not answered, a string
            for a numeric part = unreadable; a choice part takes its option letter.
    Returns:
        :class:`Verdict`; never raises for values of these types.
    """
    msg = MESSAGES
    pvs = []
    for p in pl["parts"]:
        v = values.get(p["key"])
        if v is None:
            pvs.append(PartVerdict(p["key"], "empty", None, _sub(msg["part_empty"], label=p["label"])))
        elif p["kind"] == "choice":
            pvs.append(_grade_choice(p, v))
        elif v is _BAD or isinstance(v, str):
            pvs.append(PartVerdict(p["key"], "malformed", None, _sub(msg["part_malformed"], label=p["label"])))
        else:
            pvs.append(_grade_number(p, float(v)))
    return _combine(pl["id"], pl["title"], pl["hint"], pvs)


def _combine(number: int, title: str, hint: str, pvs: list) -> Verdict:
    msg = MESSAGES
    st = [p.status for p in pvs]
    if any(s in ("mistake", "wrong") for s in st):
        status, head = "wrong", msg["wrong"]
    elif any(s == "malformed" for s in st):
        status, head = "malformed", msg["malformed"]
    elif all(s == "empty" for s in st):
        return Verdict(number, "not_attempted", tuple(pvs), _sub(msg["not_attempted"], hint=hint))
    elif any(s == "empty" for s in st):
        status, head = "incomplete", msg["incomplete"]
    else:
        status, head = "correct", msg["correct"]
    lines = [f"Exercise {number} ({title}): {head}"] + ["  " + p.message for p in pvs]
    return Verdict(number, status, tuple(pvs), "\n".join(lines))


# -------------------------------------------------------------------------------- reading a Python answer
def _is_number(x) -> bool:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        return False
    return math.isfinite(float(x))


def _scalar(x):
    """A reader's value for one part -> float, a choice string, None (unanswered) or _BAD."""
    if x is None or x is Ellipsis:
        return None
    if isinstance(x, np.ndarray) and x.shape == ():
        x = x.item()
    if isinstance(x, str):
        return x
    return float(x) if _is_number(x) else _BAD


def _friendly(ex: Exercise, what: str) -> Verdict:
    msg = (f"Exercise {ex.number} ({ex.plain_title}): {MESSAGES['malformed']} {what}\n"
           f"  Answer format: {ex.hint}.")
    return Verdict(ex.number, "malformed", (), msg)


def _describe(x) -> str:
    if isinstance(x, np.ndarray):
        return f"a numpy array of shape {x.shape}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)} items"
    return f"a {type(x).__name__}"


def _parse(ex: Exercise, answer):
    """Map a Python answer onto ``{key: value}`` or return a malformed :class:`Verdict`."""
    keys = ex.keys()
    if answer is None:
        return {k: None for k in keys}
    if isinstance(answer, dict):
        unknown = [k for k in answer if k not in keys]
        if unknown:
            return _friendly(ex, f"Unknown key(s) {unknown}; the keys are {keys}.")
        return {k: _scalar(answer.get(k)) for k in keys}
    if isinstance(answer, np.ndarray) and answer.ndim > 0:
        if len(keys) > 1 and answer.shape == (len(keys),):
            return {k: _scalar(v) for k, v in zip(keys, answer)}
        return _friendly(ex, f"You gave {_describe(answer)}; expected "
                             + ("one number." if len(keys) == 1 else f"{len(keys)} numbers."))
    if isinstance(answer, (list, tuple)):
        if len(keys) > 1 and len(answer) == len(keys):
            return {k: _scalar(v) for k, v in zip(keys, answer)}
        return _friendly(ex, f"You gave {_describe(answer)}; expected "
                             + ("one number, not a list." if len(keys) == 1
                                else f"{len(keys)} values in the order {keys}, or a dict."))
    if len(keys) > 1:
        return _friendly(ex, f"You gave {_describe(answer)}; this exercise has {len(keys)} parts {keys}.")
    v = _scalar(answer)
    if isinstance(v, str) and ex.parts[0].kind == "number":
        return _friendly(ex, f"You gave the string {answer!r}; write the number itself, without quotes.")
    return {keys[0]: v}


def check(k, answer=None, *, quiet: bool = False) -> Verdict:
    """Grade ``answer`` to exercise ``k`` and print the verdict (unless ``quiet``); never raises.

    Args:
        k: exercise number 1..len(EXERCISES) (anything else gives a ``malformed`` verdict naming the range).
        answer: see the module docstring for the formats; ``None`` (the stub) means not attempted.
        quiet: do not print the message.
    Returns:
        :class:`Verdict`. In the static book (``FLASHBOOK_STATIC=1``) nothing is printed for the stub and
        the returned verdict displays the self-grading HTML form instead.
    Source: lecture §12 (the exercises and their answers).
    """
    try:
        ex = exercise(k)
    except ValueError as exc:
        return _emit(Verdict(0, "malformed", (), f"check(k, answer): {exc}"), quiet)
    try:
        if ex.function_check is not None and callable(answer):
            pv = PartVerdict(ex.keys()[0], *ex.function_check(answer))
            return _emit(_combine(ex.number, ex.plain_title, ex.hint, [pv]), quiet)
        if callable(answer):
            return _emit(_friendly(ex, "You gave a function; this exercise wants numbers."), quiet)
        parsed = _parse(ex, answer)
        if isinstance(parsed, Verdict):
            return _emit(parsed, quiet)
        if all(v is None for v in parsed.values()):
            v = Verdict(ex.number, "not_attempted", (), _sub(MESSAGES["not_attempted"], hint=ex.hint))
            return _emit(v, quiet or _static())
        return _emit(grade_payload(payload(k), parsed), quiet)
    except ExerciseUnavailable as exc:
        return _emit(Verdict(ex.number, "unavailable", (),
                             f"Exercise {ex.number}: cannot grade yet ({exc})."), quiet)


def _emit(v: Verdict, quiet: bool) -> Verdict:
    if not quiet:
        print(v.message)
    return v
