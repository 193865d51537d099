"""Lab 6's reference kernels: the log-sum-exp of each row of S, one thread block per row.

Part A reads every score twice (a max reduction, then a sum reduction of exp(s - max)); part B reads it once
(each thread keeps a running (m, l) over its columns, then the block merges the threads' states in a tree).
Sources: Milakov & Gimelshein 2018, "Online normalizer calculation for softmax" (Algorithm 3 and the merge of
§3.2); the shared-memory tree reduction of Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007).
"""
import math

from numba import cuda, float32

__all__: list = []      # reference kernels: shown on the lab pages, not part of the API

THREADS = 32        # threads per block (a power of two, for the tree reduction)


@cuda.jit
def row_lse_two_pass(S, lse, N):
    red = cuda.shared.array(THREADS, float32)
    r = cuda.blockIdx.x                      # this block's row
    t = cuda.threadIdx.x
    # pass 1: the row's maximum
    m = -math.inf
    for j in range(t, N, THREADS):           # thread t takes columns t, t + THREADS, ...
        m = max(m, S[r, j])
    red[t] = m
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:                          # tree reduction: halve the active threads each step
        if t < step:
            red[t] = max(red[t], red[t + step])
        cuda.syncthreads()
        step //= 2
    m_row = red[0]
    cuda.syncthreads()                       # everyone has read red[0] before it is overwritten
    # pass 2: the sum of exp(s - m_row), reading every score a second time
    l = 0.0
    for j in range(t, N, THREADS):
        l += math.exp(S[r, j] - m_row)
    red[t] = l
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:
        if t < step:
            red[t] += red[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        lse[r] = m_row + math.log(red[0])


@cuda.jit
def row_lse_online(S, lse, N):
    m_red = cuda.shared.array(THREADS, float32)
    l_red = cuda.shared.array(THREADS, float32)
    r = cuda.blockIdx.x
    t = cuda.threadIdx.x
    # one pass: a running maximum m and a running sum l = sum exp(s - m), rescaled when m grows
    m = -math.inf
    l = 0.0
    for j in range(t, N, THREADS):
        s = S[r, j]
        if s > m:
            l = l * math.exp(m - s) + 1.0
            m = s
        else:
            l += math.exp(s - m)
    m_red[t] = m
    l_red[t] = l
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:                          # merge two (m, l) states: both rescaled to the larger m
        if t < step:
            m_a, l_a = m_red[t], l_red[t]
            m_b, l_b = m_red[t + step], l_red[t + step]
            m_ab = max(m_a, m_b)
            if m_ab > -math.inf:
                l_red[t] = l_a * math.exp(m_a - m_ab) + l_b * math.exp(m_b - m_ab)
            m_red[t] = m_ab
        cuda.syncthreads()
        step //= 2
    if t == 0:
        lse[r] = m_red[0] + math.log(l_red[0])
