"""Putting an explorer or a table in a page: :func:`flashbook.display.show` (frame player or live widgets) and :class:`flashbook.display.Table`."""
from __future__ import annotations

import functools
import html
import numbers

from .explorer import Explorer
from .figures.base import CSS_PX_PER_INCH
from .live import LiveFigure
from .mode import prefetch_enabled, static_mode
from .player import StaticHTML, render_static
from .prefetch import Prefetcher

__all__ = ["show", "Table"]


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


class Table:
    """A small display table (HTML in notebooks and the book, plain text in a terminal).

    Args:
        rows: list of row tuples (raw values).
        headers: column titles.
        formats: per-column format specs (e.g. ``",.0f"``) or None for ``str``.
        caption: optional caption.
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
            return isinstance(v, numbers.Number) and not isinstance(v, bool)

        numeric = [bool(self.rows) and all(num(r[i]) for r in self.rows) for i in range(len(self.headers))]
        head = "".join(f'<th class="fb-num">{html.escape(h)}</th>' if n else f"<th>{html.escape(h)}</th>"
                       for h, n in zip(self.headers, numeric))
        body = "".join("<tr>" + "".join(
            f'<td class="fb-num">{html.escape(c)}</td>' if num(v) else f"<td>{html.escape(c)}</td>"
            for v, c in zip(r, self._cells(r))) + "</tr>" for r in self.rows)
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        # the wrapper scrolls sideways when a wide table does not fit the text column (_static/flashbook.css):
        # a keyboard reaches it with Tab (then scrolls it with the arrows), a screen reader hears its name
        name = html.escape(self.caption or "table: " + ", ".join(self.headers), quote=True)
        return (f'<div class="fb-table-wrap" tabindex="0" role="region" aria-label="{name}">'
                f'<table class="fb-table">{cap}<thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>")

    def __repr__(self):
        cells = [list(self.headers)] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.headers))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)
