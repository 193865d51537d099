"""labcore.paged: decode through a block table equals the contiguous reference; last-page waste."""
import numpy as np
import pytest

from labcore import reference_attention
from labcore.paged import PAGE_SIZES, gather_pages, page_waste, paginate, paged_decode_attention


def _requests(lengths, d=8, d_v=6, g=3, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((len(lengths), g, d)), [rng.standard_normal((n, d)) for n in lengths],
            [rng.standard_normal((n, d_v)) for n in lengths])


@pytest.mark.parametrize("page_size", PAGE_SIZES)
@pytest.mark.parametrize("shuffle", [None, 7])
def test_paged_equals_contiguous(page_size, shuffle):
    lengths = [1, 0, 200, 64, 129, 17]
    q, Ks, Vs = _requests(lengths)
    kc, vc, table, L = paginate(Ks, Vs, page_size=page_size, shuffle_seed=shuffle, spare_pages=3)
    if shuffle is not None and page_size < 64:
        assert not np.all(np.diff(table[2][table[2] >= 0]) == 1)      # pages really out of order
    O, lse = paged_decode_attention(q, kc, vc, table, L)
    for b, n in enumerate(lengths):
        if n == 0:
            assert np.all(O[b] == 0) and np.all(lse[b] == -np.inf)
            continue
        np.testing.assert_array_equal(gather_pages(kc, table[b], n), Ks[b])   # the gather moves values only
        o_ref, l_ref = reference_attention(q[b], Ks[b], Vs[b])
        np.testing.assert_allclose(O[b], o_ref, atol=1e-13)
        np.testing.assert_allclose(lse[b], l_ref, atol=1e-13)


def test_page_waste_hand_worked():
    w = page_waste([1, 16, 17, 0], 16)
    assert w["allocated"] == 16 + 16 + 32 and w["used"] == 34 and w["wasted"] == 30 and w["pages"] == 4
    assert w["waste_fraction"] == pytest.approx(30 / 64)
    assert page_waste([1, 16, 17, 0], 1)["wasted"] == 0
    many = page_waste(np.arange(1, 1 + 128 * 50), np.array(PAGE_SIZES))    # every remainder equally often
    np.testing.assert_allclose(many["mean_waste_per_request"], [(p - 1) / 2 for p in PAGE_SIZES])
    assert np.all(np.diff(many["waste_fraction"]) > 0)


def test_errors():
    q, Ks, Vs = _requests([4, 4])
    kc, vc, table, L = paginate(Ks, Vs, page_size=2)
    with pytest.raises(ValueError, match="must agree"):
        paged_decode_attention(q[:1], kc, vc, table, L)
    bad = table.copy()
    bad[0, 0] = 99
    with pytest.raises(ValueError, match="outside the pool"):
        paged_decode_attention(q, kc, vc, bad, L)
    with pytest.raises(ValueError, match="needs"):
        gather_pages(kc, table[0][:1], 4)
    with pytest.raises(ValueError, match="page_size"):
        page_waste([3], 0)
    with pytest.raises(ValueError, match="one"):
        paginate(Ks, Vs[:1], page_size=2)


def test_fa3_paged_kv_tma_condition():
    """FA3 takes a paged tile with TMA only when the page is a multiple of its key tile and the packed query rows
    exceed one query tile; at decode it gathers with cp.async."""
    from labcore.paged import fa3_forward_tile, fa3_paged_kv_uses_tma
    assert fa3_forward_tile(128) == (128, 176) and fa3_forward_tile(128, causal=True) == (128, 128)
    assert not fa3_paged_kv_uses_tma(16) and not fa3_paged_kv_uses_tma(64)             # vLLM's, FlashMLA's pages
    assert not fa3_paged_kv_uses_tma(256, causal=True)                                 # a multiple, but 1 row
    assert fa3_paged_kv_uses_tma(256, causal=True, seqlen_q=64, qheads_per_kvhead=4)   # 256 rows > 128
    assert not fa3_paged_kv_uses_tma(192, causal=True, seqlen_q=64, qheads_per_kvhead=4)    # at least, not a multiple
    assert fa3_paged_kv_uses_tma(352, seqlen_q=129)                                    # 2 x 176 keys
