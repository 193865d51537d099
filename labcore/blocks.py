"""FlashAttention's blocks: their sizes, which block pairs a (causal) pass visits, and in which order (lecture §4-§5).

Q is cut into T_r = ceil(N_q / B_r) row blocks (``block_q`` = B_r), K and V into T_c = ceil(N_k / B_c) blocks
(``block_kv`` = B_c); the last block of each may be shorter (ragged). :func:`paper_block_sizes` gives the
paper's B_r, B_c from the SRAM size M; :func:`causal_block_map` says which block pairs a causal pass computes
(bottom-right aligned: query i sees key j iff ``j <= i + N_k - N_q``), :func:`causal_block_fraction` how many;
:func:`flash_tile_schedule` records, step by step, the pairs a forward visits in either loop order and the
elements each step reads and writes (counted, no numbers; its total equals :func:`labcore.hbm.flash_forward_io`
and the forward's ledger). The loops themselves are in :mod:`labcore.flash`, which re-exports these names.

Source: Dao et al. 2022 (FlashAttention), Algorithm 1 and its block sizes; Dao 2023 (FlashAttention-2),
Algorithm 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import LOOP_ORDERS, cdiv, choice, flag, key_count, positive_int
from .hbm import MAX_BLOCKS, causal_block_counts, flash_forward_io

__all__ = ["paper_block_sizes", "flash_forward_io_at_sram", "causal_block_map", "causal_block_fraction", "TileSchedule",
           "flash_tile_schedule"]

# ----------------------------------------------------------------------------------------------------------
# block sizes and block geometry
# ----------------------------------------------------------------------------------------------------------

def paper_block_sizes(M: int, d: int):
    """The FlashAttention paper's block sizes for an SRAM of ``M`` elements: ``B_c = ceil(M / 4d)``,
    ``B_r = min(B_c, d)``.

    "4d" because four tiles (Q_i, K_j, V_j, O_i) must fit on chip at once.

    Args:
        M: on-chip SRAM size in *elements* (int >= 4 d; e.g. 100 KiB of FP16 = 51,200 elements).
        d: head dimension (int >= 1).
    Returns:
        ``(B_r, B_c)`` ints. Example: ``paper_block_sizes(51_200, 64) == (64, 200)``.
    Raises:
        TypeError/ValueError: M or d not an integer >= 1; ``M < 4 d`` (not even one row of each tile fits).
    Source: Dao et al. 2022, Algorithm 1, line 1.
    """
    d = positive_int(d, "d")
    M = positive_int(M, "M")
    if M < 4 * d:
        raise ValueError(f"M must be at least 4*d = {4 * d} elements (one row each of Q_i, K_j, V_j, O_i); got {M}")
    B_c = cdiv(M, 4 * d)
    return min(B_c, d), B_c


def flash_forward_io_at_sram(N: int, d: int, *, M: int, loop_order: str = "fa1", causal: bool = False,
                             N_k: int | None = None) -> int:
    """Elements the FlashAttention forward moves with the paper's block sizes for an SRAM of ``M`` elements:
    :func:`labcore.hbm.flash_forward_io` at ``(block_q, block_kv) = paper_block_sizes(M, d)``.

    Example:
        N = 4096, d = 64, 100 KiB of FP16 (M = 51,200): 17,653,760 elements in the fa1 order (35.3 MB).

    Args:
        N, d: ints >= 1.
        M: SRAM size in elements (int >= 4 d).
        loop_order, causal, N_k: as :func:`~labcore.hbm.flash_forward_io`.
    Returns:
        int, elements (x 2 for FP16 bytes).
    Raises:
        TypeError/ValueError: as :func:`paper_block_sizes` and :func:`~labcore.hbm.flash_forward_io`.
    Source:
        Dao et al. 2022, Algorithm 1 and Theorem 2; lecture §4.3-§4.4.
    """
    B_r, B_c = paper_block_sizes(M, d)
    return flash_forward_io(N, d, block_q=B_r, block_kv=B_c, loop_order=loop_order, causal=causal, N_k=N_k)


def block_bounds(n: int, b: int) -> list:
    """``[(start, stop), ...]`` of the blocks of ``b`` rows that cover ``n`` rows (the last one may be shorter)."""
    return [(s, min(s + b, n)) for s in range(0, n, b)]


def _check_pairs(N, N_k, B_r, B_c):
    """The block-pair maps and tile schedules hold one entry per (query block, key block) pair."""
    pairs = cdiv(N, B_r) * cdiv(N_k, B_c)
    if pairs > MAX_BLOCKS:
        raise ValueError(f"N = {N:,} and N_k = {N_k:,} in blocks of {B_r} x {B_c} give {pairs:,} block pairs; at most "
                         f"{MAX_BLOCKS:,} are mapped one by one (use larger blocks or shorter sequences)")


def block_pair_map(N: int, N_k: int, B_r: int, B_c: int, causal: bool) -> np.ndarray:
    """(T_r, T_c) int8 codes of every block pair: 0 skipped, 1 full, 2 diagonal (all 1 without a mask).

    Args: N, N_k: queries and keys; B_r, B_c: block sizes (checked ints >= 1); causal: bool (bottom-right aligned).
    Raises: ValueError for more than :data:`labcore.hbm.MAX_BLOCKS` block pairs.
    """
    _check_pairs(N, N_k, B_r, B_c)
    if not causal:
        return np.ones((cdiv(N, B_r), cdiv(N_k, B_c)), np.int8)
    off = N_k - N
    r0 = np.arange(0, N, B_r)[:, None]
    r1 = np.minimum(r0 + B_r, N)
    c0 = np.arange(0, N_k, B_c)[None, :]
    c1 = np.minimum(c0 + B_c, N_k)
    skip = c0 > (r1 - 1) + off
    full = (c1 - 1) <= r0 + off
    return np.where(skip, 0, np.where(full, 1, 2)).astype(np.int8)


#: The codes of :func:`causal_block_map` and of the loops that read it: a block pair skipped, computed in full,
#: or on the diagonal (masked inside).
BLOCK_SKIPPED, BLOCK_FULL, BLOCK_DIAGONAL = 0, 1, 2


def causal_block_map(N: int, *, block_q: int, block_kv: int | None = None, N_k: int | None = None) -> np.ndarray:
    """Which block pairs a causal FlashAttention computes: 0 = skipped, 1 = full (no mask), 2 = diagonal.

    The forward and backward passes and :func:`flash_tile_schedule` visit exactly these pairs.

    Args:
        N: queries (int >= 1).
        block_q: B_r (int >= 1).
        block_kv: B_c (default B_r).
        N_k: keys (default N).
        (flash-attn: ``kBlockM``, ``kBlockN``, ``seqlen_q``, ``seqlen_k``.)
    Returns:
        (T_r, T_c) int8 array.
    Raises:
        TypeError/ValueError: sizes that are not integers >= 1; more than :data:`labcore.hbm.MAX_BLOCKS`
        block pairs.
    Source: Dao 2023 (FlashAttention-2) §3.1.1, causal masking; bottom-right alignment as flash-attn >= 2.1.
    """
    N = positive_int(N, "N")
    B_r = positive_int(block_q, "block_q")
    B_c = B_r if block_kv is None else positive_int(block_kv, "block_kv")
    return block_pair_map(N, key_count(N, N_k), B_r, B_c, True)


def causal_block_fraction(N: int, *, block_q: int, block_kv: int | None = None, N_k: int | None = None) -> float:
    """Fraction of block pairs a causal FlashAttention computes (the rest are skipped).

    With square blocks and T = N / B blocks per side this is ``T (T + 1) / 2 / T^2 = 1/2 + 1/(2T)``
    (lecture §5.3: N = 4096 gives 0.508 / 0.516 / 0.531 for B = 64 / 128 / 256).

    Args:
        N: sequence length (int >= 1).
        block_q: B_r (int >= 1; flash-attn's kBlockM).
        block_kv: B_c (default ``block_q``; flash-attn's kBlockN).
        N_k: keys (default N).
    Returns:
        float in (0, 1].
    Raises:
        TypeError/ValueError: sizes that are not integers >= 1.
    Source: Dao 2023 §3.1.1.
    """
    N = positive_int(N, "N")
    B_r = positive_int(block_q, "block_q")
    B_c = B_r if block_kv is None else positive_int(block_kv, "block_kv")
    _, J, _ = causal_block_counts(N, block_q=B_r, block_kv=B_c, causal=True, N_k=N_k)
    return float(J.sum()) / float(J.size * cdiv(key_count(N, N_k), B_c))


# ----------------------------------------------------------------------------------------------------------
# step-by-step tile record (for the tiling walker)
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TileSchedule:
    """The order in which a FlashAttention forward visits block pairs, and the HBM traffic of each step.

    Attributes:
        loop_order: "fa1" or "fa2". N, N_k, d, block_q, block_kv, causal: the problem.
        T_r, T_c: number of Q and K/V blocks.
        pairs: (n_steps, 2) int array of (i, j) block indices in visiting order.
        tensors: tuple of tensor names, the columns of ``reads``/``writes``.
        reads, writes: (n_steps, n_tensors) int64 elements read / written at each step.
        pre, post: ``{tensor: {"read": n, "write": n}}`` before the first and after the last step
            (fa1: the initial O, l, m; fa2: O and lse of query blocks that see no key).
        block_map: (T_r, T_c) int8, 0 skipped / 1 full / 2 diagonal.
    """

    loop_order: str
    N: int
    N_k: int
    d: int
    block_q: int
    block_kv: int
    causal: bool
    T_r: int
    T_c: int
    pairs: np.ndarray
    tensors: tuple
    reads: np.ndarray
    writes: np.ndarray
    pre: dict
    post: dict
    block_map: np.ndarray

    @property
    def n_steps(self) -> int:
        """Steps of the schedule: visited block pairs."""
        return int(self.pairs.shape[0])

    def total(self) -> int:
        """All elements moved (pre + steps + post); equals :func:`labcore.hbm.flash_forward_io`."""
        extra = sum(v["read"] + v["write"] for t in (self.pre, self.post) for v in t.values())
        return int(self.reads.sum() + self.writes.sum()) + extra

    def at(self, k: int) -> dict:
        """The state just after step ``k`` (0-based): the block pair, the tiles on chip, what this step read
        and wrote, and the cumulative HBM traffic per tensor (including ``pre``).

        Raises:
            ValueError: k outside ``[0, n_steps)``.
        """
        k = positive_int(k, "k", minimum=0)
        if k >= self.n_steps:
            raise ValueError(f"k must be in [0, {self.n_steps}), got {k}")
        i, j = (int(x) for x in self.pairs[k])
        cum_r = self.reads[: k + 1].sum(axis=0)
        cum_w = self.writes[: k + 1].sum(axis=0)
        so_far = {}
        for t_idx, name in enumerate(self.tensors):
            r = int(cum_r[t_idx]) + self.pre.get(name, {}).get("read", 0)
            w = int(cum_w[t_idx]) + self.pre.get(name, {}).get("write", 0)
            so_far[name] = {"read": r, "write": w}
        on_chip = ["Q", "K", "V", "O", "l", "m"]
        return {
            "step": k, "i": i, "j": j,
            "kind": {0: "skip", 1: "full", 2: "diag"}[int(self.block_map[i, j])],
            "on_chip": {t: (i if t in ("Q", "O", "l", "m") else j) for t in on_chip},
            "read": {n: int(self.reads[k, t]) for t, n in enumerate(self.tensors) if self.reads[k, t]},
            "write": {n: int(self.writes[k, t]) for t, n in enumerate(self.tensors) if self.writes[k, t]},
            "so_far": so_far,
            "hbm_so_far": sum(v["read"] + v["write"] for v in so_far.values()),
        }


def flash_tile_schedule(N: int, d: int, *, block_q: int, block_kv: int, loop_order: str = "fa2",
                        causal: bool = False, N_k: int | None = None) -> TileSchedule:
    """Step-by-step record of a FlashAttention forward: which block pair each step works on and what it
    reads and writes in HBM. Counting only (no numbers), vectorised, so it is cheap even at N = 32768.

    One step = one visited block pair (i, j). fa1 (outer loop over j): a step reads K_j, V_j if it is the
    first step of column j, then reads Q_i, O_i, l_i, m_i and writes O_i, l_i, m_i. fa2 (outer loop over
    i): a step reads Q_i if it is the first step of row i, reads K_j, V_j, and writes O_i, lse_i if it is
    the last step of row i.

    Args:
        N, d, block_q, block_kv, loop_order, causal, N_k: as :func:`labcore.hbm.flash_forward_io`.
    Returns:
        :class:`TileSchedule`; its ``total()`` equals ``flash_forward_io(...)`` and the forward's ledger.
    Raises:
        TypeError/ValueError: sizes not integers >= 1; unknown loop_order; more than :data:`labcore.hbm.MAX_BLOCKS`
        block pairs.
    Source: Dao et al. 2022, Algorithm 1; Dao 2023, Algorithm 1.
    """
    causal = flag(causal, "causal")
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    B_r = positive_int(block_q, "block_q")
    B_c = positive_int(block_kv, "block_kv")
    loop_order = choice(loop_order, "loop_order", LOOP_ORDERS)
    N_k = key_count(N, N_k)
    bmap = block_pair_map(N, N_k, B_r, B_c, causal)
    T_r, T_c = bmap.shape
    rows = np.minimum(np.arange(1, T_r + 1) * B_r, N) - np.arange(T_r) * B_r
    cols = np.minimum(np.arange(1, T_c + 1) * B_c, N_k) - np.arange(T_c) * B_c
    vis = bmap > 0
    if loop_order == "fa1":
        jj, ii = np.nonzero(vis.T)                     # column-major: outer loop over j
        tensors = ("K", "V", "Q", "O", "l", "m")
        first = np.ones(jj.size, bool)
        first[1:] = jj[1:] != jj[:-1]
        nr = rows[ii]
        reads = np.stack([first * cols[jj] * d, first * cols[jj] * d, nr * d, nr * d, nr, nr], axis=1)
        writes = np.stack([0 * nr, 0 * nr, 0 * nr, nr * d, nr, nr], axis=1)
        pre = {"O": {"read": 0, "write": N * d}, "l": {"read": 0, "write": N}, "m": {"read": 0, "write": N}}
        post = {}
    else:
        ii, jj = np.nonzero(vis)                       # row-major: outer loop over i
        tensors = ("Q", "K", "V", "O", "lse")
        first = np.ones(ii.size, bool)
        first[1:] = ii[1:] != ii[:-1]
        last = np.ones(ii.size, bool)
        last[:-1] = ii[1:] != ii[:-1]
        nr = rows[ii]
        reads = np.stack([first * nr * d, cols[jj] * d, cols[jj] * d, 0 * nr, 0 * nr], axis=1)
        writes = np.stack([0 * nr, 0 * nr, 0 * nr, last * nr * d, last * nr], axis=1)
        pre = {}
        dead = int(rows[~vis.any(axis=1)].sum())
        post = {"O": {"read": 0, "write": dead * d}, "lse": {"read": 0, "write": dead}} if dead else {}
    return TileSchedule(loop_order, N, N_k, d, B_r, B_c, bool(causal), T_r, T_c,
                        np.stack([ii, jj], axis=1).astype(np.int64), tensors,
                        reads.astype(np.int64), writes.astype(np.int64), pre, post, bmap)
