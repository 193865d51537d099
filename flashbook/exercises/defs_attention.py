"""Exercises 1-6 (lecture §12): online softmax, HBM traffic of standard and flash attention, causal blocks,
what the backward pass keeps, the identity behind D.

Each exercise is written in one place, top to bottom: its parameters (variant 0 = the lecture's numbers)
and the ranges a variant draws from, the function computing the reference answer *at run time* from
``labcore`` (never a typed literal), and its :class:`~flashbook.exercises.model.Exercise` record. A known
mistake's value is a function of the reference answers and the intermediate quantities (elements vs bytes,
MB vs MiB, ...), so a changed parameter or preset moves the reference and its mistakes together.

Sources: lecture §12 (exercises and answers); the numbers come from the labcore modules of each section.
"""
from __future__ import annotations

import math

import numpy as np

from labcore import (OnlineSoftmax, causal_block_fraction, flash_forward_io, paper_block_sizes,
                     saved_for_backward_bytes, standard_attention_io)
from labcore.attention import masked_scores, row_softmax
from labcore.checks import cdiv
from labcore.units import GB, MB

from .feedback import FP16_ELEMENTS, binary_unit
from .model import Exercise, Mistake, Part

__all__ = ["EXERCISES", "D_EXAMPLE"]

_SIZES = tuple(range(1024, 8193, 512))      # sequence lengths N of a variant


# ---- exercise 1: online softmax by hand ---------------------------------------------------------------------
def _answer1(p):
    st = OnlineSoftmax(1)
    blocks = [np.asarray(p["block1"], dtype=float), np.asarray(p["block2"], dtype=float)]
    for s in blocks:
        st.update(s, np.ones((s.size, 1)))
    ms = [t["m"] for t in st.trace]
    ls = [t["l"] for t in st.trace]
    s1, s2 = blocks
    ctx = {"block2_sum": float(np.exp(s2 - ms[1]).sum()), "raw1": float(np.exp(s1).sum()),
           "alpha": math.exp(ms[0] - ms[1])}
    return {"m1": ms[0], "l1": ls[0], "m2": ms[1], "l2": ls[1]}, ctx


def _draw1(rng):
    return {b: [rng.randint(0, 6), rng.randint(0, 6)] for b in ("block1", "block2")}


def _valid1(p, r, c):
    scores = p["block1"] + p["block2"]
    return (len(p["block1"]) == len(p["block2"]) == 2 and all(isinstance(s, int) and 0 <= s <= 6 for s in scores)
            and max(p["block2"]) > max(p["block1"]))      # block 2 raises the maximum: the rescale matters


_EX1 = Exercise(
    number=1, label="ex-online-softmax", title="Online softmax by hand", derive=_answer1,
    template="Scores of one row arrive in two blocks, {block1} then {block2}. Give m and l after each block.",
    params={"block1": [1, 3], "block2": [2, 5]}, draw=_draw1, valid=_valid1,
    parts=tuple(Part(k, lab, atol=1e-3, decimals=3) for k, lab in (
        ("m1", "m after block 1"), ("l1", "l after block 1"), ("m2", "m after block 2"), ("l2", "l after block 2"))),
    mistakes=(
        Mistake("no_rescale", "l2", lambda r, c: r["l1"] + c["block2_sum"],
                "you added block 2's sum without rescaling the old l: multiply l by alpha = exp(m_old - m_new) "
                "first"),
        Mistake("dropped_old", "l2", lambda r, c: c["block2_sum"],
                "that is block 2 alone; l must keep block 1's contribution, rescaled by alpha"),
        Mistake("alpha_inverted", "l2", lambda r, c: r["l1"] / c["alpha"] + c["block2_sum"],
                "alpha is exp(m_old - m_new) <= 1, not exp(m_new - m_old)"),
        Mistake("no_max", "l1", lambda r, c: c["raw1"],
                "you summed exp(s) without subtracting the running max m; l is sum exp(s - m)")),
    hint="a dict {'m1': ..., 'l1': ..., 'm2': ..., 'l2': ...} or a tuple (m1, l1, m2, l2), 3 decimals")


# ---- exercise 2: HBM traffic of standard attention ----------------------------------------------------------
def _answer2(p):
    elems = standard_attention_io(p["N"], p["d"])
    b = 2 * elems
    return {"MB": b / MB}, {"elements": elems, "bytes": b, "quadratic_bytes": 2 * 4 * p["N"] ** 2}


_EX2 = Exercise(
    number=2, label="ex-standard-io", title="HBM traffic of standard attention", derive=_answer2,
    template="One head, N = {N}, d = {d}, FP16: how many MB (10^6 bytes) does Algorithm 0 read and write?",
    params={"N": 4096, "d": 64}, ranges={"N": _SIZES, "d": (32, 64, 96, 128)},
    parts=(Part("MB", "HBM traffic", "MB", atol=0.06, decimals=1),),
    mistakes=(
        Mistake("elements_not_bytes", "MB", lambda r, c: c["elements"] / MB, FP16_ELEMENTS),
        binary_unit("MiB", "MB", lambda r, c: c["bytes"]),
        Mistake("quadratic_only", "MB", lambda r, c: c["quadratic_bytes"] / MB,
                "you kept only the N^2 terms (S and P); add the reads of Q, K, V and the write of O (4Nd)")),
    hint="one number in MB, e.g. answer = 123.4")


# ---- exercise 3: HBM traffic of FlashAttention (Algorithm 1's loop order) -----------------------------------
def _answer3(p):
    N, d, M = p["N"], p["d"], p["M"]
    B_r, B_c = paper_block_sizes(M, d)
    elems = flash_forward_io(N, d, block_q=B_r, block_kv=B_c, loop_order="fa1")
    std = standard_attention_io(N, d)
    ctx = {"B_r": B_r, "B_c": B_c, "T_c": cdiv(N, B_c), "elements": elems, "bytes": 2 * elems,
           "init": N * d + 2 * N, "fa2_elements": flash_forward_io(N, d, block_q=B_r, block_kv=B_c, loop_order="fa2"),
           "standard": std, "head": "Same head" if p["same_head"] else f"One head, N = {N}, d = {d}, FP16"}
    return {"MB": 2 * elems / MB, "ratio": std / elems}, ctx


def _valid3(p, r, c):
    # the paper's blocks: four tiles of B_c x d fit in M, and a K/V block is no longer than the sequence
    return 4 * c["B_c"] * p["d"] <= p["M"] and c["B_c"] <= p["N"] and c["B_r"] >= 1


_EX3 = Exercise(
    number=3, label="ex-flash-io", title="HBM traffic of FlashAttention", derive=_answer3,
    template="{head}, SRAM M = {M:,} elements, the paper's block sizes and Algorithm 1's loop order: "
             "traffic in MB, and the ratio standard / flash.",
    params={"N": 4096, "d": 64, "M": 51_200, "same_head": True},
    ranges={"N": _SIZES, "d": (64, 96, 128), "M": tuple(512 * kib for kib in (48, 64, 96, 100, 128, 164, 192, 228)),
            "same_head": (False,)},
    valid=_valid3,
    parts=(Part("MB", "HBM traffic", "MB", atol=0.06, decimals=1),
           Part("ratio", "standard / flash", "x", atol=0.06, decimals=1)),
    mistakes=(
        Mistake("elements_not_bytes", "MB", lambda r, c: c["elements"] / MB, FP16_ELEMENTS),
        binary_unit("MiB", "MB", lambda r, c: c["bytes"]),
        Mistake("no_init", "MB", lambda r, c: 2 * (c["elements"] - c["init"]) / MB,
                "Algorithm 1 first writes the initial O, l, m to HBM (Nd + 2N elements); count that too"),
        Mistake("fa2_order", "MB", lambda r, c: 2 * c["fa2_elements"] / MB,
                "that is the FlashAttention-2 loop order (outer loop over Q blocks); the question asks for "
                "Algorithm 1's order (outer loop over K/V blocks)"),
        Mistake("ratio_inverted", "ratio", lambda r, c: 1 / r["ratio"],
                "that is flash / standard; the question asks how many times less flash moves")),
    hint="a dict {'MB': ..., 'ratio': ...} or a tuple (MB, ratio), one decimal each")


# ---- exercise 4: causal blocks ------------------------------------------------------------------------------
def _answer4(p):
    f = causal_block_fraction(p["N"], block_q=p["block"])
    return {"fraction": float(f)}, {"T": cdiv(p["N"], p["block"])}


_EX4 = Exercise(
    number=4, label="ex-causal-blocks", title="Causal blocks", derive=_answer4,
    template="N = {N}, {block} x {block} blocks, causal mask: what fraction of the blocks must be computed?",
    params={"N": 4096, "block": 128}, ranges={"N": _SIZES, "block": (64, 128, 256)},
    valid=lambda p, r, c: p["N"] % p["block"] == 0 and 4 <= c["T"] <= 64,
    parts=(Part("fraction", "fraction of blocks", atol=1.5e-3, decimals=3),),
    mistakes=(
        Mistake("half", "fraction", lambda r, c: 0.5,
                "exactly half ignores the diagonal: the T diagonal blocks are (partly) visible and must be "
                "computed, adding 1/(2T)"),
        Mistake("strictly_below", "fraction", lambda r, c: (c["T"] - 1) / (2 * c["T"]),
                "you counted only the blocks strictly below the diagonal; the diagonal blocks are computed too "
                "(with the mask applied inside)"),
        Mistake("percent", "fraction", lambda r, c: 100 * r["fraction"],
                "give a fraction between 0 and 1, not a percentage")),
    hint="one number between 0 and 1, three decimals, e.g. answer = 0.123")


# ---- exercise 5: what the backward pass keeps ---------------------------------------------------------------
_P_BYTES, _L_BYTES = 2, 4      # P in FP16, L in FP32 (the statement's types)


def _answer5(p):
    n, N = p["matrices"], p["N"]
    P_b = saved_for_backward_bytes(N, algorithm="standard", num_matrices=n, p_bytes=_P_BYTES)
    L_b = saved_for_backward_bytes(N, algorithm="flash", num_matrices=n, lse_bytes=_L_BYTES)
    return {"P_GB": P_b / GB, "L_MB": L_b / MB}, {"P_elems": P_b / _P_BYTES, "L_elems": L_b / _L_BYTES}


_EX5 = Exercise(
    number=5, label="ex-backward-memory", title="What the backward pass keeps", derive=_answer5,
    template="{matrices} attention matrices, N = {N:,}: the size of P in FP16 (GB = 10^9 bytes) that standard "
             "attention keeps for the backward pass, and of FlashAttention's L in FP32 (MB = 10^6 bytes).",
    params={"matrices": 32, "N": 32_768},
    ranges={"matrices": (8, 12, 16, 24, 32, 40, 48, 64, 80, 96), "N": (8192, 16_384, 32_768, 65_536)},
    parts=(Part("P_GB", "P (FP16)", "GB", rtol=2e-3, digits=3), Part("L_MB", "L (FP32)", "MB", rtol=1e-2, digits=3)),
    mistakes=(
        binary_unit("GiB", "P_GB", lambda r, c: r["P_GB"] * GB),
        Mistake("elements_not_bytes", "P_GB", lambda r, c: c["P_elems"] / GB,
                "that is the number of elements (in billions); each FP16 element is 2 bytes"),
        Mistake("P_fp32", "P_GB", lambda r, c: c["P_elems"] * 4 / GB,
                "P is stored in FP16 (2 bytes per element), not FP32"),
        Mistake("L_fp16", "L_MB", lambda r, c: c["L_elems"] * 2 / MB,
                "L (the logsumexp) is kept in FP32: 4 bytes per row, not 2"),
        binary_unit("MiB", "L_MB", lambda r, c: r["L_MB"] * MB, id="L_MiB"),
        Mistake("L_elements", "L_MB", lambda r, c: c["L_elems"] / MB,
                "that is the number of elements (in millions); each FP32 value is 4 bytes")),
    hint="a dict {'P_GB': ..., 'L_MB': ...} or a tuple (P_GB, L_MB)")


# ---- exercise 6: the D identity -----------------------------------------------------------------------------
#: The small numeric example of exercise 6, variant 0 (shown in the statement and the static form).
D_EXAMPLE = {"P_i": [0.5, 0.3, 0.2], "V": [[1.0, 2.0], [3.0, -1.0], [0.0, 4.0]], "dO_i": [2.0, 1.0]}


def _answer6(p):
    P, V, dO = (np.asarray(p[k], dtype=float) for k in ("P_i", "V", "dO_i"))
    dP = V @ dO                      # dP_ij = dO_i . v_j  (dP = dO V^T)
    O = P @ V
    return {"D": float(np.sum(dP * P))}, {"rowsum_dP": float(dP.sum()), "O": O,
                                         "prod_of_sums": float(dO.sum() * O.sum())}


def _draw6(rng):
    while True:
        a, b = rng.randint(1, 8), rng.randint(1, 8)
        if a + b <= 9:
            break
    return {"P_i": [a / 10, b / 10, (10 - a - b) / 10],
            "V": [[float(rng.randint(-3, 4)), float(rng.randint(-3, 4))] for _ in range(3)],
            "dO_i": [float(rng.randint(-2, 3)), float(rng.randint(1, 3))]}


def _valid6(p, r, c):
    ints = [x for row in p["V"] for x in row] + p["dO_i"]
    return (len(p["P_i"]) == len(p["V"]) == 3 and len(p["dO_i"]) == 2 and abs(sum(p["P_i"]) - 1) < 1e-12
            and all(0.1 - 1e-12 <= x <= 0.8 + 1e-12 for x in p["P_i"])
            and all(x == int(x) and -3 <= x <= 4 for x in ints))


def _check_D_function(fn) -> tuple:
    """Grade a reader's ``D(O, dO)`` against ``rowsum(dP * P)`` on random attention problems.

    Returns ``(status, mistake_id, message)``; never raises (the reader's exceptions are reported).
    """
    rng = np.random.default_rng(1234)
    shapes = [(5, 7, 4, 3), (1, 9, 8, 8), (16, 16, 6, 2)]   # (N_q, N_k, d, d_v); N_q = 1 included
    for n_q, n_k, d, d_v in shapes:
        Q, K = rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d))
        V, dO = rng.standard_normal((n_k, d_v)), rng.standard_normal((n_q, d_v))
        P, _ = row_softmax(masked_scores(Q, K))
        O = P @ V
        want = np.sum((dO @ V.T) * P, axis=1)
        try:
            got = fn(O.copy(), dO.copy())
        except Exception as exc:  # the reader's code: report, never propagate
            return "malformed", "raised", f"your function raised {type(exc).__name__}: {exc}"
        try:
            got = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return ("malformed", "not_numeric", f"your function returned {type(got).__name__}; return a numpy "
                    "array of one number per row of O")
        if got.shape == (n_q, n_q) and n_q > 1:
            return ("wrong", "full_matrix", "you returned the whole matrix dO O^T; D_i needs only row i of dO "
                    "against row i of O (its diagonal), e.g. a row-wise sum of dO * O")
        if got.ndim == 0:
            return ("wrong", "scalar", "you returned a single number; D has one entry per query row (sum over "
                    "the head dimension only, not over rows too)")
        if got.size == n_q:
            got = got.reshape(n_q)
        elif got.shape == (d_v,):
            return ("wrong", "wrong_axis", "you summed over the rows (axis 0); D_i sums over the head "
                    "dimension of row i (axis 1)")
        else:
            return ("wrong", "wrong_shape", f"for O of shape {O.shape} your function returned shape "
                    f"{got.shape}; D must have shape ({n_q},)")
        if not np.all(np.isfinite(got)):
            return "wrong", "nan", "your function returned NaN or inf"
        if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
            if np.allclose(got, dO.sum(1) * O.sum(1), rtol=1e-9, atol=1e-12):
                return ("wrong", "prod_of_sums", "that is (sum of dO_i) x (sum of O_i); D_i is the dot product "
                        "sum_k dO_ik O_ik")
            return ("wrong", "mismatch", f"on a random problem (N_q={n_q}, N_k={n_k}, d_v={d_v}) your D differs "
                    "from rowsum(dP * P); write dP = dO V^T and expand O_i = sum_j P_ij v_j")
    return "correct", None, "matches rowsum(dP * P) on 3 random problems (N_q = 1, 5, 16)"


_EX6 = Exercise(
    number=6, label="ex-d-identity", title="The identity behind $D$", derive=_answer6,
    template="Show that sum_j dP_ij P_ij = dO_i . O_i. Write a function D(O, dO) that returns D_i for every "
             "row (checked against rowsum(dP * P) on random inputs), or give D_i for the small example.",
    params=D_EXAMPLE, draw=_draw6, valid=_valid6,
    example="Example: P_i = {P_i}, V = {V}, dO_i = {dO_i}.",
    parts=(Part("D", "D_i for the example", atol=1e-3, decimals=3),),
    mistakes=(
        Mistake("rowsum_dP", "D", lambda r, c: c["rowsum_dP"],
                "that is sum_j dP_ij without the weights P_ij; D_i = sum_j dP_ij P_ij"),
        Mistake("prod_of_sums", "D", lambda r, c: c["prod_of_sums"],
                "that is (sum of dO_i) x (sum of O_i); D_i is the dot product dO_i . O_i")),
    hint="a function D(O, dO) returning one number per row, or one number for the example",
    function_check=_check_D_function)

EXERCISES = (_EX1, _EX2, _EX3, _EX4, _EX5, _EX6)
