"""The CUDA labs' kernels are checked and rebuilt from their source, as the chip labs' are.

:data:`CUDA_PROFILE` is a :class:`labcore.chip.kernel_source.Profile` for ``@cuda.jit`` kernels and device
functions: the subset of Python that numba-cuda compiles for a GPU, restricted to what its simulator runs. A kernel
may use ``cuda`` (thread and block indices and sizes, ``cuda.grid``, shared and local arrays, ``syncthreads`` and
its reductions, fences, atomics), ``math`` (the functions numba-cuda maps to the device's), the numba types
``float32``, ``float64``, ``int32``, ``int64``, numbers, strings and tuples of them, the functions the reader wrote,
and the builtins ``range``, ``len``, ``min``, ``max``, ``abs``, ``int``, ``float``, ``bool``, ``round`` and
``print``; on an array only ``.shape``, ``.size`` and ``.ndim``. No list, dict or set (numba-cuda has none in a
kernel), no import, no attribute that starts with ``_``, no ``getattr``, ``globals`` or frames.

Two reasons for one rule. A kernel that uses anything else would not compile for a GPU, so the reader learns it on a
laptop, not on the GPU runtime. And the simulator runs the kernel's Python in the grader's process: the only objects
the rebuilt kernel can reach are its arguments (the harness's arrays, which expose elements and a shape) and the
names above, never the inputs behind them, the counters or the grader. Functions rebuilt from a notebook come back
decorated as they were (``cuda.jit`` or ``cuda.jit(device=True)``), so on a GPU the checked source is what compiles.

Source: numba-cuda's documentation of the supported Python in CUDA kernels (``numba.cuda`` kernel API, "Supported
Python features in CUDA Python") and of its simulator's kernel API (``numba/cuda/simulator/kernelapi.py``).
"""
from __future__ import annotations

import ast
import types

import cudalab  # noqa: F401  (the simulator is chosen before numba is imported)
import math

from labcore.chip.kernel_source import KernelSourceError, Profile, rebuild, rebuild_from_text

__all__ = ["CUDA_PROFILE", "CUDA_PATHS", "MATH_PATHS", "rebuild_kernel", "kernels_from_text", "is_device_function"]

#: What a kernel may use of ``cuda``: dotted paths under it.
CUDA_PATHS = frozenset(
    [f"{a}.{c}" for a in ("threadIdx", "blockIdx", "blockDim", "gridDim") for c in "xyz"]
    + ["threadIdx", "blockIdx", "blockDim", "gridDim", "grid", "gridsize", "syncthreads",
       "syncthreads_count", "syncthreads_and", "syncthreads_or", "threadfence", "threadfence_block",
       "threadfence_system", "shared.array", "local.array", "const.array_like", "laneid", "warpsize", "fma", "selp",
       "float32", "float64", "int32", "int64"]
    + [f"atomic.{op}" for op in ("add", "sub", "max", "min", "exch", "cas", "inc", "dec", "and_", "or_", "xor",
                                 "nanmax", "nanmin", "compare_and_swap")])

#: What a kernel may use of ``math``.
MATH_PATHS = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "fabs", "tanh", "sinh", "cosh", "sin", "cos",
    "tan", "atan", "atan2", "pow", "hypot", "copysign", "fmod", "floor", "ceil", "trunc", "isinf", "isnan",
    "isfinite", "erf", "inf", "nan", "pi", "e"})

#: Attributes allowed on any other value: an array's shape, size and dimensions; a Dim3's x, y, z.
VALUE_ATTRIBUTES = frozenset({"shape", "size", "ndim", "x", "y", "z"})

#: Builtins a kernel may call.
BUILTINS = frozenset({"range", "len", "min", "max", "abs", "int", "float", "bool", "round", "print"})


def is_device_function(obj) -> bool:
    """Whether ``obj`` is a ``@cuda.jit(device=True)`` function (in the simulator or on a GPU)."""
    return bool(getattr(obj, "_device", False) or getattr(obj, "targetoptions", {}).get("device", False))


def _unwrap(obj):
    py = getattr(obj, "py_func", None)
    if isinstance(py, types.FunctionType):
        return py
    return obj if isinstance(obj, types.FunctionType) else None


def _rewrap(fn, original):
    # A function rebuilt from an object keeps its kind: a kernel stays a kernel, a device function or a plain helper
    # becomes a device function (on a GPU a kernel can call nothing else). From a file's text there is no object:
    # the wanted kernels come back with ``original`` the rebuilt function itself, their helpers with None.
    from numba import cuda

    if original is fn:
        return cuda.jit(fn)
    if original is not None and getattr(original, "py_func", None) is not None and not is_device_function(original):
        return cuda.jit(fn)
    return cuda.jit(device=True)(fn)


#: The messages of refused nodes, in a CUDA kernel's terms (the defaults speak of the chip labs' SRAM and tiles).
_TRY = ("try/except is not allowed in a kernel (numba-cuda compiles none): an error (an index past an array's end, "
        "the time limit) must reach the grader")
_NODE_ADVICE = {ast.Try: _TRY,
                ast.Global: "global is not allowed: a kernel keeps its state in its own variables and in the arrays "
                            "it is given"}
if hasattr(ast, "TryStar"):
    _NODE_ADVICE[ast.TryStar] = _TRY


def _profile():
    from numba import cuda, float32, float64, int32, int64

    return Profile(
        name="cuda", modules={"cuda": (cuda, CUDA_PATHS), "math": (math, MATH_PATHS),
                              "float32": (float32, frozenset()), "float64": (float64, frozenset()),
                              "int32": (int32, frozenset()), "int64": (int64, frozenset())},
        builtins=BUILTINS, value_attributes=VALUE_ATTRIBUTES, tuples_anywhere=True, unwrap=_unwrap,
        rewrap=_rewrap, private_advice="index the arrays you were given (A[i, k]) and use cuda's API",
        node_advice=_NODE_ADVICE,
        state_advice="a kernel changes the arrays it is given by indexing them (A[i, k] = v), never an object's "
                     "attributes",
        container_advice="numba-cuda compiles none; keep values in local or shared arrays "
                         "(cuda.local.array, cuda.shared.array) and loop with for ... in range(...)",
        functions_as_arguments=False,
        lambda_advice="a lambda is not allowed in a CUDA kernel (no call it may make takes a function): write the "
                      "function with def (a helper you write becomes a device function the kernel calls)",
        function_argument_advice="numba-cuda compiles no call that takes a function (no key=, no callbacks); call "
                                 "the function where its value is needed",
        call_examples="math.exp, cuda.syncthreads",
        advice="a CUDA kernel may use numbers, strings and tuples of them, the kernels and device functions you "
               "wrote, cuda (indices, shared and local arrays, syncthreads, atomics), math, float32, float64, "
               "int32, int64 and the builtins range, len, min, max, abs, int, float, bool, round and print")


#: The CUDA labs' profile (see the module docstring).
CUDA_PROFILE = _profile()


def rebuild_kernel(kernel):
    """``kernel`` (a ``@cuda.jit`` kernel written in a notebook cell or a file) checked and rebuilt from its source.

    Returns:
        a new ``@cuda.jit`` kernel made from the checked source alone (its device functions rebuilt too).
    Raises:
        KernelSourceError: every finding (a name or an attribute a kernel may not use, no source, recursion...).
    """
    return rebuild(kernel, CUDA_PROFILE)


def kernels_from_text(text: str, names, *, filename: str = "<submission>") -> dict:
    """The kernels ``names`` taken from a file's text (``.py`` or a notebook's JSON) and rebuilt, running none of the
    file's other code; each comes back as a ``@cuda.jit`` kernel, and the helpers it calls as
    ``@cuda.jit(device=True)`` functions in its namespace (so the same kernels compile for a GPU).

    Raises:
        TypeError: bad arguments. KernelSourceError: a missing kernel, and every finding of the checks.
    """
    return rebuild_from_text(text, names, CUDA_PROFILE, filename=filename)     # _rewrap makes each a kernel


__all__ += ["KernelSourceError"]
