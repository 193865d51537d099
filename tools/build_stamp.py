"""The strict build's stamp: is ``_build/html`` already the strict build of this exact source?

``make book`` and ``make book-strict`` run the same strict build (a clean ``jupyter-book build . -n -W
--keep-going`` plus the checks of the built HTML in the Makefile). When it passes, ``end`` writes
``_build/.strict-stamp``: a SHA-256 of everything the build could read and a SHA-256 of the HTML it wrote.
``check`` exits 0 only when both still hold, so ``make test`` right after ``make book`` runs the browser suites
over that build instead of building the same source a second time; any change (a file's bytes, a file added
or removed, an installed package, the Python, a ``FLASHBOOK_*`` variable, the build command, a byte of the
HTML) makes ``check`` fail and the build run again.

What the build could read (:func:`source_fingerprint`):

* every file git would commit (``git ls-files --cached --others --exclude-standard``: tracked files and the
  untracked ones not ignored), by path and bytes, the deleted ones by path;
* the name and version of every installed distribution, and ``sys.version``;
* the environment variables that change what a build draws or executes (``FLASHBOOK_*``, ``PYTHONHASHSEED``,
  ``MPLBACKEND``);
* the build command itself (the Makefile passes it).

Outside a git checkout there is no stamp: ``check`` fails and every build runs.

Usage (from the repository root)::

    python tools/build_stamp.py check COMMAND   # exit 0: _build/html is the strict build of this source
    python tools/build_stamp.py begin COMMAND   # before a strict build: forget the old stamp, note the source
    python tools/build_stamp.py end COMMAND     # after it passed: write the stamp (if the source did not change)
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib.metadata import distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the environment variables a build's output can depend on
ENV_PREFIXES = ("FLASHBOOK_",)
ENV_NAMES = ("PYTHONHASHSEED", "MPLBACKEND")


def source_fingerprint(root: Path, command: str, environ=os.environ) -> str | None:
    """SHA-256 (hex) of what a build of ``root`` with ``command`` could read (the module docstring's list),
    or None when ``root`` is not a git checkout (or git is missing)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    h = hashlib.sha256()
    for name in sorted(set(filter(None, listed.decode("utf-8", "surrogateescape").split("\0")))):
        path = root / name
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
        h.update(path.read_bytes() if path.is_file() else b"(deleted)")
        h.update(b"\0")
    for dist in sorted(f"{d.metadata['Name']}=={d.version}".lower() for d in distributions()):
        h.update(dist.encode() + b"\0")
    h.update(sys.version.encode() + b"\0")
    for key in sorted(environ):
        if key.startswith(ENV_PREFIXES) or key in ENV_NAMES:
            h.update(f"{key}={environ[key]}\0".encode())
    h.update(command.encode() + b"\0")
    return h.hexdigest()


def html_fingerprint(html: Path) -> str | None:
    """SHA-256 (hex) of every file under ``html`` (path and bytes), or None when it has no ``index.html``."""
    if not (html / "index.html").is_file():
        return None
    h = hashlib.sha256()
    for f in sorted(p for p in html.rglob("*") if p.is_file()):
        h.update(f.relative_to(html).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _paths(root: Path) -> tuple[Path, Path, Path]:
    build = root / "_build"
    return build / "html", build / ".strict-stamp", build / ".strict-begin"


def check(root: Path, command: str) -> tuple[bool, str]:
    """Whether ``root/_build/html`` is the strict build of ``root``'s source with ``command``, and why (a line)."""
    html, stamp, _ = _paths(root)
    if not stamp.is_file():
        return False, "no stamp of a strict build in _build/"
    try:
        recorded = json.loads(stamp.read_text())
    except ValueError:
        return False, "the stamp in _build/ is unreadable"
    source = source_fingerprint(root, command)
    if source is None:
        return False, "not a git checkout: the source cannot be fingerprinted"
    if recorded.get("source") != source:
        return False, "the source (files, packages, environment or command) changed since the last strict build"
    if recorded.get("html") != html_fingerprint(html):
        return False, "_build/html changed since the last strict build"
    return True, f"_build/html is the strict build of this exact source (built {recorded.get('built', '?')})"


def begin(root: Path, command: str) -> None:
    """Before a strict build: remove the old stamp and note the source's fingerprint."""
    html, stamp, started = _paths(root)
    stamp.unlink(missing_ok=True)
    started.parent.mkdir(parents=True, exist_ok=True)
    started.write_text(json.dumps({"source": source_fingerprint(root, command)}))


def end(root: Path, command: str) -> tuple[bool, str]:
    """After a strict build passed: write the stamp, unless the source changed while it ran (or there is no
    fingerprint); returns whether it was written and a line saying so."""
    import datetime

    html, stamp, started = _paths(root)
    try:
        before = json.loads(started.read_text()).get("source")
    except (OSError, ValueError):
        before = None
    started.unlink(missing_ok=True)
    source = source_fingerprint(root, command)
    if source is None or before != source:
        return False, "no stamp: the source changed during the build (or is not a git checkout)"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    stamp.write_text(json.dumps({"source": source, "html": html_fingerprint(html), "built": when}, indent=1))
    return True, f"stamp written: _build/html is the strict build of this source ({when})"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("check", "begin", "end"):
        print(__doc__.split("Usage")[1], file=sys.stderr)
        return 2
    action, command = argv
    if action == "begin":
        begin(ROOT, command)
        return 0
    ok, why = (check if action == "check" else end)(ROOT, command)
    print(why)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
