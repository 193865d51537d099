"""The live notebooks as a reader sees them: JupyterLab 4 + jupyterlab-myst in headless Chromium, Run All.

The test starts its own JupyterLab on 127.0.0.1 (free port, random token, ``--no-browser``, the kernel of
this ``.venv``) over a temporary copy of ``book/`` (so nothing is ever saved into the repository), opens
each notebook (``make test``: one of each kind, :data:`LIVE_IN_TEST`; ``make audit``: every notebook), runs all
cells, and checks what the reader sees:

* no error output;
* no raw MyST in the rendered Markdown (roles, directive options, fences, unrendered ``$``);
* the admonitions and exercise boxes of the source are rendered as boxes, and no ``{eval}`` is left;
* every explorer shows its widgets and an image with its text alternative (what the figure shows, at the
  setting shown), and moving its first control changes the image;
* solution cells are collapsed (source and output) and no solution output is visible.

Every request to a host other than 127.0.0.1 is aborted: JupyterLab, its MathJax and the MyST renderer are
served locally. Marked ``browser`` (``make browser``).

No wait here is a deadline a loaded machine can miss: Run All and the rendering after it are waited for as long
as they make progress (a cell finishing, a number rendered), and the other waits are some ten times what they
take at a load average of 10; each failure says what it waited for.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bookbrowser import RAW_MATH, ROOT, SCREENSHOTS, SHOTS, is_local
from tiers import sample

BOOK = ROOT / "book"
#: every page of the book that is a notebook, the labs included (paths below book/, as JupyterLab opens them)
NOTEBOOKS = sorted(p.relative_to(BOOK).as_posix() for p in (*BOOK.glob("*.ipynb"), *BOOK.glob("labs/*.ipynb")))
#: The notebooks make test runs live, one of each kind (make audit runs every notebook live; nbval executes every
#: one in make test either way): a chapter with four explorers (the one whose Run All once stalled), a chip lab, the
#: exercises page. Every notebook that imports the CUDA labs' harness (``cudalab``) runs live in make test too
#: (:func:`live_in_test`). Add a notebook's path here to run it live in make test.
LIVE_IN_TEST = ("06b_scheduling_decode.ipynb", "labs/lab2_flash_forward.ipynb", "12_exercises.ipynb")
JUPYTER = Path(sys.executable).parent / "jupyter"
RAW_MYST = re.compile(r"\{(glue|eval|cite|doc|ref|numref|eq|exercise|solution|admonition)[:}]|:class:|:label:"
                      r"|```\{|\{glue:text\}")
EVAL_ROLE = re.compile(r"\{eval\}`([^`]+)`")
SETTINGS = {
    # the notebook tracker's settings (windowingMode, autoStartDefaultKernel) and the notifications' (no news
    # question) are left to the book's own defaults (jupyter-config/labconfig, installed by make venv), which a
    # reader's JupyterLab gets too: the test must see what a reader sees
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}

#: Seconds for JupyterLab's server to answer, JupyterLab to load in the page, or a kernel to start and be idle:
#: some ten times what each takes on a 2-core machine at a load average of 10 (about 10, 15 and 15 s).
STARTUP_S = 180.0
#: Seconds for an explorer's image (and then its text alternative) to change after a control moved: a move is
#: a compute and a draw in the kernel, at most about 2 s at a load average of 10.
MOVE_S = 120.0
#: Seconds the rendering after Run All (jupyterlab-myst's {eval} numbers, the widgets' controls) may go without
#: any change before the test reports what is missing: progress-based, as Run All is.
RENDER_STALL_S = 60.0


def _cells(name: str) -> list[dict]:
    return json.loads((BOOK / name).read_text(encoding="utf-8"))["cells"]


_IMPORTS_CUDALAB = re.compile(r"^\s*(?:from|import)\s+cudalab\b", re.M)


def live_in_test() -> list[str]:
    """The notebooks ``make test`` runs live: :data:`LIVE_IN_TEST` and every notebook with a code cell that
    imports ``cudalab`` (a CUDA lab's page), in the order of :data:`NOTEBOOKS`."""
    return [n for n in NOTEBOOKS if n in LIVE_IN_TEST or any(
        c["cell_type"] == "code" and _IMPORTS_CUDALAB.search("".join(c["source"])) for c in _cells(n))]


def _solution_cells(cells: list[dict]) -> list[int]:
    """Indices of the worked solutions: each ``{solution}`` Markdown cell and the code cell that follows it."""
    out = []
    for i, c in enumerate(cells):
        if c["cell_type"] == "markdown" and "{solution}" in "".join(c["source"]):
            out.append(i)
            if i + 1 < len(cells) and cells[i + 1]["cell_type"] == "code":
                out.append(i + 1)
    return out


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_solution_cells_are_folded_in_the_source(name):
    """Every worked solution is folded: prose in a dropdown ``{solution}``, code with its source collapsed in
    JupyterLab and hidden in the book, and its printed answer inside a closed ``<details>``
    (``flashbook.exercises.solution_output``); no gated ``{solution-start}`` left (its prose would show live)."""
    cells = _cells(name)
    assert not any("{solution-start}" in "".join(c["source"]) for c in cells), \
        f"{name}: gated solution-start/solution-end shows its prose in JupyterLab; fold it (tests/tools/fold_solutions.py)"
    assert not any("{solution-end}" in "".join(c["source"]) for c in cells), \
        f"{name}: a {{solution-end}} fence is left: its prose shows after the dropdown (tests/tools/fold_solutions.py)"
    for i in _solution_cells(cells):
        c, src = cells[i], "".join(cells[i]["source"])
        if c["cell_type"] == "markdown":
            assert ":class: dropdown" in src, f"{name}: solution cell {i} must be a dropdown"
        else:
            assert c["metadata"].get("jupyter", {}).get("source_hidden"), f"{name}: cell {i} must fold its source"
            assert "hide-input" in c["metadata"].get("tags", []), f"{name}: cell {i} must hide its input in the book"
            assert src.startswith("with solution_output():"), f"{name}: cell {i} must fold its output"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Base URL and token of a JupyterLab serving a copy of book/ (stopped at the end)."""
    if not JUPYTER.exists():
        pytest.fail(f"{JUPYTER} is missing: requirements.txt installs jupyterlab (make venv)")
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "book"
    shutil.copytree(BOOK, root, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints", "__pycache__"))
    for key, value in SETTINGS.items():
        f = tmp / "settings" / (key + ".jupyterlab-settings")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp / "ws"),
               MPLBACKEND="Agg", FLASHBOOK_PREFETCH="1")   # as a reader's kernel runs (unit tests turn it off)
    env.pop("FLASHBOOK_STATIC", None)
    log = open(tmp / "lab.log", "w")
    proc = subprocess.Popen(
        [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--allow-root",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--ServerApp.terminals_enabled=False", "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.expose_app_in_browser=True"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=10)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab's server did not answer /api/status within {STARTUP_S:.0f} s (or exited):\n"
                                + (tmp / "lab.log").read_text()[-3000:])
                time.sleep(0.3)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def lab_page(lab, browser):
    """One JupyterLab page in headless Chromium (other hosts blocked); notebooks open in it one by one.

    It uses the session's one Chromium (``browser`` in conftest.py): Playwright's sync API allows one
    instance per process, and the built-book tests share it."""
    base, token = lab
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.blocked, page.js_errors = [], []

    def route(r):
        if is_local(r.request.url):
            r.continue_()
        else:
            page.blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("pageerror", lambda e: page.js_errors.append(str(e)))
    yield page
    context.close()


_RENDERED_JS = r"""
() => {
  const cells = Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell'));
  const ANSWER = ['.jp-RenderedMarkdown', '.jp-MarkdownOutput', '.myst'].flatMap(m => [m + ' p', m + ' li', m + ' td'])
                 .concat(['.jp-OutputArea-output pre', '.jp-OutputArea-output td', '.jp-OutputArea-output p']).join(', ');
  return cells.map(c => {
    const md = c.classList.contains('jp-MarkdownCell');
    const rendered = c.querySelector('.jp-MarkdownOutput, .myst');
    let text = '';
    if (md && rendered) {
      const clone = rendered.cloneNode(true);
      clone.querySelectorAll('pre, code, mjx-container, .MathJax, math, script, style').forEach(e => e.remove());
      text = clone.textContent;
    }
    const out = c.querySelector('.jp-Cell-outputWrapper');
    const input = c.querySelector('.jp-Cell-inputWrapper');
    const visible = e => !!e && e.offsetParent !== null && e.getBoundingClientRect().height > 0;
    return {
      md, text,
      admonitions: c.querySelectorAll('.myst-admonition').length,
      exercises: c.querySelectorAll('.myst-exercise').length,
      errors: c.querySelectorAll('[data-mime-type="application/vnd.jupyter.error"], .jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]').length,
      errorText: Array.from(c.querySelectorAll('[data-mime-type="application/vnd.jupyter.error"]')).map(e => e.textContent.slice(0, 500)).join('\n'),
      inputVisible: visible(c.querySelector('.jp-InputArea')),
      outputVisible: visible(c.querySelector('.jp-OutputArea')) &&
                     (c.querySelector('.jp-OutputArea').textContent.trim().length > 0 || !!c.querySelector('.jp-OutputArea img')),
      // Text a reader can see without opening anything: paragraphs, list items, preformatted output and
      // table cells, outside any closed <details> (a dropdown's summary/title is not an answer).
      // (jupyterlab-myst renders into .jp-MarkdownOutput/.myst, not .jp-RenderedMarkdown)
      answerVisible: Array.from(c.querySelectorAll(ANSWER))
                          .some(e => visible(e) && e.textContent.trim().length > 0 && !e.closest('details:not([open]), summary')),
      answerText: Array.from(c.querySelectorAll(ANSWER))
                          .filter(e => visible(e) && !e.closest('details:not([open]), summary')).map(e => e.textContent).join(' | ').slice(0, 300),
      widgets: c.querySelectorAll('.jupyter-widgets.widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-hslider, .widget-islider').length,
      images: c.querySelectorAll('.jp-OutputArea img').length,
      // an explorer's image is described by a hidden live region after it (flashbook.explorer.Explorer.describe)
      described: Array.from(c.querySelectorAll('.fb-live-description [aria-live]')).map(e => e.textContent).pop() || '',
      prompt: (c.querySelector('.jp-InputPrompt') || {textContent: ''}).textContent.trim(),
    };
  });
}
"""


_OPEN_JS = r"""
async (name) => {
  const app = window.jupyterapp;
  const panel = await app.commands.execute('docmanager:open', {path: name, factory: 'Notebook'});
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  return panel.id;
}
"""

_CLOSE_JS = r"""
async () => {
  // close every open document and shut its kernel down, without a "save your work?" dialog
  for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) {
    if (w.context) {
      w.context.model.dirty = false;
      if (w.sessionContext) { await w.sessionContext.shutdown(); }
      w.dispose();
    }
  }
}
"""

_KERNEL_READY_JS = r"""
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const k = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle'
         && !!document.querySelector('#' + CSS.escape(panel.id) + ' .jp-Notebook .jp-Cell');
}
"""

_RUN_ALL_START_JS = r"""
() => {
  // Run > Run All Cells; the command's promise resolves once every cell has run (or rejects): kept on the window,
  // and the test polls the notebook's progress meanwhile (_RUN_ALL_PROGRESS_JS)
  const app = window.jupyterapp;
  window.fbRunAll = {done: false, error: null};
  app.commands.execute('notebook:run-all-cells').then(
      ok => { window.fbRunAll.done = true; window.fbRunAll.ok = ok; },
      e => { window.fbRunAll.done = true; window.fbRunAll.error = String(e); });
}
"""

_RUN_ALL_PROGRESS_JS = r"""
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.model.cells;
  const counts = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type === 'code') counts.push(c.sharedModel.getSource().trim() ? c.executionCount : 'empty');
  }
  const k = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return {done: window.fbRunAll.done, ok: window.fbRunAll.ok, error: window.fbRunAll.error, counts,
          status: k ? k.status : 'no kernel', connection: k ? k.connectionStatus : 'none'};
}
"""

#: Seconds Run All may go without a code cell finishing before the test calls it stalled. Progress-based, not a
#: deadline on the whole notebook: a loaded machine only makes each cell slower. The slowest cell of the book
#: (a first explorer drawn in a fresh kernel) takes about 4 s on a quiet 2-core machine: this is some fifty times
#: that, so only a cell that does not finish at all (a stall) reaches it.
RUN_ALL_STALL_S = 180.0


def _run_all(page, name: str) -> list[str]:
    """Run All in the open notebook and wait for the command to resolve, as long as the cells keep finishing
    (no code cell finishing for :data:`RUN_ALL_STALL_S` is a stall, reported with the cells run so far and the
    kernel's state). Returns the progress timeline (seconds after the start, cells done)."""
    page.evaluate(_RUN_ALL_START_JS)
    t0 = last_change = time.monotonic()
    seen, timeline = None, []
    while True:
        state = page.evaluate(_RUN_ALL_PROGRESS_JS)
        done = sum(isinstance(n, int) for n in state["counts"])
        now = time.monotonic()
        if done != seen:
            seen, last_change = done, now
            timeline.append(f"{now - t0:.1f} s: {done}/{len(state['counts'])}")
        if state["done"]:
            break
        if now - last_change > RUN_ALL_STALL_S:
            pytest.fail(f"{name}: Run All stalled: no code cell finished for {RUN_ALL_STALL_S:.0f} s "
                        f"({now - t0:.0f} s after it started); execution counts {state['counts']}, kernel "
                        f"{state['status']} ({state['connection']}); progress {timeline}")
        page.wait_for_timeout(250)   # the polling interval
    assert not state["error"], f"{name}: Run All failed: {state['error']}; execution counts {state['counts']}"
    assert state["ok"] is not False, f"{name}: Run All stopped before the end: execution counts {state['counts']}"
    assert all(isinstance(n, int) for n in state["counts"] if n != "empty"), \
        f"{name}: cells left unexecuted after Run All: {state['counts']}"
    return timeline


def _open_and_run_all(page, base, token, name):
    """Open ``name`` in the already loaded JupyterLab page, wait for its kernel, and Run All to the end.

    The wait is on the kernel and on the Run All command itself (its promise resolves once every cell has
    run), not on counting prompts in the DOM: a notebook that renders quickly used to reach Run All before its
    kernel was connected, and JupyterLab then skipped every cell ("Session has no kernel.")."""
    t_lab = time.monotonic()
    if not page.evaluate("() => !!window.jupyterapp"):
        page.goto(f"{base}/lab?reset&token={token}")
        _wait_for(page, "() => !!window.jupyterapp && window.jupyterapp.started !== undefined",
                  "JupyterLab's application object in the page", STARTUP_S)
        page.evaluate("() => window.jupyterapp.restored")
        print(f"JupyterLab loaded in the page in {time.monotonic() - t_lab:.1f} s", flush=True)
    t0 = time.monotonic()
    page.evaluate(_OPEN_JS, name)
    _wait_for(page, _KERNEL_READY_JS, f"{name}'s kernel to be connected and idle", STARTUP_S)
    t1 = time.monotonic()
    timeline = _run_all(page, name)
    # Markdown cells render their {eval} once the kernel answers: wait until the kernel is idle again (then
    # _rendered waits for the rendering itself)
    _wait_for(page, _KERNEL_READY_JS, f"{name}'s kernel to be idle after Run All", STARTUP_S)
    print(f"{name}: open + kernel {t1 - t0:.1f} s, Run All {time.monotonic() - t1:.1f} s ({timeline[-1]})",
          flush=True)


def _wait_for(page, js: str, what: str, timeout_s: float) -> None:
    """Poll ``js`` in the page until it is true; after ``timeout_s`` fail saying what was waited for."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(js, timeout=timeout_s * 1000, polling=100)
    except PlaywrightTimeout:
        pytest.fail(f"waited {timeout_s:.0f} s for {what}")


#: an exercise's label (``ex-standard-io``) as a reader would see it when a {ref} to it is left unresolved
RAW_EXERCISE_LABEL = re.compile(r"(?<![\w/#-])ex-[a-z0-9]+(?:-[a-z0-9]+)*(?![\w-])")


def _markdown_problems(cells: list[dict], source: list[dict]) -> list[str]:
    """What the rendered Markdown cells get wrong: raw MyST or TeX, an {eval} showing its expression, an
    admonition or exercise box not rendered."""
    problems = []
    for i, (c, s) in enumerate(zip(cells, source)):
        if s["cell_type"] != "markdown":
            continue
        src = "".join(s["source"])
        raw = RAW_MYST.search(c["text"]) or RAW_MATH.search(c["text"])
        if raw:
            problems.append(f"cell {i}: raw markup {raw.group(0)!r} in {c['text'][max(0, raw.start() - 60):raw.end() + 60]!r}")
        for expr in EVAL_ROLE.findall(src):      # an {eval} left unevaluated shows its expression
            if expr.strip() and expr.strip() in c["text"]:
                problems.append(f"cell {i}: {{eval}} not evaluated, its expression {expr.strip()!r} shows")
        label = RAW_EXERCISE_LABEL.search(c["text"])
        if label:                                 # a cross-reference JupyterLab cannot resolve shows its label
            problems.append(f"cell {i}: raw exercise label {label.group(0)!r} shows (write the exercise's number and "
                            "title with a {doc} link)")
        if src.count("```{admonition}") > c["admonitions"]:
            problems.append(f"cell {i}: {src.count('```{admonition}')} admonitions, {c['admonitions']} rendered")
        if src.count("```{exercise}") > c["exercises"]:
            problems.append(f"cell {i}: {src.count('```{exercise}')} exercises, {c['exercises']} rendered")
    return problems


def _explorer_cells(source: list[dict]) -> list[int]:
    """Indices of the code cells that show an explorer (``show(...)``)."""
    return [i for i, s in enumerate(source) if s["cell_type"] != "markdown" and "show(" in "".join(s["source"])]


def _rendered(page, source: list[dict]) -> list[dict]:
    """The notebook's cells as rendered (``_RENDERED_JS``), once every cell is there, every Markdown cell
    shows its {eval} numbers and its boxes and every explorer its widgets and image, or as they are when the
    rendering made no progress for :data:`RENDER_STALL_S` seconds (the test then reports what is wrong).

    jupyterlab-myst renders a Markdown cell's {eval} roles when the kernel answers them, and the widget
    manager draws an explorer's controls when its comm opens, both after Run All: a condition polled as long as
    the rendering moves on, not a fixed pause, so a slow machine only waits longer."""
    seen, last_change = None, time.monotonic()
    while True:
        cells = page.evaluate(_RENDERED_JS)
        problems = _markdown_problems(cells, source) if len(cells) == len(source) else None
        ready = [i for i in _explorer_cells(source) if i < len(cells) and cells[i]["widgets"] and cells[i]["images"]]
        if len(cells) == len(source) and not problems and len(ready) == len(_explorer_cells(source)):
            return cells
        state = (len(cells), tuple(problems or ()), tuple(ready))
        if state != seen:
            seen, last_change = state, time.monotonic()
        elif time.monotonic() - last_change > RENDER_STALL_S:
            return cells
        page.wait_for_timeout(100)   # the polling interval


def _image_src(cell):
    img = cell.locator(".jp-OutputArea img").last
    return img.get_attribute("src") if img.count() else None


_IMAGE_CHANGED_JS = """([cell, before]) => {
  const imgs = cell.querySelectorAll('.jp-OutputArea img');
  const src = imgs.length ? imgs[imgs.length - 1].getAttribute('src') : null;
  return src !== null && src !== before;
}"""


def _changed(page, js: str, cell, before, timeout_ms: int) -> bool:
    """Whether ``js`` (:data:`_IMAGE_CHANGED_JS`, :data:`_DESCRIPTION_CHANGED_JS`), given the cell and the value
    ``before``, turns true within ``timeout_ms`` (polled in the page)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(js, arg=[cell.element_handle(), before], timeout=timeout_ms, polling=50)
        return True
    except PlaywrightTimeout:
        return False


def _image_changed(page, cell, before) -> bool:
    """Whether the explorer's image differs from ``before`` within :data:`MOVE_S` seconds."""
    return _changed(page, _IMAGE_CHANGED_JS, cell, before, int(MOVE_S * 1000))


_DESCRIPTION_CHANGED_JS = """([cell, before]) => {
  const d = Array.from(cell.querySelectorAll('.fb-live-description [aria-live]')).pop();
  return !!d && d.textContent !== before;
}"""


def _description_changed(page, cell, before: str) -> bool:
    """Whether the explorer's text alternative differs from ``before`` within :data:`MOVE_S` seconds (the kernel
    sends it just after the image)."""
    return _changed(page, _DESCRIPTION_CHANGED_JS, cell, before, int(MOVE_S * 1000))


def _move_first_control(page, cell) -> str | None:
    """Move the explorer's first control one step (a slider at its maximum one step down); return None if the
    image changed within :data:`MOVE_S` seconds, else a message saying what did not happen."""
    before = _image_src(cell)
    slider = cell.locator(".widget-slider .noUi-handle, .widget-hslider .noUi-handle, "
                          ".widget-slider [role=slider], .widget-hslider [role=slider]")
    select = cell.locator(".widget-dropdown select")
    if slider.count():
        handle = slider.first
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        handle.focus()
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        what = f"the first slider one step {'down' if at_max else 'up'}"
    elif select.count():
        options = select.first.locator("option").all_text_contents()
        current = select.first.input_value()
        other = next(o for o in select.first.locator("option").all() if o.get_attribute("value") != current)
        select.first.select_option(other.get_attribute("value"))
        assert len(options) > 1
        what = f"the first dropdown to {other.get_attribute('value')!r}"
    else:
        return "no slider or dropdown"
    if _image_changed(page, cell, before):   # a generous deadline, not a pause: it returns once the image changes
        return None
    return f"moving {what} did not change the image within {MOVE_S:.0f} s"


@pytest.mark.parametrize("name", sample(NOTEBOOKS, keep=live_in_test(), label="live notebooks"))
def test_live_notebook(lab, lab_page, name):
    base, token = lab
    page = lab_page
    page.js_errors.clear()
    t0 = time.monotonic()
    try:
        _open_and_run_all(page, base, token, name)
        source = _cells(name)
        cells = _rendered(page, source)
        t_run = time.monotonic()
        assert len(cells) == len(source), f"{name}: {len(cells)} cells rendered, {len(source)} in the file"
        problems = _markdown_problems(cells, source)
        explorers = _explorer_cells(source)
        for i, c in enumerate(cells):
            if c["errors"]:
                problems.append(f"cell {i}: error output {c['errorText'][:300]!r}")
            if i in explorers:
                if not c["widgets"] or not c["images"]:
                    problems.append(f"cell {i}: explorer without widgets ({c['widgets']}) or image ({c['images']})")
                elif "Shown: " not in c["described"]:
                    problems.append(f"cell {i}: the explorer's image has no text alternative ({c['described']!r})")
                else:
                    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell").nth(i)
                    msg = _move_first_control(page, cell)
                    if msg:
                        problems.append(f"cell {i}: {msg}")
                    elif not _description_changed(page, cell, c["described"]):
                        problems.append(f"cell {i}: the image changed but {MOVE_S:.0f} s later its text "
                                        f"alternative still says {c['described']!r}")
        for i in _solution_cells(source):
            if cells[i]["inputVisible"] and source[i]["cell_type"] == "code":
                problems.append(f"cell {i}: a solution cell shows its source before the reader asks")
            if cells[i]["answerVisible"]:
                problems.append(f"cell {i}: a solution shows its answer before the reader asks: "
                                f"{cells[i]['answerText'][:200]!r}")
        assert not problems, f"{name}:\n" + "\n".join(problems)
        assert not page.js_errors, f"{name}: page errors {page.js_errors[:5]}"
        assert not page.blocked, f"{name}: JupyterLab tried to reach other hosts: {page.blocked[:5]}"
    finally:
        t_end = time.monotonic()
        print(f"{name}: {t_end - t0:.1f} s in all, checks and control moves "
              f"{t_end - locals().get('t_run', t_end):.1f} s")
        if SCREENSHOTS:
            shot = SHOTS.parent / "live" / (name + ".png")
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot))
        if page.evaluate("() => !!window.jupyterapp"):
            page.evaluate(_CLOSE_JS)
        _shutdown_kernels(base, token)


def _shutdown_kernels(base: str, token: str) -> None:
    """Stop every kernel this test started (one notebook at a time keeps the 2-core machine responsive)."""
    with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=STARTUP_S) as r:
        kernels = json.load(r)
    for k in kernels:   # the server answers once the kernel has stopped (a kernel that does not is killed)
        req = urllib.request.Request(f"{base}/api/kernels/{k['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(req, timeout=STARTUP_S).close()
