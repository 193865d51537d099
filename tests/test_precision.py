"""labcore.precision: correctly rounded casts to FP32/FP16/BF16/FP8, accumulation, overflow.

The oracle is an exact rounding written here in integer/Fraction arithmetic (independent of NumPy and
ml_dtypes); the tests also compare with NumPy's and ml_dtypes' own casts where those are single roundings.
"""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import labcore
from labcore.precision import FORMATS, accumulate, cast, round_to, running_sum

# name -> (precision p in bits incl. the implicit one, minimum normal exponent, overflow result)
SPEC = {"fp32": (24, -126, "inf"), "fp16": (11, -14, "inf"), "bf16": (8, -126, "inf"),
        "fp8_e4m3": (4, -6, "nan"), "fp8_e5m2": (3, -14, "inf")}
NARROW = ("fp16", "bf16", "fp8_e4m3", "fp8_e5m2")


def exact_round(x, dtype: str) -> float:
    """Round-to-nearest-even of ``x`` (a float, or an exact Fraction) to ``dtype``, in exact arithmetic.

    The test oracle: integer and Fraction arithmetic only, no NumPy, no ml_dtypes.
    """
    p, emin, overflow = SPEC[dtype]
    if isinstance(x, float) and math.isnan(x):
        return math.nan
    if isinstance(x, float) and math.isinf(x):
        return x if overflow == "inf" else math.nan
    if x == 0:
        return x if isinstance(x, float) else 0.0
    a = abs(Fraction(x))
    e = a.numerator.bit_length() - a.denominator.bit_length()     # 2**e <= a < 2**(e+2)
    e = e + 1 if a >= Fraction(2) ** (e + 1) else e                 # now 2**e <= a < 2**(e+1)
    e = max(e, emin)                                                # subnormals share emin's spacing
    ulp = Fraction(2) ** (e - p + 1)
    y = round(a / ulp) * ulp                          # Fraction.__round__ rounds half to even
    if y > Fraction(FORMATS[dtype].max):             # beyond the largest finite value even after rounding
        return math.nan if overflow == "nan" else math.copysign(math.inf, x)
    return math.copysign(float(y), x)


def same(a: float, b: float) -> bool:
    """Equal as floating-point data: NaN matches NaN, and the sign of zero counts."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def midpoint(dtype: str, significand: int, exponent: int) -> float:
    """The exact halfway point between two neighbours of ``dtype`` (a tie for round-to-nearest-even)."""
    p, emin, _ = SPEC[dtype]
    m = (1 << (p - 1)) + significand % (1 << (p - 1))
    return math.ldexp(2 * m + 1, exponent - p)        # (m + 1/2) * 2**(exponent - p + 1)


@st.composite
def hard_values(draw, dtype: str):
    """Ties, the floats next to ties, subnormals, values near overflow, specials and random doubles."""
    p, emin, _ = SPEC[dtype]
    emax = math.frexp(FORMATS[dtype].max)[1] - 1
    kind = draw(st.sampled_from(["tie", "near_tie", "subnormal", "overflow", "any", "special"]))
    if kind in ("tie", "near_tie"):
        x = midpoint(dtype, draw(st.integers(0, 2**30)), draw(st.integers(emin - p, emax + 1)))
        if kind == "near_tie":
            x = math.nextafter(x, draw(st.sampled_from([math.inf, -math.inf])))
    elif kind == "subnormal":
        x = draw(st.floats(0, math.ldexp(1, emin), allow_subnormal=True))
    elif kind == "overflow":
        x = FORMATS[dtype].max * draw(st.floats(0.99, 1.2))
    elif kind == "special":
        x = draw(st.sampled_from([0.0, math.inf, math.nan, 5e-324, 1.7976931348623157e308]))
    else:
        x = draw(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))
    return x if draw(st.booleans()) else -x


@pytest.mark.parametrize("dtype", tuple(SPEC))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_round_to_is_one_correct_rounding(dtype, data):
    x = data.draw(hard_values(dtype))
    got = float(round_to(x, dtype))
    assert same(got, exact_round(x, dtype)), (x, got, exact_round(x, dtype))


@pytest.mark.parametrize("dtype", tuple(SPEC))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_round_to_arrays_match_element_by_element(dtype, data):
    xs = data.draw(st.lists(hard_values(dtype), min_size=1, max_size=50))
    got = round_to(np.array(xs), dtype)
    assert got.shape == (len(xs),) and got.dtype == np.float64
    assert all(same(float(g), exact_round(x, dtype)) for g, x in zip(got, xs))
    assert cast(np.array(xs), dtype).dtype == FORMATS[dtype].dtype


@pytest.mark.parametrize("dtype", NARROW)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_agrees_with_numpy_and_ml_dtypes_casts_from_float32(dtype, data):
    """From a float32 value, NumPy's and ml_dtypes' casts are one rounding: labcore must give the same bits."""
    with np.errstate(over="ignore"):
        x = float(np.float32(data.draw(hard_values(dtype))))
        theirs = np.array([x], dtype=np.float32).astype(FORMATS[dtype].dtype)
    ours = cast(x, dtype)
    assert ours.tobytes() == theirs.tobytes() or (np.isnan(float(ours)) and np.isnan(float(theirs[0])))


@settings(max_examples=150, deadline=None)
@given(x=hard_values("fp16"))
def test_fp16_matches_numpy_float64_cast(x):
    """NumPy converts float64 to float16 directly (one rounding): labcore's FP16 is exactly that cast."""
    with np.errstate(over="ignore"):
        theirs = np.float64(x).astype(np.float16)
    assert same(float(round_to(x, "fp16")), float(theirs))


@pytest.mark.parametrize("dtype", ("bf16", "fp8_e4m3", "fp8_e5m2"))
def test_ml_dtypes_float64_cast_rounds_twice_and_labcore_does_not(dtype):
    """Just above a halfway point: ml_dtypes' float64 cast goes through float32 and lands on the tie."""
    eps = FORMATS[dtype].eps
    x = 1 + eps / 2 + 2**-30
    assert float(np.float64(x).astype(FORMATS[dtype].dtype)) == 1.0     # the double rounding labcore avoids
    assert float(round_to(x, dtype)) == 1 + eps == exact_round(x, dtype)
    assert float(round_to(1 + eps / 2, dtype)) == 1.0                    # an exact tie goes to even


def test_reported_inputs():
    assert float(round_to(1 + 2**-8 + 2**-30, "bf16")) == 1.0078125
    assert accumulate([2e38, 2e38], "bf16") == math.inf
    assert running_sum([2e38, 2e38], "bf16")[-1] == math.inf
    assert accumulate([-2e38, -2e38], "bf16") == -math.inf
    assert accumulate([6e4, 6e4], "fp16") == math.inf
    assert accumulate([3e38, 3e38], "fp32") == math.inf
    assert accumulate([5e4, 5e4], "fp8_e5m2") == math.inf


def test_e4m3_has_no_inf_overflow_is_nan_or_saturates():
    assert not FORMATS["fp8_e4m3"].has_inf and FORMATS["fp8_e4m3"].max == 448.0
    got = round_to([448, 464, 464.0001, 480, 1e6, math.inf, -math.inf, math.nan], "fp8_e4m3")
    assert got[:2].tolist() == [448.0, 448.0] and np.isnan(got[2:]).all()
    sat = round_to([464.0001, 1e6, math.inf, -math.inf, math.nan, 3.3], "fp8_e4m3", saturate=True)
    assert sat[:4].tolist() == [448.0, 448.0, 448.0, -448.0] and np.isnan(sat[4]) and sat[5] == 3.25
    assert math.isnan(accumulate([400, 100], "fp8_e4m3"))          # a sum beyond 464 has nowhere to go
    assert round_to(1e6, "fp8_e5m2", saturate=True) == 57344.0


@pytest.mark.parametrize("dtype", tuple(SPEC))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_running_sum_rounds_after_every_addition(dtype, data):
    """Each partial sum is the exact sum of the previous partial sum and the next (rounded) term, rounded."""
    big = FORMATS[dtype].max
    xs = data.draw(st.lists(st.floats(-big / 4, big / 4) | st.floats(-4, 4), min_size=1, max_size=30))
    got = running_sum(xs, dtype)
    acc = None
    for x, g in zip(xs, got):
        t = exact_round(x, dtype)
        if acc is None:
            acc = t
        elif math.isinf(acc) or math.isnan(acc):
            acc = acc + t                              # inf stays inf, NaN stays NaN (t is finite)
        elif Fraction(acc) + Fraction(t) == 0:
            acc = -0.0 if math.copysign(1, acc) < 0 and math.copysign(1, t) < 0 else 0.0   # IEEE 754 §6.3
        else:
            acc = exact_round(Fraction(acc) + Fraction(t), dtype)
        assert same(float(g), acc), (xs, got, acc)


def test_stagnation_and_accumulation_in_fp8():
    assert accumulate(np.r_[16.0, np.full(10, 0.5)], "fp8_e4m3") == 16.0   # 0.5 < half the spacing (1) at 16
    assert accumulate(np.r_[16.0, np.full(10, 0.5)], "fp32") == 21.0
    for dtype in FORMATS:
        assert labcore.l_accumulation_error(2048, dtype)["accumulated"] > 0


def test_formats_describe_the_dtypes():
    for name, f in FORMATS.items():
        assert float(np.array(f.max).astype(f.dtype)) == f.max
        assert f.eps == 2.0 ** -f.mantissa_bits and f.bits == 8 * np.dtype(f.dtype).itemsize
        assert labcore.DTYPES[name] == f.max
    assert FORMATS["bf16"].max == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max) == 3.3895313892515355e38


def test_narrow_arrays_are_accepted_and_bad_input_is_refused():
    assert round_to(np.array([1.5], dtype=ml_dtypes.bfloat16), "fp8_e4m3").tolist() == [1.5]
    with pytest.raises(ValueError, match="dtype must be one of"):
        round_to(1.0, "fp8")
    with pytest.raises(TypeError):
        round_to("1.0", "bf16")
    with pytest.raises(TypeError):
        round_to(1.0, "bf16", saturate="yes")
    with pytest.raises(ValueError, match="NaN"):
        accumulate([1.0, math.nan], "bf16")


@example(x=1 + 2**-8 + 2**-30)
@given(x=st.floats(-1e300, 1e300))
def test_round_to_is_monotone_and_idempotent(x):
    r = float(round_to(x, "bf16"))
    assert same(float(round_to(r, "bf16")), r)
    assert float(round_to(math.nextafter(x, math.inf), "bf16")) >= r


@pytest.mark.parametrize("dtype", NARROW)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_float32_arrays_are_rounded_from_their_own_values(dtype, data):
    """A float32 array is rounded once, from float32 (no detour): the same bits as NumPy's/ml_dtypes' cast."""
    with np.errstate(over="ignore"):
        xs = np.array(data.draw(st.lists(hard_values(dtype), min_size=1, max_size=20)), dtype=np.float32)
        theirs = xs.astype(FORMATS[dtype].dtype)
    ours = cast(xs, dtype)
    assert ours.dtype == FORMATS[dtype].dtype and ours.shape == xs.shape
    u = np.uint8 if ours.itemsize == 1 else np.uint16
    same_bits = ours.view(u) == theirs.view(u)
    assert np.all(same_bits | (np.isnan(ours.astype(np.float64)) & np.isnan(theirs.astype(np.float64))))
    assert all(same(float(o), exact_round(float(x), dtype)) for o, x in zip(ours.astype(np.float64), xs))


@pytest.mark.parametrize("dtype", sorted(FORMATS))
def test_exp_overflow_threshold_is_where_the_rounded_exp_stops_being_finite(dtype):
    """A reader's report: the threshold is where round_to(exp(x)) changes, not ln(max)."""
    t = labcore.exp_overflow_threshold(dtype)
    below = math.nextafter(t, -math.inf)
    assert round_to(np.exp(below), dtype) == FORMATS[dtype].max
    assert not np.isfinite(round_to(np.exp(t), dtype))


def test_fp16_exp_overflows_at_ln_65520_not_ln_65504():
    t = labcore.exp_overflow_threshold("fp16")
    assert math.log(65504) < t and abs(t - math.log(65520)) < 1e-12
    assert round(t, 6) == 11.090111
    assert round_to(np.exp(11.08997), "fp16") == 65504          # the reader's counter-example
    assert round_to(np.exp(math.log(65504)), "fp16") == 65504
    assert abs(labcore.exp_overflow_threshold("fp8_e4m3") - math.log(464)) < 1e-12   # E4M3: the midpoint rounds down
