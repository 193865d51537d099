"""The print stylesheet (issue 23; ``_static/flashbook.css``, ``@media print``, which ``make pdf`` prints with).

Each page is laid out as Chromium prints it for ``tools/book_pdf.py``: print media, at the width between the A4
page's margins (``book_pdf.PRINTABLE_WIDTH_PX``, ~673 CSS px). On paper: no control of any kind (a player's
sliders, selects and switches, an exercise form's fields and buttons, copy and toggle buttons) and no launch
note; each player's current frame at full resolution, i.e. as drawn: its frames are PNGs at 200 dpi shown at
100 CSS px per inch (``flashbook.drawing.STATIC_DPI``), so at least 2 PNG pixels per printed CSS px (192 ppi);
nothing wider than the page; an exercise's statement and a multiple-choice part's options, not its dead
fields. A figure moved to another setting before printing prints that setting, down to the image embedded in
the PDF Chromium writes.
"""
from __future__ import annotations

import base64
import importlib.util
import io

import pytest

from bookbrowser import HTML, ROOT, is_local

_spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "tools" / "book_pdf.py")
book_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(book_pdf)

#: Pages with frame players (the three the issue names) and a lab (its ledger figure is a plain PNG output).
PLAYER_PAGES = ["book/04_flash_forward", "book/06_flash_decoding", "book/08_megakernel"]
LAB_PAGE = "book/labs/lab2_flash_forward"
#: Pages with exercise forms, one with a multiple-choice part among them (exercise 9).
FORM_PAGES = ["book/06_flash_decoding", "book/12_exercises"]
#: PNG pixels per CSS px of a frame as drawn (200 dpi shown at 100 CSS px per inch).
FRAME_SCALE = 2.0


def _print_page(browser):
    """A page at the printable width in print media, every host but localhost blocked."""
    width = int(book_pdf.PRINTABLE_WIDTH_PX)
    context = browser.new_context(viewport={"width": width, "height": 1000})
    context.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
    page = context.new_page()
    page.emulate_media(media="print")
    return page


def _open(page, url: str):
    response = page.goto(url, wait_until="load")
    assert response and response.status == 200, f"{url}: {response and response.status}"
    page.evaluate("""async () => { document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; });
        await Promise.all(Array.from(document.images).map(i => i.complete ? null :
            new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r); }))); }""")
    assert page.evaluate("matchMedia('print').matches"), "print media was not emulated"


#: What the printed page shows: ``shown(e)`` is CSS's own answer (display, content-visibility, ancestors).
_PRINTED_JS = """
() => {
  const W = document.documentElement.clientWidth;
  const shown = e => e.checkVisibility();
  const name = e => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string'
                    ? '.' + e.className.trim().split(/\\s+/).join('.') : '') + (e.type ? '[' + e.type + ']' : '');
  const controls = Array.from(document.querySelectorAll(
      'input, select, button, textarea, [role=switch], [role=slider]')).filter(shown).map(name);
  const notes = Array.from(document.querySelectorAll(
      '.fb-note, .launch-buttons, .dropdown-launch-buttons, .thebe-launch-button, .btn-launch-thebe'))
      .filter(shown).map(name);
  const text = document.body.innerText;
  const wide = Array.from(document.querySelectorAll('body *')).filter(e => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && shown(e) && (r.right > W + 1 || r.left < -1);
    }).map(e => name(e) + ' ' + Math.round(e.getBoundingClientRect().left) + '..'
                + Math.round(e.getBoundingClientRect().right) + ' px');
  const players = Array.from(document.querySelectorAll('.fb-explorer')).map(root => {
    const img = root.querySelector('img.fb-frame');
    const cap = root.querySelector('figcaption');
    return {name: root.dataset.explorer, shown: shown(img) && img.complete, natural: img.naturalWidth,
            printed: img.getBoundingClientRect().width, drawn: +img.getAttribute('width'),
            caption: !!cap && shown(cap), controls: Array.from(root.querySelectorAll('input, select, button'))
            .filter(shown).length};
  });
  const images = Array.from(document.querySelectorAll('article img')).filter(shown).length;
  return {W, scrollWidth: document.documentElement.scrollWidth, controls, notes, wide, players, images,
          launchText: /Interactive figures:|Launch this page/.test(text)};
}
"""


@pytest.mark.parametrize("doc", PLAYER_PAGES + [LAB_PAGE])
def test_printed_page_has_figures_and_no_controls(site, browser, doc):
    """Printed: no control, no launch note, nothing wider than the page; every player's figure, its caption and
    its frame at >= 2 PNG px per CSS px (the frame's resolution as drawn, never stretched past it)."""
    page = _print_page(browser)
    _open(page, site + doc + ".html")
    p = page.evaluate(_PRINTED_JS)
    page.context.close()
    assert abs(p["W"] - book_pdf.PRINTABLE_WIDTH_PX) < 1, p["W"]
    assert p["controls"] == [], f"{doc}: controls printed: {sorted(set(p['controls']))}"
    assert p["notes"] == [] and not p["launchText"], f"{doc}: launch notes printed: {p['notes']}"
    assert p["wide"] == [] and p["scrollWidth"] <= p["W"], f"{doc}: wider than the page: {p['wide'][:6]}"
    assert p["images"] >= 1, f"{doc}: no figure printed"
    if doc == LAB_PAGE:
        return
    assert p["players"], f"{doc}: no frame player on the page"
    for fig in p["players"]:
        where = f"{doc}: {fig['name']}"
        assert fig["shown"] and fig["caption"] and fig["controls"] == 0, where
        assert fig["natural"] == FRAME_SCALE * fig["drawn"], f"{where}: frame not drawn at 2x ({fig})"
        assert fig["natural"] >= FRAME_SCALE * fig["printed"] - 0.5, \
            f"{where}: {fig['natural']} px frame printed {fig['printed']:.0f} CSS px wide (below 192 ppi)"
        # as drawn unless the page is narrower (a small figure is not blown up to the page's width)
        assert fig["printed"] >= min(fig["drawn"], p["W"]) - 1, f"{where}: printed {fig['printed']:.0f} px"


_FORMS_JS = """
() => Array.from(document.querySelectorAll('form.fb-exercise-form')).map(form => {
  const payload = JSON.parse(form.querySelector('script.fb-ex-payload').textContent);
  const dead = Array.from(form.querySelectorAll(
      'input, button, .fb-verdict, label[data-part-label], :scope > p:first-child')).filter(e => e.checkVisibility());
  const options = Array.from(form.querySelectorAll('.fb-option'));
  return {id: payload.id, dead: dead.map(e => e.tagName.toLowerCase() + '.' + e.className),
          options: options.length, optionsShown: options.filter(e => e.checkVisibility()).length};
})
"""


@pytest.mark.parametrize("doc", FORM_PAGES)
def test_exercise_forms_print_their_statement_not_their_fields(site, browser, doc):
    """Printed exercise forms: no field, button, verdict or "Check your answer" line; the exercise's statement
    (``Exercise k (title)``) and the text of every multiple-choice option are printed."""
    page = _print_page(browser)
    _open(page, site + doc + ".html")
    forms = page.evaluate(_FORMS_JS)
    text = " ".join(page.evaluate("document.body.innerText").split())
    page.context.close()
    assert forms and sum(f["options"] for f in forms), f"{doc}: no exercise form with a multiple-choice part"
    for f in forms:
        assert f["dead"] == [], f"{doc}: exercise {f['id']}: printed {f['dead']}"
        assert f["optionsShown"] == f["options"], f"{doc}: exercise {f['id']}: options not printed"
        assert f"Exercise {f['id']} (" in text, f"{doc}: exercise {f['id']}: statement not printed"


_MOVE_JS = """
async root => {
  const data = JSON.parse(root.querySelector('script.fb-frames').textContent);
  const img = root.querySelector('img.fb-frame');
  const controls = Array.from(root.querySelectorAll('[data-fb-slider]'));
  const j = controls.findIndex(c => c.type === 'range' || c.tagName === 'SELECT' || c.type === 'checkbox');
  const c = controls[j];
  const before = {src: img.getAttribute('src'), key: img.dataset.fbKey};
  const loaded = new Promise(r => img.addEventListener('load', r, {once: true}));
  if (c.type === 'checkbox') { c.checked = !c.checked; }
  else if (c.tagName === 'SELECT') { c.selectedIndex = (c.selectedIndex + 1) % c.options.length; }
  else { c.value = String(+c.value < +c.max ? +c.value + 1 : +c.value - 1); }
  c.dispatchEvent(new Event(c.tagName === 'SELECT' || c.type === 'checkbox' ? 'change' : 'input', {bubbles: true}));
  await loaded;
  const idx = controls.map(k => k.type === 'checkbox' ? +k.getAttribute(k.checked ? 'data-fb-on' : 'data-fb-off')
                                                      : parseInt(k.value, 10));
  const name = c.getAttribute('data-fb-slider');
  return {before, key: idx.join('-'), file: data.frames[idx.join('-')],
          setting: data.names[j] + ' ' + data.labels[name][idx[j]]};
}
"""


def _pixels(png):
    """RGB values (float, rows x columns x 3) of PNG bytes or of a PIL image."""
    import numpy as np
    from PIL import Image

    image = png if isinstance(png, Image.Image) else Image.open(io.BytesIO(png))
    return np.asarray(image.convert("RGB"), dtype=float)


def _frame_bytes(src: str) -> bytes:
    if src.startswith("data:"):
        return base64.b64decode(src.split(",", 1)[1])
    return (HTML / "_static" / "frames" / src.rsplit("/", 1)[-1]).read_bytes()


@pytest.mark.parametrize("doc", PLAYER_PAGES)
def test_printed_figure_is_the_current_frame(site, browser, doc):
    """Move each player's first control, then print: the image is the frame of the new setting (its src, key and
    alt text name it), and the PDF Chromium writes embeds that frame pixel for pixel at its full resolution,
    not the default frame."""
    from pypdf import PdfReader

    page = _print_page(browser)
    _open(page, site + doc + ".html")
    moved = []
    players = page.locator(".fb-explorer")
    for k in range(players.count()):
        root = players.nth(k)
        m = root.evaluate(_MOVE_JS)
        img = root.locator("img.fb-frame")
        where = f"{doc}: {root.get_attribute('data-explorer')}"
        assert m["file"], f"{where}: the moved setting has no frame file"
        assert img.get_attribute("data-fb-key") == m["key"] != m["before"]["key"], where
        assert img.get_attribute("src").endswith("/" + m["file"]), f"{where}: {img.get_attribute('src')}"
        alt = img.get_attribute("alt")
        assert m["setting"] in alt.partition(" Shown: ")[2], f"{where}: alt text does not name {m['setting']!r}: {alt!r}"
        assert img.evaluate("i => i.checkVisibility() && i.complete && i.naturalWidth > 0"), where
        moved.append((where, _pixels(_frame_bytes(m["file"])), _pixels(_frame_bytes(m["before"]["src"]))))
    pdf = page.pdf(format=book_pdf.PAGE_FORMAT, margin=book_pdf.MARGIN, print_background=True)
    page.context.close()
    printed = [_pixels(im.image) for pg in PdfReader(io.BytesIO(pdf)).pages for im in pg.images]
    assert moved, f"{doc}: no player"
    for where, now, default in moved:
        same = [im for im in printed if im.shape == now.shape]
        assert same, f"{where}: no image of {now.shape[1]} x {now.shape[0]} px (the frame's size) in the PDF"
        diff = min(abs(im - now).mean() for im in same)
        assert diff < 1.0, f"{where}: the PDF's image differs from the current frame (mean |diff| {diff:.1f})"
        if default.shape == now.shape and abs(default - now).mean() > 2.0:
            assert not any(abs(im - default).mean() < 1.0 for im in same), f"{where}: the default frame was printed"

