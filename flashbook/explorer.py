"""The explorer model and its registry: one interactive figure is an :class:`flashbook.explorer.Explorer` over :class:`flashbook.explorer.Slider` controls.

An explorer is a numpy-only ``compute(**params)`` (the model, from ``labcore``), its figure, and a
tuple of slider objects whose values are valid by construction. The figure is given as a ``setup(**params)``
(figure, axes, fixed labels and scales) and a ``content(fig, data, **params)`` (the data's artists, varying
titles, legends): ``draw`` is the one then the other, and the live kernel's in-place update
(:meth:`Explorer.update`) is derived, the content cleared and drawn again. An explorer may give a whole
``draw(data, **params)`` instead (then every move draws a new figure). The figure modules
(``FIGURE_MODULES``, under ``flashbook.figures``) :func:`flashbook.explorer.register` theirs;
:func:`flashbook.explorer.get_explorer` finds one by name. ``flashbook.display.show`` puts one in a page.
"""
from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from .drawing import STATIC_DPI, draw_png

__all__ = ["Slider", "Explorer", "settings_key", "EXPLORERS", "FIGURE_MODULES", "register", "get_explorer",
           "all_explorers", "remember_setup", "layout_of", "clear_content"]


@dataclass(frozen=True)
class Slider:
    """One control.

    Args:
        name: the keyword passed to ``compute``/``draw``.
        values: the discrete values the static book precomputes (tuple; numbers, strings or bools).
        default: initial value; must be one of ``values``.
        label: text shown beside the control (defaults to ``name``).
        live: optional denser tuple of values offered in a live kernel (defaults to ``values``).
        fmt: format spec for numbers in the label (e.g. ``",d"`` or ``".2f"``), or a callable value -> str
            (e.g. a ``labcore.units`` formatter, so a byte size is written in the one vocabulary).
    """

    name: str
    values: tuple
    default: Any
    label: str | None = None
    live: tuple | None = None
    fmt: Any = ""

    def __post_init__(self):
        if not self.values:
            raise ValueError(f"slider {self.name!r} needs at least one value")
        if self.default not in self.values:
            raise ValueError(f"slider {self.name!r}: default {self.default!r} is not among values {self.values!r}")
        if self.live is not None and self.default not in self.live:
            raise ValueError(f"slider {self.name!r}: default {self.default!r} is not among live values")

    @property
    def text(self) -> str:
        return self.label or self.name

    def show_value(self, v) -> str:
        if isinstance(v, bool) or isinstance(v, str):
            return str(v)
        if callable(self.fmt):          # e.g. a labcore.units formatter: the one vocabulary of units
            return self.fmt(v)
        try:
            return format(v, self.fmt)
        except (TypeError, ValueError):
            return str(v)

    @property
    def live_values(self) -> tuple:
        return tuple(self.live) if self.live is not None else tuple(self.values)

    def value_label(self, v) -> str:
        """How value ``v`` is written beside the control and in the figure's description: "on"/"off" for a
        switch (a slider of bools), else ``show_value(v)`` (the slider's ``fmt``)."""
        if all(isinstance(x, bool) for x in self.values):
            return "on" if v else "off"
        return self.show_value(v)


@dataclass(frozen=True)
class Explorer:
    """An interactive figure: ``compute(**params) -> data``, then ``draw(data, **params) -> Figure``.

    ``compute`` must be numpy-only (it is what a slider move costs in model time; ``make bench`` times
    it separately from ``draw``). Every combination of slider values must be valid.

    The figure, either way:

    - ``setup(**params) -> Figure`` and ``content(fig, data, **params)``: the set-up builds the figure, its
      axes and what does not depend on the data (fixed labels, scales, limits; no artists that take a colour
      from the axes' cycle); the content draws the data's artists, the varying titles and legends into it.
      ``draw`` is set-up then content. A live kernel shows another setting by :meth:`update`: the content
      cleared (:func:`clear_content`) and drawn again into the same figure, which saves
      building the figure, its axes and tick artists. ``layout_key(**params)`` (optional) names what the
      set-up depends on (say the number of panels): the figure is reused only while it is unchanged.
    - or ``draw(data, **params) -> Figure`` alone: every setting is a new figure.

    Raises:
        TypeError: neither ``draw`` nor both ``setup`` and ``content``, or ``draw`` with them, or a
            ``layout_key`` without them.
    """

    name: str
    compute: Callable[..., Any]
    draw: Callable[..., Any] | None = None
    sliders: tuple = ()
    caption: str = ""
    fixed: dict = field(default_factory=dict)
    setup: Callable[..., Any] | None = None
    content: Callable[..., Any] | None = None
    layout_key: Callable[..., Any] | None = None

    def __post_init__(self):
        split = (self.setup is not None, self.content is not None)
        if split == (True, True) and self.draw is None:
            object.__setattr__(self, "draw", self._setup_and_content)
        elif split != (False, False) or self.draw is None:
            raise TypeError(f"explorer {self.name!r}: give draw, or setup and content (not both)")
        elif self.layout_key is not None:
            raise TypeError(f"explorer {self.name!r}: layout_key needs setup and content")

    def _layout(self, params: dict):
        return None if self.layout_key is None else self.layout_key(**params)

    def _setup_and_content(self, data, **params):
        fig = self.setup(**params)
        remember_setup(fig, self._layout(params))
        self.content(fig, data, **params)
        return fig

    def update(self, fig, data, **params) -> bool:
        """Show ``data`` (from ``compute(**params)``) in ``fig``, a figure this explorer drew at another
        setting, in place: its content cleared and drawn again. False (``fig`` untouched) when the explorer
        has no set-up/content split or ``params`` need another set-up (another ``layout_key``)."""
        if self.content is None or layout_of(fig) != self._layout(params):
            return False
        clear_content(fig)
        self.content(fig, data, **params)
        return True

    def describe(self, params: dict, *, live: bool = False) -> str:
        """The figure's text alternative at setting ``params``: its caption (else its name), then
        "Shown: " and each control that can move (more than one static value; with ``live``, more than one
        live value) with its value label: the static player's ``alt``, and in a live kernel the hidden live
        region after the image (``flashbook.display``) that a screen reader reads and announces on each move.

        Raises:
            KeyError: ``params`` lacks a slider's value.
        """
        shown = [f"{s.text} {s.value_label(params[s.name])}" for s in self.sliders
                 if len(s.live_values if live else s.values) > 1]
        return self.title + (f" Shown: {', '.join(shown)}." if shown else "")

    @property
    def title(self) -> str:
        """The caption, else the name in words (``decode_splits`` -> "decode splits")."""
        return self.caption or self.name.replace("_", " ")

    def defaults(self) -> dict:
        """The parameter dict at every slider's default (plus ``fixed``)."""
        return {**self.fixed, **{s.name: s.default for s in self.sliders}}

    def figure(self, **params):
        """Compute and draw at ``params`` (missing ones take their defaults); returns the Figure."""
        p = {**self.defaults(), **params}
        return self.draw(self.compute(**p), **p)

    def grid(self):
        """Every combination of the sliders' static ``values`` as parameter dicts."""
        names = [s.name for s in self.sliders]
        for combo in itertools.product(*(s.values for s in self.sliders)):
            yield {**self.fixed, **dict(zip(names, combo))}

    def corners(self):
        """Every combination of the first and last *live* value of each slider (for sweep tests)."""
        names = [s.name for s in self.sliders]
        ends = [tuple(dict.fromkeys((s.live_values[0], s.live_values[-1]))) for s in self.sliders]
        for combo in itertools.product(*ends):
            yield {**self.fixed, **dict(zip(names, combo))}

    def neighbours(self, params: dict, moved: tuple | None = None) -> list[dict]:
        """The settings a reader is likely to pick next from ``params``, likeliest first (live values).

        ``moved`` is ``(slider name, +1 or -1)``, the reader's last step. Its next step in the same
        direction comes first, then the step back and a second step on; then one step either way of
        every other control. A value not among a control's live values has no neighbours on it.
        """
        order = sorted(self.sliders, key=lambda s: moved is None or s.name != moved[0])
        out, seen = [], {settings_key(params)}
        for s in order:
            vals = s.live_values
            if params.get(s.name) not in vals:
                continue
            i = vals.index(params[s.name])
            d = moved[1] if moved is not None and s.name == moved[0] else 1
            steps = (d, -d, 2 * d) if moved is not None and s.name == moved[0] else (d, -d)
            for k in steps:
                if 0 <= i + k < len(vals):
                    q = {**params, s.name: vals[i + k]}
                    if settings_key(q) not in seen:
                        seen.add(settings_key(q))
                        out.append(q)
        return out

    def n_frames(self) -> int:
        n = 1
        for s in self.sliders:
            n *= len(s.values)
        return n

    def png(self, data, params: dict, *, dpi: int = STATIC_DPI) -> bytes:
        """Draw ``data`` (from ``compute(**params)``) and return the PNG bytes, in the explorer's frozen layout.

        Every figure of one explorer uses the axes positions that constrained layout chose for its
        defaults (with extra padding; see :func:`flashbook.drawing.frozen_layout`): the axes stay put while a slider
        moves, and the layout is not solved again on every update (that costs about as much as the
        drawing). A figure whose labels would stick out of the canvas in that layout (a longer title at
        some setting) is drawn again with its own constrained layout instead, so nothing is ever clipped.
        """
        return draw_png(self, data, params, dpi)[1]


def settings_key(params: dict) -> tuple:
    """A hashable key of a full setting (parameter name -> value)."""
    return tuple(sorted(params.items()))


#: Modules under ``flashbook.figures`` that define explorers; imported on demand by :func:`all_explorers`.
FIGURE_MODULES = ["softmax", "flash", "precision", "prefill", "scheduling", "decode", "decode_scheduling", "fusion",
                  "megakernel"]

EXPLORERS: dict[str, Explorer] = {}


def register(explorer: Explorer) -> Explorer:
    """Add ``explorer`` to the registry (names are unique) and return it; raises ValueError on a second
    explorer of the same name."""
    if explorer.name in EXPLORERS and EXPLORERS[explorer.name] is not explorer:
        raise ValueError(f"an explorer named {explorer.name!r} is already registered")
    EXPLORERS[explorer.name] = explorer
    return explorer


def all_explorers() -> dict[str, Explorer]:
    """Import every figure module of :data:`FIGURE_MODULES` and return the full registry."""
    for mod in FIGURE_MODULES:
        importlib.import_module(f"flashbook.figures.{mod}")
    return dict(EXPLORERS)


def get_explorer(name: str) -> Explorer:
    """Look up a registered explorer by name; raises ValueError listing the known ones."""
    reg = all_explorers()
    if name not in reg:
        raise ValueError(f"unknown explorer {name!r}; known: {', '.join(sorted(reg))}")
    return reg[name]


# -----------------------------------------------------------------------------------------------------------------
# The set-up/content split an explorer's live update rests on: what the set-up drew is remembered, the rest cleared
# -----------------------------------------------------------------------------------------------------------------

def remember_setup(fig, layout=None) -> None:
    """Record what ``fig``'s set-up drew (called between an explorer's ``setup`` and its ``content``), so that
    :func:`clear_content` can later take the content away and leave the set-up.

    Per axes: its artists, containers, legend, titles and autoscaling flags; per figure: its texts and
    legends, and ``layout`` (the explorer's ``layout_key`` at the set-up's parameters, see :func:`layout_of`).
    A colorbar's axes is left to its Colorbar, which redraws its own artists when pointed at a new
    mappable (:func:`flashbook.figures.base.colorbar`).
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
        raise ValueError("this figure's set-up was not recorded (flashbook.explorer.remember_setup)")
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
