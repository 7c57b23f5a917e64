"""Quantization names users type from a model card or a command line resolve to sizeup's formats: the shared
spellings of formats.py, and an engine's own spellings (engines/base.py FORMAT_NAMES) read under that engine."""

from __future__ import annotations

import pytest

from sizeup.api import estimate
from sizeup.engines.base import engine_format_name
from sizeup.errors import ConfigError
from sizeup.formats import get_format


@pytest.mark.parametrize("name, expected", [
    ("exl2 4.65bpw", "exl2-4.65bpw"), ("4.65bpw", "exl2-4.65bpw"), ("EXL2-4.0bpw", "exl2-4bpw"),
    ("Q4_K_M", "q4_k_m"), ("q4f16_1", "mlc-q4f16_1"), ("q0f16", "fp16"),
    ("int4wo-64", "int4-wo-g64"), ("int4wo", "int4-wo-g128"), ("int4_weight_only", "int4-wo-g128"),
    ("int4wo-32", "int4-wo-g32"), ("int4wo-64-hqq", "int4-wo-g64"), ("int8_weight_only", "int8-wo"),
    ("fp8wo", "fp8-wo"), ("gptq-4bit-128g", "gptq-int4"), ("4bit-128g", "gptq-int4"),
    ("load_in_8bit", "int8-bnb"), ("load_in_4bit", "bnb-fp4"), ("bnb-4bit", "nf4"), ("bnb nf4", "nf4"),
])
def test_shared_spellings(name, expected):
    assert get_format(name).id == expected


def test_exl2_without_bits_is_one_clear_line():
    with pytest.raises(ConfigError, match="bits per weight, e.g. exl2-4.65bpw"):
        get_format("exl2")


@pytest.mark.parametrize("engine, name, expected", [
    ("mlx", "4bit", "mlx-q4"), ("mlx@0.24.0", "8-bit", "mlx-q8"), ("mlx", "MLX 6bit", "mlx-q6"), ("mlx", "q3", "mlx-q3"),
    ("hf", "4bit", "bnb-fp4"), ("hf", "8bit", "int8-bnb"), ("transformers", "fp4", "bnb-fp4"),
    ("gpt-fast", "int4", "int4-wo-g32"), ("torch-compile", "int4.g64", "int4-wo-g64"), ("gpt-fast", "int8", "int8-wo"),
])
def test_engine_spellings(engine, name, expected):
    fmt, note = engine_format_name(engine, name)
    assert fmt == expected and name in note


def test_a_name_the_engine_does_not_spell_passes_through():
    assert engine_format_name("exllamav2", "4bit") == ("4bit", "")
    assert engine_format_name(None, "4bit") == ("4bit", "")
    with pytest.raises(ConfigError, match="unknown quantization '4bit'"):
        estimate("llama-2-7b", device="rtx-4090", engine="exllamav2", quant="4bit")


def test_estimate_reads_the_engine_spelling_and_says_so():
    result = estimate("llama-3.1-8b", device="MacBook Pro M3 Max", engine="mlx", quant="4bit")
    assert result.weights.id == "mlx-q4"
    assert any("--quant 4bit: mlx-q4 under mlx" in a for a in result.assumptions)


def test_a_device_table_reads_the_engine_spelling():
    from sizeup.api.devices import compare_devices

    rows = compare_devices("llama-3.1-8b", devices=["apple-m3-max"], engine="mlx", formats=["4bit"])
    assert rows[0].estimate.weights.id == "mlx-q4"
