"""labcore.chip.kernel_source: a kernel is checked and rebuilt from its source, never run as given."""
from __future__ import annotations

import ast
import linecache
import math

import numpy as np
import pytest

from labcore.chip import CHIP_PROFILE, Chip, KernelLimitError, KernelSourceError, Profile, rebuild, rebuild_from_text
from labcore.chip.facade import NP
from labcore.chip.kernel_source import HOST_PROFILE, code_cells


def _define(code: str, ns=None, counter=[0]):
    """Define ``code`` as a notebook cell does (its source kept in linecache under the cell's file name)."""
    counter[0] += 1
    name = f"<cell-{counter[0]}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    ns = {"np": np, "math": math} if ns is None else ns
    exec(compile(code, name, "exec"), ns)
    return ns


def _findings(fn, profile=CHIP_PROFILE):
    with pytest.raises(KernelSourceError) as e:
        rebuild(fn, profile)
    return e.value.findings


def test_every_finding_is_raised_together_with_its_line_in_the_cell():
    ns = _define("x = 1\n\ndef kernel(cta):\n    a = cta._state\n    b = [1, 2]\n    cta.M = 3\n"
                 "    return getattr(cta, 'M')\n")
    found = _findings(ns["kernel"])
    assert [f.line for f in found] == [4, 5, 6, 7]
    assert all(f.function == "kernel" for f in found)
    assert "'_state' starts with '_'" in found[0].message and "a list is not allowed" in found[1].message
    assert str(found[0]).startswith("line 4, in kernel: ")


def test_what_is_copied_what_is_rebuilt_and_what_is_bound():
    ns = _define("SCALE = 0.5\nSHAPE = (2, 3)\nBIG = np.float64(2.0)\n"
                 "def helper(x):\n    return x * SCALE\n"
                 "def kernel(cta):\n    with cta.load('x') as t:\n"
                 "        cta.store('y', helper(t) * BIG + np.zeros(SHAPE).sum(), rows=(0, 3))\n")
    k = rebuild(ns["kernel"], CHIP_PROFILE)
    ns["SCALE"] = 100.0                                        # a constant was copied when the kernel was rebuilt
    chip = Chip(64, {"x": np.ones(3)})
    chip.allocate("y", (3,))
    chip.launch(k)
    np.testing.assert_array_equal(chip.read_back("y"), np.ones(3))
    g = k.__globals__
    assert g["np"] is NP and g["helper"] is not ns["helper"] and type(g["BIG"]) is float
    assert g["helper"].__globals__["SCALE"] == 0.5 and "SCALE" not in g and g["SHAPE"] == (2, 3)
    assert set(g["__builtins__"]) == set(CHIP_PROFILE.builtin_objects) | {"__import__"}


def test_a_closure_is_resolved_and_rebuilt():
    ns = _define("def make(scale):\n    def kernel(cta):\n        with cta.load('x') as t:\n"
                 "            cta.store('y', t * scale, rows=(0, 3))\n    return kernel\n")
    k = rebuild(ns["make"](3.0), CHIP_PROFILE)
    chip = Chip(64, {"x": np.ones(3)})
    chip.allocate("y", (3,))
    chip.launch(k)
    np.testing.assert_array_equal(chip.read_back("y"), np.full(3, 3.0))


def test_recursion_modules_unknown_names_and_rebinding_np_are_refused():
    ns = _define("import os\ndef again(cta):\n    again(cta)\n"
                 "def ping(n):\n    return pong(n)\ndef pong(n):\n    return ping(n)\n"
                 "def uses(cta):\n    ping(1)\n    os.getcwd()\n    nowhere(1)\n    sorted([])\n"
                 "def rebinds(cta):\n    np = 3\n    return np\n")
    assert "recursion (again -> again)" in _findings(ns["again"])[0].message
    msgs = " | ".join(f.message for f in _findings(ns["uses"]))
    assert "recursion (uses -> ping -> pong -> ping)" in msgs and "os is the module os" in msgs
    assert "nowhere is not defined" in msgs and "sorted is not allowed" in msgs
    assert "np is the grader's np" in _findings(ns["rebinds"])[0].message


def test_no_source_and_lambdas_are_refused_clearly():
    ns = {}
    exec("def kernel(cta):\n    pass\n", ns)                  # no file, no linecache: no source
    assert "has no source the grader can read" in _findings(ns["kernel"])[0].message
    assert "a lambda cannot be graded" in _findings(lambda cta: None)[0].message
    assert "not a function written with def" in _findings(print)[0].message


def test_tuples_and_fstrings_only_where_the_profile_allows():
    ns = _define("def kernel(cta):\n    rows = (0, 1)\n    pair = ((0, 1), 2)\n    x = (1, 2) + (3,)\n"
                 "    print(f'rows {rows}')\n    s = f'{rows}'\n    for name in ('a', 'b'):\n        pass\n"
                 "    return rows[0], rows[1]\n")
    found = _findings(ns["kernel"])
    # two tuples on line 3 and two on line 4 are one finding each (the same message at the same line)
    assert [f.line for f in found] == [3, 4, 6]
    assert "a tuple here is not allowed" in found[0].message and "an f-string is allowed only" in found[2].message


def test_an_endless_loop_in_a_rebuilt_kernel_is_stopped_by_the_injected_ticks():
    from labcore.chip import run_limits

    ns = _define("def kernel(cta):\n    n = 0\n    while True:\n        n = n + 1\n")
    k = rebuild(ns["kernel"], CHIP_PROFILE)
    with run_limits(steps=1000), pytest.raises(KernelLimitError):
        Chip(4).launch(k)


def test_a_profile_for_decorated_functions_unwraps_and_rewraps():
    """What a profile for CUDA device functions does: the decorated object is unwrapped to its Python function,
    rebuilt, and wrapped again."""
    class Device:
        def __init__(self, fn):
            self.py_func = fn

        def __call__(self, *a):
            return self.py_func(*a)

    profile = Profile("device", {"math": (math, frozenset({"exp"}))}, frozenset({"range"}), frozenset(),
                      unwrap=lambda obj: obj.py_func if isinstance(obj, Device) else None,
                      rewrap=lambda fn, original: Device(fn))
    ns = _define("def square(x):\n    return x * x\n", {"Device": Device, "math": math})
    ns["square"] = Device(ns["square"])
    ns = _define("def total(n):\n    s = 0\n    for i in range(n):\n        s = s + square(i) + math.exp(0)\n"
                 "    return s\n", ns)
    built = rebuild(Device(ns["total"]), profile)
    assert isinstance(built, Device) and built(4) == 0 + 1 + 4 + 9 + 4
    assert isinstance(built.py_func.__globals__["square"], Device)
    with pytest.raises(ValueError, match="may not include eval"):
        Profile("bad", {}, frozenset({"eval"}), frozenset())


def test_allowed_nodes_restrict_a_profile_further():
    profile = Profile("tiny", {}, frozenset(), frozenset(),
                      allowed_nodes=(ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Name,
                                     ast.BinOp, ast.Load, ast.Store, ast.Constant))
    ns = _define("def ok(x):\n    return x + 1\ndef loops(x):\n    for i in x:\n        pass\n    return x\n")
    assert rebuild(ns["ok"], profile)(1) == 2
    assert any("For is not allowed by the tiny profile" in f.message for f in _findings(ns["loops"], profile))


def test_rebuild_from_text_takes_only_what_the_names_need_in_file_order():
    text = ("import numpy as np\nimport os\nos.remove('/nonexistent')\nB = 4\n"
            "def helper(x):\n    return x + B\n"
            "def kernel(cta, *, step=None):\n    return later(helper(1))\n"
            "def later(x):\n    return x * 2\n"
            "def helper(x):\n    return x + 2 * B\n"             # a later definition wins, as re-running a cell
            "def unused(cta):\n    import gc\n")
    fns = rebuild_from_text(text, ("kernel",), CHIP_PROFILE, filename="ada.py")
    assert fns["kernel"](None) == (1 + 8) * 2
    with pytest.raises(KernelSourceError, match="defines no function named choose"):
        rebuild_from_text(text, ("choose",), CHIP_PROFILE)
    with pytest.raises(KernelSourceError, match="labcore.best_num_splits is not available"):
        rebuild_from_text("import labcore\ndef choose(gpu):\n    return labcore.best_num_splits(gpu)\n",
                          ("choose",), HOST_PROFILE)


def test_code_cells_reads_a_notebook_and_blanks_magics():
    import json
    nb = {"cells": [{"cell_type": "markdown", "source": "# t"}, {"cell_type": "code", "source": ["%time\n", "x = 1"]},
                    {"cell_type": "code", "source": "!pip list"}]}
    assert code_cells(json.dumps(nb)) == ["\nx = 1", ""]
    assert code_cells("x = 1\n") == ["x = 1\n"]


def test_a_default_that_cannot_be_made_is_a_finding_not_a_crash():
    ns = _define("def kernel(cta, *, cache=np.zeros(4)):\n    pass\n")
    found = _findings(ns["kernel"])
    assert "defining kernel raised RuntimeError: np.zeros makes an array on chip" in found[0].message


def test_what_a_reader_writes_for_debugging_and_fills_works(capsys):
    ns = _define("def kernel(cta):\n    with cta.load('x') as t, cta.buffer(3, fill=float('-inf')) as m:\n"
                 "        m[:] = np.maximum(m, t)\n        z = np.zeros(3, dtype=np.float64)\n"
                 "        print(t, t.max(), f'{t.max():.2f}', m + z)\n")
    Chip(64, {"x": np.arange(3.0)}).launch(rebuild(ns["kernel"], CHIP_PROFILE))
    assert capsys.readouterr().out == "[0. 1. 2.] 2.0 2.00 [0. 1. 2.]\n"


def test_a_name_a_file_sets_by_code_the_grader_does_not_run_is_named_so():
    text = "import math as m\nscale = m.sqrt(2)\ndef kernel(cta):\n    return scale + m.pi\n"
    with pytest.raises(KernelSourceError) as e:
        rebuild_from_text(text, ("kernel",), CHIP_PROFILE)
    msgs = [f.message for f in e.value.findings]
    assert sum("is set by a statement the grader does not run" in m for m in msgs) == 2
