"""GPT-J: one LayerNorm per layer feeding attention and MLP in parallel, q/k/v/out projections
without biases, rotary positions on the first `rotary_dim` channels of each head, a plain GELU MLP
of `n_inner` (4 × hidden by default) with biases, and an untied LM head with a bias (Wang &
Komatsuzaki 2021, mesh-transformer-jax)."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.decoder import PARALLEL_NOTE, heads_of
from sizeup.ingest.families.fields import CONTEXT, HEAD_DIM, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("gptj")
def read_gptj(c: Fields, name: str) -> ModelArch:
    h = c.int("n_embd", "hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "n_head", "num_attention_heads", hidden_key="n_embd")
    # GPTJConfig's default is 64; an explicit null rotates the whole head
    rotary = c.optional_int("rotary_dim", bound=HEAD_DIM) if "rotary_dim" in c.data else 64
    if rotary is not None:
        c.at_most("rotary_dim", rotary, "the head dimension", head_dim)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=head_dim, v_head_dim=head_dim, rotary_dim=rotary)
    mlp = MLPSpec(intermediate=c.int("n_inner", bound=INTERMEDIATE, default=4 * h), gated=False, bias=True,
                  act=c.activation("activation_function", default="gelu_new"))
    layer = LayerSpec(attention=attn, mlp=mlp, norms=1, parallel=True)
    return ModelArch(name=name, model_type="gptj", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(layer,) * c.int("n_layer", "num_hidden_layers", bound=LAYERS), norm="layer",
                     tie_embeddings=c.flag("tie_word_embeddings", False), lm_head_bias=True,
                     max_context=c.int("n_positions", "max_position_embeddings", bound=CONTEXT, default=2048),
                     assumptions=(PARALLEL_NOTE,))
