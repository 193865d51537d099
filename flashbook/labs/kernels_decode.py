"""Reference kernels of the flash-decoding lab (a split kernel over a grid, a combine kernel), the program
that launches them, and the named mistaken versions.

Source: Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference" (PyTorch blog, 2023-10-13):
split K/V, attend per split with its lse, then rescale and sum the partial outputs by their lse.
"""
from __future__ import annotations

import numpy as np

from labcore.checks import cdiv
from labcore.softmax import normalise, safe_lse

from .kernels_forward import named
from .steps import blocks, finish, finish_unguarded, online_step

__all__ = ["split_kernel", "combine_kernel", "flash_decoding", "DECODE_MISTAKES", "split_range"]


def split_range(pid: int, num_splits: int, N_k: int):
    """Keys ``[c0, c1)`` of split ``pid``: chunks of ``ceil(N_k / num_splits)``; trailing splits may be empty."""
    chunk = cdiv(N_k, num_splits)
    c0 = min(pid * chunk, N_k)
    return c0, min(c0 + chunk, N_k)


def split_kernel(cta, *, num_splits, block_kv, finish=finish):
    """CTA ``pid`` of the split grid: q (g, d) against its split of K, V (N_k, d), streamed in blocks;
    writes its partial output to rows ``[pid g, (pid+1) g)`` of O_part and its lse to lse_part."""
    g, d = cta.shape("q")
    c_start, c_stop = split_range(cta.pid, num_splits, cta.shape("K")[0])
    with cta.load("q") as q, cta.buffer(g, fill=-np.inf, name="m") as m, cta.buffer(g, name="l") as l, \
            cta.buffer((g, d), name="acc") as acc:
        for c0, c1 in blocks(c_stop - c_start, block_kv):
            with cta.load("K", rows=(c_start + c0, c_start + c1)) as K_j, \
                    cta.load("V", rows=(c_start + c0, c_start + c1)) as V_j:
                online_step(m, l, acc, (q @ K_j.T) / np.sqrt(d), V_j)
        O_s, lse_s = finish(m, l, acc)
    rows = (cta.pid * g, (cta.pid + 1) * g)
    cta.store("O_part", O_s, rows=rows)
    cta.store("lse_part", lse_s, rows=rows)


def combine_kernel(cta, *, num_splits, weighted=True):
    """The combine CTA: lse = log sum_s exp(lse_s), O = sum_s exp(lse_s - lse) O_s (empty splits weigh 0)."""
    g, d = cta.shape("O")
    with cta.load("O_part") as O_parts, cta.load("lse_part") as lse_parts:
        O_s, lse_s = O_parts.reshape(num_splits, g, d), lse_parts.reshape(num_splits, g)
        lse_max = lse_s.max(axis=0)
        w = np.exp(lse_s - np.where(np.isfinite(lse_max), lse_max, 0.0))      # 0 for an empty split
        if weighted:
            O = normalise((w[..., None] * O_s).sum(axis=0), w.sum(axis=0))
        else:
            O = O_s.mean(axis=0)                                               # the mistake: no lse weights
        cta.store("O", O, rows=(0, g))
        cta.store("lse", safe_lse(lse_max, w.sum(axis=0)), rows=(0, g))


def flash_decoding(chip, *, num_splits, block_kv=16, split=split_kernel, combine=combine_kernel):
    """The program: allocate O_part (num_splits g, d) and lse_part, launch ``num_splits`` split CTAs, then the
    combine kernel (a kernel boundary: every split is finished before the combine starts)."""
    g, d = chip["q"].shape
    chip.allocate("O_part", (num_splits * g, d))
    chip.allocate("lse_part", (num_splits * g,))
    chip.launch(split, grid=num_splits, num_splits=num_splits, block_kv=block_kv)
    chip.launch(combine, grid=1, num_splits=num_splits)


DECODE_MISTAKES = {
    "mean_combine": named("decode_mean_combine", flash_decoding,
                          combine=named("combine_mean", combine_kernel, weighted=False)),
    "empty_nan": named("decode_empty_nan", flash_decoding,
                       split=named("split_unguarded", split_kernel, finish=finish_unguarded)),
}
