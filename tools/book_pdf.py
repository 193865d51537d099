"""Print a built edition of the book to one PDF: ``make pdf`` (the full book, after ``make book``) and
``make student-pdf`` (the student edition, after ``make student``).

Debian's Chromium (never a downloaded browser) prints every page of the edition's ``_toc.yml`` in reading order
from its HTML with the book's print stylesheet (``_static/flashbook.css``, ``@media print``: no sidebars,
controls or launch notes; each interactive figure's current frame at full width; code that wraps), after
MathJax has typeset the page. pypdf joins the pages, adds one bookmark per chapter and stamps every page after
the cover with its chapter's title and its page number in the whole PDF (Chromium numbers the pages of each
chapter from 1, so the numbers are a second print, of the footers alone, laid over the pages). The cover goes
first: the title, the version, the licences and the contents, each chapter with the page it starts on (the
cover is printed again if those numbers change its own length). ``--check`` reads the PDF back and fails if a
chapter title is missing, raw markup (a MyST role, a directive fence, TeX delimiters) was printed, a page does
not carry its number, or the cover's contents name a wrong page.

Usage: ``python tools/book_pdf.py [--edition full|student] [--html DIR] [--toc FILE] [--out FILE] [--check]``;
``--edition`` sets the defaults of the other three (full: ``_build/html``, ``_toc.yml``,
``_build/pdf/flashbook.pdf``; student: ``_build/student/html``, ``_build/student/src/_toc.yml``,
``_build/pdf/flashbook-student.pdf``); relative paths are read from the current directory, and ``--html`` alone
takes the ``src/_toc.yml`` beside it when there is one (what ``make student`` writes).
"""
from __future__ import annotations

import argparse
import html
import io
import os
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The Chromium that prints: ``FLASHBOOK_CHROMIUM`` (the Makefile's ``CHROMIUM``), else Debian's headless shell.
CHROMIUM = os.environ.get("FLASHBOOK_CHROMIUM", "/usr/bin/chromium-headless-shell")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Text that must never reach a printed page: an unevaluated role, a directive fence, TeX left untypeset.
RAW_MARKUP = re.compile(r"\{(eval|cite|doc|ref|numref|math|py:func)\}`|^```|^:::|\$\$|\\begin\{|\\frac\{", re.M)
#: The printed page: A4 (210 mm wide) with these margins; Chromium lays the page out at the width between them,
#: ``PRINTABLE_WIDTH_PX`` CSS px (96 per inch), the width tests/browser/test_print.py checks the print layout at.
PAGE_FORMAT, PAGE_WIDTH_MM = "A4", 210.0
MARGIN = {"top": "1.5cm", "bottom": "1.5cm", "left": "1.6cm", "right": "1.6cm"}
PRINTABLE_WIDTH_PX = (PAGE_WIDTH_MM - 10 * (float(MARGIN["left"][:-2]) + float(MARGIN["right"][:-2]))) * 96 / 25.4


#: The book's title (the cover and the PDF's metadata).
TITLE = "flashbook: how the fastest LLM-inference kernels work"
#: Per edition: the HTML it prints, the table of contents that orders it, the PDF it writes, the cover's title.
EDITIONS = {
    "full": {"html": ROOT / "_build" / "html", "toc": ROOT / "_toc.yml",
             "out": ROOT / "_build" / "pdf" / "flashbook.pdf", "title": TITLE},
    "student": {"html": ROOT / "_build" / "student" / "html", "toc": ROOT / "_build" / "student" / "src" / "_toc.yml",
                "out": ROOT / "_build" / "pdf" / "flashbook-student.pdf", "title": f"{TITLE} (student edition)"},
}
#: The footer stamped on every page after the cover: ``<chapter title> · <page number>``.
FOOTER_SEPARATOR = " \u00b7 "


def pages(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """Docnames of the book in reading order (``book/intro``, ``book/01_bottlenecks``, ...), from ``toc``."""
    sys.path.insert(0, str(ROOT))
    from flashbook.sections import toc_pages

    return toc_pages(Path(toc))


def parts(toc: Path = ROOT / "_toc.yml") -> dict[str, str]:
    """``{docname: caption}`` for the first page of each captioned part of ``toc`` (the cover's part headings)."""
    import yaml

    def first(items):
        for item in items or []:
            if isinstance(item, dict) and "file" in item:
                return item["file"]
        return None

    out = {}
    for part in (yaml.safe_load(Path(toc).read_text(encoding="utf-8")) or {}).get("parts") or []:
        doc = first(part.get("chapters"))
        if part.get("caption") and doc:
            out[doc] = part["caption"]
    return out


def depths(toc: Path = ROOT / "_toc.yml") -> dict[str, int]:
    """``{docname: depth}`` for the pages of ``toc``: 0 for the root and a part's chapters, 1 for a chapter's
    sections, and so on (the cover indents the contents by it)."""
    import yaml

    out = {}

    def walk(items, depth):
        for item in items or []:
            if isinstance(item, dict):
                if "file" in item:
                    out[item["file"]] = depth
                for key in ("chapters", "parts"):
                    walk(item.get(key), depth)
                walk(item.get("sections"), depth + 1)

    toc_data = yaml.safe_load(Path(toc).read_text(encoding="utf-8")) or {}
    out[toc_data.get("root")] = 0
    walk(toc_data.get("parts") or toc_data.get("chapters"), 0)
    return out


def _title(page) -> str:
    return page.evaluate("() => (document.querySelector('main h1') || {innerText: ''}).innerText"
                         ".replace(/[#¶]/g, '').trim()")


def _flat(text: str) -> str:
    """``text`` as pypdf reads it back, comparable: NFKC (ligatures and µ), whitespace runs as one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def chapter_starts(counts: list[int], cover_pages: int) -> list[int]:
    """The page number (1 = the cover's first page) each chapter starts on, for chapters of ``counts`` pages after
    a cover of ``cover_pages`` pages.

    Raises:
        ValueError: a chapter of fewer than one page, or a cover of fewer than one.
    """
    if cover_pages < 1 or any(c < 1 for c in counts):
        raise ValueError(f"every chapter and the cover need at least one page: cover {cover_pages}, chapters {counts}")
    starts, n = [], cover_pages + 1
    for c in counts:
        starts.append(n)
        n += c
    return starts


def _cover_html(titles: list[str], version: str, starts: list[int] | None = None, headings: list[str | None] = (),
                title: str = TITLE, levels: list[int] = ()) -> str:
    """The cover: ``title``, the version, the licences, and the contents (one line per chapter of ``titles``,
    with the page it starts on from ``starts``, indented by its ``levels`` entry; a part heading before a
    chapter whose ``headings`` entry is set)."""
    starts = starts or [None] * len(titles)
    headings = list(headings) or [None] * len(titles)
    levels = list(levels) or [0] * len(titles)
    rows = []
    for t, n, h, d in zip(titles, starts, headings, levels):
        if h:
            rows.append(f"<li class='part'>{html.escape(h)}</li>")
        indent = f" style='padding-left:{1.2 * d:g}em'" if d else ""
        rows.append(f"<li{indent}><span class='t'>{html.escape(t)}</span><span class='dots'></span>"
                    f"<span class='n'>{'' if n is None else n}</span></li>")
    return ("<!doctype html><meta charset='utf-8'><style>body{font-family:sans-serif;margin:0}"
            "h1{font-size:22pt;margin:0 0 6pt}h2{font-size:13pt;margin:10pt 0 4pt}p{font-size:10pt;margin:0}"
            "ol{list-style:none;padding:0;margin:0;font-size:10pt}li{display:flex;align-items:baseline;margin:1.5pt 0}"
            "li.part{display:block;font-weight:bold;margin-top:6pt}.t{flex:0 1 auto}"
            ".dots{flex:1 1 0;border-bottom:1px dotted #888;margin:0 4pt;min-width:1em}"
            ".n{flex:0 0 auto;min-width:2em;text-align:right}</style>"
            f"<h1>{html.escape(title)}</h1>"
            f"<p>Version {html.escape(version)}. Prose and figures: CC BY 4.0; code: MIT. Every number in this "
            "book is computed by labcore when the book is built; the interactive figures are printed at their "
            "default setting.</p><h2>Contents</h2><ol>" + "".join(rows) + "</ol>")


def _footers_html(labels: list[str | None]) -> str:
    """One A4 page per entry of ``labels``: the entry as a footer at the bottom centre (nothing for ``None``)."""
    pages_ = []
    for label in labels:
        if label is None:
            pages_.append("<div class='pg'></div>")
            continue
        t, _, n = label.rpartition(FOOTER_SEPARATOR)
        pages_.append(f"<div class='pg'><div class='ft'><span class='t'>{html.escape(t)}</span>"
                      f"<span>{html.escape(FOOTER_SEPARATOR)}</span><span class='n'>{html.escape(n)}</span></div></div>")
    return ("<!doctype html><meta charset='utf-8'><style>@page{size:A4;margin:0}html,body{margin:0;padding:0}"
            ".pg{position:relative;height:296mm;overflow:hidden;break-after:page}.pg:last-child{break-after:auto}"
            f".ft{{position:absolute;left:{MARGIN['left']};right:{MARGIN['right']};bottom:0.7cm;display:flex;"
            "justify-content:center;white-space:pre;font:8pt sans-serif;color:#333}"
            ".t{overflow:hidden;text-overflow:ellipsis;min-width:0}</style>" + "".join(pages_))


def print_page(page, url: str) -> tuple[str, bytes]:
    """Print one page of the book as ``make pdf`` does: ``page`` (a Playwright page in print media) loads ``url``,
    waits for MathJax, and Chromium prints it (A4, :data:`MARGIN`; no footer: :func:`print_book` stamps the
    page numbers of the whole book). Returns the page's title (its ``<h1>``, empty if none) and the PDF's bytes."""
    page.goto(url, wait_until="load")
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise"
                           ".then(() => true)", timeout=60_000)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    return _title(page), page.pdf(format=PAGE_FORMAT, print_background=True, margin=MARGIN)


def _pdf_pages(blob: bytes):
    from pypdf import PdfReader

    return PdfReader(io.BytesIO(blob)).pages


def print_book(html_dir: Path, out: Path, toc: Path = ROOT / "_toc.yml", title: str = TITLE, docs=None,
               browser=None) -> list[str]:
    """Print every page of ``toc`` (or the docnames ``docs``, in that order) from ``html_dir`` to one PDF ``out``,
    cover first, every later page numbered; returns the chapter titles in order.

    Args:
        html_dir: a built edition's HTML (``_build/html``, ``_build/student/html``).
        out: the PDF to write (its folder is made).
        toc: the ``_toc.yml`` the edition was built from (reading order, part headings).
        title: the cover's title.
        docs: optional docnames to print instead of every page of ``toc`` (a quick print of a few pages).
        browser: optional Playwright browser to print with (default: launch Debian's Chromium, :data:`CHROMIUM`).
    Raises:
        FileNotFoundError: a page of the contents is not in ``html_dir``.
        RuntimeError: the footers did not print one page per page of the book.
    """
    from pypdf import PdfWriter

    import labcore

    html_dir, out = Path(html_dir).resolve(), Path(out).resolve()
    names = list(docs) if docs is not None else pages(toc)
    heads, levels = parts(toc), depths(toc)
    for name in names:
        if not (html_dir / f"{name}.html").exists():
            raise FileNotFoundError(f"{html_dir / name}.html is missing: build the edition first "
                                    "(make book, or make student)")

    def run(b):
        page = b.new_page()
        page.emulate_media(media="print")
        blobs, titles = [], []
        for name in names:
            t, pdf = print_page(page, (html_dir / f"{name}.html").as_uri())
            titles.append(t or name)
            blobs.append(pdf)
        counts = [len(_pdf_pages(b_)) for b_ in blobs]
        cover_pages, cover = 1, b""
        for _ in range(4):           # the contents' numbers depend on the cover's length, which they can change
            starts = chapter_starts(counts, cover_pages)
            page.set_content(_cover_html(titles, labcore.__version__, starts, [heads.get(n) for n in names], title,
                                         [levels.get(n, 0) for n in names]))
            cover = page.pdf(format=PAGE_FORMAT, margin=MARGIN)
            if len(_pdf_pages(cover)) == cover_pages:
                break
            cover_pages = len(_pdf_pages(cover))
        labels = [None] * cover_pages + [f"{t}{FOOTER_SEPARATOR}{start + i}"
                                         for t, c, start in zip(titles, counts, starts) for i in range(c)]
        page.set_content(_footers_html(labels))
        footers = page.pdf(format=PAGE_FORMAT, margin={"top": "0", "bottom": "0", "left": "0", "right": "0"},
                           prefer_css_page_size=True)
        page.close()
        return titles, blobs, cover, footers, labels, starts

    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                titles, blobs, cover, footers, labels, starts = run(b)
            finally:
                b.close()
    else:
        titles, blobs, cover, footers, labels, starts = run(browser)

    writer = PdfWriter()
    for pg in _pdf_pages(cover):
        writer.add_page(pg)
    for t, blob, start in zip(titles, blobs, starts):
        for pg in _pdf_pages(blob):
            writer.add_page(pg)
        writer.add_outline_item(t, start - 1)
    stamps = _pdf_pages(footers)
    if len(stamps) != len(writer.pages):
        raise RuntimeError(f"the footers printed {len(stamps)} pages for a book of {len(writer.pages)}")
    for pg, stamp, label in zip(writer.pages, stamps, labels):
        if label is not None:
            pg.merge_page(stamp)
    writer.add_metadata({"/Title": title, "/Author": "the flashbook authors",
                         "/Subject": f"version {labcore.__version__}"})
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh:
        writer.write(fh)
    return titles


def printed_numbers(reader) -> list[int | None]:
    """The page number printed at the end of each page's text (the footer, stamped last), ``None`` where a page's
    text does not end with ``· <number>`` (the cover)."""
    out = []
    for pg in reader.pages:
        m = re.search(r"\u00b7\s*(\d+)\s*$", pg.extract_text() or "")
        out.append(int(m.group(1)) if m else None)
    return out


def contents(reader) -> list[tuple[str, int]]:
    """The PDF's chapters as its bookmarks give them: ``(title, page number)``, 1 = the first page."""
    return [(item.title, reader.get_destination_page_number(item) + 1)
            for item in reader.outline if hasattr(item, "title")]


def check_pdf(out: Path, titles: list[str] | None = None) -> list[str]:
    """Problems found in the printed book (empty when it is fine): a missing chapter title, raw markup, a page
    after the cover without its own number, a chapter that the cover's contents list without the page it starts
    on (the bookmarks say where each starts)."""
    from pypdf import PdfReader

    reader = PdfReader(str(out))
    text = "\n".join(pg.extract_text() or "" for pg in reader.pages)
    flat = re.sub(r"\s+", " ", text)
    problems = []
    for t in titles or [item.title for item in reader.outline if hasattr(item, "title")]:
        words = re.sub(r"\s+", " ", t).strip()
        if words and words not in flat:
            problems.append(f"chapter title not found in the PDF's text: {words!r}")
    for m in RAW_MARKUP.finditer(text):
        problems.append(f"raw markup printed: {text[max(0, m.start() - 40):m.end() + 40]!r}")
    if len(reader.pages) < len(titles or []) + 1:
        problems.append(f"only {len(reader.pages)} pages for {len(titles or [])} chapters")
    chapters = contents(reader)
    if not chapters:
        return problems + ["no bookmarks: the chapters' pages are unknown"]
    cover_pages = chapters[0][1] - 1
    numbers = printed_numbers(reader)
    wrong = [(i + 1, n) for i, n in enumerate(numbers) if i >= cover_pages and n != i + 1]
    if wrong:
        problems.append(f"{len(wrong)} pages do not print their number (page, printed): {wrong[:8]}")
    if any(n is not None for n in numbers[:cover_pages]):
        problems.append("a page number printed on the cover")
    cover = _flat(" ".join(reader.pages[i].extract_text() or "" for i in range(cover_pages)))
    for t, n in chapters:
        if f"{_flat(t)} {n}" not in cover:
            problems.append(f"the cover's contents do not list {t!r} on page {n}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edition", choices=sorted(EDITIONS), default="full",
                    help="which edition: sets the defaults of --html, --toc and --out (default: full)")
    ap.add_argument("--html", type=Path, help="the edition's built HTML")
    ap.add_argument("--toc", type=Path, help="the _toc.yml the edition was built from")
    ap.add_argument("--out", type=Path, help="the PDF to write")
    ap.add_argument("--check", action="store_true", help="read the PDF back: titles, markup, page numbers, contents")
    args = ap.parse_args(argv)
    ed = EDITIONS[args.edition]
    html_dir, toc, out = ((getattr(args, k) or ed[k]).resolve() for k in ("html", "toc", "out"))
    if args.html and not args.toc and (html_dir.parent / "src" / "_toc.yml").exists():
        toc = html_dir.parent / "src" / "_toc.yml"      # a student build's own contents, beside its HTML
    if not toc.exists():
        print(f"{toc} is missing: build the {args.edition} edition first "
              f"({'make student' if args.edition == 'student' else 'make book'}), or name it with --toc",
              file=sys.stderr)
        return 2
    titles = print_book(html_dir, out, toc, ed["title"])
    print(f"{out}: {len(titles)} chapters")
    if args.check:
        problems = check_pdf(out, titles)
        for p in problems:
            print("PDF check:", p)
        if problems:
            return 1
        print("PDF check: every chapter title present, no raw markup, every page numbered, the contents' pages right")
    return 0


if __name__ == "__main__":
    sys.exit(main())
