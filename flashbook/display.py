"""Putting an explorer or a table in a page: :func:`flashbook.display.show` (frame player or live widgets) and :class:`flashbook.display.Table`."""
from __future__ import annotations

import functools
import hashlib
import html
import numbers
import re

from .drawing import CSS_PX_PER_INCH
from .explorer import Explorer
from .live import LiveFigure
from .mode import prefetch_enabled, static_mode
from .player import StaticHTML, render_static
from .prefetch import Prefetcher

__all__ = ["show", "Table", "Tables", "STACK_CHARS"]


#: Visually hidden but read by screen readers (the usual "sr-only" rules, inline: the live face has no book CSS).
_SR_ONLY = ("position:absolute;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;"
            "clip:rect(0,0,0,0);white-space:nowrap")


def _described(text: str) -> str:
    """The live figure's text alternative as an ``ipywidgets.HTML`` value: a polite live region, visually hidden."""
    return f'<span role="status" aria-live="polite" style="{_SR_ONLY}">{html.escape(text)}</span>'


def _live_widget(explorer: Explorer):
    """ipywidgets controls over an ``ipywidgets.Image`` whose ``value`` each move replaces (one message to
    the front end, which swaps the image's bytes: no output area cleared and rebuilt), drawn by one
    :class:`LiveFigure`."""
    import ipywidgets as W

    controls = {}
    for s in explorer.sliders:
        vals = s.live_values
        if all(isinstance(v, bool) for v in vals):
            controls[s.name] = W.Checkbox(value=s.default, description=s.text, style={"description_width": "initial"})
        elif any(isinstance(v, str) for v in vals):
            # wide enough for the description and the longest choice (ch: the width of one digit)
            width = f"{len(s.text) + max(len(str(v)) for v in vals) + 8}ch"
            controls[s.name] = W.Dropdown(options=list(vals), value=s.default, description=s.text,
                                          style={"description_width": "initial"}, layout=W.Layout(width=width))
        else:
            controls[s.name] = W.SelectionSlider(options=[(s.show_value(v), v) for v in vals], value=s.default,
                                                 description=s.text, continuous_update=False,
                                                 style={"description_width": "initial"},
                                                 layout=W.Layout(width="100%", max_width="30em"))

    live = LiveFigure(explorer)
    prefetch = Prefetcher(live) if prefetch_enabled() else None

    def settings():
        return {**explorer.defaults(), **{k: c.value for k, c in controls.items()}}

    png = live.render(**settings())
    # shown at CSS_PX_PER_INCH CSS px per figure inch (the static frames' size), never wider than the output
    css_width = round(int.from_bytes(png[16:20], "big") * CSS_PX_PER_INCH / live.dpi)
    image = W.Image(value=png, format="png", layout=W.Layout(width=f"{css_width}px", max_width="100%", height="auto"))
    image.add_class("fb-live-figure")
    # An ipywidgets Image has no alt, and its tooltip (a title) breaks its view in ipywidgets 8.1 (the front end
    # reads the description an Image lacks: jupyter-widgets/ipywidgets#3921). So the static player's alt text, at
    # the setting shown, is a visually hidden live region after the image, which a screen reader reads there and
    # announces again after each move.
    described = W.HTML(_described(explorer.describe(settings(), live=True)))
    described.add_class("fb-live-description")
    if prefetch is not None:
        prefetch.request(settings())

    def _update(name, change):
        p = settings()
        if prefetch is not None:
            prefetch.take(p)             # no longer queued (a draw of it under way is not waited for)
            Prefetcher.step_aside()
        image.value = live.render(**p)   # from the cache when prefetched, else drawn now
        described.value = _described(explorer.describe(p, live=True))
        if prefetch is not None:
            vals = next(s.live_values for s in explorer.sliders if s.name == name)
            step = 1 if vals.index(change["new"]) >= vals.index(change["old"]) else -1
            prefetch.request(p, (name, step))

    for name, c in controls.items():
        c.observe(functools.partial(_update, name), names="value")
    box = W.VBox([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")), image, described])
    box.live_figure = live     # for tests and benchmarks
    box.prefetcher = prefetch
    return box


def show(explorer: Explorer):
    """Display ``explorer``: frame player in the static book, ipywidgets in a live kernel.

    Returns the displayable object (so a notebook cell can end with ``show(...)``).
    """
    if static_mode():
        return StaticHTML(render_static(explorer))
    return _live_widget(explorer)


#: A string cell that reads as a number ("2,048", "+7.9%", "53.2 [13]", "1.5x"): set like one (right-aligned, never
#: broken across lines), as numeric cells are.
_NUMBER_TEXT = re.compile(r"^[+\-\u2212]?[\d,]*\.?\d+(?:[eE][+-]?\d+)?\s?(?:%|x|\[\d+\])?$")

#: A table with a text column whose longest cell is at least this many characters is stacked on a narrow screen
#: (each row a block of "header: value" lines, _static/flashbook.css) instead of squeezing that column.
STACK_CHARS = 28

#: Per process (one notebook's kernel = one page): element ids handed out to table captions.
_CAPTION_IDS: dict[str, int] = {}


class Table:
    """A small display table (HTML in notebooks and the book, plain text in a terminal).

    In HTML the caption is a paragraph above the table's scrolling wrapper (never inside it, where a wide table
    would carry part of it out of view) and names the wrapper (``aria-labelledby``); each cell carries its
    column's header (``data-label``) for the stacked form a narrow screen gives a table with long text
    (:data:`STACK_CHARS`).

    Args:
        rows: list of row tuples (raw values).
        headers: column titles.
        formats: per-column format specs (e.g. ``",.0f"``) or None for ``str``.
        caption: optional caption.

    Raises:
        ValueError: a row or the formats with another number of entries than the headers.
    """

    def __init__(self, rows, headers, formats=None, caption: str = ""):
        self.rows = [tuple(r) for r in rows]
        self.headers = tuple(headers)
        self.formats = tuple(formats) if formats is not None else (None,) * len(self.headers)
        if any(len(r) != len(self.headers) for r in self.rows) or len(self.formats) != len(self.headers):
            raise ValueError("every row and the formats must have one entry per header")
        self.caption = caption

    def _cells(self, row):
        return [str(v) if f is None or isinstance(v, str) else format(v, f) for v, f in zip(row, self.formats)]

    def _repr_html_(self):
        def num(v):
            return (isinstance(v, numbers.Number) and not isinstance(v, bool)) or (
                isinstance(v, str) and bool(_NUMBER_TEXT.match(v.strip())))

        cells = [self._cells(r) for r in self.rows]
        numeric = [bool(self.rows) and all(num(r[i]) or r[i] in ("", "—") for r in self.rows)
                   and any(num(r[i]) for r in self.rows) for i in range(len(self.headers))]
        # a header may break after a slash ("tensor FLOP/<wbr>clock/<wbr>SM"): its column need not be as wide
        heads = [html.escape(h).replace("/", "/<wbr>") for h in self.headers]
        head = "".join(f'<th class="fb-num">{h}</th>' if n else f"<th>{h}</th>" for h, n in zip(heads, numeric))
        body = "".join("<tr>" + "".join(
            f'<td class="fb-num" data-label="{html.escape(h, quote=True)}">{html.escape(c)}</td>' if num(v)
            else f'<td data-label="{html.escape(h, quote=True)}">{html.escape(c)}</td>'
            for v, c, h in zip(r, cs, self.headers)) + "</tr>" for r, cs in zip(self.rows, cells))
        longest = max((len(c[i]) for c in cells for i in range(len(self.headers)) if not numeric[i]), default=0)
        block = "fb-table-block fb-stack" if longest >= STACK_CHARS else "fb-table-block"
        # the wrapper scrolls sideways when a wide table does not fit the text column (_static/flashbook.css):
        # a keyboard reaches it with Tab (then scrolls it with the arrows), a screen reader hears its name
        if self.caption:
            uid = "fb-tcap-" + hashlib.sha256((self.caption + "\0" + head + body).encode()).hexdigest()[:10]
            _CAPTION_IDS[uid] = _CAPTION_IDS.get(uid, 0) + 1
            if _CAPTION_IDS[uid] > 1:   # the same table twice in one page: still unique, still stable
                uid += f"-{_CAPTION_IDS[uid]}"
            cap = f'<p class="fb-table-caption" id="{uid}">{html.escape(self.caption)}</p>'
            name = f'aria-labelledby="{uid}"'
        else:
            cap = ""
            name = f'aria-label="{html.escape("table: " + ", ".join(self.headers), quote=True)}"'
        return (f'<div class="{block}">{cap}<div class="fb-table-wrap" tabindex="0" role="region" {name}>'
                f'<table class="fb-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div></div>")

    def __repr__(self):
        cells = [list(self.headers)] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.headers))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)


class Tables:
    """Several :class:`Table` shown one after the other (one cell's output): a wide table split into the parts
    a paragraph discusses, each fitting the text column.

    Raises:
        TypeError: an argument is not a :class:`Table`.
    """

    def __init__(self, *tables):
        if not tables or not all(isinstance(t, Table) for t in tables):
            raise TypeError("Tables needs one or more flashbook.display.Table")
        self.tables = tables

    def __iter__(self):
        return iter(self.tables)

    def _repr_html_(self):
        return "".join(t._repr_html_() for t in self.tables)

    def __repr__(self):
        return "\n\n".join(repr(t) for t in self.tables)
