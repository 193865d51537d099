"""A simulated launch that counts: numba-cuda's simulator kernel API, driven block by block by the harness.

numba-cuda's simulator runs a ``@cuda.jit`` kernel's Python source with one Python thread per CUDA thread and a
stand-in ``cuda`` module (``threadIdx``, ``blockIdx``, ``shared.array``, ``syncthreads``, ``atomic``...). This module
reuses that stand-in (:class:`numba.cuda.simulator.kernelapi.FakeCUDAModule` and its kernel context), swaps it in
for ``cuda`` in the globals of the kernel and of every device function it reaches (as the simulator swaps it for one
function), and replaces four pieces with ones that measure:

- the block runner (:class:`SimThread`, :class:`BlockRun`): a barrier on a condition variable (no polling), an epoch
  counter the race check uses, a report of barriers that not every thread reaches, a time limit that stops a
  kernel that never ends, and blocks run in an order the caller chooses (a correct kernel gives the same answer in
  every order; an order-dependent one shows it);
- shared memory (``cuda.shared.array``): one allocation per call site *per block* (the simulator's own allocations
  live for the whole launch, so a block could read what the previous block left; a GPU gives no such thing), sized
  against a budget, and tracked for races (:class:`cudalab.memory.SharedRoot`);
- local arrays (``cuda.local.array``): filled with NaN, so a value used before it is set shows;
- atomics (``cuda.atomic.*``): counted apart from plain traffic, per array.

Global arrays are :class:`cudalab.memory.GlobalArray`, which count every element read and written.

Source: numba-cuda 0.30 ``numba/cuda/simulator/kernel.py`` and ``kernelapi.py`` (the simulator this drives);
NVIDIA compute-sanitizer's racecheck and synccheck tools for what a shared-memory hazard and a divergent barrier
are; the CUDA C++ Programming Guide, "Synchronization functions": ``__syncthreads()`` is allowed in conditional
code only if the condition evaluates identically across the whole block.
"""
from __future__ import annotations

import contextlib
import ctypes
import inspect
import linecache
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from labcore.checks import positive_float, positive_int
from labcore.hbm import Ledger

from .memory import ATOMIC, MANY, NO_THREAD, GlobalArray, GlobalRoot, SharedArray, SharedRoot, code_location, local_array

__all__ = ["Device", "DeviceArray", "Launch", "Race", "Finding", "KernelFailure", "KernelTimeout", "launch",
           "ORDERS", "MAX_THREADS", "MAX_BLOCKS"]

#: Block orders a launch accepts besides an explicit permutation.
ORDERS = ("sequential", "reversed", "shuffled")
#: The most threads a block may have (every NVIDIA GPU since compute capability 2.0).
MAX_THREADS = 1024
#: The most blocks one simulated launch runs (each thread is a Python thread: a guard against a typo).
MAX_BLOCKS = 4096
#: Stack of each simulated thread: kernels cannot recurse deeply, and a thousand threads must fit a memory limit.
_THREAD_STACK = 512 * 1024


class KernelFailure(RuntimeError):
    """The kernel raised, or broke a rule the launch cannot continue past. The message names the block, the
    thread and the kernel line. Attributes: ``cause`` (the original exception or None), ``block``, ``thread``
    (3-tuples or None), ``line`` (``(filename, lineno)`` or None)."""

    def __init__(self, message, *, cause=None, block=None, thread=None, line=None):
        super().__init__(message)
        self.cause, self.block, self.thread, self.line = cause, block, thread, line


class KernelTimeout(KernelFailure):
    """The kernel ran past the launch's time limit (a loop that never ends, most often)."""


class _Abort(BaseException):
    """Stops the other threads of a block after one thread failed (not an Exception: a kernel cannot catch it)."""


class _Timeout(BaseException):
    """Raised inside a simulated thread when the launch's time limit has passed."""


def _source_line(loc) -> str:
    if not loc:
        return ""
    text = linecache.getline(loc[0], loc[1]).strip()
    return f"line {loc[1]}" + (f" (`{text}`)" if text else "")


@dataclass
class Race:
    """A hazard: two accesses to one element, at least one a write, that nothing orders.

    In shared memory, two threads of one block between two barriers; in global memory, two blocks of one launch
    (blocks have no barrier between them, and a GPU runs them at the same time, in any order).

    Attributes:
        kind: ``"read after write"``, ``"write after read"`` or ``"write after write"``.
        space: ``"shared"`` or ``"global"``.
        array: the array's name (a shared array: the variable it was assigned to).
        index: the element (flat position in the array).
        block, thread: the block and the thread of the second access (3-tuples).
        other: the first access's thread (shared) or block (global), a 3-tuple, or None when several threads or
            blocks made it, or an atomic operation did.
        line, other_line: ``(filename, lineno)`` of the second and the first access.
        atomic, other_atomic: whether the second, the first access was an atomic operation.
        count: how many times this pair of lines raced in the launch.
    """

    kind: str
    space: str
    array: str
    index: int
    block: tuple
    thread: tuple
    other: tuple | None
    line: tuple
    other_line: tuple
    atomic: bool = False
    other_atomic: bool = False
    count: int = 1

    def message(self) -> str:
        """One line, as a racecheck report: the hazard, the array, both lines, who made the accesses."""
        first = "read" if self.kind == "write after read" else "wrote"
        second = "read" if self.kind == "read after write" else "wrote"
        if self.atomic:
            second = "added to (atomically)"
        if self.other_atomic:
            first = "added to (atomically)"
        times = f"{self.count:,} time{'s' if self.count != 1 else ''} in this launch"
        if self.space == "shared":
            who = "another thread" if self.other is None else f"thread {self.other}"
            return (f"race on shared array {self.array} ({self.kind}): thread {self.thread} of block {self.block} "
                    f"{second} element {self.index} at {_source_line(self.line)} after {who} {first} it at "
                    f"{_source_line(self.other_line)}, with no cuda.syncthreads() between them ({times})")
        who = "another block" if self.other is None else f"block {self.other}"
        return (f"race on global array {self.array} ({self.kind}) between blocks: block {self.block} {second} "
                f"element {self.index} at {_source_line(self.line)} and {who} {first} it at "
                f"{_source_line(self.other_line)}; blocks run at the same time in any order, so one block's update "
                f"can be lost or seen half done: use cuda.atomic.add, or give each block its own part ({times})")


@dataclass
class Finding:
    """Something the launch saw that is wrong on a GPU but did not stop the simulation.

    Attributes:
        kind: ``"barrier"`` (a syncthreads that not every thread reached, or threads waiting at different
            syncthreads calls), ``"uninitialised"`` (shared memory read before any thread of the block wrote it),
            ``"shared"`` (a block over the shared-memory budget), ``"local"`` (a thread over the local-array budget).
        message: one line for the reader.
        block: the block (3-tuple).
        line: ``(filename, lineno)`` or None.
    """

    kind: str
    message: str
    block: tuple
    line: tuple | None = None


@dataclass
class Launch:
    """What one simulated launch did.

    Attributes:
        name: the kernel's name.
        grid, block: 3-tuples of blocks and threads.
        order: the blocks in the order they ran.
        reads, writes: ``{array: elements}`` of plain global-memory accesses.
        atomics: ``{array: operations}``; atomic_bytes: ``{array: bytes}`` (each operation sends one element).
        per_block: ``{block: {"reads": {...}, "writes": {...}, "atomics": {...}}}``.
        shared: ``{array: bytes}`` of the largest block's allocations; shared_bytes: their sum (bytes).
        local_bytes: the most bytes of local arrays one thread held.
        threads: threads per block.
        itemsize: ``{array: bytes per element}`` of the arrays passed.
        races: the shared-memory hazards (:class:`Race`, one per pair of lines).
        findings: barrier and initialisation findings (:class:`Finding`).
        error: the :class:`KernelFailure` that ended the launch, or None.
        seconds: wall time of the simulation (not a GPU time).
    """

    name: str
    grid: tuple
    block: tuple
    order: list = field(default_factory=list)
    reads: dict = field(default_factory=dict)
    writes: dict = field(default_factory=dict)
    atomics: dict = field(default_factory=dict)
    atomic_bytes: dict = field(default_factory=dict)
    per_block: dict = field(default_factory=dict)
    shared: dict = field(default_factory=dict)
    shared_bytes: int = 0
    local_bytes: int = 0
    threads: int = 0
    itemsize: dict = field(default_factory=dict)
    races: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    error: KernelFailure | None = None
    seconds: float = 0.0

    def by_tensor(self) -> dict:
        """``{array: {"read": n, "write": n}}`` in first-touch order, the format of ``labcore.hbm``'s closed forms
        (``by_tensor=True``) and of :class:`labcore.hbm.Ledger`'s ``by_tensor()``."""
        names = list(dict.fromkeys(list(self.reads) + list(self.writes)))
        return {n: {"read": self.reads.get(n, 0), "write": self.writes.get(n, 0)} for n in names}

    @property
    def elements(self) -> int:
        """Global-memory elements read and written (plain accesses; atomics apart)."""
        return sum(self.reads.values()) + sum(self.writes.values())

    @property
    def ctas(self) -> int:
        """Blocks (CTAs) in the grid."""
        return int(np.prod(self.grid))


class SimThread(threading.Thread):
    """One simulated CUDA thread: runs the kernel's Python function and carries its own counters.

    numba's stand-in ``cuda`` module reads ``threadIdx``, ``blockIdx`` and ``thread_id`` from
    ``threading.current_thread()`` and calls its ``syncthreads*`` methods; the harness's arrays call
    :meth:`global_access` and :meth:`shared_access`.
    """

    is_sim_thread = True

    def __init__(self, fn, args, run, block_idx, thread_idx):
        from numba.cuda.simulator.kernelapi import Dim3

        super().__init__(daemon=True, name=f"cuda{block_idx}{thread_idx}")
        self._fn, self._args, self.run_state = fn, args, run
        self.blockIdx, self.threadIdx = Dim3(*block_idx), Dim3(*thread_idx)
        bx, by, _ = run.block_dim
        self.thread_id = thread_idx[0] + bx * (thread_idx[1] + by * thread_idx[2])
        gx, gy, _ = run.ls.grid_dim
        self.block_flat = block_idx[0] + gx * (block_idx[1] + gy * block_idx[2])
        self.reads, self.writes = defaultdict(int), defaultdict(int)
        self.atomics, self.atomic_bytes = defaultdict(int), defaultdict(int)
        self.local_sites = {}
        self._accesses = 0

    # --- what the kernel runs ------------------------------------------------------------------------------
    def run(self):
        try:
            with np.errstate(all="ignore"):      # inf and NaN are results on a GPU, not warnings
                self._fn(*self._args)
        except _Abort:
            pass
        except _Timeout:
            self.run_state.fail(self, None, timeout=True)
        except BaseException as exc:  # the reader's kernel may raise anything: it is reported, never swallowed
            self.run_state.fail(self, exc)
        finally:
            self.run_state.exit(self)

    def _tick(self):
        rs = self.run_state
        if rs.abort:
            raise _Abort()
        self._accesses += 1
        if not self._accesses & 1023 and time.monotonic() > rs.deadline:
            raise _Timeout()

    # --- counters the arrays call --------------------------------------------------------------------------
    def global_access(self, root, p: int, write: bool, *, atomic: bool = False):
        """Count one element of global memory and report a race with another block of this launch."""
        self._tick()
        if atomic:
            self.atomics[root.name] += 1
            self.atomic_bytes[root.name] += root.data.dtype.itemsize
        else:
            (self.writes if write else self.reads)[root.name] += 1
        rs, b = self.run_state, self.block_flat
        w_other = root.w_block[p]
        if w_other != NO_THREAD and w_other != b and not (atomic and w_other == ATOMIC):
            loc = rs.loc_id(code_location(3))
            kind = "write after write" if write else "read after write"
            rs.global_race(kind, root.name, p, self, None if w_other in (ATOMIC, MANY) else int(w_other),
                           loc, int(root.w_line[p]), other_atomic=w_other == ATOMIC, atomic=atomic)
        if write:
            r_other = root.r_block[p]
            if r_other != NO_THREAD and r_other != b:
                rs.global_race("write after read", root.name, p, self, None if r_other == MANY else int(r_other),
                               rs.loc_id(code_location(3)), int(root.r_line[p]), atomic=atomic)
            if atomic:
                if root.w_block[p] == NO_THREAD:
                    root.w_block[p] = ATOMIC
            else:
                root.w_block[p] = b
            root.w_line[p] = rs.loc_id(code_location(3))
        else:
            r_other = root.r_block[p]
            if r_other == NO_THREAD:
                root.r_block[p] = b
                root.r_line[p] = rs.loc_id(code_location(3))
            elif r_other != b:
                root.r_block[p] = MANY

    def shared_access(self, root: SharedRoot, p: int, write: bool, *, atomic: bool = False):
        """Record one access to element ``p`` of a shared allocation and report a hazard with an earlier access
        of this epoch (see :class:`cudalab.memory.SharedRoot`)."""
        self._tick()
        rs = self.run_state
        epoch, tid = rs.epoch, self.thread_id
        loc = rs.loc_id(code_location(3))
        if write:
            w_other = root.w_tid[p]
            if root.w_epoch[p] == epoch and w_other != tid and not (atomic and w_other == ATOMIC):
                rs.race("write after write", root, p, self, None if w_other == ATOMIC else int(w_other),
                        loc, int(root.w_line[p]))
            r_other = root.r_tid[p]
            if root.r_epoch[p] == epoch and r_other != tid:
                rs.race("write after read", root, p, self, None if r_other == MANY else int(r_other),
                        loc, int(root.r_line[p]))
            root.w_tid[p], root.w_epoch[p], root.w_line[p] = (ATOMIC if atomic else tid), epoch, loc
        else:
            w_other = root.w_tid[p]
            if root.w_epoch[p] < 0:
                rs.uninitialised(root, loc)
            elif root.w_epoch[p] == epoch and w_other != tid:
                rs.race("read after write", root, p, self, None if w_other == ATOMIC else int(w_other),
                        loc, int(root.w_line[p]))
            if root.r_epoch[p] == epoch:
                if root.r_tid[p] != tid:
                    root.r_tid[p] = MANY
            else:
                root.r_tid[p], root.r_epoch[p], root.r_line[p] = tid, epoch, loc

    # --- barriers ------------------------------------------------------------------------------------------
    def syncthreads(self):
        self.run_state.barrier(self, code_location(3))

    def _vote(self, value, reduce):
        rs = self.run_state
        loc = code_location(4)
        rs.votes[self.thread_id] = value
        rs.barrier(self, loc)
        result = reduce(list(rs.votes.values()))
        rs.barrier(self, loc)
        return result

    def syncthreads_count(self, value):
        return self._vote(value, lambda v: int(np.count_nonzero(v)))

    def syncthreads_and(self, value):
        return self._vote(value, lambda v: int(all(v)))

    def syncthreads_or(self, value):
        return self._vote(value, lambda v: int(any(v)))

    def thread_tuple(self):
        return tuple(self.threadIdx)


class BlockRun:
    """The state of one block while it runs: the barrier, the epoch, its shared allocations, its findings."""

    def __init__(self, launch_state, block_idx, block_dim, deadline):
        self.ls, self.block_idx, self.block_dim, self.deadline = launch_state, block_idx, block_dim, deadline
        self.cond = threading.Condition()
        self.nthreads = int(np.prod(block_dim))
        self.live, self.arrived, self.epoch, self.generation = self.nthreads, 0, 0, 0
        self.arrival_locs = set()
        self.abort = False
        self.errors = []
        self.shared = {}
        self.votes = {}
        self.uninit_seen = set()
        self.timeout_line = None

    def loc_id(self, loc):
        return self.ls.loc_id(loc)

    # --- barrier -------------------------------------------------------------------------------------------
    def barrier(self, th, loc):
        with self.cond:
            if self.abort:
                raise _Abort()
            self.arrived += 1
            self.arrival_locs.add(loc)
            if self.arrived == self.live:
                self._release()
            else:
                gen = self.generation
                while self.generation == gen:
                    if self.abort:
                        raise _Abort()
                    if time.monotonic() > self.deadline:
                        raise _Timeout()
                    self.cond.wait(0.2)

    def _release(self):
        if len(self.arrival_locs) > 1:
            lines = ", ".join(_source_line(loc) for loc in sorted(self.arrival_locs, key=lambda x: x[1]))
            self.ls.finding("barrier", f"threads of block {self.block_idx} waited at different "
                            f"cuda.syncthreads() calls ({lines}): on a GPU every thread of a block must reach the "
                            "same barrier, or the block hangs or misbehaves", self.block_idx,
                            min(self.arrival_locs, key=lambda x: x[1]))
        elif self.live < self.nthreads and not self.errors:
            # threads that raised are not threads that returned: their error is the finding, not the barrier
            (loc,) = self.arrival_locs
            self.ls.finding("barrier", f"cuda.syncthreads() at {_source_line(loc)} was reached by {self.live} of "
                            f"the {self.nthreads} threads of block {self.block_idx}; the others had returned. "
                            "A barrier must be reached by every thread of the block: guard the work with an `if`, "
                            "not the barrier (no early `return` before a syncthreads)", self.block_idx, loc)
        self.epoch += 1
        self.generation += 1
        self.arrived = 0
        self.arrival_locs = set()
        self.cond.notify_all()

    def exit(self, th):
        with self.cond:
            self.live -= 1
            if self.arrived and self.arrived == self.live:
                self._release()

    def fail(self, th, exc, *, timeout=False):
        with self.cond:
            self.errors.append((th, exc, timeout))
            self.abort = True
            self.cond.notify_all()

    # --- shared-memory records -----------------------------------------------------------------------------
    def race(self, kind, root, p, th, other, loc, other_loc):
        self.ls.race(kind, "shared", root.name, p, self.block_idx, th.thread_tuple(), other, loc, other_loc,
                     self.block_dim)

    def global_race(self, kind, name, p, th, other, loc, other_loc, *, atomic=False, other_atomic=False):
        self.ls.race(kind, "global", name, p, self.block_idx, th.thread_tuple(), other, loc, other_loc,
                     self.ls.grid_dim, atomic, other_atomic)

    def uninitialised(self, root, loc):
        key = (root.name, loc)
        if key in self.uninit_seen:
            return
        self.uninit_seen.add(key)
        where = self.ls.location(loc)
        self.ls.finding("uninitialised", f"shared array {root.name} was read at {_source_line(where)} before any "
                        f"thread of block {self.block_idx} wrote that element: shared memory starts with "
                        "garbage on a GPU (here NaN)", self.block_idx, where)


class _LaunchState:
    """What a launch accumulates over its blocks: code locations, races, findings."""

    def __init__(self, grid_dim):
        self.grid_dim = grid_dim
        self.locs, self.loc_table = {}, []
        self.races, self.findings = {}, []
        self.lock = threading.Lock()

    def loc_id(self, loc):
        i = self.locs.get(loc)
        if i is None:
            with self.lock:
                i = self.locs.setdefault(loc, len(self.loc_table))
                if i == len(self.loc_table):
                    self.loc_table.append(loc)
        return i

    def location(self, i):
        return self.loc_table[i] if isinstance(i, int) else i

    def race(self, kind, space, array, p, block, thread, other, loc, other_loc, dims, atomic=False,
             other_atomic=False):
        key = (kind, space, array, loc, other_loc)
        with self.lock:
            r = self.races.get(key)
            if r is None:
                other_t = None if other is None else _unflatten(other, dims)
                self.races[key] = Race(kind, space, array, p, block, thread, other_t, self.location(loc),
                                       self.location(other_loc), atomic, other_atomic)
            else:
                r.count += 1

    def finding(self, kind, message, block, line=None):
        with self.lock:
            if not any(f.kind == kind and f.line == line for f in self.findings):
                self.findings.append(Finding(kind, message, block, self.location(line) if line is not None else None))


def _unflatten(tid, block_dim):
    bx, by, _ = block_dim
    return (tid % bx, (tid // bx) % by, tid // (bx * by))


class _TracingShared:
    """``cuda.shared.array`` for the harness: one allocation per call site per block, with its name and size."""

    def __init__(self, budget_check):
        self._check = budget_check

    def array(self, shape, dtype, alignment=None):
        from numba.cuda.np import numpy_support
        from numba.cuda import types

        th = threading.current_thread()
        if not getattr(th, "is_sim_thread", False):
            raise RuntimeError("cuda.shared.array is only available inside a kernel")
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        if shape == 0 or shape == (0,):
            raise TypeError("dynamic shared memory (cuda.shared.array(0, ...)) is not used in these labs: give the "
                            "array a constant shape, e.g. cuda.shared.array((BLOCK_KV, D), float32)")
        loc = code_location(2)
        run = th.run_state
        with run.cond:
            root = run.shared.get(loc)
            if root is None:
                root = SharedRoot(_assigned_name(loc), shape, dtype, loc, run.block_idx)
                run.shared[loc] = root
                self._check(run)
        return SharedArray(root, np.arange(root.data.size).reshape(root.data.shape))


def _assigned_name(loc) -> str:
    """The variable a ``cuda.shared.array`` call is assigned to (``Ks = cuda.shared.array(...)`` -> ``"Ks"``)."""
    text = linecache.getline(loc[0], loc[1]).strip()
    head = text.split("=", 1)[0].strip() if "=" in text else ""
    return head if head.isidentifier() else f"shared@line{loc[1]}"


class _TracingLocal:
    """``cuda.local.array``: NaN-filled (uninitialised) arrays, their bytes per thread checked against a budget."""

    def __init__(self, budget_check):
        self._check = budget_check

    def array(self, shape, dtype, alignment=None):
        from numba.cuda.np import numpy_support
        from numba.cuda import types

        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        a = local_array(shape, dtype)
        th = threading.current_thread()
        if getattr(th, "is_sim_thread", False):
            th.local_sites[code_location(2)] = a.nbytes
            self._check(th)
        return a


class _TracingAtomic:
    """``cuda.atomic``: the simulator's own operations, applied to the storage behind the harness's arrays, and
    counted (global arrays) or recorded as atomic writes (shared arrays)."""

    def __init__(self):
        from numba.cuda.simulator.kernelapi import FakeCUDAAtomic

        self._fake = FakeCUDAAtomic()

    def __getattr__(self, op):
        if op.startswith("_"):
            raise AttributeError(op)
        impl = getattr(self._fake, op)

        def atomic(array, *rest):
            th = threading.current_thread()
            sim = getattr(th, "is_sim_thread", False)
            if isinstance(array, GlobalArray):
                index = rest[0] if op != "compare_and_swap" else (0,) * array.ndim
                p = int(array.pos[index])
                if sim:
                    th.global_access(array.root, p, True, atomic=True)
                if op == "compare_and_swap":
                    return self._fake.cas(array.root.flat, p, *rest)
                return impl(array.root.flat, p, *rest[1:])
            if isinstance(array, SharedArray):
                index = rest[0] if op != "compare_and_swap" else (0,) * array.ndim
                p = int(array.pos[index])
                if sim:
                    th.shared_access(array.root, p, True, atomic=True)
                tail = rest[1:] if op != "compare_and_swap" else rest
                if op == "compare_and_swap":
                    return self._fake.cas(array.root.flat, p, *tail)
                return impl(array.root.flat, p, *tail)
            return impl(array, *rest)

        return atomic


class CudaMath:
    """The ``math`` module as a CUDA kernel sees it: ``exp`` of a large number is inf, ``log(0)`` is -inf, ``sqrt``
    of a negative number is NaN (IEEE results, as the device's ``expf``/``logf`` give), where Python's ``math``
    raises. A float32 argument gives a float32 result. Swapped in for the kernel's ``math`` during a launch."""

    _UFUNCS = dict(exp=np.exp, exp2=np.exp2, expm1=np.expm1, log=np.log, log2=np.log2, log10=np.log10,
                   log1p=np.log1p, sqrt=np.sqrt, fabs=np.fabs, tanh=np.tanh, sin=np.sin, cos=np.cos, tan=np.tan,
                   atan=np.arctan, atan2=np.arctan2, sinh=np.sinh, cosh=np.cosh, pow=np.power, copysign=np.copysign,
                   fmod=np.fmod, isinf=np.isinf, isnan=np.isnan, isfinite=np.isfinite, hypot=np.hypot)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        import math

        f = self._UFUNCS.get(name)
        if f is None:
            return getattr(math, name)

        def call(*args):
            out = f(*args)
            return bool(out) if out.dtype == np.bool_ else out

        call.__name__ = name
        return call


_CUDA_MATH = CudaMath()


def _device_function(v):
    """The Python function behind a ``@cuda.jit(device=True)`` object (simulator or GPU dispatcher), else None."""
    py = getattr(v, "py_func", None)
    if py is None:
        return None
    if getattr(v, "_device", False) or getattr(v, "targetoptions", {}).get("device", False):
        return py
    return None


@contextlib.contextmanager
def _swapped_globals(fn, fake_cuda):
    """For the launch, in the globals of the kernel and of every device function it reaches: ``cuda`` becomes the
    harness's stand-in module, ``math`` :class:`CudaMath`, and each device function its Python source (the way numba's
    simulator swaps ``cuda`` for one function), so that a kernel whose helpers live in other namespaces, or that was
    compiled for a real GPU, runs here too."""
    import math

    from numba import cuda

    swaps, todo, seen = [], [fn.__globals__], set()
    while todo:
        g = todo.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        for k, v in list(g.items()):
            if v is cuda:
                swaps.append((g, k, v))
                g[k] = fake_cuda
            elif v is math:
                swaps.append((g, k, v))
                g[k] = _CUDA_MATH
            elif (py := _device_function(v)) is not None:
                swaps.append((g, k, v))
                g[k] = py
                todo.append(py.__globals__)
    try:
        yield
    finally:
        for g, k, v in reversed(swaps):
            g[k] = v


def _tracing_module(grid_dim, block_dim, budget_check, local_check):
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    class TracingCUDAModule(FakeCUDAModule):
        """numba's stand-in ``cuda`` module with the harness's shared memory, local arrays and atomics."""

        def __init__(self):
            super().__init__(grid_dim, block_dim, 0)
            self.tracing = (_TracingShared(budget_check), _TracingLocal(local_check), _TracingAtomic())

        shared = property(lambda self: self.tracing[0])
        local = property(lambda self: self.tracing[1])
        atomic = property(lambda self: self.tracing[2])

    return TracingCUDAModule()


def _dim3(x, name, limit):
    if isinstance(x, (tuple, list)):
        if not 1 <= len(x) <= 3:
            raise ValueError(f"{name} must have 1 to 3 dimensions, got {x!r}")
        dims = [positive_int(v, name) for v in x]
    else:
        dims = [positive_int(x, name)]
    dims += [1] * (3 - len(dims))
    total = int(np.prod(dims))
    if total > limit:
        raise ValueError(f"{name} = {tuple(dims)} is {total:,} in all; at most {limit:,} are allowed here")
    return tuple(dims)


@dataclass(frozen=True)
class DeviceArray:
    """A named array in a :class:`Device`'s global memory (what a launch passes to the kernel).

    Attributes: name, shape, dtype.
    """

    name: str
    shape: tuple
    dtype: np.dtype


class Device:
    """A simulated GPU's global memory and its launches: named arrays, a ledger, and a record per launch.

    Args:
        shared_budget: bytes of shared memory a block may allocate (None: no budget); a block that allocates
            more is reported (a ``"shared"`` finding, ``Launch.shared_bytes``), not stopped.
        local_budget: bytes of local arrays one thread may hold (None: no budget); more is reported (a
            ``"local"`` finding), not stopped.
        max_threads: threads per block allowed (1 .. 1024).
        order: the order blocks run in: ``"sequential"``, ``"reversed"``, ``"shuffled"`` (with ``seed``), or
            an explicit permutation of the grid's blocks (a list of block indices).
        seed: seed of the shuffled order (int >= 0).
        time_limit: seconds a launch may run in the simulator before it is stopped (> 0).
    Attributes:
        ledger: :class:`labcore.hbm.Ledger` of plain global-memory elements over all launches.
        atomics: ``{array: operations}`` over all launches.
        launches: the :class:`Launch` records, in order.
    Raises:
        TypeError/ValueError: bad arguments.
    """

    def __init__(self, *, shared_budget: int | None = None, local_budget: int | None = None,
                 max_threads: int = MAX_THREADS, order="sequential", seed: int = 0, time_limit: float = 60.0):
        self.shared_budget = None if shared_budget is None else positive_int(shared_budget, "shared_budget")
        self.local_budget = None if local_budget is None else positive_int(local_budget, "local_budget")
        self.max_threads = positive_int(max_threads, "max_threads", maximum=MAX_THREADS)
        if isinstance(order, str) and order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS} or a permutation of the grid's blocks, got {order!r}")
        if not isinstance(order, (str, list, tuple)):
            raise TypeError(f"order must be one of {ORDERS} or a list of block indices, got {type(order).__name__}")
        self.order = order
        self._rng = np.random.default_rng(positive_int(seed, "seed", minimum=0))
        self.time_limit = positive_float(time_limit, "time_limit")
        self._arrays: dict[str, np.ndarray] = {}
        self.ledger = Ledger()
        self.atomics: dict[str, int] = defaultdict(int)
        self.launches: list[Launch] = []

    # --- memory --------------------------------------------------------------------------------------------
    def _add(self, name, data):
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"an array name must be an identifier string such as 'Q', got {name!r}")
        if name in self._arrays:
            raise ValueError(f"the device already holds an array named {name!r}")
        self._arrays[name] = data
        return self[name]

    def upload(self, name: str, array, dtype=np.float32) -> DeviceArray:
        """Copy a host array into global memory as ``name`` (converted to ``dtype``); no traffic is counted."""
        a = np.asarray(array)
        if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
            raise TypeError(f"{name} must be a numeric array, got dtype {a.dtype}")
        return self._add(name, np.array(a, dtype=dtype, copy=True))

    def zeros(self, name: str, shape, dtype=np.float32) -> DeviceArray:
        """A new array of zeros (as ``cudaMemset``); no traffic is counted."""
        return self._add(name, np.zeros(_shape(shape, name), dtype=dtype))

    def empty(self, name: str, shape, dtype=np.float32) -> DeviceArray:
        """A new array whose values are garbage until a kernel writes them (NaN for floats)."""
        shape = _shape(shape, name)
        fill = np.nan if np.issubdtype(np.dtype(dtype), np.floating) else 0x5A5A5A5A
        return self._add(name, np.full(shape, fill, dtype=dtype))

    def __getitem__(self, name: str) -> DeviceArray:
        if name not in self._arrays:
            raise KeyError(f"no array {name!r} on the device; it holds {', '.join(self._arrays) or 'nothing'}")
        a = self._arrays[name]
        return DeviceArray(name, a.shape, a.dtype)

    def __contains__(self, name) -> bool:
        return name in self._arrays

    def read(self, name: str) -> np.ndarray:
        """A copy of array ``name`` for the host (as ``copy_to_host``); not counted."""
        self[name]
        return self._arrays[name].copy()

    @property
    def names(self) -> list:
        """The arrays' names, in creation order."""
        return list(self._arrays)

    # --- launches ------------------------------------------------------------------------------------------
    def _order(self, blocks):
        if isinstance(self.order, (list, tuple)):
            perm = [tuple(b) + (0,) * (3 - len(b)) if isinstance(b, (tuple, list)) else (int(b), 0, 0)
                    for b in self.order]
            if sorted(perm) != sorted(blocks):
                return blocks
            return perm
        if self.order == "reversed":
            return blocks[::-1]
        if self.order == "shuffled":
            return [blocks[i] for i in self._rng.permutation(len(blocks))]
        return blocks

    def launch(self, kernel, grid, block, *args) -> Launch:
        """Run ``kernel`` over ``grid`` blocks of ``block`` threads, as ``kernel[grid, block](*args)`` would.

        Args:
            kernel: a ``@cuda.jit`` kernel (simulator or GPU dispatcher: its Python source runs) or a plain
                function written against ``cuda``.
            grid, block: int or tuple of 1-3 ints (blocks, threads per block).
            args: :class:`DeviceArray` handles (``dev["Q"]``), numpy arrays (counted under the kernel's parameter
                name and written in place), or scalars.
        Returns:
            the :class:`Launch` record (also in ``launches``); a kernel that raised or ran past the time limit
            has ``error`` set and ran no further block.
        Raises:
            TypeError/ValueError: bad grid, block or arguments (the kernel's own errors are in the record).
        """
        fn = getattr(kernel, "py_func", kernel)
        if not callable(fn):
            raise TypeError(f"kernel must be a @cuda.jit kernel or a function, got {type(kernel).__name__}")
        grid = _dim3(grid, "grid", MAX_BLOCKS)
        block = _dim3(block, "block", self.max_threads)
        params = list(inspect.signature(fn).parameters)
        if len(params) != len(args):
            raise TypeError(f"{fn.__name__} takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
        kargs, roots = [], {}
        for pname, a in zip(params, args):
            if isinstance(a, DeviceArray):
                if a.name not in roots:
                    roots[a.name] = GlobalRoot(a.name, self._arrays[a.name])
                kargs.append(GlobalArray(roots[a.name]))
            elif isinstance(a, np.ndarray):
                if not a.flags.c_contiguous or not a.flags.writeable:
                    raise TypeError(f"argument {pname} must be a writeable C-contiguous array "
                                    "(np.ascontiguousarray makes one)")
                kargs.append(GlobalArray(GlobalRoot(pname, a)))
            elif isinstance(a, (bool, int, float, np.integer, np.floating)):
                kargs.append(a)
            else:
                raise TypeError(f"argument {pname} must be a device array, a numpy array or a number, "
                                f"got {type(a).__name__}")
        rec = Launch(fn.__name__, grid, block, threads=int(np.prod(block)),
                     itemsize={a.name: a.root_itemsize for a in kargs if isinstance(a, GlobalArray)})
        rec.order = self._order(list(np.ndindex(*grid)))
        self._run(fn, kargs, rec)
        for name, n in rec.reads.items():
            self.ledger.read(name, n)
        for name, n in rec.writes.items():
            self.ledger.write(name, n)
        for name, n in rec.atomics.items():
            self.atomics[name] += n
        self.launches.append(rec)
        return rec

    def _run(self, fn, kargs, rec):
        from numba.cuda.simulator.kernel import _push_kernel_context

        ls = _LaunchState(rec.grid)
        budget = self.shared_budget
        start = time.monotonic()
        deadline = start + self.time_limit

        def budget_check(run):
            used = sum(r.nbytes for r in run.shared.values())
            if budget is not None and used > budget and not any(f.kind == "shared" for f in ls.findings):
                listing = ", ".join(f"{r.name} {r.nbytes:,} B" for r in run.shared.values())
                ls.finding("shared", f"block {run.block_idx} allocated {used:,} bytes of shared memory ({listing}), "
                           f"over this lab's budget of {budget:,} bytes", run.block_idx)

        local_budget = self.local_budget

        def local_check(th):
            used = sum(th.local_sites.values())
            if used > rec.local_bytes:
                rec.local_bytes = used
            if local_budget is not None and used > local_budget and not any(f.kind == "local" for f in ls.findings):
                ls.finding("local", f"thread {th.thread_tuple()} of block {th.run_state.block_idx} holds {used:,} "
                           f"bytes in local arrays, over {local_budget:,} bytes per thread: a GPU keeps at most 255 "
                           "registers per thread, and a local array that does not fit lives in local memory, which "
                           "is global memory (traffic this count would miss). Keep tiles in shared memory",
                           th.run_state.block_idx)

        mod = _tracing_module(rec.grid, rec.block, budget_check, local_check)
        reads, writes, atomics, atomic_bytes = (defaultdict(int) for _ in range(4))
        old_stack = threading.stack_size()
        try:
            threading.stack_size(_THREAD_STACK)
            with _push_kernel_context(mod), _swapped_globals(fn, mod):
                for b in rec.order:
                    run = BlockRun(ls, b, rec.block, deadline)
                    threads = [SimThread(fn, kargs, run, b, t) for t in np.ndindex(*rec.block)]
                    for t in threads:
                        t.start()
                    _join(threads, run, deadline)
                    blk = {"reads": {}, "writes": {}, "atomics": {}}
                    for t in threads:
                        for src, dst, key in ((t.reads, reads, "reads"), (t.writes, writes, "writes"),
                                              (t.atomics, atomics, "atomics")):
                            for name, n in src.items():
                                dst[name] += n
                                blk[key][name] = blk[key].get(name, 0) + n
                        for name, n in t.atomic_bytes.items():
                            atomic_bytes[name] += n
                    rec.per_block[b] = blk
                    used = sum(r.nbytes for r in run.shared.values())
                    if used >= rec.shared_bytes:
                        rec.shared_bytes = used
                        rec.shared = {r.name: r.nbytes for r in run.shared.values()}
                    if run.errors:
                        rec.error = _failure(run, fn)
                        break
        finally:
            threading.stack_size(old_stack)
        rec.reads, rec.writes = dict(reads), dict(writes)
        rec.atomics, rec.atomic_bytes = dict(atomics), dict(atomic_bytes)
        rec.races = sorted(ls.races.values(), key=lambda r: (r.line[1], r.other_line[1]))
        rec.findings = list(ls.findings)
        rec.seconds = time.monotonic() - start


def _join(threads, run, deadline):
    """Wait for a block's threads; past the deadline, stop them (a pure-Python loop is interrupted with an
    asynchronous exception)."""
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            break
    if not any(t.is_alive() for t in threads):
        return
    stuck = [t for t in threads if t.is_alive()]
    frames = sys._current_frames()  # noqa: SLF001  (documented CPython API: where a stuck thread is)
    where = next((w for w in (_user_line(frames.get(t.ident)) for t in stuck) if w), None)
    with run.cond:
        run.errors.insert(0, (stuck[0], None, True))
        run.timeout_line = where
        run.abort = True
        run.cond.notify_all()
    for t in stuck:
        if t.is_alive():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(_Abort))
    for t in stuck:
        t.join(5.0)


def _library_dirs():
    import os

    import numba

    return tuple(os.path.dirname(m.__file__) + os.sep for m in (sys.modules[__package__], numba, np, threading)
                 if getattr(m, "__file__", None))


def _is_user_file(name: str) -> bool:
    """Whether a frame's file is the reader's code (not the harness, numba, numpy or the threading module)."""
    return not name.startswith(_library_dirs()) and not name.endswith("threading.py") \
        and "numba_cuda" not in name


def _user_line(frame):
    """``(filename, line)`` of the innermost frame of the reader's code in a running thread's stack."""
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def _kernel_line(exc, fn):
    """The deepest traceback line that is in the reader's code (not in numpy, numba or the harness)."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if _is_user_file(tb.tb_frame.f_code.co_filename):
            line = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return line


def _failure(run, fn) -> KernelFailure:
    th, exc, timeout = next((e for e in run.errors if e[1] is not None or e[2]), run.errors[0])
    block, thread = tuple(th.blockIdx), tuple(th.threadIdx)
    if timeout:
        where = run.timeout_line
        at = f" (it was at {_source_line(where)})" if where else ""
        return KernelTimeout(f"the kernel was stopped at the launch's time limit: block {block} had not "
                             f"finished{at}. A loop that never ends? Check each loop's bound and step.",
                             block=block, thread=thread, line=where)
    line = _kernel_line(exc, fn)
    # the line before the exception's own text, which may end in advice that the line must not seem to belong to
    at = f" at {_source_line(line)}" if line else ""
    return KernelFailure(f"thread {thread} of block {block} raised {type(exc).__name__}{at}: {exc}", cause=exc,
                         block=block, thread=thread, line=line)


def _shape(shape, name):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not 1 <= len(shape) <= 4:
        raise ValueError(f"{name} must have 1 to 4 dimensions, got {shape!r}")
    shape = tuple(positive_int(s, f"{name} shape", minimum=0) for s in shape)
    if int(np.prod(shape)) > 2 ** 26:
        raise ValueError(f"{name} of shape {shape} is too large for the simulator (at most {2 ** 26:,} elements)")
    return shape


def launch(kernel, grid, block, *args, **device_options) -> Launch:
    """Run ``kernel[grid, block](*args)`` once on a fresh :class:`Device` and return its :class:`Launch` record.

    Numpy arrays are passed in place (written back as numba's simulator does) and counted under the kernel's
    parameter names. ``device_options`` go to :class:`Device` (``shared_budget``, ``local_budget``, ``order``,
    ``seed``, ``time_limit``, ``max_threads``).
    Raises: TypeError/ValueError for bad arguments (the kernel's own errors are in ``Launch.error``).
    """
    return Device(**device_options).launch(kernel, grid, block, *args)
