"""The CUDA labs' named mistaken kernels: each is a reference kernel with one thing changed, as a reader might
write it. The grader runs some of them to recognise a mistake that only changes the numbers (their outputs on
the same inputs); the tests run all of them, to check that each fails with its own line and no other.

A mistaken kernel is made from the reference module's source by text replacements that must each apply exactly
once (so a change to a reference cannot silently turn a mistake into a correct kernel), compiled under its own
file name (registered with ``linecache``, so race reports quote its lines).
"""
from __future__ import annotations

import inspect
import linecache

import cudalab  # noqa: F401  (before numba: the simulator when there is no GPU)

from . import ref_backward, ref_decoding, ref_forward, ref_softmax

__all__ = ["MISTAKES", "FINGERPRINTED", "variant"]


def variant(module, name: str, replacements, kernels) -> tuple:
    """The kernels ``kernels`` (names) of ``module`` after ``replacements`` (``(old, new)`` pairs, each found
    exactly once in the module's source), compiled as module ``name``.

    Raises:
        ValueError: a replacement whose text is not found exactly once.
    """
    source = inspect.getsource(module)
    for old, new in replacements:
        if source.count(old) != 1:
            raise ValueError(f"mistake {name}: {old!r} occurs {source.count(old)} times in {module.__name__}")
        source = source.replace(old, new)
    filename = f"<mistake {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": f"flashbook.labs.cuda.mistakes.{name}"}
    exec(compile(source, filename, "exec"), namespace)
    return tuple(namespace[k] for k in kernels)


_TREE = '''        if t < step:
            red[t] = max(red[t], red[t + step])
        cuda.syncthreads()
'''
_ONLINE_MERGE = '''                l_red[t] = l_a * math.exp(m_a - m_ab) + l_b * math.exp(m_b - m_ab)'''
_ONLINE_ROW = '''        if s > m:
            l = l * math.exp(m - s) + 1.0
            m = s
        else:
            l += math.exp(s - m)'''
_FA2_MAX = '''                m_new = max(m, s)
                alpha = math.exp(m - m_new)'''


def _softmax(name, *replacements, kernel="row_lse_online"):
    return variant(ref_softmax, name, replacements, (kernel,))


def _fa2(name, *replacements):
    return variant(ref_forward, name, replacements, ("fa2_forward",))


def _dec(name, *replacements):
    return variant(ref_decoding, name, replacements, ("split_kernel", "combine_kernel"))


def _bwd(name, *replacements, kernel="bwd_atomic"):
    return variant(ref_backward, name, replacements, (kernel,))


MISTAKES = {
    "cuda_softmax_two_pass": {
        "missing_barrier": _softmax("lse_two_pass_no_barrier", (_TREE, _TREE.replace("        cuda.syncthreads()\n",
                                                                                        "")), kernel="row_lse_two_pass"),
        "no_max": _softmax("lse_two_pass_no_max", ("        l += math.exp(S[r, j] - m_row)",
                                                   "        l += math.exp(S[r, j])"),
                           ("        lse[r] = m_row + math.log(red[0])", "        lse[r] = math.log(red[0])"),
                           kernel="row_lse_two_pass"),
    },
    "cuda_softmax_online": {
        "two_pass": (ref_softmax.row_lse_two_pass,),
        "merge_no_rescale": _softmax("lse_merge_no_rescale", (_ONLINE_MERGE, "                l_red[t] = l_a + l_b")),
        "no_max": _softmax("lse_online_no_max", (_ONLINE_ROW, "        l += math.exp(s)\n        m = 0.0")),
        "missing_barrier": _softmax("lse_online_no_barrier", (
            "            m_red[t] = m_ab\n        cuda.syncthreads()\n", "            m_red[t] = m_ab\n")),
    },
    "cuda_fa2": {
        "q_reread": _fa2("fa2_q_reread", ("                    s += q[k] * K_s[c, k]",
                                          "                    s += Q[i, k] * K_s[c, k]")),
        "s_to_global": _fa2("fa2_s_to_global", ("                s *= scale\n",
                                                "                s *= scale\n                scratch[i, c0 + c] = s\n"
                                                "                s = scratch[i, c0 + c]\n")),
        "block_max": _fa2("fa2_block_max", (_FA2_MAX, '''                m_new = max(m, s) if c > 0 else s
                alpha = math.exp(m - m_new)''')),
        "top_left": _fa2("fa2_top_left", ("                if causal and c0 + c > i + N_k - N:",
                                          "                if causal and c0 + c > i:")),
        "missing_barrier": _fa2("fa2_no_barrier", (
            "        cuda.syncthreads()                       # everyone is done with the tile before the next load\n",
            "")),
        "early_return": _fa2("fa2_early_return", ("    i = r0 + t                                   # this thread's "
                                                  "query row\n",
                                                  "    i = r0 + t\n    if i >= N:\n        return\n")),
        "kv_whole": _fa2("fa2_kv_whole", ("K_s = cuda.shared.array((BLOCK_KV, HEAD_DIM), float32)",
                                          "K_s = cuda.shared.array((BLOCK_KV * 8, HEAD_DIM), float32)")),
    },
    "cuda_decoding": {
        "mean_combine": _dec("dec_mean_combine", ("                o += math.exp(lse_s[sp] - lse_max) * O_part[h, sp, k]\n"
                                                  "            o /= total",
                                                  "                o += O_part[h, sp, k]\n            o /= num_splits")),
        "empty_nan": _dec("dec_empty_nan", (
            "            O_part[h, sp, k] = acc_s[0, k] / l_all if l_all > 0.0 else 0.0",
            "            O_part[h, sp, k] = acc_s[0, k] / l_all"),
            ("        lse_part[h, sp] = m_s[0] + math.log(l_all) if l_all > 0.0 else -math.inf",
             "        lse_part[h, sp] = m_s[0] + math.log(l_all)"),
            ("            for sp in range(num_splits):\n                o += math.exp",
             "            for sp in range(num_splits):\n                o += 0.0 * O_part[h, sp, k] + math.exp")),
        "q_per_thread": _dec("dec_q_per_thread", ("            s += q_s[k] * K[h, j, k]",
                                                  "            s += q[h, k] * K[h, j, k]")),
        "missing_barrier": _dec("dec_no_barrier", ("            m_s[t] = m_ab\n        cuda.syncthreads()\n",
                                                   "            m_s[t] = m_ab\n")),
    },
    "cuda_backward_atomic": {
        "dq_plain": _bwd("bwd_dq_plain", ("                    cuda.atomic.add(dQ_t, (r0 + r, k), a * scale)",
                                          "                    dQ_t[r0 + r, k] += a * scale")),
        "missing_barrier": _bwd("bwd_no_barrier", (
            "            dS_s[r, t] = ds\n        cuda.syncthreads()\n", "            dS_s[r, t] = ds\n")),
        "no_lse": _bwd("bwd_no_lse", ("                p = math.exp(s * scale - lse_s[r])",
                                      "                p = math.exp(s * scale) / math.exp(lse_s[r])")),
    },
    "cuda_backward_deterministic": {
        "dq_plain": _bwd("bwd_det_dq_plain", ("                    dQ_t[r0 + r, k] = a * scale",
                                              "                    dQ_t[r0 + r, k] += a * scale"),
                         ("dQ_part[cuda.blockIdx.x], dK", "dQ_part[0], dK"), kernel="bwd_deterministic"),
    },
}

#: Mistakes the grader recognises by their outputs (they change only the numbers), per lab item.
FINGERPRINTED = {
    "cuda_softmax_online": ("merge_no_rescale",),
    "cuda_fa2": ("block_max", "top_left"),
    "cuda_decoding": ("mean_combine",),
}
