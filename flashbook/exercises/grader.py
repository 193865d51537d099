"""The Python grader of the exercises: the grading payload, verdicts, and grading a Python answer.

Both graders grade through the same JSON payload (:func:`payload`), built at run time from an exercise's
definition and one variant of it: reference values, absolute tolerances, mistake values and feedback, and
the message templates (:data:`MESSAGES`). :func:`grade_payload` applies the rules in Python; ``grader.js``
(the browser grader of the static book, see :mod:`flashbook.exercises.form`) applies the same rules in
JavaScript, and the tests run it under node on the same inputs and compare the verdicts. The student
edition's payload (:mod:`flashbook.exercises.keys`) holds salted hashes of the rounded answers instead of
the values; :func:`grade_payload` grades that form too.

Answer formats (what ``answer`` may be, see :func:`grade`):

- a single-part exercise: one real number (int, float, numpy scalar) in the unit the statement asks for;
- a multi-part exercise: a dict keyed by the part keys (``exercise(k).keys()``), or a tuple/list in the
  order of the parts; a missing key or a ``None`` entry counts as "not answered yet";
- a multiple-choice part (exercise 9, ``"cause"``): the option letter, e.g. ``"A"``;
- exercise 6 also accepts a *function* ``D(O, dO)`` returning one number per row; it is checked against
  ``rowsum(dP * P)`` on random inputs (the static page grades the numeric example instead).

Verdict statuses: ``"correct"``, ``"not_attempted"`` (``None`` or an untouched stub), ``"incomplete"``
(some parts right, the rest not answered), ``"wrong"`` (with per-part feedback), ``"malformed"`` (a
friendly message: a string, a list of the wrong length, an array of the wrong shape, NaN).

Source: lecture §12 (the exercises); the grading rules are this book's.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from .definitions import Exercise, exercise
from .rounding import canonical, digest, rounding_text, spec
from .variants import check_variant, fill, solve

__all__ = ["MESSAGES", "payload", "PartVerdict", "Verdict", "grade_payload", "grade"]

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
    "part_wrong": "{label}: not right (checked at {rounding}).",
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


def payload(k, variant=0) -> dict:
    """The JSON-ready grading payload of exercise ``k``, variant ``variant``: everything both graders need.

    Args:
        k: the exercise number, 1..len(EXERCISES).
        variant: a non-negative integer (0 = the lecture's numbers).
    Returns:
        A dict with keys ``id``, ``label``, ``title`` (plain text), ``variant``, ``statement``, ``example``,
        ``hint``, ``messages``, ``data``, and ``parts`` (each: ``key``, ``label``, ``unit``, ``kind``; numeric
        parts: ``rounding`` (``["decimals", k]`` or ``["digits", k]``), ``rounding_text``, ``ref``, ``tol``
        (absolute), ``tol_text``, ``mistakes`` (``id``, ``value``, ``tol``, ``feedback``); choice parts:
        ``answer`` and ``options`` (``letter``, ``text``, ``feedback``)). The texts are filled from the
        variant's parameters and computed quantities (:func:`flashbook.exercises.fill`); the windows are
        :func:`flashbook.exercises.rounding.windows`.
    Raises:
        ValueError: ``k`` or ``variant`` out of range.
    """
    ex = exercise(k)
    inst = solve(ex, variant)
    ctx = inst.ctx
    parts = []
    for p in ex.parts:
        d = {"key": p.key, "label": inst.labels[p.key], "unit": p.unit, "kind": p.kind}
        if p.kind == "choice":
            d["answer"] = inst.ref[p.key]
            d["options"] = [{"letter": a, "text": fill(t, ctx), "feedback": fill(f, ctx)} for a, t, f in p.options]
        else:
            w = inst.windows[p.key]
            d.update(rounding=p.rounding, rounding_text=rounding_text(p), ref=w["ref"], tol=w["tol"],
                     tol_text=_fmt_tol(w["tol"], p.unit),
                     mistakes=[{"id": m.id, "value": v, "tol": t, "feedback": fill(m.feedback, ctx)}
                               for m, v, t in w["mistakes"]])
        parts.append(d)
    return {"id": ex.number, "label": ex.label, "title": ex.plain_title, "variant": inst.variant,
            "statement": inst.statement, "example": inst.example, "hint": ex.hint, "messages": MESSAGES,
            "parts": parts, "data": dict(inst.params) if ex.example else {}}


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
        exercise: the number.
        status: ``correct``, ``not_attempted``, ``incomplete``, ``wrong`` or ``malformed``.
        parts: per-part :class:`PartVerdict`.
        message: the text shown.
        html: what a notebook displays for it (the static book's self-grading form), "" in a live kernel.
    """

    exercise: int
    status: str
    parts: tuple = ()
    message: str = ""
    html: str = field(default="", repr=False, compare=False)

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
        # the message is printed by check(); in the static book the check cell shows the form
        if self.html:
            from IPython.display import HTML, display

            display(HTML(self.html))


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
    if "keys" in p:                     # the student edition: salted hashes of the rounded answers
        h = digest(p["salt"], canonical(spec(p["rounding"]), x))
        if h in p["keys"]:
            return PartVerdict(p["key"], "correct", None, _sub(msg["part_correct"], label=p["label"]))
        for m in p["mistakes"]:
            if h in m["keys"]:
                return PartVerdict(p["key"], "mistake", m["id"],
                                   _sub(msg["part_mistake"], label=p["label"], feedback=m["feedback"]))
        return PartVerdict(p["key"], "wrong", None,
                           _sub(msg["part_wrong"], label=p["label"], rounding=p["rounding_text"]))
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
    if "keys" in p:
        h = digest(p["salt"], s)
        right = h in p["keys"]
        feedback = next((m["feedback"] for m in p["mistakes"] if h in m["keys"]), "")
    else:
        right = s == p["answer"]
        feedback = p["options"][letters.index(s)]["feedback"]
    if right:
        return PartVerdict(p["key"], "correct", None, _sub(msg["part_correct"], label=p["label"]))
    return PartVerdict(p["key"], "mistake", "option_" + s, _sub(msg["choice_wrong"], label=p["label"], feedback=feedback))


def grade_payload(pl: dict, values: dict) -> Verdict:
    """Grade parsed part values against a payload: the rules ``grader.js`` implements too.

    Args:
        pl: :func:`payload` output, or the student edition's (:func:`flashbook.exercises.hashed`).
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
    return _combine(pl["id"], _name(pl["title"], pl.get("variant", 0)), pl["hint"], pvs)


def _name(title: str, variant: int) -> str:
    """``"title"`` (variant 0) or ``"title, variant s"``: what the verdict's first line names."""
    return f"{title}, variant {variant}" if variant else title


def _combine(number: int, name: str, hint: str, pvs: list) -> Verdict:
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
    lines = [f"Exercise {number} ({name}): {head}"] + ["  " + p.message for p in pvs]
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


def grade(k, answer=None, *, variant=0) -> Verdict:
    """Grade ``answer`` to exercise ``k``, variant ``variant``; never raises, prints nothing.

    Args:
        k: exercise number 1..len(EXERCISES) (anything else gives a ``malformed`` verdict naming the range).
        answer: see the module docstring for the formats; ``None`` (the stub) means not attempted.
        variant: a non-negative integer (0 = the lecture's numbers; anything else: ``malformed``).
    Returns:
        :class:`Verdict`.
    Source: lecture §12 (the exercises and their answers).
    """
    try:
        ex = exercise(k)
    except ValueError as exc:
        return Verdict(0, "malformed", (), f"check(k, answer): {exc}")
    try:
        variant = check_variant(variant)
    except ValueError as exc:
        return Verdict(ex.number, "malformed", (), f"check({ex.number}, answer, variant=s): {exc}")
    name = _name(ex.plain_title, variant)
    if ex.function_check is not None and callable(answer):
        pv = PartVerdict(ex.keys()[0], *ex.function_check(answer))
        return _combine(ex.number, name, ex.hint, [pv])
    if callable(answer):
        return _friendly(ex, "You gave a function; this exercise wants numbers.")
    parsed = _parse(ex, answer)
    if isinstance(parsed, Verdict):
        return parsed
    if all(v is None for v in parsed.values()):
        return Verdict(ex.number, "not_attempted", (), _sub(MESSAGES["not_attempted"], hint=ex.hint))
    return grade_payload(payload(k, variant), parsed)
