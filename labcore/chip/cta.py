"""One CTA (thread block) of the simulated chip: its SRAM, its FLOP counter, and its door to HBM.

A kernel receives a :class:`CTA` and touches global memory only through it:

- ``with cta.load("K", rows=(c0, c1)) as K_j:`` copies a tile of an HBM tensor on chip (its elements are
  read from HBM and counted in the chip's ledger) and holds it in SRAM until the ``with`` block ends;
- ``with cta.buffer((B_r, d), fill=0.0, name="acc") as acc:`` holds an on-chip buffer (nothing is read);
- ``cta.store("O", value, rows=(r0, r1))`` writes a tile back (its elements are counted as written);
- ``cta.atomic_add("dQ", value, rows=(r0, r1))`` adds a tile into HBM atomically (counted apart, in
  ``chip.atomics``: many CTAs may add into the same rows, in any order, as FlashAttention-2's backward adds into
  dQ with FP32 atomics);
- ``cta.shape("Q")`` tells the sizes; ``cta.allocate("D", (N,))`` makes a new HBM tensor (scratch,
  partial outputs); ``cta.pid`` is the program id in the grid (Triton's ``tl.program_id``); ``cta.M`` the SRAM
  size in elements.

Row and column ranges are half-open ``(start, stop)`` pairs of ints, ``0 <= start <= stop <= size``. The
:class:`CTA` a kernel sees is a read-only view: its ``pid`` and ``M`` cannot be set, and the SRAM, the counters
and the chip live in a :class:`CTAState` the kernel has no name for.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..checks import as_real, positive_int
from .limits import tick
from .sram import MAX_M, SRAM, SRAMCapacityError
from .tile import FlopCounter, Holding, Tile, close_holding, storage, use

__all__ = ["CTA", "CTAState", "OnChip", "MAX_BUFFER_NDIM"]

#: Dimensions an on-chip buffer may have.
MAX_BUFFER_NDIM = 3


class OnChip:
    """What ``cta.load`` and ``cta.buffer`` return: use it in a ``with`` block, which yields the tile (a
    :class:`~labcore.chip.tile.Tile`) and releases its SRAM at the end; the tile cannot be used after that."""

    __slots__ = ("_state", "_kind", "_label", "_data", "_holding")

    def __init__(self, state, kind, label, data):
        self._state, self._kind, self._label, self._data, self._holding = state, kind, label, data, None

    def __enter__(self):
        if self._holding is not None:
            raise RuntimeError(f"{self._label} is already on chip; load it again for a second copy")
        sram = self._state.sram
        h = Holding(self._kind, self._label, int(self._data.size), has_data=self._kind == "tile")
        h.handle = sram.hold(self._label, h.size)
        self._holding = h
        return storage(self._data, self._state, h)

    def __exit__(self, *exc):
        close_holding(self._state.sram, self._holding)
        return False

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"{self._label} is not on chip yet: use it in a with block, "
                        f"`with cta.load(...) as tile:` (or `with cta.buffer(...) as acc:`), then compute on `tile`")

    __getitem__ = __setitem__ = __array__ = __len__ = __iter__ = __float__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __matmul__ = __rmatmul__ = __neg__ = __bool__ = _refuse

    def __array_ufunc__(self, *args, **kwargs):
        self._refuse()

    def __array_function__(self, *args, **kwargs):
        self._refuse()

    def __repr__(self) -> str:
        return f"OnChip({self._label!r}: use it in a with block)"


def _range(r, size, what, name):
    if r is None:
        return 0, size
    if (not isinstance(r, (tuple, list)) or len(r) != 2
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in r)):
        raise TypeError(f"{what} of {name} must be a (start, stop) pair of ints, got {r!r}")
    a, b = int(r[0]), int(r[1])
    if not 0 <= a <= b <= size:
        raise ValueError(f"{what} of {name} must satisfy 0 <= start <= stop <= {size}, got ({a}, {b})")
    return a, b


def _buffer_shape(shape) -> tuple:
    if isinstance(shape, (str, bytes, bool)) or not isinstance(shape, (numbers.Integral, tuple, list)):
        raise TypeError(f"shape of a buffer must be an int or a tuple of ints, got {shape!r}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if not 1 <= len(shape) <= MAX_BUFFER_NDIM:
        raise ValueError(f"a buffer has 1 to {MAX_BUFFER_NDIM} dimensions, got shape {shape}")
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"shape of a buffer must hold ints, got {shape!r}")
        if s < 0:
            raise ValueError(f"shape of a buffer must hold ints >= 0, got {shape!r}")
    return tuple(int(s) for s in shape)


def _value(value, what):
    """A stored or added value as a float64 array (a tile is checked first: a released one is refused)."""
    if isinstance(value, Tile):
        use(value)
        value = value.view(np.ndarray)
    return as_real(value, what)


class CTAState:
    """The chip's side of one CTA: its SRAM, FLOP counter and counts (host code; a kernel sees :class:`CTA`).

    Args:
        chip: the :class:`~labcore.chip.Chip`.
        pid: program id (int >= 0).
        M: SRAM capacity in elements (as :class:`~labcore.chip.sram.SRAM`).
    Attributes:
        pid (int), M (int), sram (:class:`~labcore.chip.sram.SRAM`), flops (:class:`~labcore.chip.tile.FlopCounter`),
        elements (HBM elements read + written), atomics (elements added atomically), view (the :class:`CTA`).
    Raises:
        TypeError/ValueError: a chip that is not a Chip, a pid or M that is not a count.
    """

    __slots__ = ("_chip", "pid", "M", "sram", "flops", "elements", "atomics", "view")

    def __init__(self, chip, pid: int, M: int):
        # what a CTA asks of its chip, checked by shape rather than by class: the chip's module imports this one
        if not all(callable(getattr(chip, a, None)) for a in ("__getitem__", "_touch", "_count", "allocate")):
            raise TypeError(f"chip must be a labcore.chip.Chip, got {type(chip).__name__}")
        self._chip = chip
        self.pid = positive_int(pid, "pid", minimum=0)
        self.sram = SRAM(M)
        self.M = self.sram.M
        self.flops = FlopCounter()
        self.elements = 0
        self.atomics = 0
        self.view = CTA(self)

    def shape(self, name):
        if not isinstance(name, str):
            raise TypeError(f"name must be the name of an HBM tensor (a string), got {name!r}")
        return self._chip[name].shape

    def _region(self, name, rows, cols):
        if not isinstance(name, str):
            raise TypeError(f"name must be the name of an HBM tensor (a string), got {name!r}")
        t = self._chip[name]
        r0, r1 = _range(rows, t.shape[0], "rows", name)
        if t.ndim == 1:
            if cols is not None:
                raise ValueError(f"{name} is 1-D (shape {t.shape}); give rows only")
            return t, (slice(r0, r1),)
        c0, c1 = _range(cols, t.shape[1], "cols", name)
        return t, (slice(r0, r1), slice(c0, c1))

    def _label(self, name, idx):
        spans = [f"{s.start}:{s.stop}" for s in idx]
        if len(idx) == 2 and idx[1].start == 0 and idx[1].stop == self._chip[name].shape[1]:
            spans = spans[:1]                       # whole rows: the columns go without saying
        return f"{name}[{', '.join(spans)}]"

    def load(self, name, rows=None, cols=None) -> OnChip:
        tick()
        t, idx = self._region(name, rows, cols)
        label = self._label(name, idx)
        self._chip._touch("read", name, idx, self.pid, label)
        data = t._data[idx].copy()
        self._chip._count("read", name, data.size, self)
        return OnChip(self, "tile", label, data)

    def buffer(self, shape, *, fill=0.0, name="buffer") -> OnChip:
        tick()
        shape = _buffer_shape(shape)
        if isinstance(fill, (bool, np.bool_)) or not isinstance(fill, numbers.Real):
            raise TypeError(f"fill must be a real number such as 0.0 or -np.inf, got {fill!r}")
        try:
            fill = float(fill)
        except OverflowError:
            raise ValueError(f"fill must be a real number a float64 holds, got an int of "
                             f"{int(fill).bit_length():,} bits") from None
        if np.isnan(fill):
            raise ValueError("fill must not be NaN: a buffer starts from a number (0.0, or -inf for a running max)")
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {name!r}")
        size = int(np.prod(shape, dtype=object))
        if size > MAX_M:
            raise ValueError(f"shape of a buffer {shape} has {size:,} elements, more than any CTA's SRAM "
                             f"({MAX_M:,})")
        if size > self.M:
            raise SRAMCapacityError(self.sram.held, (name, size), self.M)
        return OnChip(self, "buffer", name, np.full(shape, fill, dtype=np.float64))

    def _write(self, kind, name, value, rows, cols):
        tick()
        t, idx = self._region(name, rows, cols)
        v = _value(value, f"value {'stored into' if kind == 'write' else 'added into'} {name}")
        target = t._data[idx]
        label = self._label(name, idx)
        if v.shape != target.shape:
            raise ValueError(f"value {'stored into' if kind == 'write' else 'added into'} {label} "
                             f"must have shape {target.shape}, got {v.shape}")
        self._chip._touch(kind, name, idx, self.pid, label)
        if kind == "write":
            t._data[idx] = v
        else:
            t._data[idx] += v
        self._chip._count(kind, name, target.size, self)

    def store(self, name, value, rows=None, cols=None) -> None:
        self._write("write", name, value, rows, cols)

    def atomic_add(self, name, value, rows=None, cols=None) -> None:
        self._write("atomic", name, value, rows, cols)

    def allocate(self, name, shape, fill=np.nan):
        tick()
        self._chip.allocate(name, shape, fill=fill)


class CTA:
    """One CTA as its kernel sees it: ``pid``, ``M``, and the door to HBM (read-only; see the module docstring).

    Made by :meth:`labcore.chip.Chip.launch`; a kernel does not build one itself.

    Attributes:
        pid (int): program id, 0 .. grid - 1.
        M (int): SRAM capacity (elements).
    """

    __slots__ = ("_state",)

    def __init__(self, state: CTAState):
        if not isinstance(state, CTAState):
            raise TypeError(f"state must be a labcore.chip.CTAState (a CTA is made by Chip.launch), got "
                            f"{type(state).__name__}")
        object.__setattr__(self, "_state", state)

    def __setattr__(self, key, value):
        raise AttributeError(f"a kernel cannot set cta.{key}: the CTA's id, its SRAM size and its counters are the "
                             "chip's")

    @property
    def pid(self) -> int:
        return self._state.pid

    @property
    def M(self) -> int:
        return self._state.M

    def shape(self, name: str) -> tuple:
        """Shape of HBM tensor ``name`` (no traffic). Raises KeyError for an unknown name, TypeError for a
        name that is not a string."""
        return self._state.shape(name)

    def load(self, name: str, rows=None, cols=None) -> OnChip:
        """Read a tile of HBM tensor ``name`` (rows ``[r0, r1)``, optional cols) onto the chip.

        Use as ``with cta.load("Q", rows=(r0, r1)) as Q_i:``; ``Q_i`` is a float64 tile (a copy) held in SRAM
        until the block ends, and refused if used after it. The tile's elements are counted as read from HBM when
        ``load`` is called.

        Raises:
            KeyError: unknown tensor.
            TypeError/ValueError: bad name or range.
            :class:`~labcore.chip.sram.SRAMCapacityError`: on entering the block if it does not fit.
        """
        return self._state.load(name, rows, cols)

    def buffer(self, shape, *, fill: float = 0.0, name: str = "buffer") -> OnChip:
        """An on-chip buffer of ``shape`` (an int or a tuple of 1-3 ints) filled with ``fill`` (a real number,
        e.g. ``-np.inf`` for a running max; not NaN); no traffic.

        Use as ``with cta.buffer((B_r, d), name="acc") as acc:`` and update it in place (``acc[:] = ...``).
        Raises: TypeError/ValueError for a bad shape, fill or name; SRAMCapacityError when it does not fit (a
        buffer larger than M is refused before anything is allocated).
        """
        return self._state.buffer(shape, fill=fill, name=name)

    def store(self, name: str, value, rows=None, cols=None) -> None:
        """Write ``value`` (an array of exactly the region's shape) into rows ``[r0, r1)`` (and cols) of ``name``.

        The region's elements are counted as written to HBM. Storing needs no SRAM.
        Raises: KeyError, TypeError/ValueError (bad range, non-real value, wrong shape), ReleasedTileError (a tile
        whose block has ended).
        """
        self._state.store(name, value, rows, cols)

    def atomic_add(self, name: str, value, rows=None, cols=None) -> None:
        """Add ``value`` (an array of exactly the region's shape) into rows ``[r0, r1)`` (and cols) of ``name``,
        atomically: CTAs of one launch may add into the same rows in any order and every add lands.

        The region's elements are counted in ``chip.atomics``, apart from the plain traffic of the ledger (an
        atomic add sends its values to the L2 cache, where the add is done; FlashAttention-2's backward adds dQ this
        way, ``atomicAdd`` in FP32). Raises: as :meth:`store`.
        """
        self._state.atomic_add(name, value, rows, cols)

    def allocate(self, name: str, shape, fill: float = np.nan) -> None:
        """Create a new HBM tensor (see :meth:`labcore.chip.Chip.allocate`); no traffic."""
        self._state.allocate(name, shape, fill)

    def __repr__(self) -> str:
        return f"CTA(pid={self.pid}, M={self.M:,})"
