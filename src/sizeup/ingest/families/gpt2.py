"""GPT-2: learned absolute positions, LayerNorm, a plain GELU MLP of `n_inner` (4 × hidden by
default), biases everywhere and the LM head tied to the embeddings (Radford et al. 2019)."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch
from sizeup.ingest.families.fields import Fields, activation
from sizeup.ingest.families.registry import family


@family("gpt2")
def read_gpt2(c: Fields, name: str) -> ModelArch:
    h = c.int("n_embd", "hidden_size")
    heads = c.int("n_head", "num_attention_heads")
    inner = c.int("n_inner", default=4 * h)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=True,
                         o_bias=True)
    mlp = MLPSpec(intermediate=inner, gated=False, act=activation(c.get("activation_function", "gelu_new")), bias=True)
    layers = tuple(LayerSpec(attention=attn, mlp=mlp) for _ in range(c.int("n_layer", "num_hidden_layers")))
    return ModelArch(name=name, model_type="gpt2", hidden=h, vocab=c.int("vocab_size"), layers=layers, norm="layer",
                     tie_embeddings=True, positions=c.int("n_positions", "max_position_embeddings"),
                     max_context=c.int("n_positions", "max_position_embeddings"))
