"""Figure helpers shared by every figure module: figures built without pyplot, lean log ticks, and the
set-up/content split an explorer's live update rests on (``remember_setup``, ``clear_content``).

Only the presentation package imports matplotlib, and it does so lazily (inside these functions).
"""
from __future__ import annotations

__all__ = ["new_figure", "axes_setup", "lean_log_ticks", "power_label", "remember_setup", "layout_of", "clear_content",
           "colorbar", "PNG_DPI"]

_FIGURE_CLASS = None

#: PNG resolution of figures shown in notebooks (the static players use their own, see ``widgets``).
PNG_DPI = 100


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
    """A matplotlib Figure and its axes, built without pyplot.

    No global pyplot state: the figure is never auto-displayed twice (no stray ``<Figure size ...>``
    text) and needs no ``plt.close``. A notebook displays it by ending a cell with it.
    """
    fig = _book_figure_class()(figsize=(width, height), layout="constrained")
    ax = fig.subplots(nrows, ncols, **kw)
    return fig, ax


def axes_setup(width: float, height: float, **props):
    """An explorer's ``setup`` of one axes: ``new_figure(width=width, height=height)`` (inches) with
    ``ax.set(**props)`` (labels, scales, limits, in the order given); the ``setup(**params)`` ignores the
    parameters."""
    def setup(**_):
        fig, ax = new_figure(width=width, height=height)
        ax.set(**props)
        return fig

    return setup


def remember_setup(fig, layout=None) -> None:
    """Record what ``fig``'s set-up drew (called between an explorer's ``setup`` and its ``content``), so that
    :func:`clear_content` can later take the content away and leave the set-up.

    Per axes: its artists, containers, legend, titles and autoscaling flags; per figure: its texts and
    legends, and ``layout`` (the explorer's ``layout_key`` at the set-up's parameters, see :func:`layout_of`).
    A colorbar's axes is left to its Colorbar, which redraws its own artists when pointed at a new
    mappable (:func:`colorbar`).
    """
    axes = {}
    for ax in fig.axes:
        if _colorbar_of(ax) is None:
            axes[ax] = (set(_artists(ax)), len(ax.containers), ax.legend_,
                        tuple(ax.get_title(loc) for loc in _TITLES), ax.get_autoscalex_on(), ax.get_autoscaley_on())
    fig.fb_setup = (axes, set(fig.texts), set(fig.legends), layout)


def layout_of(fig):
    """The ``layout`` :func:`remember_setup` recorded for ``fig``; raises ValueError if it recorded none."""
    if getattr(fig, "fb_setup", None) is None:
        raise ValueError("this figure's set-up was not recorded (flashbook.figures.base.remember_setup)")
    return fig.fb_setup[3]


def clear_content(fig) -> None:
    """Take away what was drawn into ``fig`` after its set-up (:func:`remember_setup`): the content's data
    artists (lines, patches, collections, texts, images, tables), containers, legends and figure texts;
    titles back to the set-up's; each axes' colour cycle reset and its data limits recomputed, autoscaling as
    the set-up left it. What stays (the axes, their ticks, labels, scales and fixed limits) is most of what
    a new figure costs: an explorer's live update is this, then its ``content`` again.

    Raises:
        ValueError: ``fig``'s set-up was not recorded.
    """
    layout_of(fig)
    axes, texts, legends, _ = fig.fb_setup
    for ax, (kept, n_containers, legend, titles, auto_x, auto_y) in axes.items():
        for art in list(_artists(ax)):
            if art not in kept and art.axes is ax:     # a contour's labels go with the contour
                art.remove()
        del ax.containers[n_containers:]
        if ax.legend_ is not None and ax.legend_ is not legend:
            ax.legend_.remove()
        for loc, title in zip(_TITLES, titles):
            if ax.get_title(loc) != title:
                ax.set_title(title, loc=loc)
        ax.set_prop_cycle(None)
        ax.set_autoscalex_on(auto_x)
        ax.set_autoscaley_on(auto_y)
        ax.relim()
    for art in [*fig.texts, *fig.legends]:
        if art not in texts and art not in legends:
            art.remove()


_TITLES = ("left", "center", "right")


def _artists(ax):
    return (*ax.collections, *ax.lines, *ax.patches, *ax.texts, *ax.images, *ax.tables, *ax.artists)


def _colorbar_of(ax):
    """The Colorbar drawn in ``ax`` (matplotlib keeps it as ``ax._colorbar``), or None."""
    return getattr(ax, "_colorbar", None)


def colorbar(fig, mappable, ax, **kw):
    """A colorbar for ``mappable`` beside ``ax``: made on the first call (``fig.colorbar(mappable, ax=ax,
    **kw)``); on a later one (a persistent figure's content drawn again, see :func:`clear_content`) the same
    colorbar, pointed at the new ``mappable`` (its colours, norm and ticks follow). Returns the Colorbar."""
    cb = getattr(ax, "fb_colorbar", None)
    if cb is None:
        cb = ax.fb_colorbar = fig.colorbar(mappable, ax=ax, **kw)
    else:
        cb.update_normal(mappable)
    return cb
