"""cudalab, the CUDA labs' harness: what a simulated launch counts and what it reports.

Kernels here are small ``@cuda.jit`` functions written as a reader would; each test checks a count or a finding
against a value worked out by hand or a labcore closed form.
"""
from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest

import cudalab
from cudalab import Device, KernelFailure, KernelTimeout
from cudalab.timing import modelled_time
from labcore.hardware import get_gpu
from labcore.hbm import flash_forward_io
from labcore.waves import per_cta_bandwidth_cap
from numba import cuda, float32

THREADS = 8


@cuda.jit
def copy_rows(A, B, n):
    i = cuda.grid(1)
    if i < n:
        for k in range(A.shape[1]):
            B[i, k] = A[i, k]


@cuda.jit
def reversed_in_shared(A, B):
    buf = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    buf[t] = A[t]
    cuda.syncthreads()
    B[t] = buf[THREADS - 1 - t]


@cuda.jit
def reversed_without_barrier(A, B):
    buf = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    buf[t] = A[t]
    B[t] = buf[THREADS - 1 - t]


@cuda.jit
def overwrite_while_read(A, B):
    buf = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    buf[t] = A[t]
    cuda.syncthreads()
    B[t] = buf[(t + 1) % THREADS]
    buf[t] = 0.0


@cuda.jit
def sum_plain(A, total):
    i = cuda.grid(1)
    total[0] += A[i]


@cuda.jit
def sum_atomic(A, total):
    i = cuda.grid(1)
    cuda.atomic.add(total, 0, A[i])


@cuda.jit
def early_return(A, B):
    buf = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    if t >= 6:
        return
    buf[t] = A[t]
    cuda.syncthreads()
    B[t] = buf[t]


@cuda.jit
def barrier_in_branch(A, B):
    t = cuda.threadIdx.x
    if t < 4:
        cuda.syncthreads()
    else:
        cuda.syncthreads()
    B[t] = A[t]


@cuda.jit
def reads_unwritten_shared(A, B):
    buf = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    if t < 4:
        buf[t] = A[t]
    cuda.syncthreads()
    B[t] = buf[t]


@cuda.jit
def big_shared(A, B):
    buf = cuda.shared.array((64, 64), float32)
    t = cuda.threadIdx.x
    buf[t, 0] = A[t]
    cuda.syncthreads()
    B[t] = buf[t, 0]


@cuda.jit
def big_local(A, B):
    row = cuda.local.array(512, float32)
    t = cuda.threadIdx.x
    row[0] = A[t]
    B[t] = row[0]


@cuda.jit
def spins(A, B):
    x = 0
    while A.shape[0] > 0:
        x += 1
    B[0] = x


@cuda.jit
def out_of_bounds(A, B):
    t = cuda.threadIdx.x
    B[t] = A[t + 1]


@cuda.jit
def divides_by_zero(A, B):
    t = cuda.threadIdx.x
    B[t] = 1.0 / (t - t)


@cuda.jit
def ieee_math(A, B):
    B[0] = math.exp(A[0])
    B[1] = math.log(A[1])
    B[2] = math.sqrt(A[2])


def _device(**kw):
    return Device(**kw)


#: On a machine with an NVIDIA GPU (bench/gpu/run_device.sh runs these tests there) the simulator is not in use.
without_gpu = pytest.mark.skipif(not cudalab.simulator(), reason="a GPU is present: numba compiles for it")
on_gpu = pytest.mark.skipif(cudalab.simulator(), reason="needs an NVIDIA GPU (numba-cuda's simulator is in use)")


@without_gpu
def test_the_simulator_is_on_without_a_gpu():
    assert cudalab.simulator() is True
    assert cudalab.gpu_present() is False


def test_every_element_read_and_written_is_counted_per_array_and_per_block():
    dev = _device()
    dev.upload("A", np.arange(30.0).reshape(10, 3))
    dev.zeros("B", (10, 3))
    rec = dev.launch(copy_rows, 3, 4, dev["A"], dev["B"], 10)
    assert rec.by_tensor() == {"A": {"read": 30, "write": 0}, "B": {"read": 0, "write": 30}}
    assert rec.per_block[(2, 0, 0)]["reads"] == {"A": 6}      # block 2 holds rows 8 and 9 only
    assert np.array_equal(dev.read("B"), np.arange(30.0).reshape(10, 3))
    assert dev.ledger.by_tensor() == rec.by_tensor()


def test_numpy_arrays_are_counted_under_the_kernels_parameter_names():
    A, B = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    rec = cudalab.launch(reversed_in_shared, 1, THREADS, A, B)
    assert rec.reads == {"A": 8} and rec.writes == {"B": 8}
    assert np.array_equal(B, A[::-1]) and rec.races == [] and rec.findings == []
    assert rec.shared == {"buf": 32} and rec.shared_bytes == 32


def test_a_missing_barrier_is_a_race_on_every_run_whatever_the_order():
    for seed in range(3):
        A, B = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
        rec = cudalab.launch(reversed_without_barrier, 1, THREADS, A, B, order="shuffled", seed=seed)
        kinds = {(r.kind, r.array, r.space) for r in rec.races}
        assert ("read after write", "buf", "shared") in kinds
        msg = rec.races[0].message()
        assert "buf" in msg and "line" in msg and "cuda.syncthreads()" in msg


def test_overwriting_what_another_thread_reads_is_a_race_whichever_thread_runs_first():
    for seed in range(3):
        A, B = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
        rec = cudalab.launch(overwrite_while_read, 1, THREADS, A, B, seed=seed)
        # the read and the overwrite are unordered: reported as write-after-read or read-after-write by the
        # thread that came second, never missed
        assert rec.races and {r.array for r in rec.races} == {"buf"}
        assert {r.kind for r in rec.races} <= {"write after read", "read after write"}


def test_blocks_adding_into_one_element_race_unless_the_add_is_atomic():
    A = np.ones(16, dtype=np.float32)
    plain = cudalab.launch(sum_plain, 4, 4, A, np.zeros(1, dtype=np.float32))
    assert any(r.space == "global" and r.array == "total" for r in plain.races)
    total = np.zeros(1, dtype=np.float32)
    atomic = cudalab.launch(sum_atomic, 4, 4, A, total)
    assert atomic.races == [] and total[0] == 16.0
    assert atomic.atomics == {"total": 16} and atomic.atomic_bytes == {"total": 64}
    assert atomic.writes == {} and atomic.reads == {"A": 16}     # atomics are counted apart from plain traffic


def test_a_barrier_some_threads_skip_is_reported():
    A, B = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    rec = cudalab.launch(early_return, 1, THREADS, A, B)
    assert [f.kind for f in rec.findings] == ["barrier"]
    assert "6 of the 8 threads" in rec.findings[0].message
    rec = cudalab.launch(barrier_in_branch, 1, THREADS, A, B)
    assert rec.findings and "different" in rec.findings[0].message


def test_reading_shared_memory_nobody_wrote_is_reported_and_reads_nan():
    A, B = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    rec = cudalab.launch(reads_unwritten_shared, 1, THREADS, A, B)
    assert [f.kind for f in rec.findings] == ["uninitialised"]
    assert np.isnan(B[4:]).all() and np.array_equal(B[:4], A[:4])


def test_shared_memory_and_local_arrays_are_checked_against_their_budgets():
    A, B = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    rec = cudalab.launch(big_shared, 1, THREADS, A, B, shared_budget=2048)
    assert rec.shared_bytes == 64 * 64 * 4 and any(f.kind == "shared" for f in rec.findings)
    rec = cudalab.launch(big_local, 1, THREADS, A, B, local_budget=256)
    assert rec.local_bytes == 2048 and any(f.kind == "local" for f in rec.findings)


def test_a_kernel_that_never_ends_is_stopped_at_the_time_limit():
    rec = cudalab.launch(spins, 1, 2, np.ones(1, dtype=np.float32), np.zeros(1, dtype=np.float32), time_limit=0.5)
    assert isinstance(rec.error, KernelTimeout)
    assert "loop" in str(rec.error)


def test_a_kernel_error_names_the_thread_the_block_and_the_line():
    rec = cudalab.launch(out_of_bounds, 1, THREADS, np.ones(8, dtype=np.float32), np.zeros(8, dtype=np.float32))
    assert isinstance(rec.error, KernelFailure) and isinstance(rec.error.cause, IndexError)
    assert "out-of-bounds read of A" in str(rec.error) and "thread (7, 0, 0)" in str(rec.error)
    rec = cudalab.launch(divides_by_zero, 1, 2, np.ones(2, dtype=np.float32), np.zeros(2, dtype=np.float32))
    assert "ZeroDivisionError" in str(rec.error) and "line" in str(rec.error)


def test_math_gives_ieee_results_as_on_a_gpu():
    B = np.zeros(3, dtype=np.float32)
    rec = cudalab.launch(ieee_math, 1, 1, np.array([1000.0, 0.0, -1.0], dtype=np.float32), B)
    assert rec.error is None
    assert B[0] == np.inf and B[1] == -np.inf and np.isnan(B[2])


def test_blocks_run_in_the_order_asked():
    dev = _device(order="reversed")
    dev.upload("A", np.zeros((4, 1)))
    dev.zeros("B", (4, 1))
    rec = dev.launch(copy_rows, 4, 1, dev["A"], dev["B"], 4)
    assert rec.order == [(3, 0, 0), (2, 0, 0), (1, 0, 0), (0, 0, 0)]
    shuffled = _device(order="shuffled", seed=1)
    shuffled.upload("A", np.zeros((16, 1)))
    shuffled.zeros("B", (16, 1))
    rec = shuffled.launch(copy_rows, 16, 1, shuffled["A"], shuffled["B"], 16)
    assert sorted(rec.order) == [(b, 0, 0) for b in range(16)] and rec.order != sorted(rec.order)


@pytest.mark.parametrize("bad, err", [
    (dict(grid=0), ValueError), (dict(grid=2.5), TypeError), (dict(block=2048), ValueError),
    (dict(grid=(1, 2, 3, 4)), ValueError), (dict(block="8"), TypeError),
])
def test_bad_launch_configurations_are_refused(bad, err):
    dev = _device()
    dev.upload("A", np.zeros((4, 1)))
    dev.zeros("B", (4, 1))
    cfg = {"grid": 1, "block": 4, **bad}
    with pytest.raises(err):
        dev.launch(copy_rows, cfg["grid"], cfg["block"], dev["A"], dev["B"], 4)


def test_bad_arguments_are_refused_with_clear_errors():
    dev = _device()
    with pytest.raises(TypeError, match="takes 3 arguments"):
        dev.launch(copy_rows, 1, 1, 1, 2)
    with pytest.raises(TypeError, match="must be a device array"):
        dev.launch(copy_rows, 1, 1, "A", "B", 1)
    with pytest.raises(TypeError, match="numeric"):
        dev.upload("S", np.array(["a", "b"]))
    dev.upload("S", np.zeros(2))
    with pytest.raises(ValueError, match="already holds"):
        dev.upload("S", np.zeros(2))
    with pytest.raises(KeyError, match="no array"):
        dev.read("T")
    with pytest.raises(ValueError, match="order"):
        Device(order="backwards")
    with pytest.raises(ValueError, match="too large"):
        dev.zeros("huge", (10 ** 5, 10 ** 5))
    with pytest.raises(TypeError, match="C-contiguous"):
        cudalab.launch(copy_rows, 1, 1, np.zeros((4, 2), dtype=np.float32)[:, :1], np.zeros((4, 1), np.float32), 4)


def test_the_flash_forward_reference_moves_exactly_the_closed_form():
    from flashbook.labs.cuda import ref_forward as R

    rng = np.random.default_rng(0)
    for N, N_k, causal in ((37, 29, True), (20, 45, False)):
        dev = _device(order="shuffled", seed=2)
        for name, n in (("Q", N), ("K", N_k), ("V", N_k)):
            dev.upload(name, rng.standard_normal((n, R.HEAD_DIM)))
        dev.empty("O", (N, R.HEAD_DIM))
        dev.empty("lse", (N,))
        dev.empty("scratch", (N, N_k))
        dev.launch(R.fa2_forward, -(-N // R.BLOCK_Q), R.BLOCK_Q, *(dev[x] for x in ("Q", "K", "V", "O", "lse",
                                                                                   "scratch")),
                   N, N_k, 1 / math.sqrt(R.HEAD_DIM), causal)
        assert dev.ledger.by_tensor() == flash_forward_io(N, R.HEAD_DIM, N_k=N_k, block_q=R.BLOCK_Q,
                                                          block_kv=R.BLOCK_KV, causal=causal, by_tensor=True)


def test_the_modelled_time_charges_bytes_in_waves_and_a_launch_overhead():
    A, B = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    rec = cudalab.launch(reversed_in_shared, 1, THREADS, A, B)
    t = modelled_time([rec], "A100", flops=[0], per_cta_cap=1e9, kernel_overhead=0.0)
    assert t["launches"][0]["bytes"] == 64 and t["total"] == pytest.approx(64 / 1e9)
    assert t["launches"][0]["bound"] == "memory"
    with pytest.raises(ValueError, match="flops"):
        modelled_time([rec], "A100", flops=[1, 2])
    with pytest.raises(ValueError, match="at least one"):
        modelled_time([], "A100")
    with pytest.raises(ValueError, match="per_cta_cap"):
        modelled_time([rec], "A100", per_cta_cap=0)


def _record(ctas: int, nbytes: int, shared_bytes: int = 0, threads: int = 128) -> cudalab.Launch:
    """A launch record of ``ctas`` blocks that each read ``nbytes`` bytes of one FP32 array (no simulation)."""
    per_block = {b: {"reads": {"X": nbytes // 4}, "writes": {}, "atomics": {}} for b in range(ctas)}
    return cudalab.Launch(name="k", grid=(ctas, 1, 1), block=(threads, 1, 1), per_block=per_block,
                          shared_bytes=shared_bytes, threads=threads, itemsize={"X": 4})


def test_the_modelled_time_shares_hbm_among_the_running_ctas():
    """The physical rule, against the arithmetic by hand: every CTA resident at once gets min(cap, B / CTAs)."""
    g = get_gpu("H100")
    cap, nbytes = per_cta_bandwidth_cap(g), 1 << 20
    few = modelled_time([_record(4, nbytes)], g, kernel_overhead=0.0)
    assert few["total"] == pytest.approx(nbytes / cap, rel=1e-9)          # 4 CTAs: each at its cap
    many = _record(g.num_sms, nbytes)
    t = modelled_time([many], g, kernel_overhead=0.0)
    assert t["total"] == pytest.approx(g.num_sms * nbytes / g.hbm_bandwidth, rel=1e-9)   # HBM shared by all
    assert t["launches"][0]["waves"] == 1 and t["launches"][0]["hbm_bytes"] == g.num_sms * nbytes
    # a block too big for two per SM: the slots halve, the CTAs no longer all run at once
    big = modelled_time([_record(3 * g.num_sms, nbytes, shared_bytes=g.smem_per_sm // 2 + 4096)], g,
                        kernel_overhead=0.0)["launches"][0]
    assert big["ctas_per_sm"] == 1 and big["waves"] == 3
    assert big["time"] == pytest.approx(3 * g.num_sms * nbytes / g.hbm_bandwidth, rel=1e-6)


@without_gpu
def test_the_gpu_face_says_there_is_no_gpu():
    from cudalab.gpu import GpuDevice

    with pytest.raises(RuntimeError, match="simulator"):
        GpuDevice()


@on_gpu
def test_on_a_gpu_every_reference_compiles_passes_and_is_timed():
    from flashbook.labs.cuda import CUDA_LABS, grade

    for key, lab in CUDA_LABS.items():
        r = grade(lab, *lab.reference.values(), seed=3, gpu="H200")
        assert r.passed, key
        assert r.measured is not None and r.measured["repeats"] >= 20, key
        assert all(0 < s < 1e-2 for s in r.measured["launches"]), (key, r.measured)


@cuda.jit
def huge_local(A, B):
    row = cuda.local.array(10 ** 9, float32)
    B[0] = row[0] + A[0]


def test_an_array_no_gpu_could_hold_is_refused_before_it_is_allocated():
    rec = cudalab.launch(huge_local, 1, 1, np.ones(1, dtype=np.float32), np.zeros(1, dtype=np.float32))
    assert isinstance(rec.error.cause, ValueError) and "more than any GPU gives a thread" in str(rec.error)


def test_an_out_of_bounds_access_names_its_line_once():
    rec = cudalab.launch(out_of_bounds, 1, THREADS, np.ones(8, dtype=np.float32), np.zeros(8, dtype=np.float32))
    text = str(rec.error)
    lines, first = inspect.getsourcelines(out_of_bounds.py_func)
    line = first + next(i for i, text in enumerate(lines) if "A[t + 1]" in text)
    assert text.count("line ") == 1 and text.count(str(line)) == 1
    assert text == (f"thread (7, 0, 0) of block (0, 0, 0) raised IndexError at line {line} (`B[t] = A[t + 1]`): "
                    "out-of-bounds read of A[8] (shape (8,)); on a GPU this reads or corrupts memory outside the "
                    "array: guard the access with the array's size")


@cuda.jit
def out_of_bounds_then_barrier(A, B):
    t = cuda.threadIdx.x
    x = A[t + 4]                    # the upper half of the threads read past the end and raise
    cuda.syncthreads()
    B[t] = x


def test_threads_that_raised_are_not_blamed_as_threads_that_returned_before_a_barrier():
    rec = cudalab.launch(out_of_bounds_then_barrier, 1, 8, np.ones(8, dtype=np.float32), np.zeros(8, dtype=np.float32))
    assert "out-of-bounds read of A" in str(rec.error)
    assert not [f for f in rec.findings if f.kind == "barrier"]


_CUDA_MISTAKES = '''
import numpy as np
W = np.zeros(3)
def k(A, B, n):
    try:
        B[0] = A[0]
    except IndexError:
        pass
    A.flag = 1
    f = lambda x: x
    rows = [1, 2]
    B[0] = W
'''


def _findings(text, profile, filename="k.py"):
    from labcore.chip.kernel_source import KernelSourceError, rebuild_from_text

    with pytest.raises(KernelSourceError) as info:
        rebuild_from_text(text, ["k"], profile, filename=filename)
    return [f.message for f in info.value.findings]


def test_the_source_checks_speak_of_a_cuda_kernel_in_a_cuda_kernel_and_of_the_chip_in_a_chip_kernel():
    from cudalab.source import CUDA_PROFILE
    from labcore.chip.kernel_source import CHIP_PROFILE

    cuda_msgs = _findings(_CUDA_MISTAKES, CUDA_PROFILE)
    assert cuda_msgs[:4] == [
        "try/except is not allowed in a kernel (numba-cuda compiles none): an error (an index past an array's end, "
        "the time limit) must reach the grader",
        "setting or deleting an attribute (.flag) is not allowed: a kernel changes the arrays it is given by indexing "
        "them (A[i, k] = v), never an object's attributes",
        "a lambda is not allowed in a CUDA kernel (no call it may make takes a function): write the function with "
        "def (a helper you write becomes a device function the kernel calls)",
        "a list is not allowed in a kernel: numba-cuda compiles none; keep values in local or shared arrays "
        "(cuda.local.array, cuda.shared.array) and loop with for ... in range(...)"]
    assert cuda_msgs[-1].endswith("; cuda, math, float32, float64, int32 and int64 are given)")
    for word in ("SRAM", "chip", "tile", "key=lambda", "np and math"):
        assert not any(word in m for m in cuda_msgs), word
    chip_msgs = _findings(_CUDA_MISTAKES, CHIP_PROFILE)
    assert "(SRAM capacity, a released tile, the step limit)" in chip_msgs[0]
    assert "through the chip's API" in chip_msgs[1] and "(key=lambda s: ...)" in chip_msgs[2]
    assert "(cta.buffer, np.zeros)" in chip_msgs[3] and chip_msgs[-1].endswith("; np and math are given)")
    # a .py file is a file, a notebook's code cell a cell
    assert _findings("def k(:\n", CUDA_PROFILE) == ["this file does not parse: invalid syntax",
                                                    "the file defines no function named k (a top-level `def k(...)`)"]
    notebook = json.dumps({"cells": [{"cell_type": "code", "source": "def k(:\n"}]})
    assert _findings(notebook, CHIP_PROFILE, "k.ipynb")[0] == "this cell does not parse: invalid syntax"


def test_a_lambda_as_an_argument_is_a_chip_idiom_and_refused_in_a_cuda_kernel():
    from cudalab.source import CUDA_PROFILE
    from labcore.chip.kernel_source import CHIP_PROFILE, rebuild_from_text

    text = "def k(A, B, n):\n    B[0] = max(A[0], A[1], key=lambda v: -v)\n    B[1] = min(A[0], (lambda v: v)(A[1]))\n"
    msgs = _findings(text, CUDA_PROFILE)
    assert len(msgs) == 2 and all(m.startswith("a lambda is not allowed in a CUDA kernel") for m in msgs)
    # the chip labs allow one as a call's argument (max(..., key=lambda s: ...)), not as the called function
    assert [m for m in _findings(text, CHIP_PROFILE) if "lambda" in m] == [
        "a lambda is allowed only as a call's argument (key=lambda s: ...): write a def"]
    assert "k" in rebuild_from_text("def k(A):\n    return max(A[0], A[1], key=lambda v: -v)\n", ["k"], CHIP_PROFILE)


@pytest.mark.parametrize("text, passed", [
    ("def f(x):\n    return -x\ndef k(A, B, n):\n    B[0] = max(A[0], A[1], key=f)\n", "f"),       # the file's def
    ("def k(A, B, n):\n    def f(x):\n        return -x\n    B[0] = max(A[0], A[1], key=f)\n", "f"),  # an inner def
    ("def k(A, B, n):\n    B[0] = max(A[0], A[1], key=abs)\n", "abs"),                              # a builtin
    ("def k(A, B, n):\n    B[0] = min(A[0], A[1], key=math.fabs)\n", "math.fabs"),                  # a module's
])
def test_a_function_passed_to_a_call_is_refused_in_a_cuda_kernel(text, passed):
    from cudalab.source import CUDA_PROFILE
    from labcore.chip.kernel_source import CHIP_PROFILE, rebuild_from_text

    msgs = _findings(text, CUDA_PROFILE)
    assert msgs == [f"{passed} is a function passed to a call: numba-cuda compiles no call that takes a function "
                    "(no key=, no callbacks); call the function where its value is needed"]
    if passed != "math.fabs":                                 # the chip labs' math offers no fabs
        assert "k" in rebuild_from_text(text, ["k"], CHIP_PROFILE)


def test_a_cuda_kernel_calls_its_helpers_and_passes_dtypes():
    from cudalab.source import CUDA_PROFILE
    from labcore.chip.kernel_source import rebuild_from_text

    text = ("def f(x):\n    return -x\n"
            "def k(A, B, n):\n    t = cuda.local.array(4, float32)\n    t[0] = f(A[0])\n    B[0] = t[0] + abs(A[1])\n")
    assert set(rebuild_from_text(text, ["k"], CUDA_PROFILE)) == {"k"}
    # cuda.jit compiles kernels; inside one it compiles nothing
    assert _findings("def k(A, B, n):\n    g = cuda.jit(device=True)\n", CUDA_PROFILE)[0].startswith(
        "cuda.jit is not available in a kernel; cuda offers: atomic.add")


GLOBAL_ARRAY = np.zeros(3, dtype=np.float32)


@cuda.jit
def reads_a_notebook_array(A):
    A[0] = GLOBAL_ARRAY[0]


def test_an_array_from_outside_the_kernel_is_named_with_an():
    from cudalab.source import KernelSourceError, rebuild_kernel

    with pytest.raises(KernelSourceError) as info:
        rebuild_kernel(reads_a_notebook_array)
    assert info.value.findings[0].message.startswith("GLOBAL_ARRAY is an ndarray from your notebook, which a kernel "
                                                     "cannot use; a CUDA kernel may use")


def test_a_profile_refuses_wording_that_is_not_text():
    import ast

    from labcore.chip.kernel_source import Profile

    base = dict(name="p", modules={}, builtins=frozenset(), value_attributes=frozenset())
    with pytest.raises(TypeError, match="lambda_advice must be a string"):
        Profile(**base, lambda_advice=None)
    with pytest.raises(TypeError, match="functions_as_arguments must be True or False, got 'no'"):
        Profile(**base, functions_as_arguments="no")
    with pytest.raises(TypeError, match="node_advice must be a dict"):
        Profile(**base, node_advice={"Try": "no"})
    assert Profile(**base, node_advice={ast.Try: "no"}).node_advice == {ast.Try: "no"}


def test_a_helper_that_fails_is_blamed_once_and_the_kernel_for_its_own_findings_only():
    from cudalab.source import CUDA_PROFILE

    text = ("def h(v):\n    return (lambda: v)()\n"
            "def k(A, B, n, f=h):\n    B[0] = f(A[1])\n    B.x = 1\n")
    msgs = _findings(text, CUDA_PROFILE)
    assert [m.split(":")[0] for m in msgs] == ["a lambda is not allowed in a CUDA kernel (no call it may make takes a "
                                               "function)", "setting or deleting an attribute (.x) is not allowed"]
    assert not any("defining k raised" in m for m in msgs)
    # two lambdas on one line: one line to fix, said once
    from labcore.chip.kernel_source import KernelSourceError, rebuild_from_text

    with pytest.raises(KernelSourceError) as info:
        rebuild_from_text("def k(A, B, n):\n    f = (lambda x: x) if n else (lambda x: -x)\n", ["k"], CUDA_PROFILE)
    assert len(info.value.findings) == 1 and "(1 finding)" in str(info.value)
