"""Input validation shared by every labcore module.

Every public function checks its arguments with these helpers, so that bad input fails early with a
message that names the argument, says what was wrong and what is allowed, instead of a NaN or a
traceback from deep inside numpy.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

__all__: list[str] = []

#: The most elements of one array a function builds for its own bookkeeping (2^27 float64 = 1 GiB): a size that
#: needs more is a ValueError before anything is allocated, never a MemoryError or a machine swapping.
MAX_ELEMENTS = 2 ** 27

#: The most items (CTAs, chunks, tiles, requests) a simulation deals one at a time, and the most slots it deals
#: them to: a Python loop of this many steps takes seconds; real grids hold thousands of CTAs, not millions.
MAX_ITEMS = 2 ** 20

#: The largest count :func:`positive_int` takes unless told otherwise: 2^53, the largest integer every float64
#: holds exactly (the models do their arithmetic in floats), and far past any tensor, grid or byte count of a real
#: GPU; past it numpy's int64 would overflow or a count would round.
MAX_COUNT = 2 ** 53

#: The widest attention head any function takes: no kernel runs wider heads (FlashInfer compiles at most 512,
#: FlashMLA's absorbed query is 576 wide; most models use 64 to 256), and it keeps every tile's and CTA's byte count a
#: number a float64 and an int64 hold exactly.
MAX_HEAD_DIM = 1024

#: The two loop orders of the FlashAttention forward: ``"fa1"`` (Dao et al. 2022, Algorithm 1: outer loop
#: over K/V blocks, O normalised at every step) and ``"fa2"`` (Dao 2023, Algorithm 1: outer loop over Q
#: blocks, normalisation deferred to the end). Every function with a ``loop_order`` keyword takes these.
LOOP_ORDERS = ("fa1", "fa2")


def as_matrix(x, name: str, *, allow_empty_rows: bool = False) -> np.ndarray:
    """Return ``x`` as a finite 2-D float64 array, or raise a clear error.

    Raises:
        TypeError: ``x`` is not array-like of real numbers.
        ValueError: ``x`` is not 2-D, has no columns, has no rows (unless allowed), or holds NaN/inf.
    """
    a = as_real(x, name)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, head_dim), got shape {a.shape}")
    if a.shape[1] == 0:
        raise ValueError(f"{name} must have head_dim >= 1 columns, got shape {a.shape}")
    if a.shape[0] == 0 and not allow_empty_rows:
        raise ValueError(f"{name} must have at least one row, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds NaN or inf; attention inputs must be finite")
    return a


def as_real(x, name: str) -> np.ndarray:
    """Return ``x`` (a real number or an array of them, any shape) as float64; strings, bytes, None,
    bools and object arrays are a TypeError (``np.asarray("0", float)`` would quietly accept ``"0"``)."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a real number or an array of them, got {type(x).__name__}")
    try:
        a = np.asarray(x)
    except ValueError as exc:  # ragged nested lists
        raise TypeError(f"{name} must be a real number or an array of them: {exc}") from None
    if a.dtype == object or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    return a.astype(np.float64, copy=False)


def as_vector(x, name: str) -> np.ndarray:
    """Return ``x`` as a finite, non-empty 1-D float64 array, or raise a clear error."""
    a = as_real(x, name)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(np.isnan(a)):
        raise ValueError(f"{name} holds NaN")
    return a


def positive_int(x, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``x`` as an int >= ``minimum`` and <= ``maximum`` (:data:`MAX_COUNT` when not given); bools, floats
    with a fraction and strings are refused (a whole float such as ``128.0`` is taken as the integer it is: a
    slider or a division hands those).

    Raises: TypeError: not an integer. ValueError: below ``minimum`` or above ``maximum``.
    """
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        if isinstance(x, numbers.Real) and not isinstance(x, bool) and float(x).is_integer():
            x = int(x)
        else:
            raise TypeError(f"{name} must be an integer >= {minimum}, got {x!r} ({type(x).__name__})")
    x = int(x)
    if x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x}")
    if maximum is None:
        maximum = MAX_COUNT
    if x > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {x:,}")
    return x


def _no_bools(x, name: str) -> None:
    """Refuse a list or tuple that holds a bool: numpy would read ``[True, 3]`` as ``[1, 3]``."""
    if isinstance(x, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in x):
        raise TypeError(f"{name} must hold integers, not True or False, got {list(x)!r}")


def int_array(x, name: str, *, minimum: int = 1, maximum: int | None = None):
    """Return ``x`` as an int (a scalar, checked as :func:`positive_int`) or an int64 array with every entry
    in ``[minimum, maximum]``; float arrays must hold integral values.

    Raises: TypeError: not integers (strings, object arrays, fractions). ValueError: empty, or out of range.
    """
    if isinstance(x, numbers.Real) and not isinstance(x, np.ndarray):
        return positive_int(x, name, minimum=minimum, maximum=maximum)
    if maximum is None:
        maximum = MAX_COUNT
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be an integer or an integer array, got {type(x).__name__}")
    _no_bools(x, name)
    try:
        a = np.asarray(x)
    except (ValueError, OverflowError) as exc:  # ragged nested lists
        raise TypeError(f"{name} must be an integer or an integer array: {exc}") from None
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise TypeError(f"{name} must be an integer or an integer array, got dtype {a.dtype}")
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.issubdtype(a.dtype, np.floating):
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise TypeError(f"{name} must hold integers")
        if np.any(a > maximum):  # before the cast, which would wrap
            raise ValueError(f"{name} must be at most {maximum:,} everywhere, got max {a.max():,.0f}")
        a = a.astype(np.int64)
    if np.any(a < minimum):
        raise ValueError(f"{name} must be >= {minimum} everywhere, got min {a.min()}")
    if np.any(a > maximum):
        raise ValueError(f"{name} must be at most {maximum:,} everywhere, got max {a.max():,}")
    return a.astype(np.int64)


def positive_float(x, name: str, *, allow_zero: bool = False) -> float:
    """Return ``x`` as a finite float > 0 (or >= 0 with ``allow_zero``), else raise."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r} ({type(x).__name__})")
    try:
        x = float(x)
    except OverflowError:           # an int past the largest float64 (10**400): as infinite as inf
        x = math.inf if x > 0 else -math.inf
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {x}")
    return x


def fraction(x, name: str) -> float:
    """Return ``x`` as a float in (0, 1], else raise."""
    x = positive_float(x, name)
    if x > 1:
        raise ValueError(f"{name} must lie in (0, 1], got {x}")
    return x


def choice(x, name: str, allowed) -> str:
    """Return ``x`` if it is one of ``allowed``, else raise a ValueError listing them (a TypeError when
    ``allowed`` are strings and ``x`` is not one, e.g. a numpy array)."""
    if all(isinstance(a, str) for a in allowed) and not isinstance(x, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, allowed))} (a string); got {x!r} "
                        f"({type(x).__name__})")
    if x not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {x!r}")
    return x


def resolve_scale(scale, d: int) -> float:
    """The softmax scale (flash-attn's ``softmax_scale``): ``1/sqrt(d)`` when ``scale`` is None, else a finite
    positive float (TypeError/ValueError otherwise)."""
    if scale is None:
        return 1.0 / np.sqrt(d)
    return positive_float(scale, "scale")


def check_qkv(Q, K, V, *, q_name: str = "Q"):
    """Validate attention inputs: Q (N_q, d), K (N_k, d), V (N_k, d_v); returns float64 arrays.

    ``q_name`` is the caller's name for the queries, used in error messages.
    """
    Q = as_matrix(Q, q_name)
    K = as_matrix(K, "K")
    V = as_matrix(V, "V")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"{q_name} and K must share the head dimension d: {q_name} is {Q.shape}, K is {K.shape}")
    if K.shape[0] != V.shape[0]:
        raise ValueError(f"K and V must have the same number of rows (keys): K is {K.shape}, V is {V.shape}")
    return Q, K, V


def causal_mask(n_q: int, n_k: int, q_start: int = 0, k_start: int = 0, q_stop=None, k_stop=None) -> np.ndarray:
    """Boolean mask (True = visible) of the causal block [q_start:q_stop, k_start:k_stop].

    Bottom-right alignment (flash-attn >= 2.1): query i sees key j iff j <= i + n_k - n_q.
    """
    q_stop = n_q if q_stop is None else q_stop
    k_stop = n_k if k_stop is None else k_stop
    i = np.arange(q_start, q_stop)[:, None]
    j = np.arange(k_start, k_stop)[None, :]
    return j <= i + (n_k - n_q)


def flag(x, name: str) -> bool:
    """Return ``x`` as a bool if it is ``True`` or ``False`` (Python or numpy); anything else, even a truthy
    string such as ``"False"``, is a TypeError."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    raise TypeError(f"{name} must be True or False, got {x!r} ({type(x).__name__})")


def with_defaults(kw: dict, defaults: dict) -> dict:
    """``defaults`` overridden by ``kw`` (a time model's assumptions), unchecked values.

    Raises: TypeError naming every key of ``kw`` that ``defaults`` does not have, and the known keys.
    """
    unknown = set(kw) - set(defaults)
    if unknown:
        raise TypeError(f"unknown assumption(s) {', '.join(sorted(unknown))}; known: {', '.join(defaults)}")
    return {**defaults, **kw}


#: The checks :func:`resolve_params` applies, by name: each takes ``(value, name)`` and returns the checked value.
PARAM_RULES = {
    "fraction": fraction,                                              # a float in (0, 1]
    "positive": positive_float,                                        # a finite float > 0
    "non-negative": lambda x, name: positive_float(x, name, allow_zero=True),   # a finite float >= 0
    "count": positive_int,                                             # an int >= 1
    "count or zero": lambda x, name: positive_int(x, name, minimum=0),  # an int >= 0
    "count or None": lambda x, name: None if x is None else positive_int(x, name),
    "positive or None": lambda x, name: None if x is None else positive_float(x, name),
    "flag": flag,                                                      # True or False
}


def resolve_params(kw: dict, defaults: dict, rules: dict) -> dict:
    """A time model's assumptions: ``defaults`` overridden by ``kw`` (:func:`with_defaults`), each value checked.

    Args:
        kw: the caller's overrides.
        defaults: ``{name: default}``.
        rules: ``{name: rule}``, a rule being a key of :data:`PARAM_RULES` or a tuple of the allowed values
            (:func:`choice`); names without a rule are passed through unchecked.
    Returns: a new dict with every key of ``defaults``.
    Raises: TypeError for an unknown name or a wrongly typed value; ValueError for a value out of range.
    """
    p = with_defaults(kw, defaults)
    for name, rule in rules.items():
        p[name] = choice(p[name], name, rule) if isinstance(rule, tuple) else PARAM_RULES[rule](p[name], name)
    return p


def at_most(n, name: str, limit: int, what: str = "elements") -> None:
    """Raise a ValueError naming ``name`` when a size ``n`` (an int, or anything ``int()`` takes) exceeds ``limit``.

    Called before an allocation or a loop of ``n`` steps: the message says how many ``what`` the arguments ask for
    and how many are allowed.
    """
    if int(n) > limit:
        raise ValueError(f"{name} asks for {int(n):,} {what}; at most {limit:,} are allowed")


def int_vector(x, name: str, *, minimum: int = 0, maximum: int | None = None) -> np.ndarray:
    """Return ``x`` as a non-empty 1-D int64 array of integers in ``[minimum, maximum]`` (lengths, offsets).

    The array must have an integer dtype: a float array (even of whole numbers), booleans, strings and objects
    are refused, so that 2.5 is never truncated and ``"128"`` never read as a number.

    Raises: TypeError: not an integer array (a string, floats, bools). ValueError: not 1-D, empty, or a value out
    of range.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a 1-D array of integers, got {type(x).__name__}")
    _no_bools(x, name)
    try:
        a = np.asarray(x)
    except ValueError as exc:  # ragged nested lists
        raise TypeError(f"{name} must be a 1-D array of integers: {exc}") from None
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(a < minimum):
        raise ValueError(f"{name} must be >= {minimum} everywhere, got min {a.min()}")
    if maximum is not None and np.any(a > maximum):
        raise ValueError(f"{name} must be at most {maximum:,} everywhere, got max {a.max():,}")
    return a.astype(np.int64)


def int_table(x, name: str, *, ndim: int = 2) -> np.ndarray:
    """Return ``x`` as an int64 array of ``ndim`` dimensions with an integer dtype (a block table, an order); it
    may be empty.

    Raises: TypeError: not integers (floats, even whole, bools, strings). ValueError: another number of dimensions.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be an array of integers, got {type(x).__name__}")
    try:
        a = np.asarray(x)
    except ValueError as exc:
        raise TypeError(f"{name} must be an array of integers: {exc}") from None
    if a.dtype.kind not in "iu" and not (a.size == 0 and a.dtype.kind == "f"):   # [] is float64 to numpy
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    return a.astype(np.int64)


def real_array(x, name: str, *, ndim: int | None = None, allow_empty: bool = False) -> np.ndarray:
    """Return ``x`` as a finite float64 array (of ``ndim`` dimensions when given), or raise a clear error.

    Raises: TypeError: not real numbers (:func:`as_real`). ValueError: another number of dimensions, empty (unless
    allowed), or NaN/inf.
    """
    a = as_real(x, name)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if a.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds NaN or inf")
    return a


def array_list(x, name: str, *, ndim: int = 2) -> list:
    """Return ``x``, a non-empty list or tuple with one array per request, as a list of finite float64 arrays of
    ``ndim`` dimensions (rows may be 0). A string, a dict or a single array is refused, never iterated.

    Raises: TypeError: not a list or tuple, or an entry not real. ValueError: empty, an entry of another number of
    dimensions, or NaN/inf.
    """
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple of arrays (one per request), got {type(x).__name__}")
    if not x:
        raise ValueError(f"{name} must hold at least one array")
    return [real_array(a, f"{name}[{i}]", ndim=ndim, allow_empty=True) for i, a in enumerate(x)]


def choices(x, name: str, allowed) -> tuple:
    """Return ``x``, a non-empty list or tuple of distinct names from ``allowed``, as a tuple; a single string is
    refused (it would be read letter by letter).

    Raises: TypeError: a string or not a list/tuple, or an entry that is not a string. ValueError: empty, an
    unknown name, or a name twice.
    """
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple of names from {', '.join(map(repr, allowed))}; got "
                        f"{x!r} ({type(x).__name__})")
    if not x:
        raise ValueError(f"{name} must name at least one of {', '.join(map(repr, allowed))}")
    out = tuple(choice(v, name, allowed) for v in x)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} names an entry twice: {list(out)}")
    return out


def instance(x, name: str, cls: type):
    """Return ``x`` if it is a ``cls`` (a plan, a ledger), else raise a TypeError naming ``name``."""
    if not isinstance(x, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {type(x).__name__}")
    return x


def real(x, name: str, *, minimum: float | None = None, maximum: float | None = None) -> float:
    """Return ``x`` as a finite float in ``[minimum, maximum]`` (either bound optional); bools, strings and
    NaN/inf are refused.

    Raises: TypeError: not a real number. ValueError: not finite, or out of range.
    """
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r} ({type(x).__name__})")
    x = float(x)
    lo = -np.inf if minimum is None else minimum
    hi = np.inf if maximum is None else maximum
    if not np.isfinite(x) or not lo <= x <= hi:
        raise ValueError(f"{name} must be finite and in [{lo}, {hi}], got {x}")
    return x


def cdiv(a, b):
    """Ceiling division ``ceil(a / b)`` for non-negative integers (or integer arrays), exact in integer
    arithmetic: the number of blocks of size ``b`` that cover ``a`` items (Triton's ``cdiv``).

    Args: a: int or integer array >= 0. b: int or integer array >= 1. No checks: callers validate.
    """
    return -(-a // b)


def key_count(N: int, N_k) -> int:
    """The number of keys: ``N_k`` when given (checked as an int >= 1), else ``N`` (self-attention).

    Raises: TypeError/ValueError as :func:`positive_int` for a bad ``N_k``.
    """
    return N if N_k is None else positive_int(N_k, "N_k")


def lookup(registry: dict, aliases: dict, name, kind: str, cls: type, *, noun: str | None = None):
    """One preset from ``registry`` by name: an instance of ``cls`` is returned unchanged; a string
    matches a key case-insensitively, then a key of ``aliases`` (lower-case alias -> registry key).

    Args:
        registry: ``{name: preset}`` (e.g. :data:`labcore.GPUS`).
        aliases: ``{alias: registry key}``.
        name: a preset name, an alias, or a ``cls`` instance.
        kind: the argument's name in messages (``"gpu"``, ``"model"``).
        cls: the preset class.
        noun: what a preset is called in the unknown-name message (``"GPU"``; default ``kind``).
    Raises:
        TypeError: ``name`` is neither a string nor a ``cls``.
        ValueError: unknown name; the message lists the presets and the aliases.
    """
    if isinstance(name, cls):
        return name
    if not isinstance(name, str):
        raise TypeError(f"{kind} must be a preset name or a {cls.__name__}, got {type(name).__name__}")
    key = name.lower()
    for k in registry:
        if k.lower() == key:
            return registry[k]
    if key in aliases:
        return registry[aliases[key]]
    raise ValueError(f"unknown {noun or kind} {name!r}; known presets: {', '.join(registry)} "
                     f"(aliases: {', '.join(aliases)})")
