"""The static-HTML form of an exercise: graded in the reader's browser by ``grader.js``, no kernel needed.

During the book build (``FLASHBOOK_STATIC=1``) each exercise's check cell shows :func:`static_form`: a
small self-contained form whose inline script is :data:`GRADER_JS` (the file ``grader.js`` shipped with
this package) followed by one call that wires the form. Its payload (:func:`form_payload`) carries variant 0
(the page's numbers) and :data:`~flashbook.exercises.variants.FORM_VARIANTS` precomputed variants, each one a
:func:`flashbook.exercises.payload` (the same the Python grader grades through); the "Another variant" button
shows the next variant's statement and grades against it. In the student edition
(``FLASHBOOK_EDITION=student``) every variant's payload is :func:`flashbook.exercises.hashed`.

The form's element id is derived from its content (the exercise number and a hash of its payload),
never drawn at random, so two builds of the same commit give identical HTML.

Source: this book's own presentation layer (no paper); the exercises are lecture §12's.
"""
from __future__ import annotations

import hashlib
import html
import json
from importlib import resources

from .definitions import exercise
from .grader import payload
from .keys import hashed, student_edition
from .variants import FORM_VARIANTS

__all__ = ["GRADER_JS", "static_form", "form_payload", "solution_output", "COMMON_KEYS"]

#: The browser grader (``flashbook/exercises/grader.js``, package data): dependency-free JavaScript that applies the
#: grading rules each payload carries (:data:`flashbook.exercises.GRADING_RULES`), inlined into every form.
GRADER_JS: str = resources.files(__package__).joinpath("grader.js").read_text(encoding="utf-8")

#: The payload keys every variant of an exercise shares (stored once in a form's payload).
COMMON_KEYS = ("id", "label", "title", "hint", "messages", "rules")

#: Inline styles of a choice part's fieldset and legend: the legend is set like the other parts' labels
#: (body text, not the theme's heading-sized legend), the fieldset without a frame.
FIELDSET_STYLE = "border:0;margin:0;padding:0;min-width:0"
LEGEND_STYLE = "font-size:inherit;font-weight:inherit;line-height:inherit;float:none;width:auto;margin:0;padding:0"


def form_payload(k, variants: int = FORM_VARIANTS, *, student: bool | None = None) -> dict:
    """The payload of exercise ``k``'s static form: the shared keys once, then one entry per variant.

    Args:
        k: the exercise number, 1..len(EXERCISES).
        variants: how many variants besides variant 0 (seeds 1..variants).
        student: hash the keys (the student edition); ``None`` reads ``FLASHBOOK_EDITION``.
    Returns:
        ``{id, label, title, hint, messages, rules, variants: [...]}``; ``grader.js``'s ``fbVariant(fp, i)`` joins the
        shared keys with entry i into a payload ``fbGrade`` grades.
    Raises:
        ValueError: ``k`` out of range or ``variants < 0``.
    """
    if variants < 0:
        raise ValueError(f"variants must be >= 0, got {variants}")
    student = student_edition() if student is None else student
    pls = [payload(k, v) for v in range(variants + 1)]
    if student:
        pls = [hashed(pl) for pl in pls]
    common = {key: pls[0][key] for key in COMMON_KEYS}
    return {**common, "variants": [{key: v for key, v in pl.items() if key not in COMMON_KEYS} for pl in pls]}


def _form_id(fp: dict) -> str:
    """``fb-ex<number>-<first 10 hex digits of the payload's SHA-256>``: the same for the same content."""
    digest = hashlib.sha256(json.dumps(fp, sort_keys=True).encode("utf-8")).hexdigest()[:10]
    return f"fb-ex{fp['id']}-{digest}"


def _field(uid: str, p: dict) -> str:
    """The input(s) of one part: radio buttons for a choice part, a text field for a number."""
    lab = html.escape(p["label"])
    if p["kind"] == "choice":
        opts = "".join(
            f'<label style="display:block"><input type="radio" name="{uid}-{p["key"]}" '
            f'value="{o["letter"]}"> {o["letter"]}. <span class="fb-option" data-letter="{o["letter"]}">'
            f'{html.escape(o["text"])}</span></label>' for o in p["options"])
        # the theme sets <legend> in heading type (Bootstrap: 1.5rem, floated): LEGEND_STYLE makes it read
        # like the numeric parts' "label: [field]" (same size and weight, one line above the options)
        return (f'<fieldset data-part="{p["key"]}" style="{FIELDSET_STYLE}"><legend style="{LEGEND_STYLE}">{lab}:'
                f'</legend>{opts}</fieldset>')
    return (f'<label style="display:block" data-part-label="{p["key"]}"><span class="fb-label">{lab}</span>: '
            f'<input type="text" inputmode="decimal" size="12" data-part="{p["key"]}" aria-label="{lab}"> '
            f'{html.escape(p["unit"])}</label>')


def static_form(k) -> str:
    """Self-contained HTML form that self-grades exercise ``k`` in the static book (no kernel).

    Args:
        k: the exercise number, 1..len(EXERCISES).
    Returns:
        One ``<form class="fb-exercise-form" data-exercise="k">`` holding the fields of variant 0, a Check
        button, an "Another variant" button, the :func:`form_payload` as JSON and :data:`GRADER_JS`; the same
        ``k`` at the same commit (and edition) gives the same bytes.
    Raises:
        ValueError: ``k`` is not an integer in 1..len(EXERCISES).
    """
    ex = exercise(k)
    fp = form_payload(k)
    first = fp["variants"][0]
    uid = _form_id(fp)
    rows = ['<p class="fb-variant-statement" hidden></p>']
    if first["example"]:
        rows.append(f'<p><small class="fb-example">{html.escape(first["example"])}</small></p>')
    rows += [_field(uid, p) for p in first["parts"]]
    data = json.dumps(fp).replace("</", "<\\/")
    wire = f"fbAttachForm(document.getElementById({json.dumps(uid)}));"
    return (f'<form class="fb-exercise-form" id="{uid}" data-exercise="{ex.number}" onsubmit="return false">'
            f'<p><strong>Check your answer</strong> (graded in your browser, same rules as '
            f'<code>flashbook.exercises.check({ex.number}, answer)</code>)</p>'
            f'{"".join(rows)}<button type="submit" class="fb-check">Check</button> '
            f'<button type="button" class="fb-variant" title="the same exercise with other numbers">'
            f'Another variant</button>'
            f'<pre class="fb-verdict" aria-live="polite" style="white-space:pre-wrap"></pre>'
            f'<script type="application/json" class="fb-ex-payload">{data}</script>'
            f'<script>{GRADER_JS}\n{wire}</script></form>')


class solution_output:
    """Context manager for a worked solution's code cell: what the code prints stays folded until asked for.

    ``with solution_output(): print(...)`` runs the solution (its asserts still check it under nbval and
    in the book build) but shows its printed text inside a closed ``<details>`` element, "Show the worked
    solution", in JupyterLab and in the HTML book alike, so Run All never puts an answer in front of a reader
    who has not tried the exercise yet. An exception inside the block propagates unchanged (nothing is
    shown). In the student edition (``FLASHBOOK_EDITION=student``) the code still runs but its printed text
    is withheld. Source: this book's presentation layer.
    """

    summary = "Show the worked solution"
    #: what the student edition shows instead of the printed solution (its build strips these cells anyway)
    withheld = "The worked solution is not part of this edition."

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

            text = self.withheld if student_edition() else self._buffer.getvalue()
            display(HTML(self.html(text)))
        return False

    @classmethod
    def html(cls, text: str) -> str:
        """The folded markup for ``text`` (printed output): ``<details class="fb-solution">``, closed."""
        return (f'<details class="fb-solution"><summary>{html.escape(cls.summary)}</summary>'
                f'<pre>{html.escape(text.rstrip())}</pre></details>')
