"""The labs' grader gives the right verdict on kernels it never saw: one or more kernels of every class, written here
as a reader would write them in a notebook cell.

Classes: cheats through the chip's internals (private attributes, gc, frames, read_back, the budget, the grader
itself), runtime cheats (a tile used after its block, copies kept on chip, storage made with np.zeros, numbers taken
out of tiles, endless loops, races between CTAs, one CTA doing the grid's work), better kernels (fewer elements than
the closed form), unsafe kernels (no running maximum, or a stale one), and honest kernels written differently from
the reference; and the feedback names no mistake that was not made.
"""
from __future__ import annotations

import gc  # noqa: F401  (a cheating kernel below names it)
import inspect
import linecache
import sys  # noqa: F401

import numpy as np
import pytest

import flashbook.labs.grader as grader_module  # a cheating kernel below names it too
from flashbook.labs import FEEDBACK, LABS, grade, grade_text, try_kernel
from flashbook.labs.mistakes import mistake_functions
from flashbook.labs.solutions import lab5_flash_decoding, solution_text

SEED = 11


def _best(gpu, *, batch, seqlen, num_q_heads, num_kv_heads, head_dim):
    return lab5_flash_decoding.choose_splits(gpu, batch=batch, seqlen=seqlen, num_q_heads=num_q_heads,
                                             num_kv_heads=num_kv_heads, head_dim=head_dim)


def _grade(lab, kernel, **kw):
    if LABS[lab].key == "flash_decoding" and "choose_splits" not in kw:
        kw["choose_splits"] = lab5_flash_decoding.choose_splits
    # the package's own mistaken kernels are rebuilt already; the public grade() has no such switch
    return (grader_module._grade if kw.get("rebuilt") else grade)(lab, kernel, seed=SEED, **kw)


# =====================================================================================================================
# 1. Cheats through the chip's internals: refused from the source, with the reason
# =====================================================================================================================

def cheat_private(cta, *, block_kv):
    hbm = cta._state._chip._hbm                              # the HBM dict, behind the chip's back
    cta.store("O", hbm["V"]._data[:1] * 0, rows=(0, 1))


def cheat_gc(cta, *, block_kv):
    for obj in gc.get_objects():
        if isinstance(obj, dict):
            pass


def cheat_frames(cta, *, block_kv):
    frame = sys._getframe(1)
    inputs = frame.f_locals["inputs"]
    cta.store("O", inputs["V"][:1], rows=(0, 1))


def cheat_inspect(cta, *, block_kv):
    caller = inspect.currentframe().f_back
    cta.store("lse", caller.f_locals["expected"]["lse"], rows=(0, 1))


def cheat_read_back(chip, *, num_splits, block_kv):
    q = chip.read_back("q")                                  # HBM for free
    chip.allocate("O_part", (num_splits, q.shape[1]))


def cheat_budget(cta, *, block_kv):
    cta.M = 10 ** 9                                          # a bigger SRAM
    with cta.load("S") as s, cta.load("V") as V:
        cta.store("O", (np.exp(s - s.max()) @ V)[None, :] / np.exp(s - s.max()).sum(), rows=(0, 1))


def cheat_sram_object(cta, *, block_kv):
    cta.sram.M = 10 ** 9


def cheat_patch_grader(cta, *, block_kv):
    grader_module.TOLERANCE = 1e9                            # every answer exact


def cheat_getattr(cta, *, block_kv):
    state = getattr(cta, "_" + "state")
    state.M = 10 ** 9


def cheat_dunder(cta, *, block_kv):
    for cls in ().__class__.__base__.__subclasses__():
        pass


def cheat_format(cta, *, block_kv):
    print("{0._state}".format(cta))


def cheat_eval(cta, *, block_kv):
    eval("cta._state")


def cheat_import(cta, *, block_kv):
    import numpy
    numpy.save("/tmp/x.npy", numpy.zeros(1))


def cheat_type(cta, *, block_kv):
    t = type(cta)
    t.M = property(lambda self: 10 ** 9)


def cheat_lambda(cta, *, block_kv):
    grab = lambda c: c._state                                # noqa: E731
    grab(cta)


def cheat_try(cta, *, block_kv):
    try:
        with cta.load("S") as s, cta.load("V") as V:         # does not fit: swallow the capacity error
            cta.store("O", (s @ V)[None, :], rows=(0, 1))
    except Exception:
        pass


_SECRET = {"answer": 1}


def cheat_global_object(cta, *, block_kv):
    cta.store("lse", _SECRET["answer"], rows=(0, 1))


LAB_OBJECT = LABS["online_softmax"]


def cheat_lab_object(cta, *, block_kv):
    print(LAB_OBJECT.oracle)


STATIC_CHEATS = [
    (cheat_private, "online_softmax", "'_state' starts with '_'"),
    (cheat_gc, "online_softmax", "gc is the module gc"),
    (cheat_frames, "online_softmax", "'_getframe' starts with '_'"),
    (cheat_inspect, "online_softmax", "inspect is the module inspect"),
    (cheat_read_back, "flash_decoding", ".read_back is not allowed"),
    (cheat_budget, "online_softmax", "setting or deleting an attribute (.M)"),
    (cheat_sram_object, "online_softmax", ".sram is not allowed"),
    (cheat_patch_grader, "online_softmax", "grader_module is the module flashbook.labs.grader"),
    (cheat_getattr, "online_softmax", "getattr is a Python builtin a kernel may not use"),
    (cheat_dunder, "online_softmax", "'__class__' starts with '_'"),
    (cheat_format, "online_softmax", ".format is not allowed"),
    (cheat_eval, "online_softmax", "eval is a Python builtin"),
    (cheat_import, "online_softmax", "import is not allowed"),
    (cheat_type, "online_softmax", "type is a Python builtin"),
    (cheat_lambda, "online_softmax", "a lambda is allowed only as a call's argument"),
    (cheat_try, "online_softmax", "try/except is not allowed"),
    (cheat_global_object, "online_softmax", "'_SECRET' starts with '_'"),
    (cheat_lab_object, "online_softmax", "LAB_OBJECT is a Lab from your notebook"),
]


@pytest.mark.parametrize("kernel, lab, reason", STATIC_CHEATS, ids=[c[0].__name__ for c in STATIC_CHEATS])
def test_a_cheat_through_the_chips_internals_fails_with_its_reason(kernel, lab, reason):
    r = _grade(lab, kernel)
    text = str(r)
    assert not r.passed and r.score == 0.0 and r.findings and r.shapes == []
    assert reason in text, text
    assert "The kernel was not run" in text and r.as_row("ada")["error"]


def test_the_cheats_left_the_grader_as_it_was():
    import flashbook.labs.grader as g
    assert g.TOLERANCE == 1e-9
    lab = LABS["online_softmax"]
    assert grade(lab, lab.reference, seed=1).passed


# =====================================================================================================================
# 2. Cheats the source allows: caught while the kernel runs
# =====================================================================================================================

def tile_after_block(cta, *, block_kv):
    N, d = cta.shape("V")
    with cta.load("S", rows=(0, N)) as s:
        pass
    m = s.max()                                              # the tile's SRAM was given back
    cta.store("lse", m[None], rows=(0, 1))


def hoard_copies(cta, *, block_q, block_kv):
    """Copies of every K and V block kept after their blocks, to read K and V once for all query blocks."""
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    K_all = None
    V_all = None
    for c0 in range(0, N_k, block_kv):
        c1 = min(c0 + block_kv, N_k)
        with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
            if K_all is None:
                K_all, V_all = K_j.copy(), V_j.copy()
            else:
                K_all, V_all = np.concatenate((K_all, K_j)), np.concatenate((V_all, V_j))
    for r0 in range(0, N, block_q):
        r1 = min(r0 + block_q, N)
        with cta.load("Q", rows=(r0, r1)) as Q_i:
            S = Q_i @ K_all.T / np.sqrt(d)
            m = S.max(axis=1)
            P = np.exp(S - m[:, None])
            l = P.sum(axis=1)
            cta.store("O", P @ V_all / l[:, None], rows=(r0, r1))
            cta.store("l", l, rows=(r0, r1))
            cta.store("m", m, rows=(r0, r1))


def hoard_in_zeros(cta, *, block_q, block_kv):
    """All of K copied into an array the kernel made itself."""
    N_k, d = cta.shape("K")
    K_all = np.zeros((N_k, d))
    for c0 in range(0, N_k, block_kv):
        c1 = min(c0 + block_kv, N_k)
        with cta.load("K", rows=(c0, c1)) as K_j:
            K_all[c0:c1] = K_j


def numbers_out_of_tiles(cta, *, block_kv):
    N, d = cta.shape("V")
    with cta.load("S", rows=(0, 1)) as s:
        first = float(s[0])                                  # a value leaving the chip's books
    cta.store("lse", np.full(1, first), rows=(0, 1))


def endless(cta, *, block_kv):
    c0 = 0
    while c0 < 10:
        c0 = c0 * 1                                          # never advances


def endless_in_helper(cta, *, block_kv):
    spin(3)


def spin(n):
    while n > 0:
        n = n + 0


def one_cta_does_all(cta, *, block_q, block_kv):
    """Lab 3: CTA 0 computes every query block, the others do nothing (the grid's parallelism lost)."""
    if cta.pid != 0:
        return
    N = cta.shape("Q")[0]
    for r0 in range(0, N, block_q):
        one_query_block(cta, r0, min(r0 + block_q, N), block_kv)


def one_query_block(cta, r0, r1, block_kv):
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    stop = min(N_k, r1 + N_k - N)
    with cta.buffer(r1 - r0, fill=-np.inf, name="m") as m, cta.buffer(r1 - r0, name="l") as l, \
            cta.buffer((r1 - r0, d), name="acc") as acc:
        if stop > 0:
            with cta.load("Q", rows=(r0, r1)) as Q_i:
                for c0 in range(0, stop, block_kv):
                    c1 = min(c0 + block_kv, N_k)
                    with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
                        S = (Q_i @ K_j.T) / np.sqrt(d)
                        S = np.where(np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None] + (N_k - N), S,
                                     -np.inf)
                        m_new = np.maximum(m, S.max(axis=1))
                        shift = np.where(np.isfinite(m_new), m_new, 0.0)
                        alpha = np.exp(m - shift)
                        P = np.exp(S - shift[:, None])
                        l[:] = alpha * l + P.sum(axis=1)
                        acc[:] = alpha[:, None] * acc + P @ V_j
                        m[:] = m_new
        l_safe = np.where(l > 0, l, 1.0)
        cta.store("O", acc / l_safe[:, None], rows=(r0, r1))
        cta.store("lse", np.where(l > 0, m + np.log(l_safe), -np.inf), rows=(r0, r1))


def test_a_tile_used_after_its_block_is_refused_with_a_clear_message():
    r = _grade("online_softmax", tile_after_block)
    assert not r.passed
    raised = r.shapes[0].raised
    assert raised.startswith("ReleasedTileError") and "S[0:37] was used (line" in raised
    assert "after its `with` block ended" in raised


def test_copies_kept_after_their_block_count_against_M():
    r = _grade("fa1_forward", hoard_copies)
    assert not r.passed
    assert all(s.raised and "SRAMCapacityError" in s.raised for s in r.shapes if s.label != "N=1, N_k=33")
    assert any("a copy kept on chip" in s.raised for s in r.shapes if s.raised)
    assert r.mistakes == set()


def test_a_small_copy_kept_after_its_block_is_counted_while_it_lives():
    from labcore.chip import CHIP_PROFILE, Chip, rebuild

    def keep_one(cta):
        with cta.load("K", rows=(0, 2)) as K_0:
            kept = K_0 * 2.0                                 # a temporary while K_0 is on chip
        with cta.load("K", rows=(2, 4)) as K_1:
            cta.store("O", kept + K_1, rows=(0, 2))          # used after its block: counted since that block ended

    chip = Chip(100, {"K": np.ones((4, 3))})
    chip.allocate("O", (2, 3))
    chip.launch(rebuild(keep_one, CHIP_PROFILE))
    assert chip.sram_peak == 12                              # K_1 (6) and the kept copy (6), not 6
    np.testing.assert_array_equal(chip.read_back("O"), np.full((2, 3), 3.0))

    def keep_unused(cta):
        with cta.load("K", rows=(0, 2)) as K_0:
            kept = K_0 * 2.0                                 # noqa: F841  (never used again: a dead register)
        with cta.load("K", rows=(2, 4)) as K_1:
            cta.store("O", K_1 * 1.0, rows=(0, 2))

    chip = Chip(100, {"K": np.ones((4, 3))})
    chip.allocate("O", (2, 3))
    chip.launch(rebuild(keep_unused, CHIP_PROFILE))
    assert chip.sram_peak == 6


def test_storage_a_kernel_makes_itself_counts_against_M():
    lab = LABS["fa1_forward"]
    r = _grade(lab.key, hoard_in_zeros)
    for shape, s in zip(lab.shapes, r.shapes):
        fits = (shape["N_k"] + lab.params["block_kv"]) * lab.d <= lab.M        # the whole K beside one K_j
        assert (s.raised is None) == fits
        assert fits or ("SRAMCapacityError" in s.raised and "np.zeros" in s.raised)


def test_a_number_cannot_be_taken_out_of_a_tile():
    r = _grade("online_softmax", numbers_out_of_tiles)
    assert all("cannot become a Python number" in s.raised for s in r.shapes)


@pytest.mark.parametrize("kernel", [endless, endless_in_helper])
def test_an_endless_loop_is_stopped_with_a_clear_message(kernel):
    r = _grade("online_softmax", kernel, max_steps=20_000)
    assert not r.passed
    assert all(s.raised.startswith("KernelLimitError: the kernel was stopped") for s in r.shapes)


def test_a_race_between_ctas_is_an_error_naming_the_rows():
    r = _grade("backward", mistake_functions("backward", "dq_race")["kernel"], rebuilt=True)
    raised = [s.raised for s in r.shapes if s.raised]
    assert raised and all(x.startswith("DataRaceError: data race in launch 'backward'") for x in raised)
    assert "cta.atomic_add" in raised[0] and r.mistakes == {"dq_race"}


def test_one_cta_doing_the_grids_work_fails_on_the_grid_rule():
    r = _grade("fa2_causal", one_cta_does_all)
    assert r.max_error < 1e-9 and not r.passed
    assert all(s.grid_problem and "outside its query block" in s.grid_problem for s in r.shapes
               if s.label != "N=1, N_k=70")


def test_the_program_of_lab_5_cannot_read_hbm_or_set_the_budget_at_run_time():
    from labcore.chip import Chip

    chip = Chip(64, {"q": np.ones((1, 8))})
    prog = chip.program()
    with pytest.raises(AttributeError):
        prog.read_back                                       # noqa: B018
    with pytest.raises(AttributeError, match="cannot set"):
        prog.M = 10
    with pytest.raises(AttributeError):
        chip.M = 10
    with pytest.raises(AttributeError):
        chip.ledger = None


# =====================================================================================================================
# 3. Better is not wrong
# =====================================================================================================================

def fa1_wider_key_blocks(cta, *, block_q, block_kv):
    """Algorithm 1 with B_c = 16 instead of the paper's 13: still within M = 400 (2 16 8 + 2 8 8 + 2 8), fewer
    passes over Q, O, l, m."""
    B_c = 16
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    for r0 in range(0, N, block_q):
        r1 = min(r0 + block_q, N)
        cta.store("O", np.zeros((r1 - r0, d)), rows=(r0, r1))
        cta.store("l", np.zeros(r1 - r0), rows=(r0, r1))
        cta.store("m", np.full(r1 - r0, -np.inf), rows=(r0, r1))
    for c0 in range(0, N_k, B_c):
        c1 = min(c0 + B_c, N_k)
        with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
            for r0 in range(0, N, block_q):
                r1 = min(r0 + block_q, N)
                with cta.load("Q", rows=(r0, r1)) as Q_i, cta.load("O", rows=(r0, r1)) as O_i, \
                        cta.load("l", rows=(r0, r1)) as l_i, cta.load("m", rows=(r0, r1)) as m_i:
                    S = Q_i @ K_j.T / np.sqrt(d)
                    m_new = np.maximum(m_i, S.max(axis=1))
                    P = np.exp(S - m_new[:, None])
                    scale_old = np.exp(m_i - m_new) * l_i
                    l_new = scale_old + P.sum(axis=1)
                    cta.store("O", (scale_old[:, None] * O_i + P @ V_j) / l_new[:, None], rows=(r0, r1))
                    cta.store("l", l_new, rows=(r0, r1))
                    cta.store("m", m_new, rows=(r0, r1))


def test_a_kernel_that_moves_fewer_elements_within_M_passes_and_is_told_by_how_much():
    r = _grade("fa1_forward", fa1_wider_key_blocks)
    assert r.passed, str(r)
    assert r.max_error < 1e-9 and all(s.sram_peak <= 400 for s in r.shapes)
    assert r.beats_by > 0 and r.beats_by == sum(s.closed_form - s.moved for s in r.shapes)
    assert f"moved {r.beats_by:,} fewer elements" in str(r)
    assert r.mistakes == set() and r.as_row()["traffic"] < 1


def test_finer_key_blocks_waste_less_on_the_causal_diagonal_and_pass():
    lab = LABS["fa2_causal"]

    def finer(cta, *, block_q, block_kv):
        inner = mistake_free_fa2()
        inner(cta, block_q=block_q, block_kv=4)

    r = grade(lab, lab.reference, seed=SEED, block_kv=4)
    base = grade(lab, lab.reference, seed=SEED)
    assert r.passed and base.passed
    assert sum(s.moved for s in r.shapes) < sum(s.moved for s in base.shapes)


def mistake_free_fa2():
    return LABS["fa2_causal"].reference


# =====================================================================================================================
# 4. Unsafe kernels fail on large scores
# =====================================================================================================================

def row_stale_max(cta, *, block_kv):
    """The maximum of the first block only, never updated."""
    N, d = cta.shape("V")
    with cta.buffer(1, name="m") as m, cta.buffer(1, name="l") as l, cta.buffer((1, d), name="acc") as acc:
        for c0 in range(0, N, block_kv):
            c1 = min(c0 + block_kv, N)
            with cta.load("S", rows=(c0, c1)) as s, cta.load("V", rows=(c0, c1)) as V_j:
                if c0 == 0:
                    m[:] = s.max()
                p = np.exp(s - m)
                l[:] = l + p.sum()
                acc[:] = acc + p @ V_j
        cta.store("O", acc / l, rows=(0, 1))
        cta.store("lse", m + np.log(l), rows=(0, 1))


def fa2_unsafe(cta, *, block_q, block_kv):
    """Lab 3 without a running maximum: exp of the raw scores."""
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    r0 = cta.pid * block_q
    r1 = min(r0 + block_q, N)
    with cta.buffer(r1 - r0, name="l") as l, cta.buffer((r1 - r0, d), name="acc") as acc:
        stop = min(N_k, r1 + N_k - N)
        if stop > 0:
            with cta.load("Q", rows=(r0, r1)) as Q_i:
                for c0 in range(0, stop, block_kv):
                    c1 = min(c0 + block_kv, N_k)
                    with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
                        P = np.exp(Q_i @ K_j.T / np.sqrt(d))
                        P = np.where(np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None] + (N_k - N), P, 0.0)
                        l[:] = l + P.sum(axis=1)
                        acc[:] = acc + P @ V_j
        seen = l > 0
        cta.store("O", acc / np.where(seen, l, 1.0)[:, None], rows=(r0, r1))
        cta.store("lse", np.where(seen, np.log(np.where(seen, l, 1.0)), -np.inf), rows=(r0, r1))


def backward_unsafe_text():
    """Lab 4's reference with P = exp(S) / exp(lse): the same number, until exp(S) overflows."""
    return solution_text("backward").replace("P = np.exp(scale * (Q_i @ K_j.T) - lse_i[:, None])",
                                             "P = np.exp(scale * (Q_i @ K_j.T)) / np.exp(lse_i[:, None])")


def split_unsafe_text():
    """Lab 5's reference whose split kernel takes exp of the raw scores (no running maximum)."""
    return solution_text("flash_decoding").replace("m_new = np.maximum(m, S.max(axis=1))",
                                                   "m_new = np.maximum(m, 0.0)")


def _large(r):
    return [s for s in r.shapes if "large" in s.label]


def test_a_stale_running_maximum_fails_on_large_scores_and_is_not_misnamed():
    r = _grade("online_softmax", row_stale_max)
    assert not r.passed
    assert all(s.ok for s in r.shapes if "large" not in s.label)
    assert not any(s.ok for s in _large(r))
    assert r.mistakes == set() and "differs from the reference on" in str(r)


def test_a_kernel_without_a_running_maximum_fails_on_large_scores_in_every_softmax_lab():
    r3 = _grade("fa2_causal", fa2_unsafe)
    assert not r3.passed and all(s.ok for s in r3.shapes if "large" not in s.label) and not _large(r3)[0].ok
    assert r3.mistakes == {"no_max"}                         # the same outputs as the named mistake: it is that one
    r4 = grade_text("backward", backward_unsafe_text(), seed=SEED)
    assert not r4.passed and all(s.ok for s in r4.shapes if "large" not in s.label) and not _large(r4)[0].ok
    r5 = grade_text("flash_decoding", split_unsafe_text(), seed=SEED)
    assert not r5.passed and all(s.ok for s in r5.shapes if "large" not in s.label) and not _large(r5)[0].ok
    assert r4.mistakes == set() and r5.mistakes == set()
    r1 = grader_module._grade("online_softmax", mistake_functions("online_softmax", "no_max")["kernel"], seed=SEED,
                             rebuilt=True)
    assert not r1.passed and r1.mistakes == {"no_max"}


def test_try_kernel_shows_a_large_score_shape_beside_the_reference():
    text = try_kernel("online_softmax", row_stale_max, large=True)
    assert "large scores" in text and "NaN or inf where the reference is finite" in text
    assert "O: largest error" in text


# =====================================================================================================================
# 5. Honest kernels written differently from the reference pass
# =====================================================================================================================

def row_update(m, l, acc, s, V_j):
    """Returns the new state: the running state as values, not buffers."""
    m_new = np.maximum(m, s.max())
    alpha = np.exp(m - m_new)
    p = np.exp(s - m_new)
    return m_new, alpha * l + p.sum(), alpha * acc + p @ V_j


def row_with_temporaries(cta, *, block_kv):
    """State in arrays made with np.full and np.zeros, replaced each block; a while loop; a helper."""
    N, d = cta.shape("V")
    m = np.full(1, -np.inf)
    l = np.zeros(1)
    acc = np.zeros((1, d))
    c0 = 0
    while c0 < N:
        c1 = min(c0 + block_kv, N)
        with cta.load("S", rows=(c0, c1)) as s, cta.load("V", rows=(c0, c1)) as V_j:
            m, l, acc = row_update(m, l, acc, s, V_j)
        c0 = c1
    cta.store("O", acc / l, rows=(0, 1))
    cta.store("lse", m + np.log(l), rows=(0, 1))


def row_logaddexp(cta, *, block_kv):
    """lse kept directly (log-sum-exp merged with np.logaddexp), O renormalised each block."""
    N, d = cta.shape("V")
    with cta.buffer(1, fill=-np.inf, name="lse") as lse, cta.buffer((1, d), name="O") as O:
        for j in range((N + block_kv - 1) // block_kv):
            c0, c1 = j * block_kv, min((j + 1) * block_kv, N)
            with cta.load("V", rows=(c0, c1)) as V_j, cta.load("S", rows=(c0, c1)) as s:
                b = s.max()
                block_lse = b + np.log(np.exp(s - b).sum())
                new = np.logaddexp(lse, block_lse)
                O[:] = np.exp(lse - new) * O + (np.exp(s - new) @ V_j)
                lse[:] = new
        cta.store("lse", lse, rows=(0, 1))
        cta.store("O", O, rows=(0, 1))


def fa2_einsum_tril(cta, *, block_q, block_kv):
    """Lab 3 with einsum, a mask from np.arange, and the state in np.zeros arrays updated in place."""
    N, d = cta.shape("Q")
    N_k = cta.shape("K")[0]
    r0, r1 = cta.pid * block_q, min((cta.pid + 1) * block_q, N)
    rows = r1 - r0
    m = np.full(rows, -np.inf)
    l = np.zeros(rows)
    acc = np.zeros((rows, d))
    keys = min(N_k, r1 + N_k - N)
    if keys > 0:
        with cta.load("Q", rows=(r0, r1)) as Q_i:
            for c0 in range(0, keys, block_kv):
                c1 = min(c0 + block_kv, N_k)
                with cta.load("K", rows=(c0, c1)) as K_j, cta.load("V", rows=(c0, c1)) as V_j:
                    S = np.einsum("id,jd->ij", Q_i, K_j) / np.sqrt(d)
                    visible = np.arange(c0, c1)[None, :] - np.arange(r0, r1)[:, None] <= N_k - N
                    S = np.where(visible, S, -np.inf)
                    m_new = np.maximum(m, S.max(axis=1))
                    finite = np.isfinite(m_new)
                    shift = np.where(finite, m_new, 0.0)
                    P = np.exp(S - shift[:, None])
                    alpha = np.exp(m - shift)
                    l[:] = alpha * l + P.sum(axis=1)
                    acc[:] = alpha[:, None] * acc + np.einsum("ij,jd->id", P, V_j)
                    m[:] = m_new
    out = np.where((l > 0)[:, None], acc / np.where(l > 0, l, 1.0)[:, None], 0.0)
    cta.store("O", out, rows=(r0, r1))
    cta.store("lse", np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -np.inf), rows=(r0, r1))


def decode_text_logaddexp():
    """Lab 5 with a combine that folds the splits one by one with np.logaddexp."""
    text = solution_text("flash_decoding")
    start = text.index("def combine(")
    end = text.index("def kernel(")
    combine = '''def combine(cta, *, num_splits):
    g, d = cta.shape("O")
    with cta.buffer(g, fill=-np.inf, name="lse") as lse, cta.buffer((g, d), name="O") as O:
        for s in range(num_splits):
            with cta.load("O_part", rows=(s * g, (s + 1) * g)) as O_s, \\
                    cta.load("lse_part", rows=(s * g, (s + 1) * g)) as lse_s:
                new = np.logaddexp(lse, lse_s)
                keep = np.where(np.isfinite(new), np.exp(lse - new), 0.0)
                add = np.where(np.isfinite(new), np.exp(lse_s - new), 0.0)
                O[:] = keep[:, None] * O + add[:, None] * O_s
                lse[:] = new
        cta.store("O", O, rows=(0, g))
        cta.store("lse", lse, rows=(0, g))


'''
    return text[:start] + combine + text[end:]


def backward_text_helpers():
    """Lab 4 with the dS computation in a helper and the loads in nested with blocks."""
    text = solution_text("backward")
    return text.replace("dS = P * (dO_i @ V_j.T - D_i[:, None])", "dS = softmax_grad(P, dO_i @ V_j.T, D_i)") + '''

def softmax_grad(P, dP, D_i):
    return P * (dP - D_i[:, None])
'''


HONEST = [("online_softmax", row_with_temporaries), ("online_softmax", row_logaddexp),
          ("fa2_causal", fa2_einsum_tril), ("fa1_forward", fa1_wider_key_blocks)]


@pytest.mark.parametrize("lab, kernel", HONEST, ids=[k.__name__ for _, k in HONEST])
def test_an_honest_kernel_written_differently_passes(lab, kernel):
    r = _grade(lab, kernel)
    assert r.passed, str(r)
    assert r.mistakes == set() and r.max_error < 1e-9


@pytest.mark.parametrize("lab, text", [("flash_decoding", decode_text_logaddexp),
                                       ("backward", backward_text_helpers)], ids=["decode_logaddexp", "bwd_helper"])
def test_an_honest_program_written_differently_passes(lab, text):
    r = grade_text(lab, text(), seed=SEED, **({"gpu": "H100"} if lab == "backward" else {}))
    assert r.passed, str(r)
    assert r.mistakes == set()


# =====================================================================================================================
# 6. Feedback is true: no kernel is told of a mistake it did not make
# =====================================================================================================================

def _named_mistakes():
    return [(key, name) for key, lab in LABS.items() for name in lab.mistakes]


OTHERS = {
    "online_softmax": [row_stale_max, row_with_temporaries, row_logaddexp, tile_after_block],
    "fa1_forward": [fa1_wider_key_blocks, hoard_copies, hoard_in_zeros],
    "fa2_causal": [fa2_einsum_tril, one_cta_does_all],
}


@pytest.mark.parametrize("key", list(LABS))
def test_no_kernel_is_named_for_a_mistake_it_did_not_make(key):
    """The reference, an endless kernel and this module's other kernels of the lab get no named mistake (each named
    mistaken kernel gets its own line and no other: tests/test_labs.py)."""
    lab = LABS[key]
    assert _grade(key, lab.reference).mistakes == set()
    for kernel in OTHERS.get(key, []):
        assert _grade(key, kernel).mistakes == set(), kernel.__name__
    if key == "online_softmax":
        assert _grade(key, endless, max_steps=20_000).mistakes == set()


def test_a_correct_kernel_is_not_told_to_compare_its_traffic():
    lab = LABS["fa1_forward"]
    text = str(grade(lab, lab.reference, seed=SEED))
    assert "compare your traffic" not in text and "No known mistake" not in text


# =====================================================================================================================
# 7. The starter, and what the check cell says after a paste
# =====================================================================================================================

def _cell(code: str, name: str, counter=[0]):
    """Define ``code`` as a notebook cell does (its source in linecache under a cell's file name); its namespace."""
    counter[0] += 1
    filename = f"<ipython-cell-{counter[0]}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    ns = {"np": np}
    exec(compile(code, filename, "exec"), ns)
    return ns


@pytest.mark.parametrize("key", list(LABS))
def test_the_starter_is_graded_not_yet_and_blamed_for_nothing_it_did_not_do(key):
    lab = LABS[key]
    ns = _cell(lab.starter, "kernel")
    r = grade(lab, ns["kernel"], seed=SEED, **({"choose_splits": ns["choose_splits"]} if "choose_splits" in ns else {}))
    text = str(r)
    assert not r.passed and r.starter and r.mistakes == set()
    assert "This is the starter kernel, unchanged" in text
    for wrong in ("loop order", "copy", "kept", "compare your traffic", "No known mistake"):
        assert wrong not in text, (wrong, text)


@pytest.mark.parametrize("key", list(LABS))
def test_the_reference_a_page_shows_passes_when_pasted_into_the_kernel_cell(key):
    lab = LABS[key]
    ns = _cell(solution_text(key), "kernel")
    kw = {"choose_splits": ns["choose_splits"]} if "choose_splits" in ns else {}
    r = grade(lab, ns["kernel"], seed=SEED, **kw)
    assert r.passed and not r.starter, str(r)
    assert grade_text(lab, solution_text(key), seed=SEED).passed


def test_grade_text_reads_a_notebook_and_runs_none_of_its_other_code(tmp_path):
    import json

    marker = tmp_path / "ran"
    cells = ["import numpy as np\nopen(%r, 'w').write('x')\n" % str(marker), "%matplotlib inline\nB = 16\n",
             "def kernel(cta, *, block_kv:\n    pass\n",                            # a cell that does not parse
             solution_text("online_softmax")]
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": []} for c in cells],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    r = grade_text("online_softmax", json.dumps(nb), filename="ada.ipynb", seed=SEED)
    assert r.passed and not marker.exists()
    nb["cells"] = nb["cells"][:3]
    r = grade_text("online_softmax", json.dumps(nb), filename="ada.ipynb")
    text = str(r)
    assert not r.passed and "defines no function named kernel" in text and "cell 3, line 1" in text
    assert "does not parse" in text


def test_report_rows_and_dicts_for_a_gradebook():
    from flashbook.labs import CSV_FIELDS

    lab = LABS["fa1_forward"]
    r = grade(lab, lab.reference)
    row = r.as_row("ada")
    assert tuple(row) == CSV_FIELDS
    assert row["student"] == "ada" and row["item"] == "lab2_fa1_forward" and row["passed"] is True
    assert row["score"] == 1.0 and row["traffic"] == 1.0 and row["error"] == "" and row["feedback"] == ""
    assert row["sram_peak"] == max(s.sram_peak for s in r.shapes) <= lab.M
    d = r.as_dict()
    assert d["seed"] is None and d["passed"] and len(d["shapes"]) == len(lab.shapes)
    assert "seed" not in str(r)                            # a drawn seed is not shown
    fixed = grade(lab, lab.reference, seed=5)
    assert "Inputs drawn from seed 5 (fixed by the caller)" in str(fixed) and fixed.as_dict()["seed"] == 5
    bad = grader_module._grade("online_softmax", mistake_functions("online_softmax", "no_rescale")["kernel"], seed=3,
                              rebuilt=True)
    row = bad.as_row()
    assert row["passed"] is False and 0 <= row["score"] < 1 and FEEDBACK["no_rescale"] in row["feedback"]


def test_the_public_grade_has_no_switch_that_skips_the_source_checks():
    """A notebook cannot ask grade() to run a kernel as given: ``rebuilt`` is not one of its keywords."""
    from flashbook.labs.cuda import grade as cuda_grade
    with pytest.raises(TypeError, match="rebuilt"):
        grade("online_softmax", LABS["online_softmax"].reference, rebuilt=True)
    assert "rebuilt" not in inspect.signature(grade).parameters
    assert "rebuilt" not in inspect.signature(cuda_grade).parameters
