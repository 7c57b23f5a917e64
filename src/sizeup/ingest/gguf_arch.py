"""GGUF `general.architecture` -> the config.json fields the sizeup family of that model reads.

Key names from ggml-org/llama.cpp gguf-py/gguf/constants.py (Keys.LLM, Keys.Attention, Keys.Rope, Keys.SSM; commit
0024aa74, read 2026-12-06) and from which HF field the converter writes to each key, per class
(convert_hf_to_gguf.py and its conversion/ modules, read 2026-12-06): TextModel.set_gguf_parameters writes the common
keys; Qwen2MoeModel (and Qwen3MoeModel, Qwen3NextModel, its subclasses) expert_feed_forward_length =
moe_intermediate_size, expert_shared_feed_forward_length = shared_expert_intermediate_size; Qwen3NextModel
ssm.conv_kernel = linear_conv_kernel_dim, ssm.state_size = linear_key_head_dim, ssm.group_count =
linear_num_key_heads, ssm.time_step_rank = linear_num_value_heads, ssm.inner_size = linear_value_head_dim *
linear_num_value_heads, full_attention_interval, rope.dimension_count = head_dim * partial_rotary_factor; GptOssModel
expert_feed_forward_length = intermediate_size (the expert width), sliding_window; DeepseekV2Model (also V3/R1)
attention.head_count_kv = 1 and attention.key_length = kv_lora_rank + qk_rope_head_dim (MLA stored as MQA over the
latent), attention.key_length_mla = qk_nope_head_dim + qk_rope_head_dim, attention.value_length_mla = v_head_dim,
rope.dimension_count = qk_rope_head_dim, q_lora_rank only when not null, leading_dense_block_count =
first_k_dense_replace, expert_shared_count = n_shared_experts, and it drops the multi-token-prediction layers.

A field a file leaves out is left out here: the config parser fills transformers' class default of the model_type
when there is one (as for a config.json), else stops naming the field and the GGUF key it is read from."""

from __future__ import annotations

from typing import Any, Callable

from sizeup.errors import ConfigError

COMMON = {
    "embedding_length": "hidden_size", "block_count": "num_hidden_layers", "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads", "attention.head_count_kv": "num_key_value_heads",
    "context_length": "max_position_embeddings", "attention.key_length": "head_dim", "vocab_size": "vocab_size",
    "attention.sliding_window": "sliding_window",
}
"""GGUF keys ({arch}.*) every architecture here shares, and the config.json field each gives."""

_MIXTRAL = {"expert_count": "num_local_experts", "expert_used_count": "num_experts_per_tok"}
_QWEN_MOE = {"expert_count": "num_experts", "expert_used_count": "num_experts_per_tok",
             "expert_feed_forward_length": "moe_intermediate_size",
             "expert_shared_feed_forward_length": "shared_expert_intermediate_size"}
_QWEN3_NEXT = {**_QWEN_MOE, "ssm.conv_kernel": "linear_conv_kernel_dim", "ssm.state_size": "linear_key_head_dim",
               "ssm.group_count": "linear_num_key_heads", "ssm.time_step_rank": "linear_num_value_heads",
               "full_attention_interval": "full_attention_interval"}
_GPT_OSS = {**_MIXTRAL, "expert_feed_forward_length": "intermediate_size"}
_DEEPSEEK = {"expert_count": "n_routed_experts", "expert_used_count": "num_experts_per_tok",
             "expert_feed_forward_length": "moe_intermediate_size", "expert_shared_count": "n_shared_experts",
             "leading_dense_block_count": "first_k_dense_replace", "attention.q_lora_rank": "q_lora_rank",
             "attention.kv_lora_rank": "kv_lora_rank", "rope.dimension_count": "qk_rope_head_dim",
             "attention.value_length_mla": "v_head_dim", "nextn_predict_layers": "num_nextn_predict_layers"}

_QWEN_MOE_FIXED = {"decoder_sparse_step": 1, "mlp_only_layers": [], "use_sliding_window": False, "sliding_window": None}
"""What llama.cpp's qwen2moe / qwen3moe / qwen3next graphs build whatever the checkpoint's config said (no key holds
it): every layer a MoE layer, full attention (the converter writes no sparse step, dense layers or window)."""

Derive = Callable[[str, dict[str, Any], dict[str, Any], dict[str, str]], None]


def _key(meta: dict[str, Any], arch: str, key: str, path: str) -> int:
    value = meta.get(f"{arch}.{key}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path}: GGUF {arch}.{key!s} = {value!r}: expected an integer (the {arch} family needs it)")
    return value


def _qwen3_next(arch: str, meta: dict[str, Any], config: dict[str, Any], sources: dict[str, str]) -> None:
    """linear_value_head_dim = ssm.inner_size / ssm.time_step_rank; partial_rotary_factor = rope.dimension_count /
    attention.key_length (the converter's products, divided back)."""
    path = sources.pop("_path")
    inner, value_heads = meta.get(f"{arch}.ssm.inner_size"), meta.get(f"{arch}.ssm.time_step_rank")
    if inner is not None and value_heads is not None:
        inner, value_heads = _key(meta, arch, "ssm.inner_size", path), _key(meta, arch, "ssm.time_step_rank", path)
        if value_heads == 0 or inner % value_heads:
            raise ConfigError(f"{path}: GGUF {arch}.ssm.inner_size = {inner} is not a multiple of "
                              f"{arch}.ssm.time_step_rank = {value_heads}: expected value heads x head width")
        config["linear_value_head_dim"] = inner // value_heads
        sources["linear_value_head_dim"] = f"{arch}.ssm.inner_size / {arch}.ssm.time_step_rank"
    rope, head = meta.get(f"{arch}.rope.dimension_count"), config.get("head_dim")
    if rope is not None and head is not None:
        rope, head = _key(meta, arch, "rope.dimension_count", path), _key(meta, arch, "attention.key_length", path)
        config["partial_rotary_factor"] = rope / head if head else rope
        sources["partial_rotary_factor"] = f"{arch}.rope.dimension_count / {arch}.attention.key_length"


def _deepseek(arch: str, meta: dict[str, Any], config: dict[str, Any], sources: dict[str, str]) -> None:
    """MLA: the file's head_count_kv (1) and key_length (kv_lora_rank + rope) describe llama.cpp's MQA view over the
    latent, not the model's heads; qk_nope_head_dim = key_length_mla - rope.dimension_count. Files written before
    key_length_mla was added stored key_length = qk_nope + qk_rope and value_length = v_head_dim instead. A sigmoid
    gate (expert_gating_func 2) is DeepSeek-V3's routing (noaux_tc, with a routing bias); else V2's softmax."""
    path = sources.pop("_path")
    config.pop("head_dim", None)
    sources.pop("head_dim", None)
    if "num_attention_heads" in config:  # MLA: every head has its own keys, as DeepSeek's config.json says
        config["num_key_value_heads"] = config["num_attention_heads"]
        sources["num_key_value_heads"] = f"{arch}.attention.head_count (MLA)"
    rope = _key(meta, arch, "rope.dimension_count", path)
    if f"{arch}.attention.key_length_mla" in meta:
        nope, nope_from = _key(meta, arch, "attention.key_length_mla", path) - rope, "attention.key_length_mla"
        if f"{arch}.attention.value_length_mla" not in meta:
            raise ConfigError(f"{path}: GGUF has {arch}.attention.key_length_mla but no "
                              f"{arch}.attention.value_length_mla: expected both (MLA head widths)")
    else:
        nope, nope_from = _key(meta, arch, "attention.key_length", path) - rope, "attention.key_length"
        config["v_head_dim"] = _key(meta, arch, "attention.value_length", path)
        sources["v_head_dim"] = f"{arch}.attention.value_length"
    config["qk_nope_head_dim"] = nope
    sources["qk_nope_head_dim"] = f"{arch}.{nope_from} - {arch}.rope.dimension_count"
    if "q_lora_rank" not in config:  # the converter leaves it out only when the model's is null (DeepSeek-V2-Lite)
        config["q_lora_rank"] = None
    v3 = meta.get(f"{arch}.expert_gating_func") == 2
    config["model_type"] = "deepseek_v3" if v3 else "deepseek_v2"
    config["topk_method"] = "noaux_tc" if v3 else "greedy"
    sources["topk_method"] = f"{arch}.expert_gating_func"


ARCHS: dict[str, tuple[str, dict[str, str], Derive | None]] = {
    "llama": ("llama", _MIXTRAL, None), "mistral": ("mistral", _MIXTRAL, None), "qwen2": ("qwen2", _MIXTRAL, None),
    "qwen3": ("qwen3", _MIXTRAL, None), "gemma": ("gemma", _MIXTRAL, None), "gemma2": ("gemma2", _MIXTRAL, None),
    "phi3": ("phi3", _MIXTRAL, None),
    "gemma3": ("gemma3_text", {}, None), "olmo2": ("olmo2", {}, None), "granite": ("granite", {}, None),
    "qwen2moe": ("qwen2_moe", _QWEN_MOE, None), "qwen3moe": ("qwen3_moe", _QWEN_MOE, None),
    "qwen3next": ("qwen3_next", _QWEN3_NEXT, _qwen3_next), "gpt-oss": ("gpt_oss", _GPT_OSS, None),
    "deepseek2": ("deepseek_v3", _DEEPSEEK, _deepseek),
}
"""GGUF architecture -> (model_type, its keys beyond COMMON, what is derived from several keys). The first seven are
the dense readers sizeup began with; one of them with experts (a Mixtral GGUF says `llama`) reads as mixtral.
Not here, because no family of sizeup reads them: llama4, command-r, cohere2, glm4moe, granitemoe and the rest."""

_LEGACY = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3")


def arch_config(path: str, arch: str, meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The config.json fields GGUF metadata gives for `arch` (one of ARCHS), and for each the key it came from;
    `sources` also names the key of a mapped field the file leaves out, for the parser's error."""
    model_type, extra, derive = ARCHS[arch]
    config: dict[str, Any] = {"model_type": model_type}
    sources: dict[str, str] = {}
    if model_type in ("qwen2_moe", "qwen3_moe", "qwen3_next"):
        config.update(_QWEN_MOE_FIXED)
        sources.update({k: f"llama.cpp's {arch} graph" for k in _QWEN_MOE_FIXED})
    for key, field_name in {**COMMON, **extra}.items():
        value = meta.get(f"{arch}.{key}")
        if value is not None:
            config[field_name], sources[field_name] = value, f"{arch}.{key}"
        elif field_name not in sources:
            sources[field_name] = f"{arch}.{key}"
    if derive is not None:
        sources["_path"] = path
        derive(arch, meta, config, sources)
    if arch in _LEGACY and config.get("num_local_experts"):
        config["model_type"] = "mixtral"
    return config, sources
