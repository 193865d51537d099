"""The static face's frame player: every setting of an explorer rendered at build time, shown as one figure.

:func:`render_static` writes a ``<figure class="fb-explorer">``: its controls (a switch for an on/off choice,
a ``<select>`` for a categorical one, a range slider with ``aria-valuetext`` for a number), the default
frame inline as a PNG data URI, a numbered caption (``Figure N. <the explorer's caption>``) and a small
inline script. In the book build (``FLASHBOOK_FRAMES_DIR`` set by ``book/_ext/flashbook_html.py``) every
other frame is a PNG file under the HTML output's ``_static/frames/``, fetched when a control moves (and
its neighbours prefetched), so a page carries one frame per figure (a light page loads fast on a phone); without it (a notebook, a
test) every frame is inlined. The image's ``alt`` text names the setting shown and changes with it.

In the book build each frame is also drawn for the dark theme (:func:`flashbook.dark.to_dark`: the same
figure, its colours turned for a dark panel), as files only: while the page's ``<html data-theme>`` is ``dark``
the player shows those, and switches set when the reader switches the theme (a light page fetches none of them;
printing always takes the light set).
"""
from __future__ import annotations

import base64
import functools
import hashlib
import html
import io
import itertools
import json
import os
from pathlib import Path

from .drawing import CSS_PX_PER_INCH, STATIC_DPI, draw_png, encode_png, smallest_text
from .explorer import EXPLORERS, Explorer

__all__ = ["render_static", "StaticHTML", "MAX_FRAMES", "FRAMES_DIR_ENV", "FRAMES_URL_ENV", "FRAME_CACHE_ENV",
           "source_fingerprint", "tree_fingerprint", "NOTE", "NOTE_STUDENT", "launch_note"]

#: Upper bound on precomputed frames per explorer (build time and the site's size: ~20-60 KB per frame).
MAX_FRAMES = 96

#: Environment variables of the book build: the folder the frame files go to, and its URL relative to the
#: site's root (``<html data-content_root>``, Sphinx >= 7.2).
FRAMES_DIR_ENV = "FLASHBOOK_FRAMES_DIR"
FRAMES_URL_ENV = "FLASHBOOK_FRAMES_URL"
#: A folder of frames already drawn (the book build sets ``_build/.frame-cache``), keyed by the source of
#: ``labcore`` and ``flashbook``, the drawing libraries' versions, the explorer, its setting and the resolution:
#: a rebuild of unchanged code draws nothing again; any change to either package draws every frame anew.
FRAME_CACHE_ENV = "FLASHBOOK_FRAME_CACHE"

#: The launch note, written once per page (under its first interactive figure).
NOTE = ("Interactive figures: every setting was drawn when the book was built, by the same labcore code. "
        "Launch this page (rocket icon, top of the page) for a live kernel with finer controls.")
#: The student edition's note: it has no launch button, only the download button (the page's notebook).
NOTE_STUDENT = ("Interactive figures: every setting was drawn when the book was built, by the same labcore code. "
                "Download this page's notebook (download icon, top of the page) and run it in JupyterLab for a "
                "live kernel with finer controls.")


def launch_note() -> str:
    """The note under a page's first interactive figure: :data:`NOTE`, or :data:`NOTE_STUDENT` while the student
    edition is built (``FLASHBOOK_EDITION=student``)."""
    return NOTE_STUDENT if os.environ.get("FLASHBOOK_EDITION") == "student" else NOTE

#: Per process (one notebook's kernel = one page): element ids handed out, figures numbered, note written.
_IDS_USED: dict[str, int] = {}
_PAGE = {"figures": 0, "note": False}


def _png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _frame_key(indices) -> str:
    return "-".join(str(i) for i in indices)


def _compact(png: bytes, fig) -> bytes:
    """``png`` in at most 256 colours (fast octree, no dithering; ~10 ms): a third of the bytes of the full-colour
    file for these flat-coloured figures, deterministic (byte-identical builds). A figure with a colour map
    (an image, a mesh, a colorbar) keeps its full colour: 256 colours would band its gradients."""
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage
    from PIL import Image

    if fig.findobj(lambda a: isinstance(a, (AxesImage, QuadMesh))):
        return png

    im = Image.open(io.BytesIO(png)).convert("RGB")
    buf = io.BytesIO()
    im.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(buf, format="png")
    return buf.getvalue()


def _png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _value_labels(slider) -> list[str]:
    return [slider.value_label(v) for v in slider.values]


def _control(slider, i: int, labels: list[str]) -> str:
    """One control's HTML at value index ``i``: switch, select or range slider, labelled with its name."""
    name, text = html.escape(slider.name), html.escape(slider.text)
    vals = slider.values
    if len(vals) == 1:   # fixed in the static book: keeps its place in the frame key, shows no control
        return f'<input type="hidden" value="0" data-fb-slider="{name}">'
    if len(vals) == 2 and all(isinstance(v, bool) for v in vals):
        on, off = vals.index(True), vals.index(False)
        checked = " checked" if vals[i] else ""
        return (f'<label class="fb-control fb-switch"><input type="checkbox" role="switch" data-fb-slider="{name}" '
                f'data-fb-on="{on}" data-fb-off="{off}"{checked}> <span class="fb-label">{text}</span></label>')
    if any(isinstance(v, (str, bool)) for v in vals):
        options = "".join(f'<option value="{k}"{" selected" if k == i else ""}>{html.escape(lab)}</option>'
                          for k, lab in enumerate(labels))
        return (f'<label class="fb-control"><span class="fb-label">{text}</span> '
                f'<select data-fb-slider="{name}">{options}</select></label>')
    return (f'<label class="fb-control fb-range"><span class="fb-label">{text}</span> '
            f'<input type="range" min="0" max="{len(vals) - 1}" step="1" value="{i}" data-fb-slider="{name}" '
            f'aria-valuetext="{html.escape(labels[i])}"> '
            f'<output data-fb-for="{name}" aria-hidden="true">{html.escape(labels[i])}</output></label>')


_PLAYER_JS = """
(function () {
  var root = document.getElementById(%(id)s);
  if (!root) { return; }
  var data = JSON.parse(root.querySelector('script.fb-frames').textContent);
  var img = root.querySelector('img.fb-frame');
  var first = img.getAttribute('src');
  var controls = Array.prototype.slice.call(root.querySelectorAll('[data-fb-slider]'));
  var html = document.documentElement, printing = false;
  var base = data.base === null ? '' : (html.getAttribute('data-content_root') || '') + data.base;
  var fetched = {};
  // the dark theme's frames (data.dark), while the page is dark; paper always gets the light ones
  function dark() { return !!data.dark && !printing && html.getAttribute('data-theme') === 'dark'; }
  function index(c) {
    if (c.type === 'checkbox') { return +c.getAttribute(c.checked ? 'data-fb-on' : 'data-fb-off'); }
    return parseInt(c.value, 10);
  }
  function url(key) {
    var f = dark() ? data.dark[key] : data.frames[key];
    if (f === null) { return first; }
    if (f === undefined) { return null; }
    return f.indexOf('data:') === 0 ? f : base + f;
  }
  function load(key) {
    var u = url(key);
    if (u && !fetched[u]) { var im = new Image(); im.src = u; fetched[u] = im; }
  }
  function neighbours(idx) {
    idx.forEach(function (v, j) {
      [1, -1].forEach(function (d) {
        if (v + d >= 0 && v + d < data.sizes[j]) { var q = idx.slice(); q[j] = v + d; load(q.join('-')); }
      });
    });
  }
  function update() {
    var idx = controls.map(index), shown = [];
    controls.forEach(function (c, j) {
      var name = c.getAttribute('data-fb-slider'), text = data.labels[name][idx[j]];
      var out = root.querySelector('output[data-fb-for="' + name + '"]');
      if (out) { out.textContent = text; }
      if (c.type === 'range') { c.setAttribute('aria-valuetext', text); }
      if (data.sizes[j] > 1) { shown.push(data.names[j] + ' ' + text); }
    });
    var key = idx.join('-'), u = url(key);
    if (u) {
      if (img.getAttribute('src') !== u) { img.src = u; }
      img.setAttribute('data-fb-key', key);
      img.alt = data.alt + (shown.length ? ' Shown: ' + shown.join(', ') + '.' : '');
    }
    neighbours(idx);
  }
  controls.forEach(function (c) { c.addEventListener('input', update); c.addEventListener('change', update); });
  if (data.dark) {
    // the theme's switch sets data-theme on <html>: show the frame of the theme now in force. The theme also
    // sets it while the page loads; only a change of theme swaps the frame (and fetches its neighbours)
    var shownDark = false;
    function themed() { if (dark() !== shownDark) { shownDark = dark(); update(); } }
    new MutationObserver(themed).observe(html, {attributes: true, attributeFilter: ['data-theme']});
    window.addEventListener('beforeprint', function () { printing = true; themed(); });
    window.addEventListener('afterprint', function () { printing = false; themed(); });
    themed();
  }
  function early() { neighbours(controls.map(index)); }
  root.addEventListener('pointerenter', early, {once: true});
  root.addEventListener('focusin', early, {once: true});
})();
"""


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """A SHA-256 (hex) of every file of the ``labcore`` and ``flashbook`` packages (sources and data, by path)
    and the versions of numpy, matplotlib, PIL and ml_dtypes: what a drawn frame can depend on."""
    import labcore

    return tree_fingerprint((Path(labcore.__file__).parent, Path(__file__).parent),
                            ("numpy", "matplotlib", "pillow", "ml_dtypes"))


def tree_fingerprint(roots, dists=()) -> str:
    """SHA-256 (hex) of every file under the folders ``roots`` (each file's path below its root's name and its
    bytes; ``__pycache__`` skipped) and of the installed versions of the distributions ``dists``."""
    from importlib.metadata import version

    h = hashlib.sha256()
    for root in roots:
        for f in sorted(Path(root).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(f"{Path(root).name}/{f.relative_to(root).as_posix()}\0".encode() + f.read_bytes() + b"\0")
    for dist in dists:
        h.update(f"{dist}={version(dist)}\0".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _cache_folder() -> Path | None:
    """This source's folder of the frame cache (one per :func:`source_fingerprint`; the folders of other
    sources are removed, so the cache holds one build's frames), or None when no cache is set."""
    import shutil

    top = os.environ.get(FRAME_CACHE_ENV, "")
    if not top:
        return None
    folder = Path(top) / source_fingerprint()[:24]
    if not folder.is_dir():
        for old in Path(top).glob("*"):
            shutil.rmtree(old, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def _drawn_frame(explorer: Explorer, params: dict, dpi: int, text: bool,
                 dark: bool = False) -> tuple[bytes, float | None, bytes | None]:
    """``(compact PNG, smallest text in PNG px or None, the dark theme's compact PNG or None)`` of ``explorer`` at
    ``params``: from the frame cache (:data:`FRAME_CACHE_ENV`) when it holds this frame of this source, else drawn
    (and kept there). With ``dark``, also the frame drawn for the dark theme: the same figure, drawn once, its
    colours then turned by :func:`flashbook.dark.to_dark` and encoded again (about half a frame's cost:
    no second compute, layout or figure).

    Only a registered explorer (the one :data:`~flashbook.explorer.EXPLORERS` holds under its name, as
    ``flashbook.prefetch`` requires too) is cached: a frame is keyed by the explorer's name, and an ad-hoc
    explorer that reuses a registered name must not be served the registered one's frames."""
    folder = _cache_folder() if EXPLORERS.get(explorer.name) is explorer else None
    path = None
    if folder is not None:
        key = json.dumps([explorer.name, dpi, sorted(params.items())], default=repr)
        path = folder / hashlib.sha256(key.encode()).hexdigest()
        try:
            meta = json.loads(path.with_suffix(".json").read_text())
            if (not text or meta["text_px"] is not None) and (not dark or meta.get("dark")):
                return (path.with_suffix(".png").read_bytes(), meta["text_px"],
                        path.with_suffix(".dark.png").read_bytes() if dark else None)
        except (OSError, ValueError, KeyError):
            pass
    fig, png, _ = draw_png(explorer, explorer.compute(**params), params, dpi)
    png = _compact(png, fig)
    text_px = smallest_text(fig) * dpi / 72 if text else None
    dark_png = None
    if dark:
        from .dark import to_dark

        to_dark(fig)
        dark_png = _compact(encode_png(fig, dpi, False)[0], fig)
    if path is not None:   # written whole, then renamed: a parallel build never reads half a frame
        files = [(".png", png)] + ([(".dark.png", dark_png)] if dark else [])
        files.append((".json", json.dumps({"text_px": text_px, "dark": dark}).encode()))
        for suffix, data in files:
            tmp = path.with_suffix(f"{suffix}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path.with_suffix(suffix))
    return png, text_px, dark_png


def _frames_target():
    """(folder, URL prefix) the frame files go to in the book build, or None (inline every frame)."""
    folder = os.environ.get(FRAMES_DIR_ENV, "")
    if not folder:
        return None
    return Path(folder), os.environ.get(FRAMES_URL_ENV, "_static/frames/")


def _frame_file(folder: Path, name: str, png: bytes) -> str:
    """Write ``png`` into ``folder`` as ``<name>-<16 hex digits of its SHA-256>.png`` (once: the same picture is
    one file) and return the file's name."""
    fname = f"{name}-{hashlib.sha256(png).hexdigest()[:16]}.png"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / fname
    if not path.exists():
        path.write_bytes(png)
    return fname


def render_static(explorer: Explorer, *, dpi: int = STATIC_DPI, number: int | None = None) -> str:
    """The HTML figure (controls, frames, numbered caption) for ``explorer``; see the module's docstring.

    Args:
        explorer: the explorer; at most :data:`MAX_FRAMES` combinations of its sliders' static values.
        dpi: the frames' resolution (PNG pixels per figure inch); the image is shown at
            :data:`flashbook.drawing.CSS_PX_PER_INCH` CSS px per inch (at most the column's width).
        number: the figure's number (default: the next in this process, i.e. this page).

    Raises:
        ValueError: too many frames.
    """
    n = explorer.n_frames()
    if n > MAX_FRAMES:
        raise ValueError(f"explorer {explorer.name!r} has {n} static frames; at most {MAX_FRAMES} are allowed "
                         "(give its sliders fewer static values)")
    target = _frames_target()
    names = [s.name for s in explorer.sliders]
    labels = {s.name: _value_labels(s) for s in explorer.sliders}
    default_idx = tuple(s.values.index(s.default) for s in explorer.sliders)
    frames, dark, default_png, text_px = {}, {}, None, None
    for idx in itertools.product(*(range(len(s.values)) for s in explorer.sliders)):
        params = {**explorer.fixed, **{nm: s.values[i] for nm, s, i in zip(names, explorer.sliders, idx)}}
        png, px, dark_png = _drawn_frame(explorer, params, dpi, text=idx == default_idx, dark=target is not None)
        key = _frame_key(idx)
        if idx == default_idx:
            default_png, text_px = png, px
        if target is None:
            frames[key] = None if idx == default_idx else _png_data_uri(png)
        else:
            frames[key] = None if idx == default_idx else _frame_file(target[0], explorer.name, png)
            # the dark theme's set: files only, the default too (a light page never fetches one)
            dark[key] = _frame_file(target[0], explorer.name, dark_png)
    alt = explorer.describe(explorer.defaults())   # the player's script writes it again for each frame shown
    payload = json.dumps({"frames": frames, "labels": labels, "names": [s.text for s in explorer.sliders],
                          "sizes": [len(s.values) for s in explorer.sliders], "alt": explorer.title,
                          "base": None if target is None else target[1],
                          "dark": dark or None}).replace("</", "<\\/")
    # The element id comes from the content (explorer name + hash of its frames), never from a random
    # source, so two builds of the same commit write byte-identical HTML (a rebuild changes only what changed).
    uid = ("fb-" + explorer.name.replace("_", "-") + "-"
           + hashlib.sha256(payload.encode() + default_png).hexdigest()[:8])
    _IDS_USED[uid] = _IDS_USED.get(uid, 0) + 1   # the same player twice in one page: still unique, still stable
    if _IDS_USED[uid] > 1:
        uid += f"-{_IDS_USED[uid]}"
    if number is None:
        _PAGE["figures"] += 1
        number = _PAGE["figures"]
    note = ""
    if not _PAGE["note"]:
        _PAGE["note"] = True
        note = f'<p class="fb-note"><small>{html.escape(launch_note())}</small></p>'
    w, h = (round(v * CSS_PX_PER_INCH / dpi) for v in _png_size(default_png))   # CSS px: 2 PNG px each at 2x
    rows = [_control(s, i, labels[s.name]) for s, i in zip(explorer.sliders, default_idx)]
    return (
        f'<figure class="fb-explorer" id="{uid}" data-explorer="{html.escape(explorer.name)}">'
        f'<div class="fb-controls" role="group" aria-label="Settings of figure {number}">{"".join(rows)}</div>'
        f'<img class="fb-frame" alt="{html.escape(alt)}" width="{w}" height="{h}" '
        f'data-fb-key="{_frame_key(default_idx)}" data-fb-text-px="{text_px:.2f}" '
        f'src="{_png_data_uri(default_png)}">'
        f'<figcaption><span class="fb-fignum">Figure {number}.</span> {html.escape(explorer.title)}</figcaption>'
        f'{note}'
        f'<script type="application/json" class="fb-frames">{payload}</script>'
        f'<script>{_PLAYER_JS % {"id": json.dumps(uid)}}</script>'
        f"</figure>"
    )


class StaticHTML:
    """A displayable HTML fragment (``_repr_html_``): what :func:`flashbook.display.show` returns in the build."""

    def __init__(self, markup: str):
        self.markup = markup

    def _repr_html_(self):
        return self.markup
