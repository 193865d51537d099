"""Where the book explains each public ``labcore`` name (the API reference links back through this).

:func:`section_for` maps a public name to the book page that explains it: the page's path in ``_toc.yml``
(e.g. ``"book/02_io_awareness"``), or ``None`` for plumbing that no section discusses. The rule is
"the section of its module" (:data:`MODULE_PAGES`), refined per name in :data:`SECTIONS` where a module
serves several sections (the backward pass in §5, fusion in §7, ...). The API reference
(``book/api.md``, rendered by ``book/_ext/flashbook_api.py``) prints "Explained in <section>" under each
entry; ``tests/test_sections.py`` checks that every public name resolves and that every page exists.

Names: a top-level name (``"reference_attention"``) or, for the presentation layer, the dotted path below
``labcore`` (``"display.show"``, ``"figures.decode.splits_figure"``, ``"sections.section_for"``). This module is
presentation too: import it as ``flashbook.sections``; ``import labcore`` does not re-export its names. In the other direction a section links
to a function with the MyST role ``{py:func}`` applied to ``labcore.reference_attention``.
"""
from __future__ import annotations

__all__ = ["SECTIONS", "MODULE_PAGES", "section_for", "toc_pages"]

_S1, _S2, _S3 = "book/01_bottlenecks", "book/02_io_awareness", "book/03_online_softmax"
_S4, _S5, _S6 = "book/04_flash_forward", "book/05_flash_backward", "book/06_flash_decoding"
_S7, _S8, _S12 = "book/07_fusion", "book/08_megakernel", "book/12_exercises"
_S4B = "book/04b_what_limits"
_LABS = "book/labs/index"

#: labcore module (path below ``labcore``) -> the page that explains its names by default.
MODULE_PAGES: dict[str, str | None] = {
    "hardware": _S1, "hbm": _S2, "attention": _S2, "softmax": _S3, "flops": _S3, "precision": _S3,
    "flash": _S4, "decode": _S6, "decode_model": _S6, "models": _S8, "megakernel": _S8, "waves": _S8, "units": "book/intro", "exercises": _S12,
    "figures.softmax": _S3, "figures.flash": _S4, "figures.decode": _S6, "figures.fusion": _S7, "figures.megakernel": _S8,
    "prefill": _S4B, "published": _S4B, "figures.prefill": _S4B,
    "sections": None, "figures": None, "figures.base": None, "mode": None, "drawing": None, "explorer": None,
    "live": None, "player": None, "prefetch": None, "display": None,
    "fp8": _S4, "figures.precision": _S4,
    "chip": _LABS, "chip.hbm_tensor": _LABS, "chip.sram": _LABS, "chip.tile": _LABS, "chip.cta": _LABS,
    "chip.grid": _LABS, "chip.cost": _LABS,
    "labs": _LABS, "labs.definitions": _LABS, "labs.grader": _LABS, "labs.report": _LABS, "labs.figures": _LABS,
    "labs.steps": _LABS, "labs.kernels_forward": _LABS, "labs.kernels_backward": _LABS, "labs.kernels_decode": _LABS,
}

#: Per-name exceptions to :data:`MODULE_PAGES` (public name -> page or None).
SECTIONS: dict[str, str | None] = {
    "GPU": _S1, "GPUS": _S1, "get_gpu": _S1, "gpu_table": _S1, "score_to_input_ratio": _S1, "roofline_time": _S1,
    "figures.softmax.roofline_data": _S1, "figures.softmax.draw_roofline": _S1,
    "attention_matmul_flops": _S2, "standard_attention_intensity": _S2,
    "figures.softmax.io_vs_N_data": _S2, "figures.softmax.draw_io_vs_N": _S2,
    "row_softmax": _S3, "AttentionFlops": _S4, "attention_flops": _S4,
    "flash_attention_backward": _S5, "standard_attention_backward": _S5, "finite_difference_gap": _S5, "flash_backward_io": _S5,
    "standard_backward_io": _S5, "saved_for_backward_bytes": _S5, "training_step_io": _S5,
    "causal_block_fraction": _S5, "causal_block_map": _S5, "causal_block_counts": _S5,
    "figures.flash.causal_map_figure": _S5, "figures.flash.backward_traffic_figure": _S5,
    "softmax_fusion_io": _S7,
    "waves_time": _S4B, "LAST_WAVE_RULES": _S4B,
}


def section_for(name: str) -> str | None:
    """The book page (path as in ``_toc.yml``) that explains the public name ``name``, or None.

    Args:
        name: a public name such as ``"reference_attention"``, ``"display.show"`` or
            ``"figures.decode.splits_figure"``; a leading ``"labcore."`` or ``"flashbook."`` is accepted and ignored.
    Returns:
        The page path, e.g. ``"book/02_io_awareness"``, or None for plumbing no section explains.
    Raises:
        TypeError: ``name`` is not a string.
        ValueError: ``name`` is not a public labcore name.
    Source:
        d2l.ai's API appendix (each function links to the section that introduces it).
    """
    import importlib

    if not isinstance(name, str):
        raise TypeError(f"name must be a string such as 'reference_attention', got {type(name).__name__}")
    key = name.split(".", 1)[1] if name.startswith(("labcore.", "flashbook.")) else name
    if key in SECTIONS:
        return SECTIONS[key]
    modpath, _, attr = key.rpartition(".")
    candidates = [modpath] if modpath else [m for m in MODULE_PAGES if "." not in m and m not in ("plots",)]
    for mod in candidates:
        if mod not in MODULE_PAGES:
            continue
        module = None
        for package in ("labcore", "flashbook"):
            try:
                module = importlib.import_module(f"{package}.{mod}")
                break
            except ModuleNotFoundError:
                continue
        if module is None:
            continue
        if attr in getattr(module, "__all__", ()):
            return MODULE_PAGES[mod]
    raise ValueError(f"name {name!r} is not a public labcore name (see the __all__ of the labcore modules)")


def toc_pages(toc_path) -> list[str]:
    """Every page of the book's table of contents in reading order, root first, as docnames
    (``["book/intro", "book/01_bottlenecks", ...]``).

    Args: toc_path: path of ``_toc.yml``. Returns: list of str.
    Raises: ``sphinx_external_toc``'s errors for a malformed table of contents; ImportError without it
    (it comes with Jupyter Book, which parses the same file the same way).
    """
    from sphinx_external_toc.parsing import parse_toc_yaml

    site = parse_toc_yaml(str(toc_path))

    def walk(doc) -> list[str]:
        pages = [doc.docname]
        for tree in doc.subtrees:
            for item in tree.items:
                if str(item) in site:          # a page (URLs and globs are not pages of this book)
                    pages += walk(site[str(item)])
        return pages

    return walk(site.root)
