"""Lab 1, a reference kernel: one row of scores in one pass (Milakov & Gimelshein 2018, online softmax)."""
import numpy as np

__all__: list = []      # a reference solution: shown on its lab's page, not part of the API


def kernel(cta, *, block_kv):
    """Stream S (N,) and V (N, d) in blocks of block_kv; store O (1, d) and the natural-log lse (1,)."""
    N, d = cta.shape("V")
    with cta.buffer(1, fill=-np.inf, name="m") as m, cta.buffer(1, name="l") as l, \
            cta.buffer((1, d), name="acc") as acc:
        for c0 in range(0, N, block_kv):
            c1 = min(c0 + block_kv, N)
            with cta.load("S", rows=(c0, c1)) as s, cta.load("V", rows=(c0, c1)) as V_j:
                m_new = np.maximum(m, s.max())        # the running maximum
                alpha = np.exp(m - m_new)             # moves the old l and acc to the new maximum (0 at first)
                p = np.exp(s - m_new)                 # this block's weights, each at most 1
                l[:] = alpha * l + p.sum()
                acc[:] = alpha * acc + p @ V_j
                m[:] = m_new
        cta.store("O", acc / l, rows=(0, 1))
        cta.store("lse", m + np.log(l), rows=(0, 1))
