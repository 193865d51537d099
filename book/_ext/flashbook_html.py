"""Sphinx extension: small fixes to the HTML that Jupyter Book 1.x + Sphinx 7.4 write.

Sphinx 7.4 writes each inline ``<script>`` that an extension adds after the builder starts twice
(it is kept once with filename ``None`` and once, re-added in ``prepare_writing``, with filename ``''``;
the builder's de-duplication treats the two as different). sphinx-thebe's
``const THEBE_JS_URL = ...`` then throws "Identifier 'THEBE_JS_URL' has already been declared" in every
page, which the browser tests catch. This removes exact duplicates from each page's script list.

It also writes the footer: the licences (prose and figures CC BY 4.0, code MIT), the citation file and the
changelog, with the version from ``labcore.__version__`` (its one home), so the footer cannot name a
version other than the code's. The student edition (``FLASHBOOK_EDITION=student``) links nowhere into the
repository: its footer names the version and the licences only.

Every page readable by a screen reader and a keyboard:

- the static frame players (``flashbook.player``) write their frames as files into the HTML output's
  ``_static/frames/``: this sets ``FLASHBOOK_FRAMES_DIR`` before any notebook kernel starts (the kernels
  inherit it), and checks at the end of the build that every frame a page names is there; frames already
  drawn by an earlier build of the same source are taken from ``_build/.frame-cache`` (``FLASHBOOK_FRAME_CACHE``,
  see ``flashbook.player``);
- the sidebar's section toggles: the theme writes each as an empty ``<summary>`` (an icon only; axe:
  "summary-name"); each gets the name "Show or hide the subsections" (after the build, in every page);
- the bibliography: docutils writes each entry of its ``role="list"`` as ``role="doc-biblioentry"``, a
  role ARIA 1.2 deprecates and that a list may not hold (axe: "list" must contain "listitem"); each entry
  becomes ``role="listitem"``;
- the ids sphinx-exercise and sphinx-proof give every directive's body (``<section id="solution-content">``, also
  ``exercise-content`` and ``proof-content``: 20 of each on the exercises page, invalid HTML) are made unique in
  document order (``solution-content``, ``solution-content-2``, ...), and an ``href="#..."`` or ``aria-controls``
  naming one follows it (:func:`unique_content_ids`).
"""
import os
import re
from pathlib import Path

REPO = "https://github.com/flashbook-org/flashbook/blob/main/"


def footer_html(version: str, student: bool = False) -> str:
    """The book's footer: version, licences, citation and changelog (links into the repository). The student
    edition's (``student``) names the licences without a link into the repository, which it does not link to."""
    if student:
        return (f'<p class="fb-footer">flashbook {version}, student edition. Prose and figures: '
                f'<a href="https://creativecommons.org/licenses/by/4.0/">CC BY 4.0</a>; code: '
                f'<a href="https://opensource.org/license/mit">MIT</a>.</p>')
    return (f'<p class="fb-footer">flashbook {version}. Prose and figures: '
            f'<a href="https://creativecommons.org/licenses/by/4.0/">CC BY 4.0</a>; code: '
            f'<a href="{REPO}LICENSE-MIT">MIT</a> (<a href="{REPO}LICENSE">LICENSE</a>). '
            f'Cite it with <a href="{REPO}CITATION.cff">CITATION.cff</a>; what changed: '
            f'<a href="{REPO}CHANGELOG.md">CHANGELOG.md</a>.</p>')


def set_footer(app, config):
    import labcore

    student = os.environ.get("FLASHBOOK_EDITION") == "student"
    config.html_theme_options = {**(config.html_theme_options or {}),
                                 "extra_footer": footer_html(labcore.__version__, student)}


def _key(js):
    attrs = getattr(js, "attributes", {}) or {}
    return (getattr(js, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attrs.items())))


def dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        k = _key(js)
        if k not in seen:
            seen.add(k)
            kept.append(js)
    scripts[:] = kept


def valid_list_roles(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


FRAMES = ("_static", "frames")


def frames_env(app):
    """Where the players' frame files go: ``<outdir>/_static/frames`` (set for the kernels to inherit)."""
    if app.builder is not None and app.builder.format != "html":
        return
    os.environ["FLASHBOOK_FRAMES_DIR"] = str(Path(app.outdir, *FRAMES))
    os.environ["FLASHBOOK_FRAMES_URL"] = "/".join(FRAMES) + "/"
    os.environ["FLASHBOOK_FRAME_CACHE"] = str(Path(app.outdir).parent / ".frame-cache")


_TOGGLE = '<summary><span class="toctree-toggle" role="presentation">'
_NAMED_TOGGLE = '<summary aria-label="Show or hide the subsections"><span class="toctree-toggle" role="presentation">'


def check_frames(app, exception):
    """Every frame file a page's player names exists (a kernel that wrote elsewhere fails the build); the
    sidebar's section toggles get a name (see the module's docstring)."""
    if exception is not None or app.builder.format != "html":
        return
    fix_pages(Path(app.outdir))


#: The directive bodies' ids that sphinx-exercise and sphinx-proof write once per directive, the same on every one.
_CONTENT_ID = re.compile(r'\bid="((?:exercise|solution|proof)-content)"')
_ID = re.compile(r'\bid="([^"]+)"')


def unique_content_ids(text: str) -> str:
    """``text`` (one page's HTML) with each repeated ``id="solution-content"`` (and ``exercise-content``,
    ``proof-content``) after the first renamed ``solution-content-2``, ``-3``, ... in document order (a suffix
    another id of the page already has is skipped). A reference to such an id (``href="#solution-content"``,
    ``aria-controls="solution-content"``) is taken to name the first element with it at or after the reference
    (a control comes before what it opens), else the last one before it; it is renamed with that element.
    Idempotent: a page whose ids are unique is returned unchanged."""
    found = [(m.start(), m.group(1)) for m in _CONTENT_ID.finditer(text)]
    names = [n for _, n in found]
    if len(names) == len(set(names)):
        return text
    taken = set(_ID.findall(text))
    new_ids: dict[int, str] = {}          # position of an id="..." attribute -> its new id
    count: dict[str, int] = {}
    for pos, name in found:
        count[name] = count.get(name, 0) + 1
        if count[name] == 1:
            continue
        k = count[name]
        while f"{name}-{k}" in taken:
            k += 1
        taken.add(f"{name}-{k}")
        new_ids[pos] = f"{name}-{k}"

    def target(pos: int, name: str) -> str:
        after = [p for p, n in found if n == name and p >= pos]
        p = after[0] if after else [p for p, n in found if n == name][-1]
        return new_ids.get(p, name)

    def rename(m: re.Match) -> str:
        attr, name = m.group(1), m.group(2)
        if attr == "id":
            return f'id="{new_ids.get(m.start(), name)}"'
        new = target(m.start(), name)
        return f'href="#{new}"' if attr == "href" else f'aria-controls="{new}"'

    return re.sub(r'\b(id|href|aria-controls)="#?((?:exercise|solution|proof)-content)"', rename, text)


def fix_pages(out: Path) -> None:
    """Name the toggles of every page under ``out``, make its directive bodies' ids unique
    (:func:`unique_content_ids`) and check its frame files; raises RuntimeError naming the frames that are
    missing."""
    missing = []
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8", errors="replace")
        fixed = unique_content_ids(text.replace(_TOGGLE, _NAMED_TOGGLE))
        if fixed != text:
            text = fixed
            page.write_text(text, encoding="utf-8")
        if 'class="fb-frames"' not in text:
            continue
        for name in set(re.findall(r'"([\w-]+-[0-9a-f]{16}\.png)"', text)):
            if not (out.joinpath(*FRAMES) / name).exists():
                missing.append(f"{page.relative_to(out)}: {name}")
    if missing:
        raise RuntimeError("frame files missing from _static/frames:\n" + "\n".join(sorted(missing)[:20]))


def setup(app):
    app.connect("builder-inited", frames_env)
    app.connect("build-finished", check_frames)
    app.connect("html-page-context", valid_list_roles)
    app.connect("config-inited", set_footer)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
