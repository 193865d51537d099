"""Sphinx extension: the theme's icons from its stylesheet and webfonts, without the 1.49 MB fontawesome.js.

pydata-sphinx-theme 0.17.1 writes ``<script defer src="_static/scripts/fontawesome.js">`` into every page's
<head> (its ``static/webpack-macros.html``, macro ``head_js_preload``, called by ``layout.html``'s ``css``
block) "so that users can add custom icons": that file is Font Awesome's all.min.js, every icon as SVG data
(1,489,308 bytes), which rewrites each ``<i class="fa-...">`` into an inline SVG. The theme's stylesheet
(``pydata-sphinx-theme.css``) already carries Font Awesome's webfont CSS (every ``fa-*`` class and the
``@font-face`` rules of its woff2 fonts), and every page downloads those fonts anyway (fa-solid-900.woff2,
156 KB; fa-brands-400.woff2, 118 KB), so the icons render from CSS alone. The book has no custom icon.

Sphinx copies ``html_static_path`` after the theme's static files, and a file of the same name replaces the
theme's (Sphinx's documentation of ``html_static_path``): this adds ``icons_static/``, whose
``scripts/fontawesome.js`` is only a comment, to that path. It is added here, after Jupyter Book has listed the
``.js`` files of its ``_static`` folder in ``html_js_files``, so no second <script> tag is written. The
few icons the book shows do not need the theme's 1.49 MB script; upstream: pydata-sphinx-theme issue #2379 and pull request #2494 (the
same change, not in a release yet).

Raises sphinx.errors.ExtensionError at config time if an icon link asks for a custom Font Awesome icon
(``fa-custom``), which only the script can draw.
"""
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "icons_static"


def drop_fontawesome_js(app, config):
    """``config-inited``: put ``icons_static/`` last on ``html_static_path`` (see the module's docstring).

    Raises:
        sphinx.errors.ExtensionError: an icon link names a custom Font Awesome icon (``fa-custom``).
    """
    from sphinx.errors import ExtensionError

    links = (config.html_theme_options or {}).get("icon_links") or []
    custom = [link.get("name", "?") for link in links if "fa-custom" in str(link.get("icon", ""))]
    if custom:
        raise ExtensionError(f"icon links {custom} use custom Font Awesome icons, which need the theme's "
                             "fontawesome.js: remove flashbook_icons from _config.yml's local_extensions")
    config.html_static_path = [*config.html_static_path, str(STATIC)]


def setup(app):
    app.connect("config-inited", drop_fontawesome_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
