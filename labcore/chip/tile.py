"""On-chip tiles: numpy arrays that count the FLOPs done with them.

A :class:`Tile` is an ``np.ndarray`` subclass: a kernel writes its maths in plain numpy on the tiles it
loads, and every numpy ufunc applied to a tile (``@``, ``+``, ``np.exp``, ``.max()``, ``.sum()`` ...) is
counted in the CTA's :class:`FlopCounter`, and its result is a tile again. Counting convention (as
:mod:`labcore.flops`): a matmul ``(m, k) @ (k, n)`` is ``2 m k n`` FLOP (a multiply-add is 2); every other
ufunc counts 1 per output element, a reduction 1 per input element. Functions that are not ufuncs
(``np.where``, ``np.concatenate``, indexing) are data movement and are not counted; their result is a
plain array.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Tile", "FlopCounter", "as_tile"]


class FlopCounter:
    """Matmul (tensor-core) and non-matmul (CUDA-core) FLOPs of one CTA.

    Attributes: matmul, nonmatmul (ints, FLOP); total (their sum).
    """

    __slots__ = ("matmul", "nonmatmul")

    def __init__(self):
        self.matmul = 0
        self.nonmatmul = 0

    @property
    def total(self) -> int:
        return self.matmul + self.nonmatmul

    def count(self, ufunc, method, inputs, result) -> None:
        """Add the FLOPs of one ufunc call (see the module docstring for the convention)."""
        if ufunc is np.matmul:
            a = np.asarray(inputs[0])
            k = a.shape[-1] if a.ndim else 1
            self.matmul += 2 * k * int(np.size(result))
        elif method == "reduce":
            self.nonmatmul += int(np.size(inputs[0]))
        else:
            self.nonmatmul += int(np.size(result))

    def __repr__(self) -> str:
        return f"FlopCounter(matmul={self.matmul:,}, nonmatmul={self.nonmatmul:,})"


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, Tile) else x


class Tile(np.ndarray):
    """A float64 array on chip, whose ufunc arithmetic is counted in a :class:`FlopCounter`."""

    _counter = None

    def __array_finalize__(self, obj):
        self._counter = getattr(obj, "_counter", None)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        everything = inputs + (out or ())
        counter = next((x._counter for x in everything if isinstance(x, Tile) and x._counter is not None), None)
        plain = tuple(_plain(x) for x in inputs)
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if counter is not None:
            counter.count(ufunc, method, plain, result)
        if out is not None:
            return out[0] if len(out) == 1 else out
        if isinstance(result, tuple):
            return tuple(as_tile(r, counter) for r in result)
        return as_tile(result, counter)


def as_tile(x, counter: FlopCounter | None):
    """``x`` as a :class:`Tile` counting into ``counter`` (numpy scalars become 0-d tiles; None stays None)."""
    if x is None:
        return None
    t = np.asarray(x).view(Tile)
    t._counter = counter
    return t
