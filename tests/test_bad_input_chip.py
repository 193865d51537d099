"""labcore.chip refuses bad input clearly: what a probe of the tile-level chip found, and the same kinds of fault
elsewhere in its public API.

Each case of :data:`CASES` feeds one argument a value the chip cannot mean (a tile past any memory or of strings, a
malformed notebook, a CTA order that is no permutation, a handle that is no int, a NaN fill or bound, an offset past
numpy's integers, a per-CTA bandwidth that makes every time infinite ...) and requires a TypeError or ValueError
whose message names that argument: never a MemoryError, an OverflowError, an AttributeError or a bare message from
deep inside numpy or the standard library. :func:`test_good_input_still_works` holds the same entry points fed values
they mean, so that the refusals are not refusals of everything.
"""
from __future__ import annotations

import json
import math
import time
import types

import ml_dtypes
import numpy as np
import pytest

from labcore.checks import MAX_ELEMENTS
from labcore.chip import (CHIP_PROFILE, CTA, SRAM, Chip, CTAState, Finding, HBMTensor, KernelSourceError, Profile,
                          Tile, modelled_time, rebuild_from_text)
from labcore.chip import facade
from labcore.chip.grid import Program
from labcore.chip.kernel_source import code_cells
from labcore.chip.limits import register_kernel_code
from labcore.chip.tile import Holding, running

NP = facade.NP
D = 4


def _chip(**kw):
    return Chip(64, {"Q": np.ones((4, D))}, **kw)


def _in_cta(call):
    """``call()`` with a running CTA (the facade makes its arrays in it)."""
    chip = _chip()
    with running(CTAState(chip, 0, chip.M)):
        return call()


def _ran_chip(launches: int = 1):
    chip = _chip()
    chip.allocate("O", (4, D), fill=0.0)

    def copy(cta):
        with cta.load("Q") as q:
            cta.store("O", q + 1.0)

    for _ in range(launches):
        chip.launch(copy)
    return chip


def _launch(order, grid: int = 2):
    _chip(order=order).launch(lambda cta: None, grid=grid)


def _release(handle):
    sram = SRAM(10)
    sram.hold("x", 1)
    sram.release(handle)


def _notebook(cells) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _zeros():
    return NP.zeros((2, 2))


# (label, call, the exception, the name the message must hold)
CASES = [
    # 6. a tile past any memory, or of a dtype the chip does not model
    ("Tile.shape 10**9", lambda: Tile((10 ** 9,)), ValueError, "shape"),
    ("Tile.shape past MAX_ELEMENTS", lambda: Tile((MAX_ELEMENTS + 1,)), ValueError, "shape"),
    ("Tile.shape 2-D huge", lambda: Tile((10 ** 6, 10 ** 6)), ValueError, "shape"),
    ("Tile.shape float", lambda: Tile(2.5), TypeError, "shape"),
    ("Tile.shape str", lambda: Tile("128"), TypeError, "shape"),
    ("Tile.shape bool", lambda: Tile((True, 2)), TypeError, "shape"),
    ("Tile.shape negative", lambda: Tile((-1,)), ValueError, "shape"),
    ("Tile.shape None", lambda: Tile(None), TypeError, "shape"),
    ("Tile.dtype object", lambda: Tile((2,), dtype=object), TypeError, "dtype"),
    ("Tile.dtype U5", lambda: Tile((2,), dtype="U5"), TypeError, "dtype"),
    ("Tile.dtype complex", lambda: Tile((2,), dtype=complex), TypeError, "dtype"),
    ("Tile.dtype float32", lambda: Tile((2,), dtype=np.float32), TypeError, "dtype"),
    ("Tile.dtype bfloat16", lambda: Tile((2,), dtype=ml_dtypes.bfloat16), TypeError, "dtype"),
    ("Tile.dtype unknown", lambda: Tile((2,), dtype="nonsense"), TypeError, "dtype"),
    # 11. a malformed notebook
    ("code_cells source 5", lambda: code_cells('{"cells":[{"cell_type":"code","source":5}]}'), ValueError, "source"),
    ("code_cells source [1]", lambda: code_cells(_notebook([{"cell_type": "code", "source": ["x = 1\n", 1]}])),
     ValueError, "source"),
    ("code_cells source None", lambda: code_cells(_notebook([{"cell_type": "code", "source": None}])), ValueError,
     "source"),
    ("code_cells cells 5", lambda: code_cells('{"cells": 5}'), ValueError, "cells"),
    ("code_cells cells dict", lambda: code_cells('{"cells": {"a": 1}}'), ValueError, "cells"),
    ("code_cells cells str", lambda: code_cells('{"cells": "def kernel(cta): pass"}'), ValueError, "cells"),
    ("code_cells a cell 5", lambda: code_cells('{"cells": [5]}'), ValueError, "cells[0]"),
    ("code_cells cell_type 3", lambda: code_cells(_notebook([{"cell_type": 3, "source": ""}])), ValueError,
     "cell_type"),
    ("code_cells no cells", lambda: code_cells('{"nbformat": 4, "metadata": {}}'), ValueError, "cells"),
    ("rebuild_from_text malformed", lambda: rebuild_from_text('{"cells": 5}', ("kernel",), CHIP_PROFILE),
     ValueError, "cells"),
    ("rebuild_from_text source 5",
     lambda: rebuild_from_text('{"cells":[{"cell_type":"code","source":5}]}', ("kernel",), CHIP_PROFILE),
     ValueError, "source"),
    # 12. register_kernel_code takes a code object
    ("register_kernel_code None", lambda: register_kernel_code(None), TypeError, "code"),
    ("register_kernel_code 5", lambda: register_kernel_code(5), TypeError, "code"),
    ("register_kernel_code function", lambda: register_kernel_code(_chip), TypeError, "code"),
    ("register_kernel_code str", lambda: register_kernel_code("x = 1"), TypeError, "code"),
    # 16. an order that is no permutation of the CTAs
    ("Chip.order duplicates", lambda: Chip(M=64, order=[0, 0]), ValueError, "order"),
    ("Chip.order empty", lambda: Chip(M=64, order=[]), ValueError, "order"),
    ("Chip.order out of range", lambda: Chip(M=64, order=[-5, 10 ** 30]), ValueError, "order"),
    ("Chip.order missing 0", lambda: Chip(M=64, order=(1, 2)), ValueError, "order"),
    ("Chip.order bool", lambda: Chip(M=64, order=[0, True]), TypeError, "order"),
    ("Chip.order floats", lambda: Chip(M=64, order=[0.0, 1.0]), TypeError, "order"),
    ("Chip.order strings", lambda: Chip(M=64, order=["0", "1"]), TypeError, "order"),
    ("Chip.order too long", lambda: Chip(M=64, order=list(range(2 ** 16 + 1))), ValueError, "order"),
    ("order() None", lambda: _launch(lambda g: None), TypeError, "order"),
    ("order() floats", lambda: _launch(lambda g: [0.0, 1.0]), TypeError, "order"),
    ("order() float array", lambda: _launch(lambda g: np.arange(g) * 1.0), TypeError, "order"),
    ("order() duplicates", lambda: _launch(lambda g: [0] * g), ValueError, "order"),
    ("order() short", lambda: _launch(lambda g: [0]), ValueError, "order"),
    ("order() out of range", lambda: _launch(lambda g: [1, 2]), ValueError, "order"),
    ("order() a string", lambda: _launch(lambda g: "01"), TypeError, "order"),
    ("order() a generator", lambda: _launch(lambda g: (i for i in range(g))), TypeError, "order"),
    ("order() a number", lambda: _launch(lambda g: 5), TypeError, "order"),
    ("order() a range past 2**63", lambda: _launch(lambda g: range(10 ** 30)), ValueError, "order"),
    ("order() a long array", lambda: _launch(lambda g: np.arange(10 ** 6)), ValueError, "order"),
    # 17. a Holding's size (and kind, label)
    ("Holding.size -1", lambda: Holding("tile", "x", -1), ValueError, "size"),
    ("Holding.size str", lambda: Holding("tile", "x", "128"), TypeError, "size"),
    ("Holding.size fraction", lambda: Holding("tile", "x", 2.5), TypeError, "size"),
    ("Holding.size inf", lambda: Holding("tile", "x", math.inf), TypeError, "size"),
    ("Holding.size bool", lambda: Holding("tile", "x", True), TypeError, "size"),
    ("Holding.size huge", lambda: Holding("tile", "x", 10 ** 30), ValueError, "size"),
    ("Holding.kind None", lambda: Holding(None, "x", 1), TypeError, "kind"),
    ("Holding.kind unknown", lambda: Holding("register", "x", 1), ValueError, "kind"),
    ("Holding.label None", lambda: Holding("tile", None, 1), TypeError, "label"),
    ("Holding.has_data", lambda: Holding("tile", "x", 1, has_data="yes"), TypeError, "has_data"),
    # 18. SRAM.release: the handle's type first, then whether it is known
    ("SRAM.release 1.0", lambda: _release(1.0), TypeError, "handle"),
    ("SRAM.release True", lambda: _release(True), TypeError, "handle"),
    ("SRAM.release [1]", lambda: _release([1]), TypeError, "handle"),
    ("SRAM.release '1'", lambda: _release("1"), TypeError, "handle"),
    ("SRAM.release None", lambda: _release(None), TypeError, "handle"),
    ("SRAM.release unknown", lambda: _release(99), ValueError, "never returned"),
    ("SRAM.release 0", lambda: _release(0), ValueError, "never returned"),
    # 21. the facade's fills and bounds follow cta.buffer's rule; offsets and axes are bounded
    ("np.clip a_min NaN", lambda: _in_cta(lambda: NP.clip(_zeros(), math.nan, 1.0)), ValueError, "a_min"),
    ("np.clip a_max NaN", lambda: _in_cta(lambda: NP.clip(_zeros(), 0.0, np.float64("nan"))), ValueError, "a_max"),
    ("np.clip a_min bool", lambda: _in_cta(lambda: NP.clip(_zeros(), True, 1.0)), TypeError, "a_min"),
    ("np.clip a_max huge int", lambda: _in_cta(lambda: NP.clip(_zeros(), 0.0, 10 ** 400)), ValueError, "a_max"),
    ("np.full_like NaN", lambda: _in_cta(lambda: NP.full_like(_zeros(), math.nan)), ValueError, "fill_value"),
    ("np.full_like bool", lambda: _in_cta(lambda: NP.full_like(_zeros(), True)), TypeError, "fill_value"),
    ("np.full bool", lambda: _in_cta(lambda: NP.full(2, True)), TypeError, "fill_value"),
    ("np.full NaN", lambda: _in_cta(lambda: NP.full(2, math.nan)), ValueError, "fill_value"),
    ("np.full numpy bool", lambda: _in_cta(lambda: NP.full(2, np.True_)), TypeError, "fill_value"),
    ("np.full huge int", lambda: _in_cta(lambda: NP.full(2, 10 ** 400)), ValueError, "fill_value"),
    ("np.full int dtype fraction", lambda: _in_cta(lambda: NP.full(2, 2.5, dtype=int)), TypeError, "fill_value"),
    ("np.full int dtype inf", lambda: _in_cta(lambda: NP.full(2, math.inf, dtype=int)), TypeError, "fill_value"),
    ("np.full bool dtype number", lambda: _in_cta(lambda: NP.full(2, 1.0, dtype=bool)), TypeError, "fill_value"),
    ("np.full dtype list", lambda: _in_cta(lambda: NP.full(2, 1.0, dtype=[1])), TypeError, "dtype"),
    ("np.tril k huge", lambda: _in_cta(lambda: NP.tril(_zeros(), k=10 ** 30)), ValueError, "k"),
    ("np.triu k huge", lambda: _in_cta(lambda: NP.triu(_zeros(), k=-10 ** 30)), ValueError, "k"),
    ("np.sum axis huge", lambda: _in_cta(lambda: NP.sum(_zeros(), axis=10 ** 30)), ValueError, "axis"),
    ("np.max axis tuple huge", lambda: _in_cta(lambda: NP.max(_zeros(), axis=(0, 2 ** 40))), ValueError, "axis"),
    ("np.concatenate axis huge", lambda: _in_cta(lambda: NP.concatenate((_zeros(),), axis=2 ** 63)), ValueError,
     "axis"),
    ("np.stack axis huge", lambda: _in_cta(lambda: NP.stack((_zeros(),), axis=-2 ** 63)), ValueError, "axis"),
    ("np.arange start huge", lambda: _in_cta(lambda: NP.arange(10 ** 30, 10 ** 30 + 3)), ValueError, "start"),
    ("np.arange step huge", lambda: _in_cta(lambda: NP.arange(0, 3, 10 ** 30)), ValueError, "step"),
    ("np.zeros a side past any SRAM", lambda: _in_cta(lambda: NP.zeros((0, 10 ** 30))), ValueError, "shape"),
    ("round ndigits huge", lambda: facade.checked_builtins()["round"](12345, -10 ** 30), ValueError, "ndigits"),
    ("round ndigits fraction", lambda: facade.checked_builtins()["round"](1.5, 2.5), TypeError, "ndigits"),
    ("range past 2**63", lambda: facade.checked_builtins()["range"](10 ** 30), ValueError, "range"),
    # modelled_time: per_cta_cap checked where it enters; a time past any float refused
    ("modelled_time per_cta_cap 1e-320", lambda: modelled_time(_ran_chip(), per_cta_cap=1e-320), ValueError,
     "per_cta_cap"),
    ("modelled_time per_cta_cap 1e-300", lambda: modelled_time(_ran_chip(), per_cta_cap=1e-300), ValueError,
     "per_cta_cap"),
    ("modelled_time per_cta_cap 0.5", lambda: modelled_time(_ran_chip(), per_cta_cap=0.5), ValueError, "per_cta_cap"),
    ("modelled_time per_cta_cap bool", lambda: modelled_time(_ran_chip(), per_cta_cap=True), TypeError,
     "per_cta_cap"),
    ("modelled_time kernel_overhead past float", lambda: modelled_time(_ran_chip(2), kernel_overhead=1e308),
     ValueError, "kernel_overhead"),
    # the rest of the chip's public API: the same kinds of fault
    ("Chip.seed past 128 bits", lambda: Chip(64, seed=2 ** 200), ValueError, "seed"),
    ("cta.buffer fill huge int", lambda: _in_cta(lambda: CTAState(_chip(), 0, 64).buffer(2, fill=10 ** 400)),
     ValueError, "fill"),
    ("cta.buffer fill numpy bool", lambda: _in_cta(lambda: CTAState(_chip(), 0, 64).buffer(2, fill=np.True_)),
     TypeError, "fill"),
    ("HBMTensor.empty fill huge int", lambda: HBMTensor.empty("x", 2, 10 ** 400), ValueError, "fill"),
    ("Chip.allocate fill huge int", lambda: _chip().allocate("y", 2, fill=10 ** 400), ValueError, "fill"),
    ("Program.chip", lambda: Program(5), TypeError, "chip"),
    ("CTAState.chip", lambda: CTAState(None, 0, 64), TypeError, "chip"),
    ("CTAState.pid fraction", lambda: CTAState(_chip(), 2.5, 64), TypeError, "pid"),
    ("CTAState.pid str", lambda: CTAState(_chip(), "1", 64), TypeError, "pid"),
    ("CTAState.pid bool", lambda: CTAState(_chip(), True, 64), TypeError, "pid"),
    ("CTAState.pid negative", lambda: CTAState(_chip(), -1, 64), ValueError, "pid"),
    ("CTA.state", lambda: CTA(5), TypeError, "state"),
    ("Finding.line str", lambda: Finding("3", 0, "m"), TypeError, "line"),
    ("Finding.col negative", lambda: Finding(1, -1, "m"), ValueError, "col"),
    ("Finding.cell fraction", lambda: Finding(1, 0, "m", "f", 1.5), TypeError, "cell"),
    ("Finding.message None", lambda: Finding(1, 0, None), TypeError, "message"),
    ("KernelSourceError.findings str", lambda: KernelSourceError("abc"), TypeError, "findings"),
    ("Profile.builtins unknown", lambda: Profile("p", {}, frozenset({"nope"}), frozenset()), ValueError, "builtins"),
    ("Profile.builtins int", lambda: Profile("p", {}, frozenset({3}), frozenset()), TypeError, "builtins"),
    ("Profile.builtins dict key", lambda: Profile("p", {}, {3: len}, frozenset()), TypeError, "builtins"),
    ("Profile.value_attributes ints", lambda: Profile("p", {}, frozenset(), frozenset({1})), TypeError,
     "value_attributes"),
    ("Profile.forbidden_nodes str", lambda: Profile("p", {}, frozenset(), frozenset(), forbidden_nodes="Try"),
     TypeError, "forbidden_nodes"),
    ("Profile.allowed_nodes list", lambda: Profile("p", {}, frozenset(), frozenset(), allowed_nodes=[int]),
     TypeError, "allowed_nodes"),
]


@pytest.mark.parametrize("label, call, error, name", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_clear_error_naming_it(label, call, error, name):
    start = time.monotonic()
    with pytest.raises((TypeError, ValueError)) as err:
        call()
    assert isinstance(err.value, error), (label, type(err.value).__name__, str(err.value))
    assert not isinstance(err.value, (MemoryError, OverflowError)), (label, str(err.value))
    assert name.lower() in str(err.value).lower(), (label, str(err.value))
    assert time.monotonic() - start < 10, label


def test_good_input_still_works():
    """The entry points above, fed values they mean."""
    t = Tile((2, 3))
    assert t.shape == (2, 3) and t.dtype == np.float64 and not t.view(np.ndarray).any()   # zeros, not garbage
    assert Tile(3, dtype=bool).dtype == np.bool_ and Tile(np.int64(3), dtype=int).dtype == np.int64
    assert Tile((0,)).size == 0

    nb = _notebook([{"cell_type": "markdown", "source": 5},        # only code cells are read
                    {"cell_type": "code", "source": ["%time\n", "x = 1"]}, {"cell_type": "code"}])
    assert code_cells(nb) == ["\nx = 1", ""]
    assert code_cells('{"a": 1}') == ['{"a": 1}']                  # JSON that is no notebook is a file's text
    assert code_cells("{" * 100_000) == ["{" * 100_000]            # JSON nested past the parser: not a notebook
    fns = rebuild_from_text(_notebook([{"cell_type": "code", "source": ["def kernel(cta):\n", "    pass\n"]}]),
                            ("kernel",), CHIP_PROFILE)
    assert set(fns) == {"kernel"}

    register_kernel_code(compile("def f():\n    return 1\n", "<x>", "exec"))
    register_kernel_code(_chip.__code__)

    chip = _chip(order=[1, 0])
    assert chip.launch(lambda cta: None, grid=2).order == [1, 0]
    assert chip.launch(lambda cta: None, grid=3).order == [0, 1, 2]  # an order of another length: in sequence
    assert _chip(order=(np.int64(2), 0, 1)).launch(lambda cta: None, grid=3).order == [2, 0, 1]
    for fn in (lambda g: list(range(g))[::-1], lambda g: range(g), lambda g: np.arange(g)[::-1],
               lambda g: tuple(np.random.default_rng(0).permutation(g))):
        rec = _chip(order=fn).launch(lambda cta: None, grid=4)
        assert sorted(rec.order) == [0, 1, 2, 3] and all(type(p) is int for p in rec.order)
    assert _chip(seed=2 ** 63 + 5, order="shuffled").launch(lambda cta: None, grid=3).grid == 3
    assert [1] not in chip and 5 not in chip and "Q" in chip

    assert Holding("tile", "Q[0:2]", np.int64(8), has_data=True).size == 8
    sram = SRAM(10)
    h = sram.hold("x", 3)
    sram.release(np.int64(h))
    assert sram.used == 0
    with pytest.raises(ValueError, match="already released"):
        sram.release(h)

    def facade_calls():
        A = NP.ones((3, 3))
        np.testing.assert_array_equal(NP.clip(A, -math.inf, 0.5), np.full((3, 3), 0.5))
        assert NP.full(2, -math.inf)[0] == -math.inf
        assert NP.full(2, True, dtype=bool).all() and NP.full(2, 3, dtype=int)[1] == 3
        assert NP.full_like(A > 0, False).dtype == np.bool_                     # a mask's dtype: a bool fill
        assert NP.full_like(NP.arange(3), 7)[2] == 7
        np.testing.assert_array_equal(NP.tril(A, k=10), np.ones((3, 3)))          # past the side: all of it
        np.testing.assert_array_equal(NP.triu(A, k=-10), np.ones((3, 3)))
        assert NP.sum(A, axis=-1).shape == (3,) and NP.max(A, axis=(0, 1), keepdims=np.True_).shape == (1, 1)
        assert NP.zeros((0, 5)).size == 0
        assert bool(NP.all(A > 0)) and not bool(NP.any(A < 0)) and bool((A > 0).all(axis=0).any())   # masks reduce

    _in_cta(facade_calls)
    rnd = facade.checked_builtins()["round"]
    assert rnd(np.float64(1.25), 1) == 1.2 and rnd(12345, -2) == 12300 and rnd(1e300, 400) == 1e300

    chip = _ran_chip(2)
    assert modelled_time(chip, per_cta_cap=80e9)["total"] > 0
    assert math.isfinite(modelled_time(chip, per_cta_cap=1.0)["total"])
    assert math.isfinite(modelled_time(chip, kernel_overhead=1e300)["total"])

    assert Program(chip).M == 64 and isinstance(CTA(CTAState(chip, 3, 64)), CTA)
    assert str(Finding(2, 0, "m", "f", 0)) == "cell 1, line 2, in f: m"
    assert isinstance(Profile("p", {}, frozenset({"len"}), frozenset({"T"}), allowed_nodes=None), Profile)
    assert isinstance(types.CodeType, type)
