"""flash-attn 2.x's split-KV heuristic and block sizes: how many splits a decode step gets (lecture §6.4).

:func:`num_splits_heuristic` is flash-attn's ``num_splits_heuristic`` (one function, vectorised with numpy: it
takes ints or int arrays); :func:`flash_attn_block_n` its KV block length; :func:`flash_attn_num_splits` the
split count flash-attn chooses for a decode step, GQA packed as flash-attn packs it. The decode time model
(:mod:`labcore.decode_time`) calls them for its ``num_splits="heuristic"`` rules.

Also the input limits of the decode model (:data:`MAX_SEQLEN`, :data:`MAX_BATCH`) and :func:`decode_shape`, the
one check of a decode step's shape.

Source: flash-attn 2.x ``csrc/flash_attn/flash_api.cpp`` (``num_splits_heuristic``, ``set_params_splitkv``).
"""
from __future__ import annotations

import numpy as np

from .checks import cdiv, int_array, positive_int
from .decode import gqa_group_size
from .hardware import GPU, get_gpu

__all__ = ["MAX_SEQLEN", "MAX_BATCH", "flash_attn_block_n", "num_splits_heuristic", "flash_attn_num_splits"]

#: Input limits of the decode model: far beyond any real cache (2^40 tokens, 2^24 sequences), low
#: enough that int64 arithmetic and the arrays stay small. Split counts are capped by
#: :data:`labcore.decode.MAX_SPLITS`.
MAX_SEQLEN = 2 ** 40
MAX_BATCH = 2 ** 24


def decode_shape(batch, seqlen, num_q_heads, num_kv_heads, head_dim) -> tuple:
    """A decode step's shape, checked: ``(batch, seqlen, H_q, H_kv, d)``.

    Args: batch, seqlen: ints or int arrays that broadcast together (at most :data:`MAX_BATCH` and
        :data:`MAX_SEQLEN`). num_q_heads, num_kv_heads: ints, ``H_q`` a multiple of ``H_kv``. head_dim: int >= 1.
    Raises: TypeError/ValueError for non-integers, values out of range, shapes that do not broadcast, or
        ``H_q`` not a multiple of ``H_kv``.
    """
    gqa_group_size(num_q_heads, num_kv_heads)
    batch, seqlen = int_array(batch, "batch", maximum=MAX_BATCH), int_array(seqlen, "seqlen", maximum=MAX_SEQLEN)
    try:
        np.broadcast(batch, seqlen)
    except ValueError:
        raise ValueError(f"batch (shape {np.shape(batch)}) and seqlen (shape {np.shape(seqlen)}) must broadcast "
                         "together, e.g. batch[:, None] and seqlen[None, :]") from None
    return batch, seqlen, int(num_q_heads), int(num_kv_heads), positive_int(head_dim, "head_dim")


def flash_attn_block_n(head_dim: int) -> int:
    """flash-attn 2.x's KV block length for the split-KV heuristic: 256 if d <= 64, 128 if d <= 128, else 64.

    Source: flash-attn ``flash_api.cpp`` (``set_params_splitkv``).
    """
    d = positive_int(head_dim, "head_dim")
    return 256 if d <= 64 else (128 if d <= 128 else 64)


def num_splits_heuristic(batch_nheads_mblocks, num_sms: int, num_n_blocks, max_splits: int = 128):
    """flash-attn 2.x's ``num_splits_heuristic``, line for line, on ints or on int arrays at once.

    If ``batch_nheads_mblocks >= 0.8 x num_sms``: 1 split. Otherwise, for ``s = 1 .. min(max_splits,
    num_sms, num_n_blocks)``, skipping ``s`` whose ``ceil(num_n_blocks / s)`` equals that of ``s - 1``
    (same blocks per split), wave efficiency ``n_waves / ceil(n_waves)`` with ``n_waves =
    batch_nheads_mblocks x s / num_sms`` (in float32, as the C++); return the smallest eligible ``s`` whose
    efficiency is at least 0.85 x the best.

    Args:
        batch_nheads_mblocks: CTAs without splitting (batch x heads x ceil(seqlen_q / 64), after GQA packing):
            an int >= 1 or an int array.
        num_sms: the SM count the heuristic is given (flash-attn >= 2.5.7 passes 2 x the real count), int >= 1.
        num_n_blocks: KV blocks, ``ceil(seqlen_k / block_n)``: an int >= 1 or an int array broadcasting with
            ``batch_nheads_mblocks``.
        max_splits: 128 in flash-attn.
    Returns:
        int >= 1 when both are ints, else an int64 array of their broadcast shape.
    Raises:
        TypeError/ValueError for non-integers, values < 1 or arrays that do not broadcast.
    Source:
        flash-attn ``csrc/flash_attn/flash_api.cpp`` (2.x).
    """
    scalar = np.ndim(batch_nheads_mblocks) == 0 and np.ndim(num_n_blocks) == 0
    blocks = np.asarray(int_array(batch_nheads_mblocks, "batch_nheads_mblocks"), dtype=np.int64)
    nblocks = np.asarray(int_array(num_n_blocks, "num_n_blocks"), dtype=np.int64)
    try:
        np.broadcast(blocks, nblocks)
    except ValueError:
        raise ValueError(f"batch_nheads_mblocks (shape {blocks.shape}) and num_n_blocks (shape {nblocks.shape}) "
                         "must broadcast together") from None
    out = _heuristic(blocks, positive_int(num_sms, "num_sms"), nblocks, positive_int(max_splits, "max_splits"))
    return int(out) if scalar else out


def _heuristic(blocks: np.ndarray, sms: int, nblocks: np.ndarray, max_splits: int) -> np.ndarray:
    """:func:`num_splits_heuristic` on checked int64 arrays: every split count ``s`` on a new leading axis."""
    nd = max(blocks.ndim, nblocks.ndim)          # the same number of axes, without broadcasting their sizes
    blocks = blocks.reshape((1,) * (nd - blocks.ndim) + blocks.shape)[None]
    nblocks = nblocks.reshape((1,) * (nd - nblocks.ndim) + nblocks.shape)[None]
    top = min(max_splits, sms)
    s = np.arange(1, top + 1).reshape((top,) + (1,) * nd)
    eligible = ((s == 1) | (cdiv(nblocks, s) != cdiv(nblocks, np.maximum(s - 1, 1)))) & (s <= nblocks)
    n_waves = (blocks * s).astype(np.float32) / np.float32(sms)        # C++ float arithmetic
    eff = np.where(eligible, (n_waves / np.ceil(n_waves)).astype(np.float64), -1.0)
    best = eff.max(axis=0)
    first = np.argmax(eff >= 0.85 * best[None], axis=0) + 1
    return np.where(blocks[0] >= 0.8 * sms, 1, first).astype(np.int64)


def flash_attn_num_splits(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim, sm_doubling=True):
    """The split count flash-attn 2.x would choose for a decode step (one query per sequence).

    Decode with GQA is packed as flash-attn does (``seqlenq_ngroups_swapped``): heads = H_kv and
    seqlen_q = g, so CTAs without splitting = ``batch x H_kv x ceil(g / 64)``; KV blocks =
    ``ceil(seqlen / block_n)`` with :func:`flash_attn_block_n`.

    Args:
        gpu: preset name or GPU.
        batch, seqlen: ints or int arrays (broadcast). heads, head_dim: ints.
        sm_doubling: True (flash-attn >= 2.5.7, the default now) passes ``2 x num_sms`` to the heuristic,
            "to hard-code the fact that we're using 128 threads per block"; False reproduces earlier
            versions (such as those of the 2023 flash-decoding post).
    Returns:
        int, or int array of the broadcast shape.
    Raises:
        as :func:`labcore.decode_attention_time`.
    Source:
        flash-attn ``flash_api.cpp`` ``set_params_splitkv``.
    """
    gpu = get_gpu(gpu)
    batch, seqlen, hq, hkv, d = decode_shape(batch, seqlen, num_q_heads, num_kv_heads, head_dim)
    out = flash_attn_splits(gpu, batch, seqlen, hq, hkv, d, sm_doubling)
    return int(out) if out.ndim == 0 else out


def flash_attn_splits(gpu: GPU, batch, seqlen, num_q_heads: int, num_kv_heads: int, head_dim: int,
                      sm_doubling: bool) -> np.ndarray:
    """:func:`flash_attn_num_splits` for a resolved ``gpu`` and a checked shape (:func:`decode_shape`),
    unchecked; returns an int64 array (0-d for scalar ``batch`` and ``seqlen``)."""
    sms = gpu.num_sms * (2 if sm_doubling else 1)
    blocks = np.asarray(batch, dtype=np.int64) * num_kv_heads * cdiv(num_q_heads // num_kv_heads, 64)
    nblocks = cdiv(np.asarray(seqlen, dtype=np.int64), flash_attn_block_n(head_dim))
    return _heuristic(blocks, sms, nblocks, 128)
