"""The student edition's payload: salted hashes of the rounded answers instead of the answers.

In the student edition (``FLASHBOOK_EDITION=student``, set by ``make student``) the static form must not hold
any answer or known-mistake value in the page source. :func:`hashed` turns a :func:`flashbook.exercises.payload`
into one whose numeric parts keep, for the reference and for each known mistake, only the keys
(:func:`flashbook.exercises.rounding.digest`) of every value *rounded as the statement asks* that lies in the
window (:func:`flashbook.exercises.rounding.grid`). The browser rounds the typed number the same way
(``toFixed`` / ``toExponential``), hashes it with the part's salt, and looks the key up: an answer typed at
the statement's rounding is graded right or wrong exactly as in the full edition, and each known mistake
gets its feedback. A choice part keeps the key of the right letter and the feedback of each wrong one under
that letter's key. What it cannot say is "too high" or "too low": that would need the answer.

What this protects: the page source reads as hashes. A determined student can still try numbers against the
keys (a rounded answer has few candidates) or run ``labcore`` in a live kernel (the page for instructors says so).

Source: this book's presentation layer (the student edition's self-check forms).
"""
from __future__ import annotations

import os

from .rounding import digest, grid, spec

__all__ = ["EDITIONS", "edition", "student_edition", "hashed", "salt"]

#: The editions the build knows: ``full`` (the default: worked solutions, plain payloads) and ``student``.
EDITIONS = ("full", "student")


def edition() -> str:
    """``FLASHBOOK_EDITION`` (``"full"`` when unset).

    Raises:
        ValueError: the variable names no edition of :data:`EDITIONS`.
    """
    e = os.environ.get("FLASHBOOK_EDITION", "") or "full"
    if e not in EDITIONS:
        raise ValueError(f"FLASHBOOK_EDITION must be one of {EDITIONS}, got {e!r}")
    return e


def student_edition() -> bool:
    """True while building (or running) the student edition (``FLASHBOOK_EDITION=student``)."""
    return edition() == "student"


def salt(pl: dict, key: str) -> str:
    """The salt of one part of one variant: ``"<label>/v<variant>/<key>"`` plus ``FLASHBOOK_SALT`` if set.

    Public by construction (it is in the page); it only makes one table of keys useless for another part,
    variant or term (an instructor may set ``FLASHBOOK_SALT`` per course).
    """
    return f"{pl['label']}/v{pl.get('variant', 0)}/{key}" + os.environ.get("FLASHBOOK_SALT", "")


def _keys(p: dict, s: str, value: float, tol: float) -> list[str]:
    return sorted(digest(s, t) for t in grid(spec(p["rounding"]), value - tol, value + tol))


def hashed(pl: dict) -> dict:
    """The student edition of payload ``pl``: no reference, no mistake value, no right option in clear.

    Args:
        pl: a :func:`flashbook.exercises.payload`.
    Returns:
        A payload of the same shape for :func:`flashbook.exercises.grade_payload` and ``grader.js``: numeric
        parts hold ``salt``, ``keys`` (the reference's window) and ``mistakes`` (``id``, ``keys``,
        ``feedback``) instead of ``ref``, ``tol``, ``tol_text`` and the values; choice parts hold ``salt``,
        ``keys`` and ``mistakes`` (``keys``, ``feedback``) instead of ``answer`` and the options' feedback;
        ``data`` (a worked input, not an answer) and every text stay.
    """
    parts = []
    for p in pl["parts"]:
        s = salt(pl, p["key"])
        d = {"key": p["key"], "label": p["label"], "unit": p["unit"], "kind": p["kind"], "salt": s}
        if p["kind"] == "choice":
            d["options"] = [{"letter": o["letter"], "text": o["text"]} for o in p["options"]]
            d["keys"] = [digest(s, p["answer"])]
            d["mistakes"] = sorted(({"keys": [digest(s, o["letter"])], "feedback": o["feedback"]}
                                    for o in p["options"] if o["letter"] != p["answer"]), key=lambda m: m["keys"])
        else:
            d.update(rounding=p["rounding"], rounding_text=p["rounding_text"], keys=_keys(p, s, p["ref"], p["tol"]),
                     mistakes=[{"id": m["id"], "keys": _keys(p, s, m["value"], m["tol"]), "feedback": m["feedback"]}
                               for m in p["mistakes"]])
        parts.append(d)
    return {**pl, "parts": parts, "edition": "student"}
