"""Phi-1, Phi-1.5 and Phi-2 (model_type "phi"): one LayerNorm per layer feeding attention and MLP in
parallel, biases on every projection and on the LM head (untied), rotary positions on the first
`partial_rotary_factor` of each head (0.4 in Phi-2; 0.5 by PhiConfig's default), a plain GELU MLP,
and optional per-head LayerNorms on queries and keys (`qk_layernorm`)."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, WeightTensor
from sizeup.ingest.families.decoder import PARALLEL_NOTE, heads_of, rotary_fraction
from sizeup.ingest.families.fields import CONTEXT, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("phi")
def read_phi(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "num_attention_heads")
    kv_heads = c.int("num_key_value_heads", bound=HEADS, default=heads)
    c.divides("num_key_value_heads", kv_heads, "num_attention_heads", heads)
    qk_norm = c.flag("qk_layernorm", False)
    attn = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=True,
                         o_bias=True, qk_norm=qk_norm,
                         rotary_dim=rotary_fraction(c, head_dim, "partial_rotary_factor", default=0.5))
    mlp = MLPSpec(intermediate=c.int("intermediate_size", bound=INTERMEDIATE), gated=False, bias=True,
                  act=c.activation("hidden_act", default="gelu_new"))
    n_layers = c.int("num_hidden_layers", bound=LAYERS)
    # the q/k LayerNorms carry a bias beside the weight the layer lists
    extra = tuple(WeightTensor(f"layers.{i}.attn.{part}_norm.bias", (head_dim,), "norm", i)
                  for i in range(n_layers) for part in "qk") if qk_norm else ()
    return ModelArch(name=name, model_type="phi", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(LayerSpec(attention=attn, mlp=mlp, norms=1, parallel=True),) * n_layers, norm="layer",
                     tie_embeddings=c.flag("tie_word_embeddings", False), lm_head_bias=True, extra_tensors=extra,
                     max_context=c.int("max_position_embeddings", bound=CONTEXT, default=2048),
                     assumptions=(PARALLEL_NOTE,))
