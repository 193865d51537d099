"""Lab 8's reference kernels: flash-decoding, a split kernel over a grid of (head, split) blocks and a combine
kernel over heads.

Split block (h, s) attends head h's query to split s of its keys: the block stages q once in shared memory, each
thread streams some of the split's keys with a running (m, l, acc), and the block merges its threads' states in a
shared-memory tree; it writes the split's normalised partial output and its lse (an empty split writes O = 0 and
lse = -inf, which the combine weighs 0). The combine block of head h reads the split's lse once into shared
memory, then weighs each partial output by exp(lse_s - lse).
Sources: Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference" (PyTorch blog, 2023-10-13);
flash-attn 2.x ``flash_fwd_split_kernel`` and ``combine_attn_seqk_parallel`` (csrc/flash_attn/src/flash_fwd_kernel.h).
"""
import math

from numba import cuda, float32

__all__: list = []      # reference kernels: shown on the lab pages, not part of the API

HEAD_DIM = 8        # d
THREADS = 16        # threads per block (a power of two, for the tree merge)
MAX_SPLITS = 16     # the combine's shared array holds at most this many splits' lse


@cuda.jit
def split_kernel(q, K, V, O_part, lse_part, N_k, num_splits, scale):
    q_s = cuda.shared.array(HEAD_DIM, float32)
    m_s = cuda.shared.array(THREADS, float32)
    l_s = cuda.shared.array(THREADS, float32)
    acc_s = cuda.shared.array((THREADS, HEAD_DIM), float32)
    acc = cuda.local.array(HEAD_DIM, float32)
    h = cuda.blockIdx.x
    sp = cuda.blockIdx.y
    t = cuda.threadIdx.x
    chunk = (N_k + num_splits - 1) // num_splits
    c0 = min(sp * chunk, N_k)
    c1 = min(c0 + chunk, N_k)
    for k in range(t, HEAD_DIM, THREADS):        # q is read once per block, then shared
        q_s[k] = q[h, k]
    cuda.syncthreads()
    m = -math.inf
    l = 0.0
    for k in range(HEAD_DIM):
        acc[k] = 0.0
    for j in range(c0 + t, c1, THREADS):         # thread t streams keys c0 + t, c0 + t + THREADS, ...
        s = 0.0
        for k in range(HEAD_DIM):
            s += q_s[k] * K[h, j, k]
        s *= scale
        m_new = max(m, s)
        alpha = math.exp(m - m_new)
        p = math.exp(s - m_new)
        l = l * alpha + p
        for k in range(HEAD_DIM):
            acc[k] = acc[k] * alpha + p * V[h, j, k]
        m = m_new
    m_s[t] = m
    l_s[t] = l
    for k in range(HEAD_DIM):
        acc_s[t, k] = acc[k]
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:                              # merge the threads' (m, l, acc) states in a tree
        if t < step:
            m_a = m_s[t]
            m_b = m_s[t + step]
            m_ab = max(m_a, m_b)
            if m_ab > -math.inf:
                w_a = math.exp(m_a - m_ab)
                w_b = math.exp(m_b - m_ab)
                l_s[t] = l_s[t] * w_a + l_s[t + step] * w_b
                for k in range(HEAD_DIM):
                    acc_s[t, k] = acc_s[t, k] * w_a + acc_s[t + step, k] * w_b
            m_s[t] = m_ab
        cuda.syncthreads()
        step //= 2
    if t == 0:
        l_all = l_s[0]
        for k in range(HEAD_DIM):
            O_part[h, sp, k] = acc_s[0, k] / l_all if l_all > 0.0 else 0.0
        lse_part[h, sp] = m_s[0] + math.log(l_all) if l_all > 0.0 else -math.inf


@cuda.jit
def combine_kernel(O_part, lse_part, O, lse, num_splits):
    lse_s = cuda.shared.array(MAX_SPLITS, float32)
    h = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for sp in range(t, num_splits, THREADS):     # each split's lse is read once
        lse_s[sp] = lse_part[h, sp]
    cuda.syncthreads()
    lse_max = -math.inf
    for sp in range(num_splits):
        lse_max = max(lse_max, lse_s[sp])
    total = 0.0
    if lse_max > -math.inf:
        for sp in range(num_splits):
            total += math.exp(lse_s[sp] - lse_max)
    for k in range(t, HEAD_DIM, THREADS):        # each partial output element is read once
        o = 0.0
        if total > 0.0:
            for sp in range(num_splits):
                o += math.exp(lse_s[sp] - lse_max) * O_part[h, sp, k]
            o /= total
        O[h, k] = o
    if t == 0:
        lse[h] = lse_max + math.log(total) if total > 0.0 else -math.inf
