"""The theme's icons drawn from its stylesheet and Font Awesome's woff2 webfonts (``book/_ext/flashbook_icons.py``),
without the theme's 1.49 MB fontawesome.js (the few icons the book shows need no 1.49 MB script).

On a few pages (a chapter with figures, the title page, a lab) at a desktop and a phone width: the script the
theme names weighs under 1 KB; no icon was rewritten into an inline SVG (the script did that); every icon the
page shows has a glyph (its ``::before`` content in a Font Awesome font), a nonzero box and ink on the screen
around it; the webfonts it uses
are loaded.
"""
from __future__ import annotations

import io

import pytest

from bookbrowser import is_local

DOCS = ["book/intro", "book/04_flash_forward", "book/labs/lab2_flash_forward"]

_ICONS_JS = """
async () => {
  await document.fonts.ready;
  const icons = Array.from(document.querySelectorAll('i[class*="fa-"]')).filter(i => i.checkVisibility());
  const scripts = performance.getEntriesByType('resource').filter(e => /\\/fontawesome\\.js(\\?|$)/.test(e.name));
  return {
    scripts: scripts.map(e => e.encodedBodySize || e.transferSize || 0),
    svgs: document.querySelectorAll('svg.svg-inline--fa').length,
    icons: icons.map((i, k) => {
      const r = i.getBoundingClientRect(), before = getComputedStyle(i, '::before');
      i.dataset.fbIcon = String(k);
      return {k, cls: i.className, w: r.width, h: r.height, glyph: before.content, font: before.fontFamily};
    }),
    fonts: Array.from(document.fonts).filter(f => /Font Awesome/.test(f.family) && f.status === 'loaded')
                .map(f => f.family.replace(/"/g, '') + ' ' + f.weight),
  };
}
"""


#: Scroll an icon into view; the square around it where its glyph is drawn (centred on its box, at its font size:
#: fa-lg's box is ~1 px tall, line-height .05em), in viewport px; null when the icon is not what a reader sees
#: there (in the phone's closed sidebar drawer, under another element).
_GLYPH_BOX_JS = """
i => {
  i.scrollIntoView({block: 'center', inline: 'center'});
  const r = i.getBoundingClientRect(), fs = parseFloat(getComputedStyle(i, '::before').fontSize);
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const hit = x >= 0 && y >= 0 && x < innerWidth && y < innerHeight ? document.elementFromPoint(x, y) : null;
  if (!hit || !(hit === i || i.contains(hit) || hit.contains(i))) { return null; }
  return {x: Math.max(0, x - fs), y: Math.max(0, y - fs), width: 2 * fs, height: 2 * fs};
}
"""


def _ink(png: bytes) -> float:
    """Share of the pixels of a screenshot that differ from its corner's colour (the background)."""
    import numpy as np
    from PIL import Image

    a = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    return float((abs(a - a[0, 0]) > 60).mean())


@pytest.mark.parametrize("width", [1280, 390])
def test_icons_render_without_the_theme_script(site, browser, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
    page = context.new_page()
    bad, seen = [], {}
    for doc in DOCS:
        page.goto(site + doc + ".html", wait_until="load")
        found = page.evaluate(_ICONS_JS)
        assert found["scripts"] and max(found["scripts"]) < 1000, \
            f"{doc}: fontawesome.js is {found['scripts']} bytes (the build ships the theme's 1.49 MB script)"
        assert found["svgs"] == 0, f"{doc}: {found['svgs']} icons rewritten into SVG"
        assert len(found["icons"]) >= 4, f"{doc}: only {len(found['icons'])} icons shown"
        families = {f.rsplit(" ", 1)[0] for f in found["fonts"]}
        assert "Font Awesome 6 Free" in families, f"{doc}: icon fonts loaded: {found['fonts']}"
        for icon in found["icons"]:
            if icon["glyph"] in ("none", "normal", '""') or "Font Awesome" not in icon["font"]:
                bad.append(f"{doc}: {icon['cls']}: no glyph ({icon['glyph']}, {icon['font']})")
            elif icon["w"] < 4 or icon["h"] <= 0:
                bad.append(f"{doc}: {icon['cls']}: {icon['w']:.1f} x {icon['h']:.1f} px")
            else:
                box = page.locator(f'[data-fb-icon="{icon["k"]}"]').evaluate(_GLYPH_BOX_JS)
                if box is None:
                    continue
                seen[doc] = seen.get(doc, 0) + 1
                ink = _ink(page.screenshot(clip=box))
                if ink < 0.03:
                    bad.append(f"{doc}: {icon['cls']}: blank on screen ({ink:.0%} ink)")
    context.close()
    assert not bad, "\n".join(bad)
    assert all(seen.get(doc, 0) >= 4 for doc in DOCS), f"icons on screen per page: {seen}"
