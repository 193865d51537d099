"""A figure redrawn for the book's dark theme: the same artists and places, its colours turned for a dark panel.

The static players show a second set of frames when the reader's page is dark (``flashbook.player``). Each is the
light frame's figure, laid out and drawn the same way, with every colour passed through :func:`dark_colour`:

- greys (black text and axes, white paper, light shading) swap their lightness: white paper becomes the dark
  panel :data:`PANEL` (the theme's dark surface around outputs), black text becomes the theme's light text
  :data:`INK`, a light grey band a slightly lighter dark grey, so what was faint stays faint;
- pale tints (a filled block's light blue) do the same with their hue kept;
- the data's colours keep their hue and saturation and are lightened where needed until they stand out from the
  panel by :data:`MIN_CONTRAST` (WCAG 2's 3:1 for graphics).

What carries its colour by meaning stays: colour maps (a heatmap, a colour bar: their colours are the data's
scale, and viridis and tab20 read on dark), and what is drawn on a colour-mapped image (a contour and its labels),
and a text written on the bar it labels (gid :data:`flashbook.figures.overlap.ON_DATA`). Nothing moves: the
overlap check and the frozen layout hold for both sets.

Source: WCAG 2.1 (contrast ratio and relative luminance, §1.4.11 non-text contrast); the colours are those of
pydata-sphinx-theme 0.17's dark theme (``--pst-color-on-background``, ``--pst-color-text-base``).
"""
from __future__ import annotations

import colorsys

__all__ = ["PANEL", "INK", "MIN_CONTRAST", "dark_colour", "to_dark", "contrast"]

#: The dark panel a figure and its player sit on (pydata-sphinx-theme's dark ``--pst-color-on-background``).
PANEL = "#222832"
#: The text colour of the dark theme (its ``--pst-color-text-base``): what black becomes.
INK = "#ced6dd"
#: The least contrast a data colour keeps against :data:`PANEL` (WCAG 2.1 §1.4.11: 3:1 for graphics).
MIN_CONTRAST = 3.0

_ON_DATA = "fb-on-data"   # flashbook.figures.overlap.ON_DATA (kept here as a literal: no import across modules)


def _luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB triple in 0..1."""
    def lin(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    """WCAG contrast ratio (1..21) of two colours (any matplotlib colour spec)."""
    from matplotlib.colors import to_rgb

    la, lb = sorted((_luminance(to_rgb(a)), _luminance(to_rgb(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def dark_colour(c):
    """``c`` (a matplotlib colour; alpha kept) turned for the dark panel; ``"none"`` and ``None`` unchanged.

    Greys and pale tints (saturation below 0.25, or lightness above 0.8) swap their lightness between
    :data:`PANEL`'s and :data:`INK`'s; other colours keep hue and saturation and are lightened until their
    contrast with :data:`PANEL` is at least :data:`MIN_CONTRAST`.

    Raises:
        ValueError: ``c`` is not a colour matplotlib knows.
    """
    from matplotlib.colors import to_hex, to_rgb, to_rgba

    if c is None or (isinstance(c, str) and c.lower() == "none"):
        return c
    r, g, b, a = to_rgba(c)
    h, l, s = colorsys.rgb_to_hls(r, g, b)
    lo, hi = colorsys.rgb_to_hls(*to_rgb(PANEL))[1], colorsys.rgb_to_hls(*to_rgb(INK))[1]
    if s < 0.25:
        # a grey: paper (1) -> the panel, ink (0) -> the dark theme's ink, in between along the line joining them
        p, k = to_rgb(PANEL), to_rgb(INK)
        rgb = tuple(pc + (1 - l) * (kc - pc) for pc, kc in zip(p, k))
    elif l > 0.8:
        # a pale tint: the same swap of lightness, its hue and saturation kept
        rgb = colorsys.hls_to_rgb(h, lo + (1 - l) * (hi - lo), s)
    else:
        rgb = (r, g, b)
        while contrast(rgb, PANEL) < MIN_CONTRAST and l < 0.95:
            l = min(0.95, l + 0.03)
            rgb = colorsys.hls_to_rgb(h, l, s)
    return to_hex((*rgb, a), keep_alpha=True) if a < 1 else to_hex(rgb)


def _turn(getter, setter):
    """Set a colour property to its dark twin (a single colour or an array of them)."""
    import numpy as np

    value = getter()
    if value is None or (isinstance(value, str) and value in ("none", "auto", "face", "inherit")):
        return
    arr = np.asarray(value, dtype=object) if not isinstance(value, str) else None
    if arr is not None and arr.ndim == 2:          # an (n, 4) array of RGBA rows: a collection's colours
        rows = np.asarray(value, dtype=float)
        if rows.size:
            setter([dark_colour(tuple(row)) for row in rows])
        return
    setter(dark_colour(value))


def _mapped(artist) -> bool:
    """An artist whose colours come from a colour map (an image, a mesh, a coloured collection)."""
    return getattr(artist, "get_array", None) is not None and artist.get_array() is not None


def _text(t) -> None:
    if t.get_gid() == _ON_DATA:
        return
    _turn(t.get_color, t.set_color)
    box = t.get_bbox_patch()
    if box is not None:
        _patch(box)
    arrow = getattr(t, "arrow_patch", None)
    if arrow is not None:
        _patch(arrow)


def _patch(p) -> None:
    _turn(p.get_facecolor, p.set_facecolor)
    _turn(p.get_edgecolor, p.set_edgecolor)


def _line(line) -> None:
    _turn(line.get_color, line.set_color)
    for get, put in ((line.get_markerfacecolor, line.set_markerfacecolor),
                     (line.get_markeredgecolor, line.set_markeredgecolor),
                     (line.get_markerfacecoloralt, line.set_markerfacecoloralt)):
        _turn(get, put)


def _axis(axis) -> None:
    """Tick marks, tick labels, grid lines and the label of one axis (and the ticks it makes later, at another
    locator's positions: the axis' tick parameters)."""
    ticks = axis.get_major_ticks()
    for tick in ticks + axis.get_minor_ticks():
        _line(tick.gridline)
    if ticks:
        axis.set_tick_params(which="both", color=dark_colour(ticks[0].tick1line.get_color()),
                             labelcolor=dark_colour(ticks[0].label1.get_color()))
    _text(axis.label)
    _text(axis.get_offset_text())


def _legend(leg) -> None:
    _patch(leg.get_frame())
    for t in leg.get_texts():
        _text(t)
    _text(leg.get_title())
    for h in getattr(leg, "legend_handles", []) or []:
        _artist(h)


def _artist(a) -> None:
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    if isinstance(a, Line2D):
        _line(a)
    elif isinstance(a, Text):
        _text(a)
    elif isinstance(a, Patch):
        _patch(a)
    elif isinstance(a, Collection) and not _mapped(a):
        _turn(a.get_facecolor, a.set_facecolor)
        _turn(a.get_edgecolor, a.set_edgecolor)


def to_dark(fig) -> None:
    """Turn every colour of ``fig`` (a drawn or undrawn matplotlib Figure) for the dark panel, in place: its
    paper, axes, spines, ticks, grid, text, legends, lines, patches and collections (see the module's docstring
    for what keeps its colour). Draw (or encode) the figure afterwards.

    Raises:
        TypeError: ``fig`` is not a matplotlib Figure.
    """
    from matplotlib.contour import ContourSet
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"to_dark needs a matplotlib Figure, got {type(fig).__name__}")
    fig.patch.set_facecolor(PANEL)
    fig.patch.set_edgecolor(PANEL)
    for ax in fig.axes:
        _patch(ax.patch)
        for spine in ax.spines.values():
            _turn(spine.get_edgecolor, spine.set_edgecolor)
        _axis(ax.xaxis)
        _axis(ax.yaxis)
        # a contour's labels keep the colour their contour keeps (it is drawn on a colour map)
        kept = {id(t) for c in ax.collections if isinstance(c, ContourSet) for t in (c.labelTexts or [])}
        for child in ax.get_children():
            if child in (ax.patch, ax.xaxis, ax.yaxis) or child in ax.spines.values() or id(child) in kept:
                continue
            if child is ax.legend_:
                _legend(child)
            else:
                _artist(child)
    for t in fig.texts:
        _text(t)
    for leg in fig.legends:
        _legend(leg)
