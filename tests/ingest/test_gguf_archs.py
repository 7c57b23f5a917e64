"""GGUF headers of the architectures people download today read as the same model as its config.json.

Each header carries the metadata keys llama.cpp's converter writes for the model (gguf-py/gguf/constants.py and
convert_hf_to_gguf.py, read 2026-12-06: see sizeup.ingest.gguf_arch) with the figures of the model's HF config.json,
and its embedding, output and first-block expert tensors at their real shapes (header only: read as the head of a
larger file). The architecture built from it must have exactly the parameters of the one built from the config.json
(sizeup's built-in copy where there is one): the tolerance is 0, as every figure is carried over, not estimated."""

from __future__ import annotations

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.families.registry import parse_config
from sizeup.ingest.gguf import gguf_config, read_gguf_header
from tests.ingest.model_files import ARRAY, F32, STRING, U32, gguf_bytes, preset_config

Q8_0 = 8
WHOLE_FILE = 10**14  # bytes: the header is read as the head of a file this large: the tensor data is not written


def _header(tmp_path, arch: str, keys: dict, vocab: int, hidden: int, tied: bool = False, experts=None):
    kvs = [("general.architecture", STRING, arch), ("general.name", STRING, arch),
           ("tokenizer.ggml.tokens", ARRAY, (STRING, ["t"] * vocab))]
    kvs += [(f"{arch}.{k}", F32 if isinstance(v, float) else U32, v) for k, v in keys.items()]
    tensors = [("token_embd.weight", (hidden, vocab), Q8_0)]
    tensors += [] if tied else [("output.weight", (hidden, vocab), Q8_0)]
    if experts:  # (n_experts, expert width): blk.N.ffn_*_exps as the converter merges them
        n, width = experts
        block = keys.get("leading_dense_block_count", 0)
        tensors += [(f"blk.{block}.ffn_gate_exps.weight", (hidden, width, n), Q8_0),
                    (f"blk.{block}.ffn_up_exps.weight", (hidden, width, n), Q8_0),
                    (f"blk.{block}.ffn_down_exps.weight", (width, hidden, n), Q8_0)]
    path = tmp_path / f"{arch}.gguf"
    path.write_bytes(gguf_bytes(kvs, tensors, data=False))
    return read_gguf_header(path, prefix_of=WHOLE_FILE)


def _from_gguf(header):
    config, sources = gguf_config(header)
    return parse_config(config, name="gguf", where=header.path, sources=sources)


def _filled(arch) -> set[str]:
    """The fields the parser filled from class defaults (its assumption line "filled from ...: k=v, k=v")."""
    notes = [a.rsplit("): ", 1)[1] for a in arch.assumptions if a.startswith("filled from")]
    return {item.split("=", 1)[0] for note in notes for item in note.split(", ")}


NOT_IN_GGUF = {"hidden_act", "hidden_activation", "attention_bias", "attention_dropout", "mlp_bias", "rms_norm_eps",
               "embd_pdrop", "resid_pdrop"}
"""Fields no GGUF key gives (the activation is the architecture's; dropouts are training-only): the only ones a class
default may fill here."""


def _same_params(header, hf_config: dict):
    arch, expected = _from_gguf(header), parse_config(dict(hf_config), name="hf", where="config.json")
    assert arch.model_type == expected.model_type
    assert arch.params == expected.params
    assert arch.active_params == expected.active_params
    assert _filled(arch) <= NOT_IN_GGUF, _filled(arch)
    return arch


def test_qwen3_30b_a3b(tmp_path):
    """Qwen/Qwen3-30B-A3B config.json (sizeup's built-in copy): 48 layers, 128 experts, 8 used, width 768."""
    keys = {"embedding_length": 2048, "block_count": 48, "feed_forward_length": 6144, "attention.head_count": 32,
            "attention.head_count_kv": 4, "attention.key_length": 128, "attention.value_length": 128,
            "context_length": 40960, "expert_count": 128, "expert_used_count": 8, "expert_feed_forward_length": 768}
    arch = _same_params(_header(tmp_path, "qwen3moe", keys, 151936, 2048, experts=(128, 768)),
                        preset_config("qwen3-30b-a3b"))
    assert round(arch.params / 1e9, 2) == 30.53


def test_qwen3_235b_a22b(tmp_path):
    """Qwen/Qwen3-235B-A22B config.json (built-in copy): 94 layers, 64 heads, 4 KV heads, 128 experts of 1536."""
    keys = {"embedding_length": 4096, "block_count": 94, "feed_forward_length": 12288, "attention.head_count": 64,
            "attention.head_count_kv": 4, "attention.key_length": 128, "attention.value_length": 128,
            "context_length": 40960, "expert_count": 128, "expert_used_count": 8, "expert_feed_forward_length": 1536}
    _same_params(_header(tmp_path, "qwen3moe", keys, 151936, 4096, experts=(128, 1536)),
                 preset_config("qwen3-235b-a22b"))


QWEN15_MOE = {"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24, "intermediate_size": 5632,
              "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
              "num_experts_per_tok": 4, "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936,
              "max_position_embeddings": 8192, "tie_word_embeddings": False}
"""Qwen/Qwen1.5-MoE-A2.7B config.json (huggingface.co, the fields that size it)."""


def test_qwen2moe_qwen15_moe_a27b(tmp_path):
    keys = {"embedding_length": 2048, "block_count": 24, "feed_forward_length": 5632, "attention.head_count": 16,
            "attention.head_count_kv": 16, "context_length": 8192, "expert_count": 60, "expert_used_count": 4,
            "expert_feed_forward_length": 1408, "expert_shared_feed_forward_length": 5632}
    arch = _same_params(_header(tmp_path, "qwen2moe", keys, 151936, 2048, experts=(60, 1408)), QWEN15_MOE)
    assert 14.2e9 < arch.params < 14.4e9  # Qwen's model card: 14.3B parameters


def test_gpt_oss_20b(tmp_path):
    """openai/gpt-oss-20b config.json (built-in copy): 24 layers, 32 experts of 2880, 4 used, 128-token windows."""
    keys = {"embedding_length": 2880, "block_count": 24, "feed_forward_length": 2880, "attention.head_count": 64,
            "attention.head_count_kv": 8, "attention.key_length": 64, "attention.value_length": 64,
            "context_length": 131072, "expert_count": 32, "expert_used_count": 4, "expert_feed_forward_length": 2880,
            "attention.sliding_window": 128}
    _same_params(_header(tmp_path, "gpt-oss", keys, 201088, 2880, experts=(32, 2880)), preset_config("gpt-oss-20b"))


def test_gemma3_1b(tmp_path):
    """google/gemma-3-1b-pt config.json (built-in copy); tied embeddings: no output tensor."""
    keys = {"embedding_length": 1152, "block_count": 26, "feed_forward_length": 6912, "attention.head_count": 4,
            "attention.head_count_kv": 1, "attention.key_length": 256, "attention.value_length": 256,
            "context_length": 32768, "attention.sliding_window": 512}
    _same_params(_header(tmp_path, "gemma3", keys, 262144, 1152, tied=True), preset_config("gemma-3-1b"))


def _deepseek_v3_keys() -> dict:
    """deepseek-ai/DeepSeek-V3 config.json as DeepseekV2Model writes it: MLA as MQA over the 512-wide latent."""
    return {"embedding_length": 7168, "block_count": 61, "feed_forward_length": 18432, "attention.head_count": 128,
            "attention.head_count_kv": 1, "attention.key_length": 576, "attention.value_length": 512,
            "attention.key_length_mla": 192, "attention.value_length_mla": 128, "rope.dimension_count": 64,
            "attention.q_lora_rank": 1536, "attention.kv_lora_rank": 512, "context_length": 163840,
            "leading_dense_block_count": 3, "expert_count": 256, "expert_used_count": 8, "expert_shared_count": 1,
            "expert_feed_forward_length": 2048, "expert_weights_scale": 2.5, "expert_gating_func": 2}


def test_deepseek_v3(tmp_path):
    """Built-in copy of the config.json. The converter drops the multi-token-prediction layer (skip_mtp), which
    sizeup leaves out of the parameters of a config.json too (inference runs the main model): same 671.03B."""
    arch = _same_params(_header(tmp_path, "deepseek2", _deepseek_v3_keys(), 129280, 7168, experts=(256, 2048)),
                        preset_config("deepseek-v3"))
    assert arch.model_type == "deepseek_v3" and arch.mtp_layers == 0 and round(arch.params / 1e9, 2) == 671.03


DEEPSEEK_V2_LITE = {"model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
                    "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_attention_heads": 16,
                    "num_key_value_heads": 16, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
                    "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
                    "qk_rope_head_dim": 64, "v_head_dim": 128, "topk_method": "greedy", "vocab_size": 102400,
                    "max_position_embeddings": 163840, "tie_word_embeddings": False}
"""deepseek-ai/DeepSeek-V2-Lite config.json (huggingface.co): no query compression (q_lora_rank null)."""


def test_deepseek_v2_lite_without_q_lora_and_an_older_file(tmp_path):
    keys = {"embedding_length": 2048, "block_count": 27, "feed_forward_length": 10944, "attention.head_count": 16,
            "attention.head_count_kv": 1, "attention.key_length": 576, "attention.value_length": 512,
            "attention.key_length_mla": 192, "attention.value_length_mla": 128, "rope.dimension_count": 64,
            "attention.kv_lora_rank": 512, "context_length": 163840, "leading_dense_block_count": 1,
            "expert_count": 64, "expert_used_count": 6, "expert_shared_count": 2, "expert_feed_forward_length": 1408}
    arch = _same_params(_header(tmp_path, "deepseek2", keys, 102400, 2048, experts=(64, 1408)), DEEPSEEK_V2_LITE)
    assert 15.6e9 < arch.params < 15.8e9  # DeepSeek's model card: 15.7B
    older = {k: v for k, v in keys.items() if not k.endswith("_mla")}  # before key_length_mla: no absorption
    older.update({"attention.head_count_kv": 16, "attention.key_length": 192, "attention.value_length": 128})
    _same_params(_header(tmp_path, "deepseek2", older, 102400, 2048, experts=(64, 1408)), DEEPSEEK_V2_LITE)
    del keys["rope.dimension_count"]
    with pytest.raises(ConfigError, match=r"GGUF deepseek2.rope.dimension_count = None: expected an integer"):
        _from_gguf(_header(tmp_path, "deepseek2", keys, 102400, 2048, experts=(64, 1408)))


def test_qwen3_next_80b_a3b(tmp_path):
    """Qwen/Qwen3-Next-80B-A3B-Instruct config.json (built-in copy), as Qwen3NextModel writes it: the Gated
    DeltaNet widths in ssm.*, the rotary width (head_dim x 0.25) in rope.dimension_count."""
    keys = {"embedding_length": 2048, "block_count": 48, "feed_forward_length": 5120, "attention.head_count": 16,
            "attention.head_count_kv": 2, "attention.key_length": 256, "attention.value_length": 256,
            "context_length": 262144, "expert_count": 512, "expert_used_count": 10, "expert_feed_forward_length": 512,
            "expert_shared_feed_forward_length": 512, "ssm.conv_kernel": 4, "ssm.state_size": 128,
            "ssm.group_count": 16, "ssm.time_step_rank": 32, "ssm.inner_size": 4096, "full_attention_interval": 4,
            "rope.dimension_count": 64}
    _same_params(_header(tmp_path, "qwen3next", keys, 151936, 2048, experts=(512, 512)),
                 preset_config("qwen3-next-80b-a3b-instruct"))


OLMO2_7B = {"model_type": "olmo2", "hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 11008,
            "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100352,
            "max_position_embeddings": 4096, "tie_word_embeddings": False}
"""allenai/OLMo-2-1124-7B config.json (huggingface.co)."""

GRANITE_8B = {"model_type": "granite", "hidden_size": 4096, "num_hidden_layers": 40, "intermediate_size": 12800,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 49155,
              "max_position_embeddings": 131072, "tie_word_embeddings": True}
"""ibm-granite/granite-3.1-8b-instruct config.json (huggingface.co): tied embeddings."""


@pytest.mark.parametrize("arch_name, hf, tied", [("olmo2", OLMO2_7B, False), ("granite", GRANITE_8B, True)])
def test_dense_olmo2_and_granite(tmp_path, arch_name, hf, tied):
    keys = {"embedding_length": hf["hidden_size"], "block_count": hf["num_hidden_layers"],
            "feed_forward_length": hf["intermediate_size"], "attention.head_count": hf["num_attention_heads"],
            "attention.head_count_kv": hf["num_key_value_heads"], "context_length": hf["max_position_embeddings"]}
    _same_params(_header(tmp_path, arch_name, keys, hf["vocab_size"], hf["hidden_size"], tied=tied), hf)


def test_phi4_is_the_phi3_architecture(tmp_path):
    """microsoft/phi-4 GGUFs say `phi3` (Phi3ForCausalLM); built-in copy of its config.json."""
    keys = {"embedding_length": 5120, "block_count": 40, "feed_forward_length": 17920, "attention.head_count": 40,
            "attention.head_count_kv": 10, "context_length": 16384}
    _same_params(_header(tmp_path, "phi3", keys, 100352, 5120), preset_config("phi-4"))


def test_a_missing_key_with_a_class_default_is_filled_and_said(tmp_path):
    keys = {"embedding_length": 2048, "block_count": 48, "feed_forward_length": 6144, "attention.head_count": 32,
            "attention.head_count_kv": 4, "attention.key_length": 128, "context_length": 40960, "expert_count": 128,
            "expert_used_count": 8}  # no expert_feed_forward_length: Qwen3MoeConfig's default, 768
    arch = _from_gguf(_header(tmp_path, "qwen3moe", keys, 151936, 2048, experts=(128, 768)))
    assert "moe_intermediate_size" in _filled(arch) and arch.layers[0].mlp.intermediate == 768


@pytest.mark.parametrize("name", ["llama4", "command-r", "cohere2", "glm4moe", "granitemoe"])
def test_architectures_no_family_reads_keep_the_clear_error(tmp_path, name):
    header = _header(tmp_path, name, {"embedding_length": 64, "block_count": 2}, 96, 64)
    with pytest.raises(ConfigError, match=f"GGUF architecture '{name}' is not supported \\(expected one of .*qwen3moe"):
        gguf_config(header)


def test_a_missing_key_without_a_class_default_names_the_gguf_key():
    from sizeup.ingest.families.fields import HIDDEN, Fields

    c = Fields({"model_type": "llama"}, "m.gguf (GGUF metadata)", {"hidden_size": "llama.embedding_length"})
    with pytest.raises(ConfigError, match=r"^m.gguf \(GGUF metadata\): missing field 'hidden_size' \(GGUF 'llama."
                                          r"embedding_length', not in the file\) \(needed for model_type 'llama'\)$"):
        c.int("hidden_size", bound=HIDDEN)


@pytest.mark.parametrize("arch_name, keys, expected_type", [
    ("qwen3moe", {"expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 32}, "qwen3_moe"),
    ("deepseek2", {"expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 32,
                   "expert_shared_count": 1, "attention.kv_lora_rank": 32, "attention.key_length_mla": 24,
                   "attention.value_length_mla": 16, "rope.dimension_count": 8, "leading_dense_block_count": 0},
     "deepseek_v2")])
def test_a_whole_small_moe_file_is_estimated(tmp_path, arch_name, keys, expected_type):
    """The path a user takes: `sizeup estimate FILE.gguf` on a whole (tiny) file of the architecture."""
    from sizeup.api import estimate
    from sizeup.ingest.headers import model_from_header

    meta = {"embedding_length": 64, "block_count": 2, "feed_forward_length": 128, "attention.head_count": 4,
            "attention.head_count_kv": 2, "context_length": 2048, **keys}
    kvs = [("general.architecture", STRING, arch_name), ("general.file_type", U32, 7),
           ("tokenizer.ggml.tokens", ARRAY, (STRING, ["t"] * 96))]
    kvs += [(f"{arch_name}.{k}", U32, v) for k, v in meta.items()]
    tensors = [("token_embd.weight", (64, 96), Q8_0), ("output.weight", (64, 96), Q8_0),
               ("blk.0.ffn_gate_exps.weight", (64, 32, 4), Q8_0)]
    path = tmp_path / "tiny.gguf"
    path.write_bytes(gguf_bytes(kvs, tensors))
    arch = model_from_header(path)
    assert (arch.model_type, arch.stored_format) == (expected_type, "q8_0")
    assert arch.layers[1].mlp.experts == 4 and arch.layers[1].mlp.intermediate == 32
    result = estimate(str(path), device="rtx-4090", prompt=64, output=16)
    assert result.weights.id == "q8_0" and result.memory.weights_bytes > 0
