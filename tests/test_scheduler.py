"""labcore.scheduler: the one list-scheduling simulation, on hand-worked cases."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from labcore.scheduler import SCHEDULE_ORDERS, dispatch_order, list_schedule, simulate_dispatch


def test_launch_order_puts_the_long_item_last():
    s = list_schedule([1, 1, 1, 1, 4], 2, order="launch")
    assert s.makespan == 6.0
    assert s.slot.tolist() == [0, 1, 0, 1, 0]
    assert s.start.tolist() == [0, 0, 1, 1, 2]
    assert s.slot_busy.tolist() == [6.0, 2.0]
    assert s.slot_idle.tolist() == [0.0, 4.0]
    assert s.ratio == pytest.approx(6 / 4)


def test_longest_first_balances_it():
    for order in ("longest_first", "lpt"):
        s = list_schedule([1, 1, 1, 1, 4], 2, order=order)
        assert s.makespan == 4.0 and s.ratio == 1.0 and s.slot_idle.tolist() == [0.0, 0.0]
        assert s.order.tolist() == [4, 0, 1, 2, 3]


def test_graham_lpt_example_is_seven_sixths():
    s = list_schedule([3, 3, 2, 2, 2], 2, order="lpt")
    assert s.makespan == 7.0
    assert s.ratio == pytest.approx(7 / 6)          # optimum is 6: the LPT bound 4/3 - 1/(3*2) is reached
    assert s.lower_bound == 6.0


def test_item_overhead_and_more_slots_than_items():
    s = list_schedule([2, 1], 4, item_overhead=0.5)
    assert s.makespan == 2.5 and s.slot.tolist() == [0, 1]
    assert s.slot_busy.tolist() == [2.5, 1.5, 0.0, 0.0]
    assert s.ratio == pytest.approx(2.5 / (4.0 / 4))


def test_empty_and_explicit_permutation():
    s = list_schedule([], 3)
    assert s.makespan == 0.0 and s.ratio == 1.0
    assert dispatch_order([5, 1, 3], np.array([2, 0, 1])).tolist() == [2, 0, 1]
    assert list_schedule([5, 1, 3], 1, order=np.array([2, 0, 1])).start.tolist() == [3, 8, 0]


def test_simulate_dispatch_lets_an_item_wait_on_an_earlier_one():
    ends = {}

    def run(i, slot, t):                           # item 1 may not end before item 0 does, plus 1
        ends[i] = max(t + 1.0, ends.get(i - 1, 0.0) + 1.0) if i else t + 3.0
        return ends[i]

    slot, start, end = simulate_dispatch([0, 1], 2, run)
    assert end.tolist() == [3.0, 4.0] and start.tolist() == [0.0, 0.0]


def test_errors():
    with pytest.raises(ValueError, match="order must be one of"):
        list_schedule([1, 2], 2, order="random")
    with pytest.raises(ValueError, match="permutation"):
        list_schedule([1, 2], 2, order=np.array([0, 0]))
    with pytest.raises(ValueError, match=">= 0"):
        list_schedule([1, -1], 2)
    with pytest.raises(ValueError, match="1-D"):
        list_schedule([[1]], 2)
    with pytest.raises(ValueError, match=">= 1"):
        list_schedule([1], 0)
    with pytest.raises(TypeError):
        list_schedule(["a"], 1)
    with pytest.raises(ValueError, match="before its start"):
        simulate_dispatch([0], 1, lambda i, s, t: t - 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=40), st.integers(1, 9),
       st.sampled_from(SCHEDULE_ORDERS))
def test_schedule_invariants(costs, slots, order):
    s = list_schedule(costs, slots, order=order)
    assert s.makespan >= s.lower_bound - 1e-9
    assert s.makespan <= s.ideal + max(costs) + 1e-9          # greedy list scheduling: at most ideal + longest
    assert np.isclose(s.slot_busy.sum(), sum(costs))
    for k in range(slots):                                    # items on one slot never overlap
        idx = np.where(s.slot == k)[0]
        e, b = np.sort(s.end[idx]), np.sort(s.start[idx])
        assert np.all(b[1:] >= e[:-1] - 1e-9)
    if order != "launch":                                     # both sort by decreasing cost
        assert np.all(np.diff(s.costs[s.order]) <= 0)
