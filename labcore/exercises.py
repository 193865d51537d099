"""The twelve exercises of lecture §12, self-graded in a live kernel and in the static HTML book.

One definition per exercise (:data:`EXERCISES`): a stable label, the parts of the answer with their units
and tolerances, a function that computes the reference answer *at run time* from ``labcore`` (never a typed
literal), and a list of known mistakes, each a function of the reference (elements vs bytes, MB vs MiB, the
factor 2 of a multiply-add, ...) with feedback aimed at that mistake.

Two graders read the same definition:

- :func:`check` (live kernel): ``check(k, answer)`` prints a verdict and returns a :class:`Verdict`.
- :func:`static_form` (book build, ``FLASHBOOK_STATIC=1``): a small self-contained HTML form whose inline
  JavaScript (:data:`GRADER_JS`) applies the same rules to a JSON payload (:func:`payload`) generated from
  the same definition: reference values, absolute tolerances, mistake values and feedback, message
  templates. The Python grader grades *through the same payload* (:func:`grade_payload`), and
  ``tests/test_exercises.py`` runs the JavaScript under node on the same inputs and asserts identical
  verdicts.

Answer formats (what ``answer`` may be):

- a single-part exercise: one real number (int, float, numpy scalar) in the unit the statement asks for;
- a multi-part exercise: a dict keyed by the part keys (``exercise(k).keys()``), or a tuple/list in the
  order of the parts; a missing key or a ``None`` entry counts as "not answered yet";
- a multiple-choice part (exercise 9, ``"cause"``): the option letter, e.g. ``"A"``;
- exercise 6 also accepts a *function* ``D(O, dO)`` returning one number per row; it is checked against
  ``rowsum(dP * P)`` on random inputs (the static page grades the numeric example instead).

Verdict statuses: ``"correct"``, ``"not_attempted"`` (``None`` or an untouched stub), ``"incomplete"``
(some parts right, the rest not answered), ``"wrong"`` (with per-part feedback), ``"malformed"`` (a
friendly message: a string, a list of the wrong length, an array of the wrong shape, NaN), and
``"unavailable"`` (the labcore function the reference needs is not in this checkout). :func:`check` never
raises for any ``answer``.

Sources: lecture §12 (exercises and answers); the numbers come from the labcore modules of each section.
This module imports only numpy and the standard library at import time.
"""
from __future__ import annotations

import html
import json
import math
import numbers
import uuid
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = [
    "Part", "Mistake", "Exercise", "PartVerdict", "Verdict", "EXERCISES", "exercise", "check",
    "reference", "payload", "grade_payload", "static_form", "GRADER_JS", "D_EXAMPLE",
]

MB, GB, MiB, GiB = 1e6, 1e9, 2.0 ** 20, 2.0 ** 30


class ExerciseUnavailable(RuntimeError):
    """The labcore function an exercise's reference needs is not in this checkout."""


def _lc(name: str):
    """``labcore.<name>``, or :class:`ExerciseUnavailable` naming what is missing."""
    import labcore

    try:
        return getattr(labcore, name)
    except AttributeError:
        raise ExerciseUnavailable(f"labcore.{name} is not available in this checkout") from None


# --------------------------------------------------------------------------------------------- definitions
@dataclass(frozen=True)
class Part:
    """One answer field.

    Args:
        key: dict key of this part in a multi-part answer (e.g. ``"P_GB"``).
        label: what the reader sees beside the field.
        unit: display unit of the answer (``"MB"`` = 10^6 bytes, ``"%"``, ...); "" for a pure number.
        rtol, atol: accepted if ``|answer - ref| <= tol = max(atol, rtol * |ref|)`` (the precision the
            question asks for). A known mistake's value v matches within ``tol * |v| / |ref|`` (the same
            relative precision, so a mistake ten times smaller gets a window ten times narrower).
        options: for a multiple-choice part, ``((letter, text, feedback), ...)``; the feedback of the right
            option is ignored. ``None`` for a numeric part.
    """

    key: str
    label: str
    unit: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    options: tuple | None = None

    @property
    def kind(self) -> str:
        return "choice" if self.options else "number"


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer to one part.

    Args:
        id: stable identifier (``"elements_not_bytes"``).
        part: key of the part it applies to.
        value: ``f(ref, ctx) -> float``: the value this mistake produces, from the reference answers
            ``ref`` (dict by part key) and the reference's intermediate quantities ``ctx``.
        feedback: what to tell a reader who made it (never the answer itself).
    """

    id: str
    part: str
    value: Callable[[dict, dict], float]
    feedback: str


@dataclass(frozen=True)
class Exercise:
    """One exercise of lecture §12.

    Args:
        number: 1..12. label: stable sphinx-exercise label (``"ex-online-softmax"``). title: short title.
        statement: the question in one or two sentences (the notebook states it in full).
        parts: the answer fields (:class:`Part`).
        compute: ``() -> (ref, ctx)``: reference answers by part key (in the parts' units) and
            intermediate quantities, computed with labcore at run time.
        mistakes: known mistakes (:class:`Mistake`), at least two per numeric exercise.
        hint: the answer format, shown by "not attempted" and malformed-input messages.
        data: fixed inputs the statement shows (e.g. the small example of exercise 6).
        function_check: optional ``fn -> list[PartVerdict]`` grading a reader's function (exercise 6).
        source: where the exercise and its answer come from.
    """

    number: int
    label: str
    title: str
    statement: str
    parts: tuple
    compute: Callable[[], tuple]
    mistakes: tuple
    hint: str
    data: dict = field(default_factory=dict)
    function_check: Callable | None = None
    source: str = "lecture §12"

    def keys(self) -> list[str]:
        return [p.key for p in self.parts]

    def part(self, key: str) -> Part:
        for p in self.parts:
            if p.key == key:
                return p
        raise KeyError(key)


def _pct_feedback(what="a fraction"):
    return f"That looks like {what}; the question asks for a percentage (multiply by 100)."


# ---- exercise 1: online softmax by hand -------------------------------------------------------------------
_EX1_BLOCKS = ([1.0, 3.0], [2.0, 5.0])


def _ex1():
    OnlineSoftmax = _lc("OnlineSoftmax")
    st = OnlineSoftmax(1)
    for blk in _EX1_BLOCKS:
        s = np.asarray(blk, dtype=float)
        st.update(s, np.ones((s.size, 1)))
    ms = [t["m"] for t in st.trace]
    ls = [t["l"] for t in st.trace]
    s1, s2 = (np.asarray(b) for b in _EX1_BLOCKS)
    ctx = {"block2_sum": float(np.exp(s2 - ms[1]).sum()), "raw1": float(np.exp(s1).sum()),
           "alpha": math.exp(ms[0] - ms[1])}
    return {"m1": ms[0], "l1": ls[0], "m2": ms[1], "l2": ls[1]}, ctx


# ---- exercises 2, 3: HBM traffic ---------------------------------------------------------------------------
_EX2 = dict(N=4096, d=64)
_EX3 = dict(N=4096, d=64, M=51_200)


def _ex2():
    elems = _lc("standard_attention_io")(_EX2["N"], _EX2["d"])
    b = 2 * elems
    return {"MB": b / MB}, {"elements": elems, "bytes": b, "quadratic_bytes": 2 * 4 * _EX2["N"] ** 2}


def _ex3():
    N, d, M = _EX3["N"], _EX3["d"], _EX3["M"]
    B_r, B_c = _lc("paper_block_sizes")(M, d)
    io = _lc("flash_forward_io")
    elems = io(N, d, block_q=B_r, block_kv=B_c, loop_order="fa1")
    std = _lc("standard_attention_io")(N, d)
    ctx = {"B_r": B_r, "B_c": B_c, "T_c": -(-N // B_c), "elements": elems, "bytes": 2 * elems,
           "init": N * d + 2 * N, "fa2_elements": io(N, d, block_q=B_r, block_kv=B_c, loop_order="fa2"), "standard": std}
    return {"MB": 2 * elems / MB, "ratio": std / elems}, ctx


# ---- exercise 4: causal blocks -----------------------------------------------------------------------------
_EX4 = dict(N=4096, block=128)


def _ex4():
    f = _lc("causal_block_fraction")(_EX4["N"], block_q=_EX4["block"])
    T = -(-_EX4["N"] // _EX4["block"])
    return {"fraction": float(f)}, {"T": T}


# ---- exercise 5: what the backward pass stores -------------------------------------------------------------
_EX5 = dict(matrices=32, N=32_768, P_bytes=2, L_bytes=4)


def _ex5():
    n, N = _EX5["matrices"], _EX5["N"]
    saved = _lc("saved_for_backward_bytes")
    P_b = saved(N, algorithm="standard", num_matrices=n, p_bytes=_EX5["P_bytes"])
    L_b = saved(N, algorithm="flash", num_matrices=n, lse_bytes=_EX5["L_bytes"])
    return ({"P_GB": P_b / GB, "L_MB": L_b / MB},
            {"P_elems": P_b / _EX5["P_bytes"], "L_elems": L_b / _EX5["L_bytes"]})


# ---- exercise 6: the D identity ----------------------------------------------------------------------------
#: The small numeric example of exercise 6 (shown in the statement and the static form).
D_EXAMPLE = {"P_i": [0.5, 0.3, 0.2], "V": [[1.0, 2.0], [3.0, -1.0], [0.0, 4.0]], "dO_i": [2.0, 1.0]}


def _ex6():
    P = np.asarray(D_EXAMPLE["P_i"])
    V = np.asarray(D_EXAMPLE["V"])
    dO = np.asarray(D_EXAMPLE["dO_i"])
    dP = V @ dO                      # dP_ij = dO_i . v_j  (dP = dO V^T)
    O = P @ V
    return {"D": float(np.sum(dP * P))}, {"rowsum_dP": float(dP.sum()), "O": O,
                                         "prod_of_sums": float(dO.sum() * O.sum())}


def _ex6_function(fn) -> list:
    """Grade a reader's ``D(O, dO)`` against ``rowsum(dP * P)`` on random attention problems."""
    from .attention import masked_scores, row_softmax

    rng = np.random.default_rng(1234)
    shapes = [(5, 7, 4, 3), (1, 9, 8, 8), (16, 16, 6, 2)]   # (N_q, N_k, d, d_v); N_q = 1 included
    part = "D"
    for n_q, n_k, d, d_v in shapes:
        Q, K = rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d))
        V, dO = rng.standard_normal((n_k, d_v)), rng.standard_normal((n_q, d_v))
        P, _ = row_softmax(masked_scores(Q, K))
        O = P @ V
        want = np.sum((dO @ V.T) * P, axis=1)
        try:
            got = fn(O.copy(), dO.copy())
        except Exception as exc:  # the reader's code: report, never propagate
            return [PartVerdict(part, "malformed", "raised",
                                f"your function raised {type(exc).__name__}: {exc}")]
        try:
            got = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return [PartVerdict(part, "malformed", "not_numeric",
                                f"your function returned {type(got).__name__}; return a numpy array of "
                                "one number per row of O")]
        if got.shape == (n_q, n_q) and n_q > 1:
            return [PartVerdict(part, "wrong", "full_matrix",
                                "you returned the whole matrix dO O^T; D_i needs only row i of dO against "
                                "row i of O (its diagonal), e.g. a row-wise sum of dO * O")]
        if got.ndim == 0:
            return [PartVerdict(part, "wrong", "scalar",
                                "you returned a single number; D has one entry per query row (sum over the "
                                "head dimension only, not over rows too)")]
        if got.size == n_q:
            got = got.reshape(n_q)
        elif got.shape == (d_v,):
            return [PartVerdict(part, "wrong", "wrong_axis",
                                "you summed over the rows (axis 0); D_i sums over the head dimension "
                                "of row i (axis 1)")]
        else:
            return [PartVerdict(part, "wrong", "wrong_shape",
                                f"for O of shape {O.shape} your function returned shape {got.shape}; "
                                f"D must have shape ({n_q},)")]
        if not np.all(np.isfinite(got)):
            return [PartVerdict(part, "wrong", "nan", "your function returned NaN or inf")]
        if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
            if np.allclose(got, dO.sum(1) * O.sum(1), rtol=1e-9, atol=1e-12):
                return [PartVerdict(part, "wrong", "prod_of_sums",
                                    "that is (sum of dO_i) x (sum of O_i); D_i is the dot product "
                                    "sum_k dO_ik O_ik")]
            return [PartVerdict(part, "wrong", "mismatch",
                                f"on a random problem (N_q={n_q}, N_k={n_k}, d_v={d_v}) your D differs "
                                "from rowsum(dP * P); write dP = dO V^T and expand O_i = sum_j P_ij v_j")]
    return [PartVerdict(part, "correct", None,
                        "matches rowsum(dP * P) on 3 random problems (N_q = 1, 5, 16)")]


# ---- exercise 7: non-matmul cost ---------------------------------------------------------------------------
_EX7 = dict(gpu="A100", nonmatmul_share_pct=1.0)


def _ex7():
    g = _lc("get_gpu")(_EX7["gpu"])
    r = g.nonmatmul_cost_ratio
    return {"pct": _EX7["nonmatmul_share_pct"] * r}, {"ratio": r}


# ---- exercise 8: padding at decode -------------------------------------------------------------------------
_EX8 = dict(gpu="A100", batch=1, seqlen=65_536, num_q_heads=16, num_kv_heads=2, head_dim=128, tile_rows=128)


def _ex8():
    g = _lc("get_gpu")(_EX8["gpu"])
    est = _lc("decode_attention_time")(g, batch=_EX8["batch"], seqlen=_EX8["seqlen"],
                                       num_q_heads=_EX8["num_q_heads"], num_kv_heads=_EX8["num_kv_heads"],
                                       head_dim=_EX8["head_dim"], method="fa2")
    flops = float(est.flops_per_cta)     # 2 matmuls x 2 FLOP per multiply-add x padded rows x N x d
    eff = float(est.flops_per_sm / g.tensor_flops_per_sm)   # the model's efficiency assumption
    return ({"GFLOP": flops / 1e9, "ms": est.total * 1e3},
            {"flops": flops, "rows": est.rows_padded, "per_sm": g.tensor_flops_per_sm, "eff": eff,
             "heads": _EX8["num_q_heads"], "gpu_flops": g.tensor_flops, "est": est})


# ---- exercise 9: choosing the number of splits -------------------------------------------------------------
_EX9 = dict(gpu="A100", batch=1, seqlen=65_536, num_q_heads=16, num_kv_heads=2, head_dim=128, splits=(32, 64))


def _ex9():
    g = _lc("get_gpu")(_EX9["gpu"])
    f = _lc("decode_attention_time")
    kw = dict(batch=_EX9["batch"], seqlen=_EX9["seqlen"], num_q_heads=_EX9["num_q_heads"],
              head_dim=_EX9["head_dim"], method="flash_decoding")
    a, b = (f(g, num_kv_heads=_EX9["num_kv_heads"], num_splits=s, **kw) for s in _EX9["splits"])
    # the mistake "query heads instead of KV heads": one CTA per query head and split
    qa = f(g, num_kv_heads=_EX9["num_q_heads"], num_splits=_EX9["splits"][0], **kw)
    return ({"t32_us": a.total * 1e6, "t64_us": b.total * 1e6, "cause": "A"},
            {"est32": a, "est64": b, "one_wave_64_us": (b.total - (b.waves - 1) * b.cta_time) * 1e6,
             "qheads_32_us": qa.total * 1e6})


# ---- exercise 10: the KV-cache floor -----------------------------------------------------------------------
_EX10 = dict(model="Llama-3.1-8B", gpu="H100", seqlen=131_072, batch=1, dtype_bytes=2)


def _ex10():
    m = _lc("get_model")(_EX10["model"])
    g = _lc("get_gpu")(_EX10["gpu"])
    kv = _lc("kv_cache_bytes")
    shape = dict(seqlen=_EX10["seqlen"], batch=_EX10["batch"], num_kv_heads=m.num_kv_heads,
                 head_dim=m.head_dim, dtype_bytes=_EX10["dtype_bytes"])
    per_layer = float(kv(**shape))
    total = float(kv(**shape, num_layers=m.num_layers))
    return ({"layer_MB": per_layer / MB, "total_GB": total / GB, "ms": total / g.hbm_bandwidth * 1e3},
            {"per_layer": per_layer, "total": total, "bw": g.hbm_bandwidth, "layers": total / per_layer,
             "q_over_kv": m.num_heads / m.num_kv_heads})


# ---- exercise 11: megakernel ideal -------------------------------------------------------------------------
_EX11 = dict(model="Llama-3.2-1B", gpu="H100", kernels_per_layer=7, extra_kernels=2, overhead_s=4e-6)


def _ex11():
    m = _lc("get_model")(_EX11["model"])
    g = _lc("get_gpu")(_EX11["gpu"])
    w = float(m.weight_bytes() if callable(m.weight_bytes) else m.weight_bytes)
    t = w / g.hbm_bandwidth
    n_k = _EX11["kernels_per_layer"] * m.num_layers + _EX11["extra_kernels"]
    over = n_k * _EX11["overhead_s"]
    return ({"fps": 1 / t, "util_pct": 100 * t / (t + over)},
            {"weights": w, "t": t, "kernels": n_k, "overhead": over, "params": float(m.num_params),
             "per_layer_overhead": _EX11["kernels_per_layer"] * _EX11["overhead_s"]})


# ---- exercise 12: the tail -----------------------------------------------------------------------------------
_EX12 = dict(blocks=(192, 128), gpu="H100")


def _ex12():
    sms = _lc("get_gpu")(_EX12["gpu"]).num_sms
    wu = _lc("wave_utilization")
    a, b = _EX12["blocks"]
    return ({"util192_pct": 100 * float(wu(a, sms)), "util128_pct": 100 * float(wu(b, sms))},
            {"sms": sms, "a": a, "b": b})


_CAUSE_OPTIONS = (
    ("A", "64 splits give 128 CTAs on 108 SMs: a second wave of only 20 CTAs costs a whole per-CTA time",
     ""),
    ("B", "64 splits do more floating-point work than 32",
     "Both split counts visit the same keys, so the FLOPs are the same; and decode attention here is bound by "
     "reading K and V, not by arithmetic."),
    ("C", "merging 64 partial results costs more than the attention itself",
     "The merge reads 64 partial outputs of 16 x 128 numbers, tiny next to the 64K-long K and V; it is not "
     "what separates the two."),
    ("D", "each CTA is capped at 80 GB/s, so more CTAs cannot go faster",
     "With 64 CTAs each gets about 1555/64 = 24 GB/s of HBM bandwidth, well below the 80 GB/s cap; the "
     "cap does not bind here. Count the CTAs against the 108 SMs instead."),
)

EXERCISES: tuple = (
    Exercise(
        1, "ex-online-softmax", "Online softmax by hand",
        "Scores of one row arrive in two blocks, [1, 3] then [2, 5]. Give m and l after each block.",
        (Part("m1", "m after block 1", atol=1e-3), Part("l1", "l after block 1", atol=1e-3),
         Part("m2", "m after block 2", atol=1e-3), Part("l2", "l after block 2", atol=1e-3)),
        _ex1,
        (Mistake("no_rescale", "l2", lambda r, c: r["l1"] + c["block2_sum"],
                 "you added block 2's sum without rescaling the old l: multiply l by alpha = exp(m_old - m_new) "
                 "first"),
         Mistake("dropped_old", "l2", lambda r, c: c["block2_sum"],
                 "that is block 2 alone; l must keep block 1's contribution, rescaled by alpha"),
         Mistake("alpha_inverted", "l2", lambda r, c: r["l1"] / c["alpha"] + c["block2_sum"],
                 "alpha is exp(m_old - m_new) <= 1, not exp(m_new - m_old)"),
         Mistake("no_max", "l1", lambda r, c: c["raw1"],
                 "you summed exp(s) without subtracting the running max m; l is sum exp(s - m)")),
        "a dict {'m1': ..., 'l1': ..., 'm2': ..., 'l2': ...} or a tuple (m1, l1, m2, l2), 3 decimals",
    ),
    Exercise(
        2, "ex-standard-io", "HBM traffic of standard attention",
        "One head, N = 4096, d = 64, FP16: how many MB (10^6 bytes) does Algorithm 0 read and write?",
        (Part("MB", "HBM traffic", "MB", atol=0.06),),
        _ex2,
        (Mistake("elements_not_bytes", "MB", lambda r, c: c["elements"] / MB,
                 "that is the number of elements (in millions); each FP16 element is 2 bytes"),
         Mistake("MiB", "MB", lambda r, c: c["bytes"] / MiB,
                 "that is MiB (2^20 bytes); the question asks for MB = 10^6 bytes"),
         Mistake("quadratic_only", "MB", lambda r, c: c["quadratic_bytes"] / MB,
                 "you kept only the N^2 terms (S and P); add the reads of Q, K, V and the write of O (4Nd)")),
        "one number in MB, e.g. answer = 123.4",
    ),
    Exercise(
        3, "ex-flash-io", "HBM traffic of FlashAttention (Algorithm 1 order)",
        "Same head, SRAM M = 51,200 elements, the paper's block sizes and loop order: traffic in MB, and the "
        "ratio standard / flash.",
        (Part("MB", "HBM traffic", "MB", atol=0.06), Part("ratio", "standard / flash", "x", atol=0.06)),
        _ex3,
        (Mistake("elements_not_bytes", "MB", lambda r, c: c["elements"] / MB,
                 "that is the number of elements (in millions); each FP16 element is 2 bytes"),
         Mistake("MiB", "MB", lambda r, c: c["bytes"] / MiB,
                 "that is MiB (2^20 bytes); the question asks for MB = 10^6 bytes"),
         Mistake("no_init", "MB", lambda r, c: 2 * (c["elements"] - c["init"]) / MB,
                 "Algorithm 1 first writes the initial O, l, m to HBM (Nd + 2N elements); count that too"),
         Mistake("fa2_order", "MB", lambda r, c: 2 * c["fa2_elements"] / MB,
                 "that is the FlashAttention-2 loop order (outer loop over Q blocks); the question asks for "
                 "Algorithm 1's order (outer loop over K/V blocks)"),
         Mistake("ratio_inverted", "ratio", lambda r, c: 1 / r["ratio"],
                 "that is flash / standard; the question asks how many times less flash moves")),
        "a dict {'MB': ..., 'ratio': ...} or a tuple (MB, ratio), one decimal each",
    ),
    Exercise(
        4, "ex-causal-blocks", "Causal block fraction",
        "N = 4096, 128 x 128 blocks, causal mask: what fraction of the blocks must be computed?",
        (Part("fraction", "fraction of blocks", atol=1.5e-3),),
        _ex4,
        (Mistake("half", "fraction", lambda r, c: 0.5,
                 "exactly half ignores the diagonal: the T diagonal blocks are (partly) visible and must be "
                 "computed, adding 1/(2T)"),
         Mistake("strictly_below", "fraction", lambda r, c: (c["T"] - 1) / (2 * c["T"]),
                 "you counted only the blocks strictly below the diagonal; the diagonal blocks are computed too "
                 "(with the mask applied inside)"),
         Mistake("percent", "fraction", lambda r, c: 100 * r["fraction"],
                 "give a fraction between 0 and 1, not a percentage")),
        "one number between 0 and 1, three decimals, e.g. answer = 0.123",
    ),
    Exercise(
        5, "ex-backward-memory", "What the backward pass stores",
        "32 attention matrices, N = 32,768: the size of P in FP16 (GB = 10^9 bytes) that standard attention "
        "keeps for the backward pass, and of FlashAttention's L in FP32 (MB = 10^6 bytes).",
        (Part("P_GB", "P (FP16)", "GB", rtol=2e-3), Part("L_MB", "L (FP32)", "MB", rtol=1e-2)),
        _ex5,
        (Mistake("GiB", "P_GB", lambda r, c: r["P_GB"] * GB / GiB,
                 "that is GiB (2^30 bytes); the question asks for GB = 10^9 bytes"),
         Mistake("elements_not_bytes", "P_GB", lambda r, c: c["P_elems"] / GB,
                 "that is the number of elements (in billions); each FP16 element is 2 bytes"),
         Mistake("P_fp32", "P_GB", lambda r, c: c["P_elems"] * 4 / GB,
                 "P is stored in FP16 (2 bytes per element), not FP32"),
         Mistake("L_fp16", "L_MB", lambda r, c: c["L_elems"] * 2 / MB,
                 "L (the logsumexp) is kept in FP32: 4 bytes per row, not 2"),
         Mistake("L_MiB", "L_MB", lambda r, c: r["L_MB"] * MB / MiB,
                 "that is MiB (2^20 bytes); the question asks for MB = 10^6 bytes"),
         Mistake("L_elements", "L_MB", lambda r, c: c["L_elems"] / MB,
                 "that is the number of elements (in millions); each FP32 value is 4 bytes")),
        "a dict {'P_GB': ..., 'L_MB': ...} or a tuple (P_GB, L_MB)",
    ),
    Exercise(
        6, "ex-d-identity", "The identity behind D",
        "Show that sum_j dP_ij P_ij = dO_i . O_i. Write a function D(O, dO) that returns D_i for every row "
        "(checked against rowsum(dP * P) on random inputs), or give D_i for the small example.",
        (Part("D", "D_i for the example", atol=1e-3),),
        _ex6,
        (Mistake("rowsum_dP", "D", lambda r, c: c["rowsum_dP"],
                 "that is sum_j dP_ij without the weights P_ij; D_i = sum_j dP_ij P_ij"),
         Mistake("prod_of_sums", "D", lambda r, c: c["prod_of_sums"],
                 "that is (sum of dO_i) x (sum of O_i); D_i is the dot product dO_i . O_i")),
        "a function D(O, dO) returning one number per row, or one number for the example",
        data=D_EXAMPLE,
        function_check=_ex6_function,
    ),
    Exercise(
        7, "ex-nonmatmul-cost", "Why non-matmul FLOPs are expensive",
        "A100: 312 TFLOP/s FP16 matmul, 19.5 TFLOP/s FP32 non-matmul. If non-matmul work is 1% of the matmul "
        "FLOPs, its time is what percentage of the matmul time?",
        (Part("pct", "non-matmul time", "% of matmul time", atol=0.5),),
        _ex7,
        (Mistake("no_cost_ratio", "pct", lambda r, c: r["pct"] / c["ratio"],
                 "a non-matmul FLOP is not as cheap as a matmul FLOP: scale by 312 / 19.5"),
         Mistake("ratio_inverted", "pct", lambda r, c: r["pct"] / c["ratio"] ** 2,
                 "you divided by the cost ratio; non-matmul FLOPs are slower, so multiply by 312 / 19.5"),
         Mistake("share_of_total", "pct", lambda r, c: 100 * r["pct"] / (100 + r["pct"]),
                 "that is the share of the total time; the question compares with the matmul time alone"),
         Mistake("fraction", "pct", lambda r, c: r["pct"] / 100, _pct_feedback())),
        "one number in percent, e.g. answer = 12.5",
    ),
    Exercise(
        8, "ex-decode-padding", "Padding at decode",
        "Batch 1, 64K keys, 16 query heads, d = 128: FLOPs of one FlashAttention-2 CTA computing two matmuls "
        "on a 128-row Q tile, and the time at 70% of one A100 SM's tensor throughput.",
        (Part("GFLOP", "FLOPs per CTA", "GFLOP", rtol=1e-2), Part("ms", "time", "ms", rtol=3e-2)),
        _ex8,
        (Mistake("no_padding", "GFLOP", lambda r, c: r["GFLOP"] / c["rows"],
                 "the tensor cores compute the whole 128-row tile, of which 1 row is real: count the padded "
                 "rows too"),
         Mistake("no_factor_2", "GFLOP", lambda r, c: r["GFLOP"] / 2,
                 "a multiply-add is 2 FLOPs: each of the two matmuls is 2 x rows x N x d"),
         Mistake("all_heads", "GFLOP", lambda r, c: r["GFLOP"] * c["heads"],
                 "that is all 16 CTAs together; the question asks for one CTA (one query head)"),
         Mistake("no_efficiency", "ms", lambda r, c: c["flops"] / c["per_sm"] * 1e3,
                 "you used the SM's peak; at 70% efficiency the time is longer"),
         Mistake("whole_gpu", "ms", lambda r, c: c["flops"] / (c["gpu_flops"] * c["eff"]) * 1e3,
                 "one CTA runs on one SM: use one SM's share of the tensor throughput (312/108 TFLOP/s), not "
                 "the whole GPU's"),
         Mistake("no_factor_2_time", "ms", lambda r, c: c["flops"] / 2 / (c["per_sm"] * c["eff"]) * 1e3,
                 "a multiply-add is 2 FLOPs; your time is half of what the tile costs")),
        "a dict {'GFLOP': ..., 'ms': ...} or a tuple (GFLOP, ms)",
    ),
    Exercise(
        9, "ex-num-splits", "Choosing the number of splits",
        "Batch 1, 64K keys, 16 query heads, 2 KV heads, d = 128 on an A100 (108 SMs): the model's time with 32 "
        "and with 64 splits, and why 32 wins.",
        (Part("t32_us", "32 splits", "µs", rtol=5e-2), Part("t64_us", "64 splits", "µs", rtol=5e-2),
         Part("cause", "why", options=_CAUSE_OPTIONS)),
        _ex9,
        (Mistake("one_wave", "t64_us", lambda r, c: c["one_wave_64_us"],
                 "that is the time if all 128 CTAs ran at once; 128 CTAs on 108 SMs take two waves"),
         Mistake("query_heads", "t32_us", lambda r, c: c["qheads_32_us"],
                 "flash-decoding launches one CTA per (sequence, KV head, split): 2 KV heads, not 16 query "
                 "heads (the 8 query heads of a group are packed into one tile)"),
         Mistake("swapped", "t32_us", lambda r, c: r["t64_us"],
                 "that is the 64-split time; the two answers look swapped")),
        "a dict {'t32_us': ..., 't64_us': ..., 'cause': 'A'/'B'/'C'/'D'} (times from "
        "labcore.decode_attention_time, in µs)",
    ),
    Exercise(
        10, "ex-kv-cache", "The decode-attention floor",
        "Llama-3.1-8B, batch 1, 128K context, BF16: KV-cache bytes per layer (MB) and in all (GB), and the "
        "least time to read it once on an H100 (ms).",
        (Part("layer_MB", "per layer", "MB", rtol=1e-2), Part("total_GB", "all layers", "GB", rtol=1e-2),
         Part("ms", "time at full bandwidth", "ms", rtol=2e-2)),
        _ex10,
        (Mistake("K_only", "layer_MB", lambda r, c: r["layer_MB"] / 2,
                 "you counted K but not V: the cache holds both"),
         Mistake("query_heads", "layer_MB", lambda r, c: r["layer_MB"] * c["q_over_kv"],
                 "with GQA the cache holds the 8 KV heads, not the 32 query heads"),
         Mistake("MiB", "layer_MB", lambda r, c: c["per_layer"] / MiB,
                 "that is MiB (2^20 bytes); the question asks for MB = 10^6 bytes"),
         Mistake("K_only_total", "total_GB", lambda r, c: r["total_GB"] / 2,
                 "you counted K but not V: the cache holds both"),
         Mistake("GiB", "total_GB", lambda r, c: c["total"] / GiB,
                 "that is GiB (2^30 bytes); the question asks for GB = 10^9 bytes"),
         Mistake("one_layer_time", "ms", lambda r, c: r["ms"] / c["layers"],
                 "that is one layer's time; one decode step reads the cache of all layers"),
         Mistake("K_only_time", "ms", lambda r, c: r["ms"] / 2,
                 "you counted K but not V: the cache holds both")),
        "a dict {'layer_MB': ..., 'total_GB': ..., 'ms': ...} or a tuple in that order",
    ),
    Exercise(
        11, "ex-megakernel-ideal", "The megakernel's ideal",
        "Llama-3.2-1B in BF16 on an H100: the most forward passes per second at batch 1 (weights read once per "
        "pass), and the bandwidth utilisation if 114 kernels each add 4 µs.",
        (Part("fps", "forwards per second", "1/s", rtol=1e-2),
         Part("util_pct", "bandwidth utilisation", "%", atol=1.0)),
        _ex11,
        (Mistake("params_not_bytes", "fps", lambda r, c: r["fps"] * c["weights"] / c["params"],
                 "you divided by the number of parameters; each BF16 parameter is 2 bytes"),
         Mistake("GiB", "fps", lambda r, c: r["fps"] * GB / GiB,
                 "you read 2.48 GB as GiB; bandwidth and weight sizes here are decimal (10^9 bytes)"),
         Mistake("time_not_rate", "fps", lambda r, c: c["t"] * 1e3,
                 "that is the time per forward in ms; the question asks for forwards per second"),
         Mistake("overhead_share", "util_pct", lambda r, c: 100 - r["util_pct"],
                 "that is the share of time lost to the gaps; utilisation is the weight-reading time over the "
                 "total"),
         Mistake("one_layer_only", "util_pct",
                 lambda r, c: 100 * c["t"] / (c["t"] + c["per_layer_overhead"]),
                 "you counted the 7 kernels of one layer; all 114 kernels (7 x 16 layers + 2) add their 4 µs"),
         Mistake("fraction", "util_pct", lambda r, c: r["util_pct"] / 100, _pct_feedback())),
        "a dict {'fps': ..., 'util_pct': ...} or a tuple (fps, util_pct)",
    ),
    Exercise(
        12, "ex-wave-tail", "The tail",
        "192 equal blocks on an H100's 132 SMs: average SM utilisation (%)? And with 128 larger blocks?",
        (Part("util192_pct", "192 blocks", "%", atol=0.5), Part("util128_pct", "128 blocks", "%", atol=0.5)),
        _ex12,
        (Mistake("fractional_waves", "util192_pct", lambda r, c: 100.0,
                 "waves are whole: 192 blocks on 132 SMs take 2 waves, the second only partly full"),
         Mistake("last_wave_only", "util192_pct", lambda r, c: 100 * (c["a"] - c["sms"]) / c["sms"],
                 "that is the last wave alone; average over both waves"),
         Mistake("blocks_over_sms", "util192_pct", lambda r, c: 100 * c["a"] / c["sms"],
                 "blocks / SMs is more than 100%; divide by (waves x SMs) with whole waves"),
         Mistake("fraction", "util192_pct", lambda r, c: r["util192_pct"] / 100, _pct_feedback()),
         Mistake("idle_share", "util128_pct", lambda r, c: 100 - r["util128_pct"],
                 "that is the idle share; utilisation is the busy share"),
         Mistake("fraction128", "util128_pct", lambda r, c: r["util128_pct"] / 100, _pct_feedback())),
        "a dict {'util192_pct': ..., 'util128_pct': ...} or a tuple, in percent",
    ),
)


def exercise(k) -> Exercise:
    """The definition of exercise ``k`` (1..12); ValueError for anything else."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= int(k) <= len(EXERCISES):
        raise ValueError(f"exercise number must be an integer 1..{len(EXERCISES)}, got {k!r}")
    return EXERCISES[int(k) - 1]


def reference(k) -> dict:
    """Reference answers of exercise ``k`` by part key, computed now with labcore (in the parts' units)."""
    return exercise(k).compute()[0]


# ------------------------------------------------------------------------------------------------- payload
MESSAGES = {
    "correct": "Correct!",
    "part_correct": "{label}: correct.",
    "part_empty": "{label}: not answered yet.",
    "part_malformed": "{label}: please enter a plain number (like 12.5 or 1.2e3), without units or commas.",
    "choice_malformed": "{label}: please pick one of the options ({letters}).",
    "part_mistake": "{label}: {feedback}",
    "part_high": "{label}: not right, your value is too high (tolerance {tol}).",
    "part_low": "{label}: not right, your value is too low (tolerance {tol}).",
    "choice_wrong": "{label}: not quite. {feedback}",
    "not_attempted": "Not attempted yet. Answer format: {hint}.",
    "incomplete": "So far so good; some parts are not answered yet.",
    "wrong": "Not yet. Feedback:",
    "malformed": "I could not read that answer.",
}


def _fmt_tol(t: float, unit: str) -> str:
    s = f"{t:.3g}"
    return f"±{s} {unit}".rstrip() if unit and unit != "x" else f"±{s}"


def _tol(p: Part, v: float) -> float:
    return max(p.atol, p.rtol * abs(v))


def payload(k) -> dict:
    """The JSON-ready grading payload of exercise ``k``: everything both graders need, computed now.

    Keys: ``id``, ``label``, ``title``, ``hint``, ``messages``, and ``parts`` (each: ``key``, ``label``,
    ``unit``, ``kind``; numeric parts: ``ref``, ``tol`` (absolute), ``tol_text``, ``mistakes`` (``id``,
    ``value``, ``tol``, ``feedback``); choice parts: ``answer`` and ``options`` (``letter``, ``text``,
    ``feedback``)).
    Raises:
        ExerciseUnavailable: a labcore function the reference needs is not in this checkout.
    """
    ex = exercise(k)
    ref, ctx = ex.compute()
    parts = []
    for p in ex.parts:
        d = {"key": p.key, "label": p.label, "unit": p.unit, "kind": p.kind}
        if p.kind == "choice":
            d["answer"] = ref[p.key]
            d["options"] = [{"letter": a, "text": t, "feedback": f} for a, t, f in p.options]
        else:
            r = float(ref[p.key])
            d["ref"] = r
            d["tol"] = _tol(p, r)
            d["tol_text"] = _fmt_tol(d["tol"], p.unit)
            d["mistakes"] = []
            for m in ex.mistakes:
                if m.part == p.key:
                    v = float(m.value(ref, ctx))
                    # the same relative precision as the reference's window, scaled to the mistake's size
                    tol = d["tol"] * abs(v) / abs(r) if r != 0 else d["tol"]
                    d["mistakes"].append({"id": m.id, "value": v, "tol": tol, "feedback": m.feedback})
        parts.append(d)
    return {"id": ex.number, "label": ex.label, "title": ex.title, "hint": ex.hint, "messages": MESSAGES,
            "parts": parts, "data": ex.data}


# ----------------------------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class PartVerdict:
    """Verdict on one part: status ``correct|empty|mistake|wrong|malformed``, the mistake id, the line shown."""

    key: str
    status: str
    mistake: str | None
    message: str


@dataclass(frozen=True)
class Verdict:
    """Verdict on one exercise.

    Attributes:
        exercise: the number. status: ``correct``, ``not_attempted``, ``incomplete``, ``wrong``,
        ``malformed`` or ``unavailable``. parts: per-part :class:`PartVerdict`. message: the text shown.
    """

    exercise: int
    status: str
    parts: tuple = ()
    message: str = ""

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def mistakes(self) -> list[str]:
        """Ids of the known mistakes recognised in the answer."""
        return [p.mistake for p in self.parts if p.mistake]

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self):
        # check() has already printed the message; in the static book the check cell shows the form.
        if _static():
            from IPython.display import HTML, display

            display(HTML(static_form(self.exercise)))


def _static() -> bool:
    from .widgets import static_mode

    return static_mode()


def _sub(template: str, **kw) -> str:
    # the same plain "{name}" substitution as the JavaScript grader (no format specs)
    out = template
    for k, v in kw.items():
        out = out.replace("{" + k + "}", str(v))
    return out


def _grade_number(p: dict, x: float) -> PartVerdict:
    M = MESSAGES
    if abs(x - p["ref"]) <= p["tol"]:
        return PartVerdict(p["key"], "correct", None, _sub(M["part_correct"], label=p["label"]))
    for m in p["mistakes"]:
        if abs(x - m["value"]) <= m["tol"]:
            return PartVerdict(p["key"], "mistake", m["id"],
                               _sub(M["part_mistake"], label=p["label"], feedback=m["feedback"]))
    key = "part_high" if x > p["ref"] else "part_low"
    return PartVerdict(p["key"], "wrong", None, _sub(M[key], label=p["label"], tol=p["tol_text"]))


def grade_payload(pl: dict, values: dict) -> Verdict:
    """Grade parsed part values against a payload: the rules :data:`GRADER_JS` implements too.

    Args:
        pl: :func:`payload` output. values: ``{key: float | str | None | _BAD}``; ``None`` = not answered,
            :data:`_BAD` = unreadable.
    """
    M = MESSAGES
    pvs = []
    for p in pl["parts"]:
        v = values.get(p["key"])
        if v is None:
            pvs.append(PartVerdict(p["key"], "empty", None, _sub(M["part_empty"], label=p["label"])))
        elif p["kind"] == "choice":
            letters = [o["letter"] for o in p["options"]]
            if v is _BAD or not isinstance(v, str) or v.strip().upper() not in letters:
                pvs.append(PartVerdict(p["key"], "malformed", None,
                                       _sub(M["choice_malformed"], label=p["label"], letters=", ".join(letters))))
            elif v.strip().upper() == p["answer"]:
                pvs.append(PartVerdict(p["key"], "correct", None, _sub(M["part_correct"], label=p["label"])))
            else:
                o = next(o for o in p["options"] if o["letter"] == v.strip().upper())
                pvs.append(PartVerdict(p["key"], "mistake", "option_" + o["letter"],
                                       _sub(M["choice_wrong"], label=p["label"], feedback=o["feedback"])))
        elif v is _BAD or isinstance(v, str):
            pvs.append(PartVerdict(p["key"], "malformed", None, _sub(M["part_malformed"], label=p["label"])))
        else:
            pvs.append(_grade_number(p, float(v)))
    return _combine(pl, pvs)


def _combine(pl: dict, pvs: list) -> Verdict:
    M = MESSAGES
    st = [p.status for p in pvs]
    if any(s in ("mistake", "wrong") for s in st):
        status, head = "wrong", M["wrong"]
    elif any(s == "malformed" for s in st):
        status, head = "malformed", M["malformed"]
    elif all(s == "empty" for s in st):
        return Verdict(pl["id"], "not_attempted", tuple(pvs), _sub(M["not_attempted"], hint=pl["hint"]))
    elif any(s == "empty" for s in st):
        status, head = "incomplete", M["incomplete"]
    else:
        status, head = "correct", M["correct"]
    lines = [f"Exercise {pl['id']} ({pl['title']}): {head}"] + ["  " + p.message for p in pvs]
    return Verdict(pl["id"], status, tuple(pvs), "\n".join(lines))


class _Bad:
    def __repr__(self):
        return "<unreadable>"


_BAD = _Bad()


def _is_number(x) -> bool:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        return False
    return math.isfinite(float(x))


def _scalar(x):
    """A reader's value for one part -> float, a choice string, None (unanswered) or _BAD."""
    if x is None or x is Ellipsis:
        return None
    if isinstance(x, np.ndarray) and x.shape == ():
        x = x.item()
    if isinstance(x, str):
        return x
    return float(x) if _is_number(x) else _BAD


def _friendly(ex: Exercise, what: str) -> Verdict:
    msg = (f"Exercise {ex.number} ({ex.title}): {MESSAGES['malformed']} {what}\n"
           f"  Answer format: {ex.hint}.")
    return Verdict(ex.number, "malformed", (), msg)


def _describe(x) -> str:
    if isinstance(x, np.ndarray):
        return f"a numpy array of shape {x.shape}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)} items"
    return f"a {type(x).__name__}"


def _parse(ex: Exercise, answer):
    """Map a Python answer onto ``{key: value}`` or return a malformed :class:`Verdict`."""
    keys = ex.keys()
    if answer is None:
        return {k: None for k in keys}
    if isinstance(answer, dict):
        unknown = [k for k in answer if k not in keys]
        if unknown:
            return _friendly(ex, f"Unknown key(s) {unknown}; the keys are {keys}.")
        return {k: _scalar(answer.get(k)) for k in keys}
    if isinstance(answer, np.ndarray) and answer.ndim > 0:
        if len(keys) > 1 and answer.shape == (len(keys),):
            return {k: _scalar(v) for k, v in zip(keys, answer)}
        return _friendly(ex, f"You gave {_describe(answer)}; expected "
                             + ("one number." if len(keys) == 1 else f"{len(keys)} numbers."))
    if isinstance(answer, (list, tuple)):
        if len(keys) > 1 and len(answer) == len(keys):
            return {k: _scalar(v) for k, v in zip(keys, answer)}
        return _friendly(ex, f"You gave {_describe(answer)}; expected "
                             + ("one number, not a list." if len(keys) == 1
                                else f"{len(keys)} values in the order {keys}, or a dict."))
    if len(keys) > 1:
        return _friendly(ex, f"You gave {_describe(answer)}; this exercise has {len(keys)} parts {keys}.")
    v = _scalar(answer)
    if isinstance(v, str) and ex.parts[0].kind == "number":
        return _friendly(ex, f"You gave the string {answer!r}; write the number itself, without quotes.")
    return {keys[0]: v}


def check(k, answer=None, *, quiet: bool = False) -> Verdict:
    """Grade ``answer`` to exercise ``k`` and print the verdict (unless ``quiet``); never raises.

    Args:
        k: exercise number 1..12.
        answer: see the module docstring for the formats; ``None`` (the stub) means not attempted.
    Returns:
        :class:`Verdict`. In the static book (``FLASHBOOK_STATIC=1``) nothing is printed for the stub and
        the returned verdict displays the self-grading HTML form instead.
    """
    try:
        ex = exercise(k)
    except ValueError as exc:
        v = Verdict(0, "malformed", (), f"check(k, answer): {exc}")
        return _emit(v, quiet)
    try:
        if ex.function_check is not None and callable(answer):
            pvs = ex.function_check(answer)
            return _emit(_combine({"id": ex.number, "title": ex.title, "hint": ex.hint}, pvs), quiet)
        if callable(answer):
            return _emit(_friendly(ex, "You gave a function; this exercise wants numbers."), quiet)
        parsed = _parse(ex, answer)
        if isinstance(parsed, Verdict):
            return _emit(parsed, quiet)
        if all(v is None for v in parsed.values()):
            v = Verdict(ex.number, "not_attempted", (), _sub(MESSAGES["not_attempted"], hint=ex.hint))
            return _emit(v, quiet or _static())
        return _emit(grade_payload(payload(k), parsed), quiet)
    except ExerciseUnavailable as exc:
        return _emit(Verdict(ex.number, "unavailable", (),
                             f"Exercise {ex.number}: cannot grade yet ({exc})."), quiet)


def _emit(v: Verdict, quiet: bool) -> Verdict:
    if not quiet:
        print(v.message)
    return v


# --------------------------------------------------------------------------------------- static HTML form
#: The JavaScript grader: the same rules as :func:`grade_payload`, reading the same payload.
GRADER_JS = r"""
function fbSub(t, kw) { for (var k in kw) { t = t.split('{' + k + '}').join(String(kw[k])); } return t; }
function fbParse(s) {
  if (s === null || s === undefined) { return null; }
  s = String(s).trim();
  if (s === '') { return null; }
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) { return {bad: true}; }
  var x = Number(s);
  return isFinite(x) ? x : {bad: true};
}
function fbGrade(pl, inputs) {
  var M = pl.messages, pvs = [];
  pl.parts.forEach(function (p) {
    var raw = inputs[p.key];
    var pv = {key: p.key, status: null, mistake: null, message: null};
    if (p.kind === 'choice') {
      var letters = p.options.map(function (o) { return o.letter; });
      var s = (raw === null || raw === undefined) ? '' : String(raw).trim().toUpperCase();
      if (s === '') { pv.status = 'empty'; pv.message = fbSub(M.part_empty, {label: p.label}); }
      else if (letters.indexOf(s) < 0) { pv.status = 'malformed';
        pv.message = fbSub(M.choice_malformed, {label: p.label, letters: letters.join(', ')}); }
      else if (s === p.answer) { pv.status = 'correct'; pv.message = fbSub(M.part_correct, {label: p.label}); }
      else { var o = p.options[letters.indexOf(s)]; pv.status = 'mistake'; pv.mistake = 'option_' + o.letter;
        pv.message = fbSub(M.choice_wrong, {label: p.label, feedback: o.feedback}); }
    } else {
      var x = fbParse(raw);
      if (x === null) { pv.status = 'empty'; pv.message = fbSub(M.part_empty, {label: p.label}); }
      else if (typeof x === 'object') { pv.status = 'malformed'; pv.message = fbSub(M.part_malformed, {label: p.label}); }
      else if (Math.abs(x - p.ref) <= p.tol) { pv.status = 'correct'; pv.message = fbSub(M.part_correct, {label: p.label}); }
      else {
        for (var i = 0; i < p.mistakes.length; i++) {
          var m = p.mistakes[i];
          if (Math.abs(x - m.value) <= m.tol) { pv.status = 'mistake'; pv.mistake = m.id;
            pv.message = fbSub(M.part_mistake, {label: p.label, feedback: m.feedback}); break; }
        }
        if (pv.status === null) { pv.status = 'wrong';
          pv.message = fbSub(x > p.ref ? M.part_high : M.part_low, {label: p.label, tol: p.tol_text}); }
      }
    }
    pvs.push(pv);
  });
  var st = pvs.map(function (p) { return p.status; });
  function any(f) { return st.some(f); }
  var status, head;
  if (any(function (s) { return s === 'mistake' || s === 'wrong'; })) { status = 'wrong'; head = M.wrong; }
  else if (any(function (s) { return s === 'malformed'; })) { status = 'malformed'; head = M.malformed; }
  else if (st.every(function (s) { return s === 'empty'; })) {
    return {exercise: pl.id, status: 'not_attempted', parts: pvs, message: fbSub(M.not_attempted, {hint: pl.hint})}; }
  else if (any(function (s) { return s === 'empty'; })) { status = 'incomplete'; head = M.incomplete; }
  else { status = 'correct'; head = M.correct; }
  var lines = ['Exercise ' + pl.id + ' (' + pl.title + '): ' + head];
  pvs.forEach(function (p) { lines.push('  ' + p.message); });
  return {exercise: pl.id, status: status, parts: pvs, message: lines.join('\n')};
}
"""

_FORM_JS = r"""
(function () {
  var root = document.getElementById(%(id)s);
  if (!root) { return; }
  var pl = JSON.parse(root.querySelector('script.fb-ex-payload').textContent);
  var out = root.querySelector('.fb-verdict');
  root.querySelector('button.fb-check').addEventListener('click', function (ev) {
    ev.preventDefault();
    var inputs = {};
    pl.parts.forEach(function (p) {
      if (p.kind === 'choice') {
        var c = root.querySelector('input[name="' + root.id + '-' + p.key + '"]:checked');
        inputs[p.key] = c ? c.value : '';
      } else { inputs[p.key] = root.querySelector('input[data-part="' + p.key + '"]').value; }
    });
    var v = fbGrade(pl, inputs);
    out.textContent = v.message;
    out.setAttribute('data-status', v.status);
  });
})();
"""


def static_form(k) -> str:
    """Self-contained HTML form that self-grades exercise ``k`` in the static book (no kernel)."""
    ex = exercise(k)
    try:
        pl = payload(k)
    except ExerciseUnavailable as exc:
        return f'<div class="fb-exercise-form"><p>Self-check unavailable in this build: {html.escape(str(exc))}</p></div>'
    uid = f"fb-ex{ex.number}-{uuid.uuid4().hex[:6]}"
    rows = []
    if ex.number == 6:
        d = pl["data"]
        rows.append(f"<p><small>Example: P_i = {d['P_i']}, V = {d['V']}, dO_i = {d['dO_i']}.</small></p>")
    for p in pl["parts"]:
        lab = html.escape(p["label"])
        if p["kind"] == "choice":
            opts = "".join(
                f'<label style="display:block"><input type="radio" name="{uid}-{p["key"]}" '
                f'value="{o["letter"]}"> {o["letter"]}. {html.escape(o["text"])}</label>' for o in p["options"])
            rows.append(f'<fieldset><legend>{lab}</legend>{opts}</fieldset>')
        else:
            rows.append(f'<label style="display:block">{lab}: <input type="text" inputmode="decimal" size="12" '
                        f'data-part="{p["key"]}" aria-label="{lab}"> {html.escape(p["unit"])}</label>')
    data = json.dumps(pl).replace("</", "<\\/")
    return (f'<form class="fb-exercise-form" id="{uid}" data-exercise="{ex.number}" onsubmit="return false">'
            f'<p><strong>Check your answer</strong> (graded in your browser, same rules as '
            f'<code>labcore.exercises.check({ex.number}, answer)</code>)</p>'
            f'{"".join(rows)}<button type="button" class="fb-check">Check</button>'
            f'<pre class="fb-verdict" aria-live="polite" style="white-space:pre-wrap"></pre>'
            f'<script type="application/json" class="fb-ex-payload">{data}</script>'
            f'<script>{GRADER_JS}{_FORM_JS % {"id": json.dumps(uid)}}</script></form>')
