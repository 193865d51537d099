"""HBM traffic accounting: the Ledger every algorithm writes into, and closed forms to check it against.

Counting convention (GUIDE §3, lecture §2): traffic is the number of *elements* of the tensors an
algorithm explicitly writes back to or reads back from HBM. Statistics (m, l, lse, D) count as elements
too. Bytes = elements x ``dtype_bytes`` (2 for FP16/BF16) unless the caller says otherwise.
"""
from __future__ import annotations

from collections import defaultdict

from ._checks import positive_int

__all__ = ["Ledger", "standard_attention_io", "score_to_input_ratio"]


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
        N: number of queries (int >= 1). d: head dimension (int >= 1). N_k: number of keys (default N).
    Returns:
        int, elements (multiply by 2 for FP16 bytes).
    Raises:
        TypeError/ValueError: a size that is not an integer >= 1.
    """
    N = positive_int(N, "N")
    d = positive_int(d, "d")
    N_k = N if N_k is None else positive_int(N_k, "N_k")
    return N * d + N_k * d + N * N_k + 2 * N * N_k + N * N_k + N_k * d + N * d


def score_to_input_ratio(N: int, d: int) -> float:
    """How many times larger one head's score matrix S (N x N) is than one input (N x d): ``N / d``.

    64 at N = 8192, d = 128 (lecture §1).
    """
    return positive_int(N, "N") / positive_int(d, "d")
