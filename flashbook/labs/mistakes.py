"""The labs' known mistakes: each is a reader's kernel with one thing wrong, made from the lab's reference solution
by a named edit of its text, and has one feedback line that the grader gives only when it recognises it.

A mistake is a list of edits ``(old, new)`` on the solution's text (``old`` must occur exactly once; ``None``
appends ``new``), so each mistaken kernel reads like the reference with one change, and it is rebuilt through the
same checks as any reader's kernel (:func:`labcore.chip.rebuild_from_text`).
"""
from __future__ import annotations

from functools import lru_cache

from labcore.chip import CHIP_PROFILE, rebuild_from_text

from .solutions import solution_text

__all__ = ["FEEDBACK", "EDITS", "mistake_text", "mistake_functions"]

#: One feedback line per known mistake (the grader names a mistake with this line, and no other kernel gets it).
FEEDBACK = {
    "s_to_hbm": "S or P was written to HBM: the traffic has an N x N_k term. Keep the score tile on chip and use it "
                "where it is made.",
    "p_to_hbm": "S or P was written to HBM: the traffic has an N x N_k term. Recompute P = exp(S - lse_i) on chip "
                "from the lse the forward stored.",
    "q_reread": "Q_i was read again for key blocks after the first: in the FlashAttention-2 order a CTA reads its "
                "Q_i once, before its loop over key blocks, and keeps it on chip (with m, l and acc) until the end.",
    "kv_whole": "K and V were held whole on chip: they do not fit in M. Stream them in blocks of block_kv rows.",
    "whole_row": "The whole row (all of S, or all of V) was held on chip: it does not fit in M. Stream it in blocks.",
    "two_pass": "The scores were read more than once: keep a running maximum and rescale instead, so that each score "
                "is read once.",
    "no_rescale": "The rescale factor alpha = exp(m_old - m_new) was forgotten: l and acc must be multiplied by it "
                  "whenever the running maximum grows.",
    "rescale_new": "The rescale factor was applied to the wrong quantity (the new block): it moves the OLD l and acc "
                   "to the new maximum; the new block is already relative to m_new.",
    "block_max": "The running maximum was replaced by the block's maximum: m must be max(m, rowmax(S_block)), "
                 "otherwise exp overflows when a later block has much smaller scores.",
    "no_max": "exp was taken of the scores without subtracting the running maximum: it overflows (or underflows to "
              "0 / 0) when the scores are large in magnitude. Subtract m_new = max(m, rowmax(S)) before exp.",
    "early_normalise": "The output was normalised before the last block: keep acc unnormalised and divide by l "
                       "once, after the last key block (deferred normalisation).",
    "top_left": "The causal mask is aligned top-left (j <= i): with N_q != N_k it must be bottom-right, "
                "j <= i + N_k - N_q.",
    "missing_D": "dS lacks the D_i term: dS = P * (dP - D_i) with D_i = rowsum(dO_i * O_i), computed in a pre-pass.",
    "dq_race": "dQ was read, updated and written back by several CTAs of one launch: they run at the same time, so "
               "updates are lost. Add into dQ with cta.atomic_add (FlashAttention-2 adds dQ with FP32 atomics).",
    "mean_combine": "The splits were combined without lse weights (a plain mean): weight each split's output by "
                    "exp(lse_s - lse), where lse = log sum_s exp(lse_s).",
    "empty_nan": "An empty split produced NaN (0 / 0): a split without keys must leave O_s = 0 and lse_s = -inf, "
                 "and the combine must give it weight 0.",
}

_I16, _I20, _I24, _I28 = " " * 16, " " * 20, " " * 24, " " * 28

#: ``{lab key: {mistake: [(old, new), ...]}}``: the edits that make each mistaken kernel from the reference.
EDITS = {
    "online_softmax": {
        "no_rescale": [("l[:] = alpha * l + p.sum()", "l[:] = l + p.sum()"),
                       ("acc[:] = alpha * acc + p @ V_j", "acc[:] = acc + p @ V_j")],
        "rescale_new": [("l[:] = alpha * l + p.sum()", "l[:] = l + alpha * p.sum()"),
                        ("acc[:] = alpha * acc + p @ V_j", "acc[:] = acc + alpha * (p @ V_j)")],
        "block_max": [("m_new = np.maximum(m, s.max())", "m_new = s.max()")],
        "no_max": [("m_new = np.maximum(m, s.max())", "m_new = np.maximum(m, 0.0)")],
        "early_normalise": [("acc[:] = alpha * acc + p @ V_j", f"acc[:] = alpha * acc + p @ V_j\n{_I16}acc[:] = acc / l"),
                            ('cta.store("O", acc / l, rows=(0, 1))', 'cta.store("O", acc * 1.0, rows=(0, 1))')],
        "two_pass": [("def kernel(", "def one_pass_kernel("), (None, '''

def kernel(cta, *, block_kv):
    N, d = cta.shape("V")
    with cta.buffer(1, fill=-np.inf, name="m") as m:
        for c0 in range(0, N, block_kv):                  # a first pass, for the maximum
            c1 = min(c0 + block_kv, N)
            with cta.load("S", rows=(c0, c1)) as s:
                m[:] = np.maximum(m, s.max())
        with cta.buffer(1, name="l") as l, cta.buffer((1, d), name="acc") as acc:
            for c0 in range(0, N, block_kv):              # the second pass: every score read again
                c1 = min(c0 + block_kv, N)
                with cta.load("S", rows=(c0, c1)) as s, cta.load("V", rows=(c0, c1)) as V_j:
                    p = np.exp(s - m)
                    l[:] = l + p.sum()
                    acc[:] = acc + p @ V_j
            cta.store("O", acc / l, rows=(0, 1))
            cta.store("lse", m + np.log(l), rows=(0, 1))
''')],
        "whole_row": [("def kernel(", "def streaming_kernel("), (None, '''

def kernel(cta, *, block_kv):
    with cta.load("S") as s, cta.load("V") as V:          # the whole row and all of V at once
        m = s.max()
        p = np.exp(s - m)
        cta.store("O", (p @ V / p.sum())[None, :], rows=(0, 1))
        cta.store("lse", (m + np.log(p.sum()))[None], rows=(0, 1))
''')],
    },
    "fa1_forward": {
        "no_rescale": [("l_new = alpha * l_i + P.sum(axis=1)", "l_new = l_i + P.sum(axis=1)"),
                       ("O_new = (alpha[:, None] * l_i[:, None] * O_i + P @ V_j) / l_new[:, None]",
                        "O_new = (l_i[:, None] * O_i + P @ V_j) / l_new[:, None]")],
        "kv_whole": [("def kernel(", "def streaming_kernel("), (None, '''

def kernel(cta, *, block_q, block_kv):
    with cta.load("K"), cta.load("V"):                    # K and V whole on chip, before the loops
        streaming_kernel(cta, block_q=block_q, block_kv=block_kv)
''')],
        "s_to_hbm": [("def kernel(", "def attention_kernel("), (None, '''

def kernel(cta, *, block_q, block_kv):
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    cta.allocate("S", (N, N_k))                           # the scores, N x N_k, in HBM
    for r0 in range(0, N, block_q):
        r1 = min(r0 + block_q, N)
        for c0 in range(0, N_k, block_kv):
            c1 = min(c0 + block_kv, N_k)
            with cta.load("Q", rows=(r0, r1)) as Q_i, cta.load("K", rows=(c0, c1)) as K_j:
                cta.store("S", (Q_i @ K_j.T) / np.sqrt(d), rows=(r0, r1), cols=(c0, c1))
    attention_kernel(cta, block_q=block_q, block_kv=block_kv)
''')],
    },
    "fa2_causal": {
        "top_left": [("last_key = np.arange(r0, r1)[:, None] + (N_k - N)", "last_key = np.arange(r0, r1)[:, None]"),
                     ("stop = min(N_k, r1 + N_k - N)", "stop = min(N_k, r1)")],
        "q_reread": [('with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:\n'
                      f'{_I24}S = scale * (Q_i @ K_j.T)',
                      'with cta.load("Q", rows=(r0, r1)) as Q_again, cta.load("K", rows=(c0, c1)) as K_j, \\\n'
                      f'{_I28}cta.load("V", rows=(c0, c1)) as V_j:\n{_I24}S = scale * (Q_again @ K_j.T)')],
        "early_normalise": [("acc[:] = alpha[:, None] * acc + P @ V_j",
                             f"acc[:] = alpha[:, None] * acc + P @ V_j\n{_I24}acc[:] = acc / np.where(l > 0, l, 1.0)"
                             "[:, None]"),
                            ('cta.store("O", acc / l_safe[:, None], rows=(r0, r1))',
                             'cta.store("O", acc * 1.0, rows=(r0, r1))')],
        "no_max": [("m_new = np.maximum(m, S.max(axis=1))", "m_new = np.maximum(m, 0.0)")],
        "kv_whole": [("def kernel(", "def streaming_kernel("), (None, '''

def kernel(cta, *, block_q, block_kv):
    with cta.load("K"), cta.load("V"):                    # K and V whole on chip, before the loops
        streaming_kernel(cta, block_q=block_q, block_kv=block_kv)
''')],
    },
    "backward": {
        "p_to_hbm": [('chip.allocate("D", (N,))', 'chip.allocate("D", (N,))\n    chip.allocate("P", (N, N_k))'),
                     ("dV_j += P.T @ dO_i", 'cta.store("P", P, rows=(r0, r1), cols=(c0, c1))\n'
                                            f"{_I16}dV_j += P.T @ dO_i")],
        "missing_D": [("dS = P * (dO_i @ V_j.T - D_i[:, None])", "dS = P * (dO_i @ V_j.T)")],
        "kv_whole": [('with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j, \\',
                      'with cta.load("K") as K_all, cta.load("V") as V_all, cta.load("K", rows=(c0, c1)) as K_j, '
                      'cta.load("V", rows=(c0, c1)) as V_j, \\')],
        "dq_race": [('cta.atomic_add("dQ", scale * (dS @ K_j), rows=(r0, r1))   # other CTAs add into the same rows',
                     f'with cta.load("dQ", rows=(r0, r1)) as dQ_i:\n{_I20}cta.store("dQ", dQ_i + scale * (dS @ K_j), '
                     'rows=(r0, r1))')],
    },
    "flash_decoding": {
        "mean_combine": [('cta.store("O", (w[:, :, None] * O_s).sum(axis=0) / total[:, None], rows=(0, g))',
                          'cta.store("O", O_s.mean(axis=0), rows=(0, g))')],
        "empty_nan": [('cta.store("O_part", acc / l_safe[:, None], rows=rows)',
                       'cta.store("O_part", acc / l[:, None], rows=rows)'),
                      ('cta.store("lse_part", np.where(seen, m + np.log(l_safe), -np.inf), rows=rows)',
                       'cta.store("lse_part", m + np.log(l), rows=rows)')],
    },
}

def mistake_text(lab_key: str, name: str) -> str:
    """The source of mistaken kernel ``name`` of lab ``lab_key``: the reference's text with the mistake's edits.

    Raises: KeyError for an unknown lab or mistake; ValueError when an edit's text does not occur exactly once."""
    text = solution_text(lab_key)
    for old, new in EDITS[lab_key][name]:
        if old is None:
            text += new
            continue
        if text.count(old) != 1:
            raise ValueError(f"the edit {old!r} of mistake {name} occurs {text.count(old)} times in lab {lab_key}'s "
                             "solution; it must occur once")
        text = text.replace(old, new)
    return text


@lru_cache(maxsize=None)
def mistake_functions(lab_key: str, name: str, names: tuple = ("kernel",)) -> dict:
    """The rebuilt functions ``names`` of a mistaken kernel (cached: the text never changes in a session)."""
    return rebuild_from_text(mistake_text(lab_key, name), names, CHIP_PROFILE, filename=f"<mistake {name}>")
