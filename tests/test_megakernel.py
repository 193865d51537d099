"""Megakernel timelines (lecture §7-§8): the lecture's figures at its rounding, monotonicity, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labcore.hardware import get_gpu
from labcore.hbm import softmax_fusion_io
from labcore.forward_timeline import megakernel_schedule, timeline
from labcore.forward_work import TIMELINE_DEFAULTS, resolve_assumptions, work_items
from labcore.megakernel import compare_modes, mode_sensitivity, stall_bound_throughput
from labcore.waves import idle_sms_last_wave, tail_time, wave_count, wave_utilization
from labcore.models import get_model

US = 1e-6


@pytest.fixture(scope="module")
def h100():
    return compare_modes("Llama-3.2-1B", "H100")


@pytest.fixture(scope="module")
def b200():
    return compare_modes("Llama-3.2-1B", "B200")


# ---- waves and tails (lecture §8.1, exercise 12) -------------------------------------------------

def test_wave_examples():
    assert wave_count(192, 132) == 2
    assert round(wave_utilization(192, 132), 2) == 0.73
    assert round(wave_utilization(128, 132), 2) == 0.97
    assert idle_sms_last_wave(512, 148) == 80                    # 512 = 3 x 148 + 68
    assert tail_time(264, 132, 1.0) == 0.0
    assert tail_time(133, 132, 1.0) == pytest.approx(1 - 1 / 132)


def test_bigger_blocks_can_be_faster():
    # 16 rows -> 192 blocks (2 waves), 24 rows -> 128 blocks (1 wave): fewer, bigger blocks win
    t16 = wave_count(192, 132) * 16
    t24 = wave_count(128, 132) * 24
    assert t24 < t16


# ---- §7 fusion and the §8.1 back-of-envelope -----------------------------------------------------

def test_softmax_fusion_saves_4x():
    io = softmax_fusion_io(1, 1)
    assert (io["unfused_reads"], io["unfused_writes"], io["fused"]) == (7, 5, 2)
    assert round(softmax_fusion_io(4096, 4096)["ratio"], 1) == 4.0


def test_hazy_back_of_envelope_770_per_second():
    ideal = get_model("Llama-3.2-1B").decode_read_bytes() / get_gpu("H100").hbm_bandwidth
    assert round(stall_bound_throughput(ideal, 7 * 16, 5 * US), -1) == 770


def test_exercise_11_utilisation_62_percent():
    ideal = 2.48e9 / 3.35e12
    rate = stall_bound_throughput(ideal, 114, 4 * US)
    assert round(ideal * rate, 2) == 0.62


# ---- the H100 breakdown (lecture §8.3) -----------------------------------------------------------

def test_multi_kernel_has_114_kernels_81_reading(h100):
    mk = h100["multi"]
    assert mk.num_kernels == 114
    assert sum(1 for e in mk.events if e.parts["prologue"] > 0) == 81


def test_h100_breakdown_matches_lecture(h100):
    bd = {k: v / US for k, v in h100["multi"].breakdown().items()}
    assert round(bd["weights"] + bd["kv_cache"]) == 739
    assert round(bd["bandwidth_efficiency"]) == 82
    assert round(bd["launch_gaps"]) == 148
    assert round(bd["prologues"]) == 81
    assert round(bd["small_kernels"]) == 66
    assert abs(bd["tails"] - 49) <= 0.15 * 49                   # ours 44 us: see book/08
    assert sum(bd.values()) == pytest.approx(h100["multi"].total / US)


def test_h100_utilisation_63_vs_88(h100):
    assert abs(100 * h100["util_multi"] - 63) < 1.0
    assert abs(100 * h100["util_mega"] - 88) < 1.5              # ours 89.0%
    assert 1.3 <= h100["speedup"] <= 1.5
    mg = h100["mega"]
    assert sum(mg.breakdown().values()) == pytest.approx(mg.total)


def test_b200_46_percent_and_1_8x(b200):
    assert round(100 * b200["util_multi"]) == 46
    assert round(b200["speedup"], 1) == 1.8


def test_sensitivity_ranges():
    s = mode_sensitivity("Llama-3.2-1B", "H100")
    sp = np.concatenate([v["speedup"] for v in s.values()])
    gain = np.concatenate([v["util_gain"] for v in s.values()])
    assert 1.3 <= sp.min() and sp.max() <= 1.5                  # lecture: 1.3-1.5x
    assert 20 <= gain.min() and gain.max() < 29.5               # lecture: 20-29 points
    with pytest.raises(ValueError, match="varied"):
        mode_sensitivity(knobs={"sync": (1e-6,)}, sync=2e-6)


# ---- structure of the megakernel timeline --------------------------------------------------------

def test_megakernel_instructions_respect_dependencies(h100):
    mg = h100["mega"]
    a = mg.sm_arrays
    assert np.all(a["start"] >= a["ready"] - 1e-15)
    assert np.all(a["end"] > a["start"])
    assert a["end"].max() == pytest.approx(mg.total)
    lanes = {e.lane for e in mg.events}
    assert lanes == {"SM 0", "SM 1", "SM 2", "SM 3"}


def test_megakernel_never_beats_streaming_the_bytes(h100, b200):
    for c in (h100, b200):
        mg = c["mega"]
        assert mg.total >= mg.ideal / mg.assumptions["bandwidth_efficiency"]


def test_pdl_removes_gaps_and_prologues_but_not_tails():
    plain = timeline("Llama-3.2-1B", "H100")
    pdl = timeline("Llama-3.2-1B", "H100", pdl=True)
    mega = timeline("Llama-3.2-1B", "H100", mode="megakernel")
    assert mega.total < pdl.total < plain.total
    assert pdl.breakdown()["tails"] == pytest.approx(plain.breakdown()["tails"])
    assert pdl.breakdown()["prologues"] <= TIMELINE_DEFAULTS["prologue"]   # at most the first kernel's


def test_other_models_run():
    for m in ("Llama-3.1-8B", "GPT-2-medium"):
        c = compare_modes(m, "H100")
        assert 0 < c["util_multi"] < c["util_mega"] <= 1


def _reference_megakernel(model, gpu, **assumptions):
    """The megakernel model as the module docstring states it, one instruction at a time in plain Python
    (slow, obvious): the streaming recurrence T = max(T_prev + b / r, resume_J + B / r) with the loader
    capped at C bytes ahead, no closed forms and no batching. Returns every instruction's end time."""
    g = get_gpu(gpu)
    a = resolve_assumptions(**assumptions)
    ops = work_items(get_model(model), g, mode="megakernel", **assumptions)
    num_sms, C = g.num_sms, a["pages"] * a["page_bytes"]
    r = g.hbm_bandwidth * a["bandwidth_efficiency"] / num_sms
    E_sm, T_sm = [0.0] * num_sms, [a["prologue"]] * num_sms
    B_sm = [[] for _ in range(num_sms)]        # bytes loaded through each of the SM's slots
    caps = [[] for _ in range(num_sms)]        # each slot's loader cap: bytes through the slot before it + C
    resume = [[] for _ in range(num_sms)]      # cumulative latest loader-resume time per slot
    ends, g_idx = [], 0
    for i, o in enumerate(ops):
        if i == 0:
            ready = [0.0] * o.blocks
        elif o.deps == "chunks":
            prev = ends[-ops[i - 1].blocks:]
            n = a["down_chunks"]
            bounds = [round(ops[i - 1].blocks * c / n) for c in range(n + 1)]
            chunk_ready = [max(prev[bounds[c]:bounds[c + 1]]) + a["sync"] for c in range(n)]
            per = o.blocks // n
            ready = [chunk_ready[min(k // per, n - 1)] for k in range(o.blocks)]
        else:
            ready = [max(ends[-ops[i - 1].blocks:]) + a["sync"]] * o.blocks
        b = (o.weight_bytes + o.kv_bytes) / o.blocks
        for k in range(o.blocks):
            s = g_idx % num_sms
            g_idx += 1
            B_prev = B_sm[s][-1] if B_sm[s] else 0.0
            B_now = B_prev + b
            start = max(E_sm[s], ready[k])
            cap = B_prev + C                                     # this slot's loader cap while it waits
            resume[s].append(max(resume[s][-1] if resume[s] else -np.inf, start - cap / r))
            B_sm[s].append(B_now)
            caps[s].append(cap)
            J = max((j for j, c in enumerate(caps[s]) if c < B_now), default=-1)   # latest binding slot
            bound = resume[s][J] + B_now / r if J >= 0 else -np.inf
            T = max(T_sm[s] + b / r, bound)
            E = max(start, T) + a["instruction_overhead"]
            T_sm[s], E_sm[s] = T, E
            ends.append(E)
    return np.array(ends)


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{}, {"pages": 2, "sync": 2e-6}, {"rows_per_block": 64, "bandwidth_efficiency": 0.7}])
def test_megakernel_matches_the_plain_recurrence(kw):
    """The event loop (each SM's loader passing its holds) is the streaming recurrence written another way."""
    g = get_gpu("H100").with_(num_sms=8)            # 8 SMs keep the plain-Python reference quick
    ref = _reference_megakernel("GPT-2-medium", g, **kw)
    fast = timeline("GPT-2-medium", g, mode="megakernel", **kw).sm_arrays["end"]
    np.testing.assert_allclose(fast, ref, rtol=1e-12, atol=1e-15)


def test_schedule_is_the_timeline_and_read_only():
    """megakernel_schedule is what timeline draws; its cached arrays cannot be changed by a caller."""
    sch = megakernel_schedule("Llama-3.2-1B", "H100", sync=2e-6)
    tl = timeline("Llama-3.2-1B", "H100", mode="megakernel", sync=2e-6)
    assert sch["end"].max() == tl.total
    np.testing.assert_array_equal(sch["start"], tl.sm_arrays["start"])
    assert sch["end"].size == sum(o.blocks for o in tl.work) == 32080
    assert sch["sm_bytes"].size == get_gpu("H100").num_sms
    with pytest.raises(ValueError, match="read-only"):
        sch["end"][0] = 0.0


def test_batched_variants_equal_single_runs():
    """Each megakernel and multi-kernel run of mode_sensitivity equals its own timeline."""
    knobs = {"sync": (0.0, 2e-6), "bandwidth_efficiency": (0.8,), "instruction_overhead": (1e-6,)}
    s = mode_sensitivity("Llama-3.2-1B", "H100", knobs=knobs)
    for name, values in knobs.items():
        for v, mega, multi in zip(values, s[name]["mega"], s[name]["multi"]):
            assert mega == pytest.approx(timeline("Llama-3.2-1B", "H100", mode="megakernel", **{name: v}).total,
                                         rel=1e-12)
            assert multi == pytest.approx(timeline("Llama-3.2-1B", "H100", **{name: v}).total, rel=1e-12)
    bd = timeline("Llama-3.2-1B", "H100", mode="megakernel").breakdown()
    assert bd["sync_waits"] > 0 and bd["instruction_overhead"] > 0


# ---- monotonicity: changing one assumption moves only what it should -----------------------------

@settings(max_examples=25, deadline=None)
@given(st.floats(0, 5e-6), st.floats(0, 5e-6))
def test_larger_launch_gap_never_speeds_up_multi_kernel(g1, g2):
    lo, hi = sorted((g1, g2))
    assert timeline("Llama-3.2-1B", "H100", launch_gap=lo).total <= timeline("Llama-3.2-1B", "H100", launch_gap=hi).total


@settings(max_examples=5, deadline=None)
@given(st.floats(0, 5e-6))
def test_megakernel_ignores_launch_gap(g):
    base = timeline("Llama-3.2-1B", "B200", mode="megakernel")
    other = timeline("Llama-3.2-1B", "B200", mode="megakernel", launch_gap=g)
    assert other.total == base.total


@pytest.mark.parametrize("knob", ["prologue", "sync", "instruction_overhead"])
def test_megakernel_costs_are_monotone(knob):
    ts = [timeline("Llama-3.2-1B", "B200", mode="megakernel", **{knob: v}).total for v in (0.0, 1e-6, 3e-6)]
    assert ts[0] <= ts[1] <= ts[2]


def test_faster_hbm_speeds_up_both_modes():
    g = get_gpu("H100")
    for mode in ("multi-kernel", "megakernel"):
        slow = timeline("Llama-3.2-1B", g, mode=mode).total
        fast = timeline("Llama-3.2-1B", g.with_(hbm_bandwidth=2 * g.hbm_bandwidth), mode=mode).total
        assert fast < slow


# ---- bad input -----------------------------------------------------------------------------------

def test_bad_input_is_refused():
    g = get_gpu("H100")
    with pytest.raises(ValueError, match="hbm_bandwidth"):
        timeline("Llama-3.2-1B", g.with_(hbm_bandwidth=0.0))
    with pytest.raises(ValueError, match="hbm_bandwidth"):
        timeline("Llama-3.2-1B", g.with_(hbm_bandwidth=-3.35e12))
    with pytest.raises(ValueError, match="num_sms"):
        timeline("Llama-3.2-1B", g.with_(num_sms=0))
    with pytest.raises(ValueError, match="known presets"):
        timeline("Llama-9B", "H100")
    with pytest.raises(ValueError, match="mode"):
        timeline("Llama-3.2-1B", "H100", mode="fused")
    with pytest.raises(TypeError, match="unknown assumption"):
        timeline("Llama-3.2-1B", "H100", launch_gapp=1e-6)
    with pytest.raises(ValueError, match="bandwidth_efficiency"):
        timeline("Llama-3.2-1B", "H100", bandwidth_efficiency=1.5)
    with pytest.raises(ValueError, match="sync"):
        timeline("Llama-3.2-1B", "H100", mode="megakernel", sync=-1e-6)
    with pytest.raises(ValueError, match="rows_per_block"):
        timeline("Llama-3.2-1B", "H100", rows_per_block=0)
    with pytest.raises(ValueError, match="sms"):
        wave_utilization(10, 0)
    with pytest.raises(ValueError, match="stall"):
        stall_bound_throughput(1e-3, 10, -1.0)


@pytest.mark.parametrize("kw, match", [
    (dict(down_chunks=513), "has 512 with rows_per_block=16, got down_chunks=513"),
    (dict(rows_per_block=4096), "has 2 with rows_per_block=4096, got down_chunks=4"),
    (dict(down_chunks=10 ** 6), "down_chunks"),                     # refused before any memory is touched
    (dict(attention_splits=10 ** 5), "attention_splits=100000 for kv_len=128"),
])
def test_megakernel_structure_out_of_range(kw, match):
    """Inputs that would leave a down-projection chunk nothing to wait on, or a split no key, are refused."""
    with pytest.raises(ValueError, match=match):
        timeline("Llama-3.2-1B", "H100", mode="megakernel", **kw)


def test_sensitivity_knobs_are_checked():
    with pytest.raises(ValueError, match="non-empty tuple"):
        mode_sensitivity(knobs={"sync": ()})
    with pytest.raises(TypeError, match="dict"):
        mode_sensitivity(knobs=["sync"])
    with pytest.raises(TypeError, match="number"):
        mode_sensitivity(knobs={"attention_splits": (None, 4)})   # would have been a NaN in ``values``


# ---- breakdown terms: never negative, always the total ---------------------------------------------

def test_small_kernels_term_is_not_negative_without_small_kernel_cost():
    """The case found by a reader: small_kernel=0 gave small_kernels = -4.6e-8 s (rounding)."""
    bd = timeline("Llama-3.2-1B", "H100", mode="multi-kernel", small_kernel=0).breakdown()
    assert bd["small_kernels"] == 0.0
    assert min(bd.values()) >= 0.0


_TIMES = st.floats(0.0, 2e-5, allow_nan=False)


@st.composite
def _assumptions(draw):
    """Any assumptions a slider or a caller may set, within their allowed ranges (kept to sizes that
    simulate quickly)."""
    kv_len = draw(st.integers(0, 4096))
    a = {k: draw(_TIMES) for k in ("launch_gap", "prologue", "small_kernel", "sync", "instruction_overhead")}
    a |= {"bandwidth_efficiency": draw(st.floats(0.05, 1.0)), "rows_per_block": draw(st.integers(8, 128)),
          "pages": draw(st.integers(1, 32)), "page_bytes": draw(st.integers(256, 64 * 1024)),
          "down_chunks": draw(st.integers(1, 8)), "kv_len": kv_len,
          "attention_splits": draw(st.none() | st.integers(1, max(kv_len, 1))),
          "pdl": draw(st.booleans()), "dtype_bytes": draw(st.sampled_from((1, 2, 4)))}
    return a


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(("GPT-2-medium", "Llama-3.2-1B")), st.sampled_from(("A100", "H100", "B200")),
       st.sampled_from(("multi-kernel", "megakernel")), st.booleans(), _assumptions())
@pytest.mark.slow   # a property test over the model
def test_breakdown_terms_are_non_negative_and_sum_to_the_total(model, gpu, mode, decompose, a):
    tl = timeline(model, gpu, mode=mode, decompose=decompose, **a)
    bd = tl.breakdown()
    negative = {k: v for k, v in bd.items() if not v >= 0.0}
    assert not negative, f"negative causes {negative} at {a}"
    assert sum(bd.values()) == pytest.approx(tl.total, rel=1e-9)
