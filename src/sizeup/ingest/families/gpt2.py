"""GPT-2: learned absolute positions, LayerNorm, a plain GELU MLP of `n_inner` (4 × hidden by
default), biases everywhere and the LM head tied to the embeddings (Radford et al. 2019)."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.fields import CONTEXT, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("gpt2")
def read_gpt2(c: Fields, name: str) -> ModelArch:
    h = c.int("n_embd", "hidden_size", bound=HIDDEN)
    heads = c.int("n_head", "num_attention_heads", bound=HEADS)
    c.divides("n_head", heads, "n_embd", h)
    inner = c.int("n_inner", bound=INTERMEDIATE, default=4 * h)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=True,
                         o_bias=True)
    mlp = MLPSpec(intermediate=inner, gated=False, bias=True,
                  act=c.activation("activation_function", default="gelu_new"))
    layers = tuple(LayerSpec(attention=attn, mlp=mlp)
                   for _ in range(c.int("n_layer", "num_hidden_layers", bound=LAYERS)))
    positions = c.int("n_positions", "max_position_embeddings", bound=CONTEXT)
    return ModelArch(name=name, model_type="gpt2", hidden=h, vocab=c.int("vocab_size", bound=VOCAB), layers=layers,
                     norm="layer", tie_embeddings=True, positions=positions, max_context=positions)
