"""The exercises' texts type no preset value: statements, feedback and options are filled from labcore.

A statement, a mistake's feedback or a choice option that needs a GPU's rate, an SM count or a computed
result names it as a ``{placeholder}`` that :func:`flashbook.exercises.definitions.fill` fills from the
exercise's computed quantities, formatted by :mod:`labcore.units`. So the messages show the presets'
values, change when a preset changes, and ``definitions.py`` holds none of those numbers as text.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import flashbook.exercises
import labcore
from labcore import MODEL_DEFAULTS, GPUS, fmt_flop_rate, fmt_rate, get_gpu, get_model
from flashbook.exercises import EXERCISES, payload
from flashbook.exercises.definitions import fill

DEFINITIONS = [Path(flashbook.exercises.__file__).parent / f for f in (
    "defs_attention.py", "defs_hardware.py", "defs_scheduling.py", "defs_decode_scheduling.py", "feedback.py",
    "definitions.py")]


def _texts(pl: dict) -> str:
    """Every text of a payload a reader can see: statement, mistakes' feedback, options and their feedback."""
    out = [pl["statement"]]
    for p in pl["parts"]:
        out += [m["feedback"] for m in p.get("mistakes", [])]
        out += [o["text"] + " " + o["feedback"] for o in p.get("options") or []]
    return "\n".join(out)


def test_messages_show_the_presets_values():
    a100, h100 = get_gpu("A100"), get_gpu("H100")
    ex7 = _texts(payload(7))
    assert f"{fmt_flop_rate(a100.tensor_flops, digits=0)} / {fmt_flop_rate(a100.fp32_flops, digits=1)}" in ex7
    assert "312 TFLOP/s / 19.5 TFLOP/s" in ex7          # what the A100 preset holds today
    ex9 = _texts(payload(9))
    assert f"on {a100.num_sms} SMs" in ex9 and f"{fmt_rate(a100.hbm_bandwidth, unit='GB', digits=0)} / 64" in ex9
    assert f"the {fmt_rate(MODEL_DEFAULTS['per_sm_bandwidth_cap'], unit='GB', digits=0)} cap" in ex9
    assert f"{get_gpu('H100').num_sms} SMs take 2 waves" in _texts(payload(12))
    llama = get_model("Llama-3.1-8B")
    assert f"the {llama.num_kv_heads} KV heads, not the {llama.num_heads} query heads" in _texts(payload(10))
    assert f"{h100.num_sms} SMs" in _texts(payload(12))


def test_a_changed_preset_changes_the_messages(monkeypatch):
    """An A100 with other rates: exercises 7-9 state and give feedback with the new values."""
    real = labcore.get_gpu
    other = real("A100").with_(num_sms=100, tensor_flops=400e12, fp32_flops=25e12, hbm_bandwidth=2000e9)
    monkeypatch.setattr(labcore, "get_gpu", lambda name: other if str(name).upper().startswith("A100") else real(name))
    ex7, ex8, ex9 = (_texts(payload(k)) for k in (7, 8, 9))
    assert "400 TFLOP/s / 25.0 TFLOP/s" in ex7 and "312" not in ex7 and "19.5" not in ex7
    assert "400 TFLOP/s / 100 SMs = 4.00 TFLOP/s" in ex8 and "108" not in ex8
    assert "on 100 SMs" in ex9 and "2,000 GB/s / 64" in ex9 and "108" not in ex9 and "1,555" not in ex9


def test_fill_names_a_missing_quantity():
    assert fill("{n} SMs", {"n": 108}) == "108 SMs"
    with pytest.raises(KeyError):
        fill("{num_sms} SMs", {"sms": 108})


def _preset_numbers() -> set[float]:
    """The GPU presets' values as a message would write them (SMs, TFLOP/s, GB/s), and the decode model's
    constants (GB/s cap, % efficiency). Per-clock rates are left out: 4096 is also a problem size, N = 4096."""
    out = {MODEL_DEFAULTS["per_sm_bandwidth_cap"] / 1e9, 100 * MODEL_DEFAULTS["efficiency"]}
    for g in GPUS.values():
        out |= {g.num_sms, g.tensor_flops / 1e12, g.hbm_bandwidth / 1e9}
        if g.fp32_flops is not None:
            out.add(g.fp32_flops / 1e12)
    return out


def _string_literals(path: Path) -> list[str]:
    return [n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


#: a number standing alone in text ("312", "19.5", "1,555"), not part of a name ("A100", "exp2", "10^6")
NUMBER = re.compile(r"(?<![\w.^,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w^])")


def _typed_presets(texts) -> list[str]:
    presets = _preset_numbers()
    return [f"{m.group()} in {t!r}" for t in texts for m in NUMBER.finditer(t)
            if float(m.group().replace(",", "")) in presets]


def test_definitions_type_no_preset_value():
    assert _typed_presets([t for path in DEFINITIONS for t in _string_literals(path)]) == []


@pytest.mark.parametrize("k", [ex.number for ex in EXERCISES])
def test_rendered_texts_have_no_placeholder_left(k):
    assert not re.search(r"\{\w", _texts(payload(k)))
