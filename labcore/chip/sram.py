"""The SRAM budget of one CTA: ``M`` elements, what is held, and the peak.

Every tile loaded from HBM and every on-chip buffer a kernel asks for is *held* until its ``with`` block
ends (the one idiom of the chip: ``with cta.load(...) as tile:`` / ``with cta.buffer(...) as acc:``).
Holding more than ``M`` elements raises :class:`SRAMCapacityError`, whose message lists what is held.
Temporaries of arithmetic (a score tile ``S = Q_i @ K_j.T``, ``P = exp(S - m)``) are not counted: like
registers, they are outside the budget, as in the FlashAttention paper's choice ``B_c = ceil(M / 4d)``, which
counts the four tiles Q_i, K_j, V_j, O_i (Dao et al. 2022, Algorithm 1, line 1).
"""
from __future__ import annotations

from ..checks import positive_int

__all__ = ["SRAM", "SRAMCapacityError"]


class SRAMCapacityError(MemoryError):
    """Raised when a CTA would hold more than ``M`` elements on chip.

    Attributes:
        held: ``[(label, elements), ...]`` held when the request came (in order of allocation).
        request: ``(label, elements)`` that did not fit. M: the budget (elements).
    """

    def __init__(self, held, request, M):
        self.held, self.request, self.M = list(held), request, M
        used = sum(n for _, n in self.held)
        listing = ", ".join(f"{lab} ({n:,})" for lab, n in self.held) or "nothing"
        super().__init__(
            f"SRAM capacity exceeded: {request[0]} needs {request[1]:,} elements but {used:,} of M = {M:,} are held "
            f"({listing}); {used + request[1]:,} > {M:,}. Use smaller tiles, or release tiles (end their `with` "
            "block) before loading more")


class SRAM:
    """Elements held on chip by one CTA, against a budget of ``M``.

    Args:
        M: capacity in elements (int >= 1).
    Attributes:
        M, used (elements held now), peak (largest ``used`` so far), held (list of ``(label, elements)``).
    Raises:
        TypeError/ValueError: M not an integer >= 1.
    """

    def __init__(self, M: int):
        self.M = positive_int(M, "M")
        self._held: dict[int, tuple[str, int]] = {}
        self._next = 0
        self.used = 0
        self.peak = 0

    @property
    def held(self) -> list:
        return list(self._held.values())

    def hold(self, label: str, elements: int) -> int:
        """Reserve ``elements`` for ``label``; returns a handle for :meth:`release`.

        Raises: SRAMCapacityError when ``used + elements > M``.
        """
        elements = positive_int(elements, "elements", minimum=0)
        if self.used + elements > self.M:
            raise SRAMCapacityError(self.held, (label, elements), self.M)
        self._next += 1
        self._held[self._next] = (label, elements)
        self.used += elements
        self.peak = max(self.peak, self.used)
        return self._next

    def release(self, handle: int) -> None:
        """Give back what :meth:`hold` reserved (once; a second release is a ValueError)."""
        if handle not in self._held:
            raise ValueError("this tile was already released")
        self.used -= self._held.pop(handle)[1]
