"""Figure helpers shared by every figure module: figures built without pyplot, at most :data:`MAX_WIDTH` wide with
words wrapped to fit, lean log ticks, an explorer's one-axes set-up and a colorbar that survives a live update.

Only the presentation package imports matplotlib, and it does so lazily (inside these functions). What an
explorer's live update needs of a figure lives with the explorer (:func:`flashbook.explorer.clear_content`), and
how a figure is shown and measured with the drawing (:data:`flashbook.drawing.CSS_PX_PER_INCH`,
:func:`flashbook.drawing.smallest_text`).
"""
from __future__ import annotations

from ..drawing import CSS_PX_PER_INCH

__all__ = ["new_figure", "axes_setup", "lean_log_ticks", "power_label", "colorbar", "PNG_DPI", "MAX_WIDTH", "MIN_FONT",
           "wrap_titles"]

_FIGURE_CLASS = None

#: PNG resolution of figures shown in notebooks (the static players use their own, see ``flashbook.drawing``).
PNG_DPI = 2 * CSS_PX_PER_INCH

#: Widest figure (inches) and smallest text (points) a figure may have, so it reads on a phone. Text of ``MIN_FONT`` pt in a
#: figure ``MAX_WIDTH`` in wide reads at ``MIN_FONT / 72 * CSS_PX_PER_INCH`` = 12.5 CSS px on a desktop
#: (the figure at its own size) and at ``MIN_FONT / 72 * 358 / MAX_WIDTH`` = 9.3 CSS px when it is shrunk to a
#: 390 px phone's 358 px column. A row of panels is therefore stacked into a column (:func:`new_figure`).
MAX_WIDTH = 4.8
MIN_FONT = 9.0


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def power_label(value: float, base: float = 10) -> str:
    """``"10³"``, ``"2¹⁰"``, ``"10⁻²"`` for an exact power of ``base``; else a short ``"g"`` number.

    Plain Unicode superscripts: no mathtext to parse on every draw (``$10^{3}$`` costs milliseconds per
    label).
    """
    import math

    if value <= 0:
        return ""
    exp = math.log(value, base)
    if abs(exp - round(exp)) > 1e-9:
        return f"{value:g}"
    b = int(base) if float(base).is_integer() else base
    return f"{b}{str(int(round(exp))).translate(_SUPERSCRIPT)}"


def lean_log_ticks(fig) -> None:
    """Lean, fast tick labels on every log-scaled axis of ``fig``.

    Major ticks at most one per power of the base, labelled with :func:`power_label`, and no minor
    ticks. Matplotlib's defaults (eight minor ticks per decade and mathtext labels) cost ~70 ms per log
    axis per draw on the project's 2-core machine, more than the rest of a typical figure; even minor
    ticks at 2x and 5x alone cost ~20 ms a figure. The figures read the same without them. An axis
    whose formatter a figure function set itself keeps it.
    """
    from matplotlib.ticker import FuncFormatter, LogFormatterSciNotation, LogLocator, NullLocator

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # the mark sits on the locator: a later set_xscale("log") (an update in place) makes new ones
            if axis.get_scale() != "log" or getattr(axis.get_major_locator(), "_fb_lean", False):
                continue
            base = axis.get_transform().base
            locator = LogLocator(base=base, numticks=8)
            locator._fb_lean = True
            axis.set_major_locator(locator)
            axis.set_minor_locator(NullLocator())
            if type(axis.get_major_formatter()) is LogFormatterSciNotation:
                axis.set_major_formatter(FuncFormatter(lambda v, _pos, b=base: power_label(v, b)))


def _book_figure_class():
    """A matplotlib Figure subclass that displays itself as PNG in IPython, with or without pyplot."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        import io

        from matplotlib.figure import Figure

        class BookFigure(Figure):
            """A Figure with lean log ticks (:func:`lean_log_ticks`) that shows itself as PNG.

            Its layout engine is ``constrained``, which already keeps every label and legend inside the
            canvas, so the PNG is saved without ``bbox_inches="tight"`` (that would draw it twice).
            """

            def draw(self, renderer):
                lean_log_ticks(self)
                wrap_titles(self)
                return super().draw(renderer)

            def _repr_png_(self):
                buf = io.BytesIO()
                self.savefig(buf, format="png", dpi=PNG_DPI)
                return buf.getvalue()

            def __repr__(self):
                return f"<figure: {len(self.axes)} axes>"

        _FIGURE_CLASS = BookFigure
    return _FIGURE_CLASS


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 3.6, **kw):
    """A matplotlib Figure and its axes, built without pyplot, at most :data:`MAX_WIDTH` inches wide.

    Args:
        nrows, ncols: the grid of axes (``fig.subplots``). A single row of panels (``nrows == 1``) is
            stacked into one column, ``width_ratios`` becoming ``height_ratios``: the axes come back in
            the same order and shape (a 1-D array), and each panel keeps the column's full width, so its
            text stays readable on a phone.
        width, height: the figure's size in inches as designed side by side; the figure is drawn
            ``min(width, MAX_WIDTH)`` wide and about as tall as its panels need at that width.
        kw: passed to ``fig.subplots`` (``sharex``, ``squeeze``, ``gridspec_kw``...).

    No global pyplot state: the figure is never auto-displayed twice (no stray ``<Figure size ...>``
    text) and needs no ``plt.close``. A notebook displays it by ending a cell with it.
    """
    if nrows < 1 or ncols < 1 or width <= 0 or height <= 0:
        raise ValueError(f"new_figure needs nrows, ncols >= 1 and a positive size, got {nrows}x{ncols}, "
                         f"{width}x{height} in")
    w = min(width, MAX_WIDTH)
    if nrows == 1 and ncols > 1:
        grid = dict(kw.pop("gridspec_kw", None) or {})
        if "width_ratios" in grid:
            grid["height_ratios"] = grid.pop("width_ratios")
        if grid:
            kw["gridspec_kw"] = grid
        # each panel was width/ncols x height; stacked, it is w wide and a little flatter than it was tall
        h = ncols * min(max(0.85 * height, 0.45 * w), 0.7 * w)
        nrows, ncols = ncols, 1
    else:
        h = height * (w / width) ** 0.5 if width > w and nrows == 1 else height
    fig = _book_figure_class()(figsize=(w, h), layout="constrained")
    ax = fig.subplots(nrows, ncols, **kw)
    for a in fig.axes:   # tick labels at the smallest size, so no title (9 pt) is smaller than they are
        a.tick_params(labelsize=MIN_FONT)
    return fig, ax


def wrap_titles(fig) -> None:
    """Fit ``fig``'s words to its width (figures are at most :data:`MAX_WIDTH` wide, their text at least
    :data:`MIN_FONT`): each axes title, x-axis label and the suptitle broken into lines (by characters,
    ~0.55 em each). Legends are the figures' own to size (their ``ncols``)."""
    width_pt = fig.get_size_inches()[0] * 72

    for ax in fig.axes:
        for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label):
            _wrap(t, 0.82 * width_pt)   # an axes is narrower than its figure (the y labels beside it)
    if getattr(fig, "_suptitle", None) is not None:
        _wrap(fig._suptitle, width_pt)


def _wrap(t, width_pt: float) -> None:
    import textwrap

    text = t.get_text()
    cols = max(16, int(width_pt * 0.92 / (0.55 * t.get_fontsize())))
    if not text or max(len(ln) for ln in text.split("\n")) <= cols:
        return
    t.set_text("\n".join(ln for part in text.split("\n") for ln in (textwrap.wrap(part, cols) or [""])))


def axes_setup(width: float, height: float, **props):
    """An explorer's ``setup`` of one axes: ``new_figure(width=width, height=height)`` (inches) with
    ``ax.set(**props)`` (labels, scales, limits, in the order given); the ``setup(**params)`` ignores the
    parameters."""
    def setup(**_):
        fig, ax = new_figure(width=width, height=height)
        ax.set(**props)
        return fig

    return setup


def colorbar(fig, mappable, ax, **kw):
    """A colorbar for ``mappable`` beside ``ax``: made on the first call (``fig.colorbar(mappable, ax=ax,
    **kw)``); on a later one (a persistent figure's content drawn again, see :func:`flashbook.explorer.clear_content`)
    the same colorbar, pointed at the new ``mappable`` (its colours, norm and ticks follow). Returns the Colorbar."""
    cb = getattr(ax, "fb_colorbar", None)
    if cb is None:
        cb = ax.fb_colorbar = fig.colorbar(mappable, ax=ax, **kw)
        cb.ax.tick_params(labelsize=MIN_FONT)
    else:
        cb.update_normal(mappable)
    return cb
