"""GPU presets: the numbers every roofline, decode and megakernel model uses.

Plain frozen dataclasses; units are SI and live in the field names (bytes, bytes/s, FLOP/s). Every
preset carries ``source`` and ``as_of``. Values follow ``shared/FACTS.md`` (checked against NVIDIA's
architecture whitepapers and tuning guides, the FlashAttention papers, the flash-decoding post and the
Hazy Research megakernel post).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .checks import lookup, positive_float, positive_int

__all__ = ["GPU", "GPUS", "get_gpu", "gpu_table"]

KiB = 1024


@dataclass(frozen=True)
class GPU:
    """One GPU variant.

    Attributes:
        name: preset key, e.g. ``"H100-SXM"``.
        num_sms: streaming multiprocessors (int).
        hbm_capacity: HBM size in bytes (decimal GB as NVIDIA quotes them).
        hbm_bandwidth: peak HBM bandwidth in bytes/s.
        tensor_flops: dense FP16/BF16 tensor-core throughput with FP32 accumulate, FLOP/s (not sparse).
        fp32_flops: FP32 non-matmul (CUDA-core) throughput in FLOP/s, or None where not published.
        smem_per_sm: shared memory per SM in bytes (the configurable shared part, not L1+smem combined).
        smem_per_block: the largest shared memory one thread block can use, bytes.
        source: where the numbers come from. as_of: date of the source (ISO).
    """

    name: str
    num_sms: int
    hbm_capacity: float
    hbm_bandwidth: float
    tensor_flops: float
    fp32_flops: float | None
    smem_per_sm: int
    smem_per_block: int
    source: str
    as_of: str

    def __post_init__(self):
        positive_int(self.num_sms, "num_sms")
        positive_float(self.hbm_bandwidth, "hbm_bandwidth")
        positive_float(self.tensor_flops, "tensor_flops")
        positive_float(self.hbm_capacity, "hbm_capacity")

    @property
    def critical_intensity(self) -> float:
        """Ridge point of the roofline: ``tensor_flops / hbm_bandwidth`` in FLOP/byte."""
        return self.tensor_flops / self.hbm_bandwidth

    @property
    def tensor_flops_per_sm(self) -> float:
        """Dense FP16/BF16 tensor FLOP/s of one SM (``tensor_flops / num_sms``)."""
        return self.tensor_flops / self.num_sms

    @property
    def nonmatmul_cost_ratio(self) -> float | None:
        """How many times more a non-matmul FP32 FLOP costs than a tensor-core FLOP (None if unknown)."""
        return None if self.fp32_flops is None else self.tensor_flops / self.fp32_flops

    def with_(self, **changes) -> "GPU":
        """A copy with some fields changed (e.g. ``gpu.with_(hbm_bandwidth=2e12)``), validated again."""
        return replace(self, **changes)


_WP_AMPERE = "NVIDIA A100 Tensor Core GPU Architecture whitepaper; A100 datasheet; NVIDIA Ampere tuning guide (shared memory)"
_WP_HOPPER = "NVIDIA H100 Tensor Core GPU datasheet; Hopper tuning guide (shared memory); Hazy Research megakernel post (132 SMs, 3.35 TB/s)"

GPUS: dict[str, GPU] = {
    g.name: g
    for g in [
        GPU("A100-40GB-SXM", 108, 40e9, 1555e9, 312e12, 19.5e12, 164 * KiB, 163 * KiB,
            _WP_AMPERE + "; FlashAttention-2 paper (312 vs 19.5 TFLOP/s); flash-decoding post (108 SMs)", "2020-05-14"),
        GPU("A100-80GB-SXM", 108, 80e9, 2039e9, 312e12, 19.5e12, 164 * KiB, 163 * KiB,
            _WP_AMPERE + " (80 GB HBM2e SXM4 variant)", "2020-11-16"),
        GPU("H100-SXM", 132, 80e9, 3.35e12, 989e12, 67e12, 228 * KiB, 227 * KiB, _WP_HOPPER, "2022-03-22"),
        GPU("H200-SXM", 132, 141e9, 4.8e12, 989e12, 67e12, 228 * KiB, 227 * KiB,
            "NVIDIA H200 datasheet; MLCommons system descriptions (141 GB)", "2023-11-13"),
        GPU("B200", 148, 180e9, 8e12, 2250e12, None, 228 * KiB, 227 * KiB,
            "NVIDIA HGX B200 (1000 W) datasheet; Blackwell tuning guide (180 GB, shared memory); "
            "Hazy Research megakernel post (148 SMs). 8 TB/s is the quoted figure (~7.7 TB/s from the bus).",
            "2024-03-18"),
    ]
}

_ALIASES = {"a100": "A100-40GB-SXM", "a100-40gb": "A100-40GB-SXM", "a100-80gb": "A100-80GB-SXM",
            "h100": "H100-SXM", "h200": "H200-SXM", "b200": "B200"}


def get_gpu(name) -> GPU:
    """Look up a GPU preset by name (case-insensitive; ``"A100"`` means the 40 GB SXM part).

    Args:
        name: a key of :data:`GPUS` or an alias (``A100``, ``H100``, ``H200``, ``B200``), or a GPU
            instance (returned unchanged).
    Raises:
        TypeError: ``name`` is not a string or GPU.
        ValueError: unknown name; the message lists the known presets.
    """
    return lookup(GPUS, _ALIASES, name, "gpu", GPU, noun="GPU")


def gpu_table():
    """Rows ``(name, SMs, HBM TB/s, dense FP16 TFLOP/s, ridge FLOP/byte, smem/SM KiB, as_of)`` for display."""
    return [(g.name, g.num_sms, g.hbm_bandwidth / 1e12, g.tensor_flops / 1e12, g.critical_intensity,
             g.smem_per_sm / KiB, g.as_of) for g in GPUS.values()]
