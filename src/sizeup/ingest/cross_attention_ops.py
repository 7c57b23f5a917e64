"""The ops of an encoder-decoder's cross-attention in a decoder step, for the transformer ledger's builder:
its K/V over the encoder's `cross_source` positions are computed once per sequence and then read from
the cache every step (T5, Whisper)."""

from __future__ import annotations

from typing import Any

from sizeup.ingest.arch import LayerSpec
from sizeup.ledger import OpKind
from sizeup.ops.attention import SOFTMAX_FLOPS_PER_ELEMENT

__all__ = ["cross_attention"]


def cross_attention(b: Any, i: int, layer: LayerSpec) -> None:
    """Decoder layer `i`'s cross-attention: q_proj of the new tokens, attention over the `cross_source`
    encoder positions (their K/V read from the cache, in the KV dtype), o_proj; the norm before it. The K/V
    projections run once per sequence over the encoder output: priced with the encoder, in prefill
    (`tower_ops.py`), not in every step."""
    a, step, t, h = layer.attention, b.step, b.step.tokens, b.arch.hidden
    p, w, source = f"model.layers.{i}.cross_attn", f"layers.{i}.cross", b.arch.cross_source
    heads = a.heads // b.tp
    width = a.heads * a.head_dim
    b.norm(f"{p}.layer_norm", t, h, f"{w}.norm.weight")
    b.linear(f"{p}.q_proj", f"{w}.q_proj.weight", t, h, width, a.qkv_bias)
    pairs = t * source
    product = 2 * pairs * heads * 2 * a.head_dim
    kv_read = int(step.batch * source * heads * 2 * a.head_dim * b.kv_bytes)
    b.add("attention", OpKind.ATTENTION, p, product + SOFTMAX_FLOPS_PER_ELEMENT * pairs * heads, t * heads * a.head_dim * b.a + kv_read,
          t * heads * a.head_dim * b.a, matmul=product, notes=(f"cross-attention over {source:,} encoder positions",))
    b.linear(f"{p}.o_proj", f"{w}.o_proj.weight", t, width, h, a.o_bias, shard="row")
    b.all_reduce(p, t)
    b.elementwise("add", p, t * h, 1, inputs=2)
