"""OPT (Zhang et al. 2022, arXiv:2205.01068): learned positions with an offset of 2
(`max_position_embeddings` + 2 rows), LayerNorm, biases on every projection (`enable_bias`), a plain
ReLU MLP of `ffn_dim`, and the LM head tied to the embeddings. A `word_embed_proj_dim` below the
hidden size (OPT-350m) embeds at that width, with project_in / project_out matrices; a post-norm
model (`do_layer_norm_before` false) has no final LayerNorm."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.decoder import heads_of
from sizeup.ingest.families.fields import CONTEXT, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family

POSITION_OFFSET = 2
"""OPTLearnedPositionalEmbedding keeps 2 rows beyond `max_position_embeddings` (fairseq's padding offset)."""


@family("opt")
def read_opt(c: Fields, name: str) -> ModelArch:
    h = c.int("hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "num_attention_heads")
    bias = c.flag("enable_bias", True)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=bias, o_bias=bias)
    mlp = MLPSpec(intermediate=c.int("ffn_dim", bound=INTERMEDIATE), gated=False, bias=bias,
                  act=c.activation("activation_function", default="relu"))
    width = c.int("word_embed_proj_dim", bound=HIDDEN, default=h)
    context = c.int("max_position_embeddings", bound=CONTEXT)
    pre_norm = c.flag("do_layer_norm_before", True)
    affine = c.flag("layer_norm_elementwise_affine", True)
    return ModelArch(name=name, model_type="opt", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(LayerSpec(attention=attn, mlp=mlp),) * c.int("num_hidden_layers", bound=LAYERS),
                     norm="layer" if affine else "layer_noaffine", tie_embeddings=c.flag("tie_word_embeddings", True),
                     positions=context + POSITION_OFFSET, max_context=context, embed_dim=0 if width == h else width,
                     final_norm=pre_norm and not c.flag("_remove_final_layer_norm", False),
                     assumptions=() if pre_norm else ("opt: post-norm layers (do_layer_norm_before false), costed "
                                                      "as the same norms before each block",))
