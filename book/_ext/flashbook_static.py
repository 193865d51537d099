"""Sphinx extension: mark the book build as static before any notebook kernel starts.

myst-nb starts the kernels from this Sphinx process, so they inherit ``FLASHBOOK_STATIC=1`` and
``flashbook.show`` renders its precomputed HTML players instead of ipywidgets (which would be dead
controls in a page without a kernel). Live kernels (Jupyter, Binder, Colab, nbval) never see it.
"""
import os


def setup(app):
    os.environ["FLASHBOOK_STATIC"] = "1"
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
