"""The LLaMA-style decoder that most families are: RMSNorm, rotary positions, grouped-query attention
and a gated MLP, with what a family changes about it stated as `DecoderTraits` (biases, QK norms,
post-norms, sliding-window patterns, MoE layers, latent attention)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLASpec, MLPSpec, ModelArch
from sizeup.ingest.families.fields import Fields, activation

__all__ = ["DecoderTraits", "GENERIC", "read_decoder", "dense_mlp", "uniform_windows"]

Windows = Callable[[Fields, int, Any], list]
"""(fields, layers, sliding_window) -> the window of every layer (None: global attention)."""
MoERule = Callable[[Fields, int, str, MLPSpec], MLPSpec]
"""(fields, layer index, activation, the dense MLP) -> the MLP of that layer."""


def uniform_windows(c: Fields, layers: int, window: Any) -> list:
    return [window or None] * layers


@dataclass(frozen=True, slots=True, kw_only=True)
class DecoderTraits:
    """What a family changes about the LLaMA-style decoder."""

    qkv_bias: bool = False
    """q/k/v projections carry a bias whatever `attention_bias` says (Qwen2)."""
    o_bias_follows_attention_bias: bool = True
    qk_norm: bool = False
    """RMSNorm on queries and keys per head (Qwen3, Gemma 3, OLMo 2)."""
    norms: int = 2
    """Hidden-sized norms per layer: 2 pre-norms, 4 with Gemma 2/3's post-norms."""
    norm: str = "rms"
    gated: bool = True
    """False: gated only for a SiLU activation."""
    tie_default: bool = False
    embed_scale: bool = False
    class_defaults: dict[str, Any] = field(default_factory=dict)
    """Defaults of the transformers config class, for fields a config.json may leave out."""
    windows: Windows = uniform_windows
    moe: MoERule | None = None
    mla: bool = False


GENERIC = DecoderTraits(gated=False)
"""A model_type no family knows, read as a LLaMA-style decoder (gated only with SiLU)."""


def dense_mlp(c: Fields, act: str, traits: DecoderTraits) -> MLPSpec:
    return MLPSpec(intermediate=c.int("intermediate_size"), gated=traits.gated or act == "silu", act=act,
                   bias=bool(c.get("mlp_bias", False)))


def _layer_windows(c: Fields, traits: DecoderTraits, layers: int) -> list:
    window = c.get("sliding_window")
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return [window if t == "sliding_attention" else None for t in types]
    return traits.windows(c, layers, window)


def read_decoder(c: Fields, name: str, traits: DecoderTraits, assumptions: list[str] | None = None) -> ModelArch:
    model_type, assumptions = c.model_type, list(assumptions or [])
    for key, value in traits.class_defaults.items():
        if c.data.get(key) is None:
            c.data[key] = value
            assumptions.append(f"{key} not in the config: the {model_type} class default {value:,}")
    h = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    kv_heads = c.int("num_key_value_heads", default=heads)
    if heads == 0 or h == 0:
        raise ConfigError(f"{c.where}: hidden_size and num_attention_heads must be positive")
    if kv_heads == 0 or heads % kv_heads:
        raise ConfigError(f"{c.where}: num_key_value_heads = {kv_heads} must divide num_attention_heads = {heads}")
    head_dim = c.int("head_dim", default=h // heads)
    vocab = c.int("vocab_size")
    act = activation(c.get("hidden_act", c.get("hidden_activation")))
    bias = bool(c.get("attention_bias", False))
    mla = None
    if traits.mla:
        mla = MLASpec(q_lora_rank=c.get("q_lora_rank"), kv_lora_rank=c.int("kv_lora_rank"),
                      qk_nope_head_dim=c.int("qk_nope_head_dim"), qk_rope_head_dim=c.int("qk_rope_head_dim"),
                      v_head_dim=c.int("v_head_dim"))
    windows = _layer_windows(c, traits, n_layers)
    dense = dense_mlp(c, act, traits)
    layers = []
    for i in range(n_layers):
        if mla is not None:
            attention = AttentionSpec(heads=heads, kv_heads=heads, head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
                                      v_head_dim=mla.v_head_dim, mla=mla)
        else:
            attention = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim,
                                      window=windows[i], qkv_bias=traits.qkv_bias or bias,
                                      o_bias=bias and traits.o_bias_follows_attention_bias, qk_norm=traits.qk_norm)
        mlp = traits.moe(c, i, act, dense) if traits.moe is not None else dense
        layers.append(LayerSpec(attention=attention, mlp=mlp, norms=traits.norms))
    tie = bool(c.get("tie_word_embeddings", traits.tie_default))
    mtp = c.int("num_nextn_predict_layers", default=0)
    if mtp:
        assumptions.append(f"{mtp} multi-token-prediction layer(s) in the checkpoint are not counted "
                           f"(inference uses the main model)")
    return ModelArch(name=name, model_type=model_type, hidden=h, vocab=vocab, layers=tuple(layers), norm=traits.norm,
                     tie_embeddings=tie, embed_scale=traits.embed_scale,
                     max_context=c.int("max_position_embeddings", default=0), mtp_layers=mtp,
                     assumptions=tuple(assumptions))
