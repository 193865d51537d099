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
from .checks import (MAX_ELEMENTS, MAX_ITEMS, array_list, at_most, cdiv, flag, int_array, int_table,
                     int_vector, positive_int, real_array, resolve_scale)
from .splits import MAX_SEQLEN
from .softmax import row_softmax

__all__ = ["PAGE_SIZES", "paginate", "gather_pages", "paged_decode_attention", "page_waste", "fa3_forward_tile",
           "fa3_paged_kv_uses_tma"]

#: Page sizes the book compares (tokens per page): 1 (no waste, a table entry per token), 16 (vLLM's default),
#: 64 (FlashMLA), 128.
PAGE_SIZES = (1, 16, 64, 128)

# FlashAttention-3's largest head dimension: its Hopper kernels are built for d = 64, 96, 128, 192 and 256 only.
_FA3_MAX_HEAD_DIM = 256


def _lengths(lengths):
    """Tokens per request: a non-empty 1-D integer array, each in [0, MAX_SEQLEN], at most MAX_ITEMS requests."""
    a = int_vector(lengths, "lengths", maximum=MAX_SEQLEN)
    at_most(a.size, "lengths", MAX_ITEMS, "requests")
    return a


def paginate(K_list, V_list, *, page_size: int, shuffle_seed: int | None = None, spare_pages: int = 0):
    """Copy contiguous per-request K and V into a paged pool with a block table.

    Args:
        K_list, V_list: lists (or tuples), per request a finite (L_b, d) and (L_b, d_v) real array (L_b may be 0;
            d, d_v >= 1, the same for every request).
        page_size: tokens per page (int >= 1).
        shuffle_seed: None keeps pages in request order; an int >= 0 shuffles the pool (a block table then points
            all over it).
        spare_pages: extra unused pages in the pool (int >= 0). Each pool (``pages x page_size x width``, the spare
            pages included) and the block table hold at most :data:`labcore.checks.MAX_ELEMENTS` elements.
    Returns:
        ``(k_cache, v_cache, block_table, lengths)``: (num_pages, page_size, d), (num_pages, page_size, d_v)
        float64 (unused slots zero), (batch, max_pages) int64 (``-1`` past a request's last page), (batch,)
        int64.

    Raises:
        TypeError: K_list or V_list not a list of real arrays (a string is never iterated); a size or seed that is
            not an integer.
        ValueError: mismatched K/V lengths or widths, a width of 0, NaN or inf, an empty list; a size < 0
            (page_size < 1); a pool or a block table larger than MAX_ELEMENTS.

    Source: Kwon et al. 2023 §4.2 (block table).
    """
    Ks, Vs = array_list(K_list, "K_list"), array_list(V_list, "V_list")
    ps = positive_int(page_size, "page_size")
    spare = positive_int(spare_pages, "spare_pages", minimum=0)
    seed = None if shuffle_seed is None else positive_int(shuffle_seed, "shuffle_seed", minimum=0)
    if len(Ks) != len(Vs):
        raise ValueError(f"K_list and V_list must hold one array per request each: {len(Ks)} vs {len(Vs)}")
    d, d_v = Ks[0].shape[1], Vs[0].shape[1]
    for name, arrays, width in (("K_list", Ks, d), ("V_list", Vs, d_v)):
        for i, a in enumerate(arrays):
            sym = "d" if name == "K_list" else "d_v"
            # a width of 0 would also make the pool's size 0 whatever spare_pages asks for
            if a.shape[1] < 1:
                raise ValueError(f"{name} must hold arrays of {sym} >= 1 columns; {name}[{i}] has shape {a.shape}")
            if a.shape[1] != width:
                raise ValueError(f"{name} must hold arrays of one width {sym}; {name}[{i}] has shape {a.shape}, "
                                 f"{name}[0] {arrays[0].shape}")
    for i, (k, v) in enumerate(zip(Ks, Vs)):
        if len(k) != len(v):
            raise ValueError(f"K_list[{i}] and V_list[{i}] must have one row per token each: {len(k)} vs {len(v)}")
    L = np.array([len(k) for k in Ks], np.int64)
    n_pages = cdiv(L, ps)
    total = int(n_pages.sum()) + spare
    at_most(total * ps * max(d, d_v), "page_size and spare_pages", MAX_ELEMENTS, "pool elements")
    at_most(L.size * max(1, int(n_pages.max())), "K_list and page_size", MAX_ELEMENTS, "block table entries")
    perm = np.arange(total) if seed is None else np.random.default_rng(seed).permutation(total)
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


def _check_table(table, L, cache, table_name: str, lengths_name: str, cache_name: str) -> None:
    """Every page the requests of ``L`` tokens need is in their row of ``table`` and inside the pool ``cache``."""
    if cache.shape[1] < 1:
        raise ValueError(f"{cache_name} must be (num_pages, page_size >= 1, width), got shape {cache.shape}")
    need = cdiv(L, cache.shape[1])
    if np.any(need > table.shape[1]):
        b = int(np.argmax(need > table.shape[1]))
        raise ValueError(f"a request of {lengths_name} {L[b]} tokens needs {need[b]} pages; its {table_name} row "
                         f"has {table.shape[1]}")
    used = table[np.arange(table.shape[1])[None, :] < need[:, None]]
    if np.any(used < 0) or np.any(used >= cache.shape[0]):
        raise ValueError(f"{table_name} points outside the pool of {cache.shape[0]} pages ({cache_name})")


def gather_pages(cache, block_table_row, length: int) -> np.ndarray:
    """The first ``length`` tokens of one request, gathered from its pages: ``cache[row[t // ps], t % ps]``.

    Args:
        cache: (num_pages, page_size, width) finite reals (page_size, width >= 1).
        block_table_row: (max_pages,) int page ids (an integer array).
        length: int in [0, max_pages x page_size]; ``length x width`` at most :data:`labcore.checks.MAX_ELEMENTS`.
    Returns:
        (length, width) float64.
    Raises:
        TypeError: cache not real; block_table_row not integers; length not an integer.
        ValueError: cache not 3-D, of width 0 or not finite; a needed table entry is missing or out of the pool; a
        result larger than MAX_ELEMENTS.
    Source:
        Kwon et al. 2023 §4.1 (logical to physical block mapping).
    """
    cache = real_array(cache, "cache", ndim=3, allow_empty=True)
    row = int_table(block_table_row, "block_table_row", ndim=1)
    n = positive_int(length, "length", minimum=0)
    if cache.shape[2] < 1:
        raise ValueError(f"cache must be (num_pages, page_size, width >= 1), got shape {cache.shape}")
    at_most(n * cache.shape[2], "length", MAX_ELEMENTS, "gathered elements")
    _check_table(row[None, :], np.array([n]), cache, "block_table_row", "length", "cache")
    ps = cache.shape[1]
    t = np.arange(n)
    pages = row[t // ps]
    return cache[pages, t % ps].astype(np.float64)


def paged_decode_attention(q, k_cache, v_cache, block_table, lengths, *, scale=None):
    """Decode attention of every request through its block table (one KV head; g query rows per request).

    Args:
        q: (batch, g, d) finite queries (g, d >= 1).
        k_cache: (num_pages, page_size, d) finite.
        v_cache: (num_pages, page_size, d_v) finite (d_v >= 1).
        block_table: (batch, max_pages) int page ids (an integer array; ``-1`` past a request's pages).
        lengths: (batch,) ints >= 0 (vLLM's ``seq_lens``; an integer array); ``sum(lengths) x (d + d_v + g)``, the
            keys, values and scores gathered, at most :data:`labcore.checks.MAX_ELEMENTS`.
        scale: default ``1/sqrt(d)``.
    Returns:
        ``(O, lse)``: (batch, g, d_v), (batch, g) float64 (zeros and ``-inf`` for a request with no keys).
    Raises:
        TypeError: an array of the wrong type (a float block table or lengths, a string).
        ValueError: shapes that do not agree, a width or g of 0, NaN or inf, table entries outside the pool, more
            than MAX_ELEMENTS gathered.
    Source:
        Kwon et al. 2023 §4.1 (PagedAttention kernel: fetch KV blocks through the block table).
    """
    q = real_array(q, "q", ndim=3, allow_empty=True)
    kc = real_array(k_cache, "k_cache", ndim=3, allow_empty=True)
    vc = real_array(v_cache, "v_cache", ndim=3, allow_empty=True)
    L = _lengths(lengths)
    table = int_table(block_table, "block_table", ndim=2)
    at_most(table.size, "block_table", MAX_ELEMENTS, "entries")
    # widths of 0 would divide by zero in the default scale and attend over nothing
    for name, a, what in (("q", q, "(batch, g >= 1, d >= 1)"), ("k_cache", kc, "(pages, page_size, d >= 1)"),
                          ("v_cache", vc, "(pages, page_size, d_v >= 1)")):
        if a.shape[2] < 1 or (name == "q" and a.shape[1] < 1):
            raise ValueError(f"{name} must be {what}, got shape {a.shape}")
    if q.ndim != 3 or kc.ndim != 3 or vc.ndim != 3 or kc.shape[:2] != vc.shape[:2] or kc.shape[2] != q.shape[2] \
            or table.ndim != 2 or table.shape[0] != q.shape[0] or L.size != q.shape[0]:
        raise ValueError(f"q (batch, g, d), k_cache (pages, page_size, d), v_cache (pages, page_size, d_v), "
                         f"block_table (batch, max_pages) and lengths (batch,) must agree; got {q.shape}, "
                         f"{kc.shape}, {vc.shape}, {table.shape}, {L.shape}")
    _check_table(table, L, kc, "block_table", "lengths", "k_cache")
    at_most(int(L.sum()) * (q.shape[2] + vc.shape[2] + q.shape[1]), "lengths", MAX_ELEMENTS,
            "gathered keys, values and scores")
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
        lengths: (batch,) ints >= 0 (an integer array).
        page_size: int in [1, :data:`labcore.splits.MAX_SEQLEN`], or an array of them (one result per size,
            vectorised; ``batch x sizes`` at most :data:`labcore.checks.MAX_ELEMENTS`).

    Returns:
        dict ``allocated``, ``used``, ``wasted`` (slots), ``waste_fraction`` (wasted / allocated), ``pages``
        and ``mean_waste_per_request`` (about ``(ps - 1) / 2`` when ``L mod ps`` is uniform).

    Raises:
        TypeError: lengths or page_size not integers (a string, a bool, a fraction).
        ValueError: bad lengths; page sizes out of range; too many of them.

    Source: Kwon et al. 2023 §4.2 (waste only in the last block of a request).
    """
    L = _lengths(lengths)
    page_size = int_array(page_size, "page_size", maximum=MAX_SEQLEN)
    at_most(L.size * np.size(page_size), "page_size", MAX_ELEMENTS, "(request, page size) pairs")
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
        head_dim: d (int in [1, 256]: FA3 is built for head dimensions up to 256).
        causal: bool.
    Returns:
        ``(kBlockM, kBlockN)``: query rows and keys per tile.
    Raises:
        TypeError/ValueError: a head dimension that is not an integer in [1, 256]; causal not a bool.
    Source:
        flash-attn ``hopper/tile_size.h`` (``tile_size_fwd_sm90``, element size 2) at commit 0251105a.
    """
    d = positive_int(head_dim, "head_dim", maximum=_FA3_MAX_HEAD_DIM)
    c = flag(causal, "causal")
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
        head_dim: d (int in [1, 256], as :func:`fa3_forward_tile`).
        seqlen_q: new tokens per request (int >= 1).
        qheads_per_kvhead: the GQA group (int >= 1).
        causal: bool.
    Returns:
        bool.
    Raises:
        TypeError/ValueError: sizes not integers >= 1 (head_dim past 256); causal not a bool.
    Source:
        flash-attn ``hopper/flash_api.cpp`` (``get_pagedkv_tma``) at commit 0251105a.
    """
    ps = positive_int(page_size, "page_size")
    rows = positive_int(seqlen_q, "seqlen_q") * positive_int(qheads_per_kvhead, "qheads_per_kvhead")
    bm, bn = fa3_forward_tile(head_dim, causal=causal)
    return ps % bn == 0 and rows > bm
