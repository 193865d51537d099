"""The exercises of lecture §12 (and one on §4b): one definition each, read by both graders and by the book.

Each exercise is written in one place, top to bottom: its fixed inputs, the function that computes the
reference answer *at run time* from ``labcore`` (never a typed literal), and its :class:`Exercise` record
(number, sphinx-exercise label, title, statement, answer parts with units and tolerances, known mistakes
with the feedback aimed at each, the answer-format hint). :data:`EXERCISES` holds the records in
order; :func:`exercise` looks one up by number.

The ``title`` is the one source of each exercise's title: the ``{exercise}`` directive of
``book/12_exercises.ipynb`` types the same text (a test compares them), and the graders' messages use
:attr:`Exercise.plain_title` (the title with its ``$...$`` math delimiters removed).

A known mistake's value is a function of the reference answers and the reference's intermediate
quantities (elements vs bytes, MB vs MiB, the factor 2 of a multiply-add, ...), so a changed preset
moves the reference and its mistakes together. The texts do the same: a statement, a mistake's feedback
and a choice option may hold ``{name}`` placeholders that :func:`fill` replaces with the entries of the
exercise's computed ``ctx`` (a preset value or a result, formatted by :mod:`labcore.units`), so no text
types a number that a preset or the reference computes.

Sources: lecture §12 (exercises and answers); the numbers come from the labcore modules of each section.
At import time this module imports numpy, the standard library and two leaf modules of labcore
(``checks``, ``units``); the labcore functions a reference needs are looked up when it is computed
(:class:`ExerciseUnavailable` if one is missing).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from labcore.checks import cdiv
from labcore.units import GB, MB, GiB, MiB, fmt_bytes, fmt_flop_rate, fmt_rate, fmt_seconds

__all__ = ["Part", "Mistake", "Exercise", "ExerciseUnavailable", "EXERCISES", "exercise", "reference",
           "D_EXAMPLE", "fill"]


class ExerciseUnavailable(RuntimeError):
    """The labcore function an exercise's reference needs is not in this checkout."""


def fill(text: str, ctx: dict) -> str:
    """``text`` with its ``{name}`` placeholders replaced by ``ctx[name]`` (the rules of ``str.format_map``).

    Args:
        text: a statement, feedback or option text of an exercise; ``{name}`` or ``{name:spec}`` names an
            entry of ``ctx`` (a text already formatted by a ``labcore.units`` helper, or a count).
        ctx: the intermediate quantities the exercise's ``compute`` returned.
    Raises:
        KeyError: a placeholder names no entry of ``ctx``.
    Source: this book's presentation layer.
    """
    return text.format_map(ctx)


def _lc(name: str):
    """``labcore.<name>``, or :class:`ExerciseUnavailable` naming what is missing."""
    import labcore

    try:
        return getattr(labcore, name)
    except AttributeError:
        raise ExerciseUnavailable(f"labcore.{name} is not available in this checkout") from None


# ---------------------------------------------------------------------------------------------- records
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
        """``"choice"`` for a multiple-choice part, ``"number"`` otherwise."""
        return "choice" if self.options else "number"


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer to one part.

    Args:
        id: stable identifier (``"elements_not_bytes"``).
        part: key of the part it applies to.
        value: ``f(ref, ctx) -> float``: the value this mistake produces, from the reference answers
            ``ref`` (dict by part key) and the reference's intermediate quantities ``ctx``.
        feedback: what to tell a reader who made it (never the answer itself); ``{name}`` placeholders
            are filled from ``ctx`` by :func:`fill`.
    """

    id: str
    part: str
    value: Callable[[dict, dict], float]
    feedback: str


@dataclass(frozen=True)
class Exercise:
    """One exercise of lecture §12 (exercise 13: §4b).

    Args:
        number: 1..len(EXERCISES). label: stable sphinx-exercise label (``"ex-online-softmax"``).
        title: the title exactly as the book's ``{exercise}`` directive shows it (MyST; may hold ``$...$``
            math); the graders' messages use :attr:`plain_title`.
        statement: the question in one or two sentences (the notebook states it in full); like the
            feedback and the options' texts, it may hold ``{name}`` placeholders (:func:`fill`).
        parts: the answer fields (:class:`Part`).
        compute: ``() -> (ref, ctx)``: reference answers by part key (in the parts' units) and
            intermediate quantities, computed with labcore at run time.
        mistakes: known mistakes (:class:`Mistake`), at least two per numeric exercise.
        hint: the answer format, shown by "not attempted" and malformed-input messages.
        data: fixed inputs the statement shows (e.g. the small example of exercise 6).
        function_check: optional ``fn -> (status, mistake_id, message)`` grading a reader's function for
            the exercise's single part (exercise 6); status is ``correct``, ``wrong`` or ``malformed``.
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

    @property
    def plain_title(self) -> str:
        """The title as plain text (``$D$`` -> ``D``), for the graders' messages."""
        return self.title.replace("$", "")

    def keys(self) -> list[str]:
        """The part keys in order (the order of a tuple answer)."""
        return [p.key for p in self.parts]

    def part(self, key: str) -> Part:
        """The :class:`Part` with this key; KeyError if there is none."""
        for p in self.parts:
            if p.key == key:
                return p
        raise KeyError(key)


_DEFINED: list[Exercise] = []


def _define(**fields) -> None:
    """Add the next exercise (its number must follow the previous one's)."""
    ex = Exercise(**fields)
    if ex.number != len(_DEFINED) + 1:
        raise ValueError(f"exercise {ex.number} defined out of order")
    _DEFINED.append(ex)


# Feedback shared by several exercises' mistakes.
_PCT = "That looks like a fraction; the question asks for a percentage (multiply by 100)."
_BINARY = {"MiB": (MiB, "that is MiB (2^20 bytes); the question asks for MB = 10^6 bytes"),
           "GiB": (GiB, "that is GiB (2^30 bytes); the question asks for GB = 10^9 bytes")}
_FP16_ELEMENTS = "that is the number of elements (in millions); each FP16 element is 2 bytes"
_K_ONLY = "you counted K but not V: the cache holds both"


def _binary_unit(unit: str, part: str, n_bytes: Callable[[dict, dict], float], id: str | None = None) -> Mistake:
    """The mistake of answering in ``unit`` (MiB or GiB) where the question asks for MB or GB.

    ``n_bytes(ref, ctx)`` is the right number of bytes; the mistake's value is it over 2^20 or 2^30.
    """
    size, feedback = _BINARY[unit]
    return Mistake(id or unit, part, lambda r, c: n_bytes(r, c) / size, feedback)


# ---- exercise 1: online softmax by hand ---------------------------------------------------------------------
_EX1_BLOCKS = ([1.0, 3.0], [2.0, 5.0])


def _answer1():
    st = _lc("OnlineSoftmax")(1)
    for blk in _EX1_BLOCKS:
        s = np.asarray(blk, dtype=float)
        st.update(s, np.ones((s.size, 1)))
    ms = [t["m"] for t in st.trace]
    ls = [t["l"] for t in st.trace]
    s1, s2 = (np.asarray(b) for b in _EX1_BLOCKS)
    ctx = {"block2_sum": float(np.exp(s2 - ms[1]).sum()), "raw1": float(np.exp(s1).sum()),
           "alpha": math.exp(ms[0] - ms[1])}
    return {"m1": ms[0], "l1": ls[0], "m2": ms[1], "l2": ls[1]}, ctx


_define(number=1, label="ex-online-softmax", title="Online softmax by hand", compute=_answer1,
        statement="Scores of one row arrive in two blocks, [1, 3] then [2, 5]. Give m and l after each block.",
        parts=(Part("m1", "m after block 1", atol=1e-3), Part("l1", "l after block 1", atol=1e-3),
               Part("m2", "m after block 2", atol=1e-3), Part("l2", "l after block 2", atol=1e-3)),
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
_EX2 = dict(N=4096, d=64)


def _answer2():
    elems = _lc("standard_attention_io")(_EX2["N"], _EX2["d"])
    b = 2 * elems
    return {"MB": b / MB}, {"elements": elems, "bytes": b, "quadratic_bytes": 2 * 4 * _EX2["N"] ** 2}


_define(number=2, label="ex-standard-io", title="HBM traffic of standard attention", compute=_answer2,
        statement="One head, N = 4096, d = 64, FP16: how many MB (10^6 bytes) does Algorithm 0 read and write?",
        parts=(Part("MB", "HBM traffic", "MB", atol=0.06),),
        mistakes=(
            Mistake("elements_not_bytes", "MB", lambda r, c: c["elements"] / MB, _FP16_ELEMENTS),
            _binary_unit("MiB", "MB", lambda r, c: c["bytes"]),
            Mistake("quadratic_only", "MB", lambda r, c: c["quadratic_bytes"] / MB,
                    "you kept only the N^2 terms (S and P); add the reads of Q, K, V and the write of O (4Nd)")),
        hint="one number in MB, e.g. answer = 123.4")


# ---- exercise 3: HBM traffic of FlashAttention (Algorithm 1's loop order) -----------------------------------
_EX3 = dict(N=4096, d=64, M=51_200)


def _answer3():
    N, d, M = _EX3["N"], _EX3["d"], _EX3["M"]
    B_r, B_c = _lc("paper_block_sizes")(M, d)
    io = _lc("flash_forward_io")
    elems = io(N, d, block_q=B_r, block_kv=B_c, loop_order="fa1")
    std = _lc("standard_attention_io")(N, d)
    ctx = {"B_r": B_r, "B_c": B_c, "T_c": cdiv(N, B_c), "elements": elems, "bytes": 2 * elems,
           "init": N * d + 2 * N, "fa2_elements": io(N, d, block_q=B_r, block_kv=B_c, loop_order="fa2"), "standard": std}
    return {"MB": 2 * elems / MB, "ratio": std / elems}, ctx


_define(number=3, label="ex-flash-io", title="HBM traffic of FlashAttention", compute=_answer3,
        statement="Same head, SRAM M = 51,200 elements, the paper's block sizes and Algorithm 1's loop order: "
                  "traffic in MB, and the ratio standard / flash.",
        parts=(Part("MB", "HBM traffic", "MB", atol=0.06), Part("ratio", "standard / flash", "x", atol=0.06)),
        mistakes=(
            Mistake("elements_not_bytes", "MB", lambda r, c: c["elements"] / MB, _FP16_ELEMENTS),
            _binary_unit("MiB", "MB", lambda r, c: c["bytes"]),
            Mistake("no_init", "MB", lambda r, c: 2 * (c["elements"] - c["init"]) / MB,
                    "Algorithm 1 first writes the initial O, l, m to HBM (Nd + 2N elements); count that too"),
            Mistake("fa2_order", "MB", lambda r, c: 2 * c["fa2_elements"] / MB,
                    "that is the FlashAttention-2 loop order (outer loop over Q blocks); the question asks for "
                    "Algorithm 1's order (outer loop over K/V blocks)"),
            Mistake("ratio_inverted", "ratio", lambda r, c: 1 / r["ratio"],
                    "that is flash / standard; the question asks how many times less flash moves")),
        hint="a dict {'MB': ..., 'ratio': ...} or a tuple (MB, ratio), one decimal each")


# ---- exercise 4: causal blocks ------------------------------------------------------------------------------
_EX4 = dict(N=4096, block=128)


def _answer4():
    f = _lc("causal_block_fraction")(_EX4["N"], block_q=_EX4["block"])
    T = cdiv(_EX4["N"], _EX4["block"])
    return {"fraction": float(f)}, {"T": T}


_define(number=4, label="ex-causal-blocks", title="Causal blocks", compute=_answer4,
        statement="N = 4096, 128 x 128 blocks, causal mask: what fraction of the blocks must be computed?",
        parts=(Part("fraction", "fraction of blocks", atol=1.5e-3),),
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
_EX5 = dict(matrices=32, N=32_768, P_bytes=2, L_bytes=4)


def _answer5():
    n, N = _EX5["matrices"], _EX5["N"]
    saved = _lc("saved_for_backward_bytes")
    P_b = saved(N, algorithm="standard", num_matrices=n, p_bytes=_EX5["P_bytes"])
    L_b = saved(N, algorithm="flash", num_matrices=n, lse_bytes=_EX5["L_bytes"])
    return ({"P_GB": P_b / GB, "L_MB": L_b / MB},
            {"P_elems": P_b / _EX5["P_bytes"], "L_elems": L_b / _EX5["L_bytes"]})


_define(number=5, label="ex-backward-memory", title="What the backward pass keeps", compute=_answer5,
        statement="32 attention matrices, N = 32,768: the size of P in FP16 (GB = 10^9 bytes) that standard "
                  "attention keeps for the backward pass, and of FlashAttention's L in FP32 (MB = 10^6 bytes).",
        parts=(Part("P_GB", "P (FP16)", "GB", rtol=2e-3), Part("L_MB", "L (FP32)", "MB", rtol=1e-2)),
        mistakes=(
            _binary_unit("GiB", "P_GB", lambda r, c: r["P_GB"] * GB),
            Mistake("elements_not_bytes", "P_GB", lambda r, c: c["P_elems"] / GB,
                    "that is the number of elements (in billions); each FP16 element is 2 bytes"),
            Mistake("P_fp32", "P_GB", lambda r, c: c["P_elems"] * 4 / GB,
                    "P is stored in FP16 (2 bytes per element), not FP32"),
            Mistake("L_fp16", "L_MB", lambda r, c: c["L_elems"] * 2 / MB,
                    "L (the logsumexp) is kept in FP32: 4 bytes per row, not 2"),
            _binary_unit("MiB", "L_MB", lambda r, c: r["L_MB"] * MB, id="L_MiB"),
            Mistake("L_elements", "L_MB", lambda r, c: c["L_elems"] / MB,
                    "that is the number of elements (in millions); each FP32 value is 4 bytes")),
        hint="a dict {'P_GB': ..., 'L_MB': ...} or a tuple (P_GB, L_MB)")


# ---- exercise 6: the D identity -----------------------------------------------------------------------------
#: The small numeric example of exercise 6 (shown in the statement and the static form).
D_EXAMPLE = {"P_i": [0.5, 0.3, 0.2], "V": [[1.0, 2.0], [3.0, -1.0], [0.0, 4.0]], "dO_i": [2.0, 1.0]}


def _answer6():
    P = np.asarray(D_EXAMPLE["P_i"])
    V = np.asarray(D_EXAMPLE["V"])
    dO = np.asarray(D_EXAMPLE["dO_i"])
    dP = V @ dO                      # dP_ij = dO_i . v_j  (dP = dO V^T)
    O = P @ V
    return {"D": float(np.sum(dP * P))}, {"rowsum_dP": float(dP.sum()), "O": O,
                                         "prod_of_sums": float(dO.sum() * O.sum())}


def _check_D_function(fn) -> tuple:
    """Grade a reader's ``D(O, dO)`` against ``rowsum(dP * P)`` on random attention problems.

    Returns ``(status, mistake_id, message)``; never raises (the reader's exceptions are reported).
    """
    from labcore.attention import masked_scores, row_softmax

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


_define(number=6, label="ex-d-identity", title="The identity behind $D$", compute=_answer6,
        statement="Show that sum_j dP_ij P_ij = dO_i . O_i. Write a function D(O, dO) that returns D_i for every "
                  "row (checked against rowsum(dP * P) on random inputs), or give D_i for the small example.",
        parts=(Part("D", "D_i for the example", atol=1e-3),),
        mistakes=(
            Mistake("rowsum_dP", "D", lambda r, c: c["rowsum_dP"],
                    "that is sum_j dP_ij without the weights P_ij; D_i = sum_j dP_ij P_ij"),
            Mistake("prod_of_sums", "D", lambda r, c: c["prod_of_sums"],
                    "that is (sum of dO_i) x (sum of O_i); D_i is the dot product dO_i . O_i")),
        hint="a function D(O, dO) returning one number per row, or one number for the example",
        data=D_EXAMPLE,
        function_check=_check_D_function)


# ---- exercise 7: non-matmul cost ----------------------------------------------------------------------------
_EX7 = dict(gpu="A100", nonmatmul_share_pct=1.0)


def _answer7():
    g = _lc("get_gpu")(_EX7["gpu"])
    r = g.nonmatmul_cost_ratio
    return {"pct": _EX7["nonmatmul_share_pct"] * r}, {
        "ratio": r, "matmul_rate": fmt_flop_rate(g.tensor_flops, digits=0),
        "nonmatmul_rate": fmt_flop_rate(g.fp32_flops, digits=1), "share_pct": _EX7["nonmatmul_share_pct"]}


_define(number=7, label="ex-nonmatmul-cost", title="Why non-matmul FLOPs are expensive", compute=_answer7,
        statement="A100: {matmul_rate} FP16 matmul, {nonmatmul_rate} FP32 non-matmul. If non-matmul work is "
                  "{share_pct:g}% of the matmul FLOPs, its time is what percentage of the matmul time?",
        parts=(Part("pct", "non-matmul time", "% of matmul time", atol=0.5),),
        mistakes=(
            Mistake("no_cost_ratio", "pct", lambda r, c: r["pct"] / c["ratio"],
                    "a non-matmul FLOP is not as cheap as a matmul FLOP: scale by {matmul_rate} / {nonmatmul_rate}"),
            Mistake("ratio_inverted", "pct", lambda r, c: r["pct"] / c["ratio"] ** 2,
                    "you divided by the cost ratio; non-matmul FLOPs are slower, so multiply by {matmul_rate} / "
                    "{nonmatmul_rate}"),
            Mistake("share_of_total", "pct", lambda r, c: 100 * r["pct"] / (100 + r["pct"]),
                    "that is the share of the total time; the question compares with the matmul time alone"),
            Mistake("fraction", "pct", lambda r, c: r["pct"] / 100, _PCT)),
        hint="one number in percent, e.g. answer = 12.5")


# ---- exercise 8: padding at decode --------------------------------------------------------------------------
_EX8 = dict(gpu="A100", batch=1, seqlen=65_536, num_q_heads=16, num_kv_heads=2, head_dim=128, tile_rows=128)


def _answer8():
    g = _lc("get_gpu")(_EX8["gpu"])
    est = _lc("decode_attention_time")(g, batch=_EX8["batch"], seqlen=_EX8["seqlen"],
                                       num_q_heads=_EX8["num_q_heads"], num_kv_heads=_EX8["num_kv_heads"],
                                       head_dim=_EX8["head_dim"], method="fa2")
    flops = float(est.flops_per_cta)     # 2 matmuls x 2 FLOP per multiply-add x padded rows x N x d
    eff = float(est.flops_per_sm / g.tensor_flops_per_sm)   # the model's efficiency assumption
    return ({"GFLOP": flops / 1e9, "ms": est.total * 1e3},
            {"flops": flops, "rows": est.rows_padded, "per_sm": g.tensor_flops_per_sm, "eff": eff,
             "heads": _EX8["num_q_heads"], "gpu_flops": g.tensor_flops, "est": est,
             "rows_real": est.rows_real, "eff_pct": 100 * eff, "num_sms": g.num_sms,
             "gpu_rate": fmt_flop_rate(g.tensor_flops, digits=0),
             "sm_rate": fmt_flop_rate(g.tensor_flops_per_sm, unit="TFLOP", digits=2)})


_define(number=8, label="ex-decode-padding", title="Padding at decode", compute=_answer8,
        statement="Batch 1, 64K keys, 16 query heads, d = 128: FLOPs of one FlashAttention-2 CTA computing two "
                  "matmuls on a {rows}-row Q tile, and the time at {eff_pct:.0f}% of one A100 SM's tensor "
                  "throughput.",
        parts=(Part("GFLOP", "FLOPs per CTA", "GFLOP", rtol=1e-2), Part("ms", "time", "ms", rtol=3e-2)),
        mistakes=(
            Mistake("no_padding", "GFLOP", lambda r, c: r["GFLOP"] / c["rows"],
                    "the tensor cores compute the whole {rows}-row tile, of which {rows_real} row is real: count the "
                    "padded rows too"),
            Mistake("no_factor_2", "GFLOP", lambda r, c: r["GFLOP"] / 2,
                    "a multiply-add is 2 FLOPs: each of the two matmuls is 2 x rows x N x d"),
            Mistake("all_heads", "GFLOP", lambda r, c: r["GFLOP"] * c["heads"],
                    "that is all {heads} CTAs together; the question asks for one CTA (one query head)"),
            Mistake("no_efficiency", "ms", lambda r, c: c["flops"] / c["per_sm"] * 1e3,
                    "you used the SM's peak; at {eff_pct:.0f}% efficiency the time is longer"),
            Mistake("whole_gpu", "ms", lambda r, c: c["flops"] / (c["gpu_flops"] * c["eff"]) * 1e3,
                    "one CTA runs on one SM: use one SM's share of the tensor throughput ({gpu_rate} / "
                    "{num_sms} SMs = {sm_rate}), not the whole GPU's"),
            Mistake("no_factor_2_time", "ms", lambda r, c: c["flops"] / 2 / (c["per_sm"] * c["eff"]) * 1e3,
                    "a multiply-add is 2 FLOPs; your time is half of what the tile costs")),
        hint="a dict {'GFLOP': ..., 'ms': ...} or a tuple (GFLOP, ms)")


# ---- exercise 9: choosing the number of splits --------------------------------------------------------------
_EX9 = dict(gpu="A100", batch=1, seqlen=65_536, num_q_heads=16, num_kv_heads=2, head_dim=128, splits=(32, 64))


def _answer9():
    g = _lc("get_gpu")(_EX9["gpu"])
    f = _lc("decode_attention_time")
    kw = dict(batch=_EX9["batch"], seqlen=_EX9["seqlen"], num_q_heads=_EX9["num_q_heads"],
              head_dim=_EX9["head_dim"], method="flash_decoding")
    a, b = (f(g, num_kv_heads=_EX9["num_kv_heads"], num_splits=s, **kw) for s in _EX9["splits"])
    # the mistake "query heads instead of KV heads": one CTA per query head and split
    qa = f(g, num_kv_heads=_EX9["num_q_heads"], num_splits=_EX9["splits"][0], **kw)
    return ({"t32_us": a.total * 1e6, "t64_us": b.total * 1e6, "cause": "A"},
            {"est32": a, "est64": b, "one_wave_64_us": (b.total - (b.waves - 1) * b.cta_time) * 1e6,
             "qheads_32_us": qa.total * 1e6, "num_sms": g.num_sms, "splits_b": b.num_splits,
             "ctas_a": a.num_ctas, "ctas_b": b.num_ctas, "waves_b": b.waves, "last_wave_b": b.running_last,
             "kv_heads": _EX9["num_kv_heads"], "q_heads": _EX9["num_q_heads"],
             "group": _EX9["num_q_heads"] // _EX9["num_kv_heads"],
             "bandwidth": fmt_rate(g.hbm_bandwidth, unit="GB", digits=0),
             "share_a": fmt_rate(a.bandwidth_per_sm, unit="GB", digits=0),
             "cap": fmt_rate(_lc("MODEL_DEFAULTS")["per_sm_bandwidth_cap"], unit="GB", digits=0)})


_CAUSE_OPTIONS = (
    ("A", "{splits_b} splits give {ctas_b} CTAs on {num_sms} SMs: a second wave of only {last_wave_b} CTAs "
     "costs a whole per-CTA time", ""),
    ("B", "64 splits do more floating-point work than 32",
     "Both split counts visit the same keys, so the FLOPs are the same; and decode attention here is bound by "
     "reading K and V, not by arithmetic."),
    ("C", "merging 64 partial results costs more than the attention itself",
     "The merge reads 64 partial outputs of 16 x 128 numbers, tiny next to the 64K-long K and V; it is not "
     "what separates the two."),
    ("D", "each CTA is capped at {cap}, so more CTAs cannot go faster",
     "With {ctas_a} CTAs each gets about {bandwidth} / {ctas_a} = {share_a} of HBM bandwidth, well below the "
     "{cap} cap; the cap does not bind here. Count the CTAs against the {num_sms} SMs instead."),
)

_define(number=9, label="ex-num-splits", title="Choosing the number of splits", compute=_answer9,
        statement="Batch 1, 64K keys, 16 query heads, 2 KV heads, d = 128 on an A100 ({num_sms} SMs): the model's time "
                  "with 32 and with 64 splits, and why 32 wins.",
        parts=(Part("t32_us", "32 splits", "µs", rtol=5e-2), Part("t64_us", "64 splits", "µs", rtol=5e-2),
               Part("cause", "why", options=_CAUSE_OPTIONS)),
        mistakes=(
            Mistake("one_wave", "t64_us", lambda r, c: c["one_wave_64_us"],
                    "that is the time if all {ctas_b} CTAs ran at once; {ctas_b} CTAs on {num_sms} SMs take "
                    "{waves_b} waves"),
            Mistake("query_heads", "t32_us", lambda r, c: c["qheads_32_us"],
                    "flash-decoding launches one CTA per (sequence, KV head, split): {kv_heads} KV heads, not "
                    "{q_heads} query heads (the {group} query heads of a group are packed into one tile)"),
            Mistake("swapped", "t32_us", lambda r, c: r["t64_us"],
                    "that is the 64-split time; the two answers look swapped")),
        hint="a dict {'t32_us': ..., 't64_us': ..., 'cause': 'A'/'B'/'C'/'D'} (times from "
             "labcore.decode_attention_time, in µs)")


# ---- exercise 10: the floor of decode attention (reading the KV cache once) --------------------------------
_EX10 = dict(model="Llama-3.1-8B", gpu="H100", seqlen=131_072, batch=1, dtype_bytes=2)


def _answer10():
    m = _lc("get_model")(_EX10["model"])
    g = _lc("get_gpu")(_EX10["gpu"])
    kv = _lc("kv_cache_bytes")
    shape = dict(seqlen=_EX10["seqlen"], batch=_EX10["batch"], num_kv_heads=m.num_kv_heads,
                 head_dim=m.head_dim, dtype_bytes=_EX10["dtype_bytes"])
    per_layer = float(kv(**shape))
    total = float(kv(**shape, num_layers=m.num_layers))
    return ({"layer_MB": per_layer / MB, "total_GB": total / GB, "ms": total / g.hbm_bandwidth * 1e3},
            {"per_layer": per_layer, "total": total, "bw": g.hbm_bandwidth, "layers": total / per_layer,
             "q_over_kv": m.num_heads / m.num_kv_heads, "kv_heads": m.num_kv_heads, "q_heads": m.num_heads})


_define(number=10, label="ex-kv-cache", title="The floor of decode attention", compute=_answer10,
        statement="Llama-3.1-8B, batch 1, 128K context, BF16: KV-cache bytes per layer (MB) and in all (GB), and "
                  "the least time to read it once on an H100 (ms).",
        parts=(Part("layer_MB", "per layer", "MB", rtol=1e-2), Part("total_GB", "all layers", "GB", rtol=1e-2),
               Part("ms", "time at full bandwidth", "ms", rtol=2e-2)),
        mistakes=(
            Mistake("K_only", "layer_MB", lambda r, c: r["layer_MB"] / 2, _K_ONLY),
            Mistake("query_heads", "layer_MB", lambda r, c: r["layer_MB"] * c["q_over_kv"],
                    "with GQA the cache holds the {kv_heads} KV heads, not the {q_heads} query heads"),
            _binary_unit("MiB", "layer_MB", lambda r, c: c["per_layer"]),
            Mistake("K_only_total", "total_GB", lambda r, c: r["total_GB"] / 2, _K_ONLY),
            _binary_unit("GiB", "total_GB", lambda r, c: c["total"]),
            Mistake("one_layer_time", "ms", lambda r, c: r["ms"] / c["layers"],
                    "that is one layer's time; one decode step reads the cache of all layers"),
            Mistake("K_only_time", "ms", lambda r, c: r["ms"] / 2, _K_ONLY)),
        hint="a dict {'layer_MB': ..., 'total_GB': ..., 'ms': ...} or a tuple in that order")


# ---- exercise 11: the megakernel's ideal --------------------------------------------------------------------
_EX11 = dict(model="Llama-3.2-1B", gpu="H100", kernels_per_layer=7, extra_kernels=2, overhead_s=4e-6)


def _answer11():
    m = _lc("get_model")(_EX11["model"])
    g = _lc("get_gpu")(_EX11["gpu"])
    w = float(m.weight_bytes() if callable(m.weight_bytes) else m.weight_bytes)
    t = w / g.hbm_bandwidth
    n_kernels = _EX11["kernels_per_layer"] * m.num_layers + _EX11["extra_kernels"]
    over = n_kernels * _EX11["overhead_s"]
    return ({"fps": 1 / t, "util_pct": 100 * t / (t + over)},
            {"weights": w, "t": t, "kernels": n_kernels, "overhead": over, "params": float(m.num_params),
             "per_layer_overhead": _EX11["kernels_per_layer"] * _EX11["overhead_s"],
             "weights_text": fmt_bytes(w, unit="GB", digits=2), "layers": m.num_layers,
             "kernels_per_layer": _EX11["kernels_per_layer"], "extra_kernels": _EX11["extra_kernels"],
             "gap": fmt_seconds(_EX11["overhead_s"], unit="µs", digits=0), "overhead_s": _EX11["overhead_s"]})


_define(number=11, label="ex-megakernel-ideal", title="The megakernel's ideal", compute=_answer11,
        statement="Llama-3.2-1B in BF16 on an H100: the most forward passes per second at batch 1 (weights read "
                  "once per pass), and the bandwidth utilisation if {kernels} kernels each add {gap}.",
        parts=(Part("fps", "forwards per second", "1/s", rtol=1e-2),
               Part("util_pct", "bandwidth utilisation", "%", atol=1.0)),
        mistakes=(
            Mistake("params_not_bytes", "fps", lambda r, c: r["fps"] * c["weights"] / c["params"],
                    "you divided by the number of parameters; each BF16 parameter is 2 bytes"),
            Mistake("GiB", "fps", lambda r, c: r["fps"] * GB / GiB,
                    "you read {weights_text} as GiB; bandwidth and weight sizes here are decimal (10^9 bytes)"),
            Mistake("time_not_rate", "fps", lambda r, c: c["t"] * 1e3,
                    "that is the time per forward in ms; the question asks for forwards per second"),
            Mistake("overhead_share", "util_pct", lambda r, c: 100 - r["util_pct"],
                    "that is the share of time lost to the gaps; utilisation is the weight-reading time over the "
                    "total"),
            Mistake("one_layer_only", "util_pct",
                    lambda r, c: 100 * c["t"] / (c["t"] + c["per_layer_overhead"]),
                    "you counted the {kernels_per_layer} kernels of one layer; all {kernels} kernels "
                    "({kernels_per_layer} x {layers} layers + {extra_kernels}) add their {gap}"),
            Mistake("fraction", "util_pct", lambda r, c: r["util_pct"] / 100, _PCT)),
        hint="a dict {'fps': ..., 'util_pct': ...} or a tuple (fps, util_pct)")


# ---- exercise 12: the tail ----------------------------------------------------------------------------------
_EX12 = dict(blocks=(192, 128), gpu="H100")


def _answer12():
    sms = _lc("get_gpu")(_EX12["gpu"]).num_sms
    wu = _lc("wave_utilization")
    a, b = _EX12["blocks"]
    return ({"util192_pct": 100 * float(wu(a, sms)), "util128_pct": 100 * float(wu(b, sms))},
            {"sms": sms, "a": a, "b": b, "waves_a": cdiv(a, sms)})


_define(number=12, label="ex-wave-tail", title="The tail", compute=_answer12,
        statement="192 equal blocks on an H100's {sms} SMs: average SM utilisation (%)? And with 128 larger blocks?",
        parts=(Part("util192_pct", "192 blocks", "%", atol=0.5), Part("util128_pct", "128 blocks", "%", atol=0.5)),
        mistakes=(
            Mistake("fractional_waves", "util192_pct", lambda r, c: 100.0,
                    "waves are whole: {a} blocks on {sms} SMs take {waves_a} waves, the last only partly full"),
            Mistake("last_wave_only", "util192_pct", lambda r, c: 100 * (c["a"] - c["sms"]) / c["sms"],
                    "that is the last wave alone; average over both waves"),
            Mistake("blocks_over_sms", "util192_pct", lambda r, c: 100 * c["a"] / c["sms"],
                    "blocks / SMs is more than 100%; divide by (waves x SMs) with whole waves"),
            Mistake("fraction", "util192_pct", lambda r, c: r["util192_pct"] / 100, _PCT),
            Mistake("idle_share", "util128_pct", lambda r, c: 100 - r["util128_pct"],
                    "that is the idle share; utilisation is the busy share"),
            Mistake("fraction128", "util128_pct", lambda r, c: r["util128_pct"] / 100, _PCT)),
        hint="a dict {'util192_pct': ..., 'util128_pct': ...} or a tuple, in percent")


# ---- exercise 13: what bounds the forward tile on Blackwell ---------------------------------------------------
_EX13 = dict(gpu="B200", M=128, N=128, d=64, dtype="bf16")

_BOUND_OPTIONS = (
    ("A", "the tensor cores (MMA)",
     "Count both units' cycles: MMA is 4 M N d / (tensor FLOP per clock), exp is M N / (exps per clock). At "
     "d = 64 the MMA cycles halve, the exponentials do not."),
    ("B", "the exponential unit (MUFU)", ""),
    ("C", "shared memory",
     "Shared memory reads 3 N d operand elements of 2 bytes per 128-row MMA at {smem_per_clock:.0f} bytes "
     "per clock: fewer cycles than the exponentials at d = 64."),
    ("D", "MMA and the exponential unit, tied",
     "That is the paper's d = 128 tile. At d = 64 the MMA work halves while the number of exponentials "
     "(one per score, M x N) stays the same."),
)


def _answer13():
    g = _lc("get_gpu")(_EX13["gpu"])
    t = _lc("tile_roofline")(g, M=_EX13["M"], N=_EX13["N"], d=_EX13["d"], dtype=_EX13["dtype"])
    units = {"A": t.mma, "B": t.exp, "C": t.smem}
    top = max(units, key=units.get)
    letter = "D" if t.mma == t.exp and top in ("A", "B") else top
    # the least share s of each row's exponentials moved to the FMA units with (1 - s) x exp <= MMA
    share = max(0.0, 1.0 - t.mma / t.exp)
    return ({"bound": letter, "excess_pct": 100 * (t.exp / t.mma - 1), "share_pct": 100 * share},
            {"tile": t, "mma": t.mma, "exp": t.exp, "smem": t.smem,
             "mma_half": t.mma / 2,          # one matmul only, or a multiply-add counted as 1 FLOP
             "tile_d128": _lc("tile_roofline")(g, M=_EX13["M"], N=_EX13["N"], d=128, dtype=_EX13["dtype"]),
             "mma_per_clock": g.tensor_flop_per_clock_per_sm, "exp_per_clock": g.exp_ops_per_clock_per_sm,
             "smem_per_clock": g.smem_bytes_per_clock_per_sm})


_define(number=13, label="ex-fa4-exp-bound", title="What bounds the forward tile on Blackwell", compute=_answer13,
        statement="B200, BF16, one forward tile of M = N = 128 and head dim d = 64, from the per-SM rates "
                  "({mma_per_clock:,.0f} tensor FLOP, {exp_per_clock:.0f} exponentials, {smem_per_clock:.0f} bytes "
                  "of shared memory per clock): which unit bounds the "
                  "tile, by how much (%) it exceeds the MMA cycles, and what share (%) of each row's "
                  "exponentials the FMA units must emulate so that MMA bounds the tile again.",
        parts=(Part("bound", "bounding unit", options=_BOUND_OPTIONS),
               Part("excess_pct", "excess over MMA", "%", atol=0.5),
               Part("share_pct", "share emulated on FMA units", "%", atol=0.5)),
        mistakes=(
            Mistake("ratio_not_excess", "excess_pct", lambda r, c: c["exp"] / c["mma"],
                    "that is the ratio exp / MMA; the excess is (ratio - 1), in percent"),
            Mistake("share_for_excess", "excess_pct", lambda r, c: r["share_pct"],
                    "that is the share to remove from the exponential unit; the excess compares the exp cycles "
                    "with the MMA cycles: exp / MMA - 1"),
            Mistake("mma_halved", "excess_pct", lambda r, c: 100 * (c["exp"] / c["mma_half"] - 1),
                    "the tile runs two matmuls (S = Q K^T and O = P V), each 2 FLOP per multiply-add: "
                    "MMA cycles = 4 M N d / {mma_per_clock:.0f}"),
            Mistake("excess_for_share", "share_pct", lambda r, c: r["excess_pct"],
                    "that is the excess of exp over MMA; the emulated share s must satisfy (1 - s) x exp <= MMA, "
                    "so s = 1 - MMA / exp"),
            Mistake("mma_halved_share", "share_pct", lambda r, c: 100 * (1 - c["mma_half"] / c["exp"]),
                    "the tile runs two matmuls (S = Q K^T and O = P V), each 2 FLOP per multiply-add: "
                    "MMA cycles = 4 M N d / {mma_per_clock:.0f}"),
            Mistake("fraction", "share_pct", lambda r, c: r["share_pct"] / 100, _PCT)),
        hint="a dict {'bound': 'A'/'B'/'C'/'D', 'excess_pct': ..., 'share_pct': ...} or a tuple in that order",
        source="FlashAttention-4 (Zadouri et al. 2026), Sec. 2.2 (per-SM rates), Sec. 3.1.1 (tile roofline), "
               "Sec. 3.1.3 (exp emulation on 10-25% of each row)")


#: The exercise definitions, in order (``EXERCISES[k - 1].number == k``).
EXERCISES: tuple = tuple(_DEFINED)


def exercise(k) -> Exercise:
    """The definition of exercise ``k``.

    Args:
        k: the exercise number, an integer 1..len(EXERCISES) (not a bool, string or float).
    Raises:
        ValueError: ``k`` is not an integer in 1..len(EXERCISES).
    Source: lecture §12.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= int(k) <= len(EXERCISES):
        raise ValueError(f"exercise number must be an integer 1..{len(EXERCISES)}, got {k!r}")
    return EXERCISES[int(k) - 1]


def reference(k) -> dict:
    """Reference answers of exercise ``k`` by part key, computed now with labcore (in the parts' units).

    Raises:
        ValueError: ``k`` is not an integer in 1..len(EXERCISES).
        ExerciseUnavailable: a labcore function the reference needs is not in this checkout.
    """
    return exercise(k).compute()[0]
