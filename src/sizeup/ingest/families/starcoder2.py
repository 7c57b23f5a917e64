"""StarCoder2 (Lozhkov et al. 2024, arXiv:2402.19173): grouped-query attention with rotary
positions, LayerNorm, biases on every projection (`use_bias`), a plain GELU MLP (c_fc / c_proj),
a sliding window on every layer when the config gives one, and tied embeddings by default."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.decoder import heads_of
from sizeup.ingest.families.fields import CONTEXT, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("starcoder2")
def read_starcoder2(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "num_attention_heads")
    kv_heads = c.int("num_key_value_heads", bound=HEADS, default=2)  # Starcoder2Config's default
    c.divides("num_key_value_heads", kv_heads, "num_attention_heads", heads)
    bias = c.flag("use_bias", True)
    attn = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=bias,
                         o_bias=bias, window=c.window("sliding_window"))
    mlp = MLPSpec(intermediate=c.int("intermediate_size", bound=INTERMEDIATE), gated=False, bias=bias,
                  act=c.activation("hidden_act", default="gelu_pytorch_tanh"))
    return ModelArch(name=name, model_type="starcoder2", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(LayerSpec(attention=attn, mlp=mlp),) * c.int("num_hidden_layers", bound=LAYERS),
                     norm="layer", tie_embeddings=c.flag("tie_word_embeddings", True),
                     max_context=c.int("max_position_embeddings", bound=CONTEXT, default=4096))
