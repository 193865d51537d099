"""A mixed batch: one chunked-prefill chunk and a batch of decodes, as two kernels in series or one fused kernel.

Chunked prefill (Sarathi) cuts a long prompt into chunks of ``chunk`` tokens and runs each chunk in the same
iteration as the decode steps of other requests. The chunk's attention (``chunk`` queries against the ``context +
chunk`` keys, bottom-right causal) is compute-bound; the decodes' attention is bound by reading their KV caches.
Run as two kernels they take the sum of their times; POD-Attention runs both in one kernel whose CTAs share the
SMs, so the tensor cores work on the prefill while the memory system streams the decode caches, and the time
approaches the larger of the two.

:func:`chunk_prefill_time` times the chunk with the prefill model's per-tile cost
(:func:`labcore.prefill.prefill_time`'s ``fwd_tile`` cycles: its generation's overlap rule and calibrated MMA
efficiency), its unequal causal CTAs dealt to the kernel's slots (its occupancy, each CTA with the model's start-up
latency) by :func:`labcore.waves.shared_bandwidth_schedule`, and its HBM bytes (every tensor once, as the prefill
model's ``l2_reuse``). :func:`mixed_batch_demands` adds the decode model (:func:`labcore.decode_attention_time`,
by default under the physical memory rule of :mod:`labcore.waves`: the running CTAs share the bandwidth, each capped
at its generation's per-CTA rate, as many per SM as the kernel's resources allow) and states each part's demands;
:func:`fused_step_time` combines them: ``serial = t_prefill + t_decode``; ``fused = max(compute_p + compute_d,
memory_p + memory_d, t_prefill, t_decode)`` (each resource's demand summed, the tensor-core demands as work spread
over every SM; one launch), an optimistic bound for a kernel that shares every SM; ``ideal = max(t_prefill, t_decode)``.

What the bound leaves out: co-resident prefill and decode CTAs must split each SM's shared memory and registers
(fewer of each fit), and their instructions compete for the same issue slots; POD-Attention measures less than
such a bound. The decodes' tensor-core demand depends on how many rows their tiles compute (``decode_tile_rows``):
flash-attn's split kernel pads a GQA group to 64 rows.

Sources: Kamath et al. 2025, POD-Attention (ASPLOS'25, arXiv 2410.18038) (up to 59%, mean 28% faster attention
than serial FlashAttention prefill + decode, A100); Agrawal et al. 2024, Sarathi-Serve (chunked prefill).
"""
from __future__ import annotations

import numpy as np

from .checks import MAX_HEAD_DIM, MAX_ITEMS, at_most, cdiv, choice, int_vector, positive_float, positive_int
from .decode_time import decode_attention_time
from .hardware import get_gpu
from .hbm import causal_block_counts, flash_forward_io
from .prefill import GENERATION_ASSUMPTIONS, PREFILL_DEFAULTS, prefill_time
from .splits import MAX_BATCH, MAX_SEQLEN
from .waves import MEMORY_RULES, per_cta_bandwidth_cap, shared_bandwidth_schedule

__all__ = ["POD_STEP", "chunk_prefill_time", "mixed_batch_demands", "fused_step_time", "mixed_batch_time",
           "mixed_batch_sweep", "DECODE_TILE_ROWS"]

#: A mixed step inside POD-Attention's evaluated range (its GPU, the A100-80GB; contexts of 4K-20K tokens; chunks of
#: 512-2K): Llama-3.1-8B's attention shape (:data:`labcore.DECODE_SHAPES`), 64 decodes of ``context`` cached
#: tokens each, beside a ``chunk``-token prefill chunk after as many cached tokens. One home for the example that
#: a worked computation and an exercise share. Source: Kamath et al. 2025 (POD-Attention), its evaluation's settings.
POD_STEP = {"gpu": "A100-80GB", "shape": "Llama-3.1-8B", "context": 8192, "decode_batch": 64, "chunk": 1024}

#: What :func:`mixed_batch_demands` may charge the decodes' tensor cores for, per CTA: ``"padded"`` (the split
#: kernel's tile, flash-attn's 64 rows: what POD's FlashAttention baseline computes), an int (a tile of that many
#: rows, e.g. 16), or ``"useful"`` (the GQA group's real rows only).
DECODE_TILE_ROWS = ("padded", "useful")

#: The prefill model's dispatch orders by the names the list scheduler takes.
_ORDERS = {"launch": "launch", "longest_first": "longest_first", "lpt": "lpt"}

# The largest element size in bytes: 8 (FP64).
_MAX_DTYPE_BYTES = 8
# The most rows a decode tile may be charged for: 256, the largest tensor-core tile one kernel computes (Blackwell's
# two-CTA MMA), four times flash-attn's 64-row split tile.
_MAX_TILE_ROWS = 256


def chunk_prefill_time(gpu, *, chunk: int, context: int, heads: int, head_dim: int, generation: str = "fa2",
                       dtype_bytes: int = 2, **prefill_assumptions) -> dict:
    """Time of one prefill chunk's attention: ``chunk`` queries after ``context`` cached tokens, causal.

    One CTA per (head, query block of ``block_q`` rows); CTA i visits ``J_i`` key blocks
    (:func:`labcore.hbm.causal_block_counts` with ``N_k = context + chunk``) and costs ``J_i`` tiles of the tile cost
    of :func:`labcore.prefill.prefill_time` (same generation and assumptions), plus the model's start-up latency
    ``cta_latency``. ``compute`` is the makespan of those CTAs on the kernel's slots (SMs x its CTAs per SM, the CTAs on
    one SM sharing its tensor cores; the generation's dispatch order; :func:`labcore.waves.shared_bandwidth_schedule`);
    ``compute_work`` the same tiles spread over every SM without a tail (what a kernel that fills the SMs with other
    work pays). ``memory`` is Q, K, V and O read or written once over the HBM bandwidth; ``total = max(compute,
    memory) + kernel_overhead``.

    Args:
        gpu: preset name or GPU.
        chunk: new tokens (int in [1, :data:`labcore.splits.MAX_SEQLEN`]).
        context: cached tokens before them (int in [0, MAX_SEQLEN]).
        heads: query heads (= KV heads here; int >= 1; ``heads x ceil(chunk / block_q)`` CTAs at most
            :data:`labcore.checks.MAX_ITEMS`).
        head_dim: d (int in [1, 1024]).
        generation: ``"fa2"``, ``"fa3"`` or ``"fa4"``.
        dtype_bytes: 2 (BF16; int in [1, 8]).
        **prefill_assumptions: overrides of :data:`labcore.prefill.PREFILL_DEFAULTS`.
    Returns:
        dict ``total``, ``compute``, ``compute_work``, ``memory``, ``overhead`` (s), ``flops`` (tile FLOPs),
        ``bytes``, ``ctas``, ``ctas_per_sm``, ``tile_time`` (s per tile on a whole SM).

    Raises:
        TypeError: a size that is not an integer, an unknown kind of gpu; as :func:`labcore.prefill.prefill_time`.
        ValueError: sizes out of range, too many CTAs, an unknown generation or GPU; as
            :func:`labcore.prefill.prefill_time`.

    Source: Zadouri et al. 2026 (tile roofline, via labcore.prefill); Agrawal et al. 2024 (chunked prefill).
    """
    g = get_gpu(gpu)
    c, ctx = positive_int(chunk, "chunk", maximum=MAX_SEQLEN), positive_int(context, "context", minimum=0,
                                                                             maximum=MAX_SEQLEN)
    h, d = positive_int(heads, "heads"), positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    choice(generation, "generation", ("fa2", "fa3", "fa4"))
    eb = positive_int(dtype_bytes, "dtype_bytes", maximum=_MAX_DTYPE_BYTES)
    block_q = positive_int(prefill_assumptions.get("block_q", PREFILL_DEFAULTS["block_q"]), "block_q")
    at_most(h * cdiv(c, block_q), "chunk and heads", MAX_ITEMS, "CTAs")
    ref = prefill_time(g, batch=1, heads=h, seqlen=c, head_dim=d, causal=True, generation=generation,
                       **prefill_assumptions)
    p = {**PREFILL_DEFAULTS, **prefill_assumptions}                # the tile sizes and overhead the model uses
    tile = ref["fwd_tile"]["cycles"] / g.model_clock
    cps = int(ref["ctas_per_sm"])
    rows, J, cols = causal_block_counts(c, block_q=p["block_q"], block_kv=p["block_kv"], causal=True, N_k=ctx + c)
    order = p["schedule"] or GENERATION_ASSUMPTIONS[generation]["schedule"]
    by = flash_forward_io(c, d, block_q=c, block_kv=ctx + c, causal=True, N_k=ctx + c) * h * eb
    costs = np.tile(np.asarray(J, float) * tile + float(p["cta_latency"]), h)
    sched = shared_bandwidth_schedule(np.full(costs.size, by / costs.size), slots=g.num_sms * cps,
                                      bandwidth=g.hbm_bandwidth, per_cta_cap=per_cta_bandwidth_cap(g),
                                      compute_time=costs, sms=g.num_sms, order=_ORDERS.get(order, order))
    make = sched.makespan
    mem = by / g.hbm_bandwidth
    oh = float(p["kernel_overhead"])
    # rows x cols may pass int64's range (2^40 queries x 2^41 keys): counted in float64, which cannot wrap
    flops = 4.0 * d * float(np.dot(rows.astype(float), cols.astype(float))) * h
    return {"total": max(make, mem) + oh, "compute": make, "compute_work": float(J.sum()) * h * tile / g.num_sms,
            "memory": mem, "overhead": oh, "flops": flops, "bytes": float(by),
            "ctas": int(J.size * h), "ctas_per_sm": cps, "tile_time": tile}


def mixed_batch_demands(gpu, *, chunk: int, context: int, decode_batch: int, decode_seqlen: int, num_q_heads: int,
                        num_kv_heads: int, head_dim: int, generation: str = "fa2", memory_rule: str = "shared",
                        decode_tile_rows="padded") -> dict:
    """Each part's demands on the tensor cores and on HBM, and its time alone: the inputs of :func:`fused_step_time`.

    Prefill: :func:`chunk_prefill_time` with ``num_q_heads`` heads; its tensor-core demand is its tiles spread over
    every SM (``compute_work``), its HBM demand its bytes at full bandwidth. Decode:
    :func:`labcore.decode_attention_time` (flash-decoding, the model's best split count) under
    ``memory_rule``: ``"shared"`` (default: the physical rule, ``last_wave="shared"``, ``ctas_per_sm="derived"`` and
    :func:`labcore.waves.per_cta_bandwidth_cap`) or ``"lecture"`` (one CTA per SM, the last wave in full, 80 GB/s per
    CTA); its tensor-core demand is its CTAs' FLOPs spread over every SM, on tiles of ``decode_tile_rows`` rows;
    its HBM demand the KV bytes at full bandwidth.

    Args:
        gpu: preset or GPU.
        chunk, context: as :func:`chunk_prefill_time`.
        decode_batch, decode_seqlen: the decodes (ints in [1, :data:`labcore.splits.MAX_BATCH`] and [1,
            :data:`labcore.splits.MAX_SEQLEN`]).
        num_q_heads, num_kv_heads, head_dim: the model's attention shape (ints >= 1; head_dim at most 1024).
        generation: prefill's.
        memory_rule: one of :data:`labcore.waves.MEMORY_RULES`.
        decode_tile_rows: ``"padded"`` (the split kernel's 64-row tile), ``"useful"`` (the group's real rows) or an
            int (rows per tile, at least the group's, at most 256: the largest tensor-core tile a kernel computes).
    Returns:
        dict ``prefill_compute``, ``prefill_memory``, ``decode_compute``, ``decode_memory``, ``prefill_overhead``,
        ``decode_overhead``, ``prefill_total``, ``decode_total`` (s), ``decode_rows`` (rows charged per CTA),
        ``decode_splits``, ``memory_rule``.
    Raises:
        TypeError/ValueError: a size that is not an integer or out of range, named as here; an unknown rule or a bad
        ``decode_tile_rows``; as the two models.
    Source: Kamath et al. 2025 (POD-Attention) §3; flash-attn ``run_mha_fwd_splitkv_dispatch`` (kBlockM = 64).
    """
    g = get_gpu(gpu)
    rule = choice(memory_rule, "memory_rule", MEMORY_RULES)
    positive_int(decode_batch, "decode_batch", maximum=MAX_BATCH)
    positive_int(decode_seqlen, "decode_seqlen", maximum=MAX_SEQLEN)
    positive_int(num_q_heads, "num_q_heads", maximum=MAX_ITEMS)      # heads x query blocks CTAs: MAX_ITEMS at most
    positive_int(num_kv_heads, "num_kv_heads")
    positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    pf = chunk_prefill_time(g, chunk=chunk, context=context, heads=num_q_heads, head_dim=head_dim,
                            generation=generation)
    kw = dict(last_wave="shared", ctas_per_sm="derived", per_sm_bandwidth_cap=per_cta_bandwidth_cap(g)) \
        if rule == "shared" else {}
    de = decode_attention_time(g, batch=decode_batch, seqlen=decode_seqlen, num_q_heads=num_q_heads,
                               num_kv_heads=num_kv_heads, head_dim=head_dim, method="flash_decoding", **kw)
    if isinstance(decode_tile_rows, str):
        rows = de.rows_padded if choice(decode_tile_rows, "decode_tile_rows", DECODE_TILE_ROWS) == "padded" \
            else de.rows_real
    else:
        rows = positive_int(decode_tile_rows, "decode_tile_rows", minimum=de.rows_real,
                            maximum=max(_MAX_TILE_ROWS, de.rows_padded))
    d_compute = de.num_ctas * de.flops_per_cta * rows / de.rows_padded / (de.flops_per_sm * g.num_sms)
    return dict(prefill_compute=pf["compute_work"], prefill_memory=pf["memory"], decode_compute=d_compute,
                decode_memory=de.kv_bytes / g.hbm_bandwidth, prefill_overhead=pf["overhead"],
                decode_overhead=de.launch_time, prefill_total=pf["total"], decode_total=de.total, decode_rows=rows,
                decode_splits=de.num_splits, memory_rule=rule)


def mixed_batch_time(gpu, *, chunk: int, context: int, decode_batch: int, decode_seqlen: int, num_q_heads: int,
                     num_kv_heads: int, head_dim: int, generation: str = "fa2", memory_rule: str = "shared",
                     decode_tile_rows="padded") -> dict:
    """One iteration of a mixed batch: a prefill chunk and ``decode_batch`` decodes, serial and fused.

    The demands of :func:`mixed_batch_demands` (same arguments) combined by :func:`fused_step_time`.

    Returns:
        dict ``prefill``, ``decode`` (s each), ``serial``, ``fused``, ``ideal`` (s), ``speedup`` (serial /
        fused), ``gain`` (serial / fused - 1, POD's "x% faster"), ``bound`` (which demand sets ``fused``), and the
        ``demands``.

    Raises:
        TypeError/ValueError: a size that is not an integer or out of range, named as here; as the two models.

    Source: Kamath et al. 2025 (POD-Attention) §3 (one kernel, SMs shared between prefill and decode CTAs).
    """
    dm = mixed_batch_demands(gpu, chunk=chunk, context=context, decode_batch=decode_batch, decode_seqlen=decode_seqlen,
                             num_q_heads=num_q_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
                             generation=generation, memory_rule=memory_rule, decode_tile_rows=decode_tile_rows)
    r = fused_step_time(**{k: dm[k] for k in ("prefill_compute", "prefill_memory", "decode_compute", "decode_memory",
                                              "prefill_overhead", "decode_overhead", "prefill_total", "decode_total")})
    return {**r, "demands": dm}


def fused_step_time(*, prefill_compute: float, prefill_memory: float, decode_compute: float, decode_memory: float,
                    prefill_overhead: float = 0.0, decode_overhead: float = 0.0, prefill_total: float | None = None,
                    decode_total: float | None = None) -> dict:
    """Serial and fused time of one mixed step from the two kernels' demands: the rule of :func:`mixed_batch_time`.

    Each kernel alone takes ``total`` (default ``max(compute, memory) + overhead``: its own roofline, one launch).
    ``serial = prefill_total + decode_total``. ``fused = max(compute_p + compute_d, memory_p + memory_d,
    prefill_total - overhead_p, decode_total - overhead_d) + max(overhead_p, overhead_d)``: one kernel, one launch,
    the tensor cores and the HBM each serving both parts' demands, and never faster than either part alone.

    Args:
        prefill_compute, prefill_memory: the chunk's tensor-core time and HBM time (s, >= 0).
        decode_compute, decode_memory: the decodes' (s, >= 0).
        prefill_overhead, decode_overhead: each kernel's fixed launch cost (s, >= 0).
        prefill_total, decode_total: each kernel's time alone (s, >= its overhead); default the roofline above.

    Returns:
        dict ``prefill``, ``decode`` (s, each kernel alone), ``serial``, ``fused``, ``ideal`` (s), ``speedup``
        (serial / fused), ``gain`` (serial / fused - 1), ``bound`` (``"compute"``, ``"memory"``, ``"prefill"`` or
        ``"decode"``: the demand that sets ``fused``).

    Raises:
        TypeError/ValueError: a time that is not a finite real >= 0; a total below its overhead; all demands zero;
        times so large that their sum (``serial``, ``fused``) overflows float64.

    Source: Kamath et al. 2025 (POD-Attention) §3 (one kernel, SMs shared between prefill and decode CTAs).
    """
    pc, pm = positive_float(prefill_compute, "prefill_compute", allow_zero=True), \
        positive_float(prefill_memory, "prefill_memory", allow_zero=True)
    dc, dm = positive_float(decode_compute, "decode_compute", allow_zero=True), \
        positive_float(decode_memory, "decode_memory", allow_zero=True)
    po, do = positive_float(prefill_overhead, "prefill_overhead", allow_zero=True), \
        positive_float(decode_overhead, "decode_overhead", allow_zero=True)
    pt = max(pc, pm) + po if prefill_total is None else positive_float(prefill_total, "prefill_total")
    dt = max(dc, dm) + do if decode_total is None else positive_float(decode_total, "decode_total")
    if pt < po or dt < do:
        raise ValueError(f"a kernel's total time cannot be below its overhead: {pt} < {po} or {dt} < {do}")
    demands = {"compute": pc + dc, "memory": pm + dm, "prefill": pt - po, "decode": dt - do}
    bound = max(demands, key=demands.get)
    fused = demands[bound] + max(po, do)
    if fused <= 0:
        raise ValueError("a mixed step needs some work or some overhead")
    serial = pt + dt
    if not all(np.isfinite(v) for v in (*demands.values(), fused, serial)):   # Python floats: inf, never an error
        raise ValueError("times too large: prefill_compute + decode_compute, prefill_memory + decode_memory, "
                         "prefill_total + decode_total or a time plus its prefill_overhead or decode_overhead overflows "
                         f"float64 (serial = {serial}, fused = {fused})")
    return {"prefill": pt, "decode": dt, "serial": serial, "fused": fused, "ideal": max(pt, dt),
            "speedup": serial / fused, "gain": serial / fused - 1, "bound": bound}


def mixed_batch_sweep(gpu, *, chunks, context: int, decode_batch: int, decode_seqlen: int, num_q_heads: int,
                      num_kv_heads: int, head_dim: int, generation: str = "fa2", memory_rule: str = "shared",
                      decode_tile_rows="padded") -> dict:
    """:func:`mixed_batch_time` for every chunk size in ``chunks`` (ints >= 1): arrays ``chunk``, ``prefill``,
    ``decode``, ``serial``, ``fused``, ``ideal``, ``gain`` (seconds; ``gain`` a fraction).

    Raises: TypeError: chunks not integers (a string, fractions); ValueError: chunks empty or < 1, or more prefill
    CTAs over all chunks (``num_q_heads x sum ceil(chunk / 128)``) than :data:`labcore.checks.MAX_ITEMS`; the other
    arguments as :func:`mixed_batch_time`.

    Source: Kamath et al. 2025 (chunk sizes 512-2K in its evaluation).
    """
    chunks = int_vector(chunks, "chunks", minimum=1, maximum=MAX_SEQLEN)
    at_most(chunks.size, "chunks", MAX_ITEMS, "chunk sizes")
    # each chunk is a whole simulation of its CTAs: the sweep's CTAs together are bounded as one chunk's are
    heads = positive_int(num_q_heads, "num_q_heads", maximum=MAX_ITEMS)
    at_most(heads * int(cdiv(chunks, PREFILL_DEFAULTS["block_q"]).sum()), "chunks and num_q_heads", MAX_ITEMS,
            "prefill CTAs over all chunks")
    rows = [mixed_batch_time(gpu, chunk=int(c), context=context, decode_batch=decode_batch,
                             decode_seqlen=decode_seqlen, num_q_heads=num_q_heads, num_kv_heads=num_kv_heads,
                             head_dim=head_dim, generation=generation, memory_rule=memory_rule,
                             decode_tile_rows=decode_tile_rows) for c in np.asarray(chunks).ravel()]
    out = {k: np.array([r[k] for r in rows]) for k in ("prefill", "decode", "serial", "fused", "ideal", "gain")}
    out["chunk"] = np.asarray(chunks).ravel()
    return out
