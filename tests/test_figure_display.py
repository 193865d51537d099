"""Figures built with labcore.plots.new_figure display as PNG in IPython (never as '<Figure size ...>')."""
from __future__ import annotations

import pytest

IPython = pytest.importorskip("IPython")


def test_new_figure_registers_png_formatter():
    from IPython.core.interactiveshell import InteractiveShell

    from labcore.plots import new_figure

    shell = InteractiveShell.instance()
    try:
        fig, ax = new_figure(width=2, height=1.5)
        ax.plot([0, 1], [1, 0])
        data, _meta = shell.display_formatter.format(fig)
        assert "image/png" in data
        assert data["image/png"][:4] in (b"\x89PNG", "iVBO")  # raw bytes or base64 text
    finally:
        InteractiveShell.clear_instance()
