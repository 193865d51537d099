"""The FlashAttention-4 tile roofline: cycles one SM spends on one tile on the tensor cores, the exp unit and SMEM.

:func:`tile_roofline` applies the formulas of the FlashAttention-4 paper (Zadouri et al. 2026, Sec. 3.1.1 and
3.2.1, Tables 1 and 3) to a GPU preset's per-SM rates; :mod:`labcore.prefill` builds its time model on it and
re-exports these names.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .checks import choice, positive_int
from .hardware import GPU, get_gpu

__all__ = ["TileRoofline", "tile_roofline", "tile_roofline_of", "roofline_table", "binding_units", "FA4_MMA_ROWS",
           "PREFILL_DTYPES", "DTYPE_BYTES"]

#: Rows of one MMA tile per CTA on Blackwell (FlashAttention-4 Sec. 2.2: 128 x N per CTA); the forward
#: shared-memory formula counts the operand reads of one 128-row MMA (Sec. 3.1.1: ``3 M N d / 8192`` cycles in
#: the paper's names, ``3 block_q block_kv d / 8192`` here).
FA4_MMA_ROWS = 128

_UNITS = ("MMA", "exp", "SMEM")
#: Bytes per element of each input format the tile roofline knows.
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp8": 1}
PREFILL_DTYPES = tuple(DTYPE_BYTES)


def _rate(gpu: GPU, field: str) -> float:
    v = getattr(gpu, field)
    if v is None:
        raise ValueError(f"{gpu.name}: {field} is not published ({gpu.rate_source(field)}); the model needs it")
    return float(v)


def _mma_rate(gpu: GPU, dtype: str) -> float:
    if dtype == "fp8":
        if gpu.fp8_flop_per_clock_per_sm is None:
            raise ValueError(f"{gpu.name} has no FP8 tensor cores ({gpu.rate_source('fp8_flop_per_clock_per_sm')})")
        return float(gpu.fp8_flop_per_clock_per_sm)
    return _rate(gpu, "tensor_flop_per_clock_per_sm")


@dataclass(frozen=True)
class TileRoofline:
    """Cycles of one tile on one SM (FlashAttention-4 Tables 1 and 3).

    Attributes:
        gpu: preset name. ``pass_``: ``"forward"`` or ``"backward"``. block_q, block_kv, d: the tile's query
            rows (B_r; the FA4 paper's M, flash-attn's kBlockM), keys (B_c; the paper's N, kBlockN), head dim.
        dtype: operand type. mma, exp, smem: cycles on the tensor cores, the exponential unit and shared memory.
        bound: the unit(s) with the most cycles, e.g. ``"MMA = exp"`` or ``"SMEM"``.
    """

    gpu: str
    pass_: str
    block_q: int
    block_kv: int
    d: int
    dtype: str
    mma: float
    exp: float
    smem: float
    bound: str

    @property
    def cycles(self) -> float:
        """The bound: ``max(mma, exp, smem)``."""
        return max(self.mma, self.exp, self.smem)

    def excess_over_mma(self) -> float:
        """``max(exp, smem) / mma - 1``: how far the slowest non-MMA unit exceeds the tensor cores."""
        return max(self.exp, self.smem) / self.mma - 1

    def as_dict(self) -> dict:
        """All fields as a plain dict."""
        return asdict(self)


def binding_units(values: dict, rtol: float = 1e-9) -> str:
    """The units whose cycles are the largest of ``values`` (``{unit: cycles}``), joined by " = " when they tie
    within ``rtol``: the tile's bound (``"mma"``, ``"exp = mma"``). Source: the roofline's max (Williams et al. 2009)."""
    top = max(values.values())
    return " = ".join(k for k, v in values.items() if v >= top * (1 - rtol))


def tile_roofline(gpu, *, block_q: int | None = None, block_kv: int | None = None, d: int = 128,
                  pass_: str = "forward", dtype: str = "bf16", M: int | None = None,
                  N: int | None = None) -> TileRoofline:
    """Cycles one SM spends on one FlashAttention tile on the tensor cores, the exp unit and shared memory.

    A tile is ``B_r = block_q`` query rows by ``B_c = block_kv`` keys (the FA4 paper writes M x N; flash-attn's
    kBlockM x kBlockN). Forward (FlashAttention-4 Sec. 3.1.1), with R the dense tensor FLOP/clock/SM, E the
    exps/clock/SM and B the shared-memory bytes/clock/SM of ``gpu``:

    - MMA: ``4 B_r B_c d / R`` (S = Q K^T and O = P V);
    - exp: ``B_r B_c / E`` (one exponential per score);
    - SMEM: operand reads ``b x 3 B_c d`` bytes per 128-row MMA, i.e. ``b x 3 B_r B_c d / 128 / B`` (b = bytes
      per element; on B200 in BF16 the paper's ``3 M N d / 8192``).

    Backward, one CTA (Sec. 3.2.1): MMA ``10 B_r B_c d / R`` (five matmuls); exp ``B_r B_c / E`` (P recomputed);
    SMEM ``((4 B_r d + 3 B_c d + B_r B_c) / 64 + B_r B_c / 64 + B_r d / 16) x 128 / B`` (the paper's cycle count
    at 128 B/clock, BF16 operands and FP32 dQ traffic). The 2-CTA backward (B_r = 256, which the paper reports
    about 5% over MMA) is not modelled.

    The same formulas on A100 and H100 show the MMA column halving each generation while the exp and SMEM
    columns stay put (all three GPUs have 16 exps and 128 B of shared memory per clock per SM).

    Args:
        gpu: preset name or GPU. block_q, block_kv (default 128 each), d: ints >= 1 (the paper's formulas take
            multiples of 128; block_q = 256 is the 2-CTA forward tile). ``pass_``: ``"forward"`` or ``"backward"``.
        dtype: ``"fp16"``, ``"bf16"`` or ``"fp8"`` (forward only; needs FP8 tensor cores).
        M, N: the paper's names for block_q, block_kv, still accepted (one or the other, not both) for notebook
            calls written before the rename.
    Returns:
        :class:`TileRoofline`.
    Raises:
        TypeError/ValueError: bad sizes, pass or dtype; M with block_q (or N with block_kv) both given; a GPU
            whose needed rate is not published; FP8 on a GPU without FP8 tensor cores or in the backward pass.
    Source: Zadouri et al. 2026 (FlashAttention-4), Sec. 2.2 (rates), 3.1.1, 3.2.1, Tables 1 and 3.
    """
    g = get_gpu(gpu)
    block_q, block_kv = _paper_alias(block_q, M, "block_q", "M"), _paper_alias(block_kv, N, "block_kv", "N")
    Br, Bc, d = positive_int(block_q, "block_q"), positive_int(block_kv, "block_kv"), positive_int(d, "d")
    pass_ = choice(pass_, "pass_", ("forward", "backward"))
    dtype = choice(dtype, "dtype", PREFILL_DTYPES)
    if pass_ == "backward" and dtype == "fp8":
        raise ValueError("the FP8 backward pass is not modelled (FlashAttention-3/4 report FP8 forward only)")
    return tile_roofline_of(g, Br, Bc, d, pass_, dtype)


def tile_roofline_of(g: GPU, Br: int, Bc: int, d: int, pass_: str, dtype: str) -> TileRoofline:
    """:func:`tile_roofline` for a resolved :class:`~labcore.hardware.GPU` ``g`` and already checked block sizes
    ``Br``, ``Bc``, head dimension ``d``, pass and dtype (the prefill model resolves its preset once and calls
    this per tile). Returns a :class:`TileRoofline`. Source: as :func:`tile_roofline`."""
    R = _mma_rate(g, dtype)
    E = _rate(g, "exp_ops_per_clock_per_sm")
    B = _rate(g, "smem_bytes_per_clock_per_sm")
    b = DTYPE_BYTES[dtype]
    if pass_ == "forward":
        mma = 4 * Br * Bc * d / R
        smem = b * 3 * Br * Bc * d / FA4_MMA_ROWS / B
    else:
        mma = 10 * Br * Bc * d / R
        smem = ((4 * Br * d + 3 * Bc * d + Br * Bc) / 64 + Br * Bc / 64 + Br * d / 16) * 128 / B
    exp = Br * Bc / E
    vals = {"MMA": mma, "exp": exp, "SMEM": smem}
    return TileRoofline(g.name, pass_, Br, Bc, d, dtype, mma, exp, smem, binding_units(vals))


def _paper_alias(value, paper_value, name: str, paper_name: str, default: int = 128):
    """``value`` of keyword ``name``, else the FA4 paper's ``paper_name`` for it, else ``default``."""
    if value is not None and paper_value is not None:
        raise TypeError(f"give {name} or {paper_name} (the paper's name for it), not both")
    return default if value is None and paper_value is None else (paper_value if value is None else value)


def roofline_table(gpus=("A100-40GB-SXM", "H100-SXM", "B200"), *, block_q: int = 128, block_kv: int = 128, d: int = 128,
                   pass_: str = "forward") -> list:
    """:func:`tile_roofline` of one tile on several GPUs: rows ``(gpu, MMA, exp, SMEM, bound)`` (cycles).

    Args:
        gpus: preset names. block_q, block_kv, d, ``pass_``: as :func:`tile_roofline` (BF16).
    Raises:
        as :func:`tile_roofline`.
    """
    rows = []
    for name in gpus:
        t = tile_roofline(name, block_q=block_q, block_kv=block_kv, d=d, pass_=pass_)
        rows.append((t.gpu, t.mma, t.exp, t.smem, t.bound))
    return rows
