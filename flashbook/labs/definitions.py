"""The five labs: what HBM holds, the shapes a kernel is graded on (large scores among them), the float64 oracle,
the closed-form traffic, the grid, the reference solution, the starter and the named mistakes.

A lab is data (:class:`Lab`); the grader (:mod:`flashbook.labs.grader`) is one loop over any lab. Sizes are
small on purpose (d = 8, M of a few hundred elements) so that a grade runs in well under two seconds while
every kernel still needs several blocks and must stream.

Every lab with a softmax (all five: lab 4 recomputes one) has shapes whose scores are large in magnitude (up to
+-1500, and rows all below -800) and rise and fall from key block to key block, so that a kernel without a running
maximum, or with a stale one, overflows or divides 0 by 0 there and fails exactness.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from labcore.attention import reference_attention
from labcore.blocks import paper_block_sizes
from labcore.flash import standard_attention_backward
from labcore.hbm import (flash_backward_atomics, flash_backward_io, flash_forward_io, flash_io_bound,
                         online_softmax_row_io, split_kv_io)
from labcore.softmax import safe_lse

from .mistakes import EDITS, FEEDBACK
from .solutions import lab1_online_softmax, lab2_flash_forward, lab3_causal_fa2, lab4_backward, lab5_flash_decoding

__all__ = ["Lab", "LABS", "get_lab", "FEEDBACK", "DECODE_SCENARIOS", "STARTERS"]

#: "Beat the heuristic": decode scenarios (batch, seqlen, heads, head_dim) per GPU for the time model.
DECODE_SCENARIOS = (
    dict(gpu="A100", batch=1, seqlen=65_536, num_q_heads=32, num_kv_heads=8, head_dim=128),
    dict(gpu="H100", batch=1, seqlen=65_536, num_q_heads=32, num_kv_heads=8, head_dim=128),
    dict(gpu="A100", batch=4, seqlen=16_384, num_q_heads=32, num_kv_heads=8, head_dim=128),
    dict(gpu="H100", batch=4, seqlen=16_384, num_q_heads=32, num_kv_heads=8, head_dim=128),
)

#: The starter of each lab: the code its kernel cell holds (it runs, and is graded "not yet").
STARTERS = {
    "online_softmax": '''def kernel(cta, *, block_kv):
    N, d = cta.shape("V")
    with cta.buffer((1, d), name="acc") as acc:
        for c0 in range(0, N, block_kv):
            c1 = min(c0 + block_kv, N)
            with cta.load("S", rows=(c0, c1)) as s, cta.load("V", rows=(c0, c1)) as V_j:
                acc += s[None, :] @ V_j          # TODO: softmax weights, not raw scores
        cta.store("O", acc, rows=(0, 1))
    cta.store("lse", np.zeros(1), rows=(0, 1))    # TODO: the row's lse
''',
    "fa1_forward": '''def kernel(cta, *, block_q, block_kv):
    N, d = cta.shape("Q")
    cta.store("O", np.zeros((N, d)))              # TODO: Algorithm 1's loops
    cta.store("l", np.ones(N))
    cta.store("m", np.zeros(N))
''',
    "fa2_causal": '''def kernel(cta, *, block_q, block_kv):
    N, d = cta.shape("Q")
    r0 = cta.pid * block_q                        # this CTA's query block: rows [r0, r1)
    r1 = min(r0 + block_q, N)
    # TODO: attend to the keys the mask shows
    cta.store("O", np.zeros((r1 - r0, d)), rows=(r0, r1))
    cta.store("lse", np.zeros(r1 - r0), rows=(r0, r1))
''',
    "backward": '''def preprocess(cta, *, block_q):
    N, d = cta.shape("O")
    r0 = cta.pid * block_q
    r1 = min(r0 + block_q, N)
    cta.store("D", np.zeros(r1 - r0), rows=(r0, r1))           # TODO: D_i = rowsum(dO_i * O_i)
    cta.store("dQ", np.zeros((r1 - r0, d)), rows=(r0, r1))     # the zeros the CTAs add into

def backward(cta, *, block_q, block_kv, causal):
    N_k, d = cta.shape("K")
    c0 = cta.pid * block_kv                       # this CTA's key block: rows [c0, c1)
    c1 = min(c0 + block_kv, N_k)
    # TODO: loop over the query blocks that see this key block, add into dQ
    cta.store("dK", np.zeros((c1 - c0, d)), rows=(c0, c1))
    cta.store("dV", np.zeros((c1 - c0, d)), rows=(c0, c1))

def kernel(chip, *, block_q, block_kv, causal):
    N = chip.shape("Q")[0]
    N_k = chip.shape("K")[0]
    chip.allocate("D", (N,))
    chip.launch(preprocess, grid=(N + block_q - 1) // block_q, block_q=block_q)
    chip.launch(backward, grid=(N_k + block_kv - 1) // block_kv,
                block_q=block_q, block_kv=block_kv, causal=causal)
''',
    "flash_decoding": '''def split(cta, *, num_splits, block_kv):
    g, d = cta.shape("q")
    rows = (cta.pid * g, (cta.pid + 1) * g)
    cta.store("O_part", np.zeros((g, d)), rows=rows)      # TODO: attend to this split's keys
    cta.store("lse_part", np.zeros(g), rows=rows)

def combine(cta, *, num_splits):
    g, d = cta.shape("O")
    with cta.load("O_part") as O_parts:
        # TODO: lse weights
        cta.store("O", O_parts.reshape(num_splits, g, d).mean(axis=0), rows=(0, g))
    cta.store("lse", np.zeros(g), rows=(0, g))

def kernel(chip, *, num_splits, block_kv):
    g, d = chip.shape("q")
    chip.allocate("O_part", (num_splits * g, d))
    chip.allocate("lse_part", (num_splits * g,))
    chip.launch(split, grid=num_splits, num_splits=num_splits, block_kv=block_kv)
    chip.launch(combine, grid=1, num_splits=num_splits)

def choose_splits(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim):
    return 1                                               # TODO: think in waves
''',
}


@dataclass(frozen=True)
class Lab:
    """One lab.

    Attributes:
        key: short name (str). number: its number in the Labs part (int). title: its title (str).
        section: the book page it practises, e.g. ``"03_online_softmax"``.
        minutes: how long it takes a reader (int, an estimate).
        M: SRAM elements per CTA (int). d: head dimension (int).
        shapes: the graded shapes (tuple of dicts; ``"scores": "large"`` or ``"low"`` marks large-magnitude
            scores, ``"causal"`` and ``"num_splits"`` are passed to the kernel).
        params: the kernel's default keyword parameters (block sizes; dict).
        runner: ``"cta"`` (the grader launches ``kernel(cta, **params)`` on ``grid`` CTAs) or ``"program"`` (a
            program ``kernel(chip, **params)`` that allocates and launches).
        grid: ``(shape, params) -> int``, the CTAs of a ``"cta"`` lab's launch.
        launch_rule: ``(tensor, what, (shape, params) -> int)``: the launch that writes ``tensor`` must run that
            many CTAs (``what`` names them), or None.
        owner_rule: ``(tensor, what, (pid, shape, params) -> (r0, r1))``: the rows of ``tensor`` CTA ``pid`` of
            that launch may write (each CTA does its own block's work), or None.
        shape_params: per-shape keyword parameters passed to the kernel (``"num_splits"``, ``"causal"``).
        inputs: ``(rng, shape) -> {name: array}``.
        outputs: ``shape -> {name: shape}``, allocated as NaN.
        oracle: ``(inputs, shape) -> {name: array}`` in float64.
        expected_io: ``(shape, params) -> by-tensor dict`` (the closed form).
        expected_atomics: ``(shape, params) -> {tensor: elements}`` added atomically, or None.
        reference: the reference kernel (the solution file's ``kernel``).
        names: the functions a submission defines for this lab (``("kernel",)`` or with ``"choose_splits"``).
        fingerprinted: the mistakes recognised by their outputs.
        notes: ``(shape, params, M) -> [str]``, lines for the report.
        collect: ``read -> {name: array}``, the outputs compared with the oracle (default: the oracle's
            tensors as stored; ``read(name)`` reads HBM).
        kernel_params: the block-size parameter names a reader may change.
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
    fingerprinted: tuple
    grid: object = None
    launch_rule: tuple | None = None
    owner_rule: tuple | None = None
    shape_params: tuple = ()
    expected_atomics: object = None
    names: tuple = ("kernel",)
    notes: object = None
    collect: object = None
    kernel_params: tuple = field(default=("block_q", "block_kv"))

    def shape_label(self, shape: dict) -> str:
        """``"N=45, N_k=31, large scores"``: the shape as the report names it."""
        parts = [f"{k}={v}" for k, v in shape.items() if k not in ("scores", "causal")]
        if shape.get("causal"):
            parts.append("causal")
        if shape.get("scores") == "large":
            parts.append("large scores")
        elif shape.get("scores") == "low":
            parts.append("large negative scores")
        return ", ".join(parts)

    @property
    def mistakes(self) -> tuple:
        """The names of this lab's known mistakes (keys of :data:`FEEDBACK`)."""
        return tuple(EDITS[self.key])

    @property
    def starter(self) -> str:
        """The starter's source: what the lab's kernel cell holds."""
        return STARTERS[self.key]


def _normal(rng, *shape):
    return rng.standard_normal(shape)


#: The period, in keys, of the large scores' rise and fall: over blocks of 16 keys, the first block's maximum is
#: 0.38 of the peak, the second block holds the peak and the third falls back to half of it, so that a maximum kept
#: from the first block, or replaced by each block's, is off by more than exp can bear (709).
_PERIOD = 48
#: Size of the large scores (before the softmax scale is undone) and the offset of the "low" rows.
_LARGE, _LOW = 1500.0, -1400.0


def _profile(n):
    """Rises from -1 to 1, falls back to -1 and rises again over ``n`` keys (period :data:`_PERIOD`)."""
    return -np.cos(2 * np.pi * np.arange(n) / _PERIOD)


# --- lab 1 --------------------------------------------------------------------------------------------------

def _row_inputs(rng, shape):
    N, d = shape["N"], 8
    kind = shape.get("scores")
    if kind == "large":                                   # between -1500 and +1500, rising and falling
        S = _LARGE * _profile(N) + _normal(rng, N)
    elif kind == "low":                                   # all below -800 (exp underflows), rising by 1000
        S = -1800.0 + 1000.0 * np.arange(N) / max(N - 1, 1) + _normal(rng, N)
    else:
        S = 3.0 * _normal(rng, N)
    return {"S": S, "V": _normal(rng, N, d)}


def _row_oracle(inputs, shape):
    O, lse = reference_attention(np.ones((1, 1)), inputs["S"][:, None], inputs["V"], scale=1.0)
    return {"O": O, "lse": lse}


# --- labs 2, 3 and 5: Q, K, V -------------------------------------------------------------------------------

def _qkv(rng, shape, q="Q", rows="N"):
    N, N_k, d = shape[rows], shape["N_k"], 8
    Q, K, V = _normal(rng, N, d), _normal(rng, N_k, d), _normal(rng, N_k, d)
    if shape.get("scores") == "large":
        # scores q.k / sqrt(d) of three kinds of rows: +1500 x profile, -1500 x profile, and 600 x profile - 1400
        # (all below -800); the profile rises and falls across key blocks
        K[:, 0] = math.sqrt(d) * _LARGE * _profile(N_k)
        K[:, 1] = math.sqrt(d) * _LOW
        kind = rng.permutation(N) % 3
        Q[:, 0] = np.choose(kind, [1.0, -1.0, 0.4])
        Q[:, 1] = (kind == 2).astype(float)
    return {q: Q, "K": K, "V": V}


def _oracle(inputs, shape, q="Q"):
    """The float64 reference's O and lse for the query tensor ``q`` of the inputs (no mask)."""
    O, lse = reference_attention(inputs[q], inputs["K"], inputs["V"])
    return {"O": O, "lse": lse}


def _fa2_oracle(inputs, shape):
    O, lse = reference_attention(inputs["Q"], inputs["K"], inputs["V"], causal=True)
    return {"O": O, "lse": lse}


def _fa1_notes(shape, params, M):
    N, N_k, d = shape["N"], shape["N_k"], 8
    io, bound = flash_forward_io(N, d, N_k=N_k, loop_order="fa1", **params), flash_io_bound(N, d, M, N_k=N_k)
    shown = f"{bound:,.0f}" if bound >= 10 else f"{bound:.2g}"   # a tiny shape's bound is under one element
    return [f"The closed form of Algorithm 1 (B_r = {params['block_q']}, B_c = {params['block_kv']}) moves {io:,} "
            f"elements; Theorem 2's order N N_k d^2 / M = {shown} (ratio {io / bound:.2f})."]


def _fa1_collect(read):
    return {"O": read("O"), "lse": safe_lse(read("m"), read("l"))}


def _fa2_notes(shape, params, M):
    N, N_k, d = shape["N"], shape["N_k"], 8
    full = flash_forward_io(N, d, N_k=N_k, loop_order="fa2", **params)
    masked = flash_forward_io(N, d, N_k=N_k, loop_order="fa2", causal=True, **params)
    return [f"The closed form with the causal mask moves {masked:,} elements, without it {full:,} "
            f"({1 - masked / full:.0%} saved by skipping the blocks the mask hides)."]


def _ceil(a, b):
    return -(-a // b)


# --- lab 4 --------------------------------------------------------------------------------------------------

def _bwd_inputs(rng, shape):
    t = _qkv(rng, shape)
    t["dO"] = _normal(rng, shape["N"], 8)
    t["O"], t["lse"] = reference_attention(t["Q"], t["K"], t["V"], causal=bool(shape.get("causal")))
    return t


def _bwd_oracle(inputs, shape):
    dQ, dK, dV = standard_attention_backward(inputs["Q"], inputs["K"], inputs["V"], inputs["dO"],
                                             causal=bool(shape.get("causal")))
    return {"dQ": dQ, "dK": dK, "dV": dV}


def _bwd_io(shape, params):
    return flash_backward_io(shape["N"], 8, N_k=shape["N_k"], causal=bool(shape.get("causal")), by_tensor=True,
                             dq="atomic", **params)


def _bwd_atomics(shape, params):
    return {"dQ": flash_backward_atomics(shape["N"], 8, N_k=shape["N_k"], causal=bool(shape.get("causal")),
                                         **params)}


_D = 8
_LABS = (
    Lab("online_softmax", 1, "Online softmax: one row in one pass", "03_online_softmax", 20, M=256, d=_D,
        shapes=({"N": 37}, {"N": 64}, {"N": 100}, {"N": 80, "scores": "large"}, {"N": 70, "scores": "low"}),
        params={"block_kv": 16}, runner="cta", grid=lambda s, p: 1, inputs=_row_inputs,
        outputs=lambda s: {"O": (1, _D), "lse": (1,)}, oracle=_row_oracle,
        expected_io=lambda s, p: online_softmax_row_io(s["N"], _D), reference=lab1_online_softmax.kernel,
        fingerprinted=("no_rescale", "rescale_new", "block_max", "early_normalise", "no_max"),
        kernel_params=("block_kv",)),
    Lab("fa1_forward", 2, "FlashAttention forward, Algorithm 1 order", "04_flash_forward", 30, M=400, d=_D,
        shapes=({"N": 40, "N_k": 40}, {"N": 45, "N_k": 31}, {"N": 29, "N_k": 58}, {"N": 1, "N_k": 33},
                {"N": 36, "N_k": 52, "scores": "large"}),
        params=dict(zip(("block_q", "block_kv"), paper_block_sizes(400, _D))), runner="cta", grid=lambda s, p: 1,
        inputs=_qkv, outputs=lambda s: {"O": (s["N"], _D), "l": (s["N"],), "m": (s["N"],)}, oracle=_oracle,
        expected_io=lambda s, p: flash_forward_io(s["N"], _D, N_k=s["N_k"], loop_order="fa1", by_tensor=True, **p),
        reference=lab2_flash_forward.kernel, fingerprinted=("no_rescale",), notes=_fa1_notes,
        collect=_fa1_collect),
    Lab("fa2_causal", 3, "FlashAttention-2 order with a causal mask", "04_flash_forward", 30, M=768, d=_D,
        shapes=({"N": 67, "N_k": 67}, {"N": 45, "N_k": 77}, {"N": 90, "N_k": 53}, {"N": 1, "N_k": 70},
                {"N": 50, "N_k": 61, "scores": "large"}),
        params={"block_q": 16, "block_kv": 16}, runner="cta", grid=lambda s, p: _ceil(s["N"], p["block_q"]),
        launch_rule=("O", "one CTA per query block", lambda s, p: _ceil(s["N"], p["block_q"])),
        owner_rule=("O", "its query block", lambda pid, s, p: (pid * p["block_q"], min((pid + 1) * p["block_q"],
                                                                                        s["N"]))),
        inputs=_qkv, outputs=lambda s: {"O": (s["N"], _D), "lse": (s["N"],)}, oracle=_fa2_oracle,
        expected_io=lambda s, p: flash_forward_io(s["N"], _D, N_k=s["N_k"], loop_order="fa2", causal=True,
                                                  by_tensor=True, **p),
        reference=lab3_causal_fa2.kernel, fingerprinted=("top_left", "early_normalise", "no_max"),
        notes=_fa2_notes),
    Lab("backward", 4, "The backward by recomputation", "05_flash_backward", 40, M=1024, d=_D,
        shapes=({"N": 40, "N_k": 50, "causal": False}, {"N": 37, "N_k": 61, "causal": True},
                {"N": 64, "N_k": 64, "causal": False}, {"N": 45, "N_k": 38, "causal": True},
                {"N": 33, "N_k": 47, "causal": True, "scores": "large"}),
        params={"block_q": 16, "block_kv": 16}, runner="program", shape_params=("causal",),
        launch_rule=("dK", "one CTA per key block", lambda s, p: _ceil(s["N_k"], p["block_kv"])),
        owner_rule=("dK", "its key block", lambda pid, s, p: (pid * p["block_kv"], min((pid + 1) * p["block_kv"],
                                                                                        s["N_k"]))),
        inputs=_bwd_inputs, outputs=lambda s: {"dQ": (s["N"], _D), "dK": (s["N_k"], _D), "dV": (s["N_k"], _D)},
        oracle=_bwd_oracle, expected_io=_bwd_io, expected_atomics=_bwd_atomics, reference=lab4_backward.kernel,
        fingerprinted=("missing_D",)),
    Lab("flash_decoding", 5, "Flash-decoding: split, combine, beat the heuristic", "06_flash_decoding", 30, M=512,
        d=_D, shapes=({"g": 1, "N_k": 40, "num_splits": 3}, {"g": 4, "N_k": 37, "num_splits": 5},
                      {"g": 1, "N_k": 9, "num_splits": 4}, {"g": 2, "N_k": 64, "num_splits": 1},
                      {"g": 1, "N_k": 5, "num_splits": 8}, {"g": 3, "N_k": 58, "num_splits": 3, "scores": "large"}),
        params={"block_kv": 16}, runner="program", shape_params=("num_splits",),
        launch_rule=("O_part", "one CTA per split", lambda s, p: s["num_splits"]),
        owner_rule=("O_part", "its split's rows", lambda pid, s, p: (pid * s["g"], (pid + 1) * s["g"])),
        inputs=functools.partial(_qkv, q="q", rows="g"), outputs=lambda s: {"O": (s["g"], _D), "lse": (s["g"],)},
        oracle=functools.partial(_oracle, q="q"),
        expected_io=lambda s, p: split_kv_io(s["N_k"], _D, num_splits=s["num_splits"], rows=s["g"]),
        reference=lab5_flash_decoding.kernel, fingerprinted=("mean_combine",),
        names=("kernel", "choose_splits"), kernel_params=("block_kv",)),
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
