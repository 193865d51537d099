"""The scheduling chapters' modules refuse what they cannot mean, as the engine's core does.

Every public function of ``scheduler``, ``split_plans``, ``paged``, ``mla``, ``varlen``, ``mixed_batch``,
``causal_schedule``, ``backward_schedule`` and ``prefill_schedule`` is listed in :data:`CASES` with one call that
works and the kind of each of its arguments. Hypothesis then replaces one argument at a time by a value of the
wrong kind (a fraction, a bool or a string for a count; a truthy string for a flag; NaN or inf for a time; a float
block table; a string where a list of arrays is expected; ...) and requires a ValueError or TypeError whose message
names that argument. A size far beyond any machine must be a ValueError too (or a result), within seconds and
never a MemoryError: the test runs under an address-space limit, so an allocation the check missed fails here
instead of swapping the machine. Numpy scalars stand for Python ones everywhere.
"""
from __future__ import annotations

import contextlib
import inspect
import math
import re
import resource
import signal
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labcore
from labcore import (backward_schedule, causal_schedule, mixed_batch, mla, paged, prefill_schedule, scheduler,
                     split_plans, varlen)
from labcore.hbm import Ledger
from labcore.waves import MEMORY_RULES

MODULES = (scheduler, split_plans, paged, mla, varlen, mixed_batch, causal_schedule, backward_schedule,
           prefill_schedule)


# --------------------------------------------------------------------------------------------------------------
# The kinds of argument, and the wrong values of each kind
# --------------------------------------------------------------------------------------------------------------

class Kind:
    """An argument's kind: ``bad(good)`` is a strategy of values it must refuse; ``size`` marks a count that sets
    how much a call allocates or loops (it gets the huge-size test)."""

    size = False

    def bad(self, good):
        raise NotImplementedError


_NOT_A_NUMBER = st.one_of(st.text(max_size=4), st.sampled_from(["128", "1.5", "True", ""]), st.just({"a": 1}))


class Count(Kind):
    """An integer count >= ``minimum`` (numpy integers and whole floats welcome); None where ``none`` says so."""

    def __init__(self, minimum=1, *, size=False, none=False, maximum=None):
        self.minimum, self.size, self.none, self.maximum = minimum, size, none, maximum

    def bad(self, good):
        s = [st.floats().filter(lambda f: not (math.isfinite(f) and f.is_integer())),   # 2.5, NaN, inf
             st.booleans(), st.sampled_from([np.True_, np.float64(2.5)]), _NOT_A_NUMBER,
             st.integers(max_value=self.minimum - 1).map(lambda i: max(i, -(2 ** 70)))]
        if not isinstance(self, CountOrArray):
            s.append(st.just([1, 2]))
        if self.maximum is not None:
            s.append(st.integers(self.maximum + 1, self.maximum + 100))
        if not self.none:
            s.append(st.none())
        return st.one_of(s)


class CountOrArray(Count):
    """An integer count or an array of them (vectorised)."""

    def bad(self, good):
        return st.one_of(super().bad(good), st.just(np.array([2.5, 1.0])), st.just(np.array([True])),
                         st.just(np.array([self.minimum - 1])), st.just(np.array([], int)))


class Flag(Kind):
    def bad(self, good):
        return st.one_of(st.sampled_from(["False", "True", "", "no"]), st.integers(), st.none(), st.floats(),
                         st.just(np.array([True])))


class Real(Kind):
    """A finite real in ``[minimum, maximum]`` (``open_min``: above the minimum); None where ``none`` says so."""

    def __init__(self, minimum=None, maximum=None, *, open_min=False, none=False):
        self.minimum, self.maximum, self.open_min, self.none = minimum, maximum, open_min, none

    def bad(self, good):
        s = [st.sampled_from([math.nan, math.inf, -math.inf, np.float64("nan")]), st.booleans(), _NOT_A_NUMBER]
        if self.minimum is not None:
            s.append(st.floats(max_value=self.minimum, exclude_max=not self.open_min, allow_nan=False,
                               allow_infinity=False))
        if self.maximum is not None:
            s.append(st.floats(min_value=self.maximum, exclude_min=True, allow_nan=False, allow_infinity=False))
        if not self.none:
            s.append(st.none())
        return st.one_of(s)


class Choice(Kind):
    def __init__(self, allowed):
        self.allowed = tuple(allowed)

    def bad(self, good):
        return st.one_of(st.text(max_size=12).filter(lambda t: t not in self.allowed), st.integers(), st.none(),
                         st.just(list(self.allowed[:1])))


class Names(Choice):
    """A non-empty list or tuple of distinct names from ``allowed``."""

    def bad(self, good):
        return st.one_of(st.sampled_from(self.allowed),                       # one string: never read letter by letter
                         st.just(()), st.just([]), st.just(["nope"]), st.just([self.allowed[0]] * 2), st.none(),
                         st.integers())


class Array(Kind):
    """A finite real array of the good value's shape; ``empty``: an empty array is allowed; ``minus_inf``: -inf is
    a value it may hold (a log-sum-exp)."""

    def __init__(self, *, empty=False, minus_inf=False):
        self.empty, self.minus_inf = empty, minus_inf

    def bad(self, good):
        good = np.asarray(good, float)
        spoiled = []
        for v in (np.nan, np.inf) if self.minus_inf else (np.nan, np.inf, -np.inf):
            if good.size:
                a = good.copy()
                a.flat[good.size // 2] = v
                spoiled.append(a)
        s = [st.sampled_from(spoiled)] if spoiled else []
        s += [st.text(max_size=4), st.none(), st.just(np.array(["a", "b"])), st.just([[1.0], [1.0, 2.0]]),
              st.just(good.astype(bool)), st.just(good[..., None] if good.ndim else np.zeros((1, 1, 1, 1)))]
        if not self.empty and good.ndim:
            s.append(st.just(np.zeros((0,) + good.shape[1:])))
        return st.one_of(s)


class Ints(Kind):
    """An array of integers (lengths, offsets, block tables, permutations): floats, even whole ones, are refused."""

    def __init__(self, *, minimum=0, empty=False, none=False):
        self.minimum, self.empty, self.none = minimum, empty, none

    def bad(self, good):
        good = np.asarray(good)
        s = [st.just(good.astype(float)), st.just(good + 0.5), st.just(good.astype(bool)),
             st.sampled_from(["128", "0,1", ""]), st.just(np.array(["1", "2"])), st.just(np.array([[[1]]]))]
        if not self.none:
            s.append(st.none())
        if good.size:
            low = good.copy()
            low.flat[0] = self.minimum - 1
            s.append(st.just(low))
        if not self.empty:
            s.append(st.just(np.zeros((0,) * good.ndim, int)))
        return st.one_of(s)


class Arrays(Kind):
    """A list or tuple of arrays, one per request."""

    def bad(self, good):
        nan = [np.array(a, float) for a in good]
        nan[-1] = np.full((max(1, len(nan[-1])), nan[-1].shape[1]), np.nan)
        return st.one_of(st.sampled_from(["KV", "abc"]), st.just(np.asarray(good[0])), st.just([]), st.none(),
                         st.just(nan), st.just({0: good[0]}), st.just([good[0], "x"]))


class Instance(Kind):
    def __init__(self, *, none=False):
        self.none = none

    def bad(self, good):
        s = [st.integers(), st.text(max_size=4), st.just({"name": "lean"})]
        return st.one_of(s if self.none else [*s, st.none()])


class Gpu(Kind):
    def bad(self, good):
        return st.one_of(st.integers(), st.none(), st.sampled_from(["H900", "", "gpu"]), st.just(["H100-SXM"]))


class Callable(Kind):
    def bad(self, good):
        return st.one_of(st.integers(), st.none(), st.text(max_size=3))


class Label(Kind):
    """A name used in messages: a string."""

    def bad(self, good):
        return st.one_of(st.integers(), st.none(), st.just(["q"]))


# --------------------------------------------------------------------------------------------------------------
# One working call of every public function, and its arguments' kinds
# --------------------------------------------------------------------------------------------------------------

def _attention_inputs(n_q=5, n_k=6, d=4, d_v=3):
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d)), rng.standard_normal((n_k, d_v))
    O, lse = labcore.reference_attention(Q, K, V)
    return dict(Q=Q, K=K, V=V, O=O, dO=rng.standard_normal(O.shape), lse=lse)


def _mla_inputs(h=2, s_q=2, n=5, d_c=3, d_nope=4, d_rope=2, d_v=3):
    rng = np.random.default_rng(1)
    return dict(q_nope=rng.standard_normal((h, s_q, d_nope)), q_rope=rng.standard_normal((h, s_q, d_rope)),
                c_kv=rng.standard_normal((n, d_c)), k_rope=rng.standard_normal((n, d_rope)),
                W_UK=rng.standard_normal((h, d_c, d_nope)), W_UV=rng.standard_normal((h, d_c, d_v)))


def _request_inputs(lengths=(3, 0, 5), g=2, d=4):
    rng = np.random.default_rng(2)
    return (rng.standard_normal((len(lengths), g, d)), [rng.standard_normal((n, d)) for n in lengths],
            [rng.standard_normal((n, d)) for n in lengths])


_q, _Ks, _Vs = _request_inputs()
_k_cache, _v_cache, _table, _L = paged.paginate(_Ks, _Vs, page_size=2, shuffle_seed=3)
_PLAN = split_plans.plan_lean([3, 0, 5], num_ctas=2)
_ATT = _attention_inputs()
_MLA = _mla_inputs()
_f32 = np.float32([1.0, 2.0, -3.0])
GPU = "H100-SXM"
_BIG_SIZE = dict(size=True)

COUNT, COUNT0 = Count(), Count(0)
SIZE, SIZE0 = Count(**_BIG_SIZE), Count(0, **_BIG_SIZE)
FLAG, GPU_KIND = Flag(), Gpu()
TIME, TIME0 = Real(0, open_min=True), Real(0)
SCALE = Real(0, open_min=True, none=True)
GENERATION = Choice(("fa2", "fa3", "fa4"))
MEMORY_RULE = Choice(MEMORY_RULES)


class TileRows(Kind):
    """The decodes' tile rows of the mixed batch: a name from ``allowed`` or a whole count of rows >= ``minimum``."""

    def __init__(self, allowed, minimum):
        self.allowed, self.minimum = tuple(allowed), minimum

    def bad(self, good):
        return st.one_of(st.text(max_size=12).filter(lambda t: t not in self.allowed), st.none(), st.booleans(),
                         st.sampled_from([2.5, math.nan, math.inf, np.float64(2.5), np.True_]),
                         st.integers(max_value=self.minimum - 1).map(lambda i: max(i, -(2 ** 70))),
                         st.just(list(self.allowed[:1])))


#: The cases' decodes have 8 query heads on 2 KV heads: 4 useful rows, the fewest a tile may have.
TILE_ROWS = TileRows(mixed_batch.DECODE_TILE_ROWS, 4)


class Case:
    """``fn(*args, **kwargs)`` works; ``kinds`` maps every parameter of ``fn`` to its :class:`Kind`."""

    def __init__(self, fn, args=(), kwargs=None, kinds=None, *, name=None):
        self.fn, self.kinds, self.name = fn, kinds or {}, name or fn.__name__
        sig = inspect.signature(fn)
        self.bound = sig.bind(*args, **(kwargs or {}))

    def call(self, **override):
        b = self.bound.arguments.copy()
        b.update(override)
        sig = inspect.signature(self.fn)
        args, kwargs = [], {}
        for p in sig.parameters.values():
            if p.name not in b:
                continue
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                args.append(b[p.name])
            elif p.kind == p.VAR_KEYWORD:
                kwargs.update(b[p.name])
            else:
                kwargs[p.name] = b[p.name]
        return self.fn(*args, **kwargs)

    def good(self, name):
        """The working call's value of ``name`` (its default when the call leaves it out)."""
        if name in self.bound.arguments:
            return self.bound.arguments[name]
        return inspect.signature(self.fn).parameters[name].default


CASES = [
    # scheduler
    Case(scheduler.dispatch_order, ([3.0, 1.0, 2.0], "lpt"), kinds=dict(
        costs=Array(empty=True), order=Choice(scheduler.SCHEDULE_ORDERS))),
    Case(scheduler.dispatch_order, ([3.0, 1.0, 2.0], np.array([2, 0, 1])), name="dispatch_order_permutation",
         kinds=dict(costs=Array(empty=True), order=Ints())),
    Case(scheduler.simulate_dispatch, ([1, 0, 2], 2, lambda i, s, t: t + 1.0), kinds=dict(
        order=Ints(empty=True), slots=SIZE, run=Callable())),
    Case(scheduler.list_schedule, ([3.0, 1.0, 2.0], 2), dict(order="lpt", item_overhead=0.5), kinds=dict(
        costs=Array(empty=True), slots=SIZE, order=Choice(scheduler.SCHEDULE_ORDERS), item_overhead=TIME0)),
    Case(scheduler.Schedule.from_times, ([1.0, 2.0], 2, [0, 1], [0, 1], [0.0, 0.0], [1.0, 2.0]),
         name="Schedule.from_times", kinds=dict(costs=Array(empty=True), slots=SIZE, order=Ints(empty=True),
                                                slot=Ints(empty=True), start=Array(empty=True),
                                                end=Array(empty=True))),
    # split_plans
    Case(split_plans.plan_flash_attn, ([5, 0, 300],), dict(num_sms=4, head_dim=64), kinds=dict(
        lengths=Ints(), num_sms=SIZE, group_size=Count(maximum=64), head_dim=COUNT, sm_doubling=FLAG,
        cache_len=Count(size=True, none=True), ctas_per_sm=SIZE)),
    Case(split_plans.plan_flashinfer, ([5, 0, 300],), dict(num_ctas=4, page_size=4), kinds=dict(
        lengths=Ints(), num_ctas=SIZE, chunk_size=Count(size=True, none=True), page_size=SIZE, cuda_graph=FLAG)),
    Case(split_plans.plan_lean, ([5, 0, 300],), dict(num_ctas=4, block_n=2), kinds=dict(
        lengths=Ints(), num_ctas=SIZE, block_n=SIZE)),
    Case(split_plans.plan_flashmla, ([5, 0, 300],), dict(num_sm_parts=4, block_n=2), kinds=dict(
        lengths=Ints(), num_sm_parts=SIZE, block_n=SIZE, fixed_overhead_blocks=SIZE0)),
    Case(split_plans.flashinfer_decode_ctas_per_sm, (GPU,), dict(group_size=4), kinds=dict(
        gpu=GPU_KIND, group_size=Count(maximum=64), head_dim=COUNT, dtype_bytes=COUNT, registers_per_thread=COUNT)),
    Case(split_plans.plan_ctas_per_sm, ("flash_attn", GPU), dict(group_size=4), kinds=dict(
        name=Choice(split_plans.SPLIT_PLANS), gpu=GPU_KIND, group_size=COUNT, head_dim=COUNT)),
    Case(split_plans.make_split_plan, ("flashinfer", [5, 0, 300]), dict(num_sms=2, ctas_per_sm=2), kinds=dict(
        name=Choice(split_plans.SPLIT_PLANS), lengths=Ints(), num_sms=SIZE, ctas_per_sm=SIZE,
        group_size=Count(maximum=64), head_dim=COUNT, page_size=SIZE, cache_len=Count(size=True, none=True))),
    Case(split_plans.run_split_plan, (_PLAN, _q, _Ks, _Vs), kinds=dict(
        plan=Instance(), q=Array(), K_list=Arrays(), V_list=Arrays(), scale=SCALE)),
    Case(split_plans.plan_stats, (_PLAN,), dict(group_size=2, chunk_overhead=0.1), kinds=dict(
        plan=Instance(), group_size=COUNT, head_dim=COUNT, time_per_key=TIME, chunk_overhead=TIME0,
        partial_bytes=Count(none=True), out_bytes=COUNT)),
    Case(split_plans.plan_time, (_PLAN, GPU), dict(group_size=2, head_dim=64), kinds=dict(
        plan=Instance(), gpu=GPU_KIND, group_size=COUNT, head_dim=COUNT, dtype_bytes=COUNT,
        memory_rule=MEMORY_RULE, per_cta_cap=SCALE)),
    Case(split_plans.zipf_lengths, (8,), dict(mean=100), kinds=dict(
        batch=SIZE, mean=SIZE, a=Real(1, open_min=True), max_factor=SIZE, seed=SIZE0)),
    # paged
    Case(paged.paginate, (_Ks, _Vs), dict(page_size=2, shuffle_seed=1, spare_pages=1), kinds=dict(
        K_list=Arrays(), V_list=Arrays(), page_size=SIZE, shuffle_seed=Count(0, size=True, none=True),
        spare_pages=SIZE0)),
    Case(paged.gather_pages, (_k_cache, _table[2], 5), kinds=dict(
        cache=Array(empty=True), block_table_row=Ints(), length=SIZE0)),
    Case(paged.paged_decode_attention, (_q, _k_cache, _v_cache, _table, _L), kinds=dict(
        q=Array(), k_cache=Array(empty=True), v_cache=Array(empty=True), block_table=Ints(minimum=-1),
        lengths=Ints(), scale=SCALE)),
    Case(paged.page_waste, ([5, 0, 300], 16), kinds=dict(lengths=Ints(), page_size=CountOrArray(size=True))),
    Case(paged.fa3_forward_tile, (128,), dict(causal=True), kinds=dict(head_dim=COUNT, causal=FLAG)),
    Case(paged.fa3_paged_kv_uses_tma, (128,), dict(head_dim=128, seqlen_q=2, qheads_per_kvhead=4), kinds=dict(
        page_size=COUNT, head_dim=COUNT, seqlen_q=COUNT, qheads_per_kvhead=COUNT, causal=FLAG)),
    # mla
    Case(mla.mla_decode_naive, (), dict(_MLA, causal=True), kinds=dict(
        {k: Array() for k in _MLA}, causal=FLAG, scale=SCALE)),
    Case(mla.mla_decode_absorbed, (), dict(_MLA, causal=True), kinds=dict(
        {k: Array() for k in _MLA}, causal=FLAG, scale=SCALE)),
    Case(mla.mla_intensity, (128,), kinds=dict(h_q_s_q=CountOrArray(), d_qk=COUNT, d_v=COUNT, dtype_bytes=COUNT)),
    Case(mla.gqa_decode_intensity, (np.array([1, 8]),), kinds=dict(rows=CountOrArray(), head_dim=COUNT,
                                                                    dtype_bytes=COUNT)),
    Case(mla.mla_compute_bound_threshold, (), dict(flops=1e15, bandwidth=3e12), kinds=dict(
        flops=SCALE, bandwidth=SCALE, d_qk=COUNT, d_v=COUNT, dtype_bytes=COUNT)),
    Case(mla.mla_decode_roofline, (np.array([1, 64]),), dict(seqlen=np.array([[1024], [4096]])), kinds=dict(
        h_q_s_q=CountOrArray(), seqlen=CountOrArray(), batch=COUNT, flops=SCALE, bandwidth=SCALE, d_qk=COUNT,
        d_v=COUNT, dtype_bytes=COUNT)),
    # varlen
    Case(varlen.check_cu_seqlens, ([0, 2, 5], 5), kinds=dict(cu_seqlens=Ints(), total=COUNT0, name=Label())),
    Case(varlen.flash_attention_forward_varlen, (_ATT["Q"], _ATT["K"], _ATT["V"], [0, 2, 5], [0, 3, 6]),
         dict(block_q=2, block_kv=2, causal=True, ledger=Ledger()), kinds=dict(
             Q=Array(empty=True), K=Array(empty=True), V=Array(empty=True), cu_seqlens_q=Ints(),
             cu_seqlens_k=Ints(), block_q=COUNT, block_kv=COUNT, causal=FLAG, scale=SCALE,
             ledger=Instance(none=True))),
    Case(varlen.varlen_savings, ([3, 0, 5], [4, 1, 5]), dict(d=4, block_q=2, block_kv=2), kinds=dict(
        seqlens_q=Ints(), seqlens_k=Ints(none=True), d=COUNT, block_q=SIZE, block_kv=SIZE, causal=FLAG,
        dtype_bytes=COUNT)),
    Case(varlen.varlen_grid, ([3, 0, 5],), dict(heads=2, block_q=2, num_sms=4), kinds=dict(
        seqlens_q=Ints(), heads=SIZE, block_q=SIZE, num_sms=COUNT)),
    # mixed_batch
    Case(mixed_batch.chunk_prefill_time, (GPU,), dict(chunk=256, context=512, heads=4, head_dim=128), kinds=dict(
        gpu=GPU_KIND, chunk=SIZE, context=SIZE0, heads=SIZE, head_dim=COUNT, generation=GENERATION,
        dtype_bytes=COUNT, prefill_assumptions=None)),
    Case(mixed_batch.fused_step_time, (), dict(prefill_compute=2.0, prefill_memory=1.0, decode_compute=0.5,
                                               decode_memory=3.0, prefill_overhead=0.1, decode_total=3.5),
         kinds=dict(prefill_compute=TIME0, prefill_memory=TIME0, decode_compute=TIME0, decode_memory=TIME0,
                    prefill_overhead=TIME0, decode_overhead=TIME0, prefill_total=Real(0, none=True),
                    decode_total=Real(0, none=True))),
    Case(mixed_batch.mixed_batch_time, (GPU,), dict(chunk=256, context=512, decode_batch=4, decode_seqlen=1024,
                                                   num_q_heads=8, num_kv_heads=2, head_dim=128),
         kinds=dict(gpu=GPU_KIND, chunk=SIZE, context=SIZE0, decode_batch=SIZE, decode_seqlen=SIZE,
                    num_q_heads=SIZE, num_kv_heads=COUNT, head_dim=COUNT, generation=GENERATION,
                    memory_rule=MEMORY_RULE, decode_tile_rows=TILE_ROWS)),
    Case(mixed_batch.mixed_batch_demands, (GPU,), dict(chunk=256, context=512, decode_batch=4, decode_seqlen=1024,
                                                      num_q_heads=8, num_kv_heads=2, head_dim=128),
         kinds=dict(gpu=GPU_KIND, chunk=SIZE, context=SIZE0, decode_batch=SIZE, decode_seqlen=SIZE,
                    num_q_heads=SIZE, num_kv_heads=COUNT, head_dim=COUNT, generation=GENERATION,
                    memory_rule=MEMORY_RULE, decode_tile_rows=TILE_ROWS)),
    Case(mixed_batch.mixed_batch_sweep, (GPU,), dict(chunks=[256, 512], context=512, decode_batch=4,
                                                    decode_seqlen=1024, num_q_heads=8, num_kv_heads=2, head_dim=128),
         kinds=dict(gpu=GPU_KIND, chunks=Ints(minimum=1), context=SIZE0, decode_batch=SIZE, decode_seqlen=SIZE,
                    num_q_heads=SIZE, num_kv_heads=COUNT, head_dim=COUNT, generation=GENERATION,
                    memory_rule=MEMORY_RULE, decode_tile_rows=TILE_ROWS)),
    # causal_schedule
    Case(causal_schedule.benchmark_shapes, ("fa3",), kinds=dict(
        paper=Choice(causal_schedule.BENCHMARK_PAPERS), head_dim=COUNT, hidden=COUNT)),
    Case(causal_schedule.causal_cta_costs, (512,), dict(batch=2, heads=2), kinds=dict(
        seqlen=SIZE, batch=SIZE, heads=SIZE, block_q=SIZE, block_kv=SIZE, tile_time=TIME)),
    Case(causal_schedule.causal_load_balance, (GPU,), dict(seqlen=512, batch=2, heads=2, orders=("launch", "lpt")),
         kinds=dict(gpu=GPU_KIND, seqlen=SIZE, batch=SIZE, heads=SIZE, block_q=SIZE, block_kv=SIZE,
                    ctas_per_sm=SIZE, tile_time=TIME, item_overhead=TIME0,
                    orders=Names(causal_schedule.TILE_ORDERS), head_dim=COUNT)),
    Case(causal_schedule.tile_scheduler_order, (512,), dict(batch=2, heads=2, head_dim=64), kinds=dict(
        seqlen=SIZE, batch=SIZE, heads=SIZE, head_dim=COUNT, block_q=SIZE, element_size=COUNT,
        rule=Choice(causal_schedule.L2_SECTION_RULES))),
    Case(causal_schedule.causal_schedule_table, (GPU,), dict(paper="fa2", head_dim=128), kinds=dict(
        gpu=GPU_KIND, paper=Choice(causal_schedule.BENCHMARK_PAPERS), head_dim=COUNT, block_q=SIZE, block_kv=SIZE,
        ctas_per_sm=SIZE)),
    Case(causal_schedule.l2_section, (4096,), dict(head_dim=128, qhead_per_khead=8), kinds=dict(
        seqlen_k=COUNT, head_dim=COUNT, head_dim_v=Count(none=True), element_size=COUNT, qhead_per_khead=COUNT,
        pack_gqa=FLAG, rule=Choice(causal_schedule.L2_SECTION_RULES))),
    # backward_schedule
    Case(backward_schedule.flash_backward_kernel_order, (), dict(_ATT, block_q=2, block_kv=2, causal=True,
                                                                 ledger=Ledger()),
         kinds=dict({k: Array() for k in _ATT}, lse=Array(minus_inf=True), block_q=COUNT, block_kv=COUNT,
                    causal=FLAG, scale=SCALE, mode=Choice(backward_schedule.DQ_MODES), seed=SIZE0,
                    ledger=Instance(none=True))),
    Case(backward_schedule.count_distinct_dq, (), dict(_ATT, block_q=2, block_kv=2, trials=3),
         kinds=dict({k: Array() for k in _ATT}, lse=Array(minus_inf=True), block_q=COUNT, block_kv=COUNT,
                    causal=FLAG, scale=SCALE, mode=Choice(backward_schedule.DQ_MODES), trials=SIZE)),
    Case(backward_schedule.dq_ulp_differences, (_f32, _f32 + 1), kinds=dict(a=Array(), b=Array())),
    Case(backward_schedule.dq_atomic_counts, (64, 8), dict(block_q=16, block_kv=16, causal=True, N_k=80),
         kinds=dict(N=COUNT, d=COUNT, block_q=COUNT, block_kv=COUNT, causal=FLAG, N_k=Count(none=True))),
    Case(backward_schedule.dq_serialisation_time, (64,), dict(block_q=16, block_kv=16, tile_time=1.0, add_time=0.1,
                                                              heads=2, slots=4, causal=True),
         kinds=dict(N=SIZE, block_q=SIZE, block_kv=SIZE, tile_time=TIME, add_time=TIME0, heads=SIZE, slots=SIZE,
                    causal=FLAG, row_order=Choice(backward_schedule.ROW_ORDERS), N_k=Count(size=True, none=True))),
    Case(backward_schedule.deterministic_backward_time, (64,), dict(block_q=16, block_kv=16, tile_time=1.0,
                                                                    add_time=0.1, heads=2, slots=4, causal=True),
         kinds=dict(N=SIZE, block_q=SIZE, block_kv=SIZE, tile_time=TIME, add_time=TIME0, heads=SIZE, slots=SIZE,
                    causal=FLAG, design=Choice(backward_schedule.DETERMINISTIC_DESIGNS), buffer_time=TIME0,
                    head_dim=COUNT, N_k=Count(size=True, none=True))),
    Case(backward_schedule.fa2_deterministic_splits, (132, 16), kinds=dict(num_sms=SIZE, batch_heads=SIZE)),
    # prefill_schedule
    Case(prefill_schedule.prefill_ctas_per_sm, (GPU, "fa2", 128), kinds=dict(
        gpu=GPU_KIND, generation=GENERATION, head_dim=COUNT, block_q=COUNT)),
    Case(prefill_schedule.overlap_cycles, (100.0, 50.0, 0.5), kinds=dict(
        mma=TIME0, softmax=TIME0, omega=Real(0, 1))),
    Case(prefill_schedule.ablation_overlap, (100.0, 50.0, 570e12, 661e12), kinds=dict(
        mma=TIME, softmax=TIME, before=TIME, after=TIME)),
    Case(prefill_schedule.kernel_makespan, (1024,), dict(reps=4, slots=8, tile_time=1e-6, startup=1e-7, block_q=128,
                                                         block_kv=128, causal=True), kinds=dict(
        seqlen=SIZE, reps=SIZE, slots=SIZE, tile_time=TIME, startup=TIME0, block_q=SIZE, block_kv=SIZE, causal=FLAG,
        backward=FLAG, order=Choice(scheduler.SCHEDULE_ORDERS))),
]

# (case, argument) pairs, and the count arguments that set a size
ARGS = [(c, a) for c in CASES for a, k in c.kinds.items() if k is not None]
SIZES = [(c, a) for c, a in ARGS if isinstance(c.kinds[a], Count) and c.kinds[a].size]


def _id(pair):
    return f"{pair[0].name}-{pair[1]}"


# --------------------------------------------------------------------------------------------------------------
# Guards: a hang is a failure after a while, and an allocation beyond the limit a MemoryError, not swapping
# --------------------------------------------------------------------------------------------------------------

#: Seconds one call may take before it counts as a hang: every working call here takes milliseconds, and a
#: refusal is immediate, so this is generous even on a loaded machine.
HANG = 60
#: Address space a call may add to the test process (bytes).
ROOM = 3 * 2 ** 30


class Hung(Exception):
    pass


@contextlib.contextmanager
def _guarded():
    """No call beyond :data:`HANG` seconds (SIGALRM, main thread only) or :data:`ROOM` bytes of new memory."""
    main = threading.current_thread() is threading.main_thread()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    limit = vm + ROOM if hard == resource.RLIM_INFINITY else min(hard, vm + ROOM)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    if main:
        def _raise(*_):
            raise Hung(f"no answer within {HANG} s")
        old = signal.signal(signal.SIGALRM, _raise)
        signal.alarm(HANG)
    try:
        yield
    finally:
        if main:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _names(message: str, name: str) -> bool:
    """``name`` stands in ``message`` as a word of its own (any case: "unknown GPU" names ``gpu``)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message, re.IGNORECASE) is not None


# --------------------------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_function_and_argument_has_a_case(module):
    """A function or an argument added later is listed here, so that its checks are tested too."""
    covered = {c.fn: c for c in CASES}
    for name in module.__all__:
        obj = getattr(module, name)
        fns = [obj.from_times] if obj is scheduler.Schedule else [] if isinstance(obj, type) or not callable(obj) \
            else [obj]
        for fn in fns:
            assert fn in covered, f"{module.__name__}.{name} has no case in CASES"
            missing = set(inspect.signature(fn).parameters) - set(covered[fn].kinds)
            assert not missing, f"{module.__name__}.{name}: no kind for {sorted(missing)}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_working_call_works_with_numpy_scalars(case):
    """Each case's call works, and again with every Python int, float and bool argument as a numpy scalar."""
    with _guarded():
        case.call()
        swap = {}
        for name, value in case.bound.arguments.items():
            if isinstance(value, bool):
                swap[name] = np.bool_(value)
            elif isinstance(value, int):
                swap[name] = np.int64(value)
            elif isinstance(value, float):
                swap[name] = np.float64(value)
        case.call(**swap)


@pytest.mark.parametrize("pair", ARGS, ids=_id)
@settings(max_examples=10)
@given(data=st.data())
def test_a_wrong_value_is_refused_by_name(pair, data):
    case, arg = pair
    value = data.draw(case.kinds[arg].bad(case.good(arg)), label=arg)
    with _guarded(), pytest.raises((ValueError, TypeError)) as err:
        case.call(**{arg: value})
    assert not isinstance(err.value, MemoryError)
    assert _names(str(err.value), arg), f"{case.name}({arg}={value!r}): the message does not name {arg}: {err.value}"


@pytest.mark.parametrize("pair", SIZES, ids=_id)
@pytest.mark.parametrize("huge", [2 ** 31, 2 ** 40, 2 ** 62, 10 ** 30])
def test_a_huge_size_is_a_value_error_or_a_result(pair, huge):
    """No MemoryError, no OverflowError, no hang: a size no machine holds is refused by name before allocation."""
    case, arg = pair
    with _guarded():
        try:
            case.call(**{arg: huge})
        except ValueError as exc:
            assert _names(str(exc), arg), f"{case.name}({arg}={huge}): the message does not name {arg}: {exc}"


@pytest.mark.parametrize("value", [2 ** 53 + 1, 10 ** 30, 2 ** 63, np.uint64(2 ** 63), [1, 10 ** 18], np.array([1e30])])
def test_a_count_past_what_a_float64_holds_exactly_is_refused_by_name(value):
    from labcore.checks import MAX_COUNT, int_array, positive_int

    check = int_array if isinstance(value, (list, np.ndarray)) else positive_int
    with pytest.raises(ValueError, match=r"^tokens must be at most 9,007,199,254,740,992"):
        check(value, "tokens")
    assert positive_int(MAX_COUNT, "tokens") == 2 ** 53             # the bound itself is a count
    assert positive_int(5, "tokens", maximum=10 ** 20) == 5         # a caller's own bound replaces it
    assert int_array([3, 4], "tokens").tolist() == [3, 4]


@pytest.mark.parametrize("value", ["128", b"12", [[1, 2], [3]]])
def test_an_int_array_refuses_strings_and_ragged_lists_by_name(value):
    from labcore.checks import int_array

    with pytest.raises(TypeError, match=r"^sizes must be an integer"):
        int_array(value, "sizes")


def test_a_second_probe_s_findings_are_refused_by_name():
    """What a second round of bad calls still got through: each is now a ValueError/TypeError naming its argument,
    raised before the work it would have cost."""
    from labcore import backward_schedule, scheduler, varlen
    from labcore.checks import int_vector
    from labcore.chip import CHIP_PROFILE, Chip, KernelSourceError, Tile, UnknownTensorError, rebuild_from_text
    from labcore.paged import paged_decode_attention

    with pytest.raises(ValueError, match="item_overhead must be finite"):
        scheduler.list_schedule([1.0, 2.0], 2, item_overhead=10 ** 400)       # an int past float64: OverflowError
    with pytest.raises(ValueError, match="run must return a finite end time"):
        scheduler.simulate_dispatch([0, 1], 2, lambda *a: 10 ** 400)
    with pytest.raises(ValueError, match="order asks for 2,097,152 items"):
        scheduler.simulate_dispatch(np.arange(2 * 2 ** 20), 1, lambda i, s, t: t)
    with pytest.raises(TypeError, match="lengths must hold integers, not True or False"):
        int_vector([True, 3], "lengths")                                    # numpy alone reads it as [1, 3]
    z = np.zeros((512, 1))
    with pytest.raises(ValueError, match="trials, block_q and block_kv asks for"):   # refused before any backward
        backward_schedule.count_distinct_dq(z, z, z, z, z, np.zeros(512), block_q=1, block_kv=1, trials=1000)
    with pytest.raises(ValueError, match="V is too large for the blocked forward"):
        varlen.flash_attention_forward_varlen(np.ones((7, 3)), np.ones((9, 3)), np.full((9, 3), 1.7e308),
                                              [0, 3, 7], [0, 4, 9], block_q=2, block_kv=2)
    q, kc = np.ones((2, 1, 4)), np.ones((4, 16, 4))
    with pytest.raises(ValueError, match="block_table asks for"):
        paged_decode_attention(q, kc, kc, np.zeros((2, 2 ** 26 + 8), np.int32), np.array([3, 3]))
    with pytest.raises(ValueError, match="at most 8 dimensions"):
        Tile((1,) * 40)
    chip = Chip(64, {"x": np.arange(4.0)})
    with pytest.raises(ValueError, match="no tensor 'nope' in HBM") as e:
        chip.read_back("nope")
    assert isinstance(e.value, KeyError) and isinstance(e.value, UnknownTensorError)
    with pytest.raises(KernelSourceError, match="nests expressions more than 100 deep"):
        rebuild_from_text("def k(cta):\n    return " + "1+" * 100000 + "1\n", ["k"], CHIP_PROFILE)
    assert rebuild_from_text("def k(cta):\n    return " + "1+" * 50 + "1\n", ["k"], CHIP_PROFILE)["k"]
