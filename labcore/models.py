"""Model presets: transformer shapes, and the weight bytes a batch-1 decode step reads, derived from them.

Plain frozen dataclasses in the style of :mod:`labcore.hardware`: every preset carries ``source`` and
``as_of``, and nothing is typed that can be derived. Parameter counts and bytes per matrix are computed
from the configuration (hidden size, heads, KV heads, head dimension, intermediate size, vocabulary),
so that e.g. Llama-3.2-1B's 1.24 B parameters / 2.47 GB in BF16 come out of the shapes.

Conventions: a matrix is stored as (rows = output features, cols = input features), the layout a
matrix-vector kernel cuts into blocks of output rows (lecture §8.3). Bytes = parameters x ``dtype_bytes``
(2 for BF16/FP16).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .checks import cdiv, choice, lookup, positive_int

__all__ = ["Matrix", "Model", "MODELS", "get_model"]


@dataclass(frozen=True)
class Matrix:
    """One weight matrix of a layer (or the LM head).

    Attributes:
        name: e.g. ``"q"``, ``"gate"``, ``"lm_head"``.
        rows: output features (int).
        cols: input features (int).
        bias: whether it has a bias vector (``rows`` extra parameters; GPT-2 does, Llama does not).
    """

    name: str
    rows: int
    cols: int
    bias: bool = False

    @property
    def params(self) -> int:
        """Parameters: ``rows x cols`` (+ ``rows`` for the bias)."""
        return self.rows * self.cols + (self.rows if self.bias else 0)

    def bytes(self, dtype_bytes: int = 2) -> int:
        """Bytes in HBM: ``params x dtype_bytes`` (2 = BF16/FP16)."""
        return self.params * positive_int(dtype_bytes, "dtype_bytes")


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shapes.

    Attributes:
        name: preset key. hidden_size, num_layers, num_heads (query heads), num_kv_heads (GQA groups),
        head_dim, intermediate_size (MLP width), vocab_size: ints from the model's config.json.
        tied_embeddings: the LM head reuses the input embedding matrix (read once per step as LM head).
        mlp: ``"gated"`` (SwiGLU: gate, up, down) or ``"plain"`` (GPT-2: up, down).
        norm: ``"rmsnorm"`` (one weight vector) or ``"layernorm"`` (weight and bias).
        bias: linear layers carry biases (GPT-2).
        learned_positions: rows of a learned position-embedding table (GPT-2: 1024), 0 for RoPE models.
        source, as_of: where the numbers come from and its date (ISO).
    Raises:
        ValueError: a size < 1, ``num_heads`` not a multiple of ``num_kv_heads``, unknown ``mlp``/``norm``.
    """

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    source: str
    as_of: str
    mlp: str = "gated"
    norm: str = "rmsnorm"
    bias: bool = False
    learned_positions: int = 0

    def __post_init__(self):
        for f in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size",
                  "vocab_size"):
            positive_int(getattr(self, f), f)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})")
        choice(self.mlp, "mlp", ("gated", "plain"))
        choice(self.norm, "norm", ("rmsnorm", "layernorm"))
        positive_int(self.learned_positions, "learned_positions", minimum=0)

    # ---- shapes --------------------------------------------------------------------------------
    @property
    def q_size(self) -> int:
        """Width of the query projection: ``num_heads x head_dim``."""
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        """Width of the K (and of the V) projection: ``num_kv_heads x head_dim``."""
        return self.num_kv_heads * self.head_dim

    def layer_matrices(self) -> tuple[Matrix, ...]:
        """The weight matrices of one layer, in execution order: q, k, v, o, then gate, up, down (gated)
        or up, down (plain). Shapes from the config (Llama: ``q`` is (H d) x hidden, ``k``/``v`` are
        (H_kv d) x hidden, ``o`` is hidden x (H d), ``gate``/``up`` are intermediate x hidden, ``down`` is
        hidden x intermediate)."""
        h, b = self.hidden_size, self.bias
        mats = [Matrix("q", self.q_size, h, b), Matrix("k", self.kv_size, h, b), Matrix("v", self.kv_size, h, b),
                Matrix("o", h, self.q_size, b)]
        if self.mlp == "gated":
            mats.append(Matrix("gate", self.intermediate_size, h, b))
        mats += [Matrix("up", self.intermediate_size, h, b), Matrix("down", h, self.intermediate_size, b)]
        return tuple(mats)

    @property
    def norm_params(self) -> int:
        """Parameters of one normalisation layer: hidden (RMSNorm) or 2 x hidden (LayerNorm)."""
        return self.hidden_size * (1 if self.norm == "rmsnorm" else 2)

    @property
    def params_per_layer(self) -> int:
        """Parameters of one transformer layer: its matrices plus two norms."""
        return sum(m.params for m in self.layer_matrices()) + 2 * self.norm_params

    @property
    def embedding_params(self) -> int:
        """Token embedding (vocab x hidden) plus any learned position table."""
        return (self.vocab_size + self.learned_positions) * self.hidden_size

    def lm_head(self) -> Matrix:
        """The LM head as a matrix (vocab x hidden); with tied embeddings it *is* the embedding table."""
        return Matrix("lm_head", self.vocab_size, self.hidden_size)

    @property
    def num_params(self) -> int:
        """Distinct parameters: embeddings + layers + final norm (+ LM head unless tied).

        Llama-3.2-1B: 1,235,814,400 (the "1.24B" of its model card)."""
        n = self.embedding_params + self.num_layers * self.params_per_layer + self.norm_params
        return n if self.tied_embeddings else n + self.lm_head().params

    def weight_bytes(self, dtype_bytes: int = 2) -> int:
        """Bytes of all distinct parameters (``num_params x dtype_bytes``); Llama-3.2-1B: 2.47 GB in BF16."""
        return self.num_params * positive_int(dtype_bytes, "dtype_bytes")

    def decode_read_bytes(self, dtype_bytes: int = 2) -> int:
        """HBM bytes of weights one batch-1 decode step reads: every layer matrix and norm, the final norm,
        the LM head, and one row of each embedding table (a lookup, not a read of the table).

        With tied embeddings the LM head reads the embedding matrix, so nearly all parameters are read
        once. Lecture §8.1: this over the HBM bandwidth is the ideal time per token."""
        n = self.num_layers * self.params_per_layer + self.norm_params + self.lm_head().params
        n += self.hidden_size * (1 + (1 if self.learned_positions else 0))
        return n * positive_int(dtype_bytes, "dtype_bytes")

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """KV-cache bytes per token over all layers: ``2 x layers x H_kv x d x dtype_bytes``."""
        return 2 * self.num_layers * self.kv_size * positive_int(dtype_bytes, "dtype_bytes")

    def per_gpu(self, tp: int) -> "Model":
        """The slice one GPU holds under ``tp``-way tensor parallelism (heads, KV heads and the MLP width
        divided by ``tp``; vocabulary split too). CodeLlama-34B with tp=4: 16 query heads, 2 KV heads.

        Raises: ValueError when ``tp`` does not divide the heads, KV heads and intermediate size."""
        tp = positive_int(tp, "tp")
        for f in ("num_heads", "num_kv_heads", "intermediate_size"):
            if getattr(self, f) % tp:
                raise ValueError(f"tp={tp} must divide {f}={getattr(self, f)}")
        return replace(self, name=f"{self.name}/tp{tp}", num_heads=self.num_heads // tp,
                       num_kv_heads=self.num_kv_heads // tp, intermediate_size=self.intermediate_size // tp,
                       vocab_size=cdiv(self.vocab_size, tp))


_HF = "Hugging Face config.json of "
MODELS: dict[str, Model] = {
    m.name: m
    for m in [
        Model("Llama-3.2-1B", 2048, 16, 32, 8, 64, 8192, 128256, True,
              _HF + "meta-llama/Llama-3.2-1B; HazyResearch/Megakernels Llama-1B demo constants", "2024-09-25"),
        Model("Llama-3.1-8B", 4096, 32, 32, 8, 128, 14336, 128256, False,
              _HF + "meta-llama/Llama-3.1-8B", "2024-07-23"),
        Model("CodeLlama-34B", 8192, 48, 64, 8, 128, 22016, 32000, False,
              _HF + "codellama/CodeLlama-34b-hf (flash-decoding post runs it 4-way tensor parallel: per_gpu(4))",
              "2023-08-24"),
        Model("GPT-2-medium", 1024, 24, 16, 16, 64, 4096, 50257, True,
              _HF + "openai-community/gpt2-medium (n_embd 1024, n_layer 24, n_head 16, n_inner 4 x 1024, n_ctx 1024)",
              "2019-02-14", mlp="plain", norm="layernorm", bias=True, learned_positions=1024),
    ]
}

_ALIASES = {"llama-1b": "Llama-3.2-1B", "llama-8b": "Llama-3.1-8B", "codellama-34b": "CodeLlama-34B",
            "gpt2-medium": "GPT-2-medium", "gpt-2 medium": "GPT-2-medium"}


def get_model(name) -> Model:
    """Look up a model preset by name (case-insensitive; aliases ``llama-1b``, ``llama-8b``, ``gpt2-medium``).

    Args:
        name: a key of :data:`MODELS`, an alias, or a Model (returned unchanged).
    Raises:
        TypeError: ``name`` is not a string or Model.
        ValueError: unknown name; the message lists the known presets.
    """
    return lookup(MODELS, _ALIASES, name, "model", Model)
