"""What a chip kernel gets as ``np`` and ``math``: the array maths a tile kernel needs, and nothing else.

A rebuilt kernel (:func:`labcore.chip.rebuild` with ``CHIP_PROFILE``) sees ``np`` bound to
:data:`NP`, not to numpy: elementwise maths (``np.exp``, ``np.maximum``, ``np.where``, ...), reductions
(``np.sum``, ``np.max``, ...), a few array functions (``np.concatenate``, ``np.outer``, ``np.einsum``,
``np.tril``, ...), the constants ``np.inf``, ``np.nan``, ``np.newaxis``, and constructors. Every array it hands out
is a :class:`~labcore.chip.tile.Tile`, so the chip's rules see it:

- the constructors (``np.zeros``, ``np.ones``, ``np.full``, ``np.empty`` and their ``*_like``) make arrays *on
  chip*: each one is counted against the CTA's SRAM while it is alive (a kernel cannot make its own storage outside
  the budget), and its size is checked against ``M`` before anything is allocated; ``np.empty`` is filled with
  zeros (a kernel never reads memory it did not write);
- ``np.arange`` makes index vectors (ints only, at most :data:`MAX_ARANGE` of them): like Triton's ``tl.arange``
  they live in registers and are not counted;
- the other functions take tiles and numbers (not lists, tuples of numbers, ranges or strings: those would make
  arrays outside the chip's books) and return tiles that carry their sources.

``math`` is bound to :data:`MATH`, the scalar functions of the standard library's math (on Python numbers only: a
tile cannot become a number). Arguments are checked where they enter: a bad one is a TypeError or ValueError that
names it.
"""
from __future__ import annotations

import math
import numbers
import weakref

import numpy as np

from ..checks import MAX_COUNT
from .sram import MAX_M, SRAMCapacityError
from .tile import (MAX_TEMP_ELEMENTS, Holding, Tile, carriers, close_holding, current, derived, storage, use)

__all__ = ["Facade", "NP", "MATH", "NP_NAMES", "MATH_NAMES", "MAX_ARANGE", "checked_builtins"]

#: Longest index vector ``np.arange`` makes in a kernel.
MAX_ARANGE = 2 ** 20

#: Largest number of terms ``np.einsum`` may sum over (the product of its index ranges).
MAX_EINSUM_TERMS = 2 ** 24

#: Largest magnitude of an ``axis`` (numpy's own limit on dimensions; a tile has at most 3).
MAX_AXIS = 64

#: Largest magnitude of ``round``'s ``ndigits`` in a kernel: past float64's range (1e-324 .. 1e308) no digit is left
#: to round, and ``round(12345, -10**30)`` would never return.
MAX_NDIGITS = 400

_DTYPES = {None: np.float64, float: np.float64, np.float64: np.float64, bool: np.bool_, np.bool_: np.bool_,
           int: np.int64, np.int64: np.int64}


class Facade:
    """A read-only namespace of functions and constants (what ``np`` or ``math`` is inside a kernel).

    Args:
        name: what the kernel calls it (``"np"``).
        items: ``{attribute: object}``.
    Raises:
        AttributeError: an attribute it does not have (naming what it has), or setting one.
    """

    __slots__ = ("_name", "_items")

    def __init__(self, name: str, items: dict):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_items", dict(items))

    def __getattr__(self, attr):
        items = object.__getattribute__(self, "_items")
        if attr in items:
            return items[attr]
        name = object.__getattribute__(self, "_name")
        raise AttributeError(f"{name}.{attr} is not available in a kernel; {name} offers {', '.join(sorted(items))}")

    def __setattr__(self, key, value):
        raise AttributeError(f"{self._name} is read-only in a kernel")

    def __dir__(self):
        return sorted(self._items)

    @property
    def names(self) -> frozenset:
        """The attribute names it offers."""
        return frozenset(self._items)

    def __repr__(self) -> str:
        return f"<{self._name}: {', '.join(sorted(self._items))}>"


# --- argument checks ---------------------------------------------------------------------------------------------

def _operand(x, fn: str, arg: str):
    """A tile or a real number; anything that would make an array outside the chip is refused."""
    if isinstance(x, Tile) or (isinstance(x, (numbers.Real, np.bool_)) and not isinstance(x, np.ndarray)):
        return x
    if hasattr(x, "__array_ufunc__") and type(x).__module__.startswith("labcore.chip"):
        return x          # an HBM tensor or a tile not yet entered: it refuses with its own message
    raise TypeError(f"np.{fn}: {arg} must be a tile or a number, got {type(x).__name__}; arrays in a kernel come "
                    "from cta.load, cta.buffer and np.zeros/np.full/np.arange")


def _tile(x, fn: str, arg: str) -> Tile:
    if not isinstance(x, Tile):
        _operand(x, fn, arg)
        raise TypeError(f"np.{fn}: {arg} must be a tile (an array on chip), got {type(x).__name__}")
    return x


# An int a facade function takes as an index, an offset or a fill (np.arange's start, stop and step, np.tril's k, an
# integer np.full) is at most MAX_COUNT (2^53) in magnitude: far past any tile's side, and inside numpy's int64 (a
# larger one would be an OverflowError from deep inside numpy).
def _int(x, fn: str, arg: str, bound: int = MAX_COUNT) -> int:
    """``x`` as an int of magnitude at most ``bound``; bools, floats and strings are a TypeError naming ``arg``."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise TypeError(f"np.{fn}: {arg} must be an int, got {x!r} ({type(x).__name__})")
    x = int(x)
    if not -bound <= x <= bound:
        raise ValueError(f"np.{fn}: {arg} must be an int in -{bound:,} .. {bound:,}, got {x:,}")
    return x


def _axis(axis, fn):
    if axis is None:
        return None
    if isinstance(axis, tuple):
        return tuple(_int(a, fn, "axis", MAX_AXIS) for a in axis)
    return _int(axis, fn, "axis", MAX_AXIS)


def _number(x, fn: str, arg: str, what: str):
    """A fill or a bound given as a number: a bool (where a number is meant) is a TypeError and NaN a ValueError,
    as for ``cta.buffer``'s ``fill``; tiles and other operands pass through unchanged."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"np.{fn}: {arg} must be a number, got {x!r}: {what}")
    if isinstance(x, Tile) or not isinstance(x, numbers.Real):
        return x
    try:
        v = float(x)
    except OverflowError:
        raise ValueError(f"np.{fn}: {arg} is too large for a float64, got an int of {int(x).bit_length():,} "
                         "bits") from None
    if math.isnan(v):
        raise ValueError(f"np.{fn}: {arg} must not be NaN: {what}")
    return x


def _fill(value, dtype, fn: str, arg: str = "fill_value"):
    """A constructor's fill (a number, checked against the array's dtype): a bool array takes True or False; an int
    array an int (a fraction would be truncated); a float array a real number (inf allowed), never a bool or NaN."""
    if isinstance(value, Tile):
        return value
    kind = np.dtype(dtype).kind
    if kind == "b":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"np.{fn}: {arg} of a bool array must be True or False, got {value!r}")
        return value
    _number(value, fn, arg, "an array on chip starts from a number (0.0, or -np.inf for a running max)")
    if kind in "iu":
        return _int(value, fn, arg)
    return value


def _shape(shape, fn: str) -> tuple:
    if isinstance(shape, (str, bytes, bool)) or not isinstance(shape, (numbers.Integral, tuple)):
        raise TypeError(f"np.{fn}: shape must be an int or a tuple of ints, got {shape!r}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else shape
    if len(shape) > 3:
        raise ValueError(f"np.{fn}: an array on chip has at most 3 dimensions, got shape {shape}")
    out = []
    for s in shape:
        s = _int(s, fn, "shape", MAX_COUNT)
        if not 0 <= s <= MAX_M:
            raise ValueError(f"np.{fn}: shape must hold ints in 0 .. {MAX_M:,} (the largest SRAM), got {shape}")
        out.append(s)
    return tuple(out)


def _dtype(dtype, fn):
    if isinstance(dtype, _Checked):                      # the facade's own np.float64
        dtype = dtype.base
    try:
        known = dtype in _DTYPES
    except TypeError:                                    # unhashable (a list, an array)
        known = False
    if not known:
        raise TypeError(f"np.{fn}: dtype must be float (np.float64), bool or int, got {dtype!r}")
    return _DTYPES[dtype]


# --- arrays on chip ------------------------------------------------------------------------------------------------

def _on_chip(fn: str):
    cta = current()
    if cta is None:
        raise RuntimeError(f"np.{fn} makes an array on chip: call it inside a kernel that the chip launched, not "
                           "in the program that launches kernels")
    return cta


def _made(fn: str, shape, dtype, fill, sources=frozenset()):
    cta = _on_chip(fn)
    size = int(np.prod(shape, dtype=object))
    label = f"np.{fn}({shape if len(shape) != 1 else shape[0]})"
    if size > MAX_M:
        raise ValueError(f"np.{fn}: shape {shape} has {size:,} elements, more than any CTA's SRAM ({MAX_M:,})")
    if size > cta.M:
        raise SRAMCapacityError(cta.sram.held, (label, size), cta.M)
    h = Holding("made", label, size, has_data=bool(sources))
    h.handle = cta.sram.hold(label, size)
    t = storage(np.full(shape, fill, dtype=dtype), cta, h)
    weakref.finalize(t, close_holding, cta.sram, h)
    return t


def zeros(shape, dtype=None):
    """An array of zeros on chip (counted against the SRAM while alive)."""
    return _made("zeros", _shape(shape, "zeros"), _dtype(dtype, "zeros"), 0)


def ones(shape, dtype=None):
    """An array of ones on chip (counted against the SRAM while alive)."""
    return _made("ones", _shape(shape, "ones"), _dtype(dtype, "ones"), 1)


def empty(shape, dtype=None):
    """An array on chip, filled with zeros (counted against the SRAM while alive)."""
    return _made("empty", _shape(shape, "empty"), _dtype(dtype, "empty"), 0)


def full(shape, fill_value, dtype=None):
    """An array of ``fill_value`` on chip (counted against the SRAM while alive): a 0-d tile, or a number as
    ``cta.buffer``'s fill (not NaN, not a bool) for a float array, an int for an int array, True or False for a bool
    array."""
    shape, dtype = _shape(shape, "full"), _dtype(dtype, "full")
    _operand(fill_value, "full", "fill_value")
    fill_value = _fill(fill_value, dtype, "full")
    sources = frozenset()
    if isinstance(fill_value, Tile):
        use(fill_value)
        if fill_value.ndim:
            raise ValueError(f"np.full: fill_value must be a number or a 0-d tile, got shape {fill_value.shape}")
        sources = carriers(fill_value)
        fill_value = fill_value.view(np.ndarray)[()]
    return _made("full", shape, dtype, fill_value, sources)


def _like(fn, a, fill, dtype):
    a = _tile(a, fn, "a")
    return _made(fn, tuple(a.shape), a.dtype.type if dtype is None else _dtype(dtype, fn), fill)


def zeros_like(a, dtype=None):
    """Zeros of ``a``'s shape, on chip."""
    return _like("zeros_like", a, 0, dtype)


def ones_like(a, dtype=None):
    """Ones of ``a``'s shape, on chip."""
    return _like("ones_like", a, 1, dtype)


def empty_like(a, dtype=None):
    """Zeros of ``a``'s shape, on chip (``np.empty_like`` never hands out unwritten memory)."""
    return _like("empty_like", a, 0, dtype)


def full_like(a, fill_value, dtype=None):
    """``fill_value`` (a number, checked as :func:`full`'s against the dtype) in ``a``'s shape, on chip."""
    a = _tile(a, "full_like", "a")
    if isinstance(fill_value, Tile) or not isinstance(fill_value, (numbers.Real, np.bool_)):
        raise TypeError(f"np.full_like: fill_value must be a number, got {type(fill_value).__name__}")
    dtype = a.dtype.type if dtype is None else _dtype(dtype, "full_like")
    return _made("full_like", tuple(a.shape), dtype, _fill(fill_value, dtype, "full_like"))


def arange(start, stop=None, step=1):
    """Index vector ``start, start + step, ...`` below ``stop`` (ints only; at most :data:`MAX_ARANGE`), in
    registers: not counted against the SRAM."""
    start, step = _int(start, "arange", "start"), _int(step, "arange", "step")
    if stop is None:
        start, stop = 0, start
    stop = _int(stop, "arange", "stop")
    if step == 0:
        raise ValueError("np.arange: step must not be 0")
    n = max(0, -(-(stop - start) // step))
    if n > MAX_ARANGE:
        raise ValueError(f"np.arange: {n:,} values, more than the {MAX_ARANGE:,} a kernel may index")
    return derived(np.arange(start, stop, step, dtype=np.int64), _on_chip("arange"), frozenset())


# --- maths on tiles ------------------------------------------------------------------------------------------------

def _ufunc(uf, name):
    def f(*args, out=None):
        for i, a in enumerate(args):
            _operand(a, name, f"argument {i + 1}")
        if out is not None:
            _tile(out, name, "out")
            return uf(*args, out=out)
        return uf(*args)
    f.__name__ = name
    f.__qualname__ = f"np.{name}"
    f.__doc__ = f"numpy's {name} on tiles and numbers (a tile out: counted FLOPs, sources kept)."
    return f


def _reduction(name):
    def f(a, axis=None, keepdims=False):
        _operand(a, name, "a")
        if not isinstance(a, Tile):
            return a if name not in ("any", "all") else bool(a)
        if not isinstance(keepdims, (bool, np.bool_)):
            raise TypeError(f"np.{name}: keepdims must be True or False, got {keepdims!r}")
        return getattr(a, name)(axis=_axis(axis, name), keepdims=bool(keepdims))
    f.__name__ = name
    f.__qualname__ = f"np.{name}"
    f.__doc__ = f"``a.{name}(axis, keepdims)`` of a tile (counted: one FLOP per input element)."
    return f


def where(condition, x, y):
    """``x`` where ``condition`` holds, else ``y`` (tiles or numbers; the three-argument form only)."""
    for arg, v in (("condition", condition), ("x", x), ("y", y)):
        _operand(v, "where", arg)
    _bounded("where", np.broadcast_shapes(*(v.shape for v in (condition, x, y) if isinstance(v, Tile))))
    out = np.where(condition, x, y)
    return out if isinstance(out, Tile) else out[()]


def _bounded(fn, shape):
    n = math.prod(int(s) for s in shape)
    if n > MAX_TEMP_ELEMENTS:
        raise ValueError(f"np.{fn} would make {n:,} elements, more than a kernel's arithmetic may "
                         f"({MAX_TEMP_ELEMENTS:,})")


def _sequence(arrays, fn):
    if not isinstance(arrays, tuple) or not arrays:
        raise TypeError(f"np.{fn}: arrays must be a non-empty tuple of tiles, e.g. np.{fn}((a, b)), got "
                        f"{type(arrays).__name__}")
    for i, a in enumerate(arrays):
        _tile(a, fn, f"arrays[{i}]")
    _bounded(fn, (sum(a.size for a in arrays),))
    return arrays


def concatenate(arrays, axis=0):
    """The tiles of the tuple ``arrays`` joined along ``axis``."""
    return np.concatenate(_sequence(arrays, "concatenate"), axis=_int(axis, "concatenate", "axis", MAX_AXIS))


def stack(arrays, axis=0):
    """The tiles of the tuple ``arrays`` stacked along a new ``axis``."""
    return np.stack(_sequence(arrays, "stack"), axis=_int(axis, "stack", "axis", MAX_AXIS))


def outer(a, b):
    """Outer product of two tiles (flattened), ``a.size x b.size``."""
    a, b = _tile(a, "outer", "a"), _tile(b, "outer", "b")
    if a.size * b.size > MAX_TEMP_ELEMENTS:
        raise ValueError(f"np.outer: {a.size:,} x {b.size:,} elements is more than a kernel's arithmetic may make "
                         f"({MAX_TEMP_ELEMENTS:,})")
    return np.outer(a, b)


def einsum(subscripts, *operands):
    """numpy's einsum on tiles, with explicit subscripts (letters, commas and ``->``; no ``...``)."""
    if not isinstance(subscripts, str):
        raise TypeError(f"np.einsum: subscripts must be a string such as 'ij,kj->ik', got {subscripts!r}")
    lhs, _, rhs = subscripts.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if not operands or len(terms) != len(operands) or not all(t.isalpha() for t in terms) \
            or not (rhs == "" or rhs.isalpha()):
        raise ValueError(f"np.einsum: subscripts {subscripts!r} must name each of the {len(operands)} operand(s)' "
                         "axes with letters, e.g. 'ij,kj->ik'")
    dims = {}
    for i, (letters, op) in enumerate(zip(terms, operands)):
        op = _tile(op, "einsum", f"operand {i + 1}")
        if len(letters) != op.ndim:
            raise ValueError(f"np.einsum: subscripts {letters!r} name {len(letters)} axes; operand {i + 1} has {op.ndim}")
        for ch, n in zip(letters, op.shape):
            dims[ch] = n
    if math.prod(dims.values()) > MAX_EINSUM_TERMS:
        raise ValueError(f"np.einsum: {math.prod(dims.values()):,} terms, more than a kernel may sum "
                         f"({MAX_EINSUM_TERMS:,})")
    return np.einsum(subscripts, *operands)


def tril(m, k=0):
    """Lower triangle of a 2-D tile (entries above diagonal ``k`` set to 0; ``k`` an int, ``|k|`` at most
    2^53)."""
    return np.tril(_tile(m, "tril", "m"), _int(k, "tril", "k"))


def triu(m, k=0):
    """Upper triangle of a 2-D tile (entries below diagonal ``k`` set to 0; ``k`` an int, ``|k|`` at most
    2^53)."""
    return np.triu(_tile(m, "triu", "m"), _int(k, "triu", "k"))


def clip(a, a_min, a_max):
    """``a`` limited to ``[a_min, a_max]`` (tiles or numbers; a number bound is real, not a bool and not NaN)."""
    for arg, v in (("a", a), ("a_min", a_min), ("a_max", a_max)):
        _operand(v, "clip", arg)
    for arg, v in (("a_min", a_min), ("a_max", a_max)):
        _number(v, "clip", arg, "a bound is a number (-np.inf or np.inf for none)")
    _bounded("clip", np.broadcast_shapes(*(v.shape for v in (a, a_min, a_max) if isinstance(v, Tile))))
    return np.clip(a, a_min, a_max)


#: The strings float() may still read in a kernel: no data can hide in them.
_SPECIAL = frozenset({"inf", "-inf", "+inf", "infinity", "-infinity", "+infinity", "nan"})


class _Checked(type):
    """A builtin number type for kernels: ``isinstance`` works as for the builtin, and a call refuses strings (a
    number parsed from text) and tiles (a value taken off the chip)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls.base)

    def __call__(cls, *args):
        for a in args:
            if isinstance(a, (str, bytes)) and not (cls.base is not int and isinstance(a, str)
                                                    and a.strip().lower() in _SPECIAL):
                raise TypeError(f"{cls.__name__}() of a string is not available in a kernel (only float('inf'), "
                                "float('-inf') and float('nan')): numbers come from the kernel's arguments, the "
                                "tensors' shapes and arithmetic")
            if isinstance(a, Tile):
                a._no_number()
        return cls.base(*args)

    def __repr__(cls):
        return f"<kernel {cls.__name__}>"


def _checked(name, base):
    return _Checked(name, (), {"base": base, "__doc__": f"{name}, refusing strings and tiles."})


def _checked_range(*args):
    for a in args:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral):
            raise TypeError(f"range() takes ints, got {a!r} ({type(a).__name__})")
    r = range(*args)
    try:
        n = len(r)
    except OverflowError:                        # more values than a C ssize_t counts
        n = None
    if n is None or n > MAX_ARANGE:
        raise ValueError(f"range() of {'more than 2**63' if n is None else f'{n:,}'} values: a kernel loop runs at "
                         f"most {MAX_ARANGE:,} times")
    return r


def checked_builtins() -> dict:
    """The builtins a chip kernel may call: ``{name: object}`` (range, int, float and round checked)."""
    import builtins as b

    out = {n: getattr(b, n) for n in ("len", "min", "max", "abs", "bool", "enumerate", "zip", "reversed", "print",
                                       "isinstance")}
    out.update(range=_checked_range, int=_checked("int", int), float=_checked("float", float),
               round=_checked_round)
    return out


def _checked_round(x, ndigits=None):
    if isinstance(x, Tile):
        x._no_number()
    if isinstance(x, np.generic):   # numpy's own round overflows to NaN past 10**308: round the Python number
        x = x.item()
    if ndigits is None:
        return round(x)
    if isinstance(ndigits, (bool, np.bool_)) or not isinstance(ndigits, numbers.Integral):
        raise TypeError(f"round(): ndigits must be an int, got {ndigits!r} ({type(ndigits).__name__})")
    if not -MAX_NDIGITS <= ndigits <= MAX_NDIGITS:
        raise ValueError(f"round(): ndigits must be an int in -{MAX_NDIGITS} .. {MAX_NDIGITS}, got {ndigits:,}")
    return round(x, int(ndigits))


_UFUNCS = ("exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "square", "abs", "absolute", "maximum",
           "minimum", "isfinite", "isinf", "isnan", "floor", "ceil", "logaddexp", "matmul", "sign", "negative")
_REDUCTIONS = ("sum", "max", "min", "mean", "any", "all")

_NP_ITEMS = {name: _ufunc(getattr(np, name), name) for name in _UFUNCS}
_NP_ITEMS.update({name: _reduction(name) for name in _REDUCTIONS})
_NP_ITEMS.update(amax=_NP_ITEMS["max"], amin=_NP_ITEMS["min"])
_NP_ITEMS.update(where=where, concatenate=concatenate, stack=stack, outer=outer, einsum=einsum, tril=tril,
                 triu=triu, clip=clip, zeros=zeros, ones=ones, empty=empty, full=full, zeros_like=zeros_like,
                 ones_like=ones_like, empty_like=empty_like, full_like=full_like, arange=arange,
                 inf=math.inf, nan=math.nan, newaxis=None, pi=math.pi, e=math.e,
                 float64=_checked("float64", np.float64))

#: ``np`` in a chip kernel.
NP = Facade("np", _NP_ITEMS)
#: The names ``np`` offers a chip kernel.
NP_NAMES = NP.names

_MATH = ("exp", "log", "log2", "sqrt", "ceil", "floor", "isfinite", "isinf", "isnan", "inf", "nan", "pi", "e")
#: ``math`` in a chip kernel (the standard library's functions, on Python numbers).
MATH = Facade("math", {n: getattr(math, n) for n in _MATH})
#: The names ``math`` offers a chip kernel.
MATH_NAMES = MATH.names
