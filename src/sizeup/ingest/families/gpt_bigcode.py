"""GPTBigCode (SantaCoder, StarCoder, StarCoderBase): GPT-2 with multi-query attention — one key/value
head shared by all query heads under `multi_query` (Li et al. 2023, StarCoder) — learned absolute
positions, LayerNorm, biases everywhere and the LM head tied to the embeddings."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.decoder import heads_of
from sizeup.ingest.families.fields import CONTEXT, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("gpt_bigcode")
def read_gpt_bigcode(c: Fields, name: str) -> ModelArch:
    h = c.int("n_embd", "hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "n_head", "num_attention_heads", hidden_key="n_embd")
    kv_heads = 1 if c.flag("multi_query", True) else heads
    attn = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=True,
                         o_bias=True)
    mlp = MLPSpec(intermediate=c.int("n_inner", bound=INTERMEDIATE, default=4 * h), gated=False, bias=True,
                  act=c.activation("activation_function", default="gelu_pytorch_tanh"))
    positions = c.int("n_positions", "max_position_embeddings", bound=CONTEXT)
    return ModelArch(name=name, model_type="gpt_bigcode", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(LayerSpec(attention=attn, mlp=mlp),) * c.int("n_layer", "num_hidden_layers", bound=LAYERS),
                     norm="layer", tie_embeddings=c.flag("tie_word_embeddings", True), positions=positions,
                     max_context=positions)
