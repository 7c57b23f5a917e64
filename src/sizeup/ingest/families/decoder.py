"""The LLaMA-style decoder that most families are: RMSNorm, rotary positions, grouped-query attention
and a gated MLP, with what a family changes about it stated as `DecoderTraits` (biases, QK norms,
post-norms, sliding-window patterns, MoE layers, latent attention)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLASpec, MLPSpec, ModelArch
from sizeup.ingest.families.fields import (CONTEXT, EXPERTS, HEAD_DIM, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB,
                                           Fields, show)

__all__ = ["DecoderTraits", "read_decoder", "dense_mlp", "uniform_windows", "top_k", "rotary_fraction",
           "heads_of", "PARALLEL_NOTE", "quantization_note"]

PARALLEL_NOTE = ("parallel attention and MLP: costed as two branches on one normed input summed into one residual "
                 "(their kernels are not assumed to overlap)")

Windows = Callable[[Fields, int, "int | None"], list]
"""(fields, layers, sliding_window) -> the window of every layer (None: global attention)."""
MoERule = Callable[[Fields, int, str, MLPSpec], MLPSpec]
"""(fields, layer index, the dense MLP) -> the MLP of that layer."""


def uniform_windows(c: Fields, layers: int, window: int | None) -> list:
    return [window] * layers


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
    sinks: bool = False
    """A learned attention-sink logit per head (gpt-oss)."""
    attention_bias: bool = False
    """`attention_bias` when the config leaves it out (the config class's default)."""


def dense_mlp(c: Fields, act: str, traits: DecoderTraits) -> MLPSpec:
    return MLPSpec(intermediate=c.int("intermediate_size", bound=INTERMEDIATE), gated=traits.gated or act == "silu",
                   act=act, bias=c.flag("mlp_bias", False))


def top_k(c: Fields, experts: int, experts_key: str) -> int:
    """`num_experts_per_tok`, from 1 to the number of experts."""
    k = c.int("num_experts_per_tok", bound=EXPERTS)
    c.at_most("num_experts_per_tok", k, experts_key, experts)
    return k


def rotary_fraction(c: Fields, head_dim: int, *keys: str, default: float) -> int:
    """Rotary width per head from a fraction of `head_dim` (the first of `keys` present, or
    `rope_parameters.partial_rotary_factor`, else `default`), truncated as transformers does."""
    for key in keys:
        if c.has(key):
            return int(head_dim * c.probability(key))
    rope = c.mapping("rope_parameters") or {}
    if rope.get("partial_rotary_factor") is not None:
        return int(head_dim * Fields(rope, f"{c.where} (rope_parameters)").probability("partial_rotary_factor"))
    return int(head_dim * default)


def heads_of(c: Fields, h: int, *keys: str, hidden_key: str = "hidden_size") -> tuple[int, int]:
    """(heads, head dim) from the first of `keys`; the heads must divide the hidden size."""
    heads = c.int(*keys, bound=HEADS)
    c.divides(keys[0], heads, hidden_key, h)
    return heads, h // heads


def quantization_note(c: Fields) -> list[str]:
    """A line saying a config's `quantization_config` is not what sizeup costs the weights in."""
    q = c.mapping("quantization_config")
    if not q:
        return []
    return [f"quantization_config {show(q.get('quant_method', '?'))} in the config: weights are costed in the format "
            f"chosen with --weights, not read from it"]


LAYER_TYPES = ("full_attention", "sliding_attention")
"""The `layer_types` entries a decoder family reads (transformers' names)."""


def _layer_windows(c: Fields, traits: DecoderTraits, layers: int) -> list:
    window = c.window("sliding_window")
    types = c.layer_types(layers, LAYER_TYPES)
    if types is None:
        return traits.windows(c, layers, window)
    if window is None and "sliding_attention" in types:
        raise c.error("sliding_window", None, "expected a window length: layer_types names sliding_attention layers")
    return [window if t == "sliding_attention" else None for t in types]


_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
_MOE_PLACEMENT_KEYS = ("first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers")


def _check_experts(c: Fields, traits: DecoderTraits, layers: list[LayerSpec]) -> None:
    """Expert fields agree with the layers read: a dense family refuses a config that names experts (it would be
    priced dense), and a MoE family refuses experts per token when no layer routes to any (n_routed_experts 0
    with num_experts_per_tok 8 is not a dense model)."""
    if any(layer.mlp.is_moe for layer in layers):
        return
    per_token = c.int("num_experts_per_tok", bound=EXPERTS, default=0, minimum=0)
    named = [(key, c.data[key]) for key in _EXPERT_KEYS if c.has(key)]
    if traits.moe is None:
        for key, value in [*named, ("num_experts_per_tok", per_token)]:
            if value:
                raise c.error(key, value, f"expected no experts: the {c.model_type} family reads a dense model (a "
                              f"mixture of experts has its own model_type, e.g. mixtral, qwen3_moe, deepseek_v3)")
        return
    if per_token:
        placed = [(key, c.data[key]) for key in _MOE_PLACEMENT_KEYS if c.has(key)]
        detail = ", ".join(f"{key} = {show(value)}" for key, value in named + placed) or "no expert count"
        raise c.error("num_experts_per_tok", per_token, f"expected a layer with routed experts to pick them from "
                      f"({detail} leaves every layer dense)")


def _attention_shape(c: Fields, h: int) -> tuple[int, int, int]:
    """(heads, KV heads, head dim), consistent: KV heads divide heads; heads divide the hidden size
    unless head_dim is given."""
    heads = c.int("num_attention_heads", bound=HEADS)
    kv_heads = c.int("num_key_value_heads", bound=HEADS, default=heads)
    c.divides("num_key_value_heads", kv_heads, "num_attention_heads", heads)
    if not c.has("head_dim"):
        c.divides("num_attention_heads", heads, "hidden_size", h)
    return heads, kv_heads, c.int("head_dim", bound=HEAD_DIM, default=h // heads)


def _mla(c: Fields) -> MLASpec:
    return MLASpec(q_lora_rank=c.optional_int("q_lora_rank", bound=HIDDEN),
                   kv_lora_rank=c.int("kv_lora_rank", bound=HIDDEN),
                   qk_nope_head_dim=c.int("qk_nope_head_dim", bound=HEAD_DIM, minimum=0),
                   qk_rope_head_dim=c.int("qk_rope_head_dim", bound=HEAD_DIM),
                   v_head_dim=c.int("v_head_dim", bound=HEAD_DIM))


def read_decoder(c: Fields, name: str, traits: DecoderTraits, assumptions: list[str] | None = None) -> ModelArch:
    model_type, assumptions = c.model_type, list(assumptions or [])
    for key, value in traits.class_defaults.items():
        if c.data.get(key) is None:
            c.data[key] = value
            assumptions.append(f"{key} not in the config: the {model_type} class default {value:,}")
    h = c.int("hidden_size", bound=HIDDEN)
    n_layers = c.int("num_hidden_layers", bound=LAYERS)
    heads, kv_heads, head_dim = _attention_shape(c, h)
    vocab = c.int("vocab_size", bound=VOCAB)
    act = c.activation("hidden_act", "hidden_activation", default="silu")
    bias = c.flag("attention_bias", traits.attention_bias)
    mla = _mla(c) if traits.mla else None
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
                                      o_bias=bias and traits.o_bias_follows_attention_bias, qk_norm=traits.qk_norm,
                                      sinks=traits.sinks)
        mlp = traits.moe(c, i, act, dense) if traits.moe is not None else dense
        layers.append(LayerSpec(attention=attention, mlp=mlp, norms=traits.norms))
    _check_experts(c, traits, layers)
    tie = c.flag("tie_word_embeddings", traits.tie_default)
    mtp = c.int("num_nextn_predict_layers", bound=LAYERS, default=0, minimum=0)
    if mtp:
        assumptions.append(f"{mtp} multi-token-prediction layer(s) in the checkpoint are not counted "
                           f"(inference uses the main model)")
    return ModelArch(name=name, model_type=model_type, hidden=h, vocab=vocab, layers=tuple(layers), norm=traits.norm,
                     tie_embeddings=tie, embed_scale=traits.embed_scale,
                     max_context=c.int("max_position_embeddings", bound=CONTEXT, default=0, minimum=0), mtp_layers=mtp,
                     assumptions=tuple(assumptions))
