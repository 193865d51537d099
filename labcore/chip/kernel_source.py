"""A reader's kernel is checked and rebuilt from its source, never run as given.

The grader of a lab runs code it did not write in its own process. What keeps that code from reaching the inputs, the
HBM contents, the counters or the grader itself is not the objects it is handed (a determined reader can walk from
any Python object to any other: ``x.__class__.__mro__``, ``gc``, stack frames) but the *source* it is allowed to
have. :func:`rebuild` reads a function's source (``inspect.getsource``, which works for functions defined in notebook
cells), parses it, checks every node against a :class:`Profile`, resolves the function's free names, and executes
the checked source in a fresh namespace that holds only what the profile allows; the function it returns is made
from that source alone. :func:`rebuild_from_text` does the same from a file's text (a ``.py`` file or the code
cells of a notebook) without running any of the file's other code.

The checks, for every profile:

- no name and no attribute that starts with ``_`` (``__class__``, ``__globals__``, a private ``_data``...);
- attributes only from allow-lists: on a module the profile names (``np.exp``, ``math.sqrt``), the dotted paths it
  lists; on any other expression, the profile's ``value_attributes`` (``.T``, ``.shape``, ``.sum``,
  ``cta.load``...); no attribute is ever set or deleted; ``str.format`` is never allowed;
- no ``import``, ``global``, ``nonlocal``, ``class``, ``try``, ``yield``, ``await``, ``async``, ``match``,
  starred arguments, ``*args``/``**kwargs`` parameters, ``**`` in a call, decorators on inner functions, or a
  ``lambda`` anywhere but as a call's argument;
- builtins only from the profile's list, and never ``exec``, ``eval``, ``compile``, ``getattr``, ``setattr``,
  ``delattr``, ``vars``, ``globals``, ``locals``, ``type``, ``open``, ``__import__``, ``breakpoint``, ``super``,
  ``object``, ``memoryview``, ``dir``, ``id``, ``input`` ...;
- per profile: list, dict and set displays and comprehensions (the chip's profile has none: a kernel keeps arrays on
  chip, not in Python containers), tuples only as call arguments, subscripts, assignment targets, ``for``
  iterables, ``return`` values and flat tuples assigned to a name (``rows = (r0, r1)``), f-strings only as
  arguments of ``print``. These are a second line: a tuple or a list could only hold numbers, strings and tiles,
  and a tile carries its sources wherever it goes (:mod:`labcore.chip.tile`), while a number cannot be taken out
  of a tile.

Free names (those a function reads but does not assign) are resolved where the function was defined: numbers,
bools, None, strings and tuples of those are copied by value; functions are rebuilt recursively with the same
profile (the helpers a reader writes), and recursion is refused; a module is allowed only if the profile names it,
and is then bound to the profile's object (``np`` to the chip's numpy facade, :data:`labcore.chip.facade.NP`);
anything else is refused, with a message naming the name and its line. A function that refers to itself, or to a
helper that refers back to it, is refused (kernels do not recurse).

Every finding is collected; they are raised together as :class:`KernelSourceError` (a TypeError) with
``.findings``: each a :class:`Finding` (the line in the reader's cell or file, the column, what is not allowed
and what to do instead). A profile with a ``tick`` also gets a call of it at the top of every loop body and every
function body of the rebuilt code, so that a step limit (:mod:`labcore.chip.limits`) stops a loop that never ends.

:data:`CHIP_PROFILE` is the profile of the chip labs' kernels and programs; :data:`HOST_PROFILE` that of host code
that chooses launch parameters (lab 5's ``choose_splits``: numbers and the decode time model, no chip). A profile
for other kernels (CUDA device functions, say) supplies its own modules, builtins, attributes and an
``unwrap``/``rewrap`` pair for its decorated functions. Only the standard library's ``ast``, ``inspect`` and
``symtable`` are used.

What the checks do not stop: a kernel may still branch on its data (``if x > 0``), so a value can leave a tile one
bit per branch, and one Python operation that never returns (``10 ** 10 ** 9``) is beyond the step limit. Grading a
class runs each submission in its own process, with a time and a memory limit, for those.
"""
from __future__ import annotations

import ast
import builtins as _builtins_module
import inspect
import json
import linecache
import numbers
import symtable
import textwrap
import types
from dataclasses import dataclass, field

import numpy as np

from .facade import MATH, MATH_NAMES, NP, NP_NAMES, Facade, checked_builtins
from .limits import register_kernel_code, tick

__all__ = ["Profile", "Finding", "KernelSourceError", "rebuild", "rebuild_from_text", "code_cells", "plain_function",
           "same_function", "CHIP_PROFILE", "HOST_PROFILE", "FORBIDDEN_BUILTINS", "DEFAULT_FORBIDDEN_NODES"]

#: Builtins no profile may allow: each reaches past the source (attributes by name, other namespaces, new code).
FORBIDDEN_BUILTINS = frozenset({
    "exec", "eval", "compile", "getattr", "setattr", "delattr", "hasattr", "vars", "globals", "locals", "type",
    "open", "__import__", "breakpoint", "super", "object", "memoryview", "dir", "id", "input", "help", "exit",
    "quit", "classmethod", "staticmethod", "property", "issubclass", "callable", "format", "repr", "ascii",
    "bytearray", "bytes", "iter", "next", "aiter", "anext", "copyright", "credits", "license"})

#: Attribute names no profile may allow (besides every name that starts with ``_``).
FORBIDDEN_ATTRIBUTES = frozenset({"format", "format_map"})

#: Node types every profile refuses by default, with what to do instead.
_NODE_ADVICE = {
    ast.Import: "import is not allowed in a kernel: the grader gives a kernel the modules it may use",
    ast.ImportFrom: "import is not allowed in a kernel: the grader gives a kernel the modules it may use",
    ast.Global: "global is not allowed: a kernel keeps its state in its own variables, buffers and HBM",
    ast.Nonlocal: "nonlocal is not allowed: pass values as arguments and return them",
    ast.ClassDef: "a class is not allowed in a kernel: write functions",
    ast.AsyncFunctionDef: "async functions are not allowed in a kernel",
    ast.Await: "await is not allowed in a kernel",
    ast.AsyncFor: "async for is not allowed in a kernel",
    ast.AsyncWith: "async with is not allowed in a kernel",
    ast.Yield: "yield is not allowed: a kernel is a function that returns, not a generator",
    ast.YieldFrom: "yield is not allowed: a kernel is a function that returns, not a generator",
    ast.Try: "try/except is not allowed in a kernel: an error (SRAM capacity, a released tile, the step limit) "
             "must reach the grader",
    ast.Starred: "*-unpacking is not allowed: name each argument",
    ast.Match: "match is not allowed in a kernel: use if/elif",
}
if hasattr(ast, "TryStar"):
    _NODE_ADVICE[ast.TryStar] = _NODE_ADVICE[ast.Try]

#: The node types refused unless a profile says otherwise.
DEFAULT_FORBIDDEN_NODES = tuple(_NODE_ADVICE)

_CONTAINERS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)

_TICK = "_kernel_tick"


@dataclass(frozen=True)
class Finding:
    """One thing a kernel's source may not do.

    Attributes:
        line (int): line in the reader's cell or file (1-based; 0 when it concerns the whole function).
        col (int): column (0-based).
        message (str): what is not allowed and what to do instead.
        function (str): the function it was found in.
        cell (int or None): the notebook cell (0-based index among all cells), when the source came from one.
    Raises:
        TypeError/ValueError: a line, col or cell that is not an int >= 0, a message or function not a string.
    """

    line: int
    col: int
    message: str
    function: str = ""
    cell: int | None = None

    def __post_init__(self):
        for attr in ("line", "col", "cell"):
            v = getattr(self, attr)
            if v is None and attr == "cell":
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{attr} of a Finding must be an int, got {v!r} ({type(v).__name__})")
            if v < 0:
                raise ValueError(f"{attr} of a Finding must be >= 0, got {v}")
        for attr in ("message", "function"):
            if not isinstance(getattr(self, attr), str):
                raise TypeError(f"{attr} of a Finding must be a string, got {getattr(self, attr)!r}")

    def __str__(self) -> str:
        where = [f"cell {self.cell + 1}"] if self.cell is not None else []
        if self.line:
            where.append(f"line {self.line}")
        if self.function:
            where.append(f"in {self.function}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class KernelSourceError(TypeError):
    """Raised when a kernel's source breaks the profile's rules; ``.findings`` lists every :class:`Finding` (one per
    place and message)."""

    def __init__(self, findings, what: str = "kernel"):
        if not isinstance(findings, (list, tuple)) or not all(isinstance(f, Finding) for f in findings):
            raise TypeError(f"findings must be a list of Finding, got {type(findings).__name__}")
        if not isinstance(what, str):
            raise TypeError(f"what must be a string, got {what!r}")
        # one finding per place and message: two lambdas on one line read as one line to fix, not two
        unique = {}
        for f in findings:
            unique.setdefault((f.cell, f.line, f.function, f.message), f)
        self.findings = list(unique.values())
        lines = "\n".join(f"  {f}" for f in self.findings)
        super().__init__(f"the source of {what} uses what a kernel may not ({len(self.findings)} finding"
                         f"{'s' if len(self.findings) != 1 else ''}):\n{lines}")


def plain_function(obj):
    """The default ``unwrap``: ``obj`` if it is a function written with ``def``, else None."""
    return obj if isinstance(obj, types.FunctionType) else None


def same_function(fn, original):
    """The default ``rewrap``: the rebuilt function as it is."""
    return fn


@dataclass(frozen=True)
class Profile:
    """What a kernel's source may use.

    Attributes:
        name: the profile's name (str), for messages.
        modules: ``{global name: (object bound in the kernel's namespace, frozenset of allowed dotted attribute
            paths such as "exp", "float64", "linalg.norm")}``.
        builtins: allowed builtins, a frozenset of names (bound to Python's) or ``{name: object}`` (a checked
            version); never one of :data:`FORBIDDEN_BUILTINS`.
        value_attributes: attribute names allowed on any other expression (``"T"``, ``"shape"``, ``"load"``...).
        forbidden_nodes: AST node types refused (default :data:`DEFAULT_FORBIDDEN_NODES`).
        allowed_nodes: if not None, every node must be an instance of one of these types.
        containers: whether list, dict and set displays and comprehensions are allowed.
        tuples_anywhere: whether a tuple display may appear anywhere (otherwise only as a call's argument, a
            subscript, an assignment or ``for`` target, a ``for`` iterable or a ``return`` value).
        fstrings_anywhere: whether f-strings may appear anywhere (otherwise only as arguments of ``print``).
        tick: a function of no arguments called at the top of every loop body and function body (None: none).
        unwrap: ``obj -> python function or None``: the function to rebuild from a decorated helper (None:
            :func:`labcore.chip.kernel_source.plain_function`).
        rewrap: ``(rebuilt function, original object) -> object``: what the kernel's namespace gets for it (None:
            :func:`labcore.chip.kernel_source.same_function`). From a file's text there is no original object: the
            wanted functions are rewrapped with the rebuilt function itself as ``original``, their helpers with None.
        advice: a sentence added to messages about names (what the profile offers).
        private_advice: what to use instead of a private name (for messages).
        node_advice: ``{AST node type: message}`` replacing the default message of a refused node (``try``,
            ``global``...) with one in the profile's own terms (default: none replaced).
        state_advice: how a kernel changes state instead of setting an attribute (for messages).
        container_advice: where a kernel keeps values instead of a list, dict or set (for messages).
        functions_as_arguments: whether a function may be a call's argument (``key=lambda s: ...``, ``key=f``: the
            chip labs' min and max take one); False refuses every lambda and every function passed to a call (no
            call a CUDA kernel may make takes a function).
        lambda_advice: the message for a lambda where it is not allowed.
        function_argument_advice: the message for a function passed to a call, where that is not allowed.
        call_examples: calls through the profile's modules, as examples in messages (``"np.exp, math.sqrt"``).
            The defaults of these five fields are the chip labs' wording.
    Raises:
        TypeError/ValueError: malformed fields, or a builtin of :data:`FORBIDDEN_BUILTINS` allowed.
    """

    name: str
    modules: dict
    builtins: object
    value_attributes: frozenset
    forbidden_nodes: tuple = DEFAULT_FORBIDDEN_NODES
    allowed_nodes: tuple | None = None
    containers: bool = False
    tuples_anywhere: bool = False
    fstrings_anywhere: bool = False
    tick: object = None
    unwrap: object = None
    rewrap: object = None
    advice: str = ""
    private_advice: str = "use the chip's API (cta.load, cta.store, ...)"
    node_advice: dict = field(default_factory=dict)
    state_advice: str = "a kernel changes arrays and HBM through the chip's API, never an object's attributes"
    container_advice: str = "keep values in tiles and buffers (cta.buffer, np.zeros) and loop with for ... in range(...)"
    functions_as_arguments: bool = True
    lambda_advice: str = "a lambda is allowed only as a call's argument (key=lambda s: ...): write a def"
    function_argument_advice: str = "a function is not allowed as a call's argument here: call it instead"
    call_examples: str = "np.exp, math.sqrt"
    _builtins: dict = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {self.name!r}")
        if not isinstance(self.modules, dict):
            raise TypeError("modules must be a dict {global name: (object, frozenset of paths)}")
        for k, v in self.modules.items():
            if not (isinstance(k, str) and k.isidentifier() and not k.startswith("_") and isinstance(v, tuple)
                    and len(v) == 2 and isinstance(v[1], (set, frozenset))):
                raise TypeError(f"modules[{k!r}] must be (object, frozenset of dotted paths)")
        b = self.builtins
        if isinstance(b, (set, frozenset)):
            for n in b:
                if not isinstance(n, str):
                    raise TypeError(f"builtins must hold names (strings), got {n!r}")
                if not n.isidentifier() or not hasattr(_builtins_module, n):
                    raise ValueError(f"builtins names {n!r}, which is not one of Python's builtins")
            b = {n: getattr(_builtins_module, n) for n in b}
        if not isinstance(b, dict):
            raise TypeError("builtins must be a frozenset of names or a dict {name: object}")
        for n in b:
            if not (isinstance(n, str) and n.isidentifier()):
                raise TypeError(f"builtins must be keyed by names (identifier strings), got {n!r}")
        bad = sorted(set(b) & FORBIDDEN_BUILTINS)
        if bad:
            raise ValueError(f"builtins may not include {', '.join(bad)}")
        object.__setattr__(self, "_builtins", dict(b))
        if self.unwrap is None:
            object.__setattr__(self, "unwrap", plain_function)
        if self.rewrap is None:
            object.__setattr__(self, "rewrap", same_function)
        if not isinstance(self.value_attributes, (set, frozenset)) \
                or not all(isinstance(a, str) for a in self.value_attributes):
            raise TypeError(f"value_attributes must be a frozenset of names (strings), got {self.value_attributes!r}")
        for attr in ("forbidden_nodes", "allowed_nodes"):
            v = getattr(self, attr)
            if v is None and attr == "allowed_nodes":
                continue
            if not isinstance(v, tuple) or not all(isinstance(t, type) and issubclass(t, ast.AST) for t in v):
                raise TypeError(f"{attr} must be a tuple of AST node types (ast.Try, ...)"
                                f"{' or None' if attr == 'allowed_nodes' else ''}, got {v!r}")
        if not callable(self.unwrap) or not callable(self.rewrap):
            raise TypeError("unwrap and rewrap must be functions")
        for attr in ("containers", "tuples_anywhere", "fstrings_anywhere", "functions_as_arguments"):
            if not isinstance(getattr(self, attr), bool):
                raise TypeError(f"{attr} must be True or False, got {getattr(self, attr)!r}")
        if self.tick is not None and not callable(self.tick):
            raise TypeError("tick must be a function or None")
        for attr in ("advice", "private_advice", "state_advice", "container_advice", "lambda_advice",
                     "function_argument_advice", "call_examples"):
            if not isinstance(getattr(self, attr), str):
                raise TypeError(f"{attr} must be a string, got {getattr(self, attr)!r}")
        if not isinstance(self.node_advice, dict) or not all(
                isinstance(k, type) and issubclass(k, ast.AST) and isinstance(v, str)
                for k, v in self.node_advice.items()):
            raise TypeError("node_advice must be a dict {AST node type (ast.Try, ...): message string}")

    @property
    def builtin_objects(self) -> dict:
        """``{name: object}`` of the allowed builtins."""
        return dict(self._builtins)


# --- the checks on the tree ----------------------------------------------------------------------------------------

class _Checker(ast.NodeVisitor):
    def __init__(self, profile: Profile, where, function: str):
        self.p = profile
        self.where = where            # (node) -> (line, cell)
        self.function = function
        self.findings: list[Finding] = []
        self.parents: dict = {}

    def add(self, node, message):
        line, cell = self.where(getattr(node, "lineno", 0))
        self.findings.append(Finding(line, getattr(node, "col_offset", 0), message, self.function, cell))

    def run(self, tree):
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        self.visit(tree)
        return self.findings

    def generic_visit(self, node):
        p = self.p
        if p.allowed_nodes is not None and not isinstance(node, p.allowed_nodes) \
                and not isinstance(node, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
            self.add(node, f"{type(node).__name__} is not allowed by the {p.name} profile")
        elif isinstance(node, p.forbidden_nodes):
            self.add(node, p.node_advice.get(type(node)) or _NODE_ADVICE.get(
                type(node), f"{type(node).__name__} is not allowed in a kernel"))
        elif isinstance(node, _CONTAINERS) and not p.containers:
            kind = {ast.List: "a list", ast.Dict: "a dict", ast.Set: "a set"}.get(type(node), "a comprehension")
            self.add(node, f"{kind} is not allowed in a kernel: {p.container_advice}")
        super().generic_visit(node)

    def _private(self, node, name, what):
        if name.startswith("_"):
            self.add(node, f"{what} {name!r} starts with '_': private names are not allowed in a kernel (they reach "
                           f"inside the grader's objects); {self.p.private_advice}")
            return True
        return False

    def visit_Name(self, node):
        if not self._private(node, node.id, "the name") and node.id in FORBIDDEN_BUILTINS:
            self.add(node, f"{node.id} is a Python builtin a kernel may not use (if it is your variable, rename it)")
        self.generic_visit(node)

    def visit_arg(self, node):
        self._private(node, node.arg, "the parameter")
        self.generic_visit(node)

    def visit_keyword(self, node):
        if node.arg is None:
            self.add(node, "**-unpacking in a call is not allowed: name each keyword argument")
        else:
            self._private(node, node.arg, "the keyword")
        self.generic_visit(node)

    def _chain(self, node):
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        return node, list(reversed(attrs))

    def visit_Attribute(self, node):
        parent = self.parents.get(node)
        if self._private(node, node.attr, "the attribute"):
            return self.generic_visit(node)
        if node.attr in FORBIDDEN_ATTRIBUTES:
            self.add(node, f".{node.attr} is not allowed in a kernel: print values with print(...) or an f-string "
                           "inside print")
            return self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            self.add(node, f"setting or deleting an attribute (.{node.attr}) is not allowed: "
                           f"{self.p.state_advice}")
            return self.generic_visit(node)
        inner = isinstance(parent, ast.Attribute) and parent.value is node
        base, attrs = self._chain(node)
        if isinstance(base, ast.Name) and base.id in self.p.modules:
            if not inner:
                path = ".".join(attrs)
                allowed = self.p.modules[base.id][1]
                if path not in allowed:
                    self.add(node, f"{base.id}.{path} is not available in a kernel; {base.id} offers: "
                                   f"{', '.join(sorted(allowed))}")
        elif node.attr not in self.p.value_attributes:
            self.add(node, f".{node.attr} is not allowed in a kernel; the attributes a kernel may use are "
                           f"{', '.join(sorted(self.p.value_attributes))}")
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node is not self.top and node.decorator_list:
            self.add(node, "a decorator on an inner function is not allowed: write the function plainly")
        a = node.args
        if a.vararg or a.kwarg:
            self.add(node, "*args and **kwargs parameters are not allowed: name each parameter")
        self._private(node, node.name, "the function name")
        self.generic_visit(node)

    def visit_Call(self, node):
        if not self.p.functions_as_arguments:
            inner = {d.name for d in ast.walk(self.top) if isinstance(d, ast.FunctionDef)}
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                what = None
                if isinstance(arg, ast.Name) and arg.id in inner:
                    what = arg.id
                elif isinstance(arg, ast.Name) and isinstance(self.p.builtin_objects.get(arg.id), _PLAIN_FUNCTIONS):
                    what = arg.id
                elif isinstance(arg, ast.Attribute):
                    base, attrs = self._chain(arg)
                    if isinstance(base, ast.Name) and base.id in self.p.modules:
                        obj = self.p.modules[base.id][0]
                        for a in attrs:
                            obj = getattr(obj, a, None)
                        if isinstance(obj, _PLAIN_FUNCTIONS):
                            what = ast.unparse(arg)
                if what:
                    self.add(arg, f"{what} is a function passed to a call: {self.p.function_argument_advice}")
        self.generic_visit(node)

    def visit_Lambda(self, node):
        parent = self.parents.get(node)
        as_argument = (isinstance(parent, ast.Call) and node in parent.args) or isinstance(parent, ast.keyword)
        if not (as_argument and self.p.functions_as_arguments):
            self.add(node, self.p.lambda_advice)
        a = node.args
        if a.vararg or a.kwarg:
            self.add(node, "*args and **kwargs parameters are not allowed: name each parameter")
        self.generic_visit(node)

    def visit_Tuple(self, node):
        if isinstance(node.ctx, ast.Load) and not self.p.tuples_anywhere:
            parent = self.parents.get(node)
            ok = (isinstance(parent, ast.Call) and node in parent.args) or isinstance(parent, ast.keyword) \
                or (isinstance(parent, ast.Subscript) and parent.slice is node) \
                or (isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node) \
                or isinstance(parent, ast.Return) \
                or (isinstance(parent, ast.Assign) and parent.value is node
                    and not any(isinstance(e, ast.Tuple) for e in node.elts))
            if not ok:
                self.add(node, "a tuple here is not allowed in a kernel: tuples may be a call's argument "
                               "(rows=(r0, r1)), a subscript, an assignment target, a for loop's iterable, a "
                               "return value or a flat tuple assigned to a name (rows = (r0, r1))")
        self.generic_visit(node)

    def visit_JoinedStr(self, node):
        if not self.p.fstrings_anywhere:
            parent = self.parents.get(node)
            ok = (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "print"
                  and node in parent.args) or isinstance(parent, ast.FormattedValue)
            if not ok:
                self.add(node, "an f-string is allowed only as an argument of print(...)")
        self.generic_visit(node)


# --- sources, names, namespaces ------------------------------------------------------------------------------------

class _StripAnnotations(ast.NodeTransformer):
    def visit_FunctionDef(self, node):
        node.returns = None
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            a.annotation = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node):
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


class _InjectTicks(ast.NodeTransformer):
    def _call(self, node):
        return ast.copy_location(ast.Expr(ast.Call(ast.Name(_TICK, ast.Load()), [], [])), node)

    def _prepend(self, node, body):
        at = 1 if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                   and isinstance(body[0].value.value, str) and isinstance(node, ast.FunctionDef)) else 0
        return body[:at] + [self._call(node)] + body[at:]

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.body = self._prepend(node, node.body)
        return node

    def visit_For(self, node):
        self.generic_visit(node)
        node.body = self._prepend(node, node.body)
        return node

    visit_While = visit_For


def _free_names(text: str, fname: str):
    """``(names the definition reads from outside, names it rebinds)`` by the symbol table of ``text`` (one def)."""
    top = symtable.symtable(text, "<kernel>", "exec")
    free, local = set(), set()
    for sym in top.get_symbols():
        if sym.is_referenced() and not sym.is_assigned() and sym.get_name() != fname:
            free.add(sym.get_name())

    def walk(t):
        for sym in t.get_symbols():
            if sym.is_global() and sym.is_referenced():
                free.add(sym.get_name())
            if sym.is_local():
                local.add(sym.get_name())
        for child in t.get_children():
            walk(child)

    for child in top.get_children():
        walk(child)
    return free, local


def _call_arguments(tree):
    """Every expression passed to a call in ``tree`` (positional arguments and keyword values)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield from node.args
            yield from (k.value for k in node.keywords)


_PLAIN_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, np.ufunc)


def _first_use(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name:
            return node
    return tree


_MAX_CONSTANT_TUPLE = 256


def _constant(value):
    """``(True, value copied)`` for a number, bool, None, string or tuple of those; ``(False, None)`` otherwise."""
    if isinstance(value, (np.integer, np.floating, np.bool_)):      # before float: np.float64 is one
        return True, value.item()
    if value is None:
        return True, None
    for base in (bool, int, float, str):                           # a subclass is copied as its base type
        if isinstance(value, base):
            return True, base.__new__(base, value) if base is not bool else bool(value)
    if isinstance(value, tuple) and len(value) <= _MAX_CONSTANT_TUPLE:
        out = []
        for v in value:
            ok, c = _constant(v)
            if not ok:
                return False, None
            out.append(c)
        return True, tuple(out)
    return False, None


def _describe(value) -> str:
    if isinstance(value, types.ModuleType):
        return f"the module {value.__name__}"
    kind = type(value).__name__
    # "ndarray" is said letter by letter ("en-dee-array"), so it takes "an" like a vowel
    return f"an {kind}" if kind[0].lower() in "aeiou" or kind.startswith("nd") else f"a {kind}"


def _given(profile) -> str:
    """The modules a profile gives a kernel, as words ("np and math")."""
    names = list(profile.modules)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


class _Rebuilder:
    """One rebuild: the memo of helpers rebuilt, the stack of those in progress, the findings."""

    def __init__(self, profile: Profile):
        self.p = profile
        self.memo: dict[int, object] = {}
        self.stack: list = []
        self.findings: list[Finding] = []
        self.unrun: set = set()         # names a file binds with statements rebuild_from_text does not run

    def _names_advice(self):
        mods = ", ".join(sorted(self.p.modules))
        return self.p.advice or (f"a kernel may use numbers, strings and tuples of them, the functions you wrote, "
                                 f"{mods} and the builtins {', '.join(sorted(self.p.builtin_objects))}")

    def resolve(self, name, tree, where, function, lookup):
        """The object bound to free ``name`` in the rebuilt namespace (or None, with a finding)."""
        node = _first_use(tree, name)
        line, cell = where(getattr(node, "lineno", 0))

        def refuse(message):
            self.findings.append(Finding(line, getattr(node, "col_offset", 0), message, function, cell))
            return None

        if name in self.p.modules:
            return self.p.modules[name][0]
        found, value = lookup(name)
        if not found:
            if name in self.p.builtin_objects:
                return self.p.builtin_objects[name]
            if name in FORBIDDEN_BUILTINS:
                return None                                    # the checker has said so at the name itself
            if name in self.unrun:
                return refuse(f"{name} is set by a statement the grader does not run (from a file it takes only "
                              f"top-level defs and constants NAME = <literal>; {_given(self.p)} "
                              f"{'is' if len(self.p.modules) == 1 else 'are'} given)")
            if hasattr(_builtins_module, name):
                return refuse(f"{name} is not allowed in a kernel; {self._names_advice()}")
            return refuse(f"{name} is not defined where the kernel was written: define it (a def or a constant at "
                          "the top level) before grading")
        ok, const = _constant(value)
        if ok:
            return const
        fn = self.p.unwrap(value)
        if fn is not None:
            self.refuse_passed_function(name, tree, where, function)
            return self.function(fn, value)
        if isinstance(value, (types.BuiltinFunctionType, np.ufunc)) or callable(value) and not isinstance(
                value, type):
            qual = getattr(value, "__name__", name)
            return refuse(f"{name} is {_describe(value)} ({qual}) from outside the kernel: call it through one of "
                          f"{', '.join(sorted(self.p.modules))} ({self.p.call_examples}) or write it as a def")
        return refuse(f"{name} is {_describe(value)} from your notebook, which a kernel cannot use; "
                      f"{self._names_advice()}")

    def refuse_passed_function(self, name, tree, where, function):
        """A finding where function ``name`` is passed to a call, if the profile allows no function there."""
        if self.p.functions_as_arguments:
            return
        passed = next((a for a in _call_arguments(tree) if isinstance(a, ast.Name) and a.id == name), None)
        if passed is not None:
            line, cell = where(passed.lineno)
            self.findings.append(Finding(line, passed.col_offset, f"{name} is a function passed to a call: "
                                         f"{self.p.function_argument_advice}", function, cell))

    def function(self, fn, original):
        key = id(fn)
        if key in self.memo:
            return self.memo[key]
        if key in [id(f) for f in self.stack]:
            chain = " -> ".join(f.__name__ for f in self.stack) + f" -> {fn.__name__}"
            self.findings.append(Finding(0, 0, f"recursion ({chain}): a kernel and its helpers do not call "
                                               "themselves; write a loop", fn.__name__))
            return None
        name = getattr(fn, "__name__", "kernel")
        if name == "<lambda>":
            self.findings.append(Finding(0, 0, "a lambda cannot be graded: write the kernel and its helpers with def",
                                         name))
            return None
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            self.findings.append(Finding(0, 0, f"{name} has no source the grader can read (was it made by exec, or "
                                               "typed in an interactive console?): define it in a notebook cell or a "
                                               ".py file", name))
            return None
        text = textwrap.dedent("".join(lines))
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            self.findings.append(Finding(first + (exc.lineno or 1) - 1, exc.offset or 0,
                                         f"the source does not parse: {exc.msg}", name))
            return None
        except (RecursionError, MemoryError):
            tree = None
        if tree is None or _too_deep(tree):
            self.findings.append(Finding(first, 0, f"the source nests expressions more than {MAX_SYNTAX_DEPTH} deep",
                                         name))
            return None
        fdef = tree.body[0] if tree.body else None
        if not isinstance(fdef, ast.FunctionDef) or fdef.name != name:
            self.findings.append(Finding(first, 0, f"{name} is not defined by a plain def statement; write it as "
                                                   f"`def {name}(...):`", name))
            return None
        self.stack.append(fn)
        try:
            closure = {}
            if fn.__closure__:
                for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                    try:
                        closure[var] = cell.cell_contents
                    except ValueError:
                        pass

            def lookup(n):
                if n in closure:
                    return True, closure[n]
                if n in fn.__globals__:
                    return True, fn.__globals__[n]
                return False, None

            built = self.build([(fdef, first - 1, None)], name, lookup, fn.__code__.co_filename, fn.__module__)
        finally:
            self.stack.pop()
        if built is None:
            return None
        new = self.p.rewrap(built[name], original)
        self.memo[key] = new
        return new

    def build(self, defs, label, lookup, filename, module, *, env=None, skip=frozenset(), check_only=False):
        """Check ``defs`` (``[(FunctionDef, line offset, cell)]``), resolve their free names with ``lookup`` (except
        ``skip``: functions the same namespace will define) and execute them in one fresh namespace (or ``env``);
        ``{name: function}``, or None after findings or with ``check_only`` (the checks alone)."""
        before = len(self.findings)
        env = {} if env is None else env
        trees = []
        for fdef, offset, cell in defs:
            def where(line, offset=offset, cell=cell):
                return (line + offset if line else 0), cell
            fdef.decorator_list = []
            tree = ast.Module(body=[fdef], type_ignores=[])
            _StripAnnotations().visit(tree)
            checker = _Checker(self.p, where, fdef.name)
            checker.top = fdef
            self.findings += checker.run(tree)
            free, local = _free_names(ast.unparse(tree), fdef.name)
            for m in sorted(set(self.p.modules) & local):
                node = _first_use(tree, m)
                line, c = where(getattr(node, "lineno", 0))
                self.findings.append(Finding(line, 0, f"{m} is the grader's {m}: do not assign to it or use it as a "
                                                      "parameter name", fdef.name, c))
            for n in sorted(free - set(env) - set(skip)):
                env[n] = self.resolve(n, tree, where, fdef.name, lookup)
            for n in sorted(free & set(skip)):           # the file's own functions
                self.refuse_passed_function(n, tree, where, fdef.name)
            trees.append((tree, offset, cell))
        if len(self.findings) > before or check_only:
            return None
        ns = env                                               # the fresh namespace: only what was resolved
        # numpy's C code imports its helpers lazily through the running frame's builtins, so __import__ must be
        # there; the kernel cannot name it (names starting with _ are refused above)
        ns["__builtins__"] = {**self.p.builtin_objects, "__import__": _builtins_module.__import__}
        ns.setdefault("__name__", module or "kernel")
        if self.p.tick is not None:
            ns[_TICK] = self.p.tick
        for tree, offset, cell in trees:
            if self.p.tick is not None:
                tree = ast.fix_missing_locations(_InjectTicks().visit(tree))
            ast.increment_lineno(tree, offset)
            code = compile(tree, filename, "exec")
            register_kernel_code(code)
            try:
                exec(code, ns)                                # the checked source only, in the fresh namespace
            except Exception as exc:  # a default value that cannot be made (np.zeros outside a kernel, say)
                fdef = tree.body[0]
                self.findings.append(Finding(fdef.lineno, 0, f"defining {fdef.name} raised {type(exc).__name__}: "
                                                             f"{exc}; a default value must be a number, a string, "
                                                             "None or a function", fdef.name, cell))
                return None
        return {fdef.name: ns[fdef.name] for fdef, _, _ in defs}


def rebuild(fn, profile: Profile):
    """Check ``fn``'s source against ``profile`` and return a new function built from it (see the module docstring).

    Args:
        fn: the reader's function (written with ``def`` in a notebook cell or a file), or what ``profile.unwrap``
            accepts.
        profile: a :class:`Profile` (:data:`CHIP_PROFILE` for the chip labs).
    Returns:
        the rebuilt function (``profile.rewrap`` of it).
    Raises:
        TypeError: ``profile`` is not a Profile.
        KernelSourceError: every finding, together (no source, a forbidden name or node, an unknown global,
            recursion ...).
    """
    if not isinstance(profile, Profile):
        raise TypeError(f"profile must be a labcore.chip.kernel_source.Profile, got {type(profile).__name__}")
    r = _Rebuilder(profile)
    f = profile.unwrap(fn)
    if f is None:
        raise KernelSourceError([Finding(0, 0, f"{getattr(fn, '__name__', repr(fn))} is {_describe(fn)}, not a "
                                               "function written with def: the grader rebuilds functions from their "
                                               "source")])
    new = r.function(f, fn)
    if r.findings or new is None:
        raise KernelSourceError(r.findings or [Finding(0, 0, "the kernel could not be rebuilt")],
                                getattr(f, "__name__", "kernel"))
    return new


def code_cells(text: str) -> list:
    """The code cells of a notebook's JSON text (a list of strings), or ``[text]`` when ``text`` is not a notebook.

    A notebook is a JSON object with a ``"cells"`` (or ``"nbformat"``) key; any other text (a ``.py`` file, JSON
    that does not parse) is not one. IPython's line magics and shell escapes (lines starting with ``%`` or ``!``)
    are blanked, keeping line numbers.
    Raises:
        TypeError: ``text`` is not a string.
        ValueError: a malformed notebook: ``cells`` missing or not a list, a cell that is not a JSON object, a
        ``cell_type`` that is not a string, or a code cell whose ``source`` is not a string or a list of strings (a
        code cell without a ``source`` reads as empty).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    nb = None
    if text.lstrip().startswith("{"):
        try:
            nb = json.loads(text)
        except (ValueError, RecursionError):     # not JSON (or nested past the parser): a Python file's text
            nb = None
    if not (isinstance(nb, dict) and ("cells" in nb or "nbformat" in nb)):
        return [text]
    if "cells" not in nb:
        raise ValueError("malformed notebook: it has no 'cells' list (an nbformat 4 notebook keeps its cells in a "
                         "top-level 'cells' list; save it again with Jupyter)")
    cells = nb["cells"]
    if not isinstance(cells, list):
        raise ValueError(f"malformed notebook: cells must be a list of cells, got {type(cells).__name__}")
    out = []
    for i, c in enumerate(cells):
        if not isinstance(c, dict):
            raise ValueError(f"malformed notebook: cells[{i}] must be a cell (a JSON object), got {type(c).__name__}")
        kind = c.get("cell_type")
        if not isinstance(kind, str):
            raise ValueError(f"malformed notebook: cells[{i}] has cell_type {kind!r}; it must be a string "
                             "('code', 'markdown' or 'raw')")
        if kind != "code":
            continue
        src = c.get("source", "")      # nbformat requires one; a cell without it has nothing to run
        if isinstance(src, list) and all(isinstance(line, str) for line in src):
            src = "".join(src)
        elif not isinstance(src, str):
            got = (f"a list holding {type(next(x for x in src if not isinstance(x, str))).__name__}"
                   if isinstance(src, list) else type(src).__name__)
            raise ValueError(f"malformed notebook: the source of cells[{i}] must be a string or a list of strings, "
                             f"got {got}")
        out.append(src)
    return ["\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in c.split("\n")) for c in out]


#: The deepest nesting of a kernel's syntax tree the checks read: far past any real kernel (tens), and shallow enough
#: that the checks' recursive walks over the tree stay inside Python's recursion limit.
MAX_SYNTAX_DEPTH = 100


def _too_deep(tree) -> bool:
    """Whether ``tree`` nests deeper than :data:`MAX_SYNTAX_DEPTH` (walked without recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SYNTAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _constant_assignment(stmt):
    """``(name, value)`` for ``NAME = <literal>`` at the top level, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        target, value = stmt.targets[0].id, stmt.value
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        target, value = stmt.target.id, stmt.value
    else:
        return None
    try:
        v = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    ok, c = _constant(v)
    return (target, c) if ok else None


def rebuild_from_text(text: str, names, profile: Profile, *, filename: str = "<submission>") -> dict:
    """Check and rebuild the functions ``names`` from a file's text, running none of its other code.

    From a ``.py`` file's text or a notebook's JSON (its code cells, in order; a later definition replaces an
    earlier one, as re-running a cell does), take the top-level ``def`` statements and constant assignments
    (``NAME = <literal>``) that ``names`` need, transitively; check each against ``profile``; execute only those in
    one fresh namespace. Imports and every other statement are ignored (the modules come from the profile).

    Args:
        text: the file's text (str).
        names: the functions wanted (a tuple or list of identifier strings; not a bare string).
        profile: a :class:`Profile`.
        filename: name for messages and tracebacks.
    Returns:
        ``{name: rebuilt function}`` for every name in ``names``.
    Raises:
        TypeError: bad arguments. ValueError: a malformed notebook, as
        :func:`~labcore.chip.kernel_source.code_cells` says. KernelSourceError: a wanted function missing (with the
        syntax errors of cells that did not parse), a helper not defined at the top level, and every finding of
        the checks.
    """
    if not isinstance(profile, Profile):
        raise TypeError(f"profile must be a labcore.chip.kernel_source.Profile, got {type(profile).__name__}")
    if isinstance(names, str) or not isinstance(names, (tuple, list)) or not names \
            or not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise TypeError(f"names must be a non-empty tuple or list of function names, got {names!r}")
    if not isinstance(filename, str):
        raise TypeError(f"filename must be a string, got {filename!r}")
    cells = code_cells(text)
    notebook = len(cells) != 1 or cells[0] is not text
    defs, consts, broken, unrun = {}, {}, [], set()
    for k, cell in enumerate(cells):
        cell_name = f"{filename} [cell {k + 1}]" if notebook else filename
        linecache.cache[cell_name] = (len(cell), None, cell.splitlines(True), cell_name)
        what = "this cell" if notebook else "this file"
        try:
            tree = ast.parse(cell)
        except SyntaxError as exc:
            broken.append(Finding(exc.lineno or 0, exc.offset or 0, f"{what} does not parse: {exc.msg}", "",
                                  k if notebook else None))
            continue
        except (RecursionError, MemoryError):   # Python's parser gives up on expressions nested thousands deep
            tree = None
        if tree is None or _too_deep(tree):
            broken.append(Finding(0, 0, f"{what} nests expressions more than {MAX_SYNTAX_DEPTH} deep", "",
                                  k if notebook else None))
            continue
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                defs[stmt.name] = (stmt, k if notebook else None, cell_name)
                consts.pop(stmt.name, None)
            else:
                c = _constant_assignment(stmt)
                if c is not None:
                    consts[c[0]] = c[1]
                    defs.pop(c[0], None)
                else:
                    unrun |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                    unrun |= {(a.asname or a.name).split(".")[0] for n in ast.walk(stmt)
                              if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    r = _Rebuilder(profile)
    r.unrun = unrun - set(consts) - set(defs)
    missing = [n for n in names if n not in defs]
    if missing:
        # a cell that does not parse comes first: it is most often why the function is missing
        r.findings += broken + [Finding(0, 0, f"the file defines no function named {n} (a top-level `def {n}(...)`)",
                                        n) for n in missing]
        raise KernelSourceError(r.findings, ", ".join(names))
    needed, todo = [], list(names)
    while todo:
        n = todo.pop()
        if n in needed:
            continue
        needed.append(n)
        fdef = defs[n][0]
        free, _ = _free_names(ast.unparse(ast.Module(body=[fdef], type_ignores=[])), n)
        todo += [m for m in free if m in defs and m not in profile.modules]
    graph = {n: {m for m in _free_names(ast.unparse(ast.Module(body=[defs[n][0]], type_ignores=[])), n)[0]
                 if m in needed} for n in needed}
    for n in needed:
        if _reaches(graph, n, n):
            r.findings.append(Finding(defs[n][0].lineno, 0, f"recursion: {n} calls itself (directly or through a "
                                                            "helper); write a loop", n, defs[n][1]))
    env = {}

    def lookup(n):
        return (True, consts[n]) if n in consts else (False, None)

    order = sorted(needed, key=lambda n: (defs[n][1] or 0, defs[n][0].lineno))
    built, failed = {}, set()
    for n in order:                      # one namespace, definitions in file order (defaults may name helpers)
        fdef, cell, cell_name = defs[n]
        # a function that names one that did not pass is checked but not defined (a default f=h would raise
        # NameError, a finding that blames the wrong function): the other one's findings say what to fix
        out = r.build([(fdef, 0, cell)], n, lookup, cell_name, "submission", env=env, skip=set(needed),
                      check_only=bool(graph[n] & failed))
        if out is not None:
            env[n] = out[n]
            built[n] = out[n]
        else:
            failed.add(n)
    if r.findings:
        raise KernelSourceError(r.findings, ", ".join(names))
    for n in needed:                     # the helpers, as the kernels will call them (rewrap with no original)
        if n not in names:
            env[n] = profile.rewrap(built[n], None)
    return {n: profile.rewrap(built[n], built[n]) for n in names}


def _reaches(graph, start, target, seen=None):
    seen = set() if seen is None else seen
    for m in graph.get(start, ()):
        if m == target:
            return True
        if m not in seen:
            seen.add(m)
            if _reaches(graph, m, target, seen):
                return True
    return False


# --- the profiles of the chip labs -----------------------------------------------------------------------------------

#: Attributes a chip kernel may read on any value: a tile's shape and maths, the CTA's API, a program's chip API.
CHIP_VALUE_ATTRIBUTES = frozenset({
    "T", "shape", "ndim", "size", "reshape", "copy", "sum", "max", "min", "mean", "any", "all",
    "pid", "M", "load", "buffer", "store", "allocate", "atomic_add", "launch"})

#: The chip labs' profile: ``np`` is :data:`labcore.chip.facade.NP`, ``math`` is :data:`labcore.chip.facade.MATH`;
#: builtins range, len, min, max, abs, int, float, bool, round, enumerate, zip, reversed, print, isinstance; no
#: containers; tuples and f-strings only where the module docstring says; a step tick in every loop and function.
CHIP_PROFILE = Profile(
    name="chip", modules={"np": (NP, NP_NAMES), "math": (MATH, MATH_NAMES)}, builtins=checked_builtins(),
    value_attributes=CHIP_VALUE_ATTRIBUTES, tick=tick,
    advice="a kernel may use numbers, strings and tuples of them, the functions you wrote, np (array maths on "
           "tiles), math, and the builtins range, len, min, max, abs, int, float, bool, round, enumerate, zip, "
           "reversed, print and isinstance")


def _host_labcore():
    from .. import decode_time, hardware, splits
    return Facade("labcore", {"get_gpu": hardware.get_gpu, "decode_attention_time": decode_time.decode_attention_time,
                              "flash_attn_num_splits": splits.flash_attn_num_splits})


_HOST_LABCORE = _host_labcore()

#: Attributes host code may read: a GPU preset's figures and a decode estimate's fields.
HOST_VALUE_ATTRIBUTES = frozenset({
    "name", "num_sms", "smem_per_sm", "hbm_bandwidth", "tensor_flops", "tensor_flops_per_sm", "fp32_flops",
    "total", "num_splits", "num_ctas", "waves", "compute_time", "memory_time", "cta_time", "bound", "ctas_per_sm",
    "shape"})

#: Host code that chooses launch parameters (lab 5's ``choose_splits``): numbers, ``math``, and from ``labcore`` the
#: GPU presets (``get_gpu``), the decode time model (``decode_attention_time``) and flash-attn's heuristic
#: (``flash_attn_num_splits``); no chip, no arrays.
HOST_PROFILE = Profile(
    name="host", modules={"math": (MATH, MATH_NAMES), "labcore": (_HOST_LABCORE, _HOST_LABCORE.names)},
    builtins=checked_builtins(), value_attributes=HOST_VALUE_ATTRIBUTES, tick=tick,
    advice="host code may use numbers, strings and tuples of them, the functions you wrote, math, "
           "labcore.get_gpu, labcore.decode_attention_time, labcore.flash_attn_num_splits and the builtins range, "
           "len, min, max, abs, int, float, bool, round, enumerate, zip, reversed, print and isinstance")
