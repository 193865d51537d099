"""Lab 7's reference kernel: the FlashAttention-2 forward, one thread block per query block.

Each thread owns one query row: its q, running maximum m, running sum l and unnormalised output acc live in
registers (local arrays) for the whole key loop. The block stages each K/V tile in shared memory, every thread
loading some of its rows, and a barrier on each side of the tile's use keeps the loads and the reads apart. With
``causal`` the block visits only the key blocks its last row can see (mask aligned to the bottom-right corner, so
query i sees key j iff j <= i + N_k - N), and normalises once, after the last block.
Sources: Dao 2023, "FlashAttention-2", Algorithm 1 and §3.1.1 (causal masking), §3.2 (one CTA per query block);
flash-attn 2.x bottom-right alignment for N_q != N_k.
"""
import math

from numba import cuda, float32

__all__: list = []      # reference kernels: shown on the lab pages, not part of the API

HEAD_DIM = 8        # d
BLOCK_Q = 16        # B_r: query rows per block, one thread each
BLOCK_KV = 16       # B_c: key rows per shared-memory tile


@cuda.jit
def fa2_forward(Q, K, V, O, lse, scratch, N, N_k, scale, causal):
    K_s = cuda.shared.array((BLOCK_KV, HEAD_DIM), float32)
    V_s = cuda.shared.array((BLOCK_KV, HEAD_DIM), float32)
    q = cuda.local.array(HEAD_DIM, float32)
    acc = cuda.local.array(HEAD_DIM, float32)
    t = cuda.threadIdx.x
    r0 = cuda.blockIdx.x * BLOCK_Q
    i = r0 + t                                   # this thread's query row
    n_blocks = (N_k + BLOCK_KV - 1) // BLOCK_KV
    if causal:                                   # key blocks the block's last row can see (bottom-right mask)
        last = min(r0 + BLOCK_Q, N) - 1 + N_k - N
        n_blocks = min(n_blocks, last // BLOCK_KV + 1) if last >= 0 else 0
    if i < N and n_blocks > 0:
        for k in range(HEAD_DIM):
            q[k] = Q[i, k]                       # Q_i is read once
    for k in range(HEAD_DIM):
        acc[k] = 0.0
    m = -math.inf
    l = 0.0
    for jb in range(n_blocks):
        c0 = jb * BLOCK_KV
        for c in range(t, BLOCK_KV, BLOCK_Q):    # the block loads the tile together
            if c0 + c < N_k:
                for k in range(HEAD_DIM):
                    K_s[c, k] = K[c0 + c, k]
                    V_s[c, k] = V[c0 + c, k]
        cuda.syncthreads()                       # the tile is loaded before anyone reads it
        if i < N:
            for c in range(min(BLOCK_KV, N_k - c0)):
                if causal and c0 + c > i + N_k - N:
                    break
                s = 0.0
                for k in range(HEAD_DIM):
                    s += q[k] * K_s[c, k]
                s *= scale
                m_new = max(m, s)
                alpha = math.exp(m - m_new)      # rescales the old l and acc to the new maximum
                p = math.exp(s - m_new)
                l = l * alpha + p
                for k in range(HEAD_DIM):
                    acc[k] = acc[k] * alpha + p * V_s[c, k]
                m = m_new
        cuda.syncthreads()                       # everyone is done with the tile before the next load
    if i < N:
        for k in range(HEAD_DIM):
            O[i, k] = acc[k] / l if l > 0.0 else 0.0
        lse[i] = m + math.log(l) if l > 0.0 else -math.inf
