"""The print stylesheet (``_static/flashbook.css``, ``@media print``, which ``make pdf`` prints with).

Each page is laid out as Chromium prints it for ``tools/book_pdf.py``: print media, at the width between the A4
page's margins (``book_pdf.PRINTABLE_WIDTH_PX``, ~673 CSS px). On paper: no control of any kind (a player's
sliders, selects and switches, an exercise form's fields and buttons, copy and toggle buttons) and no launch
note; each player's current frame at full resolution, i.e. as drawn: its frames are PNGs at 200 dpi shown at
100 CSS px per inch (``flashbook.drawing.STATIC_DPI``), so at least 2 PNG pixels per printed CSS px (192 ppi);
nothing wider than the page; an exercise's statement and a multiple-choice part's options, not its dead
fields. A figure moved to another setting before printing prints that setting, down to the image embedded in
the PDF Chromium writes. Every worked solution prints opened (its prose, its code and its output), without the
summaries and toggle buttons that open it on screen.
"""
from __future__ import annotations

import base64
import importlib.util
import io
import re
import unicodedata

import pytest

from bookbrowser import HTML, ROOT, is_local

_spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "tools" / "book_pdf.py")
book_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(book_pdf)

#: Pages with frame players (one per chapter that has them) and a lab (its ledger figure is a plain PNG output).
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


#: The exercises page: one worked solution per exercise (sphinx-exercise's dropdown, then its code cell).
EXERCISES_PAGE = "book/12_exercises"
_SOLUTIONS_JS = """
() => {
  const shown = e => e.checkVisibility({visibilityProperty: true, opacityProperty: true})
                     && e.getBoundingClientRect().height > 0;
  const text = document.body.innerText.replace(/\\s+/g, ' ');
  const flat = e => e.innerText.replace(/\\s+/g, ' ').trim();
  const solutions = Array.from(document.querySelectorAll('article div.solution')).map(box => {
    const body = Array.from(box.querySelectorAll(':scope > .admonition-title ~ *'));
    return {id: box.id, title: flat(box.querySelector('.admonition-title')),
            body: body.filter(shown).map(flat).join(' '), hidden: body.filter(e => !shown(e)).length};
  });
  // a closed <details>: a hidden code cell's source, "Show the worked solution"
  const details = Array.from(document.querySelectorAll('article details')).map(d => {
    const inner = Array.from(d.children).filter(c => c.tagName !== 'SUMMARY');
    return {cls: d.className, open: d.open, shown: inner.length > 0 && inner.every(shown),
            text: inner.map(c => (c.textContent || '').replace(/\\s+/g, ' ').trim()).join(' ')};
  });
  const controls = Array.from(document.querySelectorAll('article summary, article .toggle-button')).filter(shown)
      .map(e => e.tagName.toLowerCase() + ': ' + flat(e).slice(0, 40));
  const exercises = document.querySelectorAll('article div.exercise').length;
  return {solutions, details, controls, exercises, inText: details.filter(d => d.text && !text.includes(
      d.text.slice(0, 40))).map(d => d.text.slice(0, 40)),
      pointer: /Check it in the form below/.test(text)};
}
"""


def test_worked_solutions_print_opened(site, browser):
    """Printed (print media), the exercises page shows every exercise's worked solution: the dropdown's prose
    (sphinx-togglebutton hides it on screen: height 0, opacity 0), the code cell's source and its output (closed
    <details>), each with a non-zero height and its text in the page's printed text; no summary ("Show code cell
    source", "Show the worked solution") and no toggle button is printed."""
    page = _print_page(browser)
    _open(page, site + EXERCISES_PAGE + ".html")
    s = page.evaluate(_SOLUTIONS_JS)
    page.context.close()
    assert s["exercises"] >= 10 and len(s["solutions"]) == s["exercises"], (s["exercises"], len(s["solutions"]))
    for box in s["solutions"]:
        assert box["title"].startswith("Solution to"), box
        assert box["hidden"] == 0 and len(box["body"]) > 20, f"{box['id']}: the solution prints empty: {box}"
    # each solution: its code cell's source (closed) and its printed output (open inside the solution's dropdown,
    # book/_ext/flashbook_exercises.py)
    details = s["details"]
    assert len(details) >= 2 * s["exercises"], f"{len(details)} <details> for {s['exercises']} exercises"
    assert all(d["shown"] for d in details), [d["text"][:40] for d in details if not d["shown"]]
    assert s["inText"] == [], f"closed <details> whose text is not printed: {s['inText'][:5]}"
    assert s["controls"] == [], f"disclosure controls printed: {s['controls'][:5]}"
    assert not s["pointer"], "the checkpoint sentence that points at the (unprinted) form's fields is printed"


def _pdf_text(pdf: bytes) -> str:
    from pypdf import PdfReader

    text = " ".join(pg.extract_text() or "" for pg in PdfReader(io.BytesIO(pdf)).pages)
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text))   # NFKC: the "fi" ligature is two letters, µ is μ


def test_make_pdf_prints_the_worked_solutions(site, browser):
    """``make pdf``'s own print path (``book_pdf.print_page``: Chromium's page.pdf(), which fires beforeprint)
    prints the exercises page with every worked solution's output and code in the PDF's text and no "Show ..."
    summary. (The prose of a solution is in the PDF's text even when it prints invisibly, at opacity 0: that it is
    visible is :func:`test_worked_solutions_print_opened`'s to check.)"""
    page = browser.new_page()
    page.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
    page.emulate_media(media="print")
    title, pdf = book_pdf.print_page(page, site + EXERCISES_PAGE + ".html")
    outputs = page.evaluate("() => Array.from(document.querySelectorAll('article details.fb-solution pre'))"
                            ".map(p => p.textContent.split('\\n')[0].replace(/\\s+/g, ' ').trim().slice(0, 30))")
    sources = page.evaluate("() => Array.from(document.querySelectorAll('article details.hide .cell_input pre'))"
                            ".map(p => p.textContent.split('\\n')[0].replace(/\\s+/g, ' ').trim().slice(0, 30))")
    page.close()
    text = _pdf_text(pdf)
    outputs, sources = ([unicodedata.normalize("NFKC", s) for s in lines] for lines in (outputs, sources))
    assert title and title in text, title
    assert len(outputs) >= 10 and len(sources) == len(outputs), (len(outputs), len(sources))
    assert [o for o in outputs if o not in text] == [], "worked solutions' outputs missing from the PDF"
    assert [c for c in sources if c not in text] == [], "worked solutions' code missing from the PDF"
    assert "Show code cell source" not in text and "Show the worked solution" not in text


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



#: Short pages (Markdown, no notebook), one of them over several pages: the numbering crosses chapters.
NUMBERED_PAGES = ["book/intro", "book/10_summary", "book/14_next"]


def test_pdf_pages_numbered_and_the_cover_lists_them(browser, tmp_path):
    """``make pdf``'s own print path (``book_pdf.print_book``) on three pages: the cover prints no number, every
    later page prints its number in the whole PDF (not its chapter's: Chromium starts each chapter at 1), and the
    cover's contents give each chapter the page its bookmark points at. A PDF with a page taken out fails the
    same check."""
    from pypdf import PdfReader, PdfWriter

    out = tmp_path / "book.pdf"
    titles = book_pdf.print_book(HTML, out, ROOT / "_toc.yml", docs=NUMBERED_PAGES, browser=browser)
    assert book_pdf.check_pdf(out, titles) == []
    reader = PdfReader(str(out))
    chapters = book_pdf.contents(reader)
    assert [t for t, _ in chapters] == titles and len(titles) == len(NUMBERED_PAGES)
    cover = chapters[0][1] - 1
    numbers = book_pdf.printed_numbers(reader)
    assert cover >= 1 and numbers == [None] * cover + list(range(cover + 1, len(reader.pages) + 1)), numbers
    starts = [n for _, n in chapters]
    assert starts == sorted(starts) and starts[1] - starts[0] >= 2, "the first chapter should span pages"
    contents = _pdf_text(_page_pdf(reader, range(cover)))
    for t, n in chapters:
        assert f"{unicodedata.normalize('NFKC', t)} {n}" in contents, (t, n, contents[:400])
    assert "Wrap-up" in contents                                       # the part heading before §10
    # the check is not blind: a page taken out of the second chapter shifts every later number
    writer = PdfWriter()
    for i, pg in enumerate(reader.pages):
        if i != starts[1]:                                 # the page after the second chapter's first
            writer.add_page(pg)
    for t, n in chapters:                                            # bookmarks where the chapters now start
        writer.add_outline_item(t, n - 1 - (n - 1 > starts[1]))
    bad = tmp_path / "bad.pdf"
    with open(bad, "wb") as fh:
        writer.write(fh)
    problems = book_pdf.check_pdf(bad, titles)
    assert any("do not print their number" in p for p in problems), problems
    assert any(f"do not list {titles[2]!r}" in p for p in problems), problems


def _page_pdf(reader, indices) -> bytes:
    """The pages ``indices`` of ``reader`` as one PDF's bytes."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    for i in indices:
        writer.add_page(reader.pages[i])
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()
