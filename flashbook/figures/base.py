"""Figure helpers shared by every figure module: figures built without pyplot, lean log ticks.

Only the presentation package imports matplotlib, and it does so lazily (inside these functions).
"""
from __future__ import annotations

__all__ = ["new_figure", "lean_log_ticks", "power_label", "clear_content", "rescale", "PNG_DPI"]

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


def clear_content(*axes) -> None:
    """Remove the data artists (lines, patches, collections, texts, images) and the legend of each axes,
    reset its colour cycle and data limits and turn autoscaling back on: what an explorer's ``update``
    hook does before drawing a setting's content again into a persistent figure (the axes, their ticks,
    labels and scales stay, which is most of what a new figure costs).
    """
    for ax in axes:
        for art in (*ax.lines, *ax.patches, *ax.collections, *ax.texts, *ax.images):
            art.remove()
        ax.containers.clear()
        if ax.legend_ is not None:
            ax.legend_.remove()
        ax.set_prop_cycle(None)
        ax.set_autoscale_on(True)
        ax.relim()


def rescale(*axes) -> None:
    """Autoscale each axes to its current data, as a freshly drawn one would (after ``set_data``)."""
    for ax in axes:
        ax.relim()
        ax.autoscale_view()
