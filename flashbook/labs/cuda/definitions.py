"""The CUDA labs: what global memory holds, the shapes a kernel is graded on, the host program that launches the
reader's kernels, the float64 oracle, the closed-form traffic and the feedback for each known mistake.

A lab item is data (:class:`CudaLab`); the grader (:mod:`flashbook.labs.cuda.grader`) is one loop over any item.
Two labs have two graded items (6a/6b: the two-pass and the online softmax; 9a/9b: the atomic and the deterministic
backward). Sizes are small (d = 8, a few dozen rows) because every CUDA thread is a Python thread in the simulator;
every kernel still needs several blocks and several tiles. Inputs are drawn in float64 and stored in float32 (the
kernels compute in FP32); the oracle uses the float32-rounded inputs, so only the kernel's arithmetic differs.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np

from labcore.attention import reference_attention
from labcore.checks import cdiv
from labcore.flash import standard_attention_backward
from labcore.hbm import (causal_block_counts, flash_backward_atomics, flash_backward_io, flash_forward_io, row_lse_io,
                         split_kv_io)

from . import ref_backward, ref_decoding, ref_forward, ref_softmax

__all__ = ["CudaLab", "CUDA_LABS", "get_cuda_lab", "CUDA_FEEDBACK", "HEAD_DIM", "TOLERANCE", "TOLERANCE_LARGE", "STRESS"]

#: Head dimension of every CUDA lab (the kernels' ``HEAD_DIM``).
HEAD_DIM = 8
#: Largest error accepted, relative to ``1 + |reference|``: the kernels compute in FP32 (machine epsilon 1.2e-7)
#: and add at most a few hundred terms.
TOLERANCE = 1e-4
#: The same for the shapes with scores near +-1000: rounded to FP32 such a score keeps about 4 decimal digits after
#: the point, and exp(s - lse) inherits that error (the reference kernels reach 2e-4 there).
TOLERANCE_LARGE = 1e-3

#: One feedback line per known mistake; the grader names a mistake only when its signature is in the run.
CUDA_FEEDBACK = {
    "two_pass": "Every score was read twice: a first pass for the maximum. Keep a running maximum and rescale the "
                "running sum when it grows (online softmax), so each score is read once.",
    "no_max": "exp overflowed to inf (FP32's largest exp argument is about 88.7): subtract the running maximum "
              "before exponentiating, and rescale what you summed when the maximum grows.",
    "no_lse": "exp overflowed to inf where the scores are large: recompute P as exp(scale q . k - lse_i) with the lse "
              "the forward stored, never exp(scale q . k) on its own.",
    "merge_no_rescale": "The threads' (m, l) states were merged without rescaling: l_a and l_b must each be "
                        "multiplied by exp(m - m_ab) before they are added.",
    "q_reread": "Q was read from global memory more than once per query row: load q into registers (a local "
                "array) once, before the key loop.",
    "s_to_global": "Scores or probabilities were written to global memory (the scratch array): the traffic grows "
                   "with N x N_k. Use each score where it is computed.",
    "q_per_thread": "q was read from global memory by every thread of a block: stage it in shared memory once per "
                    "block and let the threads read it there.",
    "top_left": "The causal mask is aligned top-left (j <= i): with N_q != N_k it is bottom-right, "
                "j <= i + N_k - N_q.",
    "mean_combine": "The splits were combined without lse weights (a plain mean): weight split s's output by "
                    "exp(lse_s - lse), with lse = log sum_s exp(lse_s).",
    "empty_nan": "An empty split produced NaN (0 / 0): a split with no keys must write O_s = 0 and lse_s = -inf, "
                 "and the combine must give it weight 0.",
    "block_max": "exp overflowed only where the scores fall from one tile to the next: the running maximum was "
                 "replaced by the current tile's. Keep m = max(m, the tile's scores), so alpha = exp(m_old - m_new) "
                 "is never above 1.",
    "missing_barrier": "A thread read shared memory that another thread wrote, or overwrote what another thread "
                       "was reading, with no cuda.syncthreads() between them: a barrier is missing (the race lines "
                       "name both lines). On a GPU the result changes from run to run.",
    "barrier_divergence": "A cuda.syncthreads() was not reached by every thread of a block (an early return, or a "
                          "barrier inside an if): guard the work with the if, and let every thread reach every "
                          "barrier.",
    "over_budget": "A block allocated more shared memory than this lab's budget: stage tiles of the lab's size "
                   "in shared memory, not whole tensors.",
    "dq_plain": "dQ was updated with a plain read-modify-write: blocks run at the same time, so one block's "
                "addition can overwrite another's. Use cuda.atomic.add (9a), or write each block's part to its own "
                "slice of dQ_part (9b).",
}


@dataclass(frozen=True)
class CudaLab:
    """One graded item of a CUDA lab.

    Attributes:
        key: short name (str). label: its number in the Labs part ("6a", "7", ...). title (str).
        page: the lab's notebook (str, under ``book/labs/``). section: the book page it practises.
        minutes: how long it takes a reader (an estimate).
        kernels: names of the kernels the reader writes, in the order ``grade`` takes them.
        params: the launch parameters the reader chooses (``{"block_q": 16, ...}``), as their defaults.
        shapes: the graded shapes (dicts; ``"stress": "swing"`` or ``"rise"`` marks scores large in magnitude, see
            :data:`STRESS`).
        inputs: ``(rng, shape) -> {name: float64 array}`` (stored as float32).
        program: ``(dev, kernels, shape, params) -> None``: allocates the outputs and launches the kernels on a
            :class:`cudalab.Device` (or its GPU twin).
        outputs: the arrays compared with the oracle (names).
        oracle: ``(inputs, shape) -> {name: array}`` in float64, from the float32-rounded inputs.
        expected: ``(shape, params) -> {"traffic": {tensor: {"read", "write"}}, "atomics": {tensor: n}}``.
        flops: ``(shape, params) -> [FLOPs per launch]`` (the algorithm's count, for the modelled time).
        shared_budget: bytes of shared memory per block. local_budget: bytes of local arrays per thread.
        max_threads: threads per block allowed.
        reference: ``{kernel name: kernel}``. provided: kernels the lab supplies (pre-pass, reduction).
        check_params: ``params -> None`` raising ValueError for parameters the lab cannot take.
    """

    key: str
    label: str
    title: str
    page: str
    section: str
    minutes: int
    kernels: tuple
    params: dict
    shapes: tuple
    inputs: object
    program: object
    outputs: tuple
    oracle: object
    expected: object
    flops: object
    shared_budget: int
    local_budget: int = 256
    max_threads: int = 64
    reference: dict = field(default_factory=dict)
    provided: dict = field(default_factory=dict)
    check_params: object = None

    def shape_label(self, shape: dict) -> str:
        words = {"swing": " (large scores, rising and falling)", "rise": " (large scores, rising)"}
        return ", ".join(f"{k}={v}" for k, v in shape.items() if k != "stress") + words.get(shape.get("stress"), "")

    @property
    def number(self) -> int:
        return int(self.label.rstrip("ab"))

    def kernel_parameters(self, kernel: str) -> tuple:
        """The parameters the lab's program passes to one of the reader's kernels, in order, named as the lab's
        reference kernel names them.

        Args:
            kernel: one of :attr:`kernels` (str).
        Returns:
            a tuple of parameter names (str).
        Raises:
            ValueError: ``kernel`` is not one of this lab's kernels (the message lists them).
        """
        if kernel not in self.kernels or kernel not in self.reference:
            raise ValueError(f"kernel must be one of lab {self.label}'s kernels ({', '.join(self.kernels)}), "
                             f"got {kernel!r}")
        ref = self.reference[kernel]
        return tuple(inspect.signature(getattr(ref, "py_func", ref)).parameters)


def _f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def _normal(rng, *shape):
    return rng.standard_normal(shape)


#: Scores of a stress shape reach about +-1000: beyond FP32's largest exp argument (88.7) and FP64's (709.8).
STRESS = ("swing", "rise")


def _large(n, rng, kind, scale):
    """Large offsets: ``"swing"`` rises and falls every few positions, so the maxima of successive tiles go up and
    down (a kernel that forgets its running maximum overflows); ``"rise"`` climbs steadily, so every tile's
    maximum is above the last (only a kernel that never subtracts a maximum overflows)."""
    if kind == "rise":
        return scale * np.linspace(-1.0, 1.0, n)
    levels = np.array([0.3, 1.0, -0.6, 0.9, 0.1, 0.75, -1.0, 0.5])
    return scale * levels[(np.arange(n) // 5) % len(levels)] + rng.standard_normal(n)


def _aligned(rng, shape, rows, n, d, heads=None, key_scale=95.0):
    """Queries along one direction and keys whose projection on it is large (``_large``): with the default
    ``key_scale`` the scaled scores reach about +-1000."""
    u = np.zeros(d)
    u[0] = 1.0
    q = 30.0 * u + 0.01 * _normal(rng, *((heads, d) if heads else (rows, d)))
    one = lambda: _large(n, rng, shape["stress"], key_scale)[:, None] * u + 0.01 * _normal(rng, n, d)  # noqa: E731
    K = np.stack([one() for _ in range(heads)]) if heads else one()
    return q, K


def _power_of_two(name, lo, hi):
    def check(params):
        v = params[name]
        if v < lo or v > hi or v & (v - 1):
            raise ValueError(f"{name} must be a power of two from {lo} to {hi} (the tree reductions halve it), "
                             f"got {v}")
    return check


def _between(**ranges):
    def check(params):
        for name, (lo, hi) in ranges.items():
            if not lo <= params[name] <= hi:
                raise ValueError(f"{name} must be from {lo} to {hi} in this lab, got {params[name]}")
    return check


# --- lab 6: the log-sum-exp of each row -------------------------------------------------------------------------

_ROWS = 4


def _softmax_inputs(rng, shape):
    N = shape["N"]
    S = 3.0 * _normal(rng, _ROWS, N)
    if shape.get("stress"):
        for r in range(_ROWS):
            S[r] = _large(N, rng, shape["stress"], 1000.0 * (1 if r % 2 == 0 else 0.8))
    return {"S": S}


def _softmax_oracle(inputs, shape):
    S = _f32(inputs["S"])
    m = S.max(axis=1)
    return {"lse": m + np.log(np.exp(S - m[:, None]).sum(axis=1))}


def _softmax_program(dev, k, shape, p):
    dev.empty("lse", (_ROWS,))
    dev.launch(k[0], _ROWS, p["threads"], dev["S"], dev["lse"], shape["N"])


def _softmax_item(key, label, title, kernel, passes, reference):
    return CudaLab(
        key, label, title, "lab6_cuda_softmax", "03_online_softmax", 25, kernels=(kernel,), params={"threads": 32},
        shapes=({"N": 37}, {"N": 64}, {"N": 100}, {"N": 80, "stress": "swing"}, {"N": 50, "stress": "rise"}),
        inputs=_softmax_inputs,
        program=_softmax_program, outputs=("lse",), oracle=_softmax_oracle,
        expected=lambda s, p: {"traffic": row_lse_io(_ROWS, s["N"], passes=passes), "atomics": {}},
        flops=lambda s, p: [4 * _ROWS * s["N"]], shared_budget=1024, reference=reference,
        check_params=_power_of_two("threads", 2, 64))


# --- lab 7: the FlashAttention-2 forward ----------------------------------------------------------------------

def _qkv(rng, shape, key_scale=95.0):
    N, N_k, d = shape["N"], shape["N_k"], HEAD_DIM
    if not shape.get("stress"):
        return {"Q": _normal(rng, N, d), "K": _normal(rng, N_k, d), "V": _normal(rng, N_k, d)}
    Q, K = _aligned(rng, shape, N, N_k, d, key_scale=key_scale)
    return {"Q": Q, "K": K, "V": _normal(rng, N_k, d)}


def _fa2_oracle(inputs, shape):
    O, lse = reference_attention(_f32(inputs["Q"]), _f32(inputs["K"]), _f32(inputs["V"]),
                                 causal=bool(shape.get("causal")))
    return {"O": O, "lse": lse}


def _fa2_program(dev, k, shape, p):
    N, N_k = shape["N"], shape["N_k"]
    dev.empty("O", (N, HEAD_DIM))
    dev.empty("lse", (N,))
    dev.empty("scratch", (N, N_k))
    dev.launch(k[0], cdiv(N, p["block_q"]), p["block_q"], dev["Q"], dev["K"], dev["V"], dev["O"], dev["lse"],
               dev["scratch"], N, N_k, 1.0 / math.sqrt(HEAD_DIM), bool(shape.get("causal")))


def _visited_entries(shape, p):
    """Score entries the kernel computes: every (row, key) pair of the visited blocks."""
    rows, J, cols = causal_block_counts(shape["N"], block_q=p["block_q"], block_kv=p["block_kv"],
                                        causal=bool(shape.get("causal")), N_k=shape["N_k"])
    return int((rows * cols).sum())


def _fa2_expected(shape, p):
    return {"traffic": flash_forward_io(shape["N"], HEAD_DIM, N_k=shape["N_k"], block_q=p["block_q"],
                                        block_kv=p["block_kv"], causal=bool(shape.get("causal")), by_tensor=True),
            "atomics": {}}


# --- lab 8: flash-decoding ---------------------------------------------------------------------------------------

def _dec_inputs(rng, shape):
    H, N_k, d = shape["heads"], shape["N_k"], HEAD_DIM
    if not shape.get("stress"):
        return {"q": _normal(rng, H, d), "K": _normal(rng, H, N_k, d), "V": _normal(rng, H, N_k, d)}
    q, K = _aligned(rng, shape, H, N_k, d, heads=H)
    return {"q": q, "K": K, "V": _normal(rng, H, N_k, d)}


def _dec_oracle(inputs, shape):
    outs = [reference_attention(_f32(inputs["q"][h:h + 1]), _f32(inputs["K"][h]), _f32(inputs["V"][h]))
            for h in range(shape["heads"])]
    return {"O": np.concatenate([o for o, _ in outs]), "lse": np.concatenate([lse for _, lse in outs])}


def _dec_program(dev, k, shape, p):
    H, N_k, S = shape["heads"], shape["N_k"], shape["num_splits"]
    dev.empty("O_part", (H, S, HEAD_DIM))
    dev.empty("lse_part", (H, S))
    dev.empty("O", (H, HEAD_DIM))
    dev.empty("lse", (H,))
    dev.launch(k[0], (H, S), p["threads"], dev["q"], dev["K"], dev["V"], dev["O_part"], dev["lse_part"], N_k, S,
               1.0 / math.sqrt(HEAD_DIM))
    dev.launch(k[1], H, p["threads"], dev["O_part"], dev["lse_part"], dev["O"], dev["lse"], S)


def _dec_expected(shape, p):
    one = split_kv_io(shape["N_k"], HEAD_DIM, num_splits=shape["num_splits"])
    return {"traffic": {n: {k: v * shape["heads"] for k, v in t.items()} for n, t in one.items()},
            "atomics": {}}


# --- lab 9: the backward ---------------------------------------------------------------------------------------

def _bwd_inputs(rng, shape):
    # the backward's large scores reach about +-160, past FP32's exp range: a score near 1000 would keep too few
    # digits in FP32 for the gradients (dQ = dS K multiplies P's rounding by |K|), however the kernel is written
    t = _qkv(rng, shape, key_scale=15.0)
    t["dO"] = _normal(rng, shape["N"], HEAD_DIM)
    O, lse = reference_attention(_f32(t["Q"]), _f32(t["K"]), _f32(t["V"]), causal=bool(shape.get("causal")))
    t["O"], t["lse"] = O, lse
    return t


def _bwd_oracle(inputs, shape):
    dQ, dK, dV = standard_attention_backward(_f32(inputs["Q"]), _f32(inputs["K"]), _f32(inputs["V"]),
                                             _f32(inputs["dO"]), causal=bool(shape.get("causal")))
    return {"dQ": dQ, "dK": dK, "dV": dV}


def _bwd_program(dq):
    def program(dev, k, shape, p):
        N, N_k = shape["N"], shape["N_k"]
        T_c = cdiv(N_k, p["block_kv"])
        causal = bool(shape.get("causal"))
        scale = 1.0 / math.sqrt(HEAD_DIM)
        dev.empty("D", (N,))
        dev.empty("dK", (N_k, HEAD_DIM))
        dev.empty("dV", (N_k, HEAD_DIM))
        dev.empty("dQ", (N, HEAD_DIM))
        # the pre-pass writes D and, for the atomic adds, zeroes dQ (as flash-attn's does)
        dev.launch(ref_backward.bwd_preprocess, cdiv(N, 32), 32, dev["O"], dev["dO"], dev["D"], dev["dQ"], N,
                   dq == "atomic")
        common = [dev[n] for n in ("Q", "K", "V", "dO", "lse", "D")]
        if dq == "atomic":
            dev.launch(k[0], T_c, p["block_kv"], *common, dev["dQ"], dev["dK"], dev["dV"], N, N_k, scale, causal)
        else:
            dev.empty("dQ_part", (T_c, N, HEAD_DIM))
            dev.launch(k[0], T_c, p["block_kv"], *common, dev["dQ_part"], dev["dK"], dev["dV"], N, N_k, scale,
                       causal)
            dev.launch(ref_backward.dq_reduce, cdiv(N, 32), 32, dev["dQ_part"], dev["dQ"], N, N_k, p["block_q"],
                       p["block_kv"], causal)
    return program


def _bwd_flops(dq):
    def flops(shape, p):
        entries = _visited_entries(shape, p)
        launches = [2 * shape["N"] * HEAD_DIM, 10 * entries * HEAD_DIM]
        return launches + ([shape["N"] * HEAD_DIM * cdiv(shape["N_k"], p["block_kv"])] if dq == "split" else [])
    return flops


def _bwd_expected(shape, p, dq):
    kw = dict(N_k=shape["N_k"], block_q=p["block_q"], block_kv=p["block_kv"], causal=bool(shape.get("causal")))
    return {"traffic": flash_backward_io(shape["N"], HEAD_DIM, by_tensor=True, dq=dq, **kw),
            "atomics": {"dQ": flash_backward_atomics(shape["N"], HEAD_DIM, **kw)} if dq == "atomic" else {}}


def _bwd_item(key, label, title, kernel, dq, reference):
    return CudaLab(
        key, label, title, "lab9_cuda_backward", "05_flash_backward", 45, kernels=(kernel,),
        params={"block_q": 8, "block_kv": 8},
        shapes=({"N": 32, "N_k": 40, "causal": False}, {"N": 37, "N_k": 29, "causal": True},
                {"N": 24, "N_k": 24, "causal": True}, {"N": 20, "N_k": 28, "causal": False, "stress": "swing"}),
        inputs=_bwd_inputs, program=_bwd_program(dq), outputs=("dQ", "dK", "dV"), oracle=_bwd_oracle,
        expected=lambda s, p: _bwd_expected(s, p, dq),
        flops=_bwd_flops(dq), shared_budget=2048, max_threads=32, reference=reference,
        provided={"bwd_preprocess": ref_backward.bwd_preprocess, "dq_reduce": ref_backward.dq_reduce},
        check_params=_between(block_q=(1, 32), block_kv=(1, 32)))


def _labs():
    labs = (
        _softmax_item("cuda_softmax_two_pass", "6a", "A row's log-sum-exp by a thread block: two passes",
                      "row_lse_two_pass", 2, {"row_lse_two_pass": ref_softmax.row_lse_two_pass}),
        _softmax_item("cuda_softmax_online", "6b", "A row's log-sum-exp by a thread block: one pass",
                      "row_lse_online", 1, {"row_lse_online": ref_softmax.row_lse_online}),
        CudaLab(
            "cuda_fa2", "7", "FlashAttention-2 forward in CUDA", "lab7_cuda_fa2", "04_flash_forward", 45,
            kernels=("fa2_forward",), params={"block_q": 16, "block_kv": 16},
            shapes=({"N": 64, "N_k": 64, "causal": False}, {"N": 45, "N_k": 77, "causal": True},
                    {"N": 90, "N_k": 53, "causal": True}, {"N": 1, "N_k": 70, "causal": False},
                    {"N": 40, "N_k": 48, "causal": False, "stress": "swing"},
                    {"N": 16, "N_k": 48, "causal": False, "stress": "rise"}),
            inputs=_qkv, program=_fa2_program, outputs=("O", "lse"), oracle=_fa2_oracle, expected=_fa2_expected,
            flops=lambda s, p: [4 * _visited_entries(s, p) * HEAD_DIM], shared_budget=2048,
            reference={"fa2_forward": ref_forward.fa2_forward},
            check_params=_between(block_q=(1, 64), block_kv=(1, 64))),
        CudaLab(
            "cuda_decoding", "8", "Flash-decoding in CUDA: split and combine", "lab8_cuda_decoding",
            "06_flash_decoding", 40, kernels=("split_kernel", "combine_kernel"), params={"threads": 16},
            shapes=({"heads": 2, "N_k": 40, "num_splits": 3}, {"heads": 3, "N_k": 37, "num_splits": 5},
                    {"heads": 1, "N_k": 9, "num_splits": 4}, {"heads": 2, "N_k": 5, "num_splits": 8},
                    {"heads": 2, "N_k": 64, "num_splits": 1},
                    {"heads": 1, "N_k": 48, "num_splits": 2, "stress": "swing"},
                    {"heads": 1, "N_k": 48, "num_splits": 2, "stress": "rise"}),
            inputs=_dec_inputs, program=_dec_program, outputs=("O", "lse"), oracle=_dec_oracle,
            expected=_dec_expected,
            flops=lambda s, p: [4 * s["heads"] * s["N_k"] * HEAD_DIM, 3 * s["heads"] * s["num_splits"] * HEAD_DIM],
            shared_budget=2048, reference={"split_kernel": ref_decoding.split_kernel,
                                           "combine_kernel": ref_decoding.combine_kernel},
            check_params=_power_of_two("threads", 2, 64)),
        _bwd_item("cuda_backward_atomic", "9a", "The backward in CUDA: dQ by atomic adds", "bwd_atomic", "atomic",
                  {"bwd_atomic": ref_backward.bwd_atomic}),
        _bwd_item("cuda_backward_deterministic", "9b", "The backward in CUDA: a deterministic dQ",
                  "bwd_deterministic", "split", {"bwd_deterministic": ref_backward.bwd_deterministic}),
    )
    return {lab.key: lab for lab in labs}


#: The CUDA lab items by key, in the order of the Labs part.
CUDA_LABS = _labs()


def get_cuda_lab(lab) -> CudaLab:
    """A CUDA lab item by key (``"cuda_fa2"``), label (``"7"``, ``"6b"``) or itself.

    Raises:
        TypeError: not a string or a CudaLab. ValueError: unknown key or label (the message lists them).
    """
    if isinstance(lab, CudaLab):
        return lab
    if not isinstance(lab, str):
        raise TypeError(f"lab must be a CUDA lab key such as 'cuda_fa2' or a label such as '7', got {lab!r}")
    labs = CUDA_LABS
    for x in labs.values():
        if lab in (x.key, x.label):
            return x
    raise ValueError(f"unknown CUDA lab {lab!r}; CUDA labs: " + ", ".join(f"{x.label} {x.key!r}" for x in labs.values()))
