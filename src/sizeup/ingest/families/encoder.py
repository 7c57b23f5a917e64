"""The post-norm encoder layer BERT and ViT share: bidirectional multi-head attention with biases and
a plain GELU MLP."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec
from sizeup.ingest.families.fields import HEADS, HIDDEN, INTERMEDIATE, LAYERS, Fields, activation

__all__ = ["encoder_layers"]


def encoder_layers(c: Fields, qkv_bias: bool) -> tuple[LayerSpec, ...]:
    h, heads = c.int("hidden_size", bound=HIDDEN), c.int("num_attention_heads", bound=HEADS)
    c.divides("num_attention_heads", heads, "hidden_size", h)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=qkv_bias,
                         o_bias=True, causal=False)
    mlp = MLPSpec(intermediate=c.int("intermediate_size", bound=INTERMEDIATE), gated=False, bias=True,
                  act=activation(c.text("hidden_act", default="gelu")))
    return tuple(LayerSpec(attention=attn, mlp=mlp) for _ in range(c.int("num_hidden_layers", bound=LAYERS)))
