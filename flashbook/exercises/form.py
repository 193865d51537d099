"""The static-HTML form of an exercise: graded in the reader's browser by ``grader.js``, no kernel needed.

During the book build (``FLASHBOOK_STATIC=1``) each exercise's check cell shows :func:`static_form`: a
small self-contained form whose inline script is :data:`GRADER_JS` (the file ``grader.js`` shipped with
this package) followed by one call that wires the form. Its payload is :func:`flashbook.exercises.payload`
as JSON, the same one the Python grader grades through, so the two graders read one definition.

The form's element id is derived from its content (the exercise number and a hash of its payload),
never drawn at random, so two builds of the same commit give identical HTML.

Source: this book's own presentation layer (no paper); the exercises are lecture §12's.
"""
from __future__ import annotations

import hashlib
import html
import json
from importlib import resources

from .definitions import ExerciseUnavailable, exercise
from .grader import payload

__all__ = ["GRADER_JS", "static_form", "solution_output"]

#: The browser grader (``flashbook/exercises/grader.js``, package data): the rules of
#: :func:`flashbook.exercises.grade_payload` in dependency-free JavaScript, inlined into every form.
GRADER_JS: str = resources.files(__package__).joinpath("grader.js").read_text(encoding="utf-8")


#: Inline styles of a choice part's fieldset and legend: the legend is set like the other parts' labels
#: (body text, not the theme's heading-sized legend), the fieldset without a frame.
FIELDSET_STYLE = "border:0;margin:0;padding:0;min-width:0"
LEGEND_STYLE = "font-size:inherit;font-weight:inherit;line-height:inherit;float:none;width:auto;margin:0;padding:0"


def _form_id(pl: dict) -> str:
    """``fb-ex<number>-<first 10 hex digits of the payload's SHA-256>``: the same for the same content."""
    digest = hashlib.sha256(json.dumps(pl, sort_keys=True).encode("utf-8")).hexdigest()[:10]
    return f"fb-ex{pl['id']}-{digest}"


def _field(uid: str, p: dict) -> str:
    """The input(s) of one part: radio buttons for a choice part, a text field for a number."""
    lab = html.escape(p["label"])
    if p["kind"] == "choice":
        opts = "".join(
            f'<label style="display:block"><input type="radio" name="{uid}-{p["key"]}" '
            f'value="{o["letter"]}"> {o["letter"]}. {html.escape(o["text"])}</label>' for o in p["options"])
        # the theme sets <legend> in heading type (Bootstrap: 1.5rem, floated): LEGEND_STYLE makes it read
        # like the numeric parts' "label: [field]" (same size and weight, one line above the options)
        return f'<fieldset style="{FIELDSET_STYLE}"><legend style="{LEGEND_STYLE}">{lab}:</legend>{opts}</fieldset>'
    return (f'<label style="display:block">{lab}: <input type="text" inputmode="decimal" size="12" '
            f'data-part="{p["key"]}" aria-label="{lab}"> {html.escape(p["unit"])}</label>')


def static_form(k) -> str:
    """Self-contained HTML form that self-grades exercise ``k`` in the static book (no kernel).

    Args:
        k: the exercise number, 1..len(EXERCISES).
    Returns:
        One ``<form class="fb-exercise-form" data-exercise="k">`` holding the fields, a Check button, the
        payload as JSON and :data:`GRADER_JS`; the same ``k`` at the same commit gives the same bytes.
        If a labcore function the reference needs is missing, a short notice instead of the form.
    Raises:
        ValueError: ``k`` is not an integer in 1..len(EXERCISES).
    """
    ex = exercise(k)
    try:
        pl = payload(k)
    except ExerciseUnavailable as exc:
        return f'<div class="fb-exercise-form"><p>Self-check unavailable in this build: {html.escape(str(exc))}</p></div>'
    uid = _form_id(pl)
    rows = []
    if ex.number == 6:
        d = pl["data"]
        rows.append(f"<p><small>Example: P_i = {d['P_i']}, V = {d['V']}, dO_i = {d['dO_i']}.</small></p>")
    rows += [_field(uid, p) for p in pl["parts"]]
    data = json.dumps(pl).replace("</", "<\\/")
    wire = f"fbAttachForm(document.getElementById({json.dumps(uid)}));"
    return (f'<form class="fb-exercise-form" id="{uid}" data-exercise="{ex.number}" onsubmit="return false">'
            f'<p><strong>Check your answer</strong> (graded in your browser, same rules as '
            f'<code>flashbook.exercises.check({ex.number}, answer)</code>)</p>'
            f'{"".join(rows)}<button type="button" class="fb-check">Check</button>'
            f'<pre class="fb-verdict" aria-live="polite" style="white-space:pre-wrap"></pre>'
            f'<script type="application/json" class="fb-ex-payload">{data}</script>'
            f'<script>{GRADER_JS}\n{wire}</script></form>')


class solution_output:
    """Context manager for a worked solution's code cell: what the code prints stays folded until asked for.

    ``with solution_output(): print(...)`` runs the solution (its asserts still check it under nbval and
    in the book build) but shows its printed text inside a closed ``<details>`` element, "Show the worked
    solution", in JupyterLab and in the HTML book alike, so Run All never puts an answer in front of a reader
    who has not tried the exercise yet. An exception inside the block propagates unchanged (nothing is
    shown). Source: this book's presentation layer.
    """

    summary = "Show the worked solution"

    def __enter__(self):
        import contextlib
        import io

        self._buffer = io.StringIO()
        self._redirect = contextlib.redirect_stdout(self._buffer)
        self._redirect.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._redirect.__exit__(exc_type, exc, tb)
        if exc_type is None:
            from IPython.display import HTML, display

            display(HTML(self.html(self._buffer.getvalue())))
        return False

    @classmethod
    def html(cls, text: str) -> str:
        """The folded markup for ``text`` (printed output): ``<details class="fb-solution">``, closed."""
        return (f'<details class="fb-solution"><summary>{html.escape(cls.summary)}</summary>'
                f'<pre>{html.escape(text.rstrip())}</pre></details>')
