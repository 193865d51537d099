"""The memory a simulated kernel sees: global arrays that count every element moved, shared arrays that record
who touched each element since the last barrier, and local arrays filled with garbage.

These objects stand in for numba's device arrays inside a simulated launch (:mod:`cudalab.sim`). A kernel indexes
them exactly as it indexes device arrays on a GPU (``Q[i, k]``, ``Ks[t, k] = ...``, ``X.shape[0]``, a row
``Q[i]``); every scalar access goes through ``__getitem__``/``__setitem__``, which is where the counting happens.
The thread making an access is ``threading.current_thread()``, a :class:`cudalab.sim.SimThread` that carries its
own counters, so no lock is taken on the fast path.

Counting convention (the book's, ``labcore.hbm``): one element read or written is one count, each time a thread
reads or writes it; a kernel that reads the same element twice from global memory counts it twice, as the
lecture's HBM ledger does (a GPU's caches may serve the second read, the count does not assume they do).
"""
from __future__ import annotations

import sys
import threading

import numpy as np

__all__ = ["GlobalArray", "GlobalRoot", "SharedArray", "local_array", "checked_shape", "code_location", "NO_THREAD",
           "ATOMIC", "MAX_ARRAY_BYTES"]

#: Marks in the shared-memory access records: no thread has touched the element in this epoch, several
#: different threads read it, an atomic operation wrote it.
NO_THREAD, MANY, ATOMIC = -1, -2, -3

_GARBAGE_INT = 0x5A5A5A5A


def code_location(depth: int = 2):
    """``(filename, line)`` of the kernel code ``depth`` frames above this call."""
    f = sys._getframe(depth)  # noqa: SLF001  (documented CPython API: the kernel line an access comes from)
    return f.f_code.co_filename, f.f_lineno


def _sim_thread():
    t = threading.current_thread()
    return t if getattr(t, "is_sim_thread", False) else None


def _plain_index(idx):
    """The index, refusing what a CUDA kernel cannot do: only integers and slices index an array in a kernel."""
    for p in (idx if isinstance(idx, tuple) else (idx,)):
        if isinstance(p, slice):
            continue
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"an array index in a kernel is an integer or a slice, got {p!r} "
                            f"({type(p).__name__}); convert a computed index with int(...)")
    return idx


class GlobalRoot:
    """One array in global memory during one launch: its values and, per element, which block wrote it and which
    block(s) read it.

    Blocks of one launch may run at the same time, in any order, with no barrier between them: an element that one
    block writes (plainly, not atomically) and another block reads or writes is a race, whatever order the simulator
    happened to run them in. Atomic operations do not race with each other; a plain access and an atomic one to the
    same element from different blocks do.
    """

    def __init__(self, name, data):
        self.name, self.data = name, data
        self.flat = data.reshape(-1)
        n = data.size
        self.w_block = np.full(n, NO_THREAD, dtype=np.int64)
        self.w_line = np.zeros(n, dtype=np.int64)
        self.r_block = np.full(n, NO_THREAD, dtype=np.int64)
        self.r_line = np.zeros(n, dtype=np.int64)


class GlobalArray:
    """A global-memory array inside a simulated launch: numpy storage plus per-thread read/write counters.

    Args:
        root: the :class:`GlobalRoot` (the array and its race records), or a name and ``data``.
        data: the numpy array holding the values (shared with the host's copy) when ``root`` is a name.
    Attributes:
        name, shape, ndim, size, dtype: as numba's device arrays.
    A view (``Q[i]``, ``Q[:, 0:4]``) is another GlobalArray counting into the same name.
    """

    __slots__ = ("name", "root", "pos", "shape", "ndim", "size", "dtype")

    def __init__(self, root, data=None, pos=None):
        if not isinstance(root, GlobalRoot):
            root = GlobalRoot(root, data)
        self.root, self.name = root, root.name
        self.pos = np.arange(root.data.size).reshape(root.data.shape) if pos is None else pos
        self.shape, self.ndim, self.size, self.dtype = self.pos.shape, self.pos.ndim, self.pos.size, \
            root.data.dtype

    def _position(self, idx, write):
        idx = _plain_index(idx)
        try:
            return self.pos[idx]
        except IndexError:
            # no line here: the launch wraps this in a KernelFailure that names the kernel's line and quotes it
            kind = "write to" if write else "read of"
            raise IndexError(f"out-of-bounds {kind} {self.name}[{idx}] (shape {self.shape}); on a GPU this reads "
                             "or corrupts memory outside the array: guard the access with the array's size") \
                from None

    def __getitem__(self, idx):
        p = self._position(idx, False)
        if isinstance(p, np.ndarray):
            return GlobalArray(self.root, pos=p)
        p = int(p)
        th = _sim_thread()
        if th is not None:
            th.global_access(self.root, p, False)
        return self.root.flat[p]

    def __setitem__(self, idx, value):
        p = self._position(idx, True)
        th = _sim_thread()
        if th is not None:
            for q in np.atleast_1d(p).reshape(-1):
                th.global_access(self.root, int(q), True)
        self.root.flat[p] = value

    @property
    def root_itemsize(self) -> int:
        return int(self.root.data.dtype.itemsize)

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"GlobalArray({self.name!r}, shape={self.shape}, dtype={self.dtype})"


class SharedRoot:
    """One ``cuda.shared.array`` allocation of one block: its values and, per element, who touched it last.

    Per element it keeps the thread and line of the last write and its epoch (the number of barriers the block
    has passed), and the reader(s) in the current epoch. Two accesses to one element race when they fall in the same
    epoch, come from different threads and at least one writes (CUDA's guarantee is only that a barrier orders
    them). Values start as NaN (floats) or garbage (ints): shared memory is not initialised on a GPU.
    """

    def __init__(self, name, shape, dtype, location, block):
        self.name, self.location, self.block = name, location, block
        shape = checked_shape(shape, dtype, "shared")
        dtype = np.dtype(dtype)
        fill = np.nan if np.issubdtype(dtype, np.floating) else _GARBAGE_INT
        self.data = np.full(shape, fill, dtype=dtype)
        self.flat = self.data.reshape(-1)
        n = self.data.size
        self.w_tid = np.full(n, NO_THREAD, dtype=np.int64)
        self.w_epoch = np.full(n, -1, dtype=np.int64)
        self.w_line = np.zeros(n, dtype=np.int64)
        self.r_tid = np.full(n, NO_THREAD, dtype=np.int64)
        self.r_epoch = np.full(n, -1, dtype=np.int64)
        self.r_line = np.zeros(n, dtype=np.int64)
        self.nbytes = int(self.data.nbytes)


class SharedArray:
    """A shared-memory array (or a view of one) inside a simulated block; see :class:`SharedRoot`."""

    __slots__ = ("root", "pos", "shape", "ndim", "size", "dtype")

    def __init__(self, root: SharedRoot, pos: np.ndarray):
        self.root, self.pos = root, pos
        self.shape, self.ndim, self.size, self.dtype = pos.shape, pos.ndim, pos.size, root.data.dtype

    def __getitem__(self, idx):
        idx = _plain_index(idx)
        try:
            p = self.pos[idx]
        except IndexError:
            raise IndexError(f"out-of-bounds read of shared array {self.root.name}[{idx}] (shape {self.shape})") \
                from None
        if isinstance(p, np.ndarray):
            return SharedArray(self.root, p)
        p = int(p)
        th = _sim_thread()
        if th is not None:
            th.shared_access(self.root, p, False)
        return self.root.flat[p]

    def __setitem__(self, idx, value):
        idx = _plain_index(idx)
        try:
            p = self.pos[idx]
        except IndexError:
            raise IndexError(f"out-of-bounds write to shared array {self.root.name}[{idx}] (shape {self.shape})") \
                from None
        th = _sim_thread()
        for q in np.atleast_1d(p).reshape(-1):
            if th is not None:
                th.shared_access(self.root, int(q), True)
        self.root.flat[p] = value

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"SharedArray({self.root.name!r}, shape={self.shape}, dtype={self.dtype})"


#: The most bytes one shared or local array may have: a GPU's SM has at most 228 KiB of shared memory (H100) and a
#: thread at most 512 KiB of local memory; anything larger is a bug, refused before numpy allocates it.
MAX_ARRAY_BYTES = 512 * 1024


def checked_shape(shape, dtype, what):
    """``shape`` as a tuple of ints, refusing what no GPU gives a block or a thread (see :data:`MAX_ARRAY_BYTES`)."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not dims or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in dims):
        raise TypeError(f"a {what} array's shape is a positive integer or a tuple of them, got {shape!r}")
    nbytes = int(np.prod([int(d) for d in dims], dtype=object)) * np.dtype(dtype).itemsize
    if nbytes > MAX_ARRAY_BYTES:
        raise ValueError(f"a {what} array of shape {tuple(int(d) for d in dims)} is {nbytes:,} bytes: more than any "
                         f"GPU gives a {'block' if what == 'shared' else 'thread'} (at most {MAX_ARRAY_BYTES:,} here)")
    return tuple(int(d) for d in dims)


def local_array(shape, dtype):
    """A thread's local array (registers or local memory on a GPU): not initialised, so floats start as NaN.

    Raises: TypeError/ValueError for a shape that is not positive integers or is larger than a GPU allows."""
    shape = checked_shape(shape, dtype, "local")
    dtype = np.dtype(dtype)
    fill = np.nan if np.issubdtype(dtype, np.floating) else _GARBAGE_INT
    return np.full(shape, fill, dtype=dtype)
