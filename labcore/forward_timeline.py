"""One batch-1 decode forward pass as a timeline: many small kernels, or one persistent megakernel (lecture §8.3).

:func:`timeline` deals the :class:`~labcore.forward_work.WorkItem` list of a forward pass
(:func:`~labcore.forward_work.work_items`) to the SMs of a GPU under one of two execution modes:

``mode="multi-kernel"``
    Kernel after kernel. Every kernel pays a launch gap; every kernel that reads HBM (weights or the KV
    cache) pays a prologue (first bytes arriving) and then reads its bytes in *waves*: its output rows are
    cut into blocks of ``rows_per_block``, one block per SM at a time, each SM streaming at its share
    ``BW x eff / SMs`` of the bandwidth, so a last partial wave costs time (the tail). Kernels that read
    almost nothing (RMSNorm) cost a fixed ``small_kernel``. The time is a sum, one kernel at a time.

``mode="megakernel"``
    One persistent kernel whose instructions are dealt round-robin to the SMs. Each SM's loader streams
    weights continuously at the same per-SM share, at most ``pages x page_bytes`` ahead of what the SM has
    begun; an instruction waits only for the instructions whose activations it needs (all of the producer,
    or for the down projection the matching chunk of gate/up) plus ``sync`` for the counter in global memory,
    and costs ``instruction_overhead`` when its last byte is in. The time comes from an event loop over the
    instructions, one at a time (:func:`megakernel_schedule`).

All times are seconds, bytes are bytes, bandwidths bytes/s; the assumptions are those of
:data:`~labcore.forward_work.TIMELINE_DEFAULTS`. The breakdown of a timeline into causes
(:meth:`Timeline.breakdown`) has non-negative terms that add up to the total.

Sources: Hazy Research, "Look Ma, No Bubbles! Designing a Low-Latency Megakernel for Llama-1B" (2025-05-27)
and its code (HazyResearch/Megakernels); lecture 11 §8.3 for the timeline model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .checks import choice, flag
from .forward_work import TIMELINE_DEFAULTS, TIMELINE_MODES, forward_items, resolve_assumptions, timeline_gpu
from .hardware import GPU
from .models import Model, get_model
from .waves import idle_sms_last_wave

__all__ = ["EVENT_SMS", "TimelineEvent", "Timeline", "timeline", "megakernel_schedule"]

#: Megakernel timelines carry :class:`TimelineEvent` objects for SMs 0 .. EVENT_SMS-1 (all SMs in ``sm_arrays``).
EVENT_SMS = 4

#: The assumptions a megakernel timeline depends on (the others only affect the multi-kernel mode).
_MEGAKERNEL_KNOBS = ("prologue", "sync", "instruction_overhead", "bandwidth_efficiency", "rows_per_block", "pages",
                     "page_bytes", "down_chunks", "kv_len", "attention_splits", "dtype_bytes")


@dataclass(frozen=True)
class TimelineEvent:
    """One bar of the Gantt chart.

    Attributes:
        lane: ``"GPU"`` for a multi-kernel kernel, ``"SM <i>"`` for a megakernel instruction.
        name: kernel/instruction name (``"L3.qkv"``). kind: as ``WorkItem.kind``. layer: int (-1 = head).
        start, end: seconds from the start of the forward pass.
        parts: seconds of the event by cause (multi-kernel: ``launch_gap``, ``prologue``, ``work``,
            ``tail``; megakernel: ``wait`` before the instruction could start and ``busy``).
    """

    lane: str
    name: str
    kind: str
    layer: int
    start: float
    end: float
    parts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Timeline:
    """One forward pass of batch-1 decode under one execution mode.

    Attributes:
        mode: ``"multi-kernel"`` or ``"megakernel"``. model, gpu: the presets used.
        assumptions: the resolved knobs (see :data:`~labcore.forward_work.TIMELINE_DEFAULTS`).
        total: seconds per forward pass.
        ideal: seconds to read the weights and KV cache once at full bandwidth.
        events: tuple of :class:`TimelineEvent` (per kernel; or per instruction on SMs 0..EVENT_SMS-1).
        num_kernels: kernels launched per forward pass.
        sm_arrays: megakernel only: dict of per-instruction numpy arrays (``sm``, ``start``, ``end``,
            ``ready``, ``op``: the index of its item in ``work``) for drawing many lanes quickly.
        work: the :class:`~labcore.forward_work.WorkItem` tuple the timeline ran (:func:`~labcore.forward_work.work_items`).
    """

    mode: str
    model: Model
    gpu: GPU
    assumptions: dict
    total: float
    ideal: float
    events: tuple
    num_kernels: int
    _breakdown: dict
    sm_arrays: dict | None = None
    work: tuple = ()

    def breakdown(self) -> dict:
        """Seconds per cause. Every term is >= 0 by construction (a sum, product or difference of
        quantities ordered by the model, never clipped) and the terms add up to ``total`` (to rounding).

        Multi-kernel: ``weights`` and ``kv_cache`` (the bytes the HBM-streaming kernels read / peak
        bandwidth), ``bandwidth_efficiency`` (the same bytes at ``eff`` of the bandwidth minus at full),
        ``launch_gaps``, ``prologues``, ``tails`` (idle SMs of each kernel's last wave and the rows its last
        block lacks), ``small_kernels`` (their fixed cost, which covers the few bytes they read: norm weights
        and the embedding row), and ``pdl_syncs`` with ``pdl=True``.

        Megakernel: ``weights``, ``kv_cache``, ``bandwidth_efficiency`` over all bytes, ``prologue``,
        ``uneven_bytes`` (the busiest SM streams more than the average: its extra bytes at its share of the
        bandwidth, averaged over SMs), ``sync_waits`` (the total with ``sync`` minus without; the simulation
        is monotone in every cost, so this is >= 0), ``instruction_overhead`` (with minus without, ``sync``
        at 0) and ``imbalance`` (what remains beyond the busiest SM's stream: waits for activations the page
        buffer cannot hide, the last instruction). A timeline built with ``decompose=False`` has ``other``
        in place of the last three.
        """
        return dict(self._breakdown)

    @property
    def bandwidth_utilization(self) -> float:
        """``ideal / total``: fraction of the peak HBM bandwidth the forward pass achieves."""
        return self.ideal / self.total

    @property
    def tokens_per_second(self) -> float:
        """Forward passes (tokens at batch 1) per second: ``1 / total``."""
        return 1.0 / self.total



def timeline(model, gpu, *, mode: str = "multi-kernel", decompose: bool = True, **assumptions) -> Timeline:
    """Timeline of one batch-1 decode forward pass of ``model`` on ``gpu``.

    Args:
        model: a :class:`~labcore.models.Model` or preset name (``"Llama-3.2-1B"``).
        gpu: a :class:`~labcore.hardware.GPU` or preset name (``"H100"``, ``"B200"``).
        mode: ``"multi-kernel"`` or ``"megakernel"``.
        decompose: megakernel only: also schedule the pass without ``sync`` and without
            ``instruction_overhead`` (two more runs of :func:`megakernel_schedule`) so the breakdown can name
            those causes; False gives one ``other`` term instead.
        **assumptions: any key of :data:`~labcore.forward_work.TIMELINE_DEFAULTS` (seconds, bytes, fractions), each documented there:
            ``launch_gap`` (1.3e-6, CUDA Graphs; 2.1e-6 on a plain stream), ``prologue`` (1e-6),
            ``small_kernel`` (2e-6), ``sync`` (1e-6), ``instruction_overhead`` (0.5e-6),
            ``bandwidth_efficiency`` (0.9), ``rows_per_block`` (16), ``pages`` (13), ``page_bytes``
            (16 KiB), ``down_chunks`` (4), ``kv_len`` (128), ``attention_splits`` (None = fill the
            SMs), ``pdl`` (False), ``dtype_bytes`` (2).
    Returns:
        :class:`Timeline` with ``total`` (s), ``events`` and ``breakdown()``.
    Raises:
        ValueError: unknown model/GPU/mode, non-positive bandwidth, zero SMs, an assumption out of range,
            ``attention_splits > kv_len``, or more ``down_chunks`` than gate/up instructions to wait on.
        TypeError: an unknown assumption name or a wrongly typed value.
    Source: lecture 11 §8.3 (the model), Hazy Research megakernel post (launch gaps, pages, chunks).
    """
    model = get_model(model)
    gpu = timeline_gpu(gpu)
    mode = choice(mode, "mode", TIMELINE_MODES)
    return resolved_timeline(model, gpu, mode, resolve_assumptions(**assumptions), flag(decompose, "decompose"))


def resolved_timeline(model: Model, gpu: GPU, mode: str, assumptions: dict, decompose: bool = True) -> Timeline:
    """:func:`timeline` for a resolved ``model``, ``gpu`` (:func:`~labcore.forward_work.timeline_gpu`), ``mode``
    and ``assumptions`` (:func:`~labcore.forward_work.resolve_assumptions`), unchecked.

    Raises: as :func:`~labcore.forward_work.forward_items`.
    """
    a = assumptions
    items = forward_items(model, gpu, a, mode)
    if mode == "multi-kernel":
        return _multi_kernel(model, gpu, a, items)
    return _megakernel(model, gpu, a, items, decompose)



def _bytes_at_peak(gpu, a, items) -> dict:
    """The streaming part of a breakdown: ``items``' weight and KV bytes at peak bandwidth, and the loss
    from streaming them at ``bandwidth_efficiency`` of it (>= 0: x / eff >= x for eff <= 1)."""
    bw = gpu.hbm_bandwidth
    w = sum(o.weight_bytes for o in items) / bw
    kv = sum(o.kv_bytes for o in items) / bw
    return {"weights": w, "kv_cache": kv, "bandwidth_efficiency": (w + kv) / a["bandwidth_efficiency"] - (w + kv)}


def _ideal(gpu, items) -> float:
    """Seconds to read every byte of ``items`` once at peak bandwidth."""
    return sum(o.read_bytes for o in items) / gpu.hbm_bandwidth


def _multi_kernel(model, gpu, a, items) -> Timeline:
    num_sms = gpu.num_sms
    rate = gpu.hbm_bandwidth * a["bandwidth_efficiency"]          # bytes/s of all SMs together
    t, events = 0.0, []
    sums = {"launch_gaps": 0.0, "pdl_syncs": 0.0, "prologues": 0.0, "tails": 0.0, "small_kernels": 0.0}
    for i, o in enumerate(items):
        if a["pdl"] and i > 0:
            gap, pro = a["sync"], 0.0
            sums["pdl_syncs"] += gap
        else:
            gap = a["launch_gap"]
            sums["launch_gaps"] += gap
            pro = a["prologue"] if o.kind != "norm" else 0.0
        if o.kind == "norm":
            work, tail = a["small_kernel"], 0.0
            sums["small_kernels"] += work
        else:
            # waves x one block's time = (bytes read + idle SMs' share of the last wave + padding) / rate
            work = o.read_bytes / rate
            tail = (idle_sms_last_wave(o.blocks, num_sms) * o.block_bytes + o.pad_bytes) / rate
            sums["tails"] += tail
        sums["prologues"] += pro
        dur = gap + pro + work + tail
        events.append(TimelineEvent("GPU", o.name, o.kind, o.layer, t, t + dur,
                                    {"launch_gap": gap, "prologue": pro, "work": work, "tail": tail}))
        t += dur
    streaming = [o for o in items if o.kind != "norm"]
    bd = {**_bytes_at_peak(gpu, a, streaming), **sums}
    if not a["pdl"]:
        bd.pop("pdl_syncs")
    return Timeline("multi-kernel", model, gpu, a, t, _ideal(gpu, items), tuple(events), len(items), bd, None, items)



# ---------------------------------------------------------------------------------------------------
# The megakernel: an event loop over the instructions
# ---------------------------------------------------------------------------------------------------


def megakernel_schedule(model, gpu, **assumptions) -> dict:
    """When each instruction of the megakernel starts and ends: the megakernel model itself.

    Instruction ``g`` (in the order of :func:`~labcore.forward_work.work_items`, ``mode="megakernel"``) runs
    on SM ``g mod SMs``, after that SM's previous instruction. With ``r = BW x eff / SMs`` the SM's share of
    the HBM bandwidth (bytes/s), ``C = pages x page_bytes`` its page buffer and ``B`` the bytes its loader has
    fetched through this instruction, one instruction:

    1. is *ready* when the instructions whose activations it needs have ended, plus ``sync`` (0 for the first);
    2. *starts* at ``max(its SM is free, ready)``;
    3. has its last byte in at ``origin + B / r``: the SM's loader streams from ``prologue`` on, but may run at
       most ``C`` bytes ahead of the instructions its SM has started; held at ``cap = B_prev + C`` (bytes
       through the SM's previous instruction + C) until this instruction starts, it resumes from there, as if
       it had streamed without a pause from ``origin = start - cap / r``; ``origin`` is the latest such
       restart among the holds that bytes up to ``B`` had to pass (``cap < B``);
    4. *ends* at ``max(start, last byte in) + instruction_overhead``.

    Every step is a max or a sum of non-negative terms, so the times never decrease when ``sync``,
    ``instruction_overhead`` or ``prologue`` grow (in floating point too: rounding is monotone); the loop is
    plain Python, one instruction at a time, and cached by its arguments (the explorers ask for the same
    settings again and again).

    Args:
        model, gpu: presets or :class:`~labcore.models.Model` / :class:`~labcore.hardware.GPU`.
        **assumptions: as :func:`timeline`.
    Returns:
        dict of read-only numpy arrays, one entry per instruction: ``sm`` (int), ``op`` (index of its
        :class:`~labcore.forward_work.WorkItem`), ``ready``, ``start``, ``end`` (s); and ``sm_bytes`` (float
        array, one entry per SM: the bytes each SM streams).
    Raises:
        As :func:`timeline`.
    Source: lecture 11 §8.3 (the model); Hazy Research megakernel post (pages, counters, chunks).
    """
    model, gpu = get_model(model), timeline_gpu(gpu)
    return _schedule(model, gpu, _megakernel_key(resolve_assumptions(**assumptions)))


def _megakernel_key(a: dict) -> tuple:
    return tuple(a[k] for k in _MEGAKERNEL_KNOBS)


@lru_cache(maxsize=16)
def _schedule(model: Model, gpu: GPU, key: tuple) -> dict:
    """:func:`megakernel_schedule` for resolved presets and the values of :data:`_MEGAKERNEL_KNOBS`."""
    a = {**TIMELINE_DEFAULTS, **dict(zip(_MEGAKERNEL_KNOBS, key))}
    items = forward_items(model, gpu, a, "megakernel")
    num_sms = gpu.num_sms
    buffer = a["pages"] * a["page_bytes"]                                 # bytes of one SM's page buffer
    per_byte = num_sms / (gpu.hbm_bandwidth * a["bandwidth_efficiency"])   # seconds per byte at 1/SMs of HBM
    sync, overhead = a["sync"], a["instruction_overhead"]
    sm_free = [0.0] * num_sms              # when each SM's last instruction ended
    loaded = [0.0] * num_sms               # bytes each SM's loader has fetched, through its last instruction
    origin = [a["prologue"]] * num_sms     # byte x of an SM's stream is in at origin + x * per_byte
    caps = [[] for _ in range(num_sms)]      # each SM's holds: the loader's cap (bytes) before each instruction,
    restarts = [[] for _ in range(num_sms)]  # and the origin it restarts from when that instruction starts
    passed = [0] * num_sms                   # how many holds each SM's loader has passed (cap < loaded)
    count = sum(o.blocks for o in items)
    ready, start, end = [0.0] * count, [0.0] * count, [0.0] * count
    first = 0                                # the item's first instruction
    for i, item in enumerate(items):
        if i == 0:
            item_ready = [0.0] * item.blocks
        elif item.deps == "chunks":          # down projection: chunk c waits for chunk c of gate/up only
            n = a["down_chunks"]
            prev = first - items[i - 1].blocks
            cuts = np.linspace(prev, first, n + 1).round().astype(int).tolist()
            chunk_ready = [max(end[cuts[c]:cuts[c + 1]]) + sync for c in range(n)]
            item_ready = np.repeat(chunk_ready, item.blocks // n).tolist()   # blocks = rows blocks x n
        else:                                # waits for all of the previous item
            item_ready = [max(end[first - items[i - 1].blocks:first]) + sync] * item.blocks
        block_bytes = item.read_bytes / item.blocks
        for k0 in range(min(num_sms, item.blocks)):
            # the item's instructions k0, k0 + SMs, k0 + 2 SMs, ... run on one SM, one after the other
            # (``x if x > y else y`` is max(x, y), spelt out: this loop is the model's hot path)
            s = (first + k0) % num_sms
            t_free, got, t_origin, j = sm_free[s], loaded[s], origin[s], passed[s]
            cap_s, restart_s = caps[s], restarts[s]
            for k in range(k0, item.blocks, num_sms):
                r = item_ready[k]
                t_start = t_free if t_free > r else r           # 2. the SM is free and the inputs are ready
                cap = got + buffer                              # 3. the loader's limit until this instruction starts
                got += block_bytes
                cap_s.append(cap)
                restart_s.append(t_start - cap * per_byte)
                while j < len(cap_s) and cap_s[j] < got:        # every hold below this instruction's last byte
                    if restart_s[j] > t_origin:
                        t_origin = restart_s[j]
                    j += 1
                t_in = t_origin + got * per_byte                # its last byte is in
                t_free = (t_start if t_start > t_in else t_in) + overhead   # 4. it ends
                ready[first + k], start[first + k], end[first + k] = r, t_start, t_free
            sm_free[s], loaded[s], origin[s], passed[s] = t_free, got, t_origin, j
        first += item.blocks
    out = {"sm": np.arange(len(end)) % num_sms, "op": np.repeat(np.arange(len(items)), [o.blocks for o in items]),
           "ready": np.array(ready), "start": np.array(start), "end": np.array(end), "sm_bytes": np.array(loaded)}
    for v in out.values():
        v.flags.writeable = False
    return out


def _megakernel(model: Model, gpu: GPU, a: dict, items: tuple, decompose: bool) -> Timeline:
    """The megakernel timeline. With ``decompose``, two more schedules (cached, like every schedule): without
    ``sync``, and without ``sync`` or ``instruction_overhead``; the differences of the totals are causes."""
    run = _schedule(model, gpu, _megakernel_key(a))
    start, end, sm, op = run["start"], run["end"], run["sm"], run["op"]
    total = float(end.max())
    per_byte = gpu.num_sms / (gpu.hbm_bandwidth * a["bandwidth_efficiency"])
    busiest = run["sm_bytes"].max()
    stream_end = a["prologue"] + busiest * per_byte               # the busiest SM's bytes, nothing else
    uneven = np.mean(busiest - run["sm_bytes"]) * per_byte        # each difference >= 0
    arrays = {k: run[k] for k in ("sm", "start", "end", "ready", "op")}
    # TimelineEvent objects for the first EVENT_SMS lanes only (all lanes are in ``sm_arrays``)
    sel = np.nonzero(sm < EVENT_SMS)[0]
    num_sms = gpu.num_sms
    prev_end = np.where(sel >= num_sms, end[np.maximum(sel - num_sms, 0)], 0.0)
    events = tuple(
        TimelineEvent(f"SM {s}", items[oi].name, items[oi].kind, items[oi].layer, st, en,
                      {"wait": st - pe, "busy": en - st})          # st = max(pe, ready) >= pe
        for s, oi, st, en, pe in zip(sm[sel].tolist(), op[sel].tolist(), start[sel].tolist(),
                                     end[sel].tolist(), prev_end.tolist())
    )
    bd = {**_bytes_at_peak(gpu, a, items), "prologue": a["prologue"], "uneven_bytes": float(uneven)}
    if decompose:
        t_nosync = float(_schedule(model, gpu, _megakernel_key({**a, "sync": 0.0}))["end"].max())
        t_bare = float(_schedule(model, gpu, _megakernel_key({**a, "sync": 0.0, "instruction_overhead": 0.0}))
                       ["end"].max())
        bd |= {"sync_waits": total - t_nosync, "instruction_overhead": t_nosync - t_bare,
               "imbalance": t_bare - float(stream_end)}
    else:
        bd["other"] = total - float(stream_end)
    return Timeline("megakernel", model, gpu, a, total, _ideal(gpu, items), events, 1, bd, arrays, items)
