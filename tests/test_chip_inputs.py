"""labcore.chip refuses what it cannot mean: every public argument, fed values it cannot mean (fractional and boolean
counts, counts as strings, sizes past any memory, NaN and inf where a number must be finite, a string where a
sequence is expected, wrong types), raises a ValueError or TypeError whose message names the argument; never a
MemoryError, a hang, a silent NaN or a string iterated letter by letter.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from labcore.chip import (CHIP_PROFILE, SRAM, Chip, HBMTensor, Profile, modelled_time, rebuild, rebuild_from_text,
                          run_limits)
from labcore.chip import facade
from labcore.chip.cta import CTAState
from labcore.chip.kernel_source import code_cells
from labcore.chip.tile import FlopCounter, as_tile, running

# --- the bad values, by what an argument is ---------------------------------------------------------------------------
COUNT = st.one_of(st.floats(0.1, 1e6).filter(lambda x: not float(x).is_integer()), st.booleans(),
                  st.integers(1, 10 ** 6).map(str), st.none(), st.just(float("nan")), st.just(float("inf")),
                  st.lists(st.integers(1, 3), min_size=1, max_size=3))
HUGE = st.integers(10 ** 9, 10 ** 15)
NOT_POSITIVE = st.integers(-10 ** 6, 0)
NAME = st.one_of(st.integers(), st.floats(allow_nan=False), st.none(), st.tuples(st.text(max_size=2)),
                 st.just(b"Q"))
TEXTS = st.text(min_size=1, max_size=6)
SHAPE = st.one_of(TEXTS, st.floats(0.5, 10).filter(lambda x: not float(x).is_integer()), st.booleans(),
                  st.integers(-10, -1), st.tuples(st.integers(1, 3), st.just(2.5)), st.just((1, 2, 3, 4)),
                  st.tuples(st.just(10 ** 6), st.just(10 ** 6)), st.none())
RANGE = st.one_of(TEXTS, st.tuples(st.floats(0.1, 0.9), st.integers(1, 2)), st.just((0, 1, 2)), st.just((-1, 1)),
                  st.just((0, 10 ** 6)), st.just((2, 1)), st.tuples(st.booleans(), st.booleans()), st.integers())
REAL_ARRAY = st.one_of(TEXTS, st.none(), st.just([[1.0, 2.0], [3.0]]), st.just({"a": 1}), st.just(object()))
FILL = st.one_of(TEXTS, st.none(), st.booleans(), st.just([1.0]))
FINITE_POSITIVE = st.one_of(st.just(float("nan")), st.just(float("inf")), st.floats(-1e9, 0), TEXTS, st.booleans())

D = 8


def _chip():
    return Chip(64, {"Q": np.ones((4, D)), "x": np.zeros(3)})


def _in_kernel(call):
    """Run ``call(cta)`` inside a launched kernel (with a running CTA, as the facade needs)."""
    chip = _chip()
    chip.allocate("O", (4, D))

    def kernel(cta):
        call(cta)

    chip.launch(kernel)


def _in_cta(call):
    chip = _chip()
    state = CTAState(chip, 0, chip.M)
    with running(state):
        call(state)


def _ran_chip():
    chip = _chip()
    chip.launch(lambda cta: None)
    return chip


# (label, function of the bad value, strategy, what the message must name)
CASES = [
    ("Chip.M", lambda v: Chip(v), st.one_of(COUNT, HUGE, NOT_POSITIVE), "M"),
    ("Chip.tensors", lambda v: Chip(4, v), st.one_of(TEXTS, st.lists(st.integers(), max_size=3),
                                                      st.just({"Q": "abc"}), st.just({"1x": [1.0]}),
                                                      st.just({"Q": [[[1.0]]]}), st.just({"Q": None})), "tensors"),
    ("Chip.order", lambda v: Chip(4, order=v), st.one_of(st.sampled_from(["random", "shuffle", ""]), st.integers(),
                                                         st.just((0.5, 1))), "order"),
    ("Chip.seed", lambda v: Chip(4, seed=v), st.one_of(COUNT.filter(lambda v: v is not None), st.integers(-100, -1)),
     "seed"),
    ("Chip.allocate.name", lambda v: _chip().allocate(v, (2,)), NAME, "name"),
    ("Chip.allocate.shape", lambda v: _chip().allocate("y", v), SHAPE, "shape"),
    ("Chip.allocate.fill", lambda v: _chip().allocate("y", (2,), fill=v), FILL, "fill"),
    ("Chip.launch.kernel", lambda v: _chip().launch(v), st.one_of(TEXTS, st.integers(), st.none()), "kernel"),
    ("Chip.launch.grid", lambda v: _chip().launch(lambda cta: None, grid=v), st.one_of(COUNT, HUGE, NOT_POSITIVE),
     "grid"),
    ("Chip.read_back.name", lambda v: _chip().read_back(v), NAME, "name"),
    ("cta.load.name", lambda v: _in_kernel(lambda cta: cta.load(v)), NAME, "name"),
    ("cta.load.rows", lambda v: _in_kernel(lambda cta: cta.load("Q", rows=v)), RANGE, "rows"),
    ("cta.load.cols", lambda v: _in_kernel(lambda cta: cta.load("Q", cols=v)), RANGE, "cols"),
    ("cta.buffer.shape", lambda v: _in_kernel(lambda cta: cta.buffer(v)), SHAPE, "shape"),
    ("cta.buffer.fill", lambda v: _in_kernel(lambda cta: cta.buffer(2, fill=v)),
     st.one_of(FILL, st.just(float("nan"))), "fill"),
    ("cta.buffer.name", lambda v: _in_kernel(lambda cta: cta.buffer(2, name=v)), st.one_of(st.integers(), st.none()),
     "name"),
    ("cta.store.value", lambda v: _in_kernel(lambda cta: cta.store("O", v, rows=(0, 1))), REAL_ARRAY, "value"),
    ("cta.store.rows", lambda v: _in_kernel(lambda cta: cta.store("O", np.zeros((1, D)), rows=v)), RANGE, "rows"),
    ("cta.atomic_add.value", lambda v: _in_kernel(lambda cta: cta.atomic_add("O", v, rows=(0, 1))), REAL_ARRAY,
     "value"),
    ("cta.allocate.shape", lambda v: _in_kernel(lambda cta: cta.allocate("y", v)), SHAPE, "shape"),
    ("cta.shape.name", lambda v: _in_kernel(lambda cta: cta.shape(v)), NAME, "name"),
    ("HBMTensor.name", lambda v: HBMTensor(v, [1.0]), NAME, "name"),
    ("HBMTensor.data", lambda v: HBMTensor("Q", v), REAL_ARRAY, "data"),
    ("HBMTensor.empty.shape", lambda v: HBMTensor.empty("Q", v), SHAPE, "shape"),
    ("HBMTensor.empty.fill", lambda v: HBMTensor.empty("Q", 2, v), FILL, "fill"),
    ("SRAM.M", lambda v: SRAM(v), st.one_of(COUNT, HUGE, NOT_POSITIVE), "M"),
    ("SRAM.hold.label", lambda v: SRAM(10).hold(v, 1), st.one_of(st.integers(), st.none()), "label"),
    ("SRAM.hold.elements", lambda v: SRAM(10).hold("x", v), st.one_of(COUNT, HUGE, st.integers(-10, -1)),
     "elements"),
    ("SRAM.hold.since", lambda v: SRAM(10).hold("x", 1, since=v), st.one_of(COUNT.filter(lambda v: v is not None),
                                                                          st.integers(-5, -1), st.integers(5, 99)),
     "since"),
    ("modelled_time.chip", lambda v: modelled_time(v), st.one_of(TEXTS, st.integers(), st.none()), "chip"),
    ("modelled_time.gpu", lambda v: modelled_time(_ran_chip(), v), st.one_of(st.sampled_from(["X100", ""]),
                                                                            st.integers(), st.none()), "gpu"),
    ("modelled_time.dtype_bytes", lambda v: modelled_time(_ran_chip(), dtype_bytes=v),
     st.one_of(COUNT, HUGE, NOT_POSITIVE), "dtype_bytes"),
    ("modelled_time.atomic_bytes", lambda v: modelled_time(_ran_chip(), atomic_bytes=v),
     st.one_of(COUNT, HUGE, NOT_POSITIVE), "atomic_bytes"),
    ("modelled_time.per_cta_cap", lambda v: modelled_time(_ran_chip(), per_cta_cap=v),
     FINITE_POSITIVE, "per_cta_cap"),
    ("modelled_time.kernel_overhead", lambda v: modelled_time(_ran_chip(), kernel_overhead=v),
     st.one_of(st.just(float("nan")), st.just(float("inf")), st.floats(-1e9, -1e-9), TEXTS), "kernel_overhead"),
    ("run_limits.steps", lambda v: run_limits(steps=v).__enter__(), st.one_of(COUNT, NOT_POSITIVE), "steps"),
    ("run_limits.seconds", lambda v: run_limits(seconds=v).__enter__(), FINITE_POSITIVE, "seconds"),
    ("rebuild.fn", lambda v: rebuild(v, CHIP_PROFILE), st.one_of(TEXTS, st.integers(), st.none()), "not a function"),
    ("rebuild.profile", lambda v: rebuild(_chip, v), st.one_of(TEXTS, st.none(), st.integers()), "profile"),
    ("rebuild_from_text.text", lambda v: rebuild_from_text(v, ("kernel",), CHIP_PROFILE),
     st.one_of(st.integers(), st.none(), st.just(b"def kernel(): pass")), "text"),
    ("rebuild_from_text.names", lambda v: rebuild_from_text("def kernel(cta):\n    pass\n", v, CHIP_PROFILE),
     st.one_of(st.just("kernel"), st.just(()), st.just(("not a name",)), st.just((3,)), st.none()), "names"),
    ("rebuild_from_text.filename", lambda v: rebuild_from_text("def kernel(cta):\n    pass\n", ("kernel",),
                                                               CHIP_PROFILE, filename=v),
     st.one_of(st.integers(), st.none()), "filename"),
    ("code_cells.text", lambda v: code_cells(v), st.one_of(st.integers(), st.none(), st.just(["x"])), "text"),
    ("Profile.builtins", lambda v: Profile("p", {}, v, frozenset()),
     st.one_of(st.just(frozenset({"eval"})), st.just(frozenset({"getattr", "len"})), st.just("len"), st.integers()),
     "builtins"),
    ("Profile.modules", lambda v: Profile("p", v, frozenset(), frozenset()),
     st.one_of(st.just({"np": np}), st.just({"_np": (np, frozenset())}), st.just("np"), st.just([("np", np)])),
     "modules"),
    ("Profile.value_attributes", lambda v: Profile("p", {}, frozenset(), v),
     st.one_of(st.just("T"), st.just(["T"]), st.none()), "value_attributes"),
    ("as_tile.x", lambda v: as_tile(v, FlopCounter()), REAL_ARRAY.filter(lambda v: v is not None), "x"),
    ("as_tile.counter", lambda v: as_tile(1.0, v), st.one_of(TEXTS, st.integers()), "counter"),
    # the numpy facade a kernel sees as np
    ("np.zeros.shape", lambda v: _in_cta(lambda s: facade.NP.zeros(v)), st.one_of(SHAPE, HUGE), "shape"),
    ("np.full.fill_value", lambda v: _in_cta(lambda s: facade.NP.full(2, v)),
     st.one_of(TEXTS, st.none(), st.just([1.0]), st.just((1.0, 2.0))), "fill_value"),
    ("np.arange.start", lambda v: _in_cta(lambda s: facade.NP.arange(v)), st.one_of(COUNT.filter(
        lambda v: not isinstance(v, list)), HUGE), "arange"),
    ("np.where.condition", lambda v: _in_cta(lambda s: facade.NP.where(v, 1.0, 0.0)),
     st.one_of(TEXTS, st.just([True, False]), st.just((True,)), st.just(range(3))), "condition"),
    ("np.concatenate.arrays", lambda v: _in_cta(lambda s: facade.NP.concatenate(v)),
     st.one_of(TEXTS, st.just(()), st.just([1.0]), st.just((1.0, 2.0))), "arrays"),
    ("np.einsum.subscripts", lambda v: _in_cta(lambda s: facade.NP.einsum(v, facade.NP.zeros(2))),
     st.one_of(st.integers(), st.just("...i->"), st.just("ij->i"), st.just("i,j->ij")), "subscripts"),
    ("np.exp.argument", lambda v: _in_cta(lambda s: facade.NP.exp(v)),
     st.one_of(TEXTS, st.just((1.0, 2.0)), st.just([1.0]), st.just(range(4)), st.none()), "argument"),
    ("np.sum.axis", lambda v: _in_cta(lambda s: facade.NP.sum(facade.NP.zeros((2, 2)), axis=v)),
     st.one_of(st.floats(0.5, 1.5), TEXTS, st.booleans()), "axis"),
    ("np.tril.k", lambda v: _in_cta(lambda s: facade.NP.tril(facade.NP.zeros((2, 2)), v)),
     st.one_of(st.floats(0.5, 1.5), TEXTS, st.booleans()), "k"),
    ("range.stop", lambda v: facade.checked_builtins()["range"](v), st.one_of(st.floats(0.5, 9.5), TEXTS, HUGE),
     "range"),
    ("float.x", lambda v: facade.checked_builtins()["float"](v), st.sampled_from(["1.5", "1e9", b"1"]), "float"),
]


@pytest.mark.parametrize("label, call, values, name", CASES, ids=[c[0] for c in CASES])
def test_a_bad_argument_is_a_clear_error_naming_it(label, call, values, name):
    @settings(max_examples=12, deadline=None)
    @given(value=values)
    def check(value):
        with pytest.raises((TypeError, ValueError)) as err:
            call(value)
        assert name.lower() in str(err.value).lower(), (label, value, str(err.value))
        assert not isinstance(err.value, MemoryError)

    check()


def test_good_arguments_still_work():
    """The same entry points with values they mean (so that the refusals above are not refusals of everything)."""
    chip = Chip(64, {"Q": np.ones((4, D))}, order="shuffled", seed=3)
    chip.allocate("y", (2, 3), fill=0.0)
    chip.allocate("z", 5)

    def kernel(cta):
        with cta.load("Q", rows=(0, 2), cols=(0, 4)) as t, cta.buffer((2, 4), fill=-np.inf, name="m") as m:
            m[:] = t
            cta.store("y", m[:, :3] + 1.0, rows=(0, 2))
        cta.atomic_add("z", np.ones(5), rows=(0, 5))

    chip.launch(kernel, grid=1)
    np.testing.assert_array_equal(chip.read_back("y"), np.full((2, 3), 2.0))
    assert modelled_time(chip, "H100", dtype_bytes=4, kernel_overhead=0.0)["total"] > 0
    assert SRAM(10).hold("x", 3, since=0) == 1
    with run_limits(steps=5, seconds=1.0):
        pass
    assert facade.checked_builtins()["range"](0, 10, 3) == range(0, 10, 3)
    assert isinstance(2.0, facade.checked_builtins()["float"]) and facade.checked_builtins()["int"](2.0) == 2


def test_arrays_that_would_grow_past_any_chip_are_refused_before_they_are_made():
    """A doubling concatenate in a loop, or a three-way broadcast in np.where, is a ValueError, not a MemoryError."""
    def grow(state):
        x = facade.NP.arange(1024) * 1.0
        for _ in range(20):
            x = facade.NP.concatenate((x, x))

    def cube(state):
        a = facade.NP.arange(512) * 1.0
        facade.NP.where(a[:, None, None] > 0, a[None, :, None], a[None, None, :])

    for call in (grow, cube):
        with pytest.raises(ValueError, match="more than a kernel's arithmetic may"):
            _in_cta(call)
