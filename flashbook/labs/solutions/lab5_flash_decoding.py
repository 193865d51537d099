"""Lab 5, a reference program: flash-decoding's split and combine kernels (Dao, Haziza, Massa, Sizov, 2023), and a
split count chosen in the decode time model."""
import labcore
import numpy as np

__all__: list = []      # a reference solution: shown on its lab's page, not part of the API


def split(cta, *, num_splits, block_kv):
    """CTA s: q (g, d) against keys [s chunk, (s + 1) chunk) of K, V (N_k, d), chunk = ceil(N_k / num_splits);
    rows [s g, (s + 1) g) of O_part and lse_part. An empty split writes O_s = 0 and lse_s = -inf."""
    g, d = cta.shape("q")
    N_k = cta.shape("K")[0]
    chunk = (N_k + num_splits - 1) // num_splits
    start = min(cta.pid * chunk, N_k)
    stop = min(start + chunk, N_k)
    rows = (cta.pid * g, (cta.pid + 1) * g)
    with cta.load("q") as q, cta.buffer(g, fill=-np.inf, name="m") as m, cta.buffer(g, name="l") as l, \
            cta.buffer((g, d), name="acc") as acc:
        for c0 in range(start, stop, block_kv):
            c1 = min(c0 + block_kv, stop)
            with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
                S = (q @ K_j.T) / np.sqrt(d)
                m_new = np.maximum(m, S.max(axis=1))
                alpha = np.exp(m - m_new)
                P = np.exp(S - m_new[:, None])
                l[:] = alpha * l + P.sum(axis=1)
                acc[:] = alpha[:, None] * acc + P @ V_j
                m[:] = m_new
        seen = l > 0
        l_safe = np.where(seen, l, 1.0)
        cta.store("O_part", acc / l_safe[:, None], rows=rows)
        cta.store("lse_part", np.where(seen, m + np.log(l_safe), -np.inf), rows=rows)


def combine(cta, *, num_splits):
    """One CTA: lse = log sum_s exp(lse_s), O = sum_s exp(lse_s - lse) O_s (an empty split weighs 0)."""
    g, d = cta.shape("O")
    with cta.load("O_part") as O_parts, cta.load("lse_part") as lse_parts:
        O_s = O_parts.reshape(num_splits, g, d)
        lse_s = lse_parts.reshape(num_splits, g)
        lse_max = lse_s.max(axis=0)                   # finite: some split holds keys
        w = np.exp(lse_s - lse_max)                   # exp(-inf) = 0 for an empty split
        total = w.sum(axis=0)
        cta.store("O", (w[:, :, None] * O_s).sum(axis=0) / total[:, None], rows=(0, g))
        cta.store("lse", lse_max + np.log(total), rows=(0, g))


def kernel(chip, *, num_splits, block_kv):
    """The program: allocate the partial results, launch num_splits split CTAs, then the combine kernel (a kernel
    boundary: every split has finished before the combine starts)."""
    g, d = chip.shape("q")
    chip.allocate("O_part", (num_splits * g, d))
    chip.allocate("lse_part", (num_splits * g,))
    chip.launch(split, grid=num_splits, num_splits=num_splits, block_kv=block_kv)
    chip.launch(combine, grid=1, num_splits=num_splits)


def choose_splits(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim):
    """The split count the decode time model finds fastest: each count flash-attn allows (1 to 128, at most one
    split per key) is tried, and the smallest of the fastest kept."""
    def modelled(num_splits):
        return labcore.decode_attention_time(gpu, method="flash_decoding", num_splits=num_splits, batch=batch,
                                             seqlen=seqlen, num_q_heads=num_q_heads, num_kv_heads=num_kv_heads,
                                             head_dim=head_dim).total
    return min(range(1, min(128, seqlen) + 1), key=modelled)
