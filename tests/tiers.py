"""The three tiers of the suite, and how a check that sweeps a matrix picks its share of it for ``make test``.

- ``make check`` (the edit loop, under 2 minutes): lint and the unit tests not marked ``slow``.
- ``make test`` (what CI runs): everything not marked ``audit``: the slow unit tests too, nbval over every
  notebook, the strict build, the browser suites.
- ``make audit`` (before a release): every test, the ``audit``-marked full matrices included.

A matrix (every explorer at every setting, every page in both themes at both widths, every notebook live) is
checked whole by ``make audit``; ``make test`` checks a representative share of it, which :func:`sample` picks:
the items a test names as representative (each a kind of its own), then a few more drawn at random with a fixed
seed, so a run is repeatable and a different seed (``SAMPLE_SEED``) draws another share. The items
left out are still parametrized, marked ``audit``: ``make audit`` runs them and nothing is lost.

A new test is in ``make check`` and ``make test`` by default. Mark it ``@pytest.mark.slow`` when it takes more
than a few CPU seconds (``make check`` lists those it sees, :data:`SLOW_CPU_S`), ``@pytest.mark.audit`` when it
only repeats at more settings what a ``make test`` check already shows.
"""
from __future__ import annotations

import os
import random

import pytest

#: ``SAMPLE_SEED``: the seed of the random share (default 0); pytest prints it in its header. (Not a
#: ``FLASHBOOK_*`` variable: those are part of the strict build's fingerprint, and a seed must not rebuild the book.)
SEED = int(os.environ.get("SAMPLE_SEED", "0") or 0)
#: A unit test whose call takes more CPU seconds than this (in its own process) is one ``make check`` should not
#: run: ``make check`` names it at the end so it can be marked ``slow``.
SLOW_CPU_S = 3.0


def pick(items, keep=(), extra: int = 0, label: str = "") -> list:
    """The share of ``items`` that ``make test`` checks: those in ``keep`` (in the order of ``items``), then
    ``extra`` more drawn from the rest with a generator seeded by :data:`SEED` and ``label`` (a name of the
    matrix, so two matrices draw independently).

    Raises ``ValueError`` when ``keep`` names an item that is not in ``items`` (a representative renamed or
    removed would otherwise leave its kind unchecked without a word)."""
    items = list(items)
    unknown = [k for k in keep if k not in items]
    if unknown:
        raise ValueError(f"{label or 'sample'}: representatives not among the items: {unknown}")
    rest = [x for x in items if x not in keep]
    drawn = random.Random(f"{SEED}:{label}").sample(rest, min(extra, len(rest)))
    return [x for x in items if x in keep or x in drawn]


def sample(items, keep=(), extra: int = 0, label: str = "", ids=None) -> list:
    """``items`` as parameters of ``pytest.mark.parametrize``: :func:`pick`'s share as they are, every other
    item marked ``audit`` (run by ``make audit`` only). ``ids`` (a function of the item) names them."""
    chosen = pick(items, keep, extra, label)
    return [pytest.param(x, marks=() if x in chosen else pytest.mark.audit, id=None if ids is None else ids(x))
            for x in items]


__all__ = ["SEED", "SLOW_CPU_S", "pick", "sample"]
