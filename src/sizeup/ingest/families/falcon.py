"""Falcon: LayerNorm, a fused q/k/v projection, a plain GELU MLP of `ffn_hidden_size` (4 × hidden by
default) and, with `parallel_attn`, attention and MLP in parallel off one residual (Almazrouei et al.
2023, The Falcon Series of Open Language Models).

Keys and values: one shared head with `multi_query` (Falcon-7B); `num_kv_heads` groups with
`new_decoder_architecture` (Falcon-40B/180B, which also give each branch its own LayerNorm when
`num_ln_in_parallel_attn` is 2, its default there); otherwise one per query head. `alibi` replaces
rotary positions by a bias on the scores."""

from __future__ import annotations

from sizeup.errors import ConfigError
from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.decoder import PARALLEL_NOTE, heads_of
from sizeup.ingest.families.fields import CONTEXT, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


def _kv_heads(c: Fields, heads: int, new_arch: bool) -> int:
    if new_arch:
        kv = c.int("num_kv_heads", bound=HEADS, default=heads)
        c.divides("num_kv_heads", kv, "num_attention_heads", heads)
        return kv
    if c.flag("multi_query", True):
        return 1
    kv = c.int("num_kv_heads", bound=HEADS, default=heads)
    if kv != heads:
        raise ConfigError(f"{c.where}: num_kv_heads = {kv:,} without new_decoder_architecture: Falcon's q/k/v "
                          f"projection then has one key/value head per query head ({heads:,})")
    return heads


@family("falcon")
def read_falcon(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "num_attention_heads")
    new_arch = c.flag("new_decoder_architecture", False)
    kv_heads = _kv_heads(c, heads, new_arch)
    alibi, bias = c.flag("alibi", False), c.flag("bias", False)
    parallel_attn = c.flag("parallel_attn", True)
    branch_norms = c.int("num_ln_in_parallel_attn", bound=LAYERS, default=2 if new_arch else 1)
    if branch_norms > 2:
        raise c.error("num_ln_in_parallel_attn", branch_norms, "expected 1 or 2")
    norms = 2 if not parallel_attn or branch_norms == 2 else 1
    attn = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=bias,
                         o_bias=bias, alibi=alibi, rotary_dim=0 if alibi else None)
    mlp = MLPSpec(intermediate=c.int("ffn_hidden_size", bound=INTERMEDIATE, default=4 * h), gated=False, bias=bias,
                  act=c.activation("activation", default="gelu"))
    layer = LayerSpec(attention=attn, mlp=mlp, norms=norms, parallel=parallel_attn or new_arch)
    assumptions = ["ALiBi: positions are a per-head bias on the attention scores (no weights, no rotary)"] if alibi else []
    if layer.parallel:
        assumptions.append(PARALLEL_NOTE)
    return ModelArch(name=name, model_type="falcon", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(layer,) * c.int("num_hidden_layers", bound=LAYERS), norm="layer",
                     tie_embeddings=c.flag("tie_word_embeddings", True),
                     max_context=c.int("max_position_embeddings", bound=CONTEXT, default=2048),
                     assumptions=tuple(assumptions))
