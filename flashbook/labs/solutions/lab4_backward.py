"""Lab 4, a reference program: the backward pass by recomputation, as FlashAttention-2 runs it (Dao 2023,
Algorithm 2): a pre-pass kernel for D = rowsum(dO * O), then one CTA per key block, adding into dQ atomically."""
import numpy as np

__all__: list = []      # a reference solution: shown on its lab's page, not part of the API


def preprocess(cta, *, block_q):
    """CTA i: D_i = rowsum(dO_i * O_i), and dQ_i = 0 (what the main kernel's CTAs add into)."""
    N, d = cta.shape("O")
    r0 = cta.pid * block_q
    r1 = min(r0 + block_q, N)
    with cta.load("O", rows=(r0, r1)) as O_i, cta.load("dO", rows=(r0, r1)) as dO_i:
        cta.store("D", (dO_i * O_i).sum(axis=1), rows=(r0, r1))
    cta.store("dQ", np.zeros((r1 - r0, d)), rows=(r0, r1))


def backward(cta, *, block_q, block_kv, causal):
    """CTA j: dK_j, dV_j in on-chip buffers over every query block that sees key block j; dQ_i += dS_ij K_j."""
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    scale = 1.0 / np.sqrt(d)
    c0 = cta.pid * block_kv
    c1 = min(c0 + block_kv, N_k)
    first = 0
    if causal:                                        # query i sees key j iff j <= i + N_k - N
        first = max(0, c0 - (N_k - N)) // block_q * block_q
    with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j, \
            cta.buffer((c1 - c0, d), name="dK_j") as dK_j, cta.buffer((c1 - c0, d), name="dV_j") as dV_j:
        for r0 in range(first, N, block_q):
            r1 = min(r0 + block_q, N)
            with cta.load("Q", rows=(r0, r1)) as Q_i, cta.load("dO", rows=(r0, r1)) as dO_i, \
                    cta.load("lse", rows=(r0, r1)) as lse_i, cta.load("D", rows=(r0, r1)) as D_i:
                P = np.exp(scale * (Q_i @ K_j.T) - lse_i[:, None])    # P recomputed from the forward's lse
                if causal:
                    P = np.where(np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None] + (N_k - N), P, 0.0)
                dV_j += P.T @ dO_i
                dS = P * (dO_i @ V_j.T - D_i[:, None])
                cta.atomic_add("dQ", scale * (dS @ K_j), rows=(r0, r1))   # other CTAs add into the same rows
                dK_j += scale * (dS.T @ Q_i)
        cta.store("dK", dK_j, rows=(c0, c1))
        cta.store("dV", dV_j, rows=(c0, c1))


def kernel(chip, *, block_q, block_kv, causal):
    """The program: allocate D, launch the pre-pass (one CTA per query block), then the main kernel (one CTA per
    key block)."""
    N = chip.shape("Q")[0]
    N_k = chip.shape("K")[0]
    chip.allocate("D", (N,))
    chip.launch(preprocess, grid=(N + block_q - 1) // block_q, block_q=block_q)
    chip.launch(backward, grid=(N_k + block_kv - 1) // block_kv, block_q=block_q, block_kv=block_kv, causal=causal)
