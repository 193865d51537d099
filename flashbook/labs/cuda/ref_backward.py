"""Lab 9's reference kernels: the FlashAttention-2 backward, one thread block per key block.

Each thread owns one key row j: k_j, v_j and the gradients dK_j, dV_j stay in registers. For every query block
that sees the key block, the block stages Q_i, dO_i, lse_i and D_i in shared memory, each thread recomputes
P_ij = exp(S_ij - lse_i) for its key and accumulates dV_j += P_ij dO_i and dK_j += dS_ij Q_i scale, with
dS_ij = P_ij (dO_i . v_j - D_i); the block writes its dS tile to shared memory and adds dQ_i += dS_i K_j scale to
global memory. Many key blocks add into the same dQ_i, so ``bwd_atomic`` uses FP32 atomic adds (their order, and
so the rounding, depends on the order the blocks run in), and ``bwd_deterministic`` writes each key block's part
to its own slice of dQ_part, which ``dq_reduce`` sums in a fixed order.
``bwd_preprocess`` computes D_i = rowsum(dO_i * O_i) first (a kernel of its own) and, before the atomic adds,
zeroes dQ, as flash-attn's pre-pass clears its FP32 dQ accumulator.
Sources: Dao 2023, "FlashAttention-2", Algorithm 2 and §3.2 (the backward parallelised over key blocks, dQ by
atomic adds); flash-attn 2.x ``csrc/flash_attn/src/flash_bwd_kernel.h`` (``dq_accum`` in FP32 with atomicAdd) and,
for the deterministic mode, ``flash_bwd_launch_template.h`` (per-split dQ accumulators summed afterwards).
"""
import math

from numba import cuda, float32

__all__: list = []      # reference kernels: shown on the lab pages, not part of the API

HEAD_DIM = 8        # d
BLOCK_Q = 8         # B_r: query rows per staged tile
BLOCK_KV = 8        # B_c: key rows per block, one thread each


@cuda.jit
def bwd_preprocess(O, dO, D, dQ, N, clear_dq):
    i = cuda.grid(1)                            # one thread per query row
    if i < N:
        acc = 0.0
        for k in range(HEAD_DIM):
            acc += dO[i, k] * O[i, k]
        D[i] = acc
        if clear_dq:                            # the atomic adds start from zero
            for k in range(HEAD_DIM):
                dQ[i, k] = 0.0


@cuda.jit(device=True)
def key_block_grads(Q, K, V, dO, lse, D, dQ_t, dK, dV, N, N_k, scale, causal, atomic):
    """The body of both backward kernels. ``dQ_t`` is where this key block's dQ contributions go: dQ itself, by
    atomic adds (``atomic``), or the block's own slice of dQ_part, by plain stores. One 2-D target for both keeps
    the body compilable for a GPU: numba types both branches of ``if atomic`` whichever one runs."""
    K_s = cuda.shared.array((BLOCK_KV, HEAD_DIM), float32)
    Q_s = cuda.shared.array((BLOCK_Q, HEAD_DIM), float32)
    dO_s = cuda.shared.array((BLOCK_Q, HEAD_DIM), float32)
    lse_s = cuda.shared.array(BLOCK_Q, float32)
    D_s = cuda.shared.array(BLOCK_Q, float32)
    dS_s = cuda.shared.array((BLOCK_Q, BLOCK_KV), float32)
    k_j = cuda.local.array(HEAD_DIM, float32)
    v_j = cuda.local.array(HEAD_DIM, float32)
    dk = cuda.local.array(HEAD_DIM, float32)
    dv = cuda.local.array(HEAD_DIM, float32)
    t = cuda.threadIdx.x
    c0 = cuda.blockIdx.x * BLOCK_KV
    j = c0 + t                                  # this thread's key row
    for k in range(HEAD_DIM):
        if j < N_k:
            k_j[k] = K[j, k]
            v_j[k] = V[j, k]
        else:
            k_j[k] = 0.0
            v_j[k] = 0.0
        K_s[t, k] = k_j[k]
        dk[k] = 0.0
        dv[k] = 0.0
    for ib in range((N + BLOCK_Q - 1) // BLOCK_Q):
        r0 = ib * BLOCK_Q
        if causal and c0 > min(r0 + BLOCK_Q, N) - 1 + N_k - N:
            continue                             # the mask hides this key block from every row of block ib
        cuda.syncthreads()                       # the previous tile's dS and Q are no longer read
        for r in range(t, BLOCK_Q, BLOCK_KV):    # stage Q_i, dO_i, lse_i, D_i together
            if r0 + r < N:
                for k in range(HEAD_DIM):
                    Q_s[r, k] = Q[r0 + r, k]
                    dO_s[r, k] = dO[r0 + r, k]
                lse_s[r] = lse[r0 + r]
                D_s[r] = D[r0 + r]
        cuda.syncthreads()
        for r in range(BLOCK_Q):
            ds = 0.0
            if r0 + r < N and j < N_k and not (causal and j > r0 + r + N_k - N):
                s = 0.0
                dp = 0.0
                for k in range(HEAD_DIM):
                    s += Q_s[r, k] * k_j[k]
                    dp += dO_s[r, k] * v_j[k]
                p = math.exp(s * scale - lse_s[r])
                ds = p * (dp - D_s[r])
                for k in range(HEAD_DIM):
                    dv[k] += p * dO_s[r, k]
                    dk[k] += ds * Q_s[r, k] * scale
            dS_s[r, t] = ds
        cuda.syncthreads()
        for e in range(t, BLOCK_Q * HEAD_DIM, BLOCK_KV):   # dQ_i += dS_i K_j scale, one element per step
            r = e // HEAD_DIM
            k = e % HEAD_DIM
            if r0 + r < N:
                a = 0.0
                for c in range(BLOCK_KV):
                    a += dS_s[r, c] * K_s[c, k]
                if atomic:
                    cuda.atomic.add(dQ_t, (r0 + r, k), a * scale)
                else:
                    dQ_t[r0 + r, k] = a * scale
    if j < N_k:
        for k in range(HEAD_DIM):
            dK[j, k] = dk[k]
            dV[j, k] = dv[k]


@cuda.jit
def bwd_atomic(Q, K, V, dO, lse, D, dQ, dK, dV, N, N_k, scale, causal):
    key_block_grads(Q, K, V, dO, lse, D, dQ, dK, dV, N, N_k, scale, causal, True)


@cuda.jit
def bwd_deterministic(Q, K, V, dO, lse, D, dQ_part, dK, dV, N, N_k, scale, causal):
    key_block_grads(Q, K, V, dO, lse, D, dQ_part[cuda.blockIdx.x], dK, dV, N, N_k, scale, causal, False)


@cuda.jit
def dq_reduce(dQ_part, dQ, N, N_k, block_q, block_kv, causal):
    i = cuda.grid(1)                            # one thread per query row: sum its parts in key-block order
    if i < N:
        r0 = (i // block_q) * block_q
        n_blocks = (N_k + block_kv - 1) // block_kv
        if causal:                               # the key blocks that saw row i's query block
            last = min(r0 + block_q, N) - 1 + N_k - N
            n_blocks = min(n_blocks, last // block_kv + 1) if last >= 0 else 0
        for k in range(HEAD_DIM):
            a = 0.0
            for jb in range(n_blocks):
                a += dQ_part[jb, i, k]
            dQ[i, k] = a
