"""HBM traffic accounting: the Ledger every algorithm writes into, and closed forms to check it against.

This module is the one place that counts bytes and elements moved (FLOPs are counted in :mod:`labcore.flops`):
standard attention (Algorithm 0, Algorithm 3), the FlashAttention forward in both loop orders and its
backward, a whole training step, the bytes a forward keeps for its backward, and Theorem 2's bound.
Block sizes are keyword-only, ``block_q`` (B_r, flash-attn's ``kBlockM``) and ``block_kv`` (B_c, ``kBlockN``),
with ``loop_order`` ("fa1"/"fa2"), ``causal`` and ``N_k`` (keys, default N) as everywhere in labcore.

Counting convention (lecture §2): traffic is the number of *elements* of the tensors an
algorithm explicitly writes back to or reads back from HBM. Statistics (m, l, lse, D) count as elements
too. Bytes = elements x ``dtype_bytes`` (2 for FP16/BF16) unless the caller says otherwise.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .checks import LOOP_ORDERS, cdiv, choice, flag, key_count, positive_int

__all__ = ["Ledger", "standard_attention_io", "score_to_input_ratio", "flash_forward_io", "flash_backward_io",
           "standard_backward_io", "flash_backward_atomics", "causal_block_counts", "MAX_BLOCKS", "saved_for_backward_bytes", "flash_io_bound",
           "training_step_io"]

#: Block-by-block bookkeeping (query blocks here; block pairs in :func:`labcore.causal_block_map` and
#: the tile schedule) handles at most this many entries, far beyond any real kernel's grid.
MAX_BLOCKS = 2 ** 24


class Ledger:
    """Counts the elements an algorithm reads from and writes to HBM, per named tensor.

    Algorithms call ``read(name, n)`` / ``write(name, n)`` at the exact point their pseudo-code reads or
    writes HBM. With ``record_steps=True`` every call is also appended to ``steps`` (for the tiling
    visualisations).

    Attributes:
        reads, writes, total: element counts (int).
    """

    def __init__(self, *, record_steps: bool = False):
        self._reads: dict[str, int] = defaultdict(int)
        self._writes: dict[str, int] = defaultdict(int)
        self.record_steps = bool(record_steps)
        self.steps: list[tuple[str, str, int]] = []

    def _add(self, table, kind, name, n):
        if not isinstance(name, str) or not name:
            raise TypeError(f"tensor name must be a non-empty string, got {name!r}")
        n = positive_int(n, "n", minimum=0)
        table[name] += n
        if self.record_steps:
            self.steps.append((kind, name, n))

    def read(self, name: str, n: int) -> None:
        """Record that ``n`` elements of tensor ``name`` were read from HBM."""
        self._add(self._reads, "read", name, n)

    def write(self, name: str, n: int) -> None:
        """Record that ``n`` elements of tensor ``name`` were written to HBM."""
        self._add(self._writes, "write", name, n)

    @property
    def reads(self) -> int:
        """Total elements read."""
        return sum(self._reads.values())

    @property
    def writes(self) -> int:
        """Total elements written."""
        return sum(self._writes.values())

    @property
    def total(self) -> int:
        """Elements read + written."""
        return self.reads + self.writes

    def by_tensor(self) -> dict[str, dict[str, int]]:
        """``{name: {"read": n, "write": n}}`` for every tensor touched, in first-touch order."""
        names = list(dict.fromkeys(list(self._reads) + list(self._writes)))
        return {n: {"read": self._reads.get(n, 0), "write": self._writes.get(n, 0)} for n in names}

    def bytes(self, dtype_bytes: int = 2) -> int:
        """Total traffic in bytes: ``total`` x ``dtype_bytes`` (2 = FP16/BF16)."""
        return self.total * positive_int(dtype_bytes, "dtype_bytes")

    def __repr__(self) -> str:
        return f"Ledger(reads={self.reads:,}, writes={self.writes:,}, total={self.total:,})"


def standard_attention_io(N: int, d: int, *, N_k: int | None = None) -> int:
    """Elements moved by Algorithm 0 (standard attention), the FlashAttention paper's baseline.

    Read Q, K (N d + N_k d); write S (N N_k); read S, write P (2 N N_k); read P, V (N N_k + N_k d);
    write O (N d). With N_k = N this is ``4 N d + 4 N^2`` (lecture §2; FlashAttention paper,
    Algorithm 0 and Theorem 2).

    Args:
        N: number of queries (int >= 1).
        d: head dimension (int >= 1).
        N_k: number of keys (default N).
    Returns:
        int, elements (multiply by 2 for FP16 bytes).
    Raises:
        TypeError/ValueError: a size that is not an integer >= 1.
    """
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    N_k = key_count(N, N_k)
    return N * d + N_k * d + N * N_k + 2 * N * N_k + N * N_k + N_k * d + N * d


def score_to_input_ratio(N: int, d: int) -> float:
    """How many times larger one head's score matrix S (N x N) is than one input (N x d): ``N / d``.

    64 at N = 8192, d = 128 (lecture §1).
    """
    return positive_int(N, "N") / positive_int(d, "d")


# ---------------------------------------------------------------------------------------------------------
# FlashAttention closed forms (lecture §4.3 and §5.2), each checked against the ledger of its algorithm. Every formula below is the sum, over the
# blocks an algorithm visits, of what its pseudo-code reads and writes. tests/test_flash.py checks each one
# against the Ledger of the running algorithm, element for element and tensor by tensor.
# ---------------------------------------------------------------------------------------------------------


def _sizes(N, d, *, block_q, block_kv, N_k):
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    B_r = positive_int(block_q, "block_q")
    B_c = positive_int(block_kv, "block_kv")
    return N, d, B_r, B_c, key_count(N, N_k)


def causal_block_counts(N: int, *, block_q: int, block_kv: int, causal: bool = False, N_k: int | None = None):
    """Per query block i: its row count and how many K/V blocks (and key columns) it must visit.

    Query block i holds rows ``[i B_r, min((i+1) B_r, N))``; key block j holds columns
    ``[j B_c, min((j+1) B_c, N_k))``. With the bottom-right causal mask (query r sees key c iff
    ``c <= r + N_k - N``) the visible key blocks of a query block are a prefix ``j < J_i`` with
    ``J_i = clip(floor((r_last + N_k - N) / B_c) + 1, 0, T_c)``; without the mask ``J_i = T_c``.

    Args:
        N: queries (int >= 1).
        block_q: B_r (int >= 1; flash-attn's kBlockM).
        block_kv: B_c (int >= 1; flash-attn's kBlockN).
        causal: bool.
        N_k: keys (default N).
    Returns:
        ``(rows, J, cols)``: int64 arrays of length T_r = ceil(N / B_r): rows in each query block,
        number of visible key blocks, and number of key columns in those blocks.
    Raises:
        TypeError/ValueError: sizes that are not integers >= 1; more than :data:`MAX_BLOCKS` query blocks.
    Source:
        FlashAttention paper (Dao et al. 2022) §3.1 block-sparse / causal skipping; FlashAttention-2 (Dao 2023) §3.1.1
        causal masking; bottom-right alignment as flash-attn >= 2.1.
    """
    causal = flag(causal, "causal")
    N, B_r, B_c, N_k = (positive_int(N, "N"), positive_int(block_q, "block_q"),
                        positive_int(block_kv, "block_kv"), key_count(N, N_k))
    T_r = cdiv(N, B_r)
    T_c = cdiv(N_k, B_c)
    if T_r > MAX_BLOCKS:
        raise ValueError(f"N = {N:,} in blocks of {B_r} is {T_r:,} query blocks; at most {MAX_BLOCKS:,} are counted "
                         "one by one (use larger blocks)")
    start = np.arange(T_r, dtype=np.int64) * B_r
    stop = np.minimum(start + B_r, N)
    rows = stop - start
    if causal:
        last_visible = (stop - 1) + (N_k - N)          # last key the block's last query may see
        J = np.where(last_visible >= 0, last_visible // B_c + 1, 0)
        J = np.clip(J, 0, T_c)
    else:
        J = np.full(T_r, T_c, dtype=np.int64)
    cols = np.minimum(J * B_c, N_k)
    return rows, J.astype(np.int64), cols.astype(np.int64)


def _tensor_table(entries):
    """``{name: {"read": r, "write": w}}`` from (name, read, write) triples, dropping untouched tensors."""
    out = {}
    for name, r, w in entries:
        r, w = int(r), int(w)
        if r or w:
            out[name] = {"read": r, "write": w}
    return out


def _total(table):
    return sum(v["read"] + v["write"] for v in table.values())


def flash_forward_io(N: int, d: int, *, block_q: int, block_kv: int, loop_order: str = "fa2",
                     causal: bool = False, N_k: int | None = None, by_tensor: bool = False):
    """Elements moved by the FlashAttention forward pass, as counted by ``flash_attention_forward``'s ledger.

    ``"fa1"`` (paper Algorithm 1, outer loop over K/V blocks): write the initial O, l, m (N d + 2 N); read
    each K_j, V_j once (2 N_k d); for every visited pair (j, i) read Q_i, O_i, l_i, m_i and write O_i, l_i,
    m_i, i.e. ``rows_i (3 d + 4)``. Without a mask: ``3 N d + 2 N + T_c (3 N d + 4 N)``.

    ``"fa2"`` (FlashAttention-2, outer loop over Q blocks): read Q_i once (skipped for a query block that
    sees no key); for every visited pair read K_j, V_j (``2 cols_j d``); write O_i and lse_i once
    (N d + N). Without a mask: ``2 N d + N + 2 T_r N_k d``.

    With ``causal=True`` blocks entirely above the (bottom-right aligned) diagonal are neither read nor
    computed, exactly as in the algorithm.

    Args:
        N: queries (int >= 1).
        d: head dimension of Q, K, V and O (int >= 1).
        block_q: B_r (flash-attn's kBlockM).
        block_kv: B_c (kBlockN).
        loop_order: "fa1" or "fa2".
        causal: skip fully masked blocks.
        N_k: keys (default N).
        by_tensor: return ``{tensor: {"read": n, "write": n}}`` instead of the total.
    Returns:
        int elements (x 2 for FP16 bytes), or the per-tensor dict.
    Raises:
        TypeError/ValueError: sizes not integers >= 1; an unknown loop_order.
    Source: Dao et al. 2022, Algorithm 1 and Theorem 2 (proof in Appendix C); Dao 2023, Algorithm 1.
    """
    causal = flag(causal, "causal")
    N, d, B_r, B_c, N_k = _sizes(N, d, block_q=block_q, block_kv=block_kv, N_k=N_k)
    loop_order = choice(loop_order, "loop_order", LOOP_ORDERS)
    rows, J, cols = causal_block_counts(N, block_q=B_r, block_kv=B_c, causal=causal, N_k=N_k)
    if loop_order == "fa1":
        pair_rows = int((rows * J).sum())               # sum over visited pairs of the query block's rows
        T_c = cdiv(N_k, B_c)
        seen = np.zeros(T_c, dtype=bool)
        seen[: int(J.max()) if J.size else 0] = True   # K/V blocks some query block visits (a prefix)
        kv_cols = int(min(int(seen.sum()) * B_c, N_k))
        table = _tensor_table([
            ("O", pair_rows * d, N * d + pair_rows * d),
            ("l", pair_rows, N + pair_rows),
            ("m", pair_rows, N + pair_rows),
            ("K", kv_cols * d, 0),
            ("V", kv_cols * d, 0),
            ("Q", pair_rows * d, 0),
        ])
    else:
        q_rows = int(rows[J > 0].sum())
        kv_cols = int(cols.sum())
        table = _tensor_table([
            ("Q", q_rows * d, 0),
            ("K", kv_cols * d, 0),
            ("V", kv_cols * d, 0),
            ("O", 0, N * d),
            ("lse", 0, N),
        ])
    return table if by_tensor else _total(table)


def flash_io_bound(N: int, d: int, M: int, *, N_k: int | None = None) -> float:
    """Theorem 2's order of the FlashAttention forward's HBM traffic: ``N N_k d^2 / M`` elements (``N^2 d^2 / M``
    when ``N_k = N``).

    The forward in Algorithm 1 order moves about ``4 N N_k d^2 / M`` (O written once per key block,
    ``T_c ~ 4 N_k d / M`` times); dividing :func:`flash_forward_io` by this bound gives a ratio that is flat
    in N (the §4 figures). With ``N_k != N`` the theorem's argument counts each of the ``T_c`` passes over the
    ``N`` queries, hence ``N N_k``.

    Args:
        N: sequence length (queries).
        d: head dimension.
        M: SRAM size in elements. All ints >= 1.
        N_k: keys (int >= 1; default N).
    Returns:
        float, elements.
    Raises:
        TypeError/ValueError: sizes not integers >= 1.
    Source:
        Dao et al. 2022, Theorem 2 (Theta(N^2 d^2 M^-1) HBM accesses) and Proposition 3 (lower bound).
    """
    N, d, M = positive_int(N, "N"), positive_int(d, "d"), positive_int(M, "M")
    return N * key_count(N, N_k) * d * d / M


def standard_backward_io(N: int, d: int, *, N_k: int | None = None, by_tensor: bool = False):
    """Elements moved by the standard attention backward pass (FlashAttention paper, Algorithm 3).

    P was stored by the forward pass (Algorithm 0). Steps: read P, dO, write dV; read dO, V, write dP;
    read P, dP, write dS; read dS, K, write dQ; read dS, Q, write dK. With N_k = N:
    ``7 N^2 + 8 N d``. A causal mask changes nothing here: the N x N matrices are stored whole.

    Args:
        N: queries (int >= 1).
        d: head dimension (int >= 1).
        N_k: keys (default N).
        by_tensor: return the per-tensor dict instead of the total.
    Returns:
        int elements, or ``{tensor: {"read": n, "write": n}}``.
    Raises:
        TypeError/ValueError: sizes that are not integers >= 1.
    Source: Dao et al. 2022, Appendix B.2, Algorithm 3.
    """
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    N_k = key_count(N, N_k)
    nn = N * N_k
    table = _tensor_table([
        ("P", 2 * nn, 0),
        ("dO", 2 * N * d, 0),
        ("dV", 0, N_k * d),
        ("V", N_k * d, 0),
        ("dP", nn, nn),
        ("dS", 2 * nn, nn),
        ("K", N_k * d, 0),
        ("dQ", 0, N * d),
        ("Q", N * d, 0),
        ("dK", 0, N_k * d),
    ])
    return table if by_tensor else _total(table)


# ---------------------------------------------------------------------------------------------------------
# memory a forward keeps for its backward; a whole training step (forward + backward) of one head
# ---------------------------------------------------------------------------------------------------------


def saved_for_backward_bytes(N: int, *, algorithm: str, num_matrices: int = 1, N_k: int | None = None,
                             p_bytes: int = 2, lse_bytes: int = 4) -> int:
    """Bytes an attention forward keeps for its backward, beyond Q, K, V, O.

    Standard: the probability matrix P (N x N_k, ``p_bytes`` each, FP16 = 2). FlashAttention: the row
    statistic L = lse (N values, ``lse_bytes`` each, FP32 = 4). Lecture §5.2: 32 attention matrices at
    N = 32768 need 68.7 GB of P but 4.2 MB of L.

    Args:
        N: queries (int >= 1).
        algorithm: "standard" or "flash".
        num_matrices: heads x layers x batch
        counted (int >= 1).
        N_k: keys (default N).
        p_bytes, lse_bytes: bytes per element (ints >= 1).
    Returns:
        int bytes.
    Raises:
        TypeError/ValueError: non-integer or < 1 sizes; unknown algorithm.
    Source: Dao et al. 2022 §3.1 (recomputation) and Theorem 1 (O(N) extra memory).
    """
    N = positive_int(N, "N")
    algorithm = choice(algorithm, "algorithm", ("standard", "flash"))
    k = positive_int(num_matrices, "num_matrices")
    N_k = key_count(N, N_k)
    if algorithm == "standard":
        return k * N * N_k * positive_int(p_bytes, "p_bytes")
    return k * N * positive_int(lse_bytes, "lse_bytes")


def training_step_io(N: int, d: int, *, algorithm: str, block_q: int = 128, block_kv: int = 128,
                     loop_order: str = "fa2", causal: bool = False, N_k: int | None = None,
                     by_tensor: bool = False):
    """Elements moved by one forward + backward of one head (closed forms, equal to the ledgers).

    standard: Algorithm 0 + Algorithm 3 (``11 N^2 + 12 N d`` for N_k = N). flash: the forward in
    ``loop_order`` plus the FlashAttention backward, with the same B_r x B_c blocks.

    Args:
        N, d: sizes (ints >= 1).
        algorithm: "standard" or "flash". block_q, block_kv, loop_order, causal,
        N_k: as :func:`labcore.hbm.flash_forward_io` (ignored by "standard", which always stores whole
        matrices).
        by_tensor: return ``{"forward": {...}, "backward": {...}}`` per-tensor dicts.
    Returns:
        int elements (x 2 for FP16 bytes), or the nested dict.
    Raises:
        TypeError/ValueError: as the closed forms; unknown algorithm.
    Source: Dao et al. 2022, Algorithms 0, 1, 3, 4; lecture §4.4 and §5.2.
    """
    causal = flag(causal, "causal")
    algorithm = choice(algorithm, "algorithm", ("standard", "flash"))
    if algorithm == "standard":
        f = _standard_forward_table(N, d, N_k)
        b = standard_backward_io(N, d, N_k=N_k, by_tensor=True)
    else:
        f = flash_forward_io(N, d, block_q=block_q, block_kv=block_kv, loop_order=loop_order, causal=causal,
                             N_k=N_k, by_tensor=True)
        b = flash_backward_io(N, d, block_q=block_q, block_kv=block_kv, causal=causal, N_k=N_k, by_tensor=True)
    if by_tensor:
        return {"forward": f, "backward": b}
    return sum(v["read"] + v["write"] for t in (f, b) for v in t.values())


def _standard_forward_table(N, d, N_k):
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    N_k = key_count(N, N_k)
    t = {"Q": {"read": N * d, "write": 0}, "K": {"read": N_k * d, "write": 0},
         "S": {"read": N * N_k, "write": N * N_k}, "P": {"read": N * N_k, "write": N * N_k},
         "V": {"read": N_k * d, "write": 0}, "O": {"read": 0, "write": N * d}}
    assert sum(v["read"] + v["write"] for v in t.values()) == standard_attention_io(N, d, N_k=N_k)
    return t


#: How the backward accumulates dQ (:func:`flash_backward_io`): read and written back per pair (one CTA, in
#: order), added atomically by a grid of one CTA per key block, or written per key block and summed afterwards.
DQ_ACCUMULATIONS = ("read_write", "atomic", "split")


def flash_backward_io(N: int, d: int, *, block_q: int, block_kv: int, causal: bool = False,
                      N_k: int | None = None, by_tensor: bool = False, dq: str = "read_write"):
    """Elements moved by the FlashAttention backward pass, as counted by ``flash_attention_backward``'s ledger.

    Counting (every read and write is HBM, lecture §5.2): before the loop read O, dO and write
    D = rowsum(dO * O) (2 N d + N), and write dQ = 0 (N d). Outer loop over K/V blocks j: read K_j, V_j
    (2 N_k d in all) and finally write dK_j, dV_j (2 N_k d). For every visited pair (j, i): read Q_i,
    dO_i, lse_i, D_i and, with ``dq="read_write"``, read dQ_i and write it back, i.e. ``rows_i (4 d + 2)``.
    Without a mask: ``7 N d + N + 4 N_k d - 4 N d + T_c N (4 d + 2)``, i.e. ``7 N d + N + T_c N (4 d + 2)`` for
    N_k = N. With ``dq="atomic"`` (one CTA per key block adding into dQ, as FlashAttention-2 runs it) dQ is only
    written once (the zeros, which flash-attn's pre-pass kernel writes with D) in this table, and the pairs' adds
    are counted apart: :func:`flash_backward_atomics`. With ``dq="split"`` (the deterministic order: each key
    block writes its part of dQ_i to its own slice of a ``dQ_part`` buffer, then a reduction kernel reads every
    part once, in a fixed order, and writes dQ) there are no zeros and no adds: ``dQ_part`` is written and read
    ``rows_i d`` per visited pair, dQ written ``N d``.

    Args:
        N: queries.
        d: head dimension.
        block_q: B_r (kBlockM).
        block_kv: B_c (kBlockN) (ints >= 1).
        causal: skip fully masked blocks.
        N_k: keys (default N).
        by_tensor: return the per-tensor dict.
        dq: one of :data:`DQ_ACCUMULATIONS`: ``"read_write"`` (dQ_i read, updated and written back per pair),
            ``"atomic"`` or ``"split"``.
    Returns:
        int elements, or ``{tensor: {"read": n, "write": n}}``.
    Raises:
        TypeError/ValueError: sizes that are not integers >= 1; an unknown ``dq``.
    Source: Dao et al. 2022, Algorithm 4 (with D computed before the loop as in Dao 2023, Algorithm 2; dQ added
    atomically as in FlashAttention-2's backward kernel, flash-attn 2.x ``csrc/flash_attn/src/flash_bwd_kernel.h``;
    the split order as its deterministic mode's per-split dQ accumulators, ``flash_bwd_launch_template.h``).
    """
    causal = flag(causal, "causal")
    dq = choice(dq, "dq", DQ_ACCUMULATIONS)
    N, d, B_r, B_c, N_k = _sizes(N, d, block_q=block_q, block_kv=block_kv, N_k=N_k)
    rows, J, cols = causal_block_counts(N, block_q=B_r, block_kv=B_c, causal=causal, N_k=N_k)
    pair_rows = int((rows * J).sum())
    dq_rw = pair_rows * d if dq == "read_write" else 0
    table = _tensor_table([
        ("O", N * d, 0),
        ("dO", N * d + pair_rows * d, 0),
        ("D", pair_rows, N),
        ("dQ", dq_rw, N * d + dq_rw),
        ("dQ_part", pair_rows * d if dq == "split" else 0, pair_rows * d if dq == "split" else 0),
        ("K", N_k * d, 0),
        ("V", N_k * d, 0),
        ("Q", pair_rows * d, 0),
        ("lse", pair_rows, 0),
        ("dK", 0, N_k * d),
        ("dV", 0, N_k * d),
    ])
    return table if by_tensor else _total(table)


def flash_backward_atomics(N: int, d: int, *, block_q: int, block_kv: int, causal: bool = False,
                           N_k: int | None = None) -> int:
    """Elements added atomically into dQ by the backward run as one CTA per key block: ``d`` per row of every
    visited (key block, query block) pair (``T_c N d`` without a mask).

    Args/Raises: as :func:`flash_backward_io`. Returns: int elements.
    Source: FlashAttention-2 (Dao 2023), Algorithm 2 run with one thread block per key block (its §3.2), dQ_i
    accumulated with atomic adds.
    """
    causal = flag(causal, "causal")
    N, d, B_r, B_c, N_k = _sizes(N, d, block_q=block_q, block_kv=block_kv, N_k=N_k)
    rows, J, _ = causal_block_counts(N, block_q=B_r, block_kv=B_c, causal=causal, N_k=N_k)
    return int((rows * J).sum()) * d


def softmax_fusion_io(rows: int, N: int) -> dict:
    """HBM elements moved by a row softmax of a (rows, N) matrix, unfused versus fused (lecture §7).

    Unfused (the naive PyTorch-style program of Triton's fused-softmax tutorial, with R = ``rows``):
    ``m = x.max(1)`` reads RN, writes R; ``z = x - m`` reads RN + R, writes RN; ``e = exp(z)`` reads RN,
    writes RN; ``s = e.sum(1)`` reads RN, writes R; ``y = e / s`` reads RN + R, writes RN. In all
    ``5RN + 2R`` reads and ``3RN + 2R`` writes. Fused: read x once, write y once (``2RN``), the row kept
    on chip. Ratio ``(8RN + 4R) / 2RN = 4 + 2/N`` -> 4 for long rows (lecture §7, rule 1).

    Args:
        rows: rows of the matrix (int >= 1; Triton's tutorial calls it M, the papers' M is SRAM size).
        N: row length, the softmax's width (int >= 1).
    Returns:
        dict with ``unfused_reads``, ``unfused_writes``, ``unfused``, ``fused`` (elements) and ``ratio``.
    Raises:
        TypeError/ValueError for sizes that are not integers >= 1.
    Source:
        Triton tutorial "Fused Softmax" (02-fused-softmax.py).
    """
    rows = positive_int(rows, "rows")
    N = positive_int(N, "N")
    reads, writes = 5 * rows * N + 2 * rows, 3 * rows * N + 2 * rows
    fused = 2 * rows * N
    return {"unfused_reads": reads, "unfused_writes": writes, "unfused": reads + writes, "fused": fused,
            "ratio": (reads + writes) / fused}


__all__ += ["softmax_fusion_io"]


def online_softmax_row_io(N: int, d: int) -> dict:
    """Elements moved by the one-pass online softmax of one row: ``{tensor: {"read": n, "write": n}}``.

    The row of scores S (N) and the values V (N x d) are each read once; the output o (d, stored as "O")
    and the row's lse (1) are written once: ``N + N d + d + 1`` elements (lecture §3.1).

    Args:
        N: scores in the row (int >= 1).
        d: head dimension (int >= 1).
    Returns:
        per-tensor dict (tensors "S", "V", "O", "lse").
    Raises:
        TypeError/ValueError for sizes that are not integers >= 1.
    Source:
        Milakov & Gimelshein 2018 (online normalizer); FlashAttention-2 Algorithm 1 for one query row.
    """
    N, d = positive_int(N, "N"), positive_int(d, "d")
    return _tensor_table([("S", N, 0), ("V", N * d, 0), ("O", 0, d), ("lse", 0, 1)])


def split_kv_io(N_k: int, d: int, *, num_splits: int, rows: int = 1) -> dict:
    """Elements moved by flash-decoding's two kernels for ``rows`` query rows against ``N_k`` keys.

    Split kernel (one CTA per split, empty splits included): read the query rows (``rows d`` per split),
    read its K and V rows (``2 N_k d`` over all splits), write its partial output and lse
    (``rows (d + 1)`` per split, tensors "O_part" and "lse_part"). Combine kernel: read every partial and
    lse, write O and lse once. Query tensor "q", outputs "O" and "lse".

    Args:
        N_k: keys (int >= 1).
        d: head dimension.
        num_splits: splits (int >= 1).
        rows: query rows (the GQA group; int >= 1).

    Returns:
        per-tensor dict ``{tensor: {"read": n, "write": n}}``.

    Raises:
        TypeError/ValueError for sizes that are not integers >= 1.
    Source: Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference" (PyTorch blog, 2023).
    """
    N_k, d = positive_int(N_k, "N_k"), positive_int(d, "d")
    s, r = positive_int(num_splits, "num_splits"), positive_int(rows, "rows")
    return _tensor_table([("q", s * r * d, 0), ("K", N_k * d, 0), ("V", N_k * d, 0),
                          ("O_part", s * r * d, s * r * d), ("lse_part", s * r, s * r),
                          ("O", 0, r * d), ("lse", 0, r)])


__all__ += ["online_softmax_row_io", "split_kv_io"]


def row_lse_io(rows: int, N: int, *, passes: int = 1) -> dict:
    """Elements moved by a kernel that writes the log-sum-exp of each row of a (rows, N) score matrix S.

    A safe two-pass kernel reads S once for the row maxima and once for the sums of ``exp(s - max)``
    (``passes=2``); the online kernel keeps a running maximum and rescales its sum, reading S once
    (``passes=1``). Either writes one lse per row. ``{"S": {"read": passes rows N}, "lse": {"write": rows}}``.

    Args:
        rows: rows of S (int >= 1).
        N: scores per row (int >= 1).
        passes: reads of every score (1 or 2).
    Returns:
        per-tensor dict ``{tensor: {"read": n, "write": n}}``.
    Raises:
        TypeError/ValueError for sizes that are not integers >= 1, or passes other than 1 or 2.
    Source:
        Milakov & Gimelshein 2018, "Online normalizer calculation for softmax", Algorithms 2 and 3 (their
        normaliser is the sum; its log plus the maximum is lse).
    """
    rows, N = positive_int(rows, "rows"), positive_int(N, "N")
    passes = positive_int(passes, "passes", maximum=2)
    return _tensor_table([("S", passes * rows * N, 0), ("lse", 0, rows)])


__all__ += ["row_lse_io", "DQ_ACCUMULATIONS"]
