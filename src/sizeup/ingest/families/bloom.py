"""BLOOM: ALiBi positions (no position weights, no rotary), a LayerNorm right after the word
embeddings, a fused q/k/v projection and a plain GELU MLP of 4 × hidden, biases everywhere and the
LM head tied to the embeddings (BigScience 2022, arXiv:2211.05100)."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.decoder import heads_of
from sizeup.ingest.families.fields import CONTEXT, HIDDEN, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("bloom")
def read_bloom(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", "n_embed", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "n_head", "num_attention_heads")
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=True,
                         o_bias=True, alibi=True, rotary_dim=0)
    mlp = MLPSpec(intermediate=4 * h, gated=False, bias=True, act="gelu_tanh")
    return ModelArch(name=name, model_type="bloom", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(LayerSpec(attention=attn, mlp=mlp),) * c.int("n_layer", "num_hidden_layers", bound=LAYERS),
                     norm="layer", tie_embeddings=c.flag("tie_word_embeddings", True), embed_norm=True,
                     max_context=c.int("seq_length", bound=CONTEXT, default=0, minimum=0),
                     assumptions=("ALiBi: positions are a per-head bias on the attention scores (no weights, no rotary)",))
