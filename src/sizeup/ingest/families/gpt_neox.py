"""GPT-NeoX (GPT-NeoX-20B, Pythia, RedPajama-INCITE): LayerNorm, a fused q/k/v projection with biases,
rotary positions on the first `rotary_pct` of each head (0.25 by default), a plain GELU MLP with
biases, and an LM head (`embed_out`) untied from the embeddings (Black et al. 2022, GPT-NeoX-20B).
`use_parallel_residual` runs attention and MLP off one residual; it changes no weight."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.decoder import PARALLEL_NOTE, heads_of, rotary_fraction
from sizeup.ingest.families.fields import CONTEXT, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("gpt_neox")
def read_gpt_neox(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "num_attention_heads")
    bias = c.flag("attention_bias", True)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=bias, o_bias=bias,
                         rotary_dim=rotary_fraction(c, head_dim, "rotary_pct", "partial_rotary_factor", default=0.25))
    mlp = MLPSpec(intermediate=c.int("intermediate_size", bound=INTERMEDIATE), gated=False, bias=True,
                  act=c.activation("hidden_act", default="gelu"))
    layer = LayerSpec(attention=attn, mlp=mlp, parallel=c.flag("use_parallel_residual", True))
    return ModelArch(name=name, model_type="gpt_neox", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(layer,) * c.int("num_hidden_layers", bound=LAYERS), norm="layer",
                     tie_embeddings=c.flag("tie_word_embeddings", False),
                     max_context=c.int("max_position_embeddings", bound=CONTEXT, default=2048),
                     assumptions=(PARALLEL_NOTE,) if layer.parallel else ())
