"""FlashAttention-2's backward in the order its kernels run it: dQ by atomic adds, and what determinism costs.

The backward is three kernels (flash-attn ``flash_bwd_launch_template.h``):

1. a pre-kernel computes ``D_i = rowsum(dO_i * O_i)`` and zeroes an FP32 buffer ``dQaccum``;
2. the main kernel has one CTA per K/V block j (the outer loop of FlashAttention-2 Algorithm 2): it keeps
   dK_j and dV_j on chip while it streams Q_i, dO_i, lse_i and D_i for every query block i it sees, and adds
   its partial ``dQ_i += scale dS_ij K_j`` into ``dQaccum`` with FP32 atomic adds (read-modify-write in L2/HBM);
3. a post-kernel converts ``dQaccum`` to the output type.

Because FP32 addition is not associative, the order in which the CTAs' adds land changes the bits of dQ: the
``"atomic"`` mode below adds the CTAs' partial sums in a random completion order (a seeded permutation), the
``"deterministic"`` mode in a fixed order (CTA 0, 1, 2, ...), as a semaphore chain per query block does.
:func:`dq_serialisation_time` models what the chain costs, with the one dispatch loop of
:mod:`labcore.scheduler`: a CTA may not add to row block i before the CTA before it has.

Sources: Dao 2023 (FlashAttention-2) §3.1 and Algorithm 2; flash-attn ``csrc/flash_attn/src/flash_bwd_kernel.h``
("If deterministic, each thread block will do atomicAdd to a different dQ_accum buffer") and
``flash_bwd_preprocess_kernel.h`` (D and the dQ conversion); Zadouri et al. 2026 (FlashAttention-4) §5.2
(deterministic backward up to 75% of the non-deterministic one; the blog says about 85-90%).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import MAX_ELEMENTS, MAX_ITEMS, as_matrix, as_vector, at_most, cdiv, check_qkv, choice, flag, instance, \
    key_count, positive_float, positive_int, resolve_scale
from .blocks import causal_block_map
from .hbm import Ledger, causal_block_counts
from .scheduler import Schedule, dispatch_order, list_schedule, simulate_dispatch
from .softmax import probabilities_from_lse, scaled_scores

__all__ = ["DQ_MODES", "ROW_ORDERS", "KernelOrderBackward", "flash_backward_kernel_order", "count_distinct_dq",
           "dq_ulp_differences", "dq_atomic_counts", "dq_serialisation_time"]

#: How the main kernel's dQ partial sums are added into the FP32 buffer.
DQ_MODES = ("atomic", "deterministic")
#: The order in which a backward CTA visits its query blocks (:func:`dq_serialisation_time`).
ROW_ORDERS = ("ascending", "descending")


@dataclass(frozen=True)
class KernelOrderBackward:
    """The result of :func:`flash_backward_kernel_order`.

    Attributes:
        dQ, dK, dV: float64 gradients (dQ is the FP32 ``dq_accum`` converted; dK, dV accumulated on chip in float64).
        dq_accum: (N_q, d) float32 buffer after every atomic add.
        completion_order: (T_c,) int64 order in which the K/V-block CTAs' dQ adds landed.
        atomic_adds: FP32 elements added into ``dq_accum`` (one per row and column of every visited block pair).
        dq_accum_bytes: bytes the adds move (4 read + 4 written each).
        mode: ``"atomic"`` or ``"deterministic"``.
    """

    dQ: np.ndarray
    dK: np.ndarray
    dV: np.ndarray
    dq_accum: np.ndarray
    completion_order: np.ndarray
    atomic_adds: int
    dq_accum_bytes: int
    mode: str


def _bounds(n, b):
    return [(s, min(s + b, n)) for s in range(0, n, b)]


def flash_backward_kernel_order(Q, K, V, O, dO, lse, *, block_q: int, block_kv: int, causal: bool = False,
                                scale=None, mode: str = "atomic", seed: int = 0,
                                ledger: Ledger | None = None) -> KernelOrderBackward:
    """FlashAttention-2's backward, kernel by kernel, with dQ accumulated in FP32 by (simulated) atomic adds.

    Pre-kernel: ``D = rowsum(dO * O)``; ``dq_accum = 0`` (FP32). Main kernel, one CTA per K/V block j: for
    every visible query block i, ``P_ij = exp(S_ij - lse_i)``, ``dV_j += P_ij^T dO_i``, ``dS_ij = P_ij *
    (dO_i V_j^T - D_i)``, ``dK_j += scale dS_ij^T Q_i`` (float64, on chip), and the partial
    ``scale dS_ij K_j``, rounded to float32, is added into ``dq_accum[i]`` in float32 (an ``atomicAdd``).
    The CTAs' adds land in ``completion_order``: a permutation drawn from ``seed`` (``"atomic"``) or
    ``0, 1, ..., T_c - 1`` (``"deterministic"``). Post-kernel: ``dQ = dq_accum`` (converted).

    Ledger (elements; ``dQaccum`` counts FP32 elements): pre read O, dO, write D, write dQaccum; main per CTA read
    K_j, V_j, write dK_j, dV_j, per visited pair read Q_i, dO_i, lse_i, D_i and read + write dQaccum_i;
    post read dQaccum, write dQ.

    Args:
        Q (N_q, d), K (N_k, d), V (N_k, d_v), O (N_q, d_v), dO (N_q, d_v), lse (N_q,): as
            :func:`labcore.flash.flash_attention_backward`.
        block_q, block_kv: B_r, B_c (ints >= 1).
        causal, scale: as the forward.
        mode: ``"atomic"`` or ``"deterministic"``.
        seed: int >= 0 (atomic only).
        ledger: optional :class:`~labcore.hbm.Ledger`.
    Returns:
        :class:`KernelOrderBackward`.
    Raises:
        TypeError: an array that is not real, a size or seed that is not an integer, causal not a bool, ledger not
            a Ledger.
        ValueError: as :func:`labcore.flash.flash_attention_backward` (shapes, NaN); an unknown mode; ``N_q x N_k``
            above :data:`labcore.checks.MAX_ELEMENTS`.
    Source:
        Dao 2023, Algorithm 2; flash-attn ``flash_bwd_kernel.h`` and ``flash_bwd_preprocess_kernel.h``.
    """
    causal = flag(causal, "causal")
    mode = choice(mode, "mode", DQ_MODES)
    seed = positive_int(seed, "seed", minimum=0)
    if ledger is not None:
        instance(ledger, "ledger", Ledger)
    Q, K, V = check_qkv(Q, K, V)
    O, dO, lse = as_matrix(O, "O"), as_matrix(dO, "dO"), as_vector(lse, "lse")
    (n_q, d), (n_k, d_v) = Q.shape, V.shape
    at_most(n_q * n_k, "Q and K", MAX_ELEMENTS, "scores")
    if O.shape != (n_q, d_v) or dO.shape != (n_q, d_v) or lse.shape != (n_q,) or np.any(lse == np.inf):
        raise ValueError(f"O and dO must be (N_q, d_v) = {(n_q, d_v)} and lse (N_q,) without +inf; got {O.shape}, "
                         f"{dO.shape}, {lse.shape}")
    B_r, B_c = positive_int(block_q, "block_q"), positive_int(block_kv, "block_kv")
    s = resolve_scale(scale, d)
    lg = ledger if ledger is not None else Ledger()
    kinds = causal_block_map(n_q, block_q=B_r, block_kv=B_c, N_k=n_k) if causal else \
        np.ones((cdiv(n_q, B_r), cdiv(n_k, B_c)), np.int8)
    visible = np.ones((n_q, n_k), bool) if not causal else \
        np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + (n_k - n_q)
    # pre-kernel
    lg.read("O", n_q * d_v)
    lg.read("dO", n_q * d_v)
    D = (dO * O).sum(axis=1)
    lg.write("D", n_q)
    lg.write("dQaccum", n_q * d)
    # main kernel: every CTA's work, then its dQ adds in completion order
    qb, kb = _bounds(n_q, B_r), _bounds(n_k, B_c)
    dK, dV = np.zeros((n_k, d)), np.zeros((n_k, d_v))
    partials = []                                  # per CTA j: [(r0, r1, float32 partial), ...]
    adds = 0
    for j, (c0, c1) in enumerate(kb):
        lg.read("K", (c1 - c0) * d)
        lg.read("V", (c1 - c0) * d_v)
        mine = []
        for i, (r0, r1) in enumerate(qb):
            if kinds[i, j] == 0:
                continue
            for name, size in (("Q", (r1 - r0) * d), ("dO", (r1 - r0) * d_v), ("lse", r1 - r0), ("D", r1 - r0),
                               ("dQaccum", (r1 - r0) * d)):
                lg.read(name, size)
            S = np.where(visible[r0:r1, c0:c1], scaled_scores(Q[r0:r1], K[c0:c1], s), -np.inf)
            P = probabilities_from_lse(S, lse[r0:r1])
            dV[c0:c1] += P.T @ dO[r0:r1]
            dS = P * (dO[r0:r1] @ V[c0:c1].T - D[r0:r1, None])
            dK[c0:c1] += s * (dS.T @ Q[r0:r1])
            mine.append((r0, r1, (s * (dS @ K[c0:c1])).astype(np.float32)))
            lg.write("dQaccum", (r1 - r0) * d)
            adds += (r1 - r0) * d
        partials.append(mine)
        lg.write("dK", (c1 - c0) * d)
        lg.write("dV", (c1 - c0) * d_v)
    order = np.random.default_rng(seed).permutation(len(kb)) if mode == "atomic" else np.arange(len(kb))
    acc = np.zeros((n_q, d), np.float32)
    for j in order.tolist():
        for r0, r1, part in partials[j]:
            acc[r0:r1] += part                     # float32 + float32, rounded once per add (atomicAdd)
    # post-kernel
    lg.read("dQaccum", n_q * d)
    lg.write("dQ", n_q * d)
    return KernelOrderBackward(dQ=acc.astype(np.float64), dK=dK, dV=dV, dq_accum=acc,
                               completion_order=order.astype(np.int64), atomic_adds=adds,
                               dq_accum_bytes=8 * adds, mode=mode)


def count_distinct_dq(Q, K, V, O, dO, lse, *, block_q: int, block_kv: int, causal: bool = False, scale=None,
                      mode: str = "atomic", trials: int = 20) -> int:
    """How many bitwise-distinct ``dq_accum`` buffers :func:`flash_backward_kernel_order` gives over
    ``trials`` completion orders (seeds ``0 .. trials - 1``). ``"deterministic"`` always gives 1.

    Args:
        Q, K, V, O, dO, lse, block_q, block_kv, causal, scale, mode: as :func:`flash_backward_kernel_order`.
        trials: int in [1, 1024] (each trial is a whole backward).
    Returns:
        int in ``[1, trials]``.
    Raises:
        TypeError/ValueError: trials not an integer in range; the rest as :func:`flash_backward_kernel_order`.
    Source:
        flash-attn ``flash_bwd_kernel.h`` (atomicAdd of dQ; the ``deterministic`` flag).
    """
    trials = positive_int(trials, "trials", maximum=1024)
    seen = {flash_backward_kernel_order(Q, K, V, O, dO, lse, block_q=block_q, block_kv=block_kv, causal=causal,
                                        scale=scale, mode=mode, seed=t).dq_accum.tobytes() for t in range(trials)}
    return len(seen)


def _float32(x, name: str) -> np.ndarray:
    """``x`` as a finite float32 array, else a TypeError/ValueError naming it."""
    try:
        x = np.asarray(x)
    except ValueError as exc:                      # ragged nested lists
        raise TypeError(f"{name} must be a float32 array: {exc}") from None
    if x.dtype != np.float32:
        raise TypeError(f"{name} must be a float32 array, got dtype {x.dtype}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} holds NaN or inf")
    return x


def dq_ulp_differences(a, b) -> np.ndarray:
    """Distance in float32 units in the last place between two dQ buffers, element by element.

    Args:
        a, b: float32 arrays of one shape (finite).
    Returns:
        int64 array (0 where the bits agree).
    Raises:
        TypeError: a or b not a float32 array.
        ValueError: shapes differ or non-finite values.
    Source:
        IEEE 754 binary32 (ordered integer view of the bit patterns).
    """
    a, b = _float32(a, "a"), _float32(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must be of one shape, got {a.shape} and {b.shape}")

    def ordered(x):
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(ordered(a) - ordered(b))


def dq_atomic_counts(N: int, d: int, *, block_q: int, block_kv: int, causal: bool = False,
                     N_k: int | None = None) -> dict:
    """FP32 atomic adds into dQaccum and the bytes they and the two side kernels move, for one head.

    ``atomic_adds = sum over visited block pairs of rows_i x d``: ``T_r T_c B_r d`` without a mask when B_r
    divides N. Each add reads and writes 4 B (``rmw_bytes = 8 x adds``); the pre-kernel zeroes the buffer
    (``4 N d``) and the post-kernel reads it (``4 N d``) and writes dQ in 2 B (``2 N d``).

    Args:
        N: queries, d: head dim, block_q, block_kv: B_r, B_c (ints >= 1).
        causal: bool.
        N_k: keys (default N).
    Returns:
        dict ``atomic_adds``, ``rmw_bytes``, ``init_bytes``, ``convert_bytes``, ``total_bytes``, ``T_r``, ``T_c``.
    Raises:
        TypeError/ValueError: as :func:`labcore.hbm.causal_block_counts` (sizes not integers >= 1, causal not a
        bool, too many query blocks).
    Source:
        flash-attn ``flash_bwd_kernel.h`` (dQaccum in FP32, ``atomicAdd``); Dao 2023, Algorithm 2.
    """
    d = positive_int(d, "d")
    rows, J, _ = causal_block_counts(N, block_q=block_q, block_kv=block_kv, causal=causal, N_k=N_k)
    adds = int((rows * J).sum()) * d
    n = int(rows.sum())
    out = {"atomic_adds": adds, "rmw_bytes": 8 * adds, "init_bytes": 4 * n * d, "convert_bytes": 6 * n * d,
           "T_r": int(rows.size), "T_c": int(cdiv(key_count(N, N_k), positive_int(block_kv, "block_kv")))}
    out["total_bytes"] = out["rmw_bytes"] + out["init_bytes"] + out["convert_bytes"]
    return out


def dq_serialisation_time(N: int, *, block_q: int, block_kv: int, tile_time: float, add_time: float,
                          heads: int = 1, slots: int, causal: bool = False, row_order: str = "ascending",
                          N_k: int | None = None) -> dict:
    """Makespan of the backward's main kernel with atomic dQ adds and with a deterministic semaphore chain.

    Every (head, K/V block j) is a CTA, dispatched in FA2's grid order (``n_block = blockIdx.x`` fastest) onto
    ``slots`` slots by :func:`labcore.scheduler.simulate_dispatch`. A CTA visits its query blocks in ``row_order``;
    a tile costs ``tile_time`` of compute, then ``add_time`` to add its dQ partial.

    - ``"atomic"``: no waiting; a CTA with n tiles takes ``n (tile_time + add_time)``.
    - ``"deterministic"``: the adds to row block i land in the fixed order of j (a semaphore per row block):
      ``add_start(i, j) = max(compute_end(i, j), add_end(i, j_prev))``, where ``j_prev`` is the previous CTA
      that visits row i. A waiting CTA holds its slot.

    With a causal mask and ``"ascending"`` rows, CTA j starts at row j but CTA 0 reaches row j only after j + 1
    tiles, so the chain serialises the whole kernel; ``"descending"`` rows meet every CTA at row T_r - 1 first.

    Args:
        N: queries (int >= 1).
        block_q, block_kv: B_r, B_c.
        N_k: keys (default N).
        tile_time: seconds of one tile's compute (> 0).
        add_time: seconds of one tile's dQ add (>= 0).
        heads: (batch x heads), int >= 1.
        slots: int >= 1 (SMs x CTAs per SM, at most :data:`labcore.checks.MAX_ITEMS`).
        causal: bool.
        row_order: ``"ascending"`` or ``"descending"``.
            The simulation visits ``heads x T_r x T_c`` tiles one by one: at most MAX_ITEMS of them.
    Returns:
        dict ``atomic``, ``deterministic`` (:class:`labcore.scheduler.Schedule` each), ``slowdown``
        (deterministic / atomic makespan) and ``fraction`` (atomic / deterministic, the throughput kept).
    Raises:
        TypeError/ValueError: sizes not integers >= 1, too many tiles or slots, times not finite (tile_time > 0,
        add_time >= 0), causal not a bool, an unknown row order.

    Source:
        flash-attn ``flash_bwd_kernel.h`` (deterministic mode); Zadouri et al. 2026 §5.2 (the semaphore ordering of the
        deterministic backward and its cost); Graham 1969 (list scheduling).
    """
    t = positive_float(tile_time, "tile_time")
    a = positive_float(add_time, "add_time", allow_zero=True)
    heads, slots = positive_int(heads, "heads"), positive_int(slots, "slots", maximum=MAX_ITEMS)
    row_order = choice(row_order, "row_order", ROW_ORDERS)
    n_q = positive_int(N, "N")
    causal = flag(causal, "causal")
    tiles = heads * cdiv(n_q, positive_int(block_q, "block_q")) * cdiv(key_count(n_q, N_k),
                                                                      positive_int(block_kv, "block_kv"))
    at_most(tiles, "N, N_k, heads, block_q and block_kv", MAX_ITEMS, "tiles")
    kinds = causal_block_map(n_q, block_q=block_q, block_kv=block_kv, N_k=N_k) if flag(causal, "causal") else \
        np.ones((cdiv(n_q, positive_int(block_q, "block_q")),
                 cdiv(key_count(n_q, N_k), positive_int(block_kv, "block_kv"))), np.int8)
    T_c = kinds.shape[1]
    rows_of = [np.flatnonzero(kinds[:, j])[:: 1 if row_order == "ascending" else -1] for j in range(T_c)]
    costs = np.array([rows_of[j].size * (t + a) for _ in range(heads) for j in range(T_c)])
    order = dispatch_order(costs, "launch")
    atomic = list_schedule(costs, slots)
    sem = np.zeros((heads, kinds.shape[0]))        # when the last add to (head, row block) ended

    def run(item, slot, start):
        h, j = divmod(item, T_c)
        end = start
        for i in rows_of[j].tolist():
            end = max(end + t, sem[h, i]) + a
            sem[h, i] = end
        return end

    det = Schedule.from_times(costs, slots, order, *simulate_dispatch(order, slots, run))
    return {"atomic": atomic, "deterministic": det, "slowdown": det.makespan / atomic.makespan,
            "fraction": atomic.makespan / det.makespan}
