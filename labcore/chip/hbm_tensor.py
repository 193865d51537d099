"""HBM tensors of the simulated chip: named arrays a kernel can reach only through ``load`` and ``store``.

An :class:`HBMTensor` is deliberately *not* a numpy array. Arithmetic, indexing, ``len``, iteration,
``np.asarray`` and numpy functions on it raise a :class:`TypeError` that says what to do instead ("load a
tile first"), so a kernel cannot touch global memory without the traffic being counted in the chip's
:class:`labcore.hbm.Ledger`. The values are kept in float64 (exact arithmetic, as everywhere in labcore);
the time model counts each element as ``dtype_bytes`` (2: FP16/BF16).
"""
from __future__ import annotations

import numpy as np

from ..checks import as_real, positive_int

__all__ = ["HBMTensor", "HBM_NDIM"]

#: Dimensions an HBM tensor may have: vectors (lse, m, l, D) and matrices (Q, K, V, O, ...).
HBM_NDIM = (1, 2)


def _tensor_name(name) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"an HBM tensor name must be an identifier string such as 'Q' or 'lse', got {name!r}")
    return name


class HBMTensor:
    """One named tensor in (simulated) HBM.

    Args:
        name: identifier (``"Q"``, ``"lse"``, ``"O_part"``...).
        data: real array of 1 or 2 dimensions (copied to float64; NaN allowed, e.g. "not yet written").
    Attributes:
        name, shape (tuple), ndim, size (elements).
    Raises:
        TypeError: a bad name, non-real data; any arithmetic, indexing or numpy call on the tensor.
        ValueError: data that is not 1-D or 2-D.
    """

    __slots__ = ("name", "_data")

    def __init__(self, name: str, data):
        self.name = _tensor_name(name)
        a = np.array(as_real(data, name), dtype=np.float64)
        if a.ndim not in HBM_NDIM:
            raise ValueError(f"HBM tensor {name} must be 1-D or 2-D, got shape {a.shape}")
        self._data = a

    @classmethod
    def empty(cls, name: str, shape, fill: float = np.nan) -> "HBMTensor":
        """A new tensor of ``shape`` (int or tuple of 1-2 ints >= 0) filled with ``fill`` (NaN: unwritten)."""
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if len(shape) not in HBM_NDIM:
            raise ValueError(f"HBM tensor {name} must be 1-D or 2-D, got shape {shape}")
        shape = tuple(positive_int(s, f"{name} shape", minimum=0) for s in shape)
        return cls(name, np.full(shape, float(fill)))

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return int(self._data.size)

    def __repr__(self) -> str:
        return f"HBMTensor({self.name!r}, shape={self.shape})"

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            f"{self.name} is an HBM tensor (shape {self.shape}), not an array: load a tile first, "
            f"`with cta.load({self.name!r}, rows=(r0, r1)) as tile:`, and compute on the tile; write results back "
            f"with `cta.store(name, value, rows=(r0, r1))`")

    __getitem__ = __setitem__ = __iter__ = __len__ = __array__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __matmul__ = __rmatmul__ = __pow__ = __rpow__ = __neg__ = __abs__ = __float__ = __int__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __bool__ = _refuse

    def __array_ufunc__(self, *args, **kwargs):
        self._refuse()

    def __array_function__(self, *args, **kwargs):
        self._refuse()
