"""The post-norm encoder layer BERT, RoBERTa, XLM-RoBERTa, DistilBERT, DeBERTa-v2 and ViT share:
bidirectional multi-head attention with biases and a plain GELU MLP; and the pre-norm ModernBERT layer
(gated GeGLU MLP, optional biases, alternating local and global attention). `EncoderKeys` names the
config fields a family keeps its sizes under (DistilBERT: `dim`, `n_heads`, `n_layers`, `hidden_dim`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, WeightTensor
from sizeup.ingest.families.fields import HEADS, HIDDEN, INTERMEDIATE, LAYERS, Fields

__all__ = ["EncoderKeys", "BERT_KEYS", "encoder_layers", "hidden_size", "norm_tensors"]


@dataclass(frozen=True, slots=True)
class EncoderKeys:
    """The config fields of an encoder's sizes, first match wins."""

    hidden: tuple[str, ...] = ("hidden_size",)
    heads: tuple[str, ...] = ("num_attention_heads",)
    layers: tuple[str, ...] = ("num_hidden_layers",)
    intermediate: tuple[str, ...] = ("intermediate_size",)
    act: tuple[str, ...] = ("hidden_act",)


BERT_KEYS = EncoderKeys()


def hidden_size(c: Fields, keys: EncoderKeys = BERT_KEYS) -> int:
    return c.int(*keys.hidden, bound=HIDDEN)


def encoder_layers(c: Fields, qkv_bias: bool, keys: EncoderKeys = BERT_KEYS, *, o_bias: bool | None = None,
                   mlp_bias: bool = True, gated: bool = False, windows: Sequence[int | None] | None = None,
                   norms: Sequence[int] | None = None) -> tuple[LayerSpec, ...]:
    """The layers of a bidirectional encoder; `windows` (local attention per layer) and `norms` (hidden-sized
    norms per layer) default to global attention and two norms."""
    h, heads = hidden_size(c, keys), c.int(*keys.heads, bound=HEADS)
    c.divides(keys.heads[0], heads, keys.hidden[0], h)
    n_layers = c.int(*keys.layers, bound=LAYERS)
    mlp = MLPSpec(intermediate=c.int(*keys.intermediate, bound=INTERMEDIATE), gated=gated, bias=mlp_bias,
                  act=c.activation(*keys.act, default="gelu"))
    out = []
    for i in range(n_layers):
        attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads,
                             qkv_bias=qkv_bias, o_bias=qkv_bias if o_bias is None else o_bias, causal=False,
                             window=None if windows is None else windows[i])
        out.append(LayerSpec(attention=attn, mlp=mlp, norms=2 if norms is None else norms[i]))
    return tuple(out)


def norm_tensors(name: str, h: int, bias: bool) -> tuple[WeightTensor, ...]:
    """A hidden-sized LayerNorm outside the layers (weight, and bias when it has one)."""
    weight = WeightTensor(f"{name}.weight", (h,), "norm")
    return (weight, WeightTensor(f"{name}.bias", (h,), "norm")) if bias else (weight,)
