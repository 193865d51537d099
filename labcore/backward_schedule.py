"""FlashAttention's backward in the order its kernels run it: dQ by atomic adds, and what determinism costs.

The backward is three kernels (flash-attn ``flash_bwd_launch_template.h``):

1. a pre-kernel computes ``D_i = rowsum(dO_i * O_i)`` and zeroes an FP32 buffer ``dQaccum``;
2. the main kernel has one CTA per K/V block j (the outer loop of FlashAttention-2 Algorithm 2): it keeps
   dK_j and dV_j on chip while it streams Q_i, dO_i, lse_i and D_i for every query block i it sees, and adds
   its partial ``dQ_i += scale dS_ij K_j`` into ``dQaccum`` with FP32 reduction atomics. The SM sends 4 bytes per
   element; the read-modify-write happens in the L2 slice that holds the element, so while ``dQaccum`` stays in L2
   HBM sees about the buffer once, and the limit is the L2's atomic throughput (FA3 and FA4 send each warpgroup's
   tile as one TMA bulk reduce-add);
3. a post-kernel converts ``dQaccum`` to the output type.

Because FP32 addition is not associative, the order in which the CTAs' adds land changes the bits of dQ: the
``"atomic"`` mode below adds the CTAs' partial sums in a random completion order (a seeded permutation), the
``"deterministic"`` mode in a fixed order (CTA 0, 1, 2, ...). Three designs in use fix the order
(:data:`DETERMINISTIC_DESIGNS`), and :func:`deterministic_backward_time` models what each costs with an
event-driven dispatch of the CTAs:

- FlashAttention-2 (``csrc/flash_attn``): no ordering at all; ``ceil(SMs / (batch x heads))`` CTAs per head, each
  looping over its share of the key blocks and adding into a dQaccum buffer of its own; the convert kernel sums the
  buffers in a fixed order. It pays with fewer, longer CTAs, the buffers' memory and a longer convert kernel;
- FlashAttention-3 and -4: a semaphore per row block; without a mask the adds land in key-block order, with a
  causal mask in the reverse order (the diagonal CTA first), and the CTAs are launched shortest first, so the
  causal chain is a stall-free pipeline;
- DASH (Qiang et al. 2026): the CTAs visit their query blocks in descending order (Descending Q-Tile Iteration),
  or each starts at a different query block (Shift Scheduling).

Sources: Dao 2023 (FlashAttention-2) §3.1 and Algorithm 2; flash-attn at commit 0251105a:
``csrc/flash_attn/src/flash_bwd_launch_template.h`` (``gridDimx = (num_sm + b * h - 1) / (b * h)`` when
deterministic), ``flash_bwd_kernel.h`` ("If deterministic, each thread block will do atomicAdd to a different
dQ_accum buffer"), ``flash_bwd_preprocess_kernel.h`` (``convert_dQ`` sums ``nsplits`` buffers),
``hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp`` (``Barrier::wait_eq`` on ``n_block_max_for_m_block - 1 - n_block``;
``SM90_BULK_REDUCE_ADD``), ``hopper/tile_scheduler.hpp`` (``SingleTileBwdLPTScheduler<..., SPT>``, commit 5c1627a7,
2025-09-17) and ``flash_attn/cute/flash_bwd_sm100.py`` (``self.spt = (is_causal or is_local) and deterministic``);
Zadouri et al. 2026 (FlashAttention-4) §5.2; Qiang et al. 2026, DASH (arXiv 2601.21824).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .checks import MAX_COUNT, MAX_ELEMENTS, MAX_HEAD_DIM, MAX_ITEMS, as_matrix, as_vector, at_most, cdiv, check_qkv, \
    choice, flag, instance, key_count, positive_float, positive_int, resolve_scale
from .blocks import causal_block_map
from .hbm import Ledger, causal_block_counts
from .scheduler import Schedule, list_schedule
from .softmax import probabilities_from_lse, scaled_scores

__all__ = ["DQ_MODES", "ROW_ORDERS", "DETERMINISTIC_DESIGNS", "KernelOrderBackward", "flash_backward_kernel_order",
           "count_distinct_dq", "dq_ulp_differences", "dq_atomic_counts", "dq_serialisation_time",
           "deterministic_backward_time", "fa2_deterministic_splits"]

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
        dq_accum_bytes: bytes the adds read and write inside L2 (4 read + 4 written each); the SM sends 4 per add.
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
    K_j, V_j, write dK_j, dV_j, per visited pair read Q_i, dO_i, lse_i, D_i and read + write dQaccum_i (the book's
    convention counts every read and write; on the GPU this read-modify-write is done by the L2, see
    :func:`dq_atomic_counts`); post read dQaccum, write dQ.

    Args:
        Q (N_q, d), K (N_k, d), V (N_k, d_v), O (N_q, d_v), dO (N_q, d_v), lse (N_q,): as
            :func:`labcore.flash.flash_attention_backward`; lse is finite in every row that sees a key, and may be
            ``-inf`` only in a causal row that sees none (row i < N_q - N_k, where the forward writes ``-inf``).
        block_q, block_kv: B_r, B_c (ints >= 1; at most :data:`labcore.checks.MAX_ITEMS` block pairs).
        causal, scale: as the forward.
        mode: ``"atomic"`` or ``"deterministic"``.
        seed: int >= 0 (atomic only).
        ledger: optional :class:`~labcore.hbm.Ledger`.
    Returns:
        :class:`KernelOrderBackward`.
    Raises:
        TypeError: an array that is not real, a size or seed that is not an integer, causal not a bool, ledger not
            a Ledger.
        ValueError: as :func:`labcore.flash.flash_attention_backward` (shapes, NaN); lse ``-inf`` in a row that sees
            a key; an unknown mode; ``N_q x N_k`` above :data:`labcore.checks.MAX_ELEMENTS` or more than MAX_ITEMS
            block pairs; gradients that overflow (dQ past FP32's range, say: inputs too large, or an lse that is
            not the forward's).
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
    # lse = -inf means "this row saw no key": true only of the causal rows above the bottom-right diagonal; anywhere
    # else it would silently zero the row's gradients
    sees_a_key = np.arange(n_q) + (n_k - n_q) >= 0 if causal else np.ones(n_q, bool)
    bad = np.flatnonzero(sees_a_key & (lse == -np.inf))
    if bad.size:
        i = int(bad[0])
        why = (f"row {i} sees a key (the forward writes -inf only for a causal row i < N_q - N_k = {n_q - n_k}, which "
               "sees none)") if causal else "without a mask every row sees a key"
        raise ValueError(f"lse must be finite in every row that sees a key; lse[{i}] is -inf, but {why}")
    B_r, B_c = positive_int(block_q, "block_q"), positive_int(block_kv, "block_kv")
    at_most(cdiv(n_q, B_r) * cdiv(n_k, B_c), "block_q and block_kv", MAX_ITEMS, "block pairs (one step each)")
    s = resolve_scale(scale, d)
    # the kernels count into a ledger of their own, copied into the caller's only once the gradients are known to
    # be finite: a refused call leaves the caller's ledger as it was
    mine = Ledger(record_steps=True)
    with np.errstate(over="ignore", invalid="ignore"):      # an overflow is refused below, by name
        dQ, dK, dV, order, adds = _kernel_order(Q, K, V, O, dO, lse, B_r, B_c, causal, s, mode, seed, mine)
    if not (np.all(np.isfinite(dQ)) and np.all(np.isfinite(dK)) and np.all(np.isfinite(dV))):
        raise ValueError("the gradients overflow (dQ's FP32 buffer holds magnitudes up to 3.4e38, dK and dV float64): "
                         "Q, K, V, O, dO and scale too large, or an lse that is not the forward's for Q and K")
    if ledger is not None:
        for kind, name, n in mine.steps:
            (ledger.read if kind == "read" else ledger.write)(name, n)
    return KernelOrderBackward(dQ=dQ.astype(np.float64), dK=dK, dV=dV, dq_accum=dQ,
                               completion_order=order.astype(np.int64), atomic_adds=adds,
                               dq_accum_bytes=8 * adds, mode=mode)


def _kernel_order(Q, K, V, O, dO, lse, B_r, B_c, causal, s, mode, seed, ledger):
    """The three kernels of :func:`flash_backward_kernel_order` on checked inputs: ``(dq_accum, dK, dV,
    completion_order, atomic_adds)``."""
    (n_q, d), (n_k, d_v) = Q.shape, V.shape
    lg = ledger
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
    return acc, dK, dV, order, adds


def count_distinct_dq(Q, K, V, O, dO, lse, *, block_q: int, block_kv: int, causal: bool = False, scale=None,
                      mode: str = "atomic", trials: int = 20) -> int:
    """How many bitwise-distinct ``dq_accum`` buffers :func:`flash_backward_kernel_order` gives over
    ``trials`` completion orders (seeds ``0 .. trials - 1``). ``"deterministic"`` always gives 1.

    Args:
        Q, K, V, O, dO, lse, block_q, block_kv, causal, scale, mode: as :func:`flash_backward_kernel_order`.
        trials: int in [1, 1024] (each trial is a whole backward; ``trials x`` the block pairs of one at most
            :data:`labcore.checks.MAX_ITEMS` steps in all).
    Returns:
        int in ``[1, trials]``.
    Raises:
        TypeError/ValueError: trials not an integer in range, or too many steps in all; the rest as
        :func:`flash_backward_kernel_order`.
    Source:
        flash-attn ``flash_bwd_kernel.h`` (atomicAdd of dQ; the ``deterministic`` flag).
    """
    trials = positive_int(trials, "trials", maximum=1024)
    try:                                           # bound the work before the first backward runs
        n_q, n_k = np.shape(Q)[0], np.shape(K)[0]
    except (IndexError, ValueError, TypeError):
        n_q = n_k = None                           # not arrays: the first run names what is wrong
    if n_q is not None:
        pairs = cdiv(n_q, positive_int(block_q, "block_q")) * cdiv(n_k, positive_int(block_kv, "block_kv"))
        at_most(trials * pairs, "trials, block_q and block_kv", MAX_ITEMS, "block-pair steps over all trials")

    def run(seed):
        return flash_backward_kernel_order(Q, K, V, O, dO, lse, block_q=block_q, block_kv=block_kv, causal=causal,
                                           scale=scale, mode=mode, seed=seed)

    first = run(0)                                 # checks every argument; its shapes size the other trials
    n_q, n_k = first.dQ.shape[0], first.dK.shape[0]
    pairs = cdiv(n_q, positive_int(block_q, "block_q")) * cdiv(n_k, positive_int(block_kv, "block_kv"))
    at_most(trials * pairs, "trials, block_q and block_kv", MAX_ITEMS, "block-pair steps over all trials")
    seen = {first.dq_accum.tobytes()} | {run(t).dq_accum.tobytes() for t in range(1, trials)}
    return len(seen)


def _float32(x, name: str) -> np.ndarray:
    """``x`` as a finite float32 array, else a TypeError/ValueError naming it."""
    try:
        x = np.asarray(x)
    except ValueError as exc:                      # ragged nested lists
        raise TypeError(f"{name} must be a float32 array: {exc}") from None
    if x.dtype != np.float32:
        raise TypeError(f"{name} must be a float32 array, got dtype {x.dtype}")
    if x.ndim == 0 or x.size == 0:
        raise ValueError(f"{name} must be a non-empty float32 array (a dQ buffer) of at least one dimension, got "
                         f"shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} holds NaN or inf")
    return x


def dq_ulp_differences(a, b) -> np.ndarray:
    """Distance in float32 units in the last place between two dQ buffers, element by element.

    Args:
        a, b: float32 arrays of one shape (finite, at least 1-D and not empty).
    Returns:
        int64 array (0 where the bits agree).
    Raises:
        TypeError: a or b not a float32 array.
        ValueError: shapes differ, an empty or 0-d array, or non-finite values.
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
    """FP32 atomic adds into dQaccum, where their bytes go, and the bytes of the two side kernels, for one head.

    ``atomic_adds = sum over visited block pairs of rows_i x d``: ``T_r T_c B_r d`` without a mask when B_r divides
    N. An FP32 reduction atomic executes in the L2 slice that holds its address: the SM sends the 4-byte addend
    (``l2_payload_bytes = 4 x adds``) and the L2 reads and writes the element in place (``rmw_bytes = 8 x adds``,
    inside L2, not HBM traffic while the buffer stays resident). HBM sees the buffer about once: the pre-kernel
    zeroes it (``4 N d``), the post-kernel reads it (``4 N d``) and writes dQ in 2 B (``2 N d``): ``hbm_bytes``. What
    limits the adds is the L2's atomic throughput, not the HBM bandwidth.

    Args:
        N: queries, block_q, block_kv: B_r, B_c (ints >= 1).
        d: head dim (int in [1, 1024]).
        causal: bool.
        N_k: keys (default N); ``N x N_k`` at most :data:`labcore.checks.MAX_COUNT` (2^53, the scores a float64
            counts exactly).
    Returns:
        dict ``atomic_adds``, ``l2_payload_bytes``, ``rmw_bytes`` (in L2), ``init_bytes``, ``convert_bytes``,
        ``hbm_bytes`` (= ``total_bytes``: the zeroing and the conversion), ``buffer_bytes`` (dQaccum, 4 N d),
        ``T_r``, ``T_c``.
    Raises:
        TypeError/ValueError: as :func:`labcore.hbm.causal_block_counts` (sizes not integers >= 1, causal not a
        bool, too many query blocks); d past 1024; ``N x N_k`` past 2^53.
    Source:
        flash-attn ``flash_bwd_kernel.h`` (dQaccum in FP32, ``atomicAdd``) and
        ``hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp`` (``SM90_BULK_REDUCE_ADD``: the add is done by the L2); Dao
        2023, Algorithm 2.
    """
    d = positive_int(d, "d", maximum=MAX_HEAD_DIM)
    # rows x J summed over the query blocks is at most N x N_k: bounded here, its int64 sum cannot wrap
    at_most(positive_int(N, "N") * key_count(positive_int(N, "N"), N_k), "N and N_k", MAX_COUNT, "scores")
    rows, J, _ = causal_block_counts(N, block_q=block_q, block_kv=block_kv, causal=causal, N_k=N_k)
    adds = int((rows * J).sum()) * d
    n = int(rows.sum())
    out = {"atomic_adds": adds, "l2_payload_bytes": 4 * adds, "rmw_bytes": 8 * adds, "init_bytes": 4 * n * d,
           "convert_bytes": 6 * n * d, "buffer_bytes": 4 * n * d,
           "T_r": int(rows.size), "T_c": int(cdiv(key_count(N, N_k), positive_int(block_kv, "block_kv")))}
    out["hbm_bytes"] = out["total_bytes"] = out["init_bytes"] + out["convert_bytes"]
    return out


def dq_serialisation_time(N: int, *, block_q: int, block_kv: int, tile_time: float, add_time: float,
                          heads: int = 1, slots: int, causal: bool = False, row_order: str = "ascending",
                          N_k: int | None = None) -> dict:
    """Makespan of the backward's main kernel with atomic dQ adds and with a semaphore chain in key-block order.

    Every (head, K/V block j) is a CTA, dispatched in the grid's order (``n_block = blockIdx.x`` fastest) onto
    ``slots`` slots. A CTA visits its query blocks in ``row_order``; a tile costs ``tile_time`` of compute, then
    ``add_time`` to add its dQ partial.

    - ``"atomic"``: no waiting; a CTA with n tiles takes ``n (tile_time + add_time)``.
    - ``"deterministic"``: the adds to row block i land in increasing j (a semaphore per row block): an add starts
      once the compute is done and the previous CTA in that order has added. A waiting CTA holds its slot.

    This is FlashAttention-3's and -4's order without a mask (``wait_eq(lock, n_block)``). With a causal mask and
    ``"ascending"`` rows, CTA j starts at row j but CTA 0 reaches row j only after j + 1 tiles, so the chain
    serialises the kernel; ``"descending"`` rows (DASH's Descending Q-Tile Iteration) meet every CTA at row T_r - 1
    first. The designs the kernels run are compared by :func:`deterministic_backward_time`.

    Args:
        N: queries (int >= 1).
        block_q, block_kv: B_r, B_c.
        N_k: keys (default N).
        tile_time: seconds of one tile's compute (> 0).
        add_time: seconds of one tile's dQ add (>= 0); every tile's ``tile_time + add_time`` summed must stay
            finite in float64.
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
        add_time >= 0) or so large that the total time overflows float64, causal not a bool, an unknown row order.

    Source:
        flash-attn ``hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp`` (the semaphore per row block) at commit 0251105a;
        Qiang et al. 2026 (DASH) for the descending order; Graham 1969 (list scheduling).
    """
    t = positive_float(tile_time, "tile_time")
    a = positive_float(add_time, "add_time", allow_zero=True)
    heads, slots = positive_int(heads, "heads"), positive_int(slots, "slots", maximum=MAX_ITEMS)
    row_order = choice(row_order, "row_order", ROW_ORDERS)
    kinds = _block_map(N, block_q, block_kv, causal, N_k, heads)
    _finite_time(heads * int(np.count_nonzero(kinds)), t, a)
    return _chain(kinds, t, a, heads, slots, rows=row_order, adds="ascending", order=_dispatch("launch", kinds.shape[1],
                                                                                               heads, 1))


#: The deterministic designs :func:`deterministic_backward_time` models: how each CTA visits its query blocks
#: (``rows``), in which order the adds to one row block land (``adds``: increasing or decreasing key block, the
#: order of arrival of a shifted schedule, or ``None`` for per-CTA buffers with nothing to order), how the CTAs are
#: dealt with a causal mask (``causal_dispatch``: ``"launch"`` the grid's order, head by head; ``"sections"`` FA3's
#: longest-first order within L2 sections of heads; ``"sections_spt"`` shortest first within them; without a mask
#: every design launches head by head), and the source.
DETERMINISTIC_DESIGNS = {
    "fa2_split_buffers": dict(rows="ascending", adds=None, causal_dispatch="launch",
                              text="FlashAttention-2: ceil(SMs / (batch x heads)) CTAs per head, each over a strided "
                                   "share of the key blocks, adding into a dQaccum buffer of its own; the convert "
                                   "kernel sums the buffers in a fixed order",
                              source="flash-attn csrc/flash_attn/src/flash_bwd_launch_template.h, flash_bwd_kernel.h"),
    "semaphore_ascending": dict(rows="ascending", adds="ascending", causal_dispatch="sections",
                                text="a semaphore per row block, adds in increasing key block, query blocks "
                                     "ascending: FlashAttention-3's and -4's order without a mask, and FlashAttention-3's "
                                     "causal order until 2025-09-17",
                                source="flash-attn hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp (wait_eq on n_block)"),
    "fa3": dict(rows="ascending", adds="descending", causal_dispatch="sections_spt",
                text="FlashAttention-3 and -4: with a causal mask the adds land diagonal first (decreasing key block) "
                     "and the CTAs are dealt shortest first; without a mask as semaphore_ascending",
                source="flash-attn hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp (n_block_max_for_m_block - 1 - n_block) and "
                       "hopper/tile_scheduler.hpp (SingleTileBwdLPTScheduler with SPT), both since commit 5c1627a7 "
                       "(2025-09-17); flash_attn/cute/flash_bwd_sm100.py"),
    "dash_descending": dict(rows="descending", adds="ascending", causal_dispatch="sections",
                            text="DASH's Descending Q-Tile Iteration: query blocks visited from the last, adds in "
                                 "increasing key block",
                            source="Qiang et al. 2026 (DASH), arXiv 2601.21824"),
    "dash_shift": dict(rows="shift", adds="arrival", causal_dispatch=None,
                       text="DASH's Shift Scheduling without a mask: CTA j starts at query block j and wraps around, "
                            "so no two CTAs of a head want the same row block at once",
                       source="Qiang et al. 2026 (DASH), arXiv 2601.21824"),
}

#: FA3's backward L2 section budget: Q, dO (element_size each) and dQaccum (FP32) of ``swizzle`` heads fit in it.
#: Source: flash-attn ``hopper/tile_scheduler.hpp`` (``SingleTileBwdLPTScheduler``: ``size_l2 = 40 * 1024 * 1024``).
BWD_L2_BUDGET = 40 * 1024 * 1024


def _bwd_section(n_q: int, head_dim: int, element_size: int = 2) -> int:
    """Heads per L2 section of FA3's backward tile scheduler (a power of 2, at least 1)."""
    one = n_q * 2 * head_dim * element_size + n_q * head_dim * 4
    return 1 if BWD_L2_BUDGET < one else 1 << (BWD_L2_BUDGET // one).bit_length() - 1


def _dispatch(kind, T_c, heads, section):
    """The CTAs' dispatch order (item ``h T_c + j``): head by head, or FA3's sections (heads inner, key block outer,
    ascending or shortest first)."""
    if kind == "launch":
        return np.arange(heads * T_c, dtype=np.int64)
    blocks = range(T_c) if kind == "sections" else range(T_c - 1, -1, -1)
    out = [h * T_c + j for f in range(0, heads, section) for j in blocks for h in range(f, min(f + section, heads))]
    return np.asarray(out, np.int64)


def _block_map(N, block_q, block_kv, causal, N_k, heads):
    """The (T_r, T_c) map of visited block pairs, after checking that ``heads`` of them stay within MAX_ITEMS tiles."""
    n_q = positive_int(N, "N")
    causal = flag(causal, "causal")
    tiles = heads * cdiv(n_q, positive_int(block_q, "block_q")) * cdiv(key_count(n_q, N_k),
                                                                      positive_int(block_kv, "block_kv"))
    at_most(tiles, "N, N_k, heads, block_q and block_kv", MAX_ITEMS, "tiles")
    if causal:
        return causal_block_map(n_q, block_q=block_q, block_kv=block_kv, N_k=N_k)
    return np.ones((cdiv(n_q, positive_int(block_q, "block_q")),
                    cdiv(key_count(n_q, N_k), positive_int(block_kv, "block_kv"))), np.int8)


def _finite_time(tiles: int, t: float, a: float) -> None:
    """Raise a ValueError naming tile_time and add_time when ``tiles x (t + a)`` (all the work one after another,
    which bounds every time a schedule of it reports) is not finite in float64."""
    total = tiles * (t + a)                    # Python floats: an overflow is inf, not an error
    if not np.isfinite(total):
        raise ValueError(f"tile_time and add_time too large: {tiles} tiles x ({t:.3g} + {a:.3g}) add up past the "
                         "largest float64, so the schedule's times would be inf")


def _visits(kinds, rows):
    """Per key block j, the query blocks it visits in the design's order."""
    T_r, T_c = kinds.shape
    out = []
    for j in range(T_c):
        vis = np.flatnonzero(kinds[:, j])
        if rows == "descending":
            vis = vis[::-1]
        elif rows == "shift":
            vis = vis[np.argsort((vis - j) % T_r, kind="stable")]
        out.append(vis)
    return out


def _chain(kinds, t, a, heads, slots, *, rows, adds, order, atomic_order=None):
    """The atomic and the deterministic schedules of one design (see :func:`deterministic_backward_time`); the
    atomic kernel is dealt in ``atomic_order`` (default the grid's order, head by head)."""
    T_r, T_c = kinds.shape
    visits = _visits(kinds, rows)
    n_tiles = np.array([v.size for v in visits], float)
    costs = np.tile(n_tiles * (t + a), heads)
    atomic = list_schedule(costs, slots, order="launch" if atomic_order is None else atomic_order)
    # the order in which the CTAs' adds land on each row block
    step_of = [{int(i): k for k, i in enumerate(v)} for v in visits]
    pos = {}
    for i in range(T_r):
        js = [j for j in range(T_c) if i in step_of[j]]
        if adds == "descending":
            js = js[::-1]
        elif adds == "arrival":
            js = sorted(js, key=lambda j: (step_of[j][i], j))
        for p_, j in enumerate(js):
            pos[(j, i)] = p_
    det = _simulate_chain(visits, pos, T_r, T_c, t, a, heads, slots, order, costs)
    return {"atomic": atomic, "deterministic": det, "slowdown": det.makespan / atomic.makespan,
            "fraction": atomic.makespan / det.makespan}


def _simulate_chain(visits, pos, T_r, T_c, t, a, heads, slots, order, costs):
    """Event-driven dispatch of CTAs whose adds to a row block must land in the order ``pos``: an add starts when the
    tile is computed and every earlier add to that row has ended; a waiting CTA holds its slot; a freed slot takes the
    next CTA in ``order``. Raises ValueError when no CTA can move (the order deadlocks on these slots).

    The only events are the ends of adds: when a CTA's add ends it computes its next tile, and its next add either
    can follow at once (the previous add to that row has landed) or waits for it (the CTA is parked until then)."""
    n = heads * T_c
    slot, start, end = [0] * n, [0.0] * n, [0.0] * n
    vis = [v.tolist() for v in visits]
    posl = [[pos[(j, i)] for i in vis[j]] for j in range(T_c)]          # position of CTA j's add at each step
    done_adds = [[0] * T_r for _ in range(heads)]                       # adds landed on each (head, row block)
    parked = {}                                              # (h, i, position) -> (item, step, ready time)
    events = []                                              # (time an add ends, seq, item, step)
    queue = list(order.tolist())[::-1]
    seq = 0
    push, pop = heapq.heappush, heapq.heappop

    def ready(item, step, time):
        """The CTA's tile ``step`` is computed at ``time``: add now, or wait for the previous add to its row."""
        nonlocal seq
        h, j = divmod(item, T_c)
        p_ = posl[j][step]
        if done_adds[h][vis[j][step]] == p_:
            push(events, (time + a, seq, item, step))
            seq += 1
        else:
            parked[(h, vis[j][step], p_)] = (item, step, time)

    def begin(item, s, time):
        slot[item], start[item] = s, time
        if not vis[item % T_c]:
            end[item] = time
            if queue:
                begin(queue.pop(), s, time)
        else:
            ready(item, 0, time + t)

    for s_ in range(min(slots, n)):
        begin(queue.pop(), s_, 0.0)
    while events:
        time, _, item, step = pop(events)
        h, j = divmod(item, T_c)
        i = vis[j][step]
        row = done_adds[h]
        row[i] += 1
        nxt = parked.pop((h, i, row[i]), None)
        if nxt is not None:
            push(events, (max(nxt[2], time) + a, seq, nxt[0], nxt[1]))
            seq += 1
        if step + 1 < len(vis[j]):
            ready(item, step + 1, time + t)
        else:
            end[item] = time
            if queue:
                begin(queue.pop(), slot[item], time)
    if queue or parked:
        raise ValueError("the deterministic order deadlocks on these slots: a CTA waits for one that cannot start")
    return Schedule.from_times(costs, slots, order, slot, start, end)


def fa2_deterministic_splits(num_sms: int, batch_heads: int) -> int:
    """CTAs per head of FlashAttention-2's deterministic backward: ``ceil(SMs / (batch x heads))``.

    Args:
        num_sms: SMs (int >= 1).
        batch_heads: batch x heads (int >= 1).
    Returns:
        int >= 1.
    Raises:
        TypeError/ValueError: values not integers >= 1.
    Source:
        flash-attn ``csrc/flash_attn/src/flash_bwd_launch_template.h`` (``gridDimx``) at commit 0251105a.
    """
    return int(cdiv(positive_int(num_sms, "num_sms"), positive_int(batch_heads, "batch_heads")))


def deterministic_backward_time(N: int, *, block_q: int, block_kv: int, tile_time: float, add_time: float,
                                heads: int = 1, slots: int, causal: bool = False, design: str = "fa3",
                                buffer_time: float = 0.0, head_dim: int = 128, N_k: int | None = None) -> dict:
    """What one deterministic design costs against atomic adds, on the same CTAs and slots.

    The atomic kernel is the grid of one CTA per (head, K/V block), each tile ``tile_time + add_time``, dealt as the
    same kernel deals it without determinism (head by head; FA3's longest-first sections with a causal mask, FA2's
    grid for ``"fa2_split_buffers"``). The deterministic kernel is the design's (:data:`DETERMINISTIC_DESIGNS`):

    - the semaphore designs (``"semaphore_ascending"``, ``"fa3"``, ``"fa3_launch_order"``, ``"dash_descending"``,
      ``"dash_shift"``): the same CTAs, each visiting its query blocks in the design's order; the adds to a row block
      land in the design's order (an add waits for the previous one); the CTAs are dealt head by head without a
      mask and, with one, in FA3's L2 sections of heads (``head_dim`` sets their size), longest first or (``"fa3"``)
      shortest first; a waiting CTA holds its slot;
    - ``"fa2_split_buffers"``: ``fa2_deterministic_splits(slots, heads)`` CTAs per head, CTA x taking key blocks
      x, x + splits, ... one after another, adding into its own buffer without waiting; the convert kernel then reads
      one dQaccum buffer per CTA instead of one per head, and the zeroing writes them all:
      ``extra = 2 x (splits - 1) x heads x buffer_time`` (``buffer_time``: one head's FP32 dQaccum read once at the
      HBM bandwidth, in the unit of ``tile_time``).

    Args:
        N: queries (int >= 1).
        block_q, block_kv: B_r, B_c.
        tile_time: one tile's compute (> 0), any unit of time.
        add_time: one tile's dQ add (>= 0), the same unit; every tile's ``tile_time + add_time`` summed (and the
            buffers' ``extra``) must stay finite in float64.
        heads: batch x heads (int >= 1).
        slots: int >= 1 (SMs x CTAs per SM).
        causal: bool.
        design: a key of :data:`DETERMINISTIC_DESIGNS` (``"dash_shift"`` without a mask only).
        buffer_time: >= 0 (``"fa2_split_buffers"`` only).
        head_dim: d (int in [1, 1024]; the size of FA3's L2 sections).
        N_k: keys (default N).
    Returns:
        dict ``atomic``, ``deterministic`` (:class:`labcore.scheduler.Schedule`), ``extra`` (time outside the main
        kernel), ``slowdown`` ((deterministic + extra) / atomic), ``fraction`` (its inverse, the throughput kept),
        ``design``, ``splits`` (FA2 only, else None), ``text``, ``source``.
    Raises:
        TypeError/ValueError: bad sizes or times (tile_time, add_time or buffer_time so large that a total
            overflows float64), an unknown design, ``"dash_shift"`` with a causal mask or with more key blocks than
            slots, or an order that deadlocks on these slots.
    Source:
        as :data:`DETERMINISTIC_DESIGNS`; Graham 1969 (list scheduling).
    """
    t = positive_float(tile_time, "tile_time")
    a = positive_float(add_time, "add_time", allow_zero=True)
    heads, slots = positive_int(heads, "heads"), positive_int(slots, "slots", maximum=MAX_ITEMS)
    design = choice(design, "design", tuple(DETERMINISTIC_DESIGNS))
    buf = positive_float(buffer_time, "buffer_time", allow_zero=True)
    causal = flag(causal, "causal")
    head_dim = positive_int(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    if design == "dash_shift" and causal:
        raise ValueError("design 'dash_shift' is modelled without a mask only (DASH's causal shift schedule differs)")
    kinds = _block_map(N, block_q, block_kv, causal, N_k, heads)
    _finite_time(heads * int(np.count_nonzero(kinds)), t, a)
    if design == "dash_shift" and kinds.shape[1] > slots:
        raise ValueError(f"design 'dash_shift' needs every CTA of a head resident at once: {kinds.shape[1]} key blocks "
                         f"on {slots} slots would wait on CTAs that cannot start")
    spec = DETERMINISTIC_DESIGNS[design]
    info = dict(design=design, text=spec["text"], source=spec["source"], splits=None)
    if design != "fa2_split_buffers":
        T_c = kinds.shape[1]
        if causal:
            sec = _bwd_section(kinds.shape[0] * positive_int(block_q, "block_q"), positive_int(head_dim, "head_dim"))
            order, adds = _dispatch(spec["causal_dispatch"], T_c, heads, sec), spec["adds"]
            atomic_order = _dispatch("sections", T_c, heads, sec)      # the same scheduler, without determinism
        else:
            order, adds = _dispatch("launch", T_c, heads, 1), ("ascending" if design == "fa3" else spec["adds"])
            atomic_order = order
        r = _chain(kinds, t, a, heads, slots, rows=spec["rows"], adds=adds, order=order, atomic_order=atomic_order)
        return {**r, "extra": 0.0, **info}
    T_c = kinds.shape[1]
    tiles = kinds.astype(bool).sum(axis=0).astype(float)
    atomic = list_schedule(np.tile(tiles * (t + a), heads), slots)
    k = fa2_deterministic_splits(slots, heads)
    per = np.array([tiles[x::k].sum() for x in range(k)]) * (t + a)
    det = list_schedule(np.tile(per, heads), slots)
    extra = 2.0 * (min(k, T_c) - 1) * heads * buf
    total = det.makespan + extra
    if not np.isfinite(total):
        raise ValueError(f"buffer_time too large: the {min(k, T_c)} buffers' extra time {extra:.3g} plus the kernel's "
                         f"{det.makespan:.3g} overflow float64")
    return {"atomic": atomic, "deterministic": det, "extra": extra, "slowdown": total / atomic.makespan,
            "fraction": atomic.makespan / total, **info, "splits": k}
