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
from test_live_notebooks import lab  # noqa: F401  (the live suite's JupyterLab, shared)

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


_KERNEL_IDLE_JS = """() => { const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"""


def test_the_first_notebook_starts_its_kernel_without_a_dialog(lab, browser):  # noqa: F811
    """The first notebook, opened from its URL in a fresh JupyterLab, Run All pressed as soon as its cells show
    (before its kernel is up): no "Select Kernel" dialog, then the kernel starts by itself, and Run All runs it.

    (JupyterLab 4.6 drops a Run All pressed while the notebook's session is still being created: its first code
    cell is left unrun, with no message. Without the book's autoStartDefaultKernel it asked for a kernel instead.)
    """
    base, token = lab
    page = _fresh_page(browser)
    try:
        page.goto(f"{base}/lab/tree/01_bottlenecks.ipynb?reset&token={token}", wait_until="load")
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
        # the notebook is the current widget (Run All acts on it) as soon as its cells show
        page.wait_for_function("() => { const w = window.jupyterapp.shell.currentWidget;"
                               " return !!(w && w.content && w.content.model && w.content.model.cells.length); }",
                               timeout=30_000, polling=50)
        # not awaited: the command's promise waits for whatever it runs into (a dialog would hold it forever)
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        deadline, dialog = time.monotonic() + 90, ""
        while time.monotonic() < deadline and not page.evaluate(_KERNEL_IDLE_JS):
            if page.locator(".jp-Dialog").count():
                dialog = page.locator(".jp-Dialog").first.inner_text()
                break
            page.wait_for_timeout(200)
        assert not dialog, f"a dialog stood in the way of Run All: {dialog[:200]!r}"
        assert page.evaluate(_KERNEL_IDLE_JS), "the notebook's kernel did not start by itself within 90 s"
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        page.wait_for_function(_FIRST_COUNT_JS, timeout=60_000, polling=200)
        assert not page.locator(".jp-Dialog").count()
    finally:
        page.context.close()
        _shutdown_kernels(base, token)


_MARKDOWN_TEXT_JS = r"""() => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell .jp-MarkdownOutput, '
    + '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell .myst'))
  .map(e => { const c = e.cloneNode(true);
              c.querySelectorAll('pre, code, mjx-container, script, style').forEach(x => x.remove());
              return c.textContent; }).join('\n')"""


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
        page.wait_for_selector(".jp-NotebookPanel .jp-MarkdownCell .jp-MarkdownOutput, "
                               ".jp-NotebookPanel .jp-MarkdownCell .myst", timeout=90_000)
        page.wait_for_timeout(1500)              # jupyterlab-myst renders the cells one after another
        text = page.evaluate(_MARKDOWN_TEXT_JS)
        bare = sorted({w for w in re.findall(r"(?<![\w/#.-])[a-z][\w]*(?:-[\w]+)+(?![\w-])", text) if w in labels})
        assert not bare, f"{name}: bare labels in the rendered Markdown: {bare}"
    finally:
        page.context.close()
        _shutdown_kernels(base, token)
