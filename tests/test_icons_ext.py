"""book/_ext/flashbook_icons.py: a Sphinx build with the book's theme ships a comment for the theme's 1.49 MB
fontawesome.js, loads it once per page, and refuses an icon link that only that script could draw."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import flashbook_icons  # noqa: E402

CONF = """
import sys
sys.path.insert(0, {ext!r})
extensions = ["flashbook_icons"]
html_theme = "sphinx_book_theme"
html_theme_options = {options!r}
"""


def _build(tmp_path: Path, options: dict):
    """Build a one-page project with the book's theme and this extension (``sphinx -W``, its own process: a
    second Sphinx app in one process re-registers the theme's nodes, a warning); returns (out dir, process)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(CONF.format(ext=str(ROOT / "book" / "_ext"), options=options))
    (src / "index.rst").write_text("Icons\n=====\n\nA page.\n")
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(src), str(out)],
                          capture_output=True, text=True, timeout=300)
    return out, proc


def test_the_theme_script_is_replaced_by_a_comment(tmp_path):
    out, proc = _build(tmp_path, {"repository_url": "https://github.com/flashbook-org/flashbook",
                                  "use_repository_button": True})
    assert proc.returncode == 0, proc.stderr
    shipped = (out / "_static" / "scripts" / "fontawesome.js").read_bytes()
    assert shipped == (flashbook_icons.STATIC / "scripts" / "fontawesome.js").read_bytes()
    assert len(shipped) < 400 and b"flashbook_icons" in shipped
    page = (out / "index.html").read_text(encoding="utf-8")
    # the theme still names the file (else this extension replaces nothing and can go) and names it once
    assert page.count("_static/scripts/fontawesome.js") == 1
    # the stylesheet that draws the icons instead: Font Awesome's classes and its woff2 webfonts
    css = (out / "_static" / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    assert ".fa-magnifying-glass:before" in css and "fa-solid-900.woff2" in css and "fa-brands-400.woff2" in css
    assert (out / "_static" / "vendor" / "fontawesome" / "webfonts" / "fa-solid-900.woff2").stat().st_size > 50_000


def test_a_custom_icon_fails_the_build(tmp_path):
    links = [{"name": "PyPI", "url": "https://pypi.org", "icon": "fa-custom fa-pypi", "type": "fontawesome"}]
    out, proc = _build(tmp_path, {"icon_links": links})
    assert proc.returncode != 0 and "custom Font Awesome icons" in proc.stderr, proc.stderr
    assert not (out / "index.html").exists()
