"""ModernBERT: a pre-norm encoder with rotary positions, a gated GeGLU MLP (`Wi` holds gate and up), no
biases unless `attention_bias` / `mlp_bias` / `norm_bias` say so, and local attention of `local_attention`
tokens on every layer but each `global_attn_every_n_layers`-th (Warner et al. 2024). The first layer has
no attention norm (the embeddings' norm serves), and a final norm follows the layers. Read as
ModernBertModel, without a task head."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.encoder import encoder_layers, hidden_size, norm_tensors
from sizeup.ingest.families.fields import CONTEXT, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("modernbert")
def read_modernbert(c: Fields, name: str) -> ModelArch:
    h, n_layers = hidden_size(c), c.int("num_hidden_layers", bound=LAYERS)
    every = c.int("global_attn_every_n_layers", bound=LAYERS, default=3)
    local = c.int("local_attention", bound=CONTEXT, default=128)
    types = c.layer_types(n_layers, ("full_attention", "sliding_attention"))
    if types is not None:
        windows = [local if t == "sliding_attention" else None for t in types]
    else:
        windows = [None if i % every == 0 else local for i in range(n_layers)]
    norm_bias = c.flag("norm_bias", False)
    layers = encoder_layers(c, c.flag("attention_bias", False), mlp_bias=c.flag("mlp_bias", False), gated=True,
                            windows=windows, norms=[1] + [2] * (n_layers - 1))
    assumptions = ["ModernBertModel; no task head"]
    if not norm_bias:
        assumptions.append("LayerNorms without bias: counted as weight-only norms")
    positions = c.int("max_position_embeddings", bound=CONTEXT, default=8192)
    return ModelArch(name=name, model_type="modernbert", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=layers, norm="layer" if norm_bias else "rms", encoder=True, lm_head=False,
                     max_context=positions, extra_tensors=norm_tensors("final_norm", h, norm_bias),
                     assumptions=tuple(assumptions))
