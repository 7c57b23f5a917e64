"""The generic reader (sizeup.ingest.generic): transformers builds the model on the meta device; the
parameter count is exact, the reader is named, and what it cannot read is refused in one line."""

import json
import subprocess
import sys

import pytest

from sizeup.errors import ConfigError, SizeupError
from sizeup.ingest import generic
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.generic import role_of
from tests.ingest.model_files import preset_config

needs_transformers = pytest.mark.skipif(not generic.transformers_available(),
                                        reason="transformers is not installed (pip install 'sizeup[hf]')")

TINY_UNKNOWN = {"model_type": "stablelm", "architectures": ["StableLmForCausalLM"], "hidden_size": 64,
                "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
                "vocab_size": 100, "max_position_embeddings": 256, "tie_word_embeddings": False}
"""StableLM: a model_type no analytic family reads (LayerNorm, partial rotary, gated SiLU MLP)."""


@pytest.mark.parametrize("path, role", [
    ("model.layers.3.self_attn.q_proj.weight", "attention"), ("model.layers.0.mlp.down_proj.weight", "mlp"),
    ("model.layers.0.mlp.experts.gate_up_proj", "expert"), ("model.layers.0.mlp.gate.weight", "router"),
    ("model.embed_tokens.weight", "embedding"), ("lm_head.weight", "lm_head"),
    ("model.layers.1.input_layernorm.weight", "norm"), ("embeddings.LayerNorm.bias", "norm"),
    ("vision_tower.blocks.0.attn.qkv.weight", "vision"), ("multi_modal_projector.linear_1.weight", "projector"),
    ("backbone.layers.0.mixer.A_log", "ssm"), ("embeddings.position_embeddings.weight", "position"),
    ("encoder.block.0.layer.0.SelfAttention.q.weight", "encoder"), ("pooler.dense.weight", "pooler"),
])
def test_roles_follow_the_module_path(path, role):
    assert role_of(path) == role


def test_remote_code_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="'auto_map' .*sizeup does not run remote code") as e:
        parse_config({**TINY_UNKNOWN, "model_type": "my_remote", "auto_map": {"AutoConfig": "x.Config"}})
    assert "\n" not in str(e.value)


def test_a_model_type_transformers_does_not_know_is_one_line():
    if not generic.transformers_available():
        pytest.skip("transformers is not installed")
    with pytest.raises(ConfigError, match="unknown model_type 'nonesuch': no sizeup family reads it and "
                                          "transformers .* does not know it") as e:
        parse_config({**TINY_UNKNOWN, "model_type": "nonesuch"})
    assert "\n" not in str(e.value)


def test_without_transformers_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setattr(generic, "transformers_available", lambda: False)
    with pytest.raises(ConfigError, match=r"unknown model_type 'stablelm'.*pip install 'sizeup\[hf\]'"):
        parse_config(TINY_UNKNOWN)


def test_sizes_are_bounded_before_transformers_builds_anything():
    with pytest.raises(ConfigError, match="'num_hidden_layers' = 1,000,000,000: expected at most 1,000"):
        parse_config({**TINY_UNKNOWN, "num_hidden_layers": 10**9})


@needs_transformers
def test_an_unknown_family_is_read_exactly_by_transformers():
    arch = parse_config(TINY_UNKNOWN, "tiny")
    # StableLmForCausalLM counted by hand: embeddings 100·64, per layer q 64·64+64 (q/k/v biases default to
    # use_qkv_bias=False: no bias), k and v 64·32, o 64·64, MLP 3·64·96, two LayerNorms 2·(64+64); final
    # LayerNorm 128; untied LM head 100·64
    per_layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 96 + 4 * 64
    assert arch.params == 100 * 64 + 2 * per_layer + 128 + 100 * 64
    assert arch.reader.startswith("transformers ") and arch.reader.endswith(" (meta device)")
    assert arch.num_layers == 2 and arch.layers[0].mlp.gated and arch.norm == "layer"


@needs_transformers
def test_the_generic_reading_of_a_preset_equals_the_analytic_one():
    config = preset_config("qwen3-8b")
    arch = generic.read_generic(config, "qwen3-8b")
    analytic = parse_config(config, "qwen3-8b")
    assert arch.params == analytic.params and arch.layers == analytic.layers
    assert analytic.reader == "analytic:qwen" and arch.reader == generic.transformers_reader()


@needs_transformers
@pytest.mark.parametrize("preset", ["phi-3-mini", "gemma-2-9b", "gemma-3-1b", "bert-base-uncased"])
def test_fused_projections_windows_and_encoders_map_like_their_families(preset):
    """Phi-3 fuses q/k/v and gate/up; Gemma 2 alternates sliding and global layers (transformers' layer_types);
    Gemma 3 names its activation hidden_activation; BERT is a post-norm encoder."""
    config = preset_config(preset)
    arch, analytic = generic.read_generic(config, preset), parse_config(config, preset)
    assert arch.params == analytic.params and arch.layers == analytic.layers


@needs_transformers
def test_a_structure_that_does_not_map_is_refused_in_one_line():
    with pytest.raises(SizeupError, match="do not map onto sizeup's layers .*mixture-of-experts") as e:
        generic.read_generic(preset_config("mixtral-8x7b"))
    assert "\n" not in str(e.value)


@needs_transformers
def test_the_estimate_names_the_reader(tmp_path):
    from sizeup.api import estimate

    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY_UNKNOWN))
    result = estimate(str(path), device="rtx-4090", prompt=16, output=4).to_dict()
    assert result["model"]["reader"].startswith("transformers ")
    assert estimate("llama-3.2-1b", device="rtx-4090").to_dict()["model"]["reader"] == "analytic:llama"


@needs_transformers
def test_the_traced_step_counts_the_matmuls():
    ledger = generic.generic_ledger(TINY_UNKNOWN, batch=1, tokens=8, dtype="fp32")
    matmul_flops = sum(o.flops for o in ledger.ops if o.kind.value == "matmul")
    # every linear of the two layers plus the LM head, 2 FLOPs per multiply-add, 8 tokens
    linear_weights = 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 96) + 100 * 64
    assert matmul_flops >= 2 * 8 * linear_weights


def test_the_core_does_not_import_torch_or_transformers():
    code = ("import sys; from sizeup.ingest.load import load_model; from sizeup.api import estimate; "
            "estimate('llama-3.1-8b', device='rtx-4090'); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
