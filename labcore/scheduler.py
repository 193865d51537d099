"""List scheduling: work items (CTAs, tiles, chunks) of unequal cost dealt to a fixed number of slots.

The one dispatch simulation of the book's schedulers (causal load balancing, the deterministic backward's
semaphore chain, split-KV plans): items are taken in a dispatch order, and each goes to the slot (an SM, or
one of the CTAs an SM holds at once) that becomes free first, lowest slot index on a tie. That is what the
hardware block scheduler does with a grid (it hands the next CTA in ``blockIdx`` order to an SM with room)
and what a persistent kernel does with an atomic tile counter (each resident CTA, when done, takes the next
tile). The two differ only in what each item costs besides its work: a launched CTA pays a prologue, a
persistent CTA pays one atomic fetch per tile (``item_overhead``).

:data:`SCHEDULE_ORDERS`:

- ``"launch"``: the items' own order (FA2's grid order: ``m_block = blockIdx.x``, shortest first per head);
- ``"longest_first"``: the grid launched in decreasing cost (stable), e.g. FA2 with ``m_block`` reversed;
- ``"lpt"``: longest-processing-time first through a persistent scheduler (Graham 1969): the same greedy rule
  on the sorted list; its makespan is at most ``(4/3 - 1/(3 slots))`` times the optimum.

Sources: Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2), 1969 (list
scheduling and the LPT bound); flash-attn ``hopper/tile_scheduler.hpp`` (``DynamicPersistentTileScheduler``,
an atomic tile counter; LPT order for causal masks); FlashAttention-4 (Zadouri et al. 2026) §3.3.
"""
from __future__ import annotations

import heapq
import numbers
from dataclasses import dataclass

import numpy as np

from .checks import MAX_ITEMS, as_real, at_most, choice, int_table, positive_float, positive_int, real_array

__all__ = ["SCHEDULE_ORDERS", "Schedule", "dispatch_order", "simulate_dispatch", "list_schedule"]

#: The dispatch orders :func:`list_schedule` accepts by name.
SCHEDULE_ORDERS = ("launch", "longest_first", "lpt")


@dataclass(frozen=True)
class Schedule:
    """The result of a list-scheduling simulation (times in seconds, or in whatever unit the costs are).

    Attributes:
        costs: (n,) float64 work of each item (without overhead). slots: number of slots.
        order: (n,) int64 item indices in dispatch order.
        slot: (n,) int64 slot each item ran on. start, end: (n,) float64 times of each item.
        slot_busy: (slots,) float64 time each slot spent on items. slot_end: (slots,) time its last item ended.
        makespan: the last end time (0 for no items).
    """

    costs: np.ndarray
    slots: int
    order: np.ndarray
    slot: np.ndarray
    start: np.ndarray
    end: np.ndarray
    slot_busy: np.ndarray
    slot_end: np.ndarray
    makespan: float

    @classmethod
    def from_times(cls, costs, slots: int, order, slot, start, end) -> "Schedule":
        """A :class:`Schedule` from a simulation's per-item ``slot``, ``start`` and ``end`` arrays
        (:func:`simulate_dispatch`); ``slot_busy`` counts ``end - start`` (waits inside an item included).

        Args:
            costs: (n,) finite item costs >= 0 (n may be 0). slots: int in [1, :data:`labcore.checks.MAX_ITEMS`].
            order: (n,) int permutation of ``range(n)``. slot: (n,) ints in ``[0, slots)``.
            start, end: (n,) finite times, ``end >= start``.
        Raises:
            TypeError: an argument of the wrong type (a float order or slot, a string). ValueError: shapes that
            differ, a slot out of range, an order that is not a permutation, an end before its start, NaN/inf, a
            slot's busy time past the largest float64.
        """
        c = _costs(costs)
        slots = positive_int(slots, "slots", maximum=MAX_ITEMS)
        order = _permutation(order, c.size)
        slot = int_table(slot, "slot", ndim=1)
        start = real_array(start, "start", ndim=1, allow_empty=True)
        end = real_array(end, "end", ndim=1, allow_empty=True)
        for name, a in (("slot", slot), ("start", start), ("end", end)):
            if a.shape != c.shape:
                raise ValueError(f"{name} must have one entry per item ({c.size}), got shape {a.shape}")
        if np.any(slot < 0) or np.any(slot >= slots):
            raise ValueError(f"slot must lie in [0, {slots}) everywhere")
        if np.any(end < start):
            raise ValueError("end must be >= start for every item")
        slot, start, end = np.asarray(slot, np.int64), np.asarray(start, float), np.asarray(end, float)
        with np.errstate(over="ignore", invalid="ignore"):   # an overflow is reported below, by name
            busy = np.bincount(slot, weights=end - start, minlength=slots).astype(float)
        if not np.all(np.isfinite(busy)):
            raise ValueError("start and end are too far apart: a slot's busy time (the sum of its items' end - start) "
                             "overflows float64")
        slot_end = np.zeros(slots)
        np.maximum.at(slot_end, slot, end)
        return cls(costs=np.asarray(costs, float), slots=slots, order=np.asarray(order, np.int64), slot=slot,
                   start=start, end=end, slot_busy=busy, slot_end=slot_end,
                   makespan=float(end.max()) if end.size else 0.0)

    @property
    def total_work(self) -> float:
        """Sum of the slots' busy time (work plus overheads)."""
        return float(self.slot_busy.sum())

    @property
    def slot_idle(self) -> np.ndarray:
        """(slots,) time each slot waits idle before the makespan: ``makespan - slot_busy``."""
        return self.makespan - self.slot_busy

    @property
    def ideal(self) -> float:
        """``total_work / slots``: the makespan if the work were perfectly divisible."""
        return self.total_work / self.slots

    @property
    def ratio(self) -> float:
        """``makespan / (total work / slots)`` (>= 1; 1 = no slot ever idle). 1.0 when there is no work."""
        return self.makespan / self.ideal if self.ideal > 0 else 1.0

    @property
    def utilization(self) -> float:
        """``1 / ratio``: the busy fraction of all slots over the makespan."""
        return 1.0 / self.ratio

    @property
    def lower_bound(self) -> float:
        """No schedule finishes sooner than ``max(total work / slots, longest item)``."""
        longest = float((self.end - self.start).max()) if self.end.size else 0.0
        return max(self.ideal, longest)


def _costs(costs) -> np.ndarray:
    c = as_real(costs, "costs")
    if c.ndim != 1:
        raise ValueError(f"costs must be a 1-D array of item costs, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError("costs must be finite and >= 0")
    at_most(c.size, "costs", MAX_ITEMS, "items")
    return c


def _permutation(order, n: int | None = None) -> np.ndarray:
    """``order`` as an int64 permutation of ``range(n)`` (default its own length), else a TypeError/ValueError
    naming it."""
    p = int_table(order, "order", ndim=1)
    at_most(p.size, "order", MAX_ITEMS, "items")        # each item is a step of a Python loop
    n = p.size if n is None else n
    if p.size != n or not np.array_equal(np.sort(p), np.arange(n)):
        raise ValueError(f"order must be a permutation of range({n}), got {p.tolist()[:8]}"
                         f"{' ...' if p.size > 8 else ''}")
    return p


def dispatch_order(costs, order="launch") -> np.ndarray:
    """The item indices in dispatch order.

    Args:
        costs: (n,) item costs (finite, >= 0; n may be 0, at most :data:`labcore.checks.MAX_ITEMS`).
        order: one of :data:`SCHEDULE_ORDERS`, or an explicit permutation of ``range(n)`` (int array).
    Returns:
        (n,) int64 array. ``"longest_first"`` and ``"lpt"`` sort by decreasing cost, ties in index order.
    Raises:
        TypeError: costs not real, an order neither a name nor an integer array (a float array, a ragged list, None).
        ValueError: costs not 1-D, negative, NaN/inf or too many; an unknown order name, or an array that is not a
        permutation of ``range(n)``.
    """
    c = _costs(costs)
    if isinstance(order, str):
        choice(order, "order", SCHEDULE_ORDERS)
        if order == "launch":
            return np.arange(c.size, dtype=np.int64)
        return np.argsort(-c, kind="stable").astype(np.int64)
    return _permutation(order, c.size)


def simulate_dispatch(order, slots: int, run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The one greedy dispatch loop: each item in ``order`` goes to the slot free first (lowest index on ties).

    ``run(item, slot, start) -> end`` says when the item ends if it starts at ``start`` on ``slot``; it may
    depend on items dispatched before it (a semaphore wait, for instance), never on later ones.

    Args:
        order: (n,) int item indices, a permutation of ``range(n)`` (n may be 0).
        slots: int in [1, :data:`labcore.checks.MAX_ITEMS`].
        run: callable as above; it returns the end time, a finite real number >= start (seconds, or the unit of
            the costs).
    Returns:
        ``(slot, start, end)``, each (n,) indexed by item (not by dispatch position).
    Raises:
        TypeError: order not an integer array, slots not an integer, run not callable, or ``run`` returned something
        other than a real number (a string, None, an array, a bool).
        ValueError: order not a permutation, slots out of range; ``run`` returned an end before the start or a
        non-finite time.
    Source:
        Graham 1969 (list scheduling); the CUDA block scheduler / a persistent kernel's tile counter.
    """
    slots = positive_int(slots, "slots", maximum=MAX_ITEMS)
    if not callable(run):
        raise TypeError(f"run must be a callable run(item, slot, start) -> end, got {type(run).__name__}")
    order = _permutation(order)
    n = order.size
    slot, start, end = np.zeros(n, np.int64), np.zeros(n), np.zeros(n)
    free = [(0.0, s) for s in range(slots)]          # (time the slot is free, slot): a heap
    for item in order.tolist():
        t, s = heapq.heappop(free)
        e = _end_time(run(item, s, t), item, s, t)
        slot[item], start[item], end[item] = s, t, e
        heapq.heappush(free, (e, s))
    return slot, start, end


def _end_time(e, item: int, slot: int, start: float) -> float:
    """What ``run(item, slot, start)`` returned, as a finite float >= start, else an error naming ``run``."""
    call = f"run(item={item}, slot={slot}, start={start})"
    # float() would read "3" as 3.0 and turn a one-element array into a number: only a real number is an end time
    if isinstance(e, (bool, np.bool_)) or not isinstance(e, numbers.Real):
        raise TypeError(f"run must return the item's end time, a finite real number of seconds >= its start; "
                        f"{call} returned {e!r} ({type(e).__name__})")
    try:
        e = float(e)
    except OverflowError:                       # an int past the largest float64
        e = np.inf
    if not np.isfinite(e) or e < start:
        raise ValueError(f"run must return a finite end time >= the item's start; {call} ended at {e}, before its "
                         f"start {start} (or not finite)")
    return e


def list_schedule(costs, slots: int, *, order="launch", item_overhead: float = 0.0) -> Schedule:
    """Simulate ``costs`` dealt greedily to ``slots`` slots in a dispatch order.

    Each item takes ``cost + item_overhead`` (a CTA's prologue when launched, or one atomic tile fetch in a
    persistent kernel). Hand-worked: costs ``[1, 1, 1, 1, 4]`` on 2 slots in launch order end at 6 (the 4 starts
    last); longest-first ends at 4 (ratio 1). Graham's LPT example ``[3, 3, 2, 2, 2]`` on 2 slots ends at 7,
    the optimum is 6: ratio 7/6, the LPT bound ``4/3 - 1/6``.

    Args:
        costs: (n,) item costs, finite and >= 0 (seconds, or any unit); n = 0 gives an empty schedule (makespan 0).
        slots: int in [1, :data:`labcore.checks.MAX_ITEMS`] (SMs x CTAs per SM).
        order: ``"launch"``, ``"longest_first"``, ``"lpt"`` or a permutation (:func:`dispatch_order`).
        item_overhead: time added to every item (finite float >= 0).
    Returns:
        :class:`Schedule`.
    Raises:
        TypeError: costs, slots, order or item_overhead of the wrong type (a string, a bool, a fraction for slots).
        ValueError: bad costs (as :func:`dispatch_order`), slots out of range, unknown order, negative or
        non-finite overhead; costs plus ``n x item_overhead`` past the largest float64 (an end time would be inf).
    Source:
        Graham 1969; flash-attn ``hopper/tile_scheduler.hpp``; FlashAttention-4 §3.3.
    """
    c = _costs(costs)
    slots = positive_int(slots, "slots", maximum=MAX_ITEMS)
    oh = positive_float(item_overhead, "item_overhead", allow_zero=True)
    # no item ends later than the whole work done one item after another: bounding that bounds every end time
    with np.errstate(over="ignore"):
        total = float(c.sum()) + c.size * oh
    if not np.isfinite(total):
        raise ValueError(f"costs and item_overhead add up past the largest float64 ({c.size} items of up to "
                         f"{float(c.max()):.3g} plus {oh:.3g} each): the end times would be inf")
    p = dispatch_order(c, order)
    return Schedule.from_times(c, slots, p, *simulate_dispatch(p, slots, lambda i, s, t: t + c[i] + oh))
