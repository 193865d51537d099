"""Paged KV cache: decode attention through a ``block_table`` gather, and the memory the last page wastes.

The cache is a pool of fixed-size pages, ``k_cache`` and ``v_cache`` of shape (num_pages, page_size, d); request
b owns the pages ``block_table[b, :ceil(L_b / page_size)]`` in order, and its key t lives at
``page = block_table[b, t // page_size]``, slot ``t % page_size``. Pages need not be contiguous or in order, so
memory is allocated a page at a time; only the last, partial page of a request wastes slots.

:func:`paginate` builds such a cache from contiguous per-request K and V (optionally with the pages shuffled in
the pool); :func:`paged_decode_attention` gathers each request's keys through the block table and attends, and
equals the contiguous reference exactly (the gather moves values, it does not change them);
:func:`page_waste` counts the slots lost to partial last pages over a length distribution.

Sources: Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving with PagedAttention"
(SOSP'23), §4.1-§4.2 (KV blocks, block tables; waste only in a request's last block, "under 4%" in their
measurements); vLLM ``block_tables``; FlashMLA README (paged KV with block size 64).
"""
from __future__ import annotations

import numpy as np

from .attention import masked_scores
from .checks import as_real, cdiv, positive_int, resolve_scale
from .softmax import row_softmax

__all__ = ["PAGE_SIZES", "paginate", "gather_pages", "paged_decode_attention", "page_waste", "fa3_forward_tile",
           "fa3_paged_kv_uses_tma"]

#: Page sizes the book compares (tokens per page): 1 (no waste, a table entry per token), 16 (vLLM's default),
#: 64 (FlashMLA), 128.
PAGE_SIZES = (1, 16, 64, 128)


def _lengths(lengths):
    a = np.asarray(lengths)
    if a.dtype.kind not in "iu" or a.ndim != 1 or a.size < 1 or np.any(a < 0):
        raise ValueError(f"lengths must be a non-empty 1-D array of integers >= 0, got {lengths!r}")
    return a.astype(np.int64)


def paginate(K_list, V_list, *, page_size: int, shuffle_seed: int | None = None, spare_pages: int = 0):
    """Copy contiguous per-request K and V into a paged pool with a block table.

    Args:
        K_list, V_list: per request a (L_b, d) and (L_b, d_v) real array (L_b may be 0).
        page_size: tokens per page (int >= 1).
        shuffle_seed: None keeps pages in request order; an int shuffles the pool (a block table then points all
            over it).
        spare_pages: extra unused pages in the pool (int >= 0).
    Returns:
        ``(k_cache, v_cache, block_table, lengths)``: (num_pages, page_size, d), (num_pages, page_size, d_v)
        float64 (unused slots zero), (batch, max_pages) int64 (``-1`` past a request's last page), (batch,)
        int64.

    Raises:
        ValueError: mismatched K/V lengths or widths.

    Source: Kwon et al. 2023 §4.2 (block table).
    """
    ps = positive_int(page_size, "page_size")
    Ks, Vs = [as_real(k, "K") for k in K_list], [as_real(v, "V") for v in V_list]
    if len(Ks) != len(Vs) or not Ks or any(k.ndim != 2 or v.ndim != 2 or len(k) != len(v) for k, v in zip(Ks, Vs)):
        raise ValueError("K_list and V_list must hold one (L_b, d) and one (L_b, d_v) array per request")
    d, d_v = Ks[0].shape[1], Vs[0].shape[1]
    if any(k.shape[1] != d for k in Ks) or any(v.shape[1] != d_v for v in Vs):
        raise ValueError("every request's K must have the same d and every V the same d_v")
    L = np.array([len(k) for k in Ks], np.int64)
    n_pages = cdiv(L, ps)
    total = int(n_pages.sum()) + positive_int(spare_pages, "spare_pages", minimum=0)
    perm = np.arange(total) if shuffle_seed is None else \
        np.random.default_rng(positive_int(shuffle_seed, "shuffle_seed", minimum=0)).permutation(total)
    k_cache, v_cache = np.zeros((total, ps, d)), np.zeros((total, ps, d_v))
    table = np.full((L.size, max(1, int(n_pages.max()))), -1, np.int64)
    nxt = 0
    for b in range(L.size):
        for p in range(int(n_pages[b])):
            page = int(perm[nxt])
            nxt += 1
            a, e = p * ps, min((p + 1) * ps, int(L[b]))
            k_cache[page, : e - a], v_cache[page, : e - a] = Ks[b][a:e], Vs[b][a:e]
            table[b, p] = page
    return k_cache, v_cache, table, L


def gather_pages(cache, block_table_row, length: int) -> np.ndarray:
    """The first ``length`` tokens of one request, gathered from its pages: ``cache[row[t // ps], t % ps]``.

    Args:
        cache: (num_pages, page_size, width).
        block_table_row: (max_pages,) int page ids.
        length: int >= 0.
    Returns:
        (length, width) float64.
    Raises:
        ValueError: a needed table entry is missing or out of the pool.
    Source:
        Kwon et al. 2023 §4.1 (logical to physical block mapping).
    """
    cache = np.asarray(cache)
    ps = cache.shape[1]
    n = positive_int(length, "length", minimum=0)
    t = np.arange(n)
    row = np.asarray(block_table_row, np.int64)
    if cdiv(n, ps) > row.size:
        raise ValueError(f"a request of {n} tokens needs {cdiv(n, ps)} pages; its block table row has {row.size}")
    pages = row[t // ps]
    if np.any(pages < 0) or np.any(pages >= cache.shape[0]):
        raise ValueError(f"block table points outside the pool of {cache.shape[0]} pages")
    return cache[pages, t % ps].astype(np.float64)


def paged_decode_attention(q, k_cache, v_cache, block_table, lengths, *, scale=None):
    """Decode attention of every request through its block table (one KV head; g query rows per request).

    Args:
        q: (batch, g, d) queries.
        k_cache: (num_pages, page_size, d).
        v_cache: (num_pages, page_size, d_v).
        block_table: (batch, max_pages) int page ids.
        lengths: (batch,) ints >= 0 (vLLM's ``seq_lens``).
        scale: default ``1/sqrt(d)``.
    Returns:
        ``(O, lse)``: (batch, g, d_v), (batch, g) float64 (zeros and ``-inf`` for a request with no keys).
    Raises:
        ValueError: shapes that do not agree, table entries outside the pool.
    Source:
        Kwon et al. 2023 §4.1 (PagedAttention kernel: fetch KV blocks through the block table).
    """
    q = as_real(q, "q")
    kc, vc = as_real(k_cache, "k_cache"), as_real(v_cache, "v_cache")
    L = _lengths(lengths)
    table = np.asarray(block_table)
    if q.ndim != 3 or kc.ndim != 3 or vc.ndim != 3 or kc.shape[:2] != vc.shape[:2] or kc.shape[2] != q.shape[2] \
            or table.ndim != 2 or table.shape[0] != q.shape[0] or L.size != q.shape[0]:
        raise ValueError(f"q (batch, g, d), k_cache (pages, page_size, d), v_cache (pages, page_size, d_v), "
                         f"block_table (batch, max_pages) and lengths (batch,) must agree; got {q.shape}, "
                         f"{kc.shape}, {vc.shape}, {table.shape}, {L.shape}")
    s = resolve_scale(scale, q.shape[2])
    O, lse = np.zeros(q.shape[:2] + (vc.shape[2],)), np.full(q.shape[:2], -np.inf)
    for b in range(q.shape[0]):
        if L[b] == 0:
            continue
        K, V = gather_pages(kc, table[b], int(L[b])), gather_pages(vc, table[b], int(L[b]))
        P, lse[b] = row_softmax(masked_scores(q[b], K, scale=s))
        O[b] = P @ V
    return O, lse


def page_waste(lengths, page_size) -> dict:
    """Slots allocated and wasted by whole pages: ``allocated = sum_b ceil(L_b / ps) ps``, waste = allocated - sum L.

    Args:
        lengths: (batch,) ints >= 0.
        page_size: int >= 1, or an int array (one result per size, vectorised).

    Returns:
        dict ``allocated``, ``used``, ``wasted`` (slots), ``waste_fraction`` (wasted / allocated), ``pages``
        and ``mean_waste_per_request`` (about ``(ps - 1) / 2`` when ``L mod ps`` is uniform).

    Raises:
        ValueError: bad lengths or page sizes < 1.

    Source: Kwon et al. 2023 §4.2 (waste only in the last block of a request).
    """
    L = _lengths(lengths)
    ps = np.asarray(page_size)
    if ps.dtype.kind not in "iu" or np.any(ps < 1):
        raise ValueError(f"page_size must be an int >= 1 (or an int array), got {page_size!r}")
    pages = cdiv(L[None, :], ps.reshape(-1, 1)).sum(axis=1)
    alloc = pages * ps.reshape(-1)
    used = int(L.sum())
    wasted = alloc - used
    frac = np.where(alloc > 0, wasted / np.maximum(alloc, 1), 0.0)
    out = {"allocated": alloc, "used": used, "wasted": wasted, "waste_fraction": frac, "pages": pages,
           "mean_waste_per_request": wasted / L.size}
    if ps.ndim == 0:
        out = {k: (v.item() if isinstance(v, np.ndarray) else v) for k, v in out.items()}
    return out


def fa3_forward_tile(head_dim: int, *, causal: bool = False) -> tuple[int, int]:
    """FlashAttention-3's forward tile ``(kBlockM, kBlockN)`` on Hopper for FP16/BF16 with ``d_v = d``, no local
    window, no softcap and K/V fetched by TMA (the configuration its paged-KV check assumes).

    Args:
        head_dim: d (int >= 1).
        causal: bool.
    Returns:
        ``(kBlockM, kBlockN)``: query rows and keys per tile.
    Raises:
        TypeError/ValueError: a bad head dimension.
    Source:
        flash-attn ``hopper/tile_size.h`` (``tile_size_fwd_sm90``, element size 2) at commit 0251105a.
    """
    d = positive_int(head_dim, "head_dim")
    c = bool(causal)
    if d <= 64:
        return 192, 128 if c else 192
    if d <= 96:
        return 192, 144
    if d <= 128:
        return 128, 128 if c else 176
    if d <= 192:
        return 128, 112             # d_v = d > 128
    return 128, 80


def fa3_paged_kv_uses_tma(page_size: int, *, head_dim: int = 128, seqlen_q: int = 1, qheads_per_kvhead: int = 1,
                          causal: bool = False) -> bool:
    """Whether FlashAttention-3 fetches a paged K/V tile with one TMA copy, or gathers it with ``cp.async``.

    Two conditions, both from the code: the page holds a whole number of key tiles (``page_size % kBlockN == 0``, a
    multiple, not merely at least one tile), and the packed query rows exceed one query tile (``seqlen_q x
    qheads_per_kvhead > kBlockM``): at decode, with fewer rows than a tile, the kernel is not compute-bound and "using
    TMA is slower", so it gathers. With FA3's tiles (:func:`fa3_forward_tile`) neither vLLM's 16-token pages nor
    FlashMLA's 64 qualify at d = 128.

    Args:
        page_size: tokens per page (int >= 1).
        head_dim: d (int >= 1).
        seqlen_q: new tokens per request (int >= 1).
        qheads_per_kvhead: the GQA group (int >= 1).
        causal: bool.
    Returns:
        bool.
    Raises:
        TypeError/ValueError: sizes not integers >= 1.
    Source:
        flash-attn ``hopper/flash_api.cpp`` (``get_pagedkv_tma``) at commit 0251105a.
    """
    ps = positive_int(page_size, "page_size")
    rows = positive_int(seqlen_q, "seqlen_q") * positive_int(qheads_per_kvhead, "qheads_per_kvhead")
    bm, bn = fa3_forward_tile(head_dim, causal=causal)
    return ps % bn == 0 and rows > bm
