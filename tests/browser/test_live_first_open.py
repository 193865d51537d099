"""The live face as a newcomer meets it: a fresh JupyterLab (the book's own default settings, as ``make lab`` and
Binder install them from ``jupyter-config/labconfig``), a notebook opened straight from its URL.

- Run All pressed as soon as the notebook shows, before its kernel has started, runs the notebook: JupyterLab
  starts the notebook's kernel itself instead of stopping at a "Select Kernel" dialog (the book's default
  ``autoStartDefaultKernel``).
- The cross-references of the Markdown show a name, never a bare label (``sec-mla-decode``): jupyterlab-myst
  cannot resolve a label of another notebook, so such a reference must carry its own text.

JupyterLab is the live suite's own (``test_live_notebooks.lab``: a copy of book/, its settings as a reader's).
"""
from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from bookbrowser import ROOT, is_local
from test_live_notebooks import STARTUP_S, _run_all, _wait_for, lab  # noqa: F401  (the live suite's JupyterLab, shared)

BOOK = ROOT / "book"
#: MyST label targets, ``(name)=``, and directive labels, ``:label: name``
_TARGET = re.compile(r"^\(([\w-]+)\)=\s*$|^:label:\s*([\w-]+)\s*$|^\$\$.*\(([\w-]+)\)\s*$", re.M)
#: notebooks whose Markdown refers to a label with a role (``{ref}``, ``{eq}``, ``{numref}``)
_ROLE = re.compile(r"\{(?:ref|eq|numref)\}`")


def _markdown(nb) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "markdown")


def book_labels() -> set[str]:
    """Every label a notebook or page of the book defines (section targets, directive labels, equation labels)."""
    out = set()
    for p in [*BOOK.glob("*.ipynb"), *BOOK.glob("labs/*.ipynb"), *BOOK.glob("*.md")]:
        text = _markdown(p) if p.suffix == ".ipynb" else p.read_text(encoding="utf-8")
        out |= {g for m in _TARGET.finditer(text) for g in m.groups() if g}
        out |= set(re.findall(r"\\label\{([\w-]+)\}", text))
    return out


#: every notebook whose Markdown refers to a label with a role
REFERRING = sorted(p.relative_to(BOOK).as_posix() for p in BOOK.glob("*.ipynb") if _ROLE.search(_markdown(p)))


def _fresh_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
    return context.new_page()


def _shutdown_kernels(base, token):
    with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=10) as r:
        for k in json.load(r):
            urllib.request.urlopen(urllib.request.Request(f"{base}/api/kernels/{k['id']}?token={token}",
                                                          method="DELETE"), timeout=10)


_FIRST_COUNT_JS = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.model) { return null; }
  const cells = panel.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type === 'code' && c.sharedModel.getSource().trim()) { return c.executionCount; }
  }
  return null;
}"""


#: the current notebook's kernel: its id, status and connection, and the kernel name the toolbar shows
_KERNEL_STATE_JS = """() => { const w = window.jupyterapp.shell.currentWidget;
  const sc = w && w.sessionContext; const k = sc && sc.session && sc.session.kernel;
  return {id: k ? k.id : null, state: k ? k.status + ' (' + k.connectionStatus + ')' : null,
          shown: sc ? sc.kernelDisplayName : null}; }"""
#: the notifications' fetchNews and checkForUpdates as the server gives them to JupyterLab: the user's value, else
#: the schema's default (into which the server has written the book's overrides)
_NEWS_SETTING_JS = """async () => {
  const s = await window.jupyterapp.serviceManager.settings.fetch('@jupyterlab/apputils-extension:notification');
  const value = k => (s.settings && k in s.settings) ? s.settings[k] : s.schema.properties[k].default;
  return [value('fetchNews'), value('checkForUpdates')]; }"""
#: a kernel that has started: it answers (idle), or already runs the cells of a Run All
_STARTED = {"idle (connected)", "busy (connected)"}


def _server_kernels(base: str, token: str) -> list[str]:
    """The ids of the kernels JupyterLab's server runs."""
    with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=STARTUP_S) as r:
        return [k["id"] for k in json.load(r)]


def test_the_first_notebook_starts_its_kernel_without_a_dialog(lab, browser):  # noqa: F811
    """The first notebook, opened from its URL in a fresh JupyterLab, Run All pressed as soon as its cells show
    (before its kernel is up): no "Select Kernel" dialog at any point (the book's default autoStartDefaultKernel;
    without it JupyterLab asked for a kernel); once that early Run All has settled, the kernel starts without a
    dialog if there is none, and Run All then runs every cell.

    What the early Run All itself does is JupyterLab's race, and all three outcomes were seen with JupyterLab
    4.6.6: it runs the cells; it is dropped (no cell runs, no message) while JupyterLab starts the kernel itself;
    or, pressed before JupyterLab has looked up the notebook's running sessions, it starts a session of its own,
    which the lookup then finds and adopts, and ``SessionContext._changeKernel`` (packages/apputils/src/
    sessioncontext.tsx) shuts the adopted copy down, that is the new session itself, leaving "No Kernel". The
    book's introduction tells the reader to wait for the kernel to be idle before Run All; the test requires what
    the book's settings promise: no dialog, and a kernel started without one. Nor does JupyterLab ask the reader
    about Jupyter news (the book's default ``fetchNews``).

    Every wait is :data:`STARTUP_S`, or progress-based for Run All (the live suite's ``_run_all``).
    """
    base, token = lab
    name = "01_bottlenecks.ipynb"
    page = _fresh_page(browser)
    try:
        page.goto(f"{base}/lab/tree/{name}?reset&token={token}", wait_until="load")
        _wait_for(page, "() => !!document.querySelector('.jp-NotebookPanel .jp-Cell')",
                  "the notebook's cells to show", STARTUP_S)
        # the notebook is the current widget (Run All acts on it) as soon as its cells show
        _wait_for(page, "() => { const w = window.jupyterapp.shell.currentWidget;"
                        " return !!(w && w.content && w.content.model && w.content.model.cells.length); }",
                  "the notebook to be JupyterLab's current widget", STARTUP_S)
        # the command's promise is kept, not awaited: it waits for whatever it runs into (a dialog holds it)
        page.evaluate("() => { window.fbEarly = null; window.jupyterapp.commands.execute('notebook:run-all-cells')"
                      ".then(ok => { window.fbEarly = 'resolved ' + ok; }, e => { window.fbEarly = 'failed ' + e; }); }")
        # JupyterLab's own start of the notebook's session (initialize() returns the one in progress)
        page.evaluate("() => { window.fbInit = null; window.jupyterapp.shell.currentWidget.sessionContext.initialize()"
                      ".then(() => { window.fbInit = 'done'; }, e => { window.fbInit = 'failed ' + e; }); }")
        # settled: the early Run All and JupyterLab's start of the session have both answered (neither can still
        # start or shut down a session), and the page and the server agree on the kernel (the one kernel the
        # server runs is the page's and started, or the server runs none and the page shows none)
        t0, states, dialog, outcome = time.monotonic(), [], "", None
        while time.monotonic() - t0 < STARTUP_S:
            early, kernel = page.evaluate("() => window.fbEarly && window.fbInit"), page.evaluate(_KERNEL_STATE_JS)
            if not states or states[-1][1:] != (early, kernel["state"], kernel["shown"]):
                states.append((round(time.monotonic() - t0, 1), early, kernel["state"], kernel["shown"]))
            if page.locator(".jp-Dialog").count():
                dialog = page.locator(".jp-Dialog").first.inner_text()
                break
            if early is not None:
                held = _server_kernels(base, token)
                if kernel["state"] in _STARTED and held == [kernel["id"]]:
                    outcome = "a started kernel"
                    break
                if kernel["id"] is None and kernel["shown"] == "No Kernel" and not held:
                    outcome = "no kernel"
                    break
            page.wait_for_timeout(100)
        print(f"{name}: after the early Run All, {outcome}; (s, Run All and start, kernel, shown): {states}",
              flush=True)
        assert not dialog, f"a dialog stood in the way of Run All: {dialog[:200]!r}"
        assert outcome, f"the early Run All and the notebook's kernel did not settle within {STARTUP_S:.0f} s: " \
                        f"(s, Run All and start, kernel, shown): {states}"
        if outcome == "no kernel":
            # what JupyterLab does when a cell is run in a notebook without a kernel (Run All only starts the kernel
            # then: it runs the first cell and drops the others, having looked for the kernel before it was up);
            # False: it started the default kernel and needs no "Select Kernel" dialog (autoStartDefaultKernel)
            assert page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.startKernel()") is False
        _wait_for(page, "() => { const w = window.jupyterapp.shell.currentWidget; const k = w.sessionContext.session"
                        " && w.sessionContext.session.kernel; return !!k && k.connectionStatus === 'connected'"
                        " && k.status === 'idle'; }", f"{name}'s kernel to be connected and idle", STARTUP_S)
        _run_all(page, name)
        assert page.evaluate(_KERNEL_STATE_JS)["state"] in _STARTED
        assert not page.locator(".jp-Dialog").count()
        # the book's defaults ask no "Jupyter news" question (JupyterLab shows it some seconds after it loads,
        # and it stays until answered: by now it would show)
        assert page.evaluate(_NEWS_SETTING_JS) == ["false", False]
        toasts = page.evaluate("() => Array.from(document.querySelectorAll('.Toastify__toast'), e => e.innerText)")
        assert not [t for t in toasts if "news" in t.lower()], f"a notification asked about news: {toasts}"
    finally:
        page.context.close()
        _shutdown_kernels(base, token)


_MARKDOWN_TEXT_JS = r"""() => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell .jp-MarkdownOutput, '
    + '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell .myst'))
  .map(e => { const c = e.cloneNode(true);
              c.querySelectorAll('pre, code, mjx-container, script, style').forEach(x => x.remove());
              return c.textContent; }).join('\n')"""


#: every Markdown cell of the open notebook has its rendered output (jupyterlab-myst renders one after another)
_ALL_RENDERED_JS = r"""() => { const cells = document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell');
  return cells.length > 0 && Array.from(cells).every(c => c.querySelector('.jp-MarkdownOutput, .myst')); }"""
#: seconds the rendered text must stay the same before it is read
_STEADY_S = 2.0


def _rendered_markdown(page, name: str) -> str:
    """The text of the open notebook's rendered Markdown, once every Markdown cell shows its rendering and the
    text has stayed the same for :data:`_STEADY_S` (a wait on progress, not a fixed pause: a loaded machine only
    renders more slowly); a rendering that keeps changing for :data:`STARTUP_S` fails, saying so."""
    _wait_for(page, _ALL_RENDERED_JS, f"{name}'s Markdown cells to render", STARTUP_S)
    t0 = time.monotonic()
    text, since = page.evaluate(_MARKDOWN_TEXT_JS), time.monotonic()
    while time.monotonic() - since < _STEADY_S:
        if time.monotonic() - t0 > STARTUP_S:
            pytest.fail(f"{name}: the rendered Markdown kept changing for {STARTUP_S:.0f} s")
        page.wait_for_timeout(250)
        now = page.evaluate(_MARKDOWN_TEXT_JS)
        if now != text:
            text, since = now, time.monotonic()
    return text


@pytest.mark.parametrize("name", REFERRING)
def test_cross_references_show_a_name_not_a_label(lab, browser, name):  # noqa: F811
    """Each notebook that refers to a label: its rendered Markdown (no kernel needed) shows none of the book's
    labels bare."""
    base, token = lab
    labels = book_labels()
    assert "sec-mla-decode" in labels            # the finder finds the book's labels
    page = _fresh_page(browser)
    try:
        page.goto(f"{base}/lab/tree/{name}?reset&token={token}", wait_until="load")
        text = _rendered_markdown(page, name)
        bare = sorted({w for w in re.findall(r"(?<![\w/#.-])[a-z][\w]*(?:-[\w]+)+(?![\w-])", text) if w in labels})
        assert not bare, f"{name}: bare labels in the rendered Markdown: {bare}"
    finally:
        page.context.close()
        _shutdown_kernels(base, token)
