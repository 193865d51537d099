"""One CTA (thread block) of the simulated chip: its SRAM, its FLOP counter, and its door to HBM.

A kernel receives a :class:`CTA` and touches global memory only through it:

- ``with cta.load("K", rows=(c0, c1)) as K_j:`` copies a tile of an HBM tensor on chip (its elements are
  read from HBM and counted in the chip's ledger) and holds it in SRAM until the ``with`` block ends;
- ``with cta.buffer((B_r, d), fill=0.0, name="acc") as acc:`` holds an on-chip buffer (nothing is read);
- ``cta.store("O", value, rows=(r0, r1))`` writes a tile back (its elements are counted as written);
- ``cta.shape("Q")`` tells the sizes; ``cta.allocate("D", (N,))`` makes a new HBM tensor (scratch,
  partial outputs); ``cta.pid`` is the program id in the grid (Triton's ``tl.program_id``).

Row and column ranges are half-open ``(start, stop)`` pairs of ints, ``0 <= start <= stop <= size``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..checks import as_real
from .sram import SRAM
from .tile import FlopCounter, as_tile

__all__ = ["CTA", "OnChip"]


class OnChip:
    """What ``cta.load`` and ``cta.buffer`` return: use it in a ``with`` block, which yields the tile (a
    :class:`~labcore.chip.tile.Tile`) and releases its SRAM at the end."""

    __slots__ = ("_cta", "_label", "_tile", "_handle")

    def __init__(self, cta, label, tile):
        self._cta, self._label, self._tile, self._handle = cta, label, tile, None

    def __enter__(self):
        if self._handle is not None:
            raise RuntimeError(f"{self._label} is already on chip; load it again for a second copy")
        self._handle = self._cta.sram.hold(self._label, int(self._tile.size))
        return self._tile

    def __exit__(self, *exc):
        self._cta.sram.release(self._handle)
        return False

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"{self._label} is not on chip yet: use it in a with block, "
                        f"`with cta.load(...) as tile:` (or `with cta.buffer(...) as acc:`), then compute on `tile`")

    __getitem__ = __setitem__ = __array__ = __len__ = __iter__ = __float__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __matmul__ = __rmatmul__ = __neg__ = _refuse

    def __array_ufunc__(self, *args, **kwargs):
        self._refuse()


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


class CTA:
    """One CTA: an SRAM of ``M`` elements, a FLOP counter, and ``load``/``store`` to the chip's HBM.

    Made by :meth:`labcore.chip.Chip.launch`; a kernel does not build one itself.

    Attributes:
        pid (int): program id, 0 .. grid - 1.
        M (int): SRAM capacity (elements).
        sram (labcore.chip.sram.SRAM): the CTA's SRAM.
        flops (labcore.chip.tile.FlopCounter): the CTA's FLOP counter.
        elements (int): HBM elements this CTA moved (read + written).
    """

    def __init__(self, chip, pid: int, M: int):
        self._chip = chip
        self.pid = pid
        self.M = M
        self.sram = SRAM(M)
        self.flops = FlopCounter()
        self.elements = 0

    def shape(self, name: str) -> tuple:
        """Shape of HBM tensor ``name`` (no traffic). Raises KeyError for an unknown name."""
        return self._chip[name].shape

    def _region(self, name, rows, cols):
        t = self._chip[name]
        r0, r1 = _range(rows, t.shape[0], "rows", name)
        if t.ndim == 1:
            if cols is not None:
                raise ValueError(f"{name} is 1-D (shape {t.shape}); give rows only")
            return t, (slice(r0, r1),)
        c0, c1 = _range(cols, t.shape[1], "cols", name)
        return t, (slice(r0, r1), slice(c0, c1))

    def load(self, name: str, rows=None, cols=None) -> OnChip:
        """Read a tile of HBM tensor ``name`` (rows ``[r0, r1)``, optional cols) onto the chip.

        Use as ``with cta.load("Q", rows=(r0, r1)) as Q_i:``; ``Q_i`` is a float64 tile (a copy) held in SRAM
        until the block ends. The tile's elements are counted as read from HBM when ``load`` is called.

        Raises:
            KeyError: unknown tensor.
            TypeError/ValueError: bad range.
            :class:`~labcore.chip.sram.SRAMCapacityError`: on entering the block if it does not fit.
        """
        t, idx = self._region(name, rows, cols)
        data = t._data[idx].copy()
        self._chip._count("read", name, data.size, self)
        span = f"[{idx[0].start}:{idx[0].stop}]" if data.size else "[]"
        return OnChip(self, f"{name}{span}", as_tile(data, self.flops))

    def buffer(self, shape, *, fill: float = 0.0, name: str = "buffer") -> OnChip:
        """An on-chip buffer of ``shape`` filled with ``fill`` (e.g. ``-inf`` for a running max); no traffic.

        Use as ``with cta.buffer((B_r, d), name="acc") as acc:``.
        Raises: TypeError/ValueError for a bad shape or fill; SRAMCapacityError when it does not fit.
        """
        fill = float(as_real(fill, "fill"))
        data = np.full(shape, fill, dtype=np.float64)
        return OnChip(self, name, as_tile(data, self.flops))

    def store(self, name: str, value, rows=None, cols=None) -> None:
        """Write ``value`` (an array of exactly the region's shape) into rows ``[r0, r1)`` of ``name``.

        The region's elements are counted as written to HBM. Storing needs no SRAM.
        Raises: KeyError, TypeError/ValueError (bad range, non-real value, wrong shape).
        """
        t, idx = self._region(name, rows, cols)
        v = as_real(value, f"value stored into {name}")
        target = t._data[idx]
        if v.shape != target.shape:
            raise ValueError(f"value stored into {name}{list(r.start for r in idx)} must have shape {target.shape}, "
                             f"got {v.shape}")
        t._data[idx] = v
        self._chip._count("write", name, target.size, self)

    def allocate(self, name: str, shape, fill: float = np.nan):
        """Create a new HBM tensor (see :meth:`labcore.chip.Chip.allocate`)."""
        return self._chip.allocate(name, shape, fill=fill)
