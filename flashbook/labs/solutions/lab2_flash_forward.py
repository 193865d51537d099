"""Lab 2, a reference kernel: FlashAttention's forward in Algorithm 1's order (Dao et al. 2022, Algorithm 1)."""
import numpy as np

__all__: list = []      # a reference solution: shown on its lab's page, not part of the API


def kernel(cta, *, block_q, block_kv):
    """Q (N, d), K, V (N_k, d) -> O (N, d), l, m (N,) in HBM; O_i normalised after every key block."""
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    scale = 1.0 / np.sqrt(d)
    for r0 in range(0, N, block_q):                   # line 2: O = 0, l = 0, m = -inf in HBM
        r1 = min(r0 + block_q, N)
        cta.store("O", np.zeros((r1 - r0, d)), rows=(r0, r1))
        cta.store("l", np.zeros(r1 - r0), rows=(r0, r1))
        cta.store("m", np.full(r1 - r0, -np.inf), rows=(r0, r1))
    for c0 in range(0, N_k, block_kv):                # outer loop: each K_j, V_j read once
        c1 = min(c0 + block_kv, N_k)
        with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
            for r0 in range(0, N, block_q):           # inner loop: Q_i, O_i, l_i, m_i read, updated, written back
                r1 = min(r0 + block_q, N)
                with cta.load("Q", rows=(r0, r1)) as Q_i, cta.load("O", rows=(r0, r1)) as O_i, \
                        cta.load("l", rows=(r0, r1)) as l_i, cta.load("m", rows=(r0, r1)) as m_i:
                    S = scale * (Q_i @ K_j.T)
                    m_new = np.maximum(m_i, S.max(axis=1))
                    alpha = np.exp(m_i - m_new)       # 0 while m_i is still -inf
                    P = np.exp(S - m_new[:, None])
                    l_new = alpha * l_i + P.sum(axis=1)
                    O_new = (alpha[:, None] * l_i[:, None] * O_i + P @ V_j) / l_new[:, None]
                    cta.store("O", O_new, rows=(r0, r1))
                    cta.store("l", l_new, rows=(r0, r1))
                    cta.store("m", m_new, rows=(r0, r1))
