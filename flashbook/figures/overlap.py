"""Does a drawn figure hide its own data? Text that covers plotted data or other text, found in a drawn figure.

:func:`find_overlaps` reads a figure that has been drawn (its text has a place on the canvas then) and lists
every place where

- two pieces of text overlap (tick labels that run into each other, a contour label on another, a title on a
  legend): every visible, non-empty text of the figure, a legend counted as one box;
- a legend, or a text placed in an axes (an annotation, a contour label), covers that axes' plotted data: a line
  (its segments, its markers), a bar or other patch, a filled area, a scatter's points, a line collection, and
  for a legend also an image or a colour mesh;
- an axes' title is smaller than its tick labels (a title is read first; it must not be the smallest text).

What is not data: a band that spans the whole height or width of its axes (``axvspan``/``axhspan``, shading
behind the data), the axes' own grid, spines and ticks. A text that labels the very thing it sits on (a value
written inside its bar) says so with the gid :data:`ON_DATA`; such a text is still checked against other text.

Geometry, not pixels: each text's box is its drawn extent (matplotlib's ``get_window_extent``) shrunk by
:data:`SLACK_PT` on every side (the extent includes the font's line spacing, which covers nothing), each line
is its path in display coordinates clipped to its axes. Source: this book's presentation layer (no paper).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Overlap", "find_overlaps", "legend_below", "ON_DATA", "SLACK_PT"]

#: The gid of a text that is meant to sit on the data it labels (a count written inside its bar).
ON_DATA = "fb-on-data"

#: Points taken off each side of a text's drawn extent before it is compared (the extent includes the
#: line's leading and the descenders' room; two labels that only share that room do not touch).
SLACK_PT = 1.0


@dataclass(frozen=True)
class Overlap:
    """One place where a figure hides its data or its text.

    Attributes:
        kind: ``"text/text"``, ``"text/data"`` or ``"title size"``.
        what: the text (or legend) that covers, in words (``"legend"``, ``"tick label '64-127'"``).
        covers: what it covers, in words (``"tick label '128-255'"``, ``"line 'model: FA2'"``).
        axes: the index of the axes in ``fig.axes`` (None for figure-level text).
    """

    kind: str
    what: str
    covers: str
    axes: int | None

    def __str__(self):
        where = "" if self.axes is None else f"axes {self.axes}: "
        return f"{where}{self.kind}: {self.what} covers {self.covers}"


def _renderer(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    return canvas.get_renderer()


def _shrunk(bbox, px: float):
    from matplotlib.transforms import Bbox

    x0, y0, x1, y1 = bbox.x0 + px, bbox.y0 + px, bbox.x1 - px, bbox.y1 - px
    if x1 <= x0 or y1 <= y0:
        return None
    return Bbox([[x0, y0], [x1, y1]])


def _name(text) -> str:
    s = " ".join(text.get_text().split())
    return repr(s if len(s) <= 40 else s[:37] + "...")


def _visible(artist) -> bool:
    a = artist
    while a is not None:
        if not a.get_visible():
            return False
        a = getattr(a, "axes", None) if a is not getattr(a, "axes", None) else None
    return True


def _tick_labels(axis):
    """The tick labels ``axis`` draws (the ticks in its view), each a visible, non-empty Text."""
    lo, hi = sorted(axis.get_view_interval())
    eps = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    out = []
    # as Axis.draw does: the first len(locs) ticks carry the locator's current positions; only those inside the
    # view interval are drawn
    for locs, ticks in ((axis.get_majorticklocs(), axis.get_major_ticks), (axis.get_minorticklocs(), axis.get_minor_ticks)):
        for loc, t in zip(locs, ticks(len(locs))):
            if not lo - eps <= loc <= hi + eps:
                continue
            for lab in (t.label1, t.label2):
                if lab.get_visible() and lab.get_text().strip():
                    out.append(lab)
    return out


def _titles(ax):
    """``ax``'s three titles (left, centre, right): the Text children that are neither its texts nor its axes'."""
    from matplotlib.text import Text

    other = {id(t) for t in ax.texts} | {id(ax.xaxis.label), id(ax.yaxis.label)}
    return [c for c in ax.get_children() if isinstance(c, Text) and id(c) not in other]


def _texts(fig, renderer):
    """``(item, kind, axes index or None, box, name, on_data)`` for every text the figure shows; a legend is one
    item (its frame's box, or its content's when it has no frame)."""
    from matplotlib.legend import Legend
    from matplotlib.text import Text

    items = []
    index = {ax: i for i, ax in enumerate(fig.axes)}
    slack = SLACK_PT * fig.dpi / 72

    def add(artist, kind, ax, label):
        if not artist.get_visible() or (ax is not None and not ax.get_visible()):
            return
        if isinstance(artist, Text) and not artist.get_text().strip():
            return
        box = artist.get_window_extent(renderer)
        box = _shrunk(box, slack) if isinstance(artist, Text) else box
        if box is None or box.width <= 0 or box.height <= 0:
            return
        items.append((artist, kind, None if ax is None else index[ax], box, label,
                      isinstance(artist, Text) and artist.get_gid() == ON_DATA))

    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            if not axis.get_visible():
                continue
            for lab in _tick_labels(axis):
                add(lab, "tick", ax, f"{which} tick label {_name(lab)}")
            add(axis.label, "label", ax, f"{which} axis label {_name(axis.label)}")
            add(axis.offsetText, "label", ax, f"{which} offset text {_name(axis.offsetText)}")
        for t in _titles(ax):
            add(t, "title", ax, f"title {_name(t)}")
        labels = {id(t) for coll in ax.collections for t in (getattr(coll, "labelTexts", None) or [])}
        for t in ax.texts:   # annotations, free texts and a contour's labels (matplotlib adds them as texts)
            add(t, "text", ax, f"{'contour label' if id(t) in labels else 'text'} {_name(t)}")
        if ax.legend_ is not None:
            add(ax.legend_, "legend", ax, "legend")
    suptitle = getattr(fig, "_suptitle", None)
    for t in fig.texts:   # the suptitle is one of them
        if t is suptitle:
            add(t, "title", None, f"suptitle {_name(t)}")
        else:
            add(t, "text", None, f"figure text {_name(t)}")
    for leg in fig.legends:
        if isinstance(leg, Legend):
            add(leg, "legend", None, "figure legend")
    return items


def _intersect(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _segments_hit(xy, box) -> bool:
    """Whether the polyline ``xy`` (display coordinates, (n, 2), NaN breaks it) crosses or enters ``box``."""
    import numpy as np

    if len(xy) == 0:
        return False
    p, q = xy[:-1], xy[1:]
    ok = np.isfinite(p).all(axis=1) & np.isfinite(q).all(axis=1)
    p, q = p[ok], q[ok]
    if len(xy) and np.isfinite(xy).all(axis=1).any():
        pts = xy[np.isfinite(xy).all(axis=1)]
        inside = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1))
        if inside.any():
            return True
    if not len(p):
        return False
    # Liang-Barsky clipping of every segment against the box, vectorised: a segment hits when its clipped part
    # is not empty
    d = q - p
    t0, t1 = np.zeros(len(p)), np.ones(len(p))
    hit = np.ones(len(p), dtype=bool)
    for pk, qk in ((-d[:, 0], p[:, 0] - box.x0), (d[:, 0], box.x1 - p[:, 0]),
                   (-d[:, 1], p[:, 1] - box.y0), (d[:, 1], box.y1 - p[:, 1])):
        parallel = pk == 0
        hit &= ~(parallel & (qk < 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(parallel, 0.0, qk / np.where(parallel, 1.0, pk))
        t0 = np.where(~parallel & (pk < 0), np.maximum(t0, r), t0)
        t1 = np.where(~parallel & (pk > 0), np.minimum(t1, r), t1)
    return bool((hit & (t0 < t1)).any())


def _clip(box, clip):
    """``box`` cut to ``clip`` (None when nothing is left)."""
    from matplotlib.transforms import Bbox

    if clip is None:
        return box
    b = Bbox.intersection(box, clip)
    return b if b is not None and b.width > 0 and b.height > 0 else None


def _is_band(extent, axbox) -> bool:
    """A patch or collection that spans its axes' whole height or width: a shaded band behind the data."""
    tol = 1.0
    return ((extent.y0 <= axbox.y0 + tol and extent.y1 >= axbox.y1 - tol)
            or (extent.x0 <= axbox.x0 + tol and extent.x1 >= axbox.x1 - tol))


def _data_label(artist, kind: str) -> str:
    lab = artist.get_label() if hasattr(artist, "get_label") else ""
    return f"{kind} {lab!r}" if lab and not lab.startswith("_") else kind


def _data_hits(ax, box, renderer, legend: bool, own=None):
    """Names of ``ax``'s data artists that ``box`` (display coordinates) covers. ``legend``: the box is a
    legend (images and colour meshes count as data then; a text on a heatmap is how heatmaps are labelled).
    ``own``: a ContourSet whose own labels these are (its lines are where its labels belong)."""
    import numpy as np
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection, QuadMesh
    from matplotlib.contour import ContourSet
    from matplotlib.image import AxesImage
    from matplotlib.patches import Patch

    axbox = ax.get_window_extent(renderer)
    box = _clip(box, axbox)
    if box is None:
        return []
    hits = []
    for line in ax.lines:
        if not _visible(line):
            continue
        path = line.get_transform().transform_path(line.get_path())
        xy = path.vertices
        lw = line.get_linewidth() * ax.figure.dpi / 72 / 2
        grown = box.expanded(1, 1).padded(lw) if lw else box
        if line.get_linestyle() not in ("None", "none", "", " ") and _segments_hit(xy, grown):
            hits.append(_data_label(line, "line"))
            continue
        marker = line.get_marker()
        if marker not in (None, "None", "none", "", " "):
            r = line.get_markersize() * ax.figure.dpi / 72 / 2
            pts = xy[np.isfinite(xy).all(axis=1)]
            inside = ((pts[:, 0] > box.x0 - r) & (pts[:, 0] < box.x1 + r) & (pts[:, 1] > box.y0 - r)
                      & (pts[:, 1] < box.y1 + r))
            if inside.any():
                hits.append(_data_label(line, "markers"))
    for patch in ax.patches:
        if not _visible(patch) or not isinstance(patch, Patch):
            continue
        ext = patch.get_window_extent(renderer)
        if _is_band(ext, axbox):
            continue
        path = patch.get_transform().transform_path(patch.get_path())
        from matplotlib.transforms import Bbox as _B

        if _intersect(ext, box) and path.intersects_bbox(_B(box.get_points()), filled=patch.get_fill()):
            hits.append(_data_label(patch, "patch"))
    for coll in ax.collections:
        if not _visible(coll) or coll is own:
            continue
        if isinstance(coll, (QuadMesh,)) or (isinstance(coll, ContourSet) and coll.filled):
            if legend and _intersect(coll.get_window_extent(renderer), box):
                hits.append(_data_label(coll, "colour mesh"))
            continue
        if isinstance(coll, ContourSet):
            for path in coll.get_paths():
                xy = coll.get_transform().transform(path.vertices) if len(path.vertices) else path.vertices
                if _segments_hit(xy, box):
                    hits.append(_data_label(coll, "contour"))
                    break
            continue
        if isinstance(coll, PathCollection):
            offsets = coll.get_offset_transform().transform(coll.get_offsets())
            sizes = coll.get_sizes()
            r = (np.sqrt(sizes.max()) if len(sizes) else 6.0) * ax.figure.dpi / 72 / 2
            inside = ((offsets[:, 0] > box.x0 - r) & (offsets[:, 0] < box.x1 + r) & (offsets[:, 1] > box.y0 - r)
                      & (offsets[:, 1] < box.y1 + r))
            if inside.any():
                hits.append(_data_label(coll, "points"))
            continue
        if isinstance(coll, (PolyCollection, LineCollection)):
            tr = coll.get_transform()
            filled = isinstance(coll, PolyCollection)
            for path in coll.get_paths():
                p = tr.transform_path(path)
                ext = p.get_extents()
                if filled and _is_band(ext, axbox):
                    continue
                from matplotlib.transforms import Bbox as _B

                if filled and p.intersects_bbox(_B(box.get_points()), filled=True):
                    hits.append(_data_label(coll, "area"))
                    break
                if not filled and _segments_hit(p.vertices, box):
                    hits.append(_data_label(coll, "lines"))
                    break
            continue
    if legend:
        for im in ax.images:
            if isinstance(im, AxesImage) and _visible(im) and _intersect(im.get_window_extent(renderer), box):
                hits.append(_data_label(im, "image"))
    return list(dict.fromkeys(hits))


def find_overlaps(fig) -> list[Overlap]:
    """Every overlap of text with text or with plotted data in ``fig`` (see the module's docstring), and every
    axes whose title is smaller than its tick labels; an empty list when the figure hides nothing.

    Args:
        fig: a matplotlib Figure; drawn here on an Agg canvas if it was not (its layout as drawing leaves it:
            call it on the figure the book encodes, e.g. from :func:`flashbook.drawing.draw_png`).
    Returns:
        list of :class:`Overlap`, in the order found.
    Raises:
        TypeError: ``fig`` is not a matplotlib Figure.
    """
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"find_overlaps needs a matplotlib Figure, got {type(fig).__name__}")
    renderer = _renderer(fig)
    fig.canvas.draw()          # tick labels and contour labels exist, and text has its place, once drawn
    items = _texts(fig, renderer)
    found: list[Overlap] = []
    inside_legend = set()
    for art, kind, *_ in items:
        if kind == "legend":
            inside_legend.update(id(t) for t in art.get_texts())
            inside_legend.add(id(art.get_title()))
    items = [it for it in items if id(it[0]) not in inside_legend]
    for i, (a, ka, ia, ba, na, _) in enumerate(items):
        for b, kb, ib, bb, nb, _ in items[i + 1:]:
            if _intersect(ba, bb):
                found.append(Overlap("text/text", na, nb, ia if ia == ib else None))
    for art, kind, ia, box, name, on_data in items:
        if kind not in ("legend", "text") or on_data:
            continue
        axes = [fig.axes[ia]] if ia is not None else [ax for ax in fig.axes if ax.get_visible()]
        for ax in axes:
            own = next((c for c in ax.collections if art in (getattr(c, "labelTexts", None) or [])), None)
            for hit in _data_hits(ax, box, renderer, legend=kind == "legend", own=own):
                found.append(Overlap("text/data", name, hit, fig.axes.index(ax)))
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        ticks = [t.get_fontsize() for axis in (ax.xaxis, ax.yaxis) if axis.get_visible() for t in _tick_labels(axis)]
        for t in _titles(ax):
            if t.get_visible() and t.get_text().strip() and ticks and t.get_fontsize() < max(ticks):
                found.append(Overlap("title size", f"title {_name(t)} ({t.get_fontsize():g} pt)",
                                     f"tick labels of {max(ticks):g} pt", i))
    return found


def legend_below(fig, axes=None, *, ncols: int = 1, **kw):
    """A legend that covers nothing: the figure's, under its lowest axes and x-axis label, where the figure's
    constrained layout makes room for it (matplotlib's ``loc="outside lower center"``). Its entries are the
    labelled artists of ``axes`` (one axes or a sequence; default: every axes of ``fig``), in order.

    Args:
        fig: a matplotlib Figure with constrained layout (``flashbook.figures.base.new_figure`` makes them so).
        axes: where the labelled artists are.
        ncols: legend columns; ``kw`` goes to ``fig.legend`` (``fontsize`` defaults to 9 pt, no frame).
    Returns:
        the Legend, or None when no artist has a label.
    """
    axes = fig.axes if axes is None else ([axes] if not isinstance(axes, (list, tuple)) else axes)
    handles, labels = [], []
    for ax in axes:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    if not handles:
        return None
    kw = {"fontsize": 9, "frameon": False, "columnspacing": 1.0, "handlelength": 1.6, **kw}
    return fig.legend(handles, labels, loc="outside lower center", ncols=ncols, **kw)
