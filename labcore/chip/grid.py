"""The simulated chip: HBM tensors, one :class:`labcore.hbm.Ledger`, and a grid of CTAs.

``chip.launch(kernel, grid=n, **params)`` runs ``kernel(cta, **params)`` once per program id
``0 .. n-1``, each on a fresh :class:`~labcore.chip.cta.CTA` with its own SRAM of ``M`` elements, one
after the other in the chip's ``order`` (``"sequential"`` by default; a grader passes ``"shuffled"`` or an
explicit permutation). On a real GPU the CTAs of a launch run in an
order nobody promises, so a correct kernel's result must not depend on it; launches themselves run in
sequence (a kernel boundary is a global barrier), as flash-decoding's split kernel and combine kernel do.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from ..checks import choice, positive_int
from ..hbm import Ledger
from .cta import CTAState
from .hbm_tensor import HBMTensor
from .limits import tick
from .sram import MAX_M
from .tile import running

__all__ = ["Chip", "Launch", "Program", "DataRaceError", "UnknownTensorError", "ORDERS", "MAX_GRID", "MAX_SEED"]

#: CTA orders a chip accepts besides an explicit permutation.
ORDERS = ("sequential", "reversed", "shuffled")

#: Largest grid one launch may have (a guard against a typo such as ``grid=10**9``).
MAX_GRID = 2 ** 16

#: Largest ``seed`` a chip takes: a seed is no count (a grader draws 63-bit ones), and numpy's generators take
#: 128 bits of entropy.
MAX_SEED = 2 ** 128 - 1


@dataclass
class Launch:
    """Record of one launch: kernel name, grid size, the order the CTAs ran in, and per-CTA statistics.

    Attributes:
        name (str): kernel name.
        grid (int): grid size.
        order (list of pids): the order the CTAs ran in.
        matmul, nonmatmul, elements, sram_peak, atomics (lists indexed by pid): FLOP, FLOP, HBM elements read +
            written, SRAM elements, elements added atomically.
        ledger (labcore.hbm.Ledger): this launch's plain traffic per tensor.
        atomic_ledger (labcore.hbm.Ledger): this launch's atomic adds per tensor (as writes).
        loads (list): ``(pid, tensor, r0, r1)`` of every tile loaded, in order.
        stores (list): ``(pid, tensor, r0, r1)`` of every store and atomic add, in order.
    """

    name: str
    grid: int
    order: list = field(default_factory=list)
    matmul: list = field(default_factory=list)
    nonmatmul: list = field(default_factory=list)
    elements: list = field(default_factory=list)
    sram_peak: list = field(default_factory=list)
    atomics: list = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    atomic_ledger: Ledger = field(default_factory=Ledger)
    loads: list = field(default_factory=list)
    stores: list = field(default_factory=list)


class UnknownTensorError(KeyError, ValueError):
    """Raised when a name is not one of the chip's HBM tensors: a KeyError, as a mapping's lookup, and a ValueError,
    as every other bad argument of the chip (so ``except ValueError`` catches it too)."""

    def __str__(self):          # the message as written, not KeyError's quoted repr of it
        return str(self.args[0]) if self.args else ""


class DataRaceError(RuntimeError):
    """Raised when two CTAs of one launch touch the same HBM elements and one of them writes (a plain store, or a
    plain read or store against another CTA's atomic adds): on a GPU they run at the same time, so the result
    depends on timing."""


_NONE, _MANY = -1, -2
_VERBS = {"read": "reads", "write": "writes", "atomic": "adds atomically into"}
_PAST = {"read": "read", "write": "wrote", "atomic": "added into atomically"}


def _few(values, k: int = 5) -> str:
    values = list(values)
    return ", ".join(map(str, values[:k])) + (f" ... ({len(values)} in all)" if len(values) > k else "")


def _permutation_of(perm, n: int, what: str) -> list:
    """``perm`` (a list, tuple, range or 1-D integer array) as a list of ints if it is a permutation of ``0 .. n-1``,
    else a TypeError (not ints) or a ValueError (length, a CTA twice, missing or out of range) naming ``what``."""
    if isinstance(perm, np.ndarray):
        if perm.ndim != 1 or perm.dtype.kind not in "iu":
            raise TypeError(f"{what} must be a permutation of ints, got an array of shape {perm.shape} and dtype "
                            f"{perm.dtype}")
    elif not isinstance(perm, (list, tuple, range)):
        raise TypeError(f"{what} must be a permutation of the CTAs (a list, tuple or 1-D int array of 0 .. n-1), got "
                        f"{type(perm).__name__}")
    try:
        length = len(perm)
    except OverflowError:                       # a range past what a C ssize_t counts
        length = None
    if length != n:                             # before anything is converted: a wrong length may be huge
        got = "more than 2**63" if length is None else f"{length:,}"
        raise ValueError(f"{what} must be a permutation of the {n} CTAs 0 .. {n - 1}, got {got} entries")
    if isinstance(perm, np.ndarray):
        perm = perm.tolist()
    elif isinstance(perm, range):
        perm = list(perm)
    else:
        bad = [p for p in perm if not isinstance(p, numbers.Integral) or isinstance(p, (bool, np.bool_))]
        if bad:
            raise TypeError(f"{what} must be a permutation of ints, got an entry {bad[0]!r} ({type(bad[0]).__name__})")
        perm = [int(p) for p in perm]
    seen = set()
    twice = sorted({p for p in perm if p in seen or seen.add(p)})
    outside = [p for p in perm if not 0 <= p < n]
    missing = [p for p in range(n) if p not in seen]
    if twice or outside or missing:
        why = "; ".join(w for w in (f"CTA(s) twice: {_few(twice)}" if twice else "",
                                    f"out of range 0 .. {n - 1}: {_few(outside)}" if outside else "",
                                    f"missing: {_few(missing)}" if missing else "") if w)
        raise ValueError(f"{what} must be a permutation of the CTAs 0 .. {n - 1}, each once ({why})")
    return perm


def _tensors(tensors) -> dict:
    if tensors is None:
        return {}
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict {{name: array}}, got {type(tensors).__name__}")
    return tensors


class Chip:
    """A simulated GPU for the labs: named tensors in HBM, an SRAM of ``M`` elements per CTA, a grid launcher.

    Args:
        M: SRAM capacity of each CTA in elements (int, 1 .. 2**26).
        tensors: ``{name: array}`` initial HBM contents (a dict of 1-D or 2-D real arrays; copied to float64;
            NaN allowed, as a value not yet written).
        order: ``"sequential"`` (default), ``"reversed"``, ``"shuffled"`` (with ``seed``), a callable
            ``grid -> permutation`` (a list, tuple, range or 1-D int array holding each of ``0 .. grid-1`` once;
            checked at every launch), or an explicit permutation (a non-empty list or tuple holding each of
            ``0 .. n-1`` once, used for launches of ``n`` CTAs; others run in sequence): the order in which the CTAs
            of every launch run.
        seed: seed of the ``"shuffled"`` order (int, 0 .. :data:`MAX_SEED`).
    Attributes:
        M (int): SRAM capacity of each CTA in elements (read-only, as every attribute here).
        ledger (labcore.hbm.Ledger): the elements read and written, per tensor.
        atomics (labcore.hbm.Ledger): the elements added atomically (``cta.atomic_add``), per tensor, as writes.
        launches (list): the :class:`Launch` record of every launch, in order (a copy).
    Raises:
        TypeError/ValueError: bad M, names, arrays, order or seed.
    Source:
        the memory hierarchy of the FlashAttention paper (Dao et al. 2022, §2.1: HBM and on-chip SRAM of size M per
        streaming multiprocessor); the CTA grid of flash-decoding (Dao et al. 2023 blog).
    """

    def __init__(self, M: int, tensors: dict | None = None, *, order="sequential", seed: int = 0):
        self._M = positive_int(M, "M", maximum=MAX_M)
        if isinstance(order, str):
            choice(order, "order", ORDERS)
        elif isinstance(order, (list, tuple)):
            if not order:
                raise ValueError("order must be a permutation of the CTAs 0 .. n-1 of a launch of n >= 1 CTAs, got an "
                                 "empty one")
            if len(order) > MAX_GRID:
                raise ValueError(f"order has {len(order):,} entries, more than a launch's {MAX_GRID:,} CTAs")
            order = tuple(_permutation_of(order, len(order), "order"))
        elif not callable(order):
            raise TypeError(f"order must be one of {ORDERS}, a permutation or a callable, got {order!r}")
        self._order = order
        self._rng = np.random.default_rng(positive_int(seed, "seed", minimum=0, maximum=MAX_SEED))
        self._hbm: dict[str, HBMTensor] = {}
        self._ledger = Ledger()
        self._atomics = Ledger()
        self._launches: list[Launch] = []
        self._launch = None
        self._access: dict = {}
        for name, value in _tensors(tensors).items():
            try:
                self._add(HBMTensor(name, value))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"tensors: {exc}") from None

    @property
    def M(self) -> int:
        return self._M

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    @property
    def atomics(self) -> Ledger:
        return self._atomics

    @property
    def launches(self) -> list:
        return list(self._launches)

    # --- HBM --------------------------------------------------------------------------------------------
    def _add(self, t: HBMTensor) -> HBMTensor:
        if t.name in self._hbm:
            raise ValueError(f"HBM already holds a tensor named {t.name!r}")
        self._hbm[t.name] = t
        return t

    def __getitem__(self, name: str) -> HBMTensor:
        if not isinstance(name, str):
            raise TypeError(f"name must be the name of an HBM tensor (a string), got {name!r}")
        if name not in self._hbm:
            raise UnknownTensorError(f"no tensor {name!r} in HBM; it holds {', '.join(self._hbm) or 'nothing'}")
        return self._hbm[name]

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name in self._hbm

    @property
    def tensors(self) -> list:
        """Names of the HBM tensors, in creation order."""
        return list(self._hbm)

    def allocate(self, name: str, shape, *, fill: float = np.nan) -> HBMTensor:
        """Create an HBM tensor of ``shape`` (an int or a tuple of 1-2 ints; at most
        :data:`~labcore.chip.hbm_tensor.MAX_HBM_ELEMENTS` elements) filled with ``fill`` (NaN: not yet written).
        No traffic is counted: only what a kernel then stores. Raises ValueError if the name is taken or the shape
        too large, TypeError for a bad name, shape or fill."""
        return self._add(HBMTensor.empty(name, shape, fill))

    def read_back(self, name: str) -> np.ndarray:
        """A copy of HBM tensor ``name`` for the host (a grader); not counted as traffic. A kernel has no chip to
        call it on: it sees only its :class:`~labcore.chip.cta.CTA`."""
        return self[name]._data.copy()

    def _count(self, kind, name, n, cta):
        n = int(n)
        rec = self._launch
        if kind == "atomic":
            self._atomics.write(name, n)
            if rec is not None:
                rec.atomic_ledger.write(name, n)
            cta.atomics += n
            return
        for ledger in (self._ledger,) + ((rec.ledger,) if rec is not None else ()):
            (ledger.read if kind == "read" else ledger.write)(name, n)
        cta.elements += n

    def _touch(self, kind, name, idx, pid, label):
        """Record that CTA ``pid`` of the running launch does ``kind`` ("read", "write", "atomic") on ``name[idx]``;
        raise :class:`DataRaceError` if another CTA of the launch did a conflicting access to any element of it."""
        if self._launch is None:
            return
        (self._launch.loads if kind == "read" else self._launch.stores).append((pid, name, idx[0].start, idx[0].stop))
        if self._launch.grid == 1:
            return                                    # one CTA: nothing to race with
        maps = self._access.get(name)
        if maps is None:
            shape = self._hbm[name].shape
            maps = self._access[name] = {k: np.full(shape, _NONE, dtype=np.int32) for k in _VERBS}
        conflicts = {"read": ("write", "atomic"), "write": ("read", "write", "atomic"), "atomic": ("read", "write")}
        for other in conflicts[kind]:
            seen = maps[other][idx]
            bad = (seen != _NONE) & (seen != pid)
            if bad.any():
                who = int(seen[bad].flat[0])
                by = "several other CTAs" if who == _MANY else f"CTA {who}"
                raise DataRaceError(
                    f"data race in launch {self._launch.name!r}: CTA {pid} {_VERBS[kind]} {label}, which {by} of the "
                    f"same launch {_PAST[other]}. The CTAs of one launch run at the same time, in no promised order: "
                    "give each CTA its own rows, put the dependent work in a later launch, or add with "
                    "cta.atomic_add (several CTAs may add into the same rows)")
        mine = maps[kind]
        cur = mine[idx]
        mine[idx] = np.where((cur == _NONE) | (cur == pid), pid, _MANY)

    # --- the grid ---------------------------------------------------------------------------------------
    def _permutation(self, grid):
        if callable(self._order):
            return _permutation_of(self._order(grid), grid, f"order({grid}), what the order function returned,")
        if isinstance(self._order, tuple):
            return list(self._order) if len(self._order) == grid else list(range(grid))
        if self._order == "sequential":
            return list(range(grid))
        if self._order == "reversed":
            return list(range(grid - 1, -1, -1))
        return [int(p) for p in self._rng.permutation(grid)]

    def launch(self, kernel, grid: int = 1, **params) -> Launch:
        """Run ``kernel(cta, **params)`` for every program id ``0 .. grid-1`` (``cta.pid``), each with its own SRAM.

        Args:
            kernel: a callable taking a :class:`~labcore.chip.cta.CTA` and the keyword ``params``.
            grid: number of CTAs (int, 1 .. 65,536).
        Returns:
            the :class:`Launch` record (also appended to ``chip.launches``).
        Raises:
            TypeError: kernel not callable; whatever the kernel raises (e.g. SRAMCapacityError) propagates.
            TypeError/ValueError: naming ``grid``, or ``order`` when the chip's order function returned no
            permutation of the grid's CTAs.
        """
        if not callable(kernel):
            raise TypeError(f"kernel must be a function of (cta, ...), got {type(kernel).__name__}")
        grid = positive_int(grid, "grid", maximum=MAX_GRID)
        tick()
        rec = Launch(getattr(kernel, "__name__", "kernel"), grid, self._permutation(grid),
                     [0] * grid, [0] * grid, [0] * grid, [0] * grid, [0] * grid)
        self._launches.append(rec)
        outer, self._launch = self._launch, rec
        outer_access, self._access = self._access, {}
        try:
            for pid in rec.order:
                state = CTAState(self, pid, self._M)
                try:
                    with running(state):
                        kernel(state.view, **params)
                finally:
                    rec.matmul[pid], rec.nonmatmul[pid] = state.flops.matmul, state.flops.nonmatmul
                    rec.elements[pid], rec.sram_peak[pid] = state.elements, state.sram.peak
                    rec.atomics[pid] = state.atomics
        finally:
            self._launch, self._access = outer, outer_access
        return rec

    def program(self) -> "Program":
        """The :class:`Program` view of this chip: what a lab's program receives as ``chip``."""
        return Program(self)

    @property
    def sram_peak(self) -> int:
        """Largest SRAM use of any CTA so far (elements)."""
        return max((p for rec in self._launches for p in rec.sram_peak), default=0)

    @property
    def flops(self) -> dict:
        """``{"matmul": FLOP, "nonmatmul": FLOP}`` summed over every CTA of every launch."""
        return {"matmul": sum(sum(r.matmul) for r in self._launches),
                "nonmatmul": sum(sum(r.nonmatmul) for r in self._launches)}


class Program:
    """The chip as a program sees it (the host code that allocates and launches, as lab 4's and lab 5's
    ``kernel(chip, ...)``): ``allocate``, ``launch``, ``shape``, ``M`` and read-only tensor handles (``chip["q"]``:
    a name and a shape; not an array). It cannot read HBM, and it has no ledger, no records and no budget to set.
    """

    __slots__ = ("_chip",)

    def __init__(self, chip: Chip):
        if not isinstance(chip, Chip):
            raise TypeError(f"chip must be a labcore.chip.Chip, got {type(chip).__name__}")
        object.__setattr__(self, "_chip", chip)

    def __setattr__(self, key, value):
        raise AttributeError(f"a program cannot set chip.{key}")

    @property
    def M(self) -> int:
        """SRAM capacity of each CTA (elements)."""
        return self._chip.M

    def shape(self, name: str) -> tuple:
        """Shape of HBM tensor ``name``. Raises UnknownTensorError (a KeyError and a ValueError: unknown),
        TypeError (not a string)."""
        return self._chip[name].shape

    def __getitem__(self, name: str) -> HBMTensor:
        return self._chip[name]

    def __contains__(self, name) -> bool:
        return name in self._chip

    def allocate(self, name: str, shape, *, fill: float = np.nan) -> None:
        """Create an HBM tensor (see :meth:`Chip.allocate`); no traffic."""
        tick()
        self._chip.allocate(name, shape, fill=fill)

    def launch(self, kernel, grid: int = 1, **params) -> None:
        """Run ``kernel`` on a grid of CTAs (see :meth:`Chip.launch`); returns nothing (the records are the
        chip's)."""
        self._chip.launch(kernel, grid, **params)

    def __repr__(self) -> str:
        return f"Program(tensors={self._chip.tensors}, M={self.M:,})"
