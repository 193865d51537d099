"""Published measurements and constants, as data, each with its citation.

Every figure the book quotes from a paper, a post or a README lives here once, in SI units, with where it
is stated and its caveat (read off a plot, stated as "close to", a range, ...). Prose inserts them through
:func:`published` like any other computed number; the prefill time model (:mod:`labcore.prefill`) reads its
published inputs from here too. The per-seqlen benchmark bars of the FlashAttention-2/3 papers live in
``labcore/data/`` (see :func:`labcore.prefill.load_prefill_measurements`).

Units: FLOP/s, bytes, bytes/s, s; fractions of a peak as fractions (0.75, not 75); speed-ups as ratios
(``unit="x"``). A range is a ``(low, high)`` tuple. Values were collected, with their sources and caveats,
in the project's ``shared/MEASUREMENTS.md`` (stored copies of the papers, posts and repositories).

Bibliography keys (``references.bib``): dao2023flashattention2, shah2024flashattention3,
zadouri2026flashattention4, dao2023flashdecoding, spector2025nobubbles, hazy2025throughput,
flashinfer2024blog, ye2025flashinfer, deepseek2025flashmla, kamath2025pod, sanovar2024lean,
spector2025thundermla, lecture11 (the lecture the book is built from), flashattn_repo.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Published", "PUBLISHED", "published", "published_keys"]

_UNITS = ("FLOP/s", "FLOP", "bytes", "bytes/s", "s", "fraction", "x", "ops/clock/SM", "FLOP/clock/SM",
          "bytes/clock/SM", "cycles", "count", "1", "Hz")


@dataclass(frozen=True)
class Published:
    """One published figure.

    Attributes:
        key: dotted name, e.g. ``"fa3.h100_fp16_peak"``.
        value: float, or a ``(low, high)`` tuple of floats for a stated range; SI units.
        unit: one of ``FLOP/s, FLOP, bytes, bytes/s, s, fraction, x`` (a ratio), ``ops/clock/SM``,
            ``FLOP/clock/SM``, ``bytes/clock/SM``, ``cycles``, ``count``, ``1`` (dimensionless), ``Hz``.
        source: bibliography key in ``references.bib``.
        where: table, figure, section or passage of the source.
        caveat: how the number is stated or obtained ("" when it is stated plainly in the text).
    """

    key: str
    value: float | tuple
    unit: str
    source: str
    where: str
    caveat: str = ""

    def __post_init__(self):
        if self.unit not in _UNITS:
            raise ValueError(f"{self.key}: unit {self.unit!r} is not one of {', '.join(_UNITS)}")
        if not self.source or not self.where:
            raise ValueError(f"{self.key}: every published figure needs its source and where it is stated")
        vals = self.value if isinstance(self.value, tuple) else (self.value,)
        if isinstance(self.value, tuple) and (len(vals) != 2 or vals[0] > vals[1]):
            raise ValueError(f"{self.key}: a range is (low, high) with low <= high, got {self.value!r}")
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"{self.key}: values must be numbers, got {v!r}")

    @property
    def low(self) -> float:
        """The value, or the low end of a range."""
        return self.value[0] if isinstance(self.value, tuple) else self.value

    @property
    def high(self) -> float:
        """The value, or the high end of a range."""
        return self.value[1] if isinstance(self.value, tuple) else self.value

    @property
    def citation(self) -> str:
        """``"source, where"`` (plus the caveat in parentheses when there is one)."""
        return f"{self.source}, {self.where}" + (f" ({self.caveat})" if self.caveat else "")


FA2, FA3, FA4 = "dao2023flashattention2", "shah2024flashattention3", "zadouri2026flashattention4"
LECTURE = "lecture11"
_PLOT = "label printed on the bar chart, transcribed from the image"

_ENTRIES = [
    # ----------------------------------------------------------------------------- FlashAttention-2
    Published("fa2.speedup_vs_fa1", (1.7, 3.0), "x", FA2, "Sec. 4 (bullet list)",
              "the abstract rounds it to 'around 2x'"),
    Published("fa2.speedup_vs_fa1_headline", 2.0, "x", FA2, "abstract", "stated as 'around 2x'"),
    Published("fa2.speedup_vs_fa_triton", (1.3, 2.5), "x", FA2, "Sec. 4"),
    Published("fa2.speedup_vs_pytorch", (3.0, 10.0), "x", FA2, "Sec. 4"),
    Published("fa2.a100_fraction_of_peak", (0.50, 0.73), "fraction", FA2, "abstract",
              "50-73% of the theoretical maximum FLOP/s on A100"),
    Published("fa2.a100_forward_peak", 230e12, "FLOP/s", FA2, "Sec. 4 bullet; Fig. 5", "'up to'; = 73% of 312"),
    Published("fa2.a100_backward_fraction", 0.63, "fraction", FA2, "Sec. 1", "'up to 63% of theoretical max'"),
    Published("fa1.a100_forward_fraction", (0.30, 0.50), "fraction", FA2, "Fig. 5 (FlashAttention-1 forward)"),
    Published("fa1.a100_backward_fraction", (0.25, 0.35), "fraction", FA2, "Fig. 6 (FlashAttention-1 backward)"),
    Published("fa1.a100_fraction_of_peak", (0.25, 0.40), "fraction", FA2, "abstract"),
    Published("fa2.a100_matmul_flops", 312e12, "FLOP/s", FA2, "Sec. 1, 3.1", "A100 FP16/BF16 matmul peak"),
    Published("fa2.a100_nonmatmul_flops", 19.5e12, "FLOP/s", FA2, "Sec. 1, 3.1", "A100 FP32 non-matmul peak"),
    Published("fa2.nonmatmul_cost_ratio", 16.0, "x", FA2, "Sec. 1, 3.1",
              "'up to 16x' (312 / 19.5); the paper's simplification: exp runs on the special-function unit"),
    Published("fa2.a100_smem_bandwidth", 19e12, "bytes/s", FA2, "Sec. 2.1",
              "'estimated around 19TB/s' (192 KB of on-chip SRAM per SM, 108 SMs)"),
    Published("fa2.h100_fwd_bwd_peak", 335e12, "FLOP/s", FA2, "Sec. 4.1, Fig. 7",
              "'up to 335'; the figure's largest bar reads 338; same A100 kernel, no TMA/WGMMA"),
    Published("fa2.gpt_training_peak", 225e12, "FLOP/s", FA2, "Table 1", "GPT3-2.7B, 8k context, per A100 80GB"),
    Published("fa2.gpt_training_mfu", 0.72, "fraction", FA2, "Table 1 / Sec. 4.2", "model FLOPs utilization"),
    # ----------------------------------------------------------------------------- FlashAttention-3
    Published("fa3.fwd_speedup_vs_fa2", (1.5, 2.0), "x", FA3, "Sec. 4.1", "FP16, forward pass only"),
    Published("fa3.bwd_speedup_vs_fa2", (1.5, 1.75), "x", FA3, "Sec. 4.1", "FP16, backward pass"),
    Published("fa3.speedup_vs_standard", (3.0, 16.0), "x", FA3, "Sec. 4.1"),
    Published("fa3.h100_fp16_peak", 740e12, "FLOP/s", FA3, "abstract, Sec. 4",
              "'up to'; the README figure's largest bar reads 756 (d = 256, 16k, non-causal)"),
    Published("fa3.h100_fp16_fraction", 0.75, "fraction", FA3, "abstract"),
    Published("fa3.h100_fp16_figure_max", 756e12, "FLOP/s", FA3, "Fig. 5(e), d = 256, seqlen 16k", _PLOT),
    Published("fa3.h100_fp8_peak", 1.2e15, "FLOP/s", FA3, "abstract", "'close to 1.2 PFLOPs/s'"),
    Published("fa3.fa2_h100_utilization", 0.35, "fraction", FA3, "abstract, Sec. 1"),
    Published("fa3.gemm_h100_utilization", (0.80, 0.90), "fraction", FA3, "Sec. 1", "optimized GEMM on H100"),
    Published("fa3.mma_sync_fraction_hopper", 2 / 3, "fraction", FA3, "Sec. 1",
              "mma.sync reaches 'about 2/3' of Hopper's tensor-core peak (as recorded in the project's FACTS.md)"),
    Published("fa3.h100_exp_flops", 3.9e12, "FLOP/s", FA3, "Sec. 3.1, footnote 5",
              "16 ops/SM/clock x 132 SMs x 1830 MHz, citing the CUDA programming guide"),
    Published("fa3.h100_clock", 1.83e9, "Hz", FA3, "App. C.1",
              "GPU clock fixed at 1830 MHz, 'used to calculate the 989 TFLOPS FP16 theoretical max'"),
    Published("fa3.matmul_to_exp_flops_d128", 512.0, "x", FA3, "Sec. 3.1", "d = 128: 512x more matmul FLOPs than exps"),
    Published("fa3.exp_share_of_matmul_cycles_d128", 0.5, "fraction", FA3, "Sec. 3.1",
              "exp 'can take 50% of the cycle' of matmul at d = 128"),
    Published("fa3.pingpong_before", 570e12, "FLOP/s", FA3, "Sec. 3.1", "FP16 forward, d = 128, seqlen 8192"),
    Published("fa3.pingpong_after", (620e12, 640e12), "FLOP/s", FA3, "Sec. 3.1", "FP16 forward, d = 128, seqlen 8192"),
    Published("fa3.ablation_time", 3.538e-3, "s", FA3, "Table 2",
              "non-causal FP16, batch 4, seqlen 8448, 16 heads, d = 128"),
    Published("fa3.ablation_flops", 661e12, "FLOP/s", FA3, "Table 2", "same shape"),
    Published("fa3.ablation_no_warp_specialization_flops", 570e12, "FLOP/s", FA3, "Table 2",
              "GEMM-softmax pipelining kept, warp specialization removed"),
    Published("fa3.ablation_no_pipelining_flops", 582e12, "FLOP/s", FA3, "Table 2",
              "warp specialization kept, GEMM-softmax pipelining removed"),
    Published("fa3.rmse_fp16_baseline", 3.2e-4, "1", FA3, "Table 3",
              "inputs N(0,1) + N(0,100) x Bernoulli(0.001); vs an FP64 reference"),
    Published("fa3.rmse_fp16_fa2", 1.9e-4, "1", FA3, "Table 3"),
    Published("fa3.rmse_fp16_fa3", 1.9e-4, "1", FA3, "Table 3"),
    Published("fa3.rmse_fp8_baseline", 2.4e-2, "1", FA3, "Table 3", "per-tensor scaling, FP32 accumulator"),
    Published("fa3.rmse_fp8_fa3", 9.1e-3, "1", FA3, "Table 3", "block quantization + incoherent processing"),
    Published("fa3.rmse_fp8_no_block_quant", 9.3e-3, "1", FA3, "Table 3"),
    Published("fa3.rmse_fp8_no_incoherent", 2.4e-2, "1", FA3, "Table 3"),
    Published("fa3.fp8_error_reduction", 2.6, "x", FA3, "Sec. 4.3 / Table 3", "2.4e-2 / 9.1e-3 = 2.64"),
    Published("fa3.h100_smem_bandwidth", 31e12, "bytes/s", FA3, "Table 1", "per GPU"),
    Published("fa3.h100_l2_bandwidth", 12e12, "bytes/s", FA3, "Table 1"),
    # ----------------------------------------------------------------------------- FlashAttention-4
    Published("fa4.b200_bf16_peak", 1613e12, "FLOP/s", FA4, "abstract, Sec. 5",
              "'up to'; the Together AI / Colfax blog (2026-03-05) says 1605"),
    Published("fa4.b200_bf16_fraction", 0.71, "fraction", FA4, "abstract, Sec. 1"),
    Published("fa4.blog_b200_bf16_peak", 1605e12, "FLOP/s", FA4, "Together AI / Colfax blog, 2026-03-05"),
    Published("fa4.speedup_vs_cudnn", (1.1, 1.3), "x", FA4, "Sec. 5.1, Fig. 4", "forward, cuDNN 9.13"),
    Published("fa4.speedup_vs_triton", (2.1, 2.7), "x", FA4, "Sec. 5.1, Fig. 4", "forward"),
    Published("fa4.bottleneck_excess_over_mma", (0.25, 0.60), "fraction", FA4, "Sec. 1",
              "shared-memory traffic and exp 'exceeding MMA compute by 25-60%'"),
    Published("fa4.b200_mma_flop_per_clock", 8192.0, "FLOP/clock/SM", FA4, "Sec. 2.2",
              "BF16 MMA 8192 ops/clock/SM = 2.25 PFLOPS / 1850 MHz / 148 SMs; Hopper 4096"),
    Published("fa4.hopper_mma_flop_per_clock", 4096.0, "FLOP/clock/SM", FA4, "Sec. 2.2"),
    Published("fa4.b200_mufu_per_clock", 16.0, "ops/clock/SM", FA4, "Sec. 2.2", "exp2 on MUFU, same as Hopper"),
    Published("fa4.b300_mufu_per_clock", 32.0, "ops/clock/SM", FA4, "Sec. 2.2", "B300/GB300"),
    Published("fa4.smem_bytes_per_clock", 128.0, "bytes/clock/SM", FA4, "Sec. 2.2",
              "same as Hopper; from a microbenchmark paper the FA4 paper cites, not an NVIDIA document"),
    Published("fa4.tmem_per_sm", 256 * 1024, "bytes", FA4, "Sec. 2.2",
              "'256 KB' (128 lanes x 512 columns x 4 bytes), allocated in 32-column (16 KB) granules"),
    Published("fa4.exp_emulation_max_rel_error", 8.8e-5, "1", FA4, "Sec. 3.1.3",
              "degree-3 polynomial exp2 in FP32; within 1 BF16 ULP of MUFU.EX2 on 99% of inputs"),
    Published("fa4.exp_emulation_share", (0.10, 0.25), "fraction", FA4, "Sec. 3.1.3",
              "share of each row's exponentials computed by the polynomial on FMA units"),
    Published("fa4.rescale_threshold", 8.0, "1", FA4, "Sec. 3.1.4",
              "rescale O only when the running max grows by more than log2(256) = 8"),
    Published("fa4.lpt_gain_mha", (0.04, 0.08), "fraction", FA4, "Sec. 3.3", "BF16 d = 128, on H200"),
    Published("fa4.lpt_gain_mqa", (0.07, 0.14), "fraction", FA4, "Sec. 3.3", "MQA-8, BF16 d = 128, on H200"),
    Published("fa4.deterministic_bwd_fraction", 0.75, "fraction", FA4, "Sec. 5.2",
              "'up to 75%' of the non-deterministic 1-CTA backward; the blog says about 85-90%"),
    Published("fa4.compile_speedup", (20.0, 30.0), "x", FA4, "abstract, Table 4", "vs FA3's C++ templates"),
    # the tile roofline (cycles per tile per SM on B200), paper Tables 1 and 3
    Published("fa4.roofline.fwd_128.mma", 1024.0, "cycles", FA4, "Table 1", "forward, M = N = d = 128"),
    Published("fa4.roofline.fwd_128.exp", 1024.0, "cycles", FA4, "Table 1"),
    Published("fa4.roofline.fwd_128.smem", 768.0, "cycles", FA4, "Table 1"),
    Published("fa4.roofline.fwd_256.mma", 2048.0, "cycles", FA4, "Table 1", "forward, M = 256 (2-CTA), N = d = 128"),
    Published("fa4.roofline.fwd_256.exp", 2048.0, "cycles", FA4, "Table 1"),
    Published("fa4.roofline.fwd_256.smem", 1536.0, "cycles", FA4, "Table 1"),
    Published("fa4.roofline.bwd_128.mma", 2560.0, "cycles", FA4, "Table 3", "backward 1-CTA, M = N = d = 128"),
    Published("fa4.roofline.bwd_128.exp", 1024.0, "cycles", FA4, "Table 3"),
    Published("fa4.roofline.bwd_128.smem", 3328.0, "cycles", FA4, "Table 3", "about 30% over MMA"),
    Published("fa4.roofline.bwd_2cta_smem_excess", 0.05, "fraction", FA4, "Table 3",
              "2-CTA backward (M = 256): shared memory about 5% over MMA"),
    # ----------------------------------------------------------------------------- FlashAttention (2022)
    Published("fa1.gpt2_standard_flops", 66.6e9, "FLOP", "dao2022flashattention", "Fig. 2 (arXiv version)",
              "GPT-2 medium attention, forward + backward, A100; a NeurIPS-layout copy prints other values"),
    Published("fa1.gpt2_standard_hbm_bytes", 40.3e9, "bytes", "dao2022flashattention", "Fig. 2 (arXiv version)",
              "HBM reads + writes"),
    Published("fa1.gpt2_standard_time", 41.7e-3, "s", "dao2022flashattention", "Fig. 2 (arXiv version)"),
    Published("fa1.gpt2_flash_flops", 75.2e9, "FLOP", "dao2022flashattention", "Fig. 2 (arXiv version)"),
    Published("fa1.gpt2_flash_hbm_bytes", 4.4e9, "bytes", "dao2022flashattention", "Fig. 2 (arXiv version)"),
    Published("fa1.gpt2_flash_time", 7.3e-3, "s", "dao2022flashattention", "Fig. 2 (arXiv version)"),
    # ----------------------------------------------------------------------------- flash-attn's split heuristic
    Published("flash_attn.splits_min_blocks_fraction", 0.8, "fraction", "flashattn_repo",
              "csrc/flash_attn/flash_api.cpp, num_splits_heuristic", "one split when blocks >= 0.8 x SMs"),
    Published("flash_attn.splits_efficiency_fraction", 0.85, "fraction", "flashattn_repo",
              "csrc/flash_attn/flash_api.cpp, num_splits_heuristic",
              "smallest split count whose wave efficiency is >= 0.85 x the best"),
    Published("flash_attn.max_splits", 128.0, "count", "flashattn_repo", "csrc/flash_attn/flash_api.cpp"),
    # ----------------------------------------------------------------------------- flash-decoding
    Published("flash_decoding.speedup_end_to_end", 8.0, "x", "dao2023flashdecoding", "text", "'up to 8x'"),
    Published("flash_decoding.speedup_vs_flashattention", 50.0, "x", "dao2023flashdecoding", "text",
              "'up to 50x faster than FlashAttention' in the post's words; its table reaches 43x against v2.0.9"),
    Published("flash_decoding.fa_gpu_fraction", 0.01, "fraction", "dao2023flashdecoding", "text",
              "FlashAttention uses 'less than 1% of the GPU' at batch 1 (reasoned from batch size vs 108 SMs)"),
    Published("hazy.tail_example_blocks", 512.0, "count", "spector2025nobubbles", "text",
              "a 512-block down projection on a B200's 148 SMs"),
    Published("flash_decoding.max_table_speedup_vs_fa2", 43.1, "x", "dao2023flashdecoding", "micro-benchmark table",
              "derived from the table: largest FlashAttention v2.0.9 / flash-decoding time ratio"),
    # ----------------------------------------------------------------------------- Hazy Research
    Published("hazy.vllm_sglang_bandwidth_fraction", 0.5, "fraction", "spector2025nobubbles", "text",
              "vLLM and SGLang on H100 use 'at most 50%' of the bandwidth"),
    Published("hazy.h100_bandwidth_fraction", 0.78, "fraction", "spector2025nobubbles", "text",
              "Llama-3.2-1B, BF16, batch 1"),
    Published("hazy.h100_forward_time", 1e-3, "s", "spector2025nobubbles", "text", "'under 1 ms' per forward pass"),
    Published("hazy.h100_speedup_vs_vllm", 2.5, "x", "spector2025nobubbles", "text", "'almost 2.5x'"),
    Published("hazy.h100_speedup_vs_sglang", 1.5, "x", "spector2025nobubbles", "text", "'over 1.5x'"),
    Published("hazy.b200_forward_time", 680e-6, "s", "spector2025nobubbles", "text", "'under 680 µs'"),
    Published("hazy.b200_speedup_vs_vllm", 3.5, "x", "spector2025nobubbles", "text", "'over 3.5x'"),
    Published("hazy.b200_speedup_vs_sglang", 1.5, "x", "spector2025nobubbles", "text", "'more than 1.5x'"),
    Published("hazy.launch_time_stream", 2.1e-6, "s", "spector2025nobubbles", "text",
              "empty kernel on a CUDA stream, H100, approximate"),
    Published("hazy.launch_time_graph", 1.3e-6, "s", "spector2025nobubbles", "text", "with CUDA graphs, approximate"),
    Published("hazy.b200_activation_access_latency", 500e-9, "s", "spector2025nobubbles", "text",
              "'~500 ns' per activation load or store in the B200 breakdown"),
    Published("hazy.throughput_gain_vs_sglang", 0.22, "fraction", "hazy2025throughput", "text",
              "'>22%' end-to-end throughput, tensor-parallel Llama-70B on H100s in Tokasaurus, 65,536 ShareGPT prompts"),
    Published("hazy.kernels_per_forward", 100.0, "count", "spector2025nobubbles", "text",
              "'~100 kernels' per forward pass in vLLM / SGLang"),
    Published("hazy.h100_forward_limit", 1350.0, "count", "spector2025nobubbles", "text",
              "forward passes per second at 3.35 TB/s / 2.48 GB (memory limit)"),
    Published("hazy.launch_illustration_forwards", 770.0, "count", "spector2025nobubbles", "text",
              "forward passes per second with 7 kernels/layer x 16 layers at an optimistic 5 µs stall each"),
    Published("hazy.b200_forward_limit", 3000.0, "count", "spector2025nobubbles", "text",
              "'around ~3,000 forward passes per second' (bandwidth only)"),
    Published("hazy.smem_pages", 13.0, "count", "spector2025nobubbles", "text", "13 pages of 16 KiB (first 213 kB)"),
    Published("hazy.smem_page_bytes", 16 * 1024, "bytes", "spector2025nobubbles", "text"),
    Published("hazy.tail_idle_sms", 80.0, "count", "spector2025nobubbles", "text",
              "512-block down projection on 148 SMs: 80 SMs idle in the last wave"),
    Published("hazy.b200_breakdown_activations", 250e-6, "s", "spector2025nobubbles", "text",
              "B200 ~600 µs forward: activation store / consistency / load"),
    Published("hazy.b200_breakdown_matvec", 200e-6, "s", "spector2025nobubbles", "text", "RMSNorm + matrix-vector"),
    Published("hazy.b200_breakdown_weights_wait", 30e-6, "s", "spector2025nobubbles", "text",
              "waiting on weights (40% of it in the LM head)"),
    Published("hazy.b200_breakdown_sync", 40e-6, "s", "spector2025nobubbles", "text", "warp synchronisation"),
    Published("hazy.b200_breakdown_other", 80e-6, "s", "spector2025nobubbles", "text", "setup and other"),
    Published("hazy.barrier_latency", 60e-9, "s", "spector2025nobubbles", "text",
              "'~60 ns' per async barrier even when it passes"),
    Published("thundermla.flashmla_time", 52e-6, "s", "spector2025thundermla", "text",
              "batch of 4 prompts [4641, 45118, 1730, 1696], 4 new tokens, 8-way TP, SXM H100"),
    Published("thundermla.time", 41e-6, "s", "spector2025thundermla", "text",
              "same workload; from a secondary copy of the post"),
    Published("thundermla.speedup_vs_flashmla", (0.20, 0.35), "fraction", "spector2025thundermla", "text",
              "'20-35% faster' on diverse workloads"),
    # ----------------------------------------------------------------------------- decode kernels
    Published("flashinfer.decode_bandwidth_utilization", 1.0, "fraction", "flashinfer2024blog", "text",
              "'close to 100%' for long sequences; single request, Llama2-7B shape, H100/A100/Ada; cold L2"),
    Published("flashinfer.gqa_cuda_core_utilization", 0.40, "fraction", "flashinfer2024blog", "text",
              "'40%+' for GQA decode on CUDA cores"),
    Published("flashinfer.gqa_speedup_vs_vllm", (2.0, 3.0), "x", "flashinfer2024blog", "text",
              "'up to', tensor-core GQA decode, A100 & H100"),
    Published("flashinfer.cascade_speedup_vs_vllm", 31.0, "x", "flashinfer2024blog", "cascade post",
              "'up to'; H100, shared prefix 32768, batch >= 128, vLLM 0.2.6"),
    Published("flashinfer.itl_reduction_vs_triton", (0.29, 0.69), "fraction", "ye2025flashinfer", "abstract / Sec. 5",
              "inter-token latency vs SGLang v0.3.4's Triton backend"),
    Published("flashmla.h800_memory_bandwidth", 3000e9, "bytes/s", "deepseek2025flashmla", "README (Feb 2025)",
              "'up to', memory-bound dense MLA decode, H800 SXM5"),
    Published("flashmla.h800_compute_flops", 580e12, "FLOP/s", "deepseek2025flashmla", "README (Feb 2025)",
              "'up to', compute-bound, H800 SXM5"),
    Published("flashmla.h800_compute_flops_2025_04", 660e12, "FLOP/s", "deepseek2025flashmla", "README (2025-04-22)"),
    Published("flashmla.b200_sparse_prefill_flops", 1450e12, "FLOP/s", "deepseek2025flashmla", "README",
              "sparse prefill on B200"),
    Published("flashmla.compute_bound_threshold", 128.0, "1", "deepseek2025flashmla", "docs/20250422 deep-dive",
              "decode is compute-bound once h_q x s_q >= 1/2 x 865 / 3.35 = 128 (H800)"),
    Published("pod.attention_speedup_max", 0.59, "fraction", "kamath2025pod", "abstract",
              "'up to 59% faster' than serial FlashAttention prefill + decode; A100 80GB"),
    Published("pod.attention_speedup_mean", 0.28, "fraction", "kamath2025pod", "abstract", "mean over its workloads"),
    Published("pod.throughput_gain_vs_sarathi", (0.19, 0.22), "fraction", "kamath2025pod", "abstract",
              "offline throughput, Yi-6B, Llama-2-7B, Llama-3-8B"),
    Published("lean.speedup_vs_fa2_mean", 2.6, "x", "sanovar2024lean", "abstract (v1)",
              "average, decode phase; GPU not stated in the abstract"),
    Published("lean.speedup_vs_fa2_max", 8.33, "x", "sanovar2024lean", "abstract (v1)", "'up to', 512k context"),
    # ----------------------------------------------------------------------------- the lecture (its stated figures)
    # The book compares its computed numbers with the lecture's; the lecture's are stated here once.
    Published("lecture.matmul_side", 2048.0, "count", LECTURE, "§1 (from lecture 10)",
              "the square FP16 matmul behind the '683 FLOP/byte' intensity ceiling: N/3 at N = 2048"),
    Published("lecture.online_alpha", 0.4087, "1", LECTURE, "§3.1 trace", "rescale factor at the first drop"),
    Published("lecture.merge_error", 5e-16, "1", LECTURE, "§3.2, code 01 demo 2", "row of 3000, 12 pieces"),
    Published("lecture.fwd_bwd_gap", 1e-15, "1", LECTURE, "§5.1", "'< 1e-15', non-causal, one block size"),
    Published("lecture.finite_difference_gap", 1e-9, "1", LECTURE, "§5.1", "'about 1e-9'"),
    Published("lecture.gpt2_standard_hbm_bytes", 25.4e9, "bytes", LECTURE, "§5.2"),
    Published("lecture.gpt2_extra_flops", (0.13, 0.17), "fraction", LECTURE, "§5.2",
              "13% in the paper's figures, 17% in the lecture's matmul count (7/6 - 1 = 16.7%)"),
    Published("lecture.instruction_kinds_per_layer", 5.0, "count", LECTURE, "§8.2",
              "the text says '5 per layer + 1 at the end' but its list names 6 per layer + 1"),
    Published("lecture.multikernel_tail", 49e-6, "s", LECTURE, "§8.3 breakdown"),
    Published("lecture.multikernel_utilization", 0.63, "fraction", LECTURE, "§8.3"),
    Published("lecture.megakernel_utilization", 0.88, "fraction", LECTURE, "§8.3"),
    Published("lecture.sensitivity_speedup", (1.3, 1.5), "x", LECTURE, "§8.3, code 05 demo 4"),
    Published("lecture.sensitivity_points", (20.0, 29.0), "1", LECTURE, "§8.3, code 05 demo 4",
              "percentage points of bandwidth utilisation"),
    Published("lecture.llama1b_weight_bytes", 2.48e9, "bytes", LECTURE, "exercise 11"),
]

#: Every published figure by key.
PUBLISHED: dict[str, Published] = {}
for _e in _ENTRIES:
    if _e.key in PUBLISHED:
        raise ValueError(f"duplicate published key {_e.key!r}")
    PUBLISHED[_e.key] = _e
del _e


def published(key: str) -> Published:
    """The :class:`Published` record for ``key`` (e.g. ``published("fa3.h100_fp16_peak").value``).

    Args: key: a key of :data:`PUBLISHED` (str).
    Raises: TypeError if ``key`` is not a string; ValueError for an unknown key (the message names keys
    that share its prefix).
    Source: each record's ``source`` and ``where``.
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, got {type(key).__name__}")
    if key not in PUBLISHED:
        prefix = key.split(".")[0] + "."
        near = [k for k in PUBLISHED if k.startswith(prefix)]
        raise ValueError(f"unknown published key {key!r}; " +
                         (f"keys under {prefix!r}: {', '.join(near)}" if near else
                          f"prefixes: {', '.join(sorted({k.split('.')[0] for k in PUBLISHED}))}"))
    return PUBLISHED[key]


def published_keys(prefix: str = "") -> list[str]:
    """Keys of :data:`PUBLISHED` starting with ``prefix`` (str), sorted."""
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
    return sorted(k for k in PUBLISHED if k.startswith(prefix))
