"""The numbers book/04_flash_forward quotes (FlashAttention's IO count against Theorem 2; FP8 in §4.5)."""

from __future__ import annotations

from functools import cache

import labcore as lc
from labcore.published import published

from . import Numbers

__all__ = ["numbers", "fp8_numbers"]

#: The sequence lengths §4.3 sweeps (one head, d = 64).
SEQLENS = (512, 1024, 2048, 4096, 8192)


@cache
def numbers(M: int = 51_200, d: int = 64, N: int = 4096) -> Numbers:
    """Fields, for one head with SRAM ``M`` elements (default 100 KiB of FP16) and the paper's block sizes:

    - ``per_step_nonmatmul_pct`` / ``deferred_nonmatmul_pct``: non-matmul FLOPs in % of the matmul FLOPs (N = 4096,
      d = 128, fa1 / fa2 order) and ``per_step_time_pct`` / ``deferred_time_pct``: the same times FlashAttention-2's
      cost ratio (``fa2.nonmatmul_cost_ratio``), in % of the matmul time;
    - at ``N``: ``fa1_hbm_elements`` (Algorithm 1 order), ``fa1_hbm_MB`` and ``standard_hbm_MB`` (FP16 MB),
      ``standard_over_fa1``;
    - over :data:`SEQLENS`, each as ``_lo`` / ``_hi``: ``fa1_over_bound`` and ``fa2_over_bound`` (traffic over
      N^2 d^2 / M), ``fa2_br128_over_bound`` (FA-2 order with B_r = 128), ``standard_over_flash`` (Algorithm 0
      over the leaner flash order at M), ``fa2_over_fa1`` (FA-2 order over Algorithm 1 at the paper's blocks);
    - ``fa1_MB_at_16KiB`` / ``fa1_MB_at_256KiB``: Algorithm 1's FP16 MB at N with 16 and 256 KiB of SRAM;
    - ``fp8``: :func:`fp8_numbers` at the paper's setting.

    Raises: as :func:`labcore.flash_forward_io`. Source: Dao et al. 2022, Theorem 2; FlashAttention-2 §3.1.
    """
    B_r, B_c = lc.paper_block_sizes(M, d)
    fl = {o: lc.attention_flops(4096, 128, algorithm="flash", loop_order=o) for o in ("fa1", "fa2")}
    share = {o: 100 * f.non_matmul / f.matmul for o, f in fl.items()}
    cost = published("fa2.nonmatmul_cost_ratio").value
    fa1_io = lc.flash_forward_io(N, d, block_q=B_r, block_kv=B_c, loop_order="fa1")
    std_io = lc.standard_attention_io(N, d)
    bound = {n: lc.flash_io_bound(n, d, M) for n in SEQLENS}
    at_sram = lambda n, order: lc.flash_forward_io_at_sram(n, d, M=M, loop_order=order)  # noqa: E731

    def paper(n, order, b_r=B_r):  # the paper's block sizes (B_r optionally 128)
        return lc.flash_forward_io(n, d, block_q=b_r, block_kv=B_c, loop_order=order)

    ranges = {
        "fa1_over_bound": [at_sram(n, "fa1") / bound[n] for n in SEQLENS],
        "fa2_over_bound": [at_sram(n, "fa2") / bound[n] for n in SEQLENS],
        "fa2_br128_over_bound": [paper(n, "fa2", 128) / bound[n] for n in SEQLENS],
        "standard_over_flash": [
            lc.standard_attention_io(n, d) / lc.flash_forward_io_at_sram(n, d, M=M) for n in SEQLENS
        ],
        "fa2_over_fa1": [paper(n, "fa2") / paper(n, "fa1") for n in SEQLENS],
    }
    lo_hi = {f"{k}_{end}": f(v) for k, v in ranges.items() for end, f in (("lo", min), ("hi", max))}
    sram_MB = {kb: lc.flash_forward_io_at_sram(N, d, M=kb * 1024 // 2) * 2 / 1e6 for kb in (16, 256)}
    return Numbers(
        per_step_nonmatmul_pct=share["fa1"],
        deferred_nonmatmul_pct=share["fa2"],
        per_step_time_pct=cost * share["fa1"],
        deferred_time_pct=cost * share["fa2"],
        fa1_hbm_elements=fa1_io,
        fa1_hbm_MB=fa1_io * 2 / 1e6,
        standard_hbm_MB=std_io * 2 / 1e6,
        standard_over_fa1=std_io / fa1_io,
        **lo_hi,
        fa1_MB_at_16KiB=sram_MB[16],
        fa1_MB_at_256KiB=sram_MB[256],
        fp8=fp8_numbers(),
    )


def fp8_numbers(**kwargs) -> Numbers:
    """The numbers §4.5 quotes about the FP8 experiment.

    Args:
        **kwargs: passed to :func:`labcore.fp8_attention_errors` (``N``, ``d``, ``block``, ``outlier_fraction``,
            ``outlier_std``, ``seed``); every variant of ``labcore.VARIANTS`` is run, so ``variants`` is not allowed.

    Returns:
        Numbers with ``errors`` (the full result of :func:`labcore.fp8_attention_errors`, for the table);
        ``precision_bits`` (E4M3's bits of precision, mantissa + 1, int) and ``max_value`` (its largest value);
        ``outlier_pct`` (outlier fraction in %), ``outlier_std``, ``N``, ``d``, ``block`` (the setting);
        ``baseline_rmse`` and ``both_tricks_rmse`` (per-tensor FP8, and FP8 with block scales and the
        rotation), ``gain_both`` = baseline / both and the paper's ``paper_gain_both``; ``gain_rotation`` /
        ``gain_block_scales`` (the baseline's RMSE over that of the rotation alone / block scales alone) and the
        paper's ``paper_gain_rotation`` / ``paper_gain_block_scales``; ``fp16_flash_gain`` (standard FP16 RMSE
        over flash FP16 RMSE) and ``paper_fp16_flash_gain``. RMSE are dimensionless (unit-variance inputs).

    Raises:
        TypeError: if ``variants`` is given.
        ValueError/TypeError: for bad arguments (see :func:`labcore.fp8_attention_errors`).

    Source:
        FlashAttention-3 paper (arXiv 2407.08608), Section 4.3, Table 3; the E4M3 format from ``labcore.FORMATS``.
    """
    if "variants" in kwargs:
        raise TypeError("fp8_numbers runs every variant; do not pass variants")
    res = lc.fp8_attention_errors(**kwargs)
    e, p, s = res["rmse"], res["paper"], res["setting"]
    fmt = lc.FORMATS["fp8_e4m3"]
    return Numbers(
        errors=res,
        precision_bits=fmt.mantissa_bits + 1,
        max_value=fmt.max,
        outlier_pct=100 * s["outlier_fraction"],
        outlier_std=s["outlier_std"],
        N=s["N"],
        d=s["d"],
        block=s["block"],
        baseline_rmse=e["fp8_per_tensor"],
        both_tricks_rmse=e["fp8_block_incoherent"],
        gain_both=res["ratio"],
        paper_gain_both=res["paper_ratio"],
        gain_rotation=e["fp8_per_tensor"] / e["fp8_incoherent"],
        gain_block_scales=e["fp8_per_tensor"] / e["fp8_block"],
        paper_gain_rotation=p["fp8_per_tensor"] / p["fp8_incoherent"],
        paper_gain_block_scales=p["fp8_per_tensor"] / p["fp8_block"],
        fp16_flash_gain=e["fp16_standard"] / e["fp16"],
        paper_fp16_flash_gain=p["fp16_standard"] / p["fp16"],
    )
