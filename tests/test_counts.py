"""Op counts, intensity, precision and hardware presets against the lecture's numbers."""
import numpy as np
import pytest

import labcore


def test_nonmatmul_lecture_numbers():
    ps = labcore.nonmatmul_fraction(4096, 128, loop_order="fa1")
    df = labcore.nonmatmul_fraction(4096, 128, loop_order="fa2")
    assert round(ps["ops_fraction"] * 100, 1) == 1.6 and round(df["ops_fraction"] * 100, 1) == 1.0
    assert ps["cost_ratio"] == pytest.approx(312 / 19.5)
    assert round(ps["time_fraction"] * 100) == 25 and round(df["time_fraction"] * 100) == 16


def test_nonmatmul_terms():
    c = labcore.nonmatmul_ops(256, 256, 64, block_kv=64, loop_order="fa1")   # T_c = 4 key blocks
    assert c["softmax"] == 4 * 256 * 256 and c["statistics"] == 9 * 256 * 4 and c["output"] == 4 * 64 * 256 * 4
    assert c["lse"] == 2 * 256
    assert c["total"] == c["softmax"] + c["statistics"] + c["output"] + c["lse"]
    f = labcore.nonmatmul_ops(256, 256, 64, block_kv=64, loop_order="fa2")
    assert f["statistics"] == 5 * 256 * 4 and f["output"] == 64 * 256 * 4 + 64 * 256     # + the final divide
    with pytest.raises(ValueError, match="entries"):
        labcore.forward_nonmatmul_terms(-1, 0, 4, 4, loop_order="fa2")


@pytest.mark.parametrize("N, N_k, d, B", [(4096, 4096, 128, 128), (1000, 333, 64, 64), (1, 7, 3, 2)])
def test_one_count_of_nonmatmul_work(N, N_k, d, B):
    """§3's nonmatmul_ops and §4's attention_flops count the same operations (no mask)."""
    for order in ("fa2", "fa1"):
        fl = labcore.attention_flops(N, d, algorithm="flash", loop_order=order, block_q=B, block_kv=B, N_k=N_k)
        assert fl.non_matmul == labcore.nonmatmul_ops(N, N_k, d, block_kv=B, loop_order=order)["total"]
        assert fl.matmul == labcore.attention_matmul_flops(N, N_k, d)
    assert labcore.attention_matmul_flops(256, 256, 64) == 4 * 256 * 256 * 64
    with pytest.raises(ValueError, match="loop_order"):
        labcore.nonmatmul_ops(4, 4, 4, loop_order="lazy")
    with pytest.raises(ValueError, match="FP32"):
        labcore.nonmatmul_fraction(4096, 128, gpu="B200")


def test_intensity_and_ratio():
    assert labcore.score_to_input_ratio(8192, 128) == 64
    I = labcore.standard_attention_intensity(1 << 20, 64)
    assert abs(I - 32) < 0.01                             # tends to d/2
    assert round(labcore.get_gpu("A100").critical_intensity, -1) == 200
    r = labcore.roofline_time(4 * 4096**2 * 64, labcore.standard_attention_io(4096, 64) * 2, "A100")
    assert r["bound"] == "memory" and r["time_s"] == r["memory_s"]


def test_precision():
    assert round(labcore.exp_overflow_threshold("fp16"), 2) == 11.09
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(np.exp(11.1))) and np.isfinite(np.float16(np.exp(11.08)))
    e16 = labcore.l_accumulation_error(8192, "fp16")["rel_error"]
    e32 = labcore.l_accumulation_error(8192, "fp32")["rel_error"]
    assert 0.05 < e16 < 0.5 and e32 < 1e-5
    # stagnation: adding 0.25 to 2048 in FP16 changes nothing
    assert labcore.accumulate(np.r_[2048.0, np.full(100, 0.25)], "fp16") == 2048.0
    assert labcore.accumulate(np.r_[2048.0, np.full(100, 0.25)], "fp32") == 2073.0
    assert labcore.round_to([1.0 + 2**-9], "bf16")[0] == 1.0 and labcore.round_to([1.0 + 2**-7], "bf16")[0] == 1.0 + 2**-7
    with pytest.raises(ValueError, match="dtype"):
        labcore.accumulate([1.0], "fp8")


def test_gpu_presets():
    a = labcore.get_gpu("A100")
    assert (a.num_sms, a.hbm_bandwidth, a.tensor_flops, a.fp32_flops) == (108, 1555e9, 312e12, 19.5e12)
    assert labcore.get_gpu("h100-sxm").num_sms == 132 and labcore.get_gpu("B200").num_sms == 148
    for g in labcore.GPUS.values():
        assert g.source and g.as_of and g.smem_per_sm > g.smem_per_block > 0
    assert round(labcore.get_gpu("A100").tensor_flops_per_sm / 1e12, 2) == 2.89
    with pytest.raises(ValueError, match="known presets: A100-40GB-SXM"):
        labcore.get_gpu("V100")
    with pytest.raises(TypeError):
        labcore.get_gpu(3)
    with pytest.raises(ValueError, match="hbm_bandwidth"):
        a.with_(hbm_bandwidth=0)


def test_row_lse_io_reads_every_score_once_per_pass():
    from labcore.hbm import row_lse_io

    assert row_lse_io(4, 100, passes=2) == {"S": {"read": 800, "write": 0}, "lse": {"read": 0, "write": 4}}
    assert row_lse_io(4, 100)["S"]["read"] == 400
    with pytest.raises(ValueError, match="passes"):
        row_lse_io(4, 100, passes=3)


def test_the_backwards_dq_accumulations_move_what_their_kernels_move():
    from labcore.hbm import flash_backward_atomics, flash_backward_io

    kw = dict(block_q=8, block_kv=8, N_k=40)
    rw = flash_backward_io(32, 8, by_tensor=True, **kw)
    atomic = flash_backward_io(32, 8, by_tensor=True, dq="atomic", **kw)
    split = flash_backward_io(32, 8, by_tensor=True, dq="split", **kw)
    pairs = 32 * 5                                   # every query row meets the 5 key blocks
    assert rw["dQ"] == {"read": pairs * 8, "write": 32 * 8 + pairs * 8}
    assert atomic["dQ"] == {"read": 0, "write": 32 * 8} and flash_backward_atomics(32, 8, **kw) == pairs * 8
    assert split["dQ"] == {"read": 0, "write": 32 * 8} and split["dQ_part"] == {"read": pairs * 8, "write": pairs * 8}
    assert {k: v for k, v in split.items() if k not in ("dQ", "dQ_part")} == \
        {k: v for k, v in atomic.items() if k != "dQ"}
    with pytest.raises(ValueError, match="dq"):
        flash_backward_io(32, 8, dq="semaphore", **kw)
