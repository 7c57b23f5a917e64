"""The family registry: one reader per model_type, found without a hand-written list."""

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.families import registry
from sizeup.ingest.families.registry import family, model_types, parse_config, reader_for
from sizeup.ingest.hf_config import list_presets, load_model
from tests.ingest.model_files import PRESETS, preset_config


def test_every_preset_model_type_has_a_family():
    import json

    for path in PRESETS.glob("*.json"):
        model_type = json.loads(path.read_text())["config"]["model_type"]
        assert reader_for(model_type) is not None, (path.name, model_type)


def test_the_families_cover_the_documented_types():
    assert {"llama", "mistral", "granite", "phi3", "olmo2", "nemotron", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe",
            "gemma", "gemma2", "gemma3_text", "gemma3", "llava", "mistral3", "mixtral", "deepseek_v2", "deepseek_v3",
            "gpt2", "bert", "vit"} <= set(model_types())


def test_registering_a_model_type_twice_raises():
    with pytest.raises(ValueError, match="'llama' is already registered to read_llama"):
        family("llama")(lambda c, name: None)


def test_a_new_family_registers_by_decorator_alone(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    llama = reader_for("llama")

    @family("my_llama")
    def read_my_llama(c, name):
        return llama(c, name)

    arch = parse_config({**preset_config("llama-3.2-1b"), "model_type": "my_llama"})
    assert arch.params == load_model("llama-3.2-1b").params and not arch.assumptions


def test_the_unknown_model_type_message_lists_the_families(monkeypatch):
    """Without transformers installed (issue 16: no longer read as a LLaMA-style decoder)."""
    from sizeup.ingest import generic

    monkeypatch.setattr(generic, "transformers_available", lambda: False)
    with pytest.raises(ConfigError, match=r"unknown model_type 'mystery': no sizeup family reads it \(they read "
                                          r"bert, .*deepseek_v2.*\); to read it with transformers: "
                                          r"pip install 'sizeup\[hf\]'"):
        parse_config({**preset_config("llama-3.2-1b"), "model_type": "mystery", "vocab_size": None})


def test_every_reading_names_its_reader():
    assert load_model("llama-3.2-1b").reader == "analytic:llama"
    assert load_model("gemma-3-27b").reader == "analytic:gemma3_vl"


def test_a_wrapper_without_text_config_names_the_field():
    with pytest.raises(ConfigError, match="missing field 'text_config'"):
        parse_config({"model_type": "llava"})


def test_presets_still_load_through_hf_config():
    assert len(list_presets()) >= 30


def test_a_lookup_imports_only_the_family_that_names_the_type():
    """Start-up (issue 15): reading a llama config imports llama.py, not the other thirty family files."""
    import ast
    import os
    import subprocess
    import sys

    code = ("import sys; from sizeup.ingest.load import load_model; load_model('llama-3.1-8b');"
            "print(sorted(m.rpartition('.')[2] for m in sys.modules if m.startswith('sizeup.ingest.families.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = set(ast.literal_eval(proc.stdout))
    assert "llama" in loaded and not loaded & {"bloom", "falcon", "gpt_oss", "roberta", "deepseek"}
