"""On-chip tiles: numpy arrays that count the FLOPs done with them and know where their data came from.

A :class:`Tile` is an ``np.ndarray`` subclass: a kernel writes its maths in plain numpy on the tiles it loads, and
every numpy ufunc applied to a tile (``@``, ``+``, ``np.exp``, ``.max()``, ``.sum()`` ...) is counted in the CTA's
:class:`FlopCounter`, and its result is a tile again. Counting convention (as :mod:`labcore.flops`): a matmul
``(m, k) @ (k, n)`` is ``2 m k n`` FLOP (a multiply-add is 2); every other ufunc counts 1 per output element, a
reduction 1 per input element; ``np.outer`` 1 per output element, ``np.einsum`` 2 per term of its sum. Functions
that only move data (``np.where``, ``np.concatenate``, indexing) are not counted.

What is on chip, and what counts against the SRAM (:class:`~labcore.chip.sram.SRAM`): an array is either *storage*
or *derived*.

- Storage holds SRAM: a tile loaded by ``cta.load`` and a buffer made by ``cta.buffer`` (each until its ``with``
  block ends; using it afterwards raises :class:`ReleasedTileError`), and an array the kernel makes with the
  facade's constructors (``np.zeros``, ``np.full``, ...; :mod:`labcore.chip.facade`), while it is alive.
- A derived array (the result of arithmetic, a copy, a view's copy, a 0-d tile taken out of a tile by indexing)
  carries its *sources*: the storage its data came from (through ufuncs, ``__array_function__`` such as
  ``np.where`` and ``np.concatenate``, indexing and item assignment). While every source is alive it is a
  temporary, outside the budget like a register. Used after one of its sources ended, it is a copy kept on chip:
  it becomes storage itself, counted from the moment that source ended until it dies.

A number cannot be taken out of a tile (``float(t)``, ``int(t)``, ``math.exp(t)`` raise a TypeError): a value
from HBM stays a tile, so the rules above see it wherever it goes. Storage that never received data from HBM (a
buffer or a ``np.zeros`` still holding its fill) is not a source. Sources: the counting rules of the FlashAttention
paper (SRAM holds the tiles; Dao et al. 2022, Algorithm 1) and Triton's block programs (values in registers, tiles
in shared memory).
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from ..checks import MAX_ELEMENTS, as_real, positive_int
from .limits import kernel_line
from .sram import MAX_M, SRAM

__all__ = ["Tile", "FlopCounter", "Holding", "ReleasedTileError", "as_tile", "MAX_TEMP_ELEMENTS", "TILE_DTYPES",
           "HOLDING_KINDS"]

#: Largest array a kernel's arithmetic may produce (elements): a guard against a broadcast that would need
#: gigabytes (the labs' tiles have at most M <= a few thousand elements).
MAX_TEMP_ELEMENTS = 2 ** 22

#: The dtypes a tile holds: float64 values (what HBM holds and every load gives), int64 index vectors (``np.arange``)
#: and bool masks (comparisons, ``np.zeros(..., dtype=bool)``). Narrow formats (FP16, BF16, FP8) are not stored:
#: the chip keeps float64 values and :func:`~labcore.chip.modelled_time` counts each element as ``dtype_bytes``.
TILE_DTYPES = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_))

#: The most dimensions a :class:`Tile` may have: a lab's tiles have one or two, a batched view a few more.
MAX_TILE_DIMS = 8

#: What a :class:`Holding` may be: a loaded tile, a buffer, an array made by the facade, a copy kept on chip.
HOLDING_KINDS = ("tile", "buffer", "made", "kept")

_EMPTY = frozenset()

#: ufunc keywords accepted on tiles (numpy's own methods pass casting, order and subok); ``dtype`` and ``signature``
#: only as None, since another value would step outside float64 tiles.
_UFUNC_KWARGS = frozenset({"axis", "keepdims", "where", "initial", "casting", "order", "subok"})
_UFUNC_DEFAULTS = {"dtype": None, "signature": None}
#: Reductions numpy's ``.all()`` and ``.any()`` call with ``dtype=bool`` (a mask's truth, not a change of dtype).
_BOOL_REDUCTIONS = (np.logical_and, np.logical_or)
_NO_DEFAULT = object()


class ReleasedTileError(TypeError):
    """Raised when a kernel uses a tile or buffer after its ``with`` block ended (its SRAM was given back)."""


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


class Holding:
    """One piece of SRAM storage: a loaded tile (``kind="tile"``), a buffer, a made array or a kept copy.

    Attributes: kind, label (for messages), size (elements), closed_at (the SRAM clock when it was given back, or
    None while held), has_data (True once it holds values from HBM; a loaded tile always does), handle (the
    SRAM's), line (the kernel's line that made it, or None).

    Made by the chip only (``cta.load``, ``cta.buffer``, the facade's constructors, a kept copy); its arguments are
    still checked, so that a wrong one fails here and not in the SRAM's arithmetic.

    Raises: TypeError/ValueError: a kind not in :data:`HOLDING_KINDS`, a label that is not a string, a size that is
    not an int in ``0 .. MAX_M``, a has_data that is not a bool.
    """

    __slots__ = ("kind", "label", "size", "closed_at", "has_data", "handle", "line", "__weakref__")

    def __init__(self, kind: str, label: str, size: int, *, has_data: bool = False, line=None):
        kinds = ", ".join(map(repr, HOLDING_KINDS))
        if not isinstance(kind, str):
            raise TypeError(f"kind of a Holding must be one of {kinds} (a string), got {kind!r}")
        if kind not in HOLDING_KINDS:
            raise ValueError(f"kind of a Holding must be one of {kinds}, got {kind!r}")
        if not isinstance(label, str):
            raise TypeError(f"label of a Holding must be a string, got {label!r} ({type(label).__name__})")
        if isinstance(size, bool) or not isinstance(size, numbers.Integral):   # sizes come from arrays' .size
            raise TypeError(f"size of a Holding must be an int (elements), got {size!r} ({type(size).__name__})")
        size = positive_int(size, "size of a Holding", minimum=0, maximum=MAX_M)
        if not isinstance(has_data, bool):
            raise TypeError(f"has_data of a Holding must be True or False, got {has_data!r}")
        self.kind, self.label, self.size = kind, label, size
        self.closed_at = None
        self.has_data = has_data
        self.handle = None
        self.line = line

    def __repr__(self) -> str:
        state = "held" if self.closed_at is None else f"released at {self.closed_at}"
        return f"Holding({self.kind}, {self.label!r}, {self.size:,}, {state})"


def close_holding(sram, holding: Holding) -> None:
    """Give ``holding``'s SRAM back and stamp the moment (idempotent)."""
    if holding.closed_at is None and holding.handle is not None:
        sram.release(holding.handle)
        holding.closed_at = sram.clock


def _root(t):
    r = t._root
    return t if r is None else r


def carriers(t) -> frozenset:
    """The storage that ``t``'s data came from (the holdings a use after their end would make it a kept copy)."""
    r = _root(t)
    if r._kept is not None:
        return frozenset((r._kept,))
    o = r._owner
    if o is not None:
        return frozenset((o,)) if o.has_data else _EMPTY
    return r._sources


def _where(line) -> str:
    return f" (line {line[1]})" if line else ""


def use(t) -> None:
    """Check that ``t`` may be read now, and count it as a kept copy if its sources ended before this use.

    Raises:
        ReleasedTileError: ``t`` is (a view of) a tile or buffer whose ``with`` block has ended.
        SRAMCapacityError: ``t``, counted from the end of its first source's block, does not fit.
    """
    r = _root(t)
    o = r._owner
    if o is not None:
        if o.closed_at is not None and o.kind in ("tile", "buffer"):
            line = kernel_line()
            what = "tile" if o.kind == "tile" else "buffer"
            raise ReleasedTileError(
                f"{o.label} was used{_where(line)} after its `with` block ended: a {what} is on chip only inside its "
                f"block, and its SRAM was given back when the block ended. Use it inside the block; to keep values "
                "for later, hold them in a `cta.buffer` opened around the loop, or store them to HBM and load them "
                "again")
        return
    if r._kept is None and r._sources and r._ctx is not None:
        closed = [h.closed_at for h in r._sources if h.closed_at is not None]
        if closed:
            _keep(r, max(r._born, min(closed)))


def _keep(r, since: int) -> None:
    ctx = r._ctx
    line = kernel_line()
    ended = sorted({h.label for h in r._sources if h.closed_at is not None})
    label = (f"an array of shape {tuple(r.shape)} computed from {', '.join(ended[:3])}"
             f"{' ...' if len(ended) > 3 else ''} and used{_where(line)} after that block ended (a copy kept on chip)")
    h = Holding("kept", label, r.size, has_data=True, line=line)
    h.handle = ctx.sram.hold(label, int(r.size), since=since)
    r._kept = h
    weakref.finalize(r, close_holding, ctx.sram, h)


def _absorb(target, car: frozenset) -> None:
    """Data with sources ``car`` was written into ``target``: storage now holds data, a derived array gains sources."""
    if not car:
        return
    r = _root(target)
    holder = r._kept if r._kept is not None else r._owner
    if holder is not None:
        holder.has_data = True
    else:
        r._sources = r._sources | car


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, Tile) else x


def _plain_deep(x):
    if isinstance(x, Tile):
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_plain_deep(v) for v in x)
    return x


def _tiles_in(x, out):
    if isinstance(x, Tile):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            _tiles_in(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _tiles_in(v, out)
    return out


def _check_size(shape, what: str) -> None:
    n = 1
    for s in shape:
        n *= int(s)
    if n > MAX_TEMP_ELEMENTS:
        raise ValueError(f"{what} would make an array of shape {tuple(shape)} ({n:,} elements), more than the "
                         f"{MAX_TEMP_ELEMENTS:,} a kernel's arithmetic may produce: check the broadcasting (a missing "
                         "axis, an outer product of two long vectors)")


def _result_shape(ufunc, method, plain):
    shapes = [np.shape(x) for x in plain]
    if method == "__call__" and ufunc is np.matmul and len(shapes) == 2 and all(len(s) >= 1 for s in shapes):
        a, b = shapes
        if len(a) == 1 or len(b) == 1:
            return ()
        return np.broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])
    if method == "__call__":
        return np.broadcast_shapes(*shapes)
    if method == "outer":
        return tuple(d for s in shapes for d in s)
    return ()


def _tile_shape(shape) -> tuple:
    """``shape`` of a new :class:`Tile` (an int or a tuple of ints >= 0, at most :data:`~labcore.checks.MAX_ELEMENTS`
    elements), checked before anything is allocated."""
    if isinstance(shape, (numbers.Integral, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape of a Tile must be an int or a tuple of ints, got {shape!r} ({type(shape).__name__})")
    if len(shape) > MAX_TILE_DIMS:      # numpy's broadcasting gives up long before its own 64-dimension limit
        raise ValueError(f"shape of a Tile may have at most {MAX_TILE_DIMS} dimensions, got {len(shape)}")
    out = []
    for s in shape:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral):
            raise TypeError(f"shape of a Tile must hold ints, got {tuple(shape)!r}")
        if s < 0:
            raise ValueError(f"shape of a Tile must hold ints >= 0, got {tuple(shape)!r}")
        out.append(int(s))
    n = 1
    for s in out:
        n *= s
    if n > MAX_ELEMENTS:
        raise ValueError(f"shape of a Tile {tuple(out)} has {n:,} elements, more than the {MAX_ELEMENTS:,} an array "
                         "may have (labcore.checks.MAX_ELEMENTS)")
    return tuple(out)


def _tile_dtype(dtype) -> np.dtype:
    """``dtype`` of a new :class:`Tile`: one of :data:`TILE_DTYPES` (None is float64, as numpy's default)."""
    allowed = "float64 (float), int64 (int) or bool"
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype of a Tile must be {allowed}, got {dtype!r}") from None
    if dt not in TILE_DTYPES:
        raise TypeError(f"dtype of a Tile must be {allowed}, got {dt} (the chip keeps float64 values; narrow "
                        "formats such as bfloat16 or FP8 are counted by modelled_time's dtype_bytes, not stored)")
    return dt


class Tile(np.ndarray):
    """A float64 array on chip: its ufunc arithmetic is counted in a :class:`FlopCounter`, and it carries its
    sources (see the module docstring). Made by the chip (``cta.load``, ``cta.buffer``) and by the facade's
    constructors; a kernel never builds one itself.

    ``Tile(shape, dtype=float, ...)`` (numpy's ``ndarray`` constructor) makes a bare tile outside any CTA: ``shape``
    an int or a tuple of ints >= 0 with at most :data:`~labcore.checks.MAX_ELEMENTS` elements, ``dtype`` one of
    :data:`TILE_DTYPES`; without a ``buffer`` it holds zeros. Raises TypeError/ValueError naming ``shape`` or
    ``dtype`` otherwise, before allocating.
    """

    _ctx = None          # the CTA whose SRAM and FLOP counter this tile uses
    _owner = None        # the Holding of a storage array (and its views, through _root)
    _sources = _EMPTY    # a derived array's sources (holdings)
    _born = 0            # the SRAM clock when a derived array was made
    _kept = None         # the Holding of a derived array once it is a copy kept on chip
    _root = None         # a view's storage or derived array (None: this array is its own root)

    def __new__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        t = super().__new__(cls, _tile_shape(shape), _tile_dtype(dtype), buffer, offset, strides, order)
        if buffer is None:
            t.view(np.ndarray).fill(0)     # as the facade's np.empty: never memory nobody wrote
        return t

    def __array_finalize__(self, obj):
        if obj is None or not isinstance(obj, Tile):
            return
        self._ctx = obj._ctx
        if np.may_share_memory(self.view(np.ndarray), obj.view(np.ndarray)):   # a view: same data, same root
            self._root = _root(obj)
        else:                                                 # a copy made by numpy itself
            self._sources = carriers(obj)
            if self._ctx is not None:
                self._born = self._ctx.sram.clock

    # --- arithmetic -----------------------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        bad = {k for k, v in kwargs.items() if k not in _UFUNC_KWARGS and _UFUNC_DEFAULTS.get(k, _NO_DEFAULT) != v
               and not (k == "dtype" and method == "reduce" and ufunc in _BOOL_REDUCTIONS and v == np.bool_)}
        if bad:
            raise TypeError(f"np.{ufunc.__name__} on a tile takes no {', '.join(sorted(bad))} keyword: tiles stay "
                            "float64 arrays on chip")
        everything = inputs + (out or ()) + ((kwargs["where"],) if isinstance(kwargs.get("where"), Tile) else ())
        ctx, car = None, _EMPTY
        for x in everything:
            if isinstance(x, Tile):
                use(x)
                car = car | carriers(x)
                if ctx is None:
                    ctx = x._ctx
        plain = tuple(_plain(x) for x in inputs)
        if "where" in kwargs:
            kwargs["where"] = _plain(kwargs["where"])
        if method in ("__call__", "outer"):
            _check_size(_result_shape(ufunc, method, plain), f"np.{ufunc.__name__}")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if ctx is not None:
            ctx.flops.count(ufunc, method, plain, result)
        if out is not None:
            for o in out:
                if isinstance(o, Tile):
                    _absorb(o, car)
            return out[0] if len(out) == 1 else out
        if isinstance(result, tuple):
            return tuple(derived(r, ctx, car) for r in result)
        return derived(result, ctx, car)

    def __array_function__(self, func, types, args, kwargs):
        tiles = _tiles_in(args, [])
        _tiles_in(kwargs, tiles)
        ctx, car = None, _EMPTY
        for t in tiles:
            use(t)
            car = car | carriers(t)
            if ctx is None:
                ctx = t._ctx
        result = func(*_plain_deep(args), **{k: _plain_deep(v) for k, v in kwargs.items()})
        if ctx is not None:
            _count_function(ctx.flops, func, args, result)
        if isinstance(result, (tuple, list)):
            return type(result)(derived(r, ctx, car) if isinstance(r, (np.ndarray, np.generic)) else r
                                for r in result)
        if isinstance(result, (np.ndarray, np.generic)):
            return derived(result, ctx, car)
        return result

    # --- reading and writing --------------------------------------------------------------------------------
    def __getitem__(self, idx):
        use(self)
        extra = _EMPTY
        for t in _tiles_in(idx, []):
            use(t)
            extra = extra | carriers(t)
        res = super().__getitem__(_plain_deep(idx))
        if isinstance(res, Tile):
            if extra and res._root is None:
                res._sources = res._sources | extra
            return res
        return derived(res, self._ctx, carriers(self) | extra)   # a scalar: a 0-d tile, not a number

    def __setitem__(self, idx, value):
        use(self)
        car = _EMPTY
        for t in _tiles_in(value, []) + _tiles_in(idx, []):
            use(t)
            car = car | carriers(t)
        super().__setitem__(_plain_deep(idx), _plain_deep(value))
        _absorb(self, car)

    def __iter__(self):
        use(self)
        for i in range(len(self)):
            yield self[i]

    def copy(self, order="C"):
        """A copy (a derived array: a temporary while its source is on chip, a kept copy if used after)."""
        use(self)
        return derived(np.array(self.view(np.ndarray), order=order, copy=True), self._ctx, carriers(self))

    def reshape(self, *shape, **kwargs):
        """The tile in another shape (a view when numpy can make one), after checking that it may be read."""
        use(self)
        return super().reshape(*shape, **kwargs)

    @property
    def T(self):
        """The transpose (a view), after checking that the tile may be read."""
        use(self)
        return self.transpose()

    def __bool__(self):
        use(self)
        return bool(self.view(np.ndarray))

    def __repr__(self):
        return repr(self.view(np.ndarray)).replace("array(", "Tile(", 1)

    def __str__(self):
        return str(self.view(np.ndarray))

    def __format__(self, spec):
        return format(self.view(np.ndarray), spec)

    def _no_number(self, *args):
        raise TypeError("a value on chip cannot become a Python number (float(), int(), math.* of a tile): keep it a "
                        "tile (a 0-d tile works in every numpy expression) and use np.exp, np.sqrt, ... on it")

    __float__ = __int__ = __index__ = __complex__ = _no_number


def _count_function(flops, func, args, result) -> None:
    name = getattr(func, "__name__", "")
    if name == "outer":
        flops.nonmatmul += int(np.size(result))
    elif name == "einsum":
        subs = args[0] if args and isinstance(args[0], str) else ""
        dims = {}
        for letters, op in zip(subs.split("->")[0].split(","), args[1:]):
            for ch, n in zip(letters.strip(), getattr(op, "shape", ())):
                dims[ch] = int(n)
        terms = int(np.prod(list(dims.values()))) if dims else int(np.size(result))
        flops.matmul += 2 * terms


def derived(x, ctx, sources: frozenset):
    """``x`` (an array or a numpy scalar) as a derived :class:`Tile` of ``ctx`` with ``sources``."""
    t = np.asarray(x).view(Tile)
    t._ctx = ctx
    if sources:
        t._sources = sources
    if ctx is not None:
        t._born = ctx.sram.clock
    return t


def storage(data, ctx, holding: Holding):
    """``data`` as the storage :class:`Tile` of ``holding`` (a loaded tile, a buffer, a made array)."""
    t = np.asarray(data).view(Tile)
    t._ctx = ctx
    t._owner = holding
    return t


def as_tile(x, counter: FlopCounter | None):
    """``x`` as a :class:`Tile` counting into ``counter``, outside any CTA's SRAM (for host code and tests: numpy
    scalars become 0-d tiles; None stays None)."""
    if x is None:
        return None
    if counter is not None and not isinstance(counter, FlopCounter):
        raise TypeError(f"counter must be a FlopCounter or None, got {type(counter).__name__}")
    x = as_real(x, "x")
    ctx = _CounterOnly(counter) if counter is not None else None
    t = derived(x, None, _EMPTY)
    t._ctx = ctx
    return t


class _CounterOnly:
    """A context with a FLOP counter and an SRAM that never fills (tiles made outside a CTA)."""

    __slots__ = ("flops", "sram")

    def __init__(self, counter):
        self.flops = counter
        self.sram = SRAM(MAX_M)


# --- the CTA whose kernel is running (the facade's constructors make their arrays in it) ----------------------

_CURRENT = [None]


def current():
    """The CTA whose kernel is running now (None outside a launch)."""
    return _CURRENT[0]


class running:
    """``with running(cta):`` marks ``cta`` as the CTA whose kernel runs (nested launches restore the outer one)."""

    __slots__ = ("_cta", "_saved")

    def __init__(self, cta):
        self._cta = cta
        self._saved = None

    def __enter__(self):
        self._saved = _CURRENT[0]
        _CURRENT[0] = self._cta
        return self._cta

    def __exit__(self, *exc):
        _CURRENT[0] = self._saved
        return False
