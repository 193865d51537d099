"""GPU presets: the numbers every roofline, decode and megakernel model uses.

Plain frozen dataclasses; units are SI and live in the field names (bytes, bytes/s, FLOP/s). Every
preset carries ``source`` and ``as_of``. Values are checked against NVIDIA's architecture whitepapers and
tuning guides, the FlashAttention papers, the flash-decoding post and the Hazy Research megakernel post.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .checks import lookup, positive_float, positive_int
from .units import KiB, MiB

__all__ = ["GPU", "GPUS", "get_gpu", "gpu_table"]

#: The per-SM rate fields of :class:`GPU` (each has an entry in ``rate_notes``).
_RATE_FIELDS = ("tensor_clock", "tensor_flop_per_clock_per_sm", "fp8_tensor_flops", "fp8_flop_per_clock_per_sm",
                "exp_ops_per_clock_per_sm", "smem_bytes_per_clock_per_sm", "l2_capacity")


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
        source: where the numbers come from.
        as_of: date of the source (ISO).
        tensor_clock: the clock (Hz) at which the quoted tensor peak is reached (per-SM rates below: None
            where no source states the value, with the reason in ``rate_notes``; ``labcore.prefill`` uses them).
        tensor_flop_per_clock_per_sm: dense FP16/BF16 tensor-core FLOP per clock per SM.
        fp8_tensor_flops: quoted dense FP8 tensor throughput, FLOP/s (None where there is no FP8).
        fp8_flop_per_clock_per_sm: dense FP8 tensor-core FLOP per clock per SM.
        exp_ops_per_clock_per_sm: exponentials (MUFU ``ex2``) per clock per SM.
        smem_bytes_per_clock_per_sm: shared-memory read bandwidth, bytes per clock per SM.
        l2_capacity: L2 cache size in bytes.
        rate_notes: ``((field, source or reason), ...)``, one per rate field (see :meth:`rate_source`).
        architecture: ``"ampere"``, ``"hopper"`` or ``"blackwell"`` (which FlashAttention generations run).
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
    tensor_clock: float | None = None
    tensor_flop_per_clock_per_sm: float | None = None
    fp8_tensor_flops: float | None = None
    fp8_flop_per_clock_per_sm: float | None = None
    exp_ops_per_clock_per_sm: float | None = None
    smem_bytes_per_clock_per_sm: float | None = None
    l2_capacity: float | None = None
    rate_notes: tuple = ()
    architecture: str | None = None

    def __post_init__(self):
        positive_int(self.num_sms, "num_sms")
        positive_float(self.hbm_bandwidth, "hbm_bandwidth")
        positive_float(self.tensor_flops, "tensor_flops")
        positive_float(self.hbm_capacity, "hbm_capacity")

        for f in _RATE_FIELDS:
            v = getattr(self, f)
            if v is not None:
                positive_float(v, f)

    def rate_source(self, field: str) -> str:
        """The source (or the reason it is None) of one per-SM rate field, e.g. ``"tensor_clock"``.

        Raises: ValueError for a name that is not a rate field or has no note.
        """
        if field not in _RATE_FIELDS:
            raise ValueError(f"{field!r} is not a rate field; rate fields: {', '.join(_RATE_FIELDS)}")
        notes = dict(self.rate_notes)
        if field not in notes:
            raise ValueError(f"{self.name}: no source recorded for {field!r}")
        return notes[field]

    @property
    def model_clock(self) -> float | None:
        """Clock (Hz) the per-SM models use: ``tensor_clock``, or where none is published the clock the
        quoted peak implies, ``tensor_flops / (tensor_flop_per_clock_per_sm x num_sms)``; None if neither."""
        if self.tensor_clock is not None:
            return self.tensor_clock
        if self.tensor_flop_per_clock_per_sm is None:
            return None
        return self.tensor_flops / (self.tensor_flop_per_clock_per_sm * self.num_sms)

    @property
    def derived_tensor_flops(self) -> float | None:
        """``tensor_flop_per_clock_per_sm x num_sms x tensor_clock`` (FLOP/s), None if a factor is unknown."""
        if self.tensor_clock is None or self.tensor_flop_per_clock_per_sm is None:
            return None
        return self.tensor_flop_per_clock_per_sm * self.num_sms * self.tensor_clock

    @property
    def fp32_ops_per_clock_per_sm(self) -> float | None:
        """FP32 lanes per SM: ``fp32_flops / 2 / (num_sms x model_clock)`` (an FMA counts 2 FLOP, one op).

        A100: 19.5e12 / 2 / (108 x 1.41 GHz) = 64; H100: 67e12 / 2 / (132 x 1.83 GHz) = 139 (the datasheet's
        FP32 figure is quoted at a higher boost clock than the tensor peak). None where FP32 is not published.
        """
        clk = self.model_clock
        if self.fp32_flops is None or clk is None:
            return None
        return self.fp32_flops / 2 / (self.num_sms * clk)

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

_AMPERE_RATES = dict(tensor_clock=1.41e9, tensor_flop_per_clock_per_sm=2048, fp8_tensor_flops=None,
                     fp8_flop_per_clock_per_sm=None, exp_ops_per_clock_per_sm=16, smem_bytes_per_clock_per_sm=128)
_AMPERE_NOTES = (
    ("tensor_clock", "A100 whitepaper: boost clock 1410 MHz (the clock of the 312 TFLOP/s peak)"),
    ("tensor_flop_per_clock_per_sm", "derived: 312 TFLOP/s / (108 SMs x 1.41 GHz) = 2049; whitepaper: 1024 dense "
                                     "FP16 FMA per clock per SM"),
    ("fp8_tensor_flops", "Ampere has no FP8 tensor cores"),
    ("fp8_flop_per_clock_per_sm", "Ampere has no FP8 tensor cores"),
    ("exp_ops_per_clock_per_sm", "CUDA C++ Programming Guide, arithmetic-instruction throughput table: 16 results per "
                                 "clock per SM for exp2 at compute capability 8.0 (the guide's table, not checked "
                                 "against a measurement)"),
    ("smem_bytes_per_clock_per_sm", "32 banks x 4 bytes per clock; 128 B x 108 SMs x 1.41 GHz = 19.5 TB/s matches "
                                    "FlashAttention-2 Sec. 2.1's 'around 19TB/s'"),
)
_HOPPER_RATES = dict(tensor_flop_per_clock_per_sm=4096, fp8_tensor_flops=1979e12, fp8_flop_per_clock_per_sm=8192,
                     exp_ops_per_clock_per_sm=16, smem_bytes_per_clock_per_sm=128)
_HOPPER_NOTES = (
    ("tensor_flop_per_clock_per_sm", "FlashAttention-4 Sec. 2.2: Hopper 4096 BF16 ops/clock/SM "
                                     "(4096 x 132 x 1.83 GHz = 989 TFLOP/s)"),
    ("fp8_tensor_flops", "NVIDIA H100/H200 datasheet: 1,979 TFLOP/s dense FP8 (3,958 with sparsity)"),
    ("fp8_flop_per_clock_per_sm", "derived: 1979 TFLOP/s / (132 SMs x 1.83 GHz) = 8193, twice BF16"),
    ("exp_ops_per_clock_per_sm", "FlashAttention-3 Sec. 3.1 footnote 5 (CUDA programming guide) and FlashAttention-4 "
                                 "Sec. 2.2: 16 ops/clock/SM on Hopper"),
    ("smem_bytes_per_clock_per_sm", "FlashAttention-4 Sec. 2.2: 128 B/clock/SM; FlashAttention-3 Table 1's 31 TB/s "
                                    "= 128 x 132 x 1.83 GHz"),
)

GPUS: dict[str, GPU] = {
    g.name: g
    for g in [
        GPU("A100-40GB-SXM", 108, 40e9, 1555e9, 312e12, 19.5e12, 164 * KiB, 163 * KiB,
            _WP_AMPERE + "; FlashAttention-2 paper (312 vs 19.5 TFLOP/s); flash-decoding post (108 SMs)", "2020-05-14",
            **_AMPERE_RATES, l2_capacity=40960 * KiB, architecture="ampere",
            rate_notes=_AMPERE_NOTES + (("l2_capacity", "A100 whitepaper: L2 40960 KB"),)),
        GPU("A100-80GB-SXM", 108, 80e9, 2039e9, 312e12, 19.5e12, 164 * KiB, 163 * KiB,
            _WP_AMPERE + " (80 GB HBM2e SXM4 variant)", "2020-11-16",
            **_AMPERE_RATES, l2_capacity=None, architecture="ampere",
            rate_notes=_AMPERE_NOTES + (("l2_capacity", "not confirmed for the 80 GB part in the sources used"),)),
        GPU("H100-SXM", 132, 80e9, 3.35e12, 989e12, 67e12, 228 * KiB, 227 * KiB, _WP_HOPPER, "2022-03-22",
            tensor_clock=1.83e9, **_HOPPER_RATES, l2_capacity=50 * MiB, architecture="hopper",
            rate_notes=_HOPPER_NOTES + (
                ("tensor_clock", "FlashAttention-3 App. C.1: 1830 MHz, the clock of the 989 TFLOP/s peak"),
                ("l2_capacity", "FlashAttention-3 Table 1: L2 50 MiB at 12 TB/s"))),
        GPU("H200-SXM", 132, 141e9, 4.8e12, 989e12, 67e12, 228 * KiB, 227 * KiB,
            "NVIDIA H200 datasheet; MLCommons system descriptions (141 GB)", "2023-11-13",
            tensor_clock=None, **_HOPPER_RATES, l2_capacity=None, architecture="hopper",
            rate_notes=_HOPPER_NOTES + (
                ("tensor_clock", "not published; 989 TFLOP/s with 4096 FLOP/clock/SM on 132 SMs implies 1830 MHz "
                                 "(GPU.model_clock)"),
                ("l2_capacity", "not confirmed in the sources used"))),
        GPU("B200", 148, 180e9, 8e12, 2250e12, None, 228 * KiB, 227 * KiB,
            "NVIDIA HGX B200 (1000 W) datasheet; Blackwell tuning guide (180 GB, shared memory); "
            "Hazy Research megakernel post (148 SMs). 8 TB/s is the quoted figure (~7.7 TB/s from the bus).",
            "2024-03-18",
            tensor_clock=1.85e9, tensor_flop_per_clock_per_sm=8192, fp8_tensor_flops=4.5e15,
            fp8_flop_per_clock_per_sm=16384, exp_ops_per_clock_per_sm=16, smem_bytes_per_clock_per_sm=128,
            l2_capacity=126.5e6, architecture="blackwell",
            rate_notes=(
                ("tensor_clock", "implied by FlashAttention-4 Sec. 2.2: 2.25 PFLOP/s / 8192 / 148 SMs = 1850 MHz"),
                ("tensor_flop_per_clock_per_sm", "FlashAttention-4 Sec. 2.2: BF16 MMA 8192 ops/clock/SM"),
                ("fp8_tensor_flops", "NVIDIA HGX B200 page as quoted in repositories: 4.5 PFLOP/s dense FP8 "
                                     "(9 with sparsity)"),
                ("fp8_flop_per_clock_per_sm", "derived: 4.5 PFLOP/s / (148 SMs x 1.85 GHz) = 16434, i.e. twice BF16"),
                ("exp_ops_per_clock_per_sm", "FlashAttention-4 Sec. 2.2: MUFU 16 ops/clock/SM, same as Hopper "
                                             "(B300: 32)"),
                ("smem_bytes_per_clock_per_sm", "FlashAttention-4 Sec. 2.2 (from a microbenchmark paper): "
                                                "128 B/clock/SM, same as Hopper"),
                ("l2_capacity", "device query in pytorch/ao PR #4002: '126.50 MB' (the unit's base is not stated)"),
            )),
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
