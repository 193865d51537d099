"""Drawing an explorer's figure to PNG in its frozen layout (the one path of the static frames and the live figures).

Every figure of one explorer uses the axes positions that constrained layout chose for its defaults
(solved once, with :data:`LAYOUT_PAD` around each axes): the axes stay put while a slider moves, and the
layout is not solved again on every update. A figure that would not fit is laid out on its own. Imports
matplotlib and PIL lazily.
"""
from __future__ import annotations

import io

__all__ = ["CSS_PX_PER_INCH", "STATIC_DPI", "LIVE_DPI", "LIVE_PNG_COMPRESSION", "LAYOUT_PAD", "frozen_layout", "freeze",
           "encode_png", "draw_png", "smallest_text"]

#: CSS pixels per figure inch: a figure is shown at ``width * CSS_PX_PER_INCH`` CSS px (or the column's width,
#: if narrower). Its PNGs carry 2x that resolution (:data:`STATIC_DPI`), crisp on 2x screens.
CSS_PX_PER_INCH = 100

#: PNG resolution of the static players' frames and of the live widgets' figures. A figure is shown at
#: ``CSS_PX_PER_INCH`` CSS px per inch; the static frames carry 2 PNG pixels per CSS px (crisp on a 2x
#: screen; their size is kept down by 256-colour PNGs, see ``flashbook.player``), the live ones 1.5 (a
#: slider move's cost grows with the pixels drawn and encoded).
STATIC_DPI = 2 * CSS_PX_PER_INCH
LIVE_DPI = 3 * CSS_PX_PER_INCH // 2

#: zlib level of the live figures' PNGs (0-9). Level 1 encodes the explorers' figures in 50-65% of the
#: CPU time of PIL's default 6 (6-12 ms instead of 13-18 ms, measured under load), for files 0-12%
#: larger (30-46 KB; they go to the kernel's own front end, not over the web).
LIVE_PNG_COMPRESSION = 1


#: Padding (inches) around each axes when the frozen layout is solved: room for tick labels that are
#: wider at other slider values than at the defaults (matplotlib's own default is 3 pt = 0.042 in).
LAYOUT_PAD = 0.09

_LAYOUTS: dict = {}


def frozen_layout(explorer, dpi: int = STATIC_DPI):
    """``(figure size in inches, axes positions in figure fractions)`` that constrained layout gives
    ``explorer``'s defaults figure at ``dpi``, with :data:`LAYOUT_PAD` around each axes; ``None`` if its
    figures have no constrained layout. Solved once per explorer, resolution and process (text widths
    depend a little on the resolution). :meth:`flashbook.explorer.Explorer.png` uses it for figures of the same size and
    number of axes."""
    key = (explorer.name, dpi)
    if key not in _LAYOUTS:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        p = explorer.defaults()
        fig = explorer.draw(explorer.compute(**p), **p)
        engine = fig.get_layout_engine()
        if engine is None or "w_pad" not in engine.get():
            _LAYOUTS[key] = None
        else:
            engine.set(w_pad=LAYOUT_PAD, h_pad=LAYOUT_PAD)
            fig.set_dpi(dpi)
            FigureCanvasAgg(fig).draw()
            _LAYOUTS[key] = (tuple(fig.get_size_inches()), [ax.get_position().bounds for ax in fig.axes])
    return _LAYOUTS[key]


def encode_png(fig, dpi: int, check: bool, compress_level: int | None = None) -> tuple:
    """Draw ``fig`` once at ``dpi`` and encode it (PIL's default zlib level unless ``compress_level``);
    with ``check``, also report whether everything drawn lies inside the canvas (else True).

    ``check="edges"`` is the live path's cheap version (the exact test was a quarter of ``io_vs_N``'s
    update): when the two outermost rows and columns of pixels are still one blank colour, nothing
    sticks out (in a frozen layout, with padding around every axes, a label that grew past the canvas
    edge crosses them); else the exact test decides.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    if fig.dpi != dpi:
        fig.set_dpi(dpi)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    inside = True
    if check == "edges":   # cheap: is the outermost pixel frame still the blank background?
        import numpy as np

        rgba = np.asarray(canvas.buffer_rgba())
        frame = np.concatenate([rgba[:2].reshape(-1, 4), rgba[-2:].reshape(-1, 4), rgba[:, :2].reshape(-1, 4),
                                rgba[:, -2:].reshape(-1, 4)])
        inside = bool((frame == frame[0]).all())
    if (check == "edges" and not inside) or check is True:
        box = fig.get_tightbbox(canvas.get_renderer()).transformed(fig.dpi_scale_trans)
        inside = box.x0 >= -0.5 and box.y0 >= -0.5 and box.x1 <= fig.bbox.x1 + 0.5 and box.y1 <= fig.bbox.y1 + 0.5
    buf = io.BytesIO()
    options = {} if compress_level is None else {"compress_level": compress_level}
    Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
        buf, format="png", **options)
    return buf.getvalue(), inside


def freeze(explorer, fig, dpi: int) -> bool:
    """Put ``fig``'s axes at the explorer's frozen positions (no layout engine); False if the layout does
    not apply (no constrained layout, another size or number of axes)."""
    layout = frozen_layout(explorer, dpi)
    if layout is None or layout[0] != tuple(fig.get_size_inches()) or len(layout[1]) != len(fig.axes):
        return False
    fig.set_layout_engine("none")
    for ax, bounds in zip(fig.axes, layout[1]):
        ax.set_position(bounds)
    return True


def draw_png(explorer, data, params: dict, dpi: int, compress_level: int | None = None) -> tuple:
    """``(figure, PNG bytes, frozen)``: ``explorer.draw(data, **params)`` encoded in the explorer's frozen
    layout; ``frozen`` is False when the figure has its own constrained layout (it did not fit the frozen one)."""
    fig = explorer.draw(data, **params)
    if freeze(explorer, fig, dpi):
        png, inside = encode_png(fig, dpi, True, compress_level)
        if inside:
            return fig, png, True
        fig = explorer.draw(data, **params)
    return fig, encode_png(fig, dpi, False, compress_level)[0], False


def smallest_text(fig) -> float:
    """The size (points) of the smallest visible, non-empty text drawn in ``fig`` (tick labels, titles,
    legends, annotations); draw the figure first (tick labels exist once drawn). ``inf`` if it has none."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())
             and _on_canvas(t)]
    return min(sizes, default=float("inf"))


def _on_canvas(text) -> bool:
    """False for a tick label matplotlib keeps outside the axis' view (it is not drawn)."""
    try:
        x, y = text.get_position()
        tr = text.get_transform()
        px, py = tr.transform((x, y))
    except (TypeError, ValueError):
        return True
    b = text.figure.bbox
    return -1 <= px <= b.x1 + 1 and -1 <= py <= b.y1 + 1
