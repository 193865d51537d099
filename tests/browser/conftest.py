"""Fixtures for the browser suite: the built book served on localhost, and headless Debian Chromium.

See ``bookbrowser.py`` for what is checked and how pages are loaded (offline, once per session).
"""
from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from bookbrowser import (CHROMIUM, CHROMIUM_ARGS, HTML, PLAYERS_FIT_JS, RESOURCES_JS, SCREENSHOTS,  # noqa: F401
                         SHOTS, VISIT_JS, axe_source, colour_audits, is_local, new_offline_page, run_axe)


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


#: Milliseconds a page load, a wait for a condition or a click may take before Playwright gives up: its default
#: (30 s) is a deadline a loaded 2-core machine can miss (the largest API page loads in 3 s at a load average of
#: 10, and a load waits for every image); the tests that wait for something name what they waited for.
BROWSER_TIMEOUT_MS = 300_000


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


@pytest.fixture(scope="session")
def site():
    """Base URL of ``_build/html`` served by http.server on 127.0.0.1 (a free port)."""
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} has no index.html: build the book first (make book-strict)")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make chromium` installs Debian's chromium-headless-shell package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, timeout=BROWSER_TIMEOUT_MS)
        new_context = b.new_context

        def generous_context(**kw):
            """A context whose loads, waits and clicks wait :data:`BROWSER_TIMEOUT_MS`, not Playwright's 30 s."""
            context = new_context(**kw)
            context.set_default_timeout(BROWSER_TIMEOUT_MS)
            context.set_default_navigation_timeout(BROWSER_TIMEOUT_MS)
            return context

        b.new_context = generous_context
        yield b
        b.close()


@pytest.fixture(scope="session")
def visit(request, site, browser):
    """``visit(docname)`` -> dict describing the loaded page (each page is loaded once per session, at 1280 px in
    a fresh browser context): what :data:`VISIT_JS` reads, the first load's resources (``resources``:
    :data:`RESOURCES_JS`, 300 ms after the load, so frames fetched unasked are in), its players' fit
    (``fit``: :data:`PLAYERS_FIT_JS`) and axe-core's findings (``axe``: :func:`run_axe`, after everything else
    was read: with the colour rules in both themes where a selected test audits the page's colours at 1280 px
    (:func:`colour_audits`), else the other rules in the light theme)."""
    cache: dict[str, dict] = {}
    source = axe_source()
    colours = colour_audits(request.session, 1280)
    if SCREENSHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)

    def _visit(docname: str) -> dict:
        if docname in cache:
            return cache[docname]
        page = new_offline_page(browser)
        errors, console = [], []
        failed_local: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: console.append((m.type, m.text, (m.location or {}).get("url", ""))))
        page.on("requestfailed", lambda r: None if not is_local(r.url) else failed_local.append(
            f"{r.url} ({r.failure})"))
        url = site + docname + ".html"
        response = page.goto(url, wait_until="load")
        page.wait_for_timeout(300)
        resources = page.evaluate(RESOURCES_JS)
        info = page.evaluate(VISIT_JS)
        info.update(
            url=url,
            status=response.status if response else None,
            html=(HTML / (docname + ".html")).read_text(encoding="utf-8") if response else "",
            page_errors=errors,
            console_errors=[c for c in console if c[0] == "error"],
            failed_local=failed_local,
            blocked=list(page.blocked),
            resources=resources,
            fit=page.evaluate(PLAYERS_FIT_JS) if info["explorers"] else [],
        )
        if SCREENSHOTS:
            page.screenshot(path=str(SHOTS / (docname.replace("/", "__") + ".png")), full_page=True,
                            timeout=120_000)  # a long page: a full-page shot takes a while on 2 cores
        info["axe"] = run_axe(page, source, docname in colours) if response else {"light": [], "dark": None}
        page.context.close()
        cache[docname] = info
        return info

    return _visit
