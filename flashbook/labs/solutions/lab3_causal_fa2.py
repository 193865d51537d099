"""Lab 3, a reference kernel: FlashAttention-2's forward with a causal mask, one CTA per query block (Dao 2023,
Algorithm 1 and §3.2; the mask aligned bottom-right as in flash-attn >= 2.1)."""
import numpy as np

__all__: list = []      # a reference solution: shown on its lab's page, not part of the API


def kernel(cta, *, block_q, block_kv):
    """CTA pid: rows [pid B_r, (pid + 1) B_r) of O (N, d) and lse (N,) from Q (N, d), K, V (N_k, d), causal."""
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    scale = 1.0 / np.sqrt(d)
    r0 = cta.pid * block_q
    r1 = min(r0 + block_q, N)
    last_key = np.arange(r0, r1)[:, None] + (N_k - N)      # query i sees key j iff j <= i + N_k - N
    stop = min(N_k, r1 + N_k - N)                           # key blocks from here on are hidden from every row
    with cta.buffer(r1 - r0, fill=-np.inf, name="m") as m, cta.buffer(r1 - r0, name="l") as l, \
            cta.buffer((r1 - r0, d), name="acc") as acc:
        if stop > 0:                                        # a block that sees no key reads nothing
            with cta.load("Q", rows=(r0, r1)) as Q_i:       # Q_i read once
                for c0 in range(0, stop, block_kv):
                    c1 = min(c0 + block_kv, N_k)
                    with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
                        S = scale * (Q_i @ K_j.T)
                        S = np.where(np.arange(c0, c1)[None, :] <= last_key, S, -np.inf)
                        m_new = np.maximum(m, S.max(axis=1))
                        m_safe = np.where(np.isfinite(m_new), m_new, 0.0)    # a row that has seen no key yet
                        alpha = np.exp(m - m_safe)
                        P = np.exp(S - m_safe[:, None])
                        l[:] = alpha * l + P.sum(axis=1)
                        acc[:] = alpha[:, None] * acc + P @ V_j
                        m[:] = m_new
        seen = l > 0                                        # a row that saw no key: O = 0, lse = -inf
        l_safe = np.where(seen, l, 1.0)
        cta.store("O", acc / l_safe[:, None], rows=(r0, r1))
        cta.store("lse", np.where(seen, m + np.log(l_safe), -np.inf), rows=(r0, r1))
