"""Model presets: parameter counts and bytes derived from the configs (lecture §8.1)."""
import pytest

from labcore.hardware import get_gpu
from labcore.models import MODELS, Matrix, Model, get_model


def test_llama_1b_matches_model_card():
    m = get_model("Llama-3.2-1B")
    assert round(m.num_params / 1e9, 2) == 1.24                 # "1.24B parameters"
    assert round(m.weight_bytes() / 1e9, 2) == 2.47             # 2.47 GB in BF16 (2.48 from the rounded 1.24B x 2)
    assert abs(m.weight_bytes() / 1e9 - 2.48) < 0.01


def test_llama_1b_reads_weights_in_739us_on_h100():
    m, g = get_model("Llama-3.2-1B"), get_gpu("H100")
    t = m.decode_read_bytes() / g.hbm_bandwidth
    assert abs(t - 739e-6) < 1.5e-6                           # weights alone: 737.8 us
    assert round(1 / t, -1) in (1350, 1360)                    # ~1350 forward passes per second


def test_o_projection_is_8MB_and_2_5us():
    m, g = get_model("Llama-3.2-1B"), get_gpu("H100")
    o = {x.name: x for x in m.layer_matrices()}["o"]
    assert (o.rows, o.cols) == (2048, 2048)
    assert round(o.bytes() / 1e6) == 8
    assert round(o.bytes() / g.hbm_bandwidth * 1e6, 1) == 2.5


def test_published_parameter_counts():
    assert round(get_model("Llama-3.1-8B").num_params / 1e9, 2) == 8.03
    assert round(get_model("CodeLlama-34B").num_params / 1e9, 1) == 33.7
    assert round(get_model("GPT-2-medium").num_params / 1e6) == 355


def test_layer_shapes_follow_gqa():
    m = get_model("Llama-3.2-1B")
    shapes = {x.name: (x.rows, x.cols) for x in m.layer_matrices()}
    assert shapes["k"] == (8 * 64, 2048) and shapes["q"] == (32 * 64, 2048)
    assert shapes["gate"] == shapes["up"] == (8192, 2048) and shapes["down"] == (2048, 8192)
    g = {x.name for x in get_model("gpt2-medium").layer_matrices()}
    assert "gate" not in g


def test_tied_embeddings_are_counted_once():
    m = get_model("Llama-3.2-1B")
    untied = Model(**{**m.__dict__, "tied_embeddings": False})
    assert untied.num_params - m.num_params == m.vocab_size * m.hidden_size


def test_codellama_tp4_slice():
    s = get_model("CodeLlama-34B").per_gpu(4)
    assert (s.num_heads, s.num_kv_heads) == (16, 2)
    with pytest.raises(ValueError, match="tp=3"):
        get_model("CodeLlama-34B").per_gpu(3)


def test_kv_bytes_per_token():
    # Llama-3.1-8B at 128K tokens: 537 MB per layer (lecture §6)
    m = get_model("Llama-3.1-8B")
    assert round(m.kv_bytes_per_token() / m.num_layers * 131072 / 1e6) == 537


def test_every_preset_has_source_and_date():
    for m in MODELS.values():
        assert m.source and len(m.as_of) == 10


def test_unknown_model_lists_known_ones():
    with pytest.raises(ValueError, match="Llama-3.2-1B"):
        get_model("Llama-4-Behemoth")
    with pytest.raises(TypeError):
        get_model(3)


def test_bad_configs_are_refused():
    m = get_model("Llama-3.2-1B")
    with pytest.raises(ValueError, match="num_kv_heads"):
        Model(**{**m.__dict__, "num_kv_heads": 5})
    with pytest.raises(ValueError, match="hidden_size"):
        Model(**{**m.__dict__, "hidden_size": 0})
    with pytest.raises(ValueError, match="mlp"):
        Model(**{**m.__dict__, "mlp": "moe"})
    with pytest.raises(ValueError):
        Matrix("q", 2, 2).bytes(0)


def test_gpus_and_models_share_one_lookup():
    """get_gpu and get_model go through checks.lookup: case-insensitive names and aliases, instances
    returned unchanged, one message naming the presets and the aliases."""
    from labcore.hardware import GPUS

    assert get_model("LLAMA-1B") is MODELS["Llama-3.2-1B"] and get_gpu("h100") is GPUS["H100-SXM"]
    m = get_model("gpt2-medium")
    assert get_model(m) is m
    with pytest.raises(ValueError, match=r"unknown GPU 'V100'; known presets: A100-40GB-SXM.*\(aliases: a100"):
        get_gpu("V100")
    with pytest.raises(ValueError, match=r"unknown model 'x'; known presets: Llama-3.2-1B.*\(aliases: llama-1b"):
        get_model("x")
    with pytest.raises(TypeError, match="gpu must be a preset name or a GPU"):
        get_gpu(3)


def test_decode_shapes_come_from_the_model_presets():
    """labcore.decode_model.DECODE_SHAPES reads models.py (one home of model shapes): no retyped copy."""
    from labcore.decode_model import DECODE_SHAPES

    l8 = get_model("Llama-3.1-8B")
    assert l8.weight_bytes() == 16_060_522_496                  # norms included (a retyped sum without them: 16,059,990,016)
    assert DECODE_SHAPES["Llama-3.1-8B"] == dict(num_q_heads=32, num_kv_heads=8, head_dim=128, num_layers=32,
                                                 source=l8.source)
    assert {k: DECODE_SHAPES["CodeLlama-34B (4-way TP)"][k] for k in ("num_q_heads", "num_kv_heads", "head_dim")} == \
        dict(num_q_heads=16, num_kv_heads=2, head_dim=128)
    assert DECODE_SHAPES["GPT-2 medium (MHA)"]["num_kv_heads"] == DECODE_SHAPES["GPT-2 medium (MHA)"]["num_q_heads"] == 16
    assert DECODE_SHAPES["Llama-3.2-1B"]["head_dim"] == 64 and DECODE_SHAPES["Llama-3.2-1B"]["num_layers"] == 16
