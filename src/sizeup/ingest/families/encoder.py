"""The post-norm encoder layer BERT and ViT share: bidirectional multi-head attention with biases and
a plain GELU MLP."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec
from sizeup.ingest.families.fields import Fields, activation

__all__ = ["encoder_layers"]


def encoder_layers(c: Fields, qkv_bias: bool) -> tuple[LayerSpec, ...]:
    h, heads = c.int("hidden_size"), c.int("num_attention_heads")
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=qkv_bias,
                         o_bias=True, causal=False)
    mlp = MLPSpec(intermediate=c.int("intermediate_size"), gated=False, act=activation(c.get("hidden_act", "gelu")),
                  bias=True)
    return tuple(LayerSpec(attention=attn, mlp=mlp) for _ in range(c.int("num_hidden_layers")))
