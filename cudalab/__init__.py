"""cudalab: the CUDA labs' harness. A reader's ``@cuda.jit`` kernel runs in numba-cuda's simulator, and the
harness counts what it does to memory.

What a launch measures (:class:`Device`, :func:`launch`):

- every global-memory element read and written, per array and per block, in the book's counting convention
  (an element counts each time a thread reads or writes it), so the totals compare with ``labcore.hbm``'s closed
  forms and Theorem 2;
- atomic operations on global memory, counted apart from plain reads and writes (operations and bytes);
- shared memory per block (the ``cuda.shared.array`` allocations, in bytes) and threads per block;
- races on shared memory: a read of an element that another thread of the block wrote since the last
  ``cuda.syncthreads()`` (read after write), a write of an element another thread read or wrote since then (write
  after read, write after write), each named with its array and the two lines, as compute-sanitizer's racecheck
  reports them; because the check compares accesses between barriers, not the order the threads happened to run
  in, a missing barrier is found on every run;
- barriers that not every thread of the block reaches, reads of shared memory that no thread wrote, and
  out-of-bounds global accesses.

Without a GPU the kernels run in numba-cuda's simulator: importing :mod:`cudalab` sets ``NUMBA_ENABLE_CUDASIM=1``
when no NVIDIA driver is present and numba has not been imported yet (``FLASHBOOK_CUDA=sim`` or ``=gpu`` forces
the choice). On a GPU the same source compiles for real; the harness still counts traffic by running the kernel's
Python source through the simulator's kernel API, and :func:`cudalab.gpu.time_on_gpu` measures it with CUDA
events.

The engine (``labcore``) never imports numba; this package may import ``labcore`` (the reference, the closed
forms, the time models).
"""
from __future__ import annotations

import os
import shutil
import sys

__all__ = ["simulator", "gpu_present", "Device", "DeviceArray", "Launch", "Race", "Finding", "KernelFailure",
           "KernelTimeout", "launch"]


def gpu_present() -> bool:
    """Whether an NVIDIA GPU can run kernels here, decided without importing numba.

    ``FLASHBOOK_CUDA=gpu`` or ``=sim`` in the environment decides; otherwise an NVIDIA driver is looked for
    (``/proc/driver/nvidia/version`` on Linux, ``nvidia-smi`` on the PATH).
    """
    forced = os.environ.get("FLASHBOOK_CUDA", "").strip().lower()
    if forced in ("gpu", "sim"):
        return forced == "gpu"
    return os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None


# numba reads NUMBA_ENABLE_CUDASIM once, when numba.cuda is first imported: decide before that happens.
if "numba.cuda" not in sys.modules and "NUMBA_ENABLE_CUDASIM" not in os.environ:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0" if gpu_present() else "1"


def simulator() -> bool:
    """True when ``numba.cuda`` is numba-cuda's simulator (no GPU), False when it drives a real GPU."""
    from numba.cuda.core import config

    return bool(config.ENABLE_CUDASIM)


from .sim import Device, DeviceArray, Finding, KernelFailure, KernelTimeout, Launch, Race, launch  # noqa: E402
