"""Print the whole built book to one PDF: ``make pdf`` (after ``make book``).

Debian's Chromium (never a downloaded browser) prints every page of ``_toc.yml`` in reading order from
``_build/html`` with the book's print stylesheet (``_static/flashbook.css``, ``@media print``: no sidebars,
controls or launch notes; each interactive figure's current frame at full width; code that wraps), after
MathJax has typeset the page. A cover with the version, the licences and a numbered table of contents goes
first; pypdf joins the pages and adds one bookmark per chapter. ``--check`` reads the PDF back and fails if a
chapter title is missing or raw markup (a MyST role, a directive fence, TeX delimiters) was printed.

Usage: ``python tools/book_pdf.py [--html _build/html] [--out _build/pdf/flashbook.pdf] [--check]``.
"""
from __future__ import annotations

import argparse
import html
import io
import os
import re
import sys
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


def pages() -> list[str]:
    """Docnames of the book in reading order (``book/intro``, ``book/01_bottlenecks``, ...)."""
    sys.path.insert(0, str(ROOT))
    from flashbook.sections import toc_pages

    return toc_pages(ROOT / "_toc.yml")


def _title(page) -> str:
    return page.evaluate("() => (document.querySelector('main h1') || {innerText: ''}).innerText"
                         ".replace(/[#¶]/g, '').trim()")


def _cover_html(titles: list[str], version: str) -> str:
    items = "".join(f"<li>{html.escape(t)}</li>" for t in titles)
    return ("<!doctype html><meta charset='utf-8'><style>body{font-family:sans-serif;margin:3cm 2cm}"
            "h1{font-size:28pt}li{margin:4pt 0}</style>"
            "<h1>flashbook: how the fastest LLM-inference kernels work</h1>"
            f"<p>Version {html.escape(version)}. Prose and figures: CC BY 4.0; code: MIT. Every number in this "
            "book is computed by labcore when the book is built; the interactive figures are printed at their "
            "default setting.</p><h2>Contents</h2><ol style='list-style:none;padding:0'>" + items + "</ol>")


def print_page(page, url: str) -> tuple[str, bytes]:
    """Print one page of the book as ``make pdf`` does: ``page`` (a Playwright page in print media) loads ``url``,
    waits for MathJax, and Chromium prints it (A4, :data:`MARGIN`, a footer with the title and page number).
    Returns the page's title (its ``<h1>``, empty if none) and the PDF's bytes."""
    page.goto(url, wait_until="load")
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise"
                           ".then(() => true)", timeout=60_000)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    return _title(page), page.pdf(
        format=PAGE_FORMAT, print_background=True, display_header_footer=True, header_template="<span></span>",
        footer_template="<div style='font-size:8pt;width:100%;text-align:center'>"
                        "<span class='title'></span> &middot; <span class='pageNumber'></span></div>",
        margin=MARGIN)


def print_book(html_dir: Path, out: Path) -> list[str]:
    """Print every page to PDF and join them into ``out``; returns the chapter titles in order."""
    from playwright.sync_api import sync_playwright
    from pypdf import PdfReader, PdfWriter

    import labcore

    parts, titles = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.emulate_media(media="print")
        for name in pages():
            path = html_dir / f"{name}.html"
            if not path.exists():
                raise FileNotFoundError(f"{path} is missing: build the book first (make book)")
            title, pdf = print_page(page, path.as_uri())
            titles.append(title or name)
            parts.append(pdf)
        page.set_content(_cover_html(titles, labcore.__version__))
        cover = page.pdf(format=PAGE_FORMAT)
        browser.close()
    writer = PdfWriter()
    for blob in [cover]:
        for pg in PdfReader(io.BytesIO(blob)).pages:
            writer.add_page(pg)
    for title, blob in zip(titles, parts):
        start = len(writer.pages)
        for pg in PdfReader(io.BytesIO(blob)).pages:
            writer.add_page(pg)
        writer.add_outline_item(title, start)
    writer.add_metadata({"/Title": "flashbook: how the fastest LLM-inference kernels work",
                         "/Author": "the flashbook authors", "/Subject": f"version {labcore.__version__}"})
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh:
        writer.write(fh)
    return titles


def check_pdf(out: Path, titles: list[str] | None = None) -> list[str]:
    """Problems found in the printed book (empty when it is fine): a missing chapter title, raw markup."""
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
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "flashbook.pdf")
    ap.add_argument("--check", action="store_true", help="read the PDF back and check titles and markup")
    args = ap.parse_args(argv)
    titles = print_book(args.html, args.out)
    print(f"{args.out}: {len(titles)} chapters")
    if args.check:
        problems = check_pdf(args.out, titles)
        for p in problems:
            print("PDF check:", p)
        if problems:
            return 1
        print("PDF check: every chapter title present, no raw markup")
    return 0


if __name__ == "__main__":
    sys.exit(main())
