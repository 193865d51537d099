"""The five labs: what HBM holds, the shapes a kernel is graded on, the float64 oracle, the closed-form
traffic, the reference kernel and the named mistakes with their feedback lines.

A lab is data (:class:`Lab`); the grader (:mod:`flashbook.labs.grader`) is one loop over any lab. Sizes are
small on purpose (d = 8, M of a few hundred elements) so that a grade runs in well under two seconds while
every kernel still needs several blocks and must stream.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass, field

import numpy as np

from labcore.attention import reference_attention
from labcore.blocks import paper_block_sizes
from labcore.flash import standard_attention_backward
from labcore.softmax import safe_lse
from labcore.hbm import flash_backward_io, flash_forward_io, flash_io_bound, online_softmax_row_io, split_kv_io

from .kernels_backward import BACKWARD_MISTAKES, flash_backward
from .kernels_decode import DECODE_MISTAKES, flash_decoding
from .kernels_forward import FA1_MISTAKES, FA2_MISTAKES, ROW_MISTAKES, fa1_forward, fa2_forward, online_softmax_row

__all__ = ["Lab", "LABS", "get_lab", "FEEDBACK", "DECODE_SCENARIOS"]

#: One feedback line per known mistake (the grader names the mistake with this line, and no other kernel gets it).
FEEDBACK = {
    "s_to_hbm": "S or P was written to HBM: the traffic has an N x N_k term. Keep the score tile on chip and use it "
                "where it is made.",
    "p_to_hbm": "S or P was written to HBM: the traffic has an N x N_k term. Recompute P = exp(S - lse_i) on chip "
                "from the lse the forward stored.",
    "q_reread": "Q (and O, l, m) were re-read for every key block: in the FlashAttention-2 order Q_i is read once "
                "and (m, l, acc) stay in on-chip buffers until the last key block.",
    "kv_whole": "K and V were held whole on chip: they do not fit in M. Stream them in blocks of block_kv rows.",
    "whole_row": "The whole row (all of S, or all of V) was held on chip: it does not fit in M. Stream it in blocks.",
    "two_pass": "The scores were read more than once (a first pass for the maximum): keep a running maximum and "
                "rescale instead, so each score is read once.",
    "no_rescale": "The rescale factor alpha = exp(m_old - m_new) was forgotten: l and acc must be multiplied by it "
                  "whenever the running maximum grows.",
    "rescale_new": "The rescale factor was applied to the wrong quantity (the new block): it moves the OLD l and acc "
                   "to the new maximum; the new block is already relative to m_new.",
    "block_max": "The running maximum was replaced by the block's maximum: m must be max(m, rowmax(S_block)), "
                 "otherwise exp overflows when a later block has smaller scores.",
    "early_normalise": "The output was normalised before the last block: keep acc unnormalised and divide by l "
                       "once, after the last key block (deferred normalisation).",
    "top_left": "The causal mask is aligned top-left (j <= i): with N_q != N_k it must be bottom-right, "
                "j <= i + N_k - N_q.",
    "missing_D": "dS lacks the D_i term: dS = P * (dP - D_i) with D_i = rowsum(dO_i * O_i), computed in a pre-pass.",
    "mean_combine": "The splits were combined without lse weights (a plain mean): weight each split's output by "
                    "exp(lse_s - lse), where lse = log sum_s exp(lse_s).",
    "empty_nan": "An empty split produced NaN (0 / 0): a split without keys must leave O_s = 0 and lse_s = -inf, "
                 "and the combine must give it weight 0.",
}

#: "Beat the heuristic": decode scenarios (batch, seqlen, heads, head_dim) per GPU for the time model.
DECODE_SCENARIOS = (
    dict(gpu="A100", batch=1, seqlen=65_536, num_q_heads=32, num_kv_heads=8, head_dim=128),
    dict(gpu="H100", batch=1, seqlen=65_536, num_q_heads=32, num_kv_heads=8, head_dim=128),
    dict(gpu="A100", batch=4, seqlen=16_384, num_q_heads=32, num_kv_heads=8, head_dim=128),
    dict(gpu="H100", batch=4, seqlen=16_384, num_q_heads=32, num_kv_heads=8, head_dim=128),
)


@dataclass(frozen=True)
class Lab:
    """One lab.

    Attributes:
        key: short name (str). number: its number in the Labs part (int). title: its title (str).
        section: the book page it practises, e.g. ``"03_online_softmax"``.
        minutes: how long it takes a reader (int, an estimate).
        M: SRAM elements per CTA (int). d: head dimension (int).
        shapes: the graded shapes (list of dicts).
        params: the kernel's default keyword parameters (block sizes; dict).
        runner: ``"cta"`` (the kernel is ``kernel(cta, **params)`` on a grid of one) or ``"chip"`` (a program
            ``kernel(chip, **params)``).
        inputs: ``(rng, shape) -> {name: array}``.
        outputs: ``shape -> {name: shape}``, allocated as NaN.
        oracle: ``(inputs, shape) -> {name: array}`` in float64.
        expected_io: ``(shape, params) -> by-tensor dict`` (the closed form).
        reference: the reference kernel.
        mistakes: ``{key: kernel}`` (keys of ``FEEDBACK``).
        fingerprinted: the mistakes recognised by their outputs.
        notes: ``(shape, params, M) -> [str]``, lines for the report.
        collect: ``read -> {name: array}``, the outputs compared with the oracle (default: the oracle's
            tensors as stored; ``read(name)`` reads HBM).
        kernel_params: the kernel's parameter names.
    """

    key: str
    number: int
    title: str
    section: str
    minutes: int
    M: int
    d: int
    shapes: tuple
    params: dict
    runner: str
    inputs: object
    outputs: object
    oracle: object
    expected_io: object
    reference: object
    mistakes: dict
    fingerprinted: tuple
    notes: object = None
    collect: object = None
    kernel_params: tuple = field(default=("block_q", "block_kv"))

    def shape_label(self, shape: dict) -> str:
        return ", ".join(f"{k}={v}" for k, v in shape.items())


def _normal(rng, *shape):
    return rng.standard_normal(shape)


# --- lab 1 --------------------------------------------------------------------------------------------------

def _row_inputs(rng, shape):
    N, d = shape["N"], 8
    S = 3.0 * _normal(rng, N) if not shape.get("stress") else np.linspace(1500.0, -1500.0, N) + _normal(rng, N)
    return {"S": S, "V": _normal(rng, N, d)}


def _row_oracle(inputs, shape):
    O, lse = reference_attention(np.ones((1, 1)), inputs["S"][:, None], inputs["V"], scale=1.0)
    return {"O": O, "lse": lse}


# --- labs 2 and 3 -------------------------------------------------------------------------------------------

def _qkv(rng, shape):
    N, N_k, d = shape["N"], shape["N_k"], 8
    return {"Q": _normal(rng, N, d), "K": _normal(rng, N_k, d), "V": _normal(rng, N_k, d)}


def _oracle(inputs, shape, q="Q"):
    """The float64 reference's O and lse for the query tensor ``q`` of the inputs (no mask)."""
    O, lse = reference_attention(inputs[q], inputs["K"], inputs["V"])
    return {"O": O, "lse": lse}


def _fa2_oracle(inputs, shape):
    O, lse = reference_attention(inputs["Q"], inputs["K"], inputs["V"], causal=True)
    return {"O": O, "lse": lse}


def _fa1_notes(shape, params, M):
    N, N_k, d = shape["N"], shape["N_k"], 8
    io, bound = flash_forward_io(N, d, N_k=N_k, loop_order="fa1", **params), flash_io_bound(N, d, M)
    shown = f"{bound:,.0f}" if bound >= 10 else f"{bound:.2g}"   # a tiny shape's bound is under one element
    return [f"N = {N}, N_k = {N_k}: {io:,} elements moved; Theorem 2's N^2 d^2 / M = {shown} "
            f"(ratio {io / bound:.2f})"]


def _fa1_collect(read):
    return {"O": read("O"), "lse": safe_lse(read("m"), read("l"))}


def _fa2_notes(shape, params, M):
    N, N_k, d = shape["N"], shape["N_k"], 8
    full = flash_forward_io(N, d, N_k=N_k, loop_order="fa2", **params)
    masked = flash_forward_io(N, d, N_k=N_k, loop_order="fa2", causal=True, **params)
    return [f"N = {N}, N_k = {N_k}: the causal mask skips blocks, {masked:,} elements instead of {full:,} "
            f"({1 - masked / full:.0%} saved)"]


# --- lab 4 --------------------------------------------------------------------------------------------------

def _bwd_inputs(rng, shape):
    t = _qkv(rng, shape)
    t["dO"] = _normal(rng, shape["N"], 8)
    t["O"], t["lse"] = reference_attention(t["Q"], t["K"], t["V"])
    return t


def _bwd_oracle(inputs, shape):
    dQ, dK, dV = standard_attention_backward(inputs["Q"], inputs["K"], inputs["V"], inputs["dO"])
    return {"dQ": dQ, "dK": dK, "dV": dV}


# --- lab 5 --------------------------------------------------------------------------------------------------

def _dec_inputs(rng, shape):
    g, N_k, d = shape["g"], shape["N_k"], 8
    return {"q": _normal(rng, g, d), "K": _normal(rng, N_k, d), "V": _normal(rng, N_k, d)}


_D = 8
_LABS = (
    Lab("online_softmax", 1, "Online softmax: one row in one pass", "03_online_softmax", 20, M=256, d=_D,
        shapes=({"N": 37}, {"N": 64}, {"N": 100}, {"N": 80, "stress": True}),
        params={"block_kv": 16}, runner="cta", inputs=_row_inputs,
        outputs=lambda s: {"O": (1, _D), "lse": (1,)}, oracle=_row_oracle,
        expected_io=lambda s, p: online_softmax_row_io(s["N"], _D), reference=online_softmax_row,
        mistakes=ROW_MISTAKES, fingerprinted=("no_rescale", "rescale_new", "block_max", "early_normalise"),
        kernel_params=("block_kv",)),
    Lab("fa1_forward", 2, "FlashAttention forward, Algorithm 1 order", "04_flash_forward", 30, M=400, d=_D,
        shapes=({"N": 40, "N_k": 40}, {"N": 45, "N_k": 31}, {"N": 29, "N_k": 58}, {"N": 1, "N_k": 33}),
        params=dict(zip(("block_q", "block_kv"), paper_block_sizes(400, _D))), runner="cta", inputs=_qkv,
        outputs=lambda s: {"O": (s["N"], _D), "l": (s["N"],), "m": (s["N"],)}, oracle=_oracle,
        expected_io=lambda s, p: flash_forward_io(s["N"], _D, N_k=s["N_k"], loop_order="fa1", by_tensor=True, **p),
        reference=fa1_forward, mistakes=FA1_MISTAKES, fingerprinted=("no_rescale",), notes=_fa1_notes,
        collect=_fa1_collect),
    Lab("fa2_causal", 3, "FlashAttention-2 order with a causal mask", "04_flash_forward", 30, M=768, d=_D,
        shapes=({"N": 67, "N_k": 67}, {"N": 45, "N_k": 77}, {"N": 90, "N_k": 53}, {"N": 1, "N_k": 70}),
        params={"block_q": 16, "block_kv": 16}, runner="cta", inputs=_qkv,
        outputs=lambda s: {"O": (s["N"], _D), "lse": (s["N"],)}, oracle=_fa2_oracle,
        expected_io=lambda s, p: flash_forward_io(s["N"], _D, N_k=s["N_k"], loop_order="fa2", causal=True,
                                                  by_tensor=True, **p),
        reference=fa2_forward, mistakes=FA2_MISTAKES, fingerprinted=("top_left", "early_normalise"),
        notes=_fa2_notes),
    Lab("backward", 4, "The backward by recomputation", "05_flash_backward", 40, M=1024, d=_D,
        shapes=({"N": 40, "N_k": 50}, {"N": 37, "N_k": 61}, {"N": 64, "N_k": 64}),
        params={"block_q": 16, "block_kv": 16}, runner="cta", inputs=_bwd_inputs,
        outputs=lambda s: {"dQ": (s["N"], _D), "dK": (s["N_k"], _D), "dV": (s["N_k"], _D)}, oracle=_bwd_oracle,
        expected_io=lambda s, p: flash_backward_io(s["N"], _D, N_k=s["N_k"], by_tensor=True, **p),
        reference=flash_backward, mistakes=BACKWARD_MISTAKES, fingerprinted=("missing_D",)),
    Lab("flash_decoding", 5, "Flash-decoding: split, combine, beat the heuristic", "06_flash_decoding", 30, M=512,
        d=_D, shapes=({"g": 1, "N_k": 40, "num_splits": 3}, {"g": 4, "N_k": 37, "num_splits": 5},
                      {"g": 1, "N_k": 9, "num_splits": 4}, {"g": 2, "N_k": 64, "num_splits": 1},
                      {"g": 1, "N_k": 5, "num_splits": 8}),
        params={"block_kv": 16}, runner="chip", inputs=_dec_inputs,
        outputs=lambda s: {"O": (s["g"], _D), "lse": (s["g"],)}, oracle=functools.partial(_oracle, q="q"),
        expected_io=lambda s, p: split_kv_io(s["N_k"], _D, num_splits=s["num_splits"], rows=s["g"]),
        reference=flash_decoding, mistakes=DECODE_MISTAKES, fingerprinted=("mean_combine",),
        kernel_params=("block_kv",)),
)

#: The labs by key, in order.
LABS = {lab.key: lab for lab in _LABS}


def get_lab(lab) -> Lab:
    """A lab by key (``"fa1_forward"``), number (2) or itself. Raises ValueError (unknown) or TypeError."""
    if isinstance(lab, Lab):
        return lab
    if isinstance(lab, bool) or not isinstance(lab, (str, int)):
        raise TypeError(f"lab must be a key such as 'online_softmax', a number 1-{len(_LABS)} or a Lab, got {lab!r}")
    for x in _LABS:
        if lab in (x.key, x.number):
            return x
    raise ValueError(f"unknown lab {lab!r}; labs: " + ", ".join(f"{x.number} {x.key!r}" for x in _LABS))
