"""The Python grader of the exercises: the grading payload, verdicts, and grading a Python answer.

Both graders grade through the same JSON payload (:func:`payload`), built at run time from an exercise's
definition and one variant of it: reference values, absolute tolerances, mistake values and feedback, the
message templates (:data:`MESSAGES`) and the grading rules (:data:`GRADING_RULES`). The rules exist once, as
data: :func:`grade_payload` applies them in Python, and ``grader.js`` (the browser grader of the static book, see
:mod:`flashbook.exercises.form`) only knows how to apply the rules its payload carries; the tests run it under
node on the same inputs and compare the verdicts. The student edition's payload
(:mod:`flashbook.exercises.keys`) holds salted hashes of the rounded answers instead of the values;
:func:`grade_payload` grades that form too.

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

__all__ = ["MESSAGES", "GRADING_RULES", "payload", "PartVerdict", "Verdict", "grade_payload", "grade"]

#: The message templates both graders fill with plain ``{name}`` substitution (no format specs). A part's
#: message may name ``{label}``, ``{feedback}`` (the matched mistake's or option's), ``{tol}`` (the tolerance as
#: text), ``{rounding}`` (the rounding the statement asks for) and ``{letters}`` (a choice's options).
MESSAGES = {
    "headline": "Exercise {number} ({name}): {head}",
    "variant_name": "{title}, variant {variant}",
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

#: The grading rules, as data: the one rule set of both graders. :func:`grade_payload` applies them in Python;
#: every payload carries them (``rules``), and ``grader.js`` in the static form applies what it is given.
#:
#: - ``"unread"``: ``[part status, message]`` for a part left empty (``"empty"``) or one whose answer cannot be
#:   read as a number (``"number"``) or as one of the options (``"choice"``).
#: - ``"number"``, ``"choice"``: ``[test, part status, message]`` in order; the first test that holds for the
#:   answer decides. Tests: ``"answer"``, inside the reference's window ``|x - ref| <= tol`` (a choice: the right
#:   letter; the student edition: the rounded answer's key among the reference's keys); ``"mistake"``, inside a
#:   known mistake's window or among its keys (the verdict names that mistake and shows its feedback; a choice:
#:   any other letter, with its option's feedback); ``"above"`` and ``"below"``, ``x > ref`` and ``x <= ref``
#:   (where the payload holds the reference); ``"always"``.
#: - ``"choice_mistake"``: the mistake id of a wrong option (``{letter}`` filled).
#: - ``"exercise"``: in order, the first entry that holds decides the exercise's status: ``"when"`` ``"any"`` (a
#:   part has one of the statuses ``"parts"``), ``"all"`` (every part has) or ``"always"``. With ``"head"`` the
#:   message is the headline (``MESSAGES["headline"]``) then one line per part; with ``"message"``, that template
#:   alone (filled with the exercise's ``{hint}``).
GRADING_RULES = {
    "unread": {"empty": ["empty", "part_empty"], "number": ["malformed", "part_malformed"],
               "choice": ["malformed", "choice_malformed"]},
    "number": [["answer", "correct", "part_correct"], ["mistake", "mistake", "part_mistake"],
               ["above", "wrong", "part_high"], ["below", "wrong", "part_low"], ["always", "wrong", "part_wrong"]],
    "choice": [["answer", "correct", "part_correct"], ["mistake", "mistake", "choice_wrong"]],
    "choice_mistake": "option_{letter}",
    "exercise": [{"when": "any", "parts": ["mistake", "wrong"], "status": "wrong", "head": "wrong"},
                 {"when": "any", "parts": ["malformed"], "status": "malformed", "head": "malformed"},
                 {"when": "all", "parts": ["empty"], "status": "not_attempted", "message": "not_attempted"},
                 {"when": "any", "parts": ["empty"], "status": "incomplete", "head": "incomplete"},
                 {"when": "always", "status": "correct", "head": "correct"}],
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
        ``hint``, ``messages``, ``rules`` (:data:`GRADING_RULES`), ``data``, and ``parts`` (each: ``key``,
        ``label``, ``unit``, ``kind``; numeric parts: ``rounding`` (``["decimals", k]`` or ``["digits", k]``),
        ``rounding_text``, ``ref``, ``tol`` (absolute), ``tol_text``, ``mistakes`` (``id``, ``value``, ``tol``,
        ``feedback``); choice parts:
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
            "rules": GRADING_RULES, "parts": parts, "data": dict(inst.params) if ex.example else {}}


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


def _fields(p: dict, **extra) -> dict:
    """The fields a part's message may name (:data:`MESSAGES`), those this payload has."""
    out = {"label": p["label"], "tol": p.get("tol_text"), "rounding": p.get("rounding_text"),
           "letters": ", ".join(o["letter"] for o in p.get("options", ())), **extra}
    return {k: v for k, v in out.items() if v is not None}


def _match(test: str, p: dict, read, rules: dict):
    """None when ``test`` (a test of :data:`GRADING_RULES`) does not hold for the read answer, else the fields it
    gives the verdict (``mistake`` id, ``feedback``)."""
    if test == "always":
        return {}
    if p["kind"] == "choice":
        h = digest(p["salt"], read) if "keys" in p else None
        right = h in p["keys"] if h else read == p["answer"]
        if test == "answer":
            return {} if right else None
        if test == "mistake" and not right:
            fb = (next((m["feedback"] for m in p["mistakes"] if h in m["keys"]), "") if h
                  else next(o["feedback"] for o in p["options"] if o["letter"] == read))
            return {"mistake": _sub(rules["choice_mistake"], letter=read), "feedback": fb}
        return None
    if "keys" in p:                     # the student edition: salted hashes of the rounded answers
        h = digest(p["salt"], canonical(spec(p["rounding"]), read))
        if test == "answer":
            return {} if h in p["keys"] else None
        if test == "mistake":
            return next(({"mistake": m["id"], "feedback": m["feedback"]} for m in p["mistakes"] if h in m["keys"]),
                        None)
        return None                     # above / below: the reference is not in this payload
    if test == "answer":
        return {} if abs(read - p["ref"]) <= p["tol"] else None
    if test == "mistake":
        return next(({"mistake": m["id"], "feedback": m["feedback"]} for m in p["mistakes"]
                     if abs(read - m["value"]) <= m["tol"]), None)
    if test in ("above", "below"):
        return {} if (read > p["ref"]) == (test == "above") else None
    raise ValueError(f"unknown grading test {test!r}")


def _grade_part(p: dict, v, rules: dict) -> PartVerdict:
    """One part's verdict: ``v`` is None (empty), a float, a string (a choice's letter; unreadable for a number)
    or :data:`_BAD`."""
    if v is None:
        status, template = rules["unread"]["empty"]
        return PartVerdict(p["key"], status, None, _sub(MESSAGES[template], **_fields(p)))
    if p["kind"] == "choice":
        read = v.strip().upper() if isinstance(v, str) else None
        readable = read in [o["letter"] for o in p["options"]]
    else:
        read = None if v is _BAD or isinstance(v, str) else float(v)
        readable = read is not None
    if not readable:
        status, template = rules["unread"][p["kind"]]
        return PartVerdict(p["key"], status, None, _sub(MESSAGES[template], **_fields(p)))
    for test, status, template in rules[p["kind"]]:
        got = _match(test, p, read, rules)
        if got is not None:
            return PartVerdict(p["key"], status, got.get("mistake"),
                               _sub(MESSAGES[template], **_fields(p, feedback=got.get("feedback"))))
    raise ValueError(f"no grading rule decides part {p['key']!r}")


def grade_payload(pl: dict, values: dict) -> Verdict:
    """Grade parsed part values against a payload by its rules (:data:`GRADING_RULES`), as ``grader.js`` does.

    Args:
        pl: :func:`payload` output, or the student edition's (:func:`flashbook.exercises.hashed`).
        values: ``{part key: float | str | None}``; ``None`` (or a missing key) = not answered, a string
            for a numeric part = unreadable; a choice part takes its option letter.
    Returns:
        :class:`Verdict`; never raises for values of these types.
    """
    rules = pl["rules"]
    pvs = [_grade_part(p, values.get(p["key"]), rules) for p in pl["parts"]]
    return _combine(pl["id"], _name(pl["title"], pl.get("variant", 0)), pl["hint"], pvs, rules)


def _name(title: str, variant: int) -> str:
    """``"title"`` (variant 0) or ``"title, variant s"``: what the verdict's first line names."""
    return _sub(MESSAGES["variant_name"], title=title, variant=variant) if variant else title


def _combine(number: int, name: str, hint: str, pvs: list, rules: dict = GRADING_RULES) -> Verdict:
    st = [p.status for p in pvs]
    for r in rules["exercise"]:
        hold = {"any": any, "all": all}.get(r["when"])
        if hold is None or hold(s in r["parts"] for s in st):
            break
    if "message" in r:
        return Verdict(number, r["status"], tuple(pvs), _sub(MESSAGES[r["message"]], hint=hint))
    lines = [_sub(MESSAGES["headline"], number=number, name=name, head=MESSAGES[r["head"]])]
    return Verdict(number, r["status"], tuple(pvs), "\n".join(lines + ["  " + p.message for p in pvs]))


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
    head = _sub(MESSAGES["headline"], number=ex.number, name=ex.plain_title, head=MESSAGES["malformed"])
    msg = f"{head} {what}\n  Answer format: {ex.hint}."
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
