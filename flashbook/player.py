"""The static face's frame player: every setting of an explorer rendered at build time into one HTML block."""
from __future__ import annotations

import base64
import hashlib
import html
import itertools
import json

from .drawing import STATIC_DPI
from .explorer import Explorer

__all__ = ["render_static", "StaticHTML", "MAX_FRAMES"]

#: Upper bound on precomputed frames per explorer (page weight: ~20-40 KB per frame).
MAX_FRAMES = 96

def _png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _frame_key(indices) -> str:
    return "-".join(str(i) for i in indices)


#: Element ids handed out in this process (one notebook run), so a repeated player gets a distinct id.
_IDS_USED: dict[str, int] = {}

_PLAYER_JS = """
(function () {
  var root = document.getElementById(%(id)s);
  if (!root) { return; }
  var data = JSON.parse(root.querySelector('script.fb-frames').textContent);
  var img = root.querySelector('img.fb-frame');
  var controls = root.querySelectorAll('[data-fb-slider]');
  function update() {
    var key = [];
    controls.forEach(function (c) {
      var i = parseInt(c.value, 10);
      key.push(i);
      var out = root.querySelector('output[data-fb-for="' + c.getAttribute('data-fb-slider') + '"]');
      if (out) { out.textContent = data.labels[c.getAttribute('data-fb-slider')][i]; }
    });
    var src = data.frames[key.join('-')];
    if (src) { img.src = src; img.setAttribute('data-fb-key', key.join('-')); }
  }
  controls.forEach(function (c) { c.addEventListener('input', update); c.addEventListener('change', update); });
})();
"""


def render_static(explorer: Explorer, *, dpi: int = STATIC_DPI) -> str:
    """The self-contained HTML player for ``explorer`` (all frames precomputed as PNG data URIs)."""
    n = explorer.n_frames()
    if n > MAX_FRAMES:
        raise ValueError(f"explorer {explorer.name!r} has {n} static frames; at most {MAX_FRAMES} are allowed "
                         "(give its sliders fewer static values)")
    frames, labels = {}, {}
    names = [s.name for s in explorer.sliders]
    for s in explorer.sliders:
        labels[s.name] = [s.show_value(v) for v in s.values]
    for idx in itertools.product(*(range(len(s.values)) for s in explorer.sliders)):
        params = {**explorer.fixed, **{nm: s.values[i] for nm, s, i in zip(names, explorer.sliders, idx)}}
        frames[_frame_key(idx)] = _png_data_uri(explorer.png(explorer.compute(**params), params, dpi=dpi))
    default_idx = [s.values.index(s.default) for s in explorer.sliders]
    rows = []
    for s, i in zip(explorer.sliders, default_idx):
        if len(s.values) == 1:   # fixed in the static book: keep its place in the frame key, show no control
            rows.append(f'<input type="hidden" value="0" data-fb-slider="{html.escape(s.name)}">')
            continue
        rows.append(
            f'<label class="fb-control"><span class="fb-label">{html.escape(s.text)}</span> '
            f'<input type="range" min="0" max="{len(s.values) - 1}" step="1" value="{i}" '
            f'data-fb-slider="{html.escape(s.name)}" aria-label="{html.escape(s.text)}"> '
            f'<output data-fb-for="{html.escape(s.name)}">{html.escape(labels[s.name][i])}</output></label>'
        )
    payload = json.dumps({"frames": frames, "labels": labels}).replace("</", "<\\/")
    # The element id comes from the content (explorer name + hash of its frames), never from a random
    # source, so two builds of the same commit write byte-identical HTML (issue 13).
    uid = "fb-" + explorer.name.replace("_", "-") + "-" + hashlib.sha256(payload.encode()).hexdigest()[:8]
    _IDS_USED[uid] = _IDS_USED.get(uid, 0) + 1   # the same player twice in one page: still unique, still stable
    if _IDS_USED[uid] > 1:
        uid += f"-{_IDS_USED[uid]}"
    caption = html.escape(explorer.caption) if explorer.caption else ""
    return (
        f'<div class="fb-explorer" id="{uid}" data-explorer="{html.escape(explorer.name)}">'
        f'<div class="fb-controls">{"".join(rows)}</div>'
        f'<img class="fb-frame" alt="{caption or html.escape(explorer.name)}" '
        f'data-fb-key="{_frame_key(default_idx)}" src="{frames[_frame_key(default_idx)]}">'
        f'<p class="fb-note"><small>Interactive figure: {n} settings precomputed at build time with the same '
        f'<code>labcore</code> code. Launch this page (rocket icon) for a live kernel with finer sliders.</small></p>'
        f'<script type="application/json" class="fb-frames">{payload}</script>'
        f'<script>{_PLAYER_JS % {"id": json.dumps(uid)}}</script>'
        f"</div>"
    )


class StaticHTML:
    def __init__(self, markup: str):
        self.markup = markup

    def _repr_html_(self):
        return self.markup
