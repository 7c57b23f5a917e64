"""The decoder families of issue 16 (mpt, falcon, gpt_neox, gptj, gpt_bigcode, bloom, opt, phi,
starcoder2, gpt_oss), read from real config.json files (tests/ingest/configs, sources in SOURCES.md).

Golden parameter counts: what transformers 5.24.0 builds from the same file on the meta device
(`AutoModelForCausalLM.from_config(AutoConfig.for_model(**cfg))`, `model.num_parameters()`, tied
weights once; `auto_map` and `quantization_config` left out), run once by hand; transformers is not
needed to run these tests."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.memory import kv_bytes_per_sequence

CONFIGS = Path(__file__).parent / "configs"

# file: (model_type, parameters transformers 5.24.0 builds, (layers, KV heads, head dim) from the config)
GOLDEN = {
    "bloom-560m": ("bloom", 559_214_592, (24, 16, 64)),  # n_head 16, hidden 1024
    "falcon-7b-instruct": ("falcon", 6_921_720_704, (32, 1, 64)),  # multi_query: one KV head; 4544 / 71
    "falcon-40b-instruct": ("falcon", 41_303_293_952, (60, 8, 64)),  # new_decoder_architecture, num_kv_heads 8
    "gpt-j-6b": ("gptj", 6_050_882_784, (28, 16, 256)),  # 4096 / 16
    "gpt-oss-20b": ("gpt_oss", 20_914_757_184, (24, 8, 64)),  # head_dim 64 given
    "gpt_bigcode-santacoder": ("gpt_bigcode", 1_124_886_528, (24, 1, 128)),  # multi_query; 2048 / 16
    "mpt-7b-instruct": ("mpt", 6_649_286_656, (32, 32, 128)),  # multihead_attention; 4096 / 32
    "opt-6.7b": ("opt", 6_658_473_984, (32, 32, 128)),
    "phi-2": ("phi", 2_779_683_840, (32, 32, 80)),  # 2560 / 32
    "pythia-6.9b-h2ogpt": ("gpt_neox", 6_857_302_016, (32, 32, 128)),
    "redpajama-incite-3b-v1": ("gpt_neox", 2_775_864_320, (32, 32, 80)),
    "starcoder2-7b": ("starcoder2", 7_173_923_840, (32, 4, 128)),  # num_key_value_heads 4; 4608 / 36
}

# Small configs that reach the branches the real files do not (transformers 5.24.0, as above).
TINY = {
    "falcon-sequential-bias-alibi": ({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4,
                                      "num_hidden_layers": 2, "vocab_size": 100, "parallel_attn": False,
                                      "bias": True, "multi_query": False, "alibi": True}, 106_496),
    "falcon-new-arch-one-norm": ({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4,
                                  "num_kv_heads": 2, "new_decoder_architecture": True, "num_ln_in_parallel_attn": 1,
                                  "num_hidden_layers": 2, "vocab_size": 100}, 96_896),
    "gpt_neox-no-bias-tied": ({"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4,
                               "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100,
                               "attention_bias": False, "tie_word_embeddings": True}, 72_960),
    "gpt_bigcode-mha": ({"model_type": "gpt_bigcode", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100,
                         "n_positions": 32, "multi_query": False, "n_inner": 100}, 68_296),
    "opt-projected": ({"model_type": "opt", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                       "ffn_dim": 128, "vocab_size": 100, "word_embed_proj_dim": 32,
                       "max_position_embeddings": 32}, 76_544),
    "opt-post-norm-no-bias": ({"model_type": "opt", "hidden_size": 64, "num_attention_heads": 4,
                               "num_hidden_layers": 2, "ffn_dim": 128, "vocab_size": 100,
                               "max_position_embeddings": 32, "do_layer_norm_before": False,
                               "enable_bias": False}, 74_624),
    "opt-no-affine": ({"model_type": "opt", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                       "ffn_dim": 128, "vocab_size": 100, "max_position_embeddings": 32,
                       "layer_norm_elementwise_affine": False}, 75_008),
    "phi-qk-layernorm-gqa": ({"model_type": "phi", "hidden_size": 64, "num_attention_heads": 4,
                              "num_key_value_heads": 2, "qk_layernorm": True, "num_hidden_layers": 2,
                              "intermediate_size": 128, "vocab_size": 100}, 71_524),
    "starcoder2-no-bias-untied": ({"model_type": "starcoder2", "hidden_size": 64, "num_attention_heads": 4,
                                   "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 128,
                                   "vocab_size": 100, "use_bias": False, "tie_word_embeddings": False}, 70_784),
}


def load(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def test_every_config_file_has_a_golden_row_and_a_source():
    decoder_types = {row[0] for row in GOLDEN.values()}
    files = {p.stem for p in CONFIGS.glob("*.json") if load(p.stem).get("model_type") in decoder_types}
    assert files == set(GOLDEN)  # (the encoder configs have theirs in test_encoder_families.py)
    sources = (CONFIGS / "SOURCES.md").read_text()
    assert all(f"{name}.json" in sources for name in files)
    assert {row[0] for row in GOLDEN.values()} == {"mpt", "falcon", "gpt_neox", "gptj", "gpt_bigcode", "bloom", "opt",
                                                    "phi", "starcoder2", "gpt_oss"}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_parameters_equal_what_transformers_builds(name):
    model_type, params, _ = GOLDEN[name]
    arch = parse_config(load(name), name)
    assert arch.model_type == model_type
    assert arch.params == params


@pytest.mark.parametrize("name", sorted(TINY))
def test_branches_the_real_files_miss_equal_transformers(name):
    config, params = TINY[name]
    assert parse_config(dict(config)).params == params


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_kv_cache_per_token_follows_the_config_heads(name):
    _, _, (layers, kv_heads, head_dim) = GOLDEN[name]
    arch = parse_config(load(name), name)
    assert kv_bytes_per_sequence(arch, 1, "fp16") == layers * 2 * kv_heads * head_dim * 2


def test_gpt_oss_sliding_layers_hold_128_tokens():
    arch = parse_config(load("gpt-oss-20b"))
    assert [layer.attention.window for layer in arch.layers[:2]] == [128, None]
    per_token_layer = 2 * 8 * 64 * 2
    assert kv_bytes_per_sequence(arch, 4096, "fp16") == per_token_layer * (12 * 4096 + 12 * 128)
    # 4 of 32 experts per token: experts' weights (and biases) count 1/8 toward the active parameters
    expert = sum(t.numel for t in arch.tensors() if t.role == "expert")
    assert arch.active_params == arch.params - expert + expert // 8


def test_starcoder2_window_caps_the_cache():
    arch = parse_config(load("starcoder2-7b"))
    assert kv_bytes_per_sequence(arch, 8192, "fp16") == kv_bytes_per_sequence(arch, 4096, "fp16")


def test_alibi_models_have_no_rotary_op_and_bias_their_scores():
    for name in ("mpt-7b-instruct", "bloom-560m"):
        ledger = transformer_ledger(parse_config(load(name)), Step(batch=1, new_tokens=16, context=16))
        assert not [op for op in ledger.ops if op.op == "rotary_embedding"]
        attention = [op for op in ledger.ops if op.op == "attention"]
        assert all(any("ALiBi" in n for n in op.notes) for op in attention)


def test_partial_rotary_rotates_its_share_of_each_head():
    step = Step(batch=1, new_tokens=8, context=8)
    for name, share in (("pythia-6.9b-h2ogpt", 0.25), ("phi-2", 0.4), ("gpt-j-6b", 64 / 256)):
        arch = parse_config(load(name))
        a = arch.layers[0].attention
        assert a.rotary_dim == int(a.head_dim * share)
        rotary = next(op for op in transformer_ledger(arch, step).ops if op.op == "rotary_embedding")
        assert rotary.flops == 7 * step.tokens * (a.heads + a.kv_heads) * a.rotary_dim // 2


def test_parallel_layers_run_one_norm_per_branch_and_one_residual_add():
    step = Step(batch=1, new_tokens=4, context=4)
    for name, norms in (("gpt-j-6b", 1), ("falcon-7b-instruct", 1), ("falcon-40b-instruct", 2), ("phi-2", 1)):
        arch = parse_config(load(name))
        ops = [op for op in transformer_ledger(arch, step).ops if op.scope.startswith("model.layers.0")]
        assert arch.layers[0].parallel and arch.layers[0].norms == norms
        assert len([op for op in ops if op.op == "layer_norm"]) == norms
        assert len([op for op in ops if op.op == "add" and op.scope == "model.layers.0"]) == 1


def test_opt_and_bloom_embedding_extras_reach_the_ledger():
    step = Step(batch=1, new_tokens=4, context=4)
    bloom = transformer_ledger(parse_config(load("bloom-560m")), step)
    assert any(op.scope == "model.embeddings.LayerNorm" for op in bloom.ops)
    opt = parse_config(TINY["opt-projected"][0])
    scopes = {op.scope for op in transformer_ledger(opt, step).ops}
    assert {"model.project_in", "model.project_out"} <= scopes
    assert opt.positions == 32 + 2 and opt.max_context == 32  # OPT's learned positions carry an offset of 2


@pytest.mark.parametrize("change, message", [
    (("falcon-7b-instruct", {"multi_query": False, "num_kv_heads": 8}),
     "num_kv_heads = 8 without new_decoder_architecture"),
    (("falcon-40b-instruct", {"num_kv_heads": 7}), "num_kv_heads = 7 must divide num_attention_heads = 128"),
    (("falcon-7b-instruct", {"num_hidden_layers": None}), "missing field 'num_hidden_layers'"),
    (("gpt-oss-20b", {"experts_per_token": 8}), "experts_per_token = 8 contradicts num_experts_per_tok = 4"),
    (("gpt-oss-20b", {"num_experts_per_tok": 64, "experts_per_token": 64}),
     "num_experts_per_tok = 64 is more than num_local_experts = 32"),
    (("mpt-7b-instruct", {"attn_config": {"attn_type": "sparse"}}), "field 'attn_type' = 'sparse'"),
    (("mpt-7b-instruct", {"n_heads": 30}), "n_heads = 30 must divide d_model = 4,096"),
    (("gpt-j-6b", {"rotary_dim": 512}), "rotary_dim = 512 is more than the head dimension = 256"),
    (("opt-6.7b", {"ffn_dim": None}), "missing field 'ffn_dim'"),
    (("bloom-560m", {"n_head": 3}), "n_head = 3 must divide hidden_size = 1,024"),
    (("phi-2", {"partial_rotary_factor": 1.5}), "field 'partial_rotary_factor' = 1.5: expected a probability"),
    (("starcoder2-7b", {"num_key_value_heads": 5}), "num_key_value_heads = 5 must divide num_attention_heads = 36"),
    (("gpt_bigcode-santacoder", {"n_embd": "2048"}), "field 'n_embd' = '2048': expected a non-negative integer"),
])
def test_missing_or_contradictory_sizes_are_one_line_errors(change, message):
    name, edit = change
    config = {**load(name), **edit}  # an explicit null stays null, as in transformers (no class default)
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_mpt_says_where_the_llm_foundry_checkpoint_differs_from_transformers():
    arch = parse_config({**load("mpt-7b-instruct"),
                         "attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 8}})
    assert arch.layers[0].attention.kv_heads == 8
    assert any("transformers' MptForCausalLM would build multi-head attention" in a for a in arch.assumptions)
    real = parse_config(load("mpt-7b-instruct")).assumptions  # the real file: as transformers builds it
    assert not any("MptForCausalLM" in a for a in real) and any("ALiBi" in a for a in real)


def test_what_a_family_does_not_model_is_said():
    assert any("parallel attention and MLP" in a for a in parse_config(load("gpt-j-6b")).assumptions)
    oss = parse_config(load("gpt-oss-20b")).assumptions
    assert any("clamped SwiGLU" in a for a in oss) and any("quantization_config 'gptq'" in a for a in oss)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_sizeup_estimate_reads_each_config(name):
    run = subprocess.run([sys.executable, "-m", "sizeup", "estimate", str(CONFIGS / f"{name}.json"), "--device",
                          "h100-sxm-80gb", "--json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["model"]["params"] == GOLDEN[name][1]

    def numbers(value):
        if isinstance(value, dict):
            for v in value.values():
                yield from numbers(v)
        elif isinstance(value, list):
            for v in value:
                yield from numbers(v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield value

    assert all(math.isfinite(x) for x in numbers(result))
    assert result["memory"]["kv_cache_bytes"] > 0 and result["decode"]


@pytest.mark.parametrize("preset, name", [
    ("mpt-7b", "mpt-7b-instruct"), ("falcon-7b", "falcon-7b-instruct"), ("falcon-40b", "falcon-40b-instruct"),
    ("gpt-j-6b", "gpt-j-6b"), ("phi-2", "phi-2"), ("bloom-560m", "bloom-560m"), ("opt-6.7b", "opt-6.7b"),
    ("openai/gpt-oss-20b", "gpt-oss-20b"), ("starcoder2-7b", "starcoder2-7b"),
    ("redpajama-incite-3b-v1", "redpajama-incite-3b-v1"),
])
def test_presets_of_these_families_read_as_their_config_files(preset, name):
    from sizeup.ingest.hf_config import load_model

    assert load_model(preset).params == GOLDEN[name][1]
