"""Launch buttons on every notebook page, all derived from the one ``repository:`` setting in _config.yml."""
from __future__ import annotations

import html as htmllib
import re
import urllib.parse

import pytest
import yaml

from bookbrowser import HTML, PAGES, ROOT, is_notebook, source_of

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
NOTEBOOKS = [d for d in PAGES if is_notebook(d)]


def _repo():
    repo = CONFIG["repository"]
    org, name = urllib.parse.urlsplit(repo["url"]).path.strip("/").split("/")[:2]
    book = (repo.get("path_to_book") or "").strip("/")
    return org, name, repo.get("branch", "main"), (book + "/" if book else "")


def _hrefs(doc: str) -> list[str]:
    text = (HTML / (doc + ".html")).read_text(encoding="utf-8")
    return [htmllib.unescape(h) for h in re.findall(r'href="([^"]+)"', text)]


def test_repository_setting_is_complete():
    repo = CONFIG["repository"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/?", repo["url"]), repo["url"]
    assert repo.get("branch"), "repository.branch must be set (Binder and Colab links use it)"
    launch = CONFIG["launch_buttons"]
    assert launch["binderhub_url"].startswith("https://") and launch["colab_url"].startswith("https://")
    # Binder opens JupyterLab, where jupyterlab-myst renders the MyST prose, not the classic UI.
    assert launch.get("notebook_interface") == "jupyterlab", launch.get("notebook_interface")


@pytest.mark.parametrize("doc", NOTEBOOKS)   # an empty list fails at collection (pyproject.toml)
def test_binder_and_colab_links(doc):
    org, name, branch, book = _repo()
    src = source_of(doc).relative_to(ROOT).as_posix()
    path = book + src
    binder = CONFIG["launch_buttons"]["binderhub_url"].rstrip("/")
    colab = CONFIG["launch_buttons"]["colab_url"].rstrip("/")
    ui = {"classic": "tree", "jupyterlab": "lab/tree"}[CONFIG["launch_buttons"].get("notebook_interface", "classic")]
    hrefs = _hrefs(doc)
    binder_links = [h for h in hrefs if h.startswith(binder + "/")]
    colab_links = [h for h in hrefs if h.startswith(colab + "/")]
    assert binder_links == [f"{binder}/v2/gh/{org}/{name}/{branch}?urlpath={ui}/{path}"], binder_links
    assert colab_links == [f"{colab}/github/{org}/{name}/blob/{branch}/{path}"], colab_links
    assert (ROOT / src).exists(), f"the launch links open {src}, which is not in the repository"


@pytest.mark.parametrize("doc", NOTEBOOKS)   # an empty list fails at collection (pyproject.toml)
def test_thebe_live_code(doc):
    """Thebe ("Live Code") is configured for the same repository and branch (it runs on Binder)."""
    org, name, branch, _ = _repo()
    text = (HTML / (doc + ".html")).read_text(encoding="utf-8")
    assert "thebe-launch-button" in text or "launch-thebe" in text, f"{doc}: no Live Code button"
    assert re.search(rf'repo:\s*"{re.escape(org)}/{re.escape(name)}"', text), f"{doc}: thebe repo mismatch"
    assert re.search(rf'ref:\s*"{re.escape(branch)}"', text), f"{doc}: thebe branch mismatch"
