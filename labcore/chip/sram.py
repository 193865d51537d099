"""The SRAM budget of one CTA: ``M`` elements, what is held, the peak, and a timeline of the use.

What is on chip (the rules of :mod:`labcore.chip.tile`): every tile loaded from HBM and every buffer, each until
its ``with`` block ends; every array a kernel makes with the facade's constructors (``np.zeros``, ``np.full``, ...),
while it is alive; and every array computed from on-chip data that is used after that data's block ended (a copy
kept), from the moment the block ended until the array dies. Holding more than ``M`` elements raises
:class:`SRAMCapacityError`, whose message lists what is held. Temporaries of arithmetic used inside their block (a
score tile ``S = Q_i @ K_j.T``, ``P = exp(S - m)``) are not counted: like registers, they are outside the budget, as
in the FlashAttention paper's choice ``B_c = ceil(M / 4d)``, which counts the four tiles Q_i, K_j, V_j, O_i (Dao
et al. 2022, Algorithm 1, line 1).

A kept array is found only when it is used again, after its block ended; it is then counted from the moment the
block ended (:meth:`SRAM.hold` with ``since``), so the SRAM keeps the use after every event (its *timeline*) and
checks the whole window against ``M``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..checks import positive_int

__all__ = ["SRAM", "SRAMCapacityError"]

#: Largest SRAM a CTA may be given (elements): far above any GPU's shared memory, a guard against typos.
MAX_M = 2 ** 26


class SRAMCapacityError(MemoryError):
    """Raised when a CTA would hold more than ``M`` elements on chip.

    Attributes:
        held: ``[(label, elements), ...]`` held when the request came (in order of allocation).
        request: ``(label, elements)`` that did not fit. M: the budget (elements).
        at_used: elements held at the moment of the window where it did not fit (a kept copy counts from the end
            of its block; for an ordinary request, what is held now).
    """

    def __init__(self, held, request, M, at_used=None):
        self.held, self.request, self.M = list(held), request, M
        used = sum(n for _, n in self.held) if at_used is None else at_used
        self.at_used = used
        listing = ", ".join(f"{lab} ({n:,})" for lab, n in self.held) or "nothing"
        when = "" if at_used is None else " at a moment since its block ended"
        super().__init__(
            f"SRAM capacity exceeded: {request[0]} needs {request[1]:,} elements but {used:,} of M = {M:,} are held"
            f"{when} (held now: {listing}); {used + request[1]:,} > {M:,}. Use smaller tiles, or release tiles (end "
            "their `with` block) before loading more")


class SRAM:
    """Elements held on chip by one CTA, against a budget of ``M``.

    Args:
        M: capacity in elements (int, 1 .. 2**26).
    Attributes:
        M, used, peak, held, clock: read-only; ``used`` is the elements held now, ``peak`` the largest ``used`` so
            far (kept copies counted over their whole window), ``held`` a list of ``(label, elements)``, ``clock``
            the events so far (each hold and release is one).
    Raises:
        TypeError/ValueError: M not an integer in range.
    """

    __slots__ = ("_M", "_held", "_next", "_used", "_peak", "_timeline")

    def __init__(self, M: int):
        self._M = positive_int(M, "M", maximum=MAX_M)
        self._held: dict[int, tuple[str, int]] = {}
        self._next = 0
        self._used = 0
        self._peak = 0
        self._timeline = [0]            # elements held after each event

    @property
    def M(self) -> int:
        return self._M

    @property
    def used(self) -> int:
        return self._used

    @property
    def peak(self) -> int:
        return self._peak

    @property
    def clock(self) -> int:
        return len(self._timeline) - 1

    @property
    def held(self) -> list:
        return list(self._held.values())

    def hold(self, label: str, elements: int, *, since: int | None = None) -> int:
        """Reserve ``elements`` for ``label``; returns a handle for :meth:`release`.

        Args:
            label: what is held (str), for messages.
            elements: int >= 0.
            since: a past ``clock`` from which the elements count (a copy kept since its block ended);
                None: from now.
        Raises:
            TypeError/ValueError: bad arguments. SRAMCapacityError: ``used + elements > M`` now, or at any moment
            since ``since``.
        """
        if not isinstance(label, str):
            raise TypeError(f"label must be a string, got {type(label).__name__}")
        elements = positive_int(elements, "elements", minimum=0, maximum=MAX_M)
        last = len(self._timeline) - 1
        start = last if since is None else positive_int(since, "since", minimum=0, maximum=last)
        window = self._timeline[start:]
        worst = max(window)
        if worst + elements > self._M:
            raise SRAMCapacityError(self.held, (label, elements), self._M, None if start == last else worst)
        for k in range(start, last + 1):
            self._timeline[k] += elements
        self._next += 1
        self._held[self._next] = (label, elements)
        self._used += elements
        self._peak = max(self._peak, worst + elements)
        self._timeline.append(self._used)
        return self._next

    def release(self, handle: int) -> None:
        """Give back what :meth:`hold` reserved (once; a second release is a ValueError).

        Args:
            handle: what :meth:`hold` returned (an int).
        Raises:
            TypeError: ``handle`` is not an int (a bool, a float, a string, None). ValueError: a handle this SRAM
            never gave out, or one already released.
        """
        if isinstance(handle, (bool, np.bool_)) or not isinstance(handle, numbers.Integral):
            raise TypeError(f"handle must be an int returned by SRAM.hold, got {handle!r} ({type(handle).__name__})")
        handle = int(handle)
        if handle not in self._held:
            if not 1 <= handle <= self._next:
                raise ValueError(f"handle {handle} was never returned by this SRAM's hold (it has given out handles "
                                 f"1 .. {self._next})")
            raise ValueError(f"handle {handle}: this tile was already released (what hold reserved is given back once)")
        self._used -= self._held.pop(handle)[1]
        self._timeline.append(self._used)

    def __repr__(self) -> str:
        return f"SRAM(M={self._M:,}, used={self._used:,}, peak={self._peak:,})"
