"""The GPU face of the harness: the same host program and kernels, run for real on an NVIDIA GPU and timed with
CUDA events.

:class:`GpuDevice` has the interface of :class:`cudalab.Device` (``upload``, ``zeros``, ``empty``, ``[name]``,
``launch``, ``read``), backed by numba's device arrays, so a lab's host program runs unchanged on either. Every
launch runs once for the results; :meth:`GpuDevice.time` then replays each launch (warm-up runs, then the median of
``repeats`` timed runs, each between two CUDA events) and reports seconds per launch. What a time includes: the
kernel's execution on the GPU between the two events, not the host's launch call, not copies between host and
device. A launch from Python takes the host tens of microseconds, longer than a lab-sized kernel runs, so events
recorded around it would time the host: each timed run is therefore queued behind a short kernel that keeps the GPU
busy (a chain of dependent multiply-adds, a few hundred microseconds) while the host queues the first event, the
kernel and the second event, which then run back to back.

Only usable when numba drives a real GPU (``cudalab.simulator()`` is False); without one, :func:`time_program`
raises a RuntimeError that says so.
Source: numba-cuda's event API (``cuda.event``, ``event.record``, ``cuda.event_elapsed_time``, in milliseconds).
"""
from __future__ import annotations

from functools import cache

import numpy as np

from . import simulator
from .sim import DeviceArray, _dim3, _shape

__all__ = ["GpuDevice", "time_program"]


class GpuDevice:
    """Global memory on a real GPU, with :class:`cudalab.Device`'s interface; launches are recorded for timing.

    Args:
        max_threads: threads per block allowed (as :class:`cudalab.Device`).
    Raises:
        RuntimeError: numba is in simulator mode (no GPU).
    """

    def __init__(self, *, max_threads: int = 1024):
        if simulator():
            raise RuntimeError("numba-cuda is running its simulator (no GPU here): GpuDevice needs an NVIDIA GPU")
        from numba import cuda

        self.cuda = cuda
        self._arrays = {}
        self.max_threads = max_threads
        self.recorded = []

    def _add(self, name, host):
        if name in self._arrays:
            raise ValueError(f"the device already holds an array named {name!r}")
        self._arrays[name] = self.cuda.to_device(host)
        return self[name]

    def upload(self, name, array, dtype=np.float32) -> DeviceArray:
        return self._add(name, np.ascontiguousarray(np.asarray(array, dtype=dtype)))

    def zeros(self, name, shape, dtype=np.float32) -> DeviceArray:
        return self._add(name, np.zeros(_shape(shape, name), dtype=dtype))

    def empty(self, name, shape, dtype=np.float32) -> DeviceArray:
        return self._add(name, np.full(_shape(shape, name), np.nan, dtype=dtype))

    def __getitem__(self, name) -> DeviceArray:
        a = self._arrays[name]
        return DeviceArray(name, tuple(a.shape), np.dtype(a.dtype))

    def __contains__(self, name) -> bool:
        return name in self._arrays

    def read(self, name) -> np.ndarray:
        return self._arrays[name].copy_to_host()

    def launch(self, kernel, grid, block, *args):
        grid, block = _dim3(grid, "grid", 2 ** 31 - 1), _dim3(block, "block", self.max_threads)
        real = [self._arrays[a.name] if isinstance(a, DeviceArray) else a for a in args]
        kernel[grid, block](*real)
        self.cuda.synchronize()
        self.recorded.append((kernel, grid, block, real))

    def time(self, *, repeats: int = 20, warmup: int = 3) -> list:
        """Seconds of each recorded launch: the median of ``repeats`` runs between CUDA events, each queued behind
        the hold kernel (see the module's docstring), after ``warmup`` untimed runs. Replays overwrite the outputs
        (an atomic kernel adds again): read results before."""
        hold, hold_buf = _hold_kernel(self.cuda), self.cuda.to_device(np.ones(1, dtype=np.float32))
        out = []
        for kernel, grid, block, args in self.recorded:
            for _ in range(warmup):
                kernel[grid, block](*args)
            times = []
            for _ in range(repeats):
                start, stop = self.cuda.event(), self.cuda.event()
                hold[1, 1](hold_buf, HOLD_STEPS)
                start.record()
                kernel[grid, block](*args)
                stop.record()
                stop.synchronize()
                times.append(self.cuda.event_elapsed_time(start, stop) * 1e-3)
            out.append(float(np.median(times)))
        return out


#: Dependent multiply-adds of the hold kernel: about 4 cycles each, so a few hundred microseconds at 2 GHz, longer
#: than the host takes to queue an event, a launch and an event.
HOLD_STEPS = 200_000


@cache
def _hold_kernel(cuda):
    """A one-thread kernel that keeps the GPU busy for ``steps`` dependent multiply-adds (compiled once)."""
    @cuda.jit
    def hold(buf, steps):
        x = buf[0]
        for _ in range(steps):
            x = x * 0.9999999 + 1e-7
        buf[0] = x

    return hold


def time_program(lab, kernels, shape_index: int, *, seed: int, params: dict, repeats: int = 20) -> dict:
    """Run a CUDA lab's host program on the GPU for one shape and time its launches.

    Args:
        lab: a :class:`flashbook`-style lab item with ``inputs``, ``program`` and ``shapes`` (duck-typed).
        kernels: the kernels (real ``@cuda.jit`` dispatchers).
        shape_index: which of ``lab.shapes``; seed: the inputs' seed; params: the launch parameters.
        repeats: timed runs per launch (median).
    Returns:
        ``{"seconds": total, "launches": [seconds, ...], "repeats": repeats, "device": name}``.
    Raises:
        RuntimeError: no GPU (numba is in simulator mode).
    """
    dev = GpuDevice(max_threads=getattr(lab, "max_threads", 1024))
    spec = lab.shapes[shape_index]
    for name, value in lab.inputs(np.random.default_rng([seed, shape_index]), spec).items():
        dev.upload(name, value)
    lab.program(dev, list(kernels), spec, params)
    per = dev.time(repeats=repeats)
    name = dev.cuda.get_current_device().name
    return {"seconds": float(sum(per)), "launches": per, "repeats": repeats,
            "device": name.decode() if isinstance(name, bytes) else str(name)}
