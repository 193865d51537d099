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

__all__ = ["HBMTensor", "HBM_NDIM", "MAX_HBM_ELEMENTS"]

#: Dimensions an HBM tensor may have: vectors (lse, m, l, D) and matrices (Q, K, V, O, ...).
HBM_NDIM = (1, 2)

#: Largest HBM tensor the simulated chip holds (elements; 128 MiB of float64): the labs' tensors have a few
#: thousand, and a size past this is a typo that would otherwise end in a MemoryError.
MAX_HBM_ELEMENTS = 2 ** 24


def tensor_shape(shape, name: str) -> tuple:
    """``shape`` (an int or a tuple of 1-2 ints >= 0) checked, with at most :data:`MAX_HBM_ELEMENTS` elements.

    Raises: TypeError (not ints, a string, a bool), ValueError (dimensions, negative, too large)."""
    if isinstance(shape, (str, bytes)) or isinstance(shape, bool):
        raise TypeError(f"shape of {name} must be an int or a tuple of ints, got {shape!r}")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape of {name} must be an int or a tuple of ints, got {type(shape).__name__}")
    if len(shape) not in HBM_NDIM:
        raise ValueError(f"HBM tensor {name} must be 1-D or 2-D, got shape {tuple(shape)}")
    shape = tuple(positive_int(s, f"shape of {name}", minimum=0) for s in shape)
    n = int(np.prod(shape, dtype=object))
    if n > MAX_HBM_ELEMENTS:
        raise ValueError(f"shape of {name} {shape} has {n:,} elements, more than the chip's HBM holds "
                         f"({MAX_HBM_ELEMENTS:,})")
    return shape


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

    __slots__ = ("_name", "_data")

    def __init__(self, name: str, data):
        self._name = _tensor_name(name)
        a = as_real(data, f"data of {name}")
        if a.ndim not in HBM_NDIM:
            raise ValueError(f"HBM tensor {name} must be 1-D or 2-D, got shape {a.shape}")
        if a.size > MAX_HBM_ELEMENTS:
            raise ValueError(f"HBM tensor {name} has {a.size:,} elements, more than the chip's HBM holds "
                             f"({MAX_HBM_ELEMENTS:,})")
        self._data = np.array(a, dtype=np.float64)

    @classmethod
    def empty(cls, name: str, shape, fill: float = np.nan) -> "HBMTensor":
        """A new tensor of ``shape`` (int or tuple of 1-2 ints >= 0, at most :data:`MAX_HBM_ELEMENTS` elements)
        filled with ``fill`` (a real number; NaN, the default, marks "not yet written").

        Raises: TypeError/ValueError for a bad name, shape or fill."""
        name = _tensor_name(name)
        shape = tensor_shape(shape, name)
        if isinstance(fill, bool) or not isinstance(fill, (int, float, np.integer, np.floating)):
            raise TypeError(f"fill of {name} must be a real number, got {fill!r}")
        try:
            fill = float(fill)
        except OverflowError:
            raise ValueError(f"fill of {name} must be a real number a float64 holds, got an int of "
                             f"{int(fill).bit_length():,} bits") from None
        return cls(name, np.full(shape, fill))

    @property
    def name(self) -> str:
        return self._name

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
