"""Step and time limits of one kernel run: a kernel that loops forever is stopped with a message, not a hang.

A *step* is one call of :func:`labcore.chip.limits.tick`. The chip ticks on every ``load``, ``buffer``, ``store``, ``atomic_add``,
``allocate`` and ``launch``, and :func:`labcore.chip.rebuild` puts a tick at the top of every loop
body and every function body of a rebuilt kernel, so that even ``while True: pass`` ticks. Inside
``with run_limits(steps=..., seconds=...):`` a tick past the step budget, or past the wall-clock deadline (checked
on the same ticks), raises :class:`labcore.chip.KernelLimitError`; outside it, ticks only count.

The step budget is the deterministic limit (the same kernel stops at the same step on any machine); the wall-clock
one is a generous backstop (a loaded machine runs the labs' kernels a hundred times below it). What neither can
stop is one Python operation that never returns to the interpreter loop (``10 ** 10 ** 9`` on Python integers):
grading a class runs each submission in its own process with its own time limit for that.
"""
from __future__ import annotations

import time
import types
from contextlib import contextmanager

from ..checks import positive_float, positive_int

__all__ = ["KernelLimitError", "run_limits", "tick", "steps_taken", "kernel_line", "register_kernel_code", "DEFAULT_STEPS",
           "DEFAULT_SECONDS"]

#: Default step budget of one kernel run (the labs' reference kernels take a few hundred to a few thousand).
DEFAULT_STEPS = 2_000_000
#: Default wall-clock budget of one kernel run, in seconds (the labs' reference runs take milliseconds).
DEFAULT_SECONDS = 120.0


class KernelLimitError(RuntimeError):
    """Raised inside a kernel that ran more steps, or longer, than :func:`labcore.chip.run_limits` allows.

    Attributes: kind (``"steps"`` or ``"seconds"``), limit (the budget), steps (steps taken when it stopped).
    """

    def __init__(self, kind: str, limit, steps: int):
        self.kind, self.limit, self.steps = kind, limit, steps
        if kind == "steps":
            what = f"more than {limit:,} steps (loop iterations, function calls and chip operations)"
        else:
            what = f"longer than {limit:g} s of wall-clock time ({steps:,} steps)"
        super().__init__(f"the kernel was stopped: it ran {what}. Look for a loop whose bound never changes "
                         "(a `while` whose condition stays true, a range that does not advance)")


class _Budget:
    __slots__ = ("steps", "max_steps", "deadline", "seconds")

    def __init__(self):
        self.steps = 0
        self.max_steps = None
        self.deadline = None
        self.seconds = None


_BUDGET = _Budget()


def tick() -> None:
    """Count one step; raise :class:`labcore.chip.KernelLimitError` past the active :func:`labcore.chip.run_limits` budget.

    Wall-clock time is read every 256 steps only (a clock read costs more than a step)."""
    b = _BUDGET
    b.steps += 1
    if b.max_steps is not None:
        if b.steps > b.max_steps:
            raise KernelLimitError("steps", b.max_steps, b.steps)
        if not b.steps & 255 and time.monotonic() > b.deadline:
            raise KernelLimitError("seconds", b.seconds, b.steps)


def steps_taken() -> int:
    """Steps counted since the innermost :func:`labcore.chip.run_limits` began (or since import, outside one)."""
    return _BUDGET.steps


@contextmanager
def run_limits(*, steps: int = DEFAULT_STEPS, seconds: float = DEFAULT_SECONDS):
    """Limit the kernel code run inside the block to ``steps`` ticks and ``seconds`` of wall-clock time.

    Args:
        steps: int >= 1 (default :data:`DEFAULT_STEPS`).
        seconds: float > 0 (default :data:`DEFAULT_SECONDS`).
    Raises:
        TypeError/ValueError: a bad budget. Inside the block, :class:`labcore.chip.KernelLimitError` from :func:`labcore.chip.limits.tick`.
    """
    steps = positive_int(steps, "steps", maximum=10 ** 12)
    seconds = positive_float(seconds, "seconds")
    b = _BUDGET
    saved = (b.steps, b.max_steps, b.deadline, b.seconds)
    b.steps, b.max_steps, b.deadline, b.seconds = 0, steps, time.monotonic() + seconds, seconds
    try:
        yield b
    finally:
        b.steps, b.max_steps, b.deadline, b.seconds = saved


# --- where in the reader's kernel we are (for messages) -------------------------------------------------------

#: Code objects of rebuilt kernels (:mod:`labcore.chip.kernel_source` registers them); a set, not weak references,
#: because code objects take none. Cleared when it grows past a bound (a long notebook session).
_KERNEL_CODE: set = set()
_MAX_KERNEL_CODE = 20_000


def register_kernel_code(code) -> None:
    """Mark ``code`` (and the code objects nested in it) as a rebuilt kernel's, for :func:`kernel_line`.

    Args:
        code: a code object (what ``compile`` returns; a function's is its ``__code__``).
    Raises:
        TypeError: ``code`` is not a code object (a function, a string, None).
    """
    if not isinstance(code, types.CodeType):
        hint = " (pass its __code__)" if isinstance(code, types.FunctionType) else ""
        raise TypeError(f"code must be a code object, as compile() returns{hint}; got {type(code).__name__}")
    if len(_KERNEL_CODE) > _MAX_KERNEL_CODE:
        _KERNEL_CODE.clear()
    stack = [code]
    while stack:
        c = stack.pop()
        _KERNEL_CODE.add(c)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def kernel_line():
    """``(filename, line)`` of the innermost frame of a rebuilt kernel on the stack, or None."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _KERNEL_CODE:
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None
