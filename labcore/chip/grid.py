"""The simulated chip: HBM tensors, one :class:`labcore.hbm.Ledger`, and a grid of CTAs.

``chip.launch(kernel, grid=n, **params)`` runs ``kernel(cta, **params)`` once per program id
``0 .. n-1``, each on a fresh :class:`~labcore.chip.cta.CTA` with its own SRAM of ``M`` elements, one
after the other in the chip's ``order`` (``"sequential"`` by default; a grader passes ``"shuffled"`` or an
explicit permutation). On a real GPU the CTAs of a launch run in an
order nobody promises, so a correct kernel's result must not depend on it; launches themselves run in
sequence (a kernel boundary is a global barrier), as flash-decoding's split kernel and combine kernel do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..checks import choice, positive_int
from ..hbm import Ledger
from .cta import CTA
from .hbm_tensor import HBMTensor

__all__ = ["Chip", "Launch", "ORDERS"]

#: CTA orders a chip accepts besides an explicit permutation.
ORDERS = ("sequential", "reversed", "shuffled")

#: Largest grid one launch may have (a guard against a typo such as ``grid=10**9``).
MAX_GRID = 2 ** 16


@dataclass
class Launch:
    """Record of one launch: kernel name, grid size, the order the CTAs ran in, and per-CTA statistics.

    Attributes:
        name (str): kernel name.
        grid (int): grid size.
        order (list of pids): the order the CTAs ran in.
        matmul, nonmatmul, elements, sram_peak (lists indexed by pid): FLOP, FLOP, HBM elements read + written,
            SRAM elements.
    """

    name: str
    grid: int
    order: list = field(default_factory=list)
    matmul: list = field(default_factory=list)
    nonmatmul: list = field(default_factory=list)
    elements: list = field(default_factory=list)
    sram_peak: list = field(default_factory=list)


class Chip:
    """A simulated GPU for the labs: named tensors in HBM, an SRAM of ``M`` elements per CTA, a grid launcher.

    Args:
        M: SRAM capacity of each CTA in elements (int >= 1).
        tensors: ``{name: array}`` initial HBM contents (1-D or 2-D real arrays; copied to float64).
        order: ``"sequential"`` (default), ``"reversed"``, ``"shuffled"`` (with ``seed``), a callable
            ``grid -> permutation``, or an explicit permutation (used for launches of that many CTAs; others run
            in sequence): the order in which the CTAs of every launch run.
        seed: seed of the ``"shuffled"`` order (int).
    Attributes:
        M (int): SRAM capacity of each CTA in elements.
        ledger (labcore.hbm.Ledger): the elements read and written, per tensor.
        launches (list): the :class:`Launch` record of every launch, in order.
    Raises:
        TypeError/ValueError: bad M, names, arrays or order.
    Source:
        the memory hierarchy of the FlashAttention paper (Dao et al. 2022, §2.1: HBM and on-chip SRAM of size M per
        streaming multiprocessor); the CTA grid of flash-decoding (Dao et al. 2023 blog).
    """

    def __init__(self, M: int, tensors: dict | None = None, *, order="sequential", seed: int = 0):
        self.M = positive_int(M, "M")
        if not callable(order) and not isinstance(order, (list, tuple)):
            choice(order, "order", ORDERS)
        self._order = order
        self._rng = np.random.default_rng(positive_int(seed, "seed", minimum=0))
        self._hbm: dict[str, HBMTensor] = {}
        self.ledger = Ledger()
        self.launches: list[Launch] = []
        for name, value in (tensors or {}).items():
            self._add(HBMTensor(name, value))

    # --- HBM --------------------------------------------------------------------------------------------
    def _add(self, t: HBMTensor) -> HBMTensor:
        if t.name in self._hbm:
            raise ValueError(f"HBM already holds a tensor named {t.name!r}")
        self._hbm[t.name] = t
        return t

    def __getitem__(self, name: str) -> HBMTensor:
        if name not in self._hbm:
            raise KeyError(f"no tensor {name!r} in HBM; it holds {', '.join(self._hbm) or 'nothing'}")
        return self._hbm[name]

    def __contains__(self, name) -> bool:
        return name in self._hbm

    @property
    def tensors(self) -> list:
        """Names of the HBM tensors, in creation order."""
        return list(self._hbm)

    def allocate(self, name: str, shape, *, fill: float = np.nan) -> HBMTensor:
        """Create an HBM tensor of ``shape`` filled with ``fill`` (NaN: not yet written). No traffic is counted:
        only what a kernel then stores. Raises ValueError if the name is taken, TypeError for a bad name."""
        return self._add(HBMTensor.empty(name, shape, fill))

    def read_back(self, name: str) -> np.ndarray:
        """A copy of HBM tensor ``name`` for the host (a grader); not counted as traffic."""
        return self[name]._data.copy()

    def _count(self, kind, name, n, cta):
        (self.ledger.read if kind == "read" else self.ledger.write)(name, int(n))
        cta.elements += int(n)

    # --- the grid ---------------------------------------------------------------------------------------
    def _permutation(self, grid):
        if callable(self._order):
            perm = list(self._order(grid))
        elif isinstance(self._order, (list, tuple)):
            perm = list(self._order) if len(self._order) == grid else list(range(grid))
        elif self._order == "sequential":
            perm = list(range(grid))
        elif self._order == "reversed":
            perm = list(range(grid - 1, -1, -1))
        else:
            perm = [int(p) for p in self._rng.permutation(grid)]
        if sorted(perm) != list(range(grid)):
            raise ValueError(f"a CTA order must be a permutation of 0..{grid - 1}, got {perm}")
        return perm

    def launch(self, kernel, grid: int = 1, **params) -> Launch:
        """Run ``kernel(cta, **params)`` for every program id ``0 .. grid-1`` (``cta.pid``), each with its own SRAM.

        Args:
            kernel: a callable taking a :class:`~labcore.chip.cta.CTA` and the keyword ``params``.
            grid: number of CTAs (int, 1 .. 65,536).
        Returns:
            the :class:`Launch` record (also appended to ``chip.launches``).
        Raises:
            TypeError: kernel not callable; whatever the kernel raises (e.g. SRAMCapacityError) propagates.
        """
        if not callable(kernel):
            raise TypeError(f"kernel must be a function of (cta, ...), got {type(kernel).__name__}")
        grid = positive_int(grid, "grid", maximum=MAX_GRID)
        rec = Launch(getattr(kernel, "__name__", "kernel"), grid, self._permutation(grid),
                     [0] * grid, [0] * grid, [0] * grid, [0] * grid)
        self.launches.append(rec)
        for pid in rec.order:
            cta = CTA(self, pid, self.M)
            try:
                kernel(cta, **params)
            finally:
                rec.matmul[pid], rec.nonmatmul[pid] = cta.flops.matmul, cta.flops.nonmatmul
                rec.elements[pid], rec.sram_peak[pid] = cta.elements, cta.sram.peak
        return rec

    @property
    def sram_peak(self) -> int:
        """Largest SRAM use of any CTA so far (elements)."""
        return max((p for rec in self.launches for p in rec.sram_peak), default=0)

    @property
    def flops(self) -> dict:
        """``{"matmul": FLOP, "nonmatmul": FLOP}`` summed over every CTA of every launch."""
        return {"matmul": sum(sum(r.matmul) for r in self.launches),
                "nonmatmul": sum(sum(r.nonmatmul) for r in self.launches)}
