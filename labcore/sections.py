"""Where the book explains each public ``labcore`` name (the API reference links back through this).

``SECTIONS`` maps a public name to the book page that explains it: the page's path in ``_toc.yml``
(e.g. ``"book/02_io_awareness"``), or ``None`` for a helper that no section discusses on its own.
The API reference (``book/api.md``, rendered by ``book/_ext/flashbook_api.py``) prints "Explained in
<section>" under each entry, and ``tests/test_sections.py`` checks that every public name has an entry
and that every page named here is in the table of contents.

Names: a top-level name (``"reference_attention"``, also reachable as ``labcore.reference_attention``)
or, for the presentation layer, the dotted path below ``labcore`` (``"widgets.show"``,
``"plots.get_explorer"``). In the other direction a section links to a function with the MyST role
``{py:func}`` applied to ``labcore.reference_attention`` (``:func:`` in docstrings).
When you add a public function, add one line here.
"""
from __future__ import annotations

__all__ = ["SECTIONS", "section_for"]

_S1 = "book/01_bottlenecks"
_S2 = "book/02_io_awareness"
_S3 = "book/03_online_softmax"

#: Public name -> book page that explains it (path as in ``_toc.yml``), or None.
SECTIONS: dict[str, str | None] = {
    # labcore.hardware
    "GPU": _S1,
    "GPUS": _S1,
    "get_gpu": _S1,
    # labcore.hbm
    "Ledger": _S2,
    "standard_attention_io": _S2,
    # labcore.attention
    "reference_attention": _S2,
    "standard_attention": _S2,
    "masked_scores": _S2,
    "row_softmax": _S3,
    # labcore.sections
    "SECTIONS": None,
    "section_for": None,
    # presentation layer (labcore.widgets, labcore.plots)
    "widgets.Slider": None,
    "widgets.Explorer": None,
    "widgets.show": None,
    "widgets.static_mode": None,
    "widgets.MAX_FRAMES": None,
    "plots.EXPLORERS": None,
    "plots.register": None,
    "plots.get_explorer": None,
    "plots.all_explorers": None,
    "plots.new_figure": None,
    "plots.SECTION_MODULES": None,
}


def section_for(name: str) -> str | None:
    """The book page (path as in ``_toc.yml``) that explains the public name ``name``, or None.

    Args:
        name: a key of :data:`SECTIONS`, e.g. ``"reference_attention"`` or ``"widgets.show"``; a leading
            ``"labcore."`` is accepted and ignored.
    Returns:
        The page path, e.g. ``"book/02_io_awareness"``, or None for a name no section explains.
    Raises:
        TypeError: ``name`` is not a string. ValueError: ``name`` is not a public labcore name in
        :data:`SECTIONS`.
    Source:
        d2l.ai's API appendix (each function links to the section that introduces it).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string such as 'reference_attention', got {type(name).__name__}")
    key = name[len("labcore."):] if name.startswith("labcore.") else name
    if key not in SECTIONS:
        raise ValueError(f"name {name!r} is not a public labcore name listed in labcore.SECTIONS")
    return SECTIONS[key]
