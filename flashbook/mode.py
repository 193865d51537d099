"""Where the book's Python runs: the static HTML build, or a live kernel with or without prefetching.

Two environment switches, read on every call: ``FLASHBOOK_STATIC=1`` (set by the book's Sphinx extension
``book/_ext`` before any kernel starts) and ``FLASHBOOK_PREFETCH=0`` (the test runs).
"""
from __future__ import annotations

import os

__all__ = ["static_mode", "prefetch_enabled"]


def static_mode() -> bool:
    """True when rendering for the static HTML book (``FLASHBOOK_STATIC=1`` in the environment)."""
    return os.environ.get("FLASHBOOK_STATIC", "") == "1"


def prefetch_enabled() -> bool:
    """False when ``FLASHBOOK_PREFETCH=0`` is set (the test runs that execute notebooks without a reader:
    drawing the settings a reader might pick next would only load the machine)."""
    return os.environ.get("FLASHBOOK_PREFETCH", "1") != "0"

