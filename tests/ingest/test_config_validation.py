"""config.json at the edge: every case of issue 14 that reaches the config parser is a one-line
ConfigError naming the field, its value and what was expected, never another exception or a
silently accepted nonsense model."""

import json
import subprocess
import sys

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.hf_config import load_model, parse_config
from sizeup.ingest.limits import MAX_PARAMS
from tests.ingest.model_files import preset_config

CASES = [
    # (preset, change, message fragment)
    ("llama-3.2-1b", {"num_hidden_layers": 1_000_000},
     "field 'num_hidden_layers' = 1,000,000: expected at most 1,000 (the bound on layers)"),
    ("llama-3.2-1b", {"num_hidden_layers": 2**64 - 1}, "field 'num_hidden_layers' = 18,446,744,073,709,551,615"),
    ("llama-3.2-1b", {"vocab_size": 0}, "field 'vocab_size' = 0: expected a positive integer"),
    ("llama-3.2-1b", {"num_hidden_layers": 0}, "field 'num_hidden_layers' = 0: expected a positive integer"),
    ("gpt2", {"n_head": 0}, "field 'n_head' = 0: expected a positive integer"),
    ("vit-base-patch16-224", {"patch_size": 0}, "field 'patch_size' = 0: expected a positive integer"),
    ("mistral-7b", {"sliding_window": "big"},
     "field 'sliding_window' = 'big': expected a positive integer or null, got a string"),
    ("mixtral-8x7b", {"num_experts_per_tok": 9}, "num_experts_per_tok = 9 is more than num_local_experts = 8"),
    ("llama-3.2-1b", {"hidden_size": 32 * 10**400},
     "field 'hidden_size' = a 402-digit number: expected at most 1,000,000 (the bound on hidden size)"),
    ("llama-3.2-1b", {"head_dim": 0}, "field 'head_dim' = 0: expected a positive integer"),
    ("llama-3.2-1b", {"hidden_size": 2**70}, "expected at most 1,000,000 (the bound on hidden size)"),
    ("llama-3.2-1b", {"hidden_size": "2048"}, "field 'hidden_size' = '2048': expected a non-negative integer, got a string"),
    ("llama-3.2-1b", {"hidden_size": 2048.0}, "got a float"),
    ("llama-3.2-1b", {"num_hidden_layers": True}, "field 'num_hidden_layers' = True: expected a non-negative integer, got a boolean"),
    ("llama-3.2-1b", {"tie_word_embeddings": "yes"}, "field 'tie_word_embeddings' = 'yes': expected true or false"),
    ("llama-3.2-1b", {"num_attention_heads": 7, "num_key_value_heads": 7, "head_dim": None},
     "num_attention_heads = 7 must divide hidden_size = 2,048"),
    ("llama-3.2-1b", {"num_key_value_heads": 5}, "num_key_value_heads = 5 must divide num_attention_heads = 32"),
    ("llama-3.2-1b", {"max_position_embeddings": 10**12}, "expected at most 100,000,000 (the bound on context length)"),
    ("llama-3.2-1b", {"attention_dropout": 2}, "field 'attention_dropout' = 2: expected a probability from 0 to 1"),
    ("llama-3.2-1b", {"model_type": ["llama"]}, "field 'model_type' = ['llama']: expected a string"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [48]}, "field 'mlp_only_layers' = [48]: expected layer indices from 0 to 47"),
    ("qwen3-30b-a3b", {"num_experts_per_tok": 129}, "num_experts_per_tok = 129 is more than num_experts = 128"),
    ("deepseek-v3", {"kv_lora_rank": -1}, "field 'kv_lora_rank' = -1: expected a positive integer"),
    ("gemma-2-9b", {"sliding_window": 0}, "field 'sliding_window' = 0: expected a positive integer"),
    ("gemma-3-27b", {"text_config": "x"}, "field 'text_config' = 'x': expected an object, got a string"),
    ("vit-base-patch16-224", {"patch_size": 300}, "patch_size = 300 is more than image_size = 224"),
    ("bert-base-uncased", {"num_attention_heads": 5}, "num_attention_heads = 5 must divide hidden_size = 768"),
]


@pytest.mark.parametrize("preset, change, message", CASES, ids=[f"{p}:{next(iter(c))}" for p, c, _ in CASES])
def test_bad_fields_are_one_line_config_errors(preset, change, message):
    config = {k: v for k, v in {**preset_config(preset), **change}.items() if v is not None}
    with pytest.raises(ConfigError) as info:
        parse_config(config, where="config.json")
    text = str(info.value)
    assert message in text and "\n" not in text and text.startswith("config.json")


def test_a_model_past_the_parameter_bound_is_refused_though_each_field_is_in_bounds():
    config = {**preset_config("llama-3.2-1b"), "hidden_size": 1_000_000, "intermediate_size": 10_000_000,
              "num_hidden_layers": 1000, "head_dim": 64}
    with pytest.raises(ConfigError, match=r"3e\+16 parameters: expected at most 1e14 \(the bound on parameters\)"):
        parse_config(config)
    assert MAX_PARAMS == 10**14


def test_bounds_are_generous_enough_for_real_models():
    arch = parse_config({**preset_config("llama-3.2-1b"), "num_hidden_layers": 1000})
    assert arch.num_layers == 1000  # the bound itself is accepted
    assert load_model("llama-3.1-405b").params == pytest.approx(405.85e9, rel=0.001)


def test_sliding_window_null_is_global_attention():
    arch = parse_config({**preset_config("mistral-7b"), "sliding_window": None})
    assert all(layer.attention.window is None for layer in arch.layers)


def write_config(tmp_path, change):
    config = {**preset_config("llama-3.2-1b"), **change}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def run_estimate(path):
    return subprocess.run([sys.executable, "-m", "sizeup", "estimate", str(path), "--device", "rtx-4090"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("change, message", [
    ({"num_hidden_layers": 1_000_000}, "field 'num_hidden_layers' = 1,000,000: expected at most 1,000"),
    ({"vocab_size": 0}, "field 'vocab_size' = 0: expected a positive integer"),
    ({"hidden_size": 32 * 10**400}, "field 'hidden_size' = a 402-digit number"),
])
def test_cli_estimate_gives_one_line_and_exit_code_1(tmp_path, change, message):
    proc = run_estimate(write_config(tmp_path, change))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_estimate_refuses_a_latin1_config_in_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(json.dumps({**preset_config("llama-3.2-1b"), "name": "modèle"}, ensure_ascii=False)
                     .encode("latin-1"))
    proc = run_estimate(path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "not UTF-8 (byte 0xe8" in lines[0], proc.stderr


def test_cli_estimate_refuses_deep_nesting_in_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[" * 100_000)
    proc = run_estimate(path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "nested deeper than 32 levels" in lines[0], proc.stderr
