"""Architectures from config.json: exact parameter counts against published figures, KV cache sizes."""

from pathlib import Path

import pytest
import yaml

from sizeup.errors import ConfigError, ResolveError
from sizeup.ingest.hf_config import list_presets, load_model, parse_config
from sizeup.price.memory import kv_bytes_per_sequence

PUBLISHED = yaml.safe_load((Path(__file__).parents[1] / "validation" / "param_counts.yaml").read_text())
LLAMA3_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}


def test_at_least_thirty_presets_all_load():
    names = list_presets()
    assert len(names) >= 30
    for name in names:
        assert load_model(name).params > 0


@pytest.mark.parametrize("row", PUBLISHED, ids=[r["model"] for r in PUBLISHED])
def test_parameter_counts_match_published_figures(row):
    arch = load_model(row["model"])
    if row["exact"]:
        assert arch.params == row["params"], row["source"]
    else:  # published figures rounded to 2-3 significant digits ("32.5B", "110M")
        assert arch.params == pytest.approx(row["params"], rel=0.01), row["source"]
    if row.get("active_params"):
        assert arch.active_params == pytest.approx(row["active_params"], rel=0.02), row["source"]


def test_moe_total_and_active_parameters():
    mixtral = load_model("mixtral-8x7b")
    assert mixtral.params == 46_702_792_704  # 46.7B total (Mistral AI, Mixtral of experts, 2023)
    assert mixtral.active_params == pytest.approx(12.9e9, rel=0.01)  # 2 of 8 experts per token
    ds = load_model("deepseek-v3")
    assert ds.params == pytest.approx(671e9, rel=0.001)  # DeepSeek-V3 report: 671B, MTP module excluded
    assert ds.active_params == pytest.approx(37e9, rel=0.02)


def test_kv_cache_per_token_follows_grouped_query_attention():
    llama3 = load_model("llama-3-8b")
    # 2 (K and V) · 32 layers · 8 KV heads · 128 head dim · 2 bytes = 131,072 bytes per token
    assert kv_bytes_per_sequence(llama3, 1, "fp16") == 2 * 32 * 8 * 128 * 2 == 131_072
    llama2 = load_model("llama-2-7b")  # 32 KV heads: 4x larger
    assert kv_bytes_per_sequence(llama2, 1, "fp16") == 4 * 131_072
    assert kv_bytes_per_sequence(llama3, 1000, "fp8") == 1000 * 131_072 // 2


def test_mla_cache_follows_the_latent_size():
    ds = load_model("deepseek-v3")
    # per token per layer: kv_lora_rank 512 + decoupled RoPE key 64, at 2 bytes; 61 layers
    assert kv_bytes_per_sequence(ds, 1, "bf16") == 61 * (512 + 64) * 2 == 70_272


def test_sliding_windows_cap_the_cache():
    gemma2 = load_model("gemma-2-9b")
    windows = [layer.attention.window for layer in gemma2.layers]
    assert windows[0] == 4096 and windows[1] is None  # alternating local / global
    short, long = kv_bytes_per_sequence(gemma2, 4096, "fp16"), kv_bytes_per_sequence(gemma2, 8192, "fp16")
    assert long - short == (8192 - 4096) * 21 * 2 * 8 * 256 * 2  # only the 21 global layers grow


def test_qwen2_has_qkv_bias_and_gated_mlp_from_model_type():
    qwen = load_model("qwen2.5-7b")
    assert qwen.layers[0].attention.qkv_bias and qwen.layers[0].mlp.gated
    gpt2 = load_model("gpt2")
    assert not gpt2.layers[0].mlp.gated and gpt2.tie_embeddings


def test_names_resolve_by_hf_id_and_alias():
    assert load_model("meta-llama/Llama-3.1-8B").params == 8_030_261_248
    with pytest.raises(ResolveError, match="unknown model 'llama-9-8b'; closest:"):
        load_model("llama-9-8b")


def test_config_file_and_folder(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps(LLAMA3_8B))
    assert load_model(str(tmp_path)).params == 8_030_261_248
    assert load_model(str(tmp_path / "config.json")).params == 8_030_261_248


@pytest.mark.parametrize("change, message", [
    ({"num_hidden_layers": None}, "missing field 'num_hidden_layers'"),
    ({"num_key_value_heads": 5}, "num_key_value_heads = 5 must divide num_attention_heads = 32"),
    ({"hidden_size": "big"}, "field 'hidden_size' = 'big': expected a non-negative integer"),
    ({"model_type": "mystery", "intermediate_size": None}, "unknown model_type 'mystery': no sizeup family reads it"),
])
def test_bad_configs_name_the_field(change, message):
    config = {**LLAMA3_8B, **change}  # an explicit null stays null, as in transformers (no class default)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_config(config)


def test_unknown_model_type_with_decoder_fields_is_refused_not_guessed():
    """Issue 16 changes this: an unknown model_type with the decoder fields used to be read as a LLaMA-style
    decoder with a note (a silent guess); now it is refused in one line (or read by transformers, which
    does not know 'mystery' either)."""
    with pytest.raises(ConfigError, match="unknown model_type 'mystery': no sizeup family reads it") as e:
        parse_config({**LLAMA3_8B, "model_type": "mystery", "hidden_act": "silu"})
    assert "\n" not in str(e.value)


def test_nemotron_has_a_plain_squared_relu_mlp_and_layer_norms():
    """Nemotron-4 15B (arXiv:2402.16819, table 1: 32 layers, hidden 6144, 48 heads, 8 KV heads, 256k
    vocabulary; squared-ReLU MLP without a gate, ffn 4 × hidden), as a Hugging Face 'nemotron' config."""
    h, ffn, layers, vocab, kv = 6144, 24576, 32, 256000, 8 * 128
    arch = parse_config({"model_type": "nemotron", "hidden_size": h, "num_hidden_layers": layers,
                         "num_attention_heads": 48, "num_key_value_heads": 8, "intermediate_size": ffn,
                         "vocab_size": vocab, "hidden_act": "relu2", "tie_word_embeddings": False})
    assert not arch.layers[0].mlp.gated and arch.norm == "layer"
    # the fields the config leaves out are NemotronConfig's defaults, and the estimate says so
    assert len(arch.assumptions) == 1 and arch.assumptions[0].startswith("filled from NemotronConfig defaults")
    assert "max_position_embeddings=4096" in arch.assumptions[0] and arch.max_context == 4096
    per_layer = (h * h + 2 * h * kv + h * h) + 2 * h * ffn + 2 * 2 * h  # attention, up + down, 2 LayerNorms
    assert arch.params == 2 * vocab * h + layers * per_layer + 2 * h
