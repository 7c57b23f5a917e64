"""MPT (MosaicML): LayerNorm without biases (`no_bias`), ALiBi instead of position embeddings, a fused
q/k/v projection and a plain GELU MLP of `expansion_ratio` × d_model, embeddings tied to the LM head.

`attn_config` may ask llm-foundry for multi-query or grouped-query attention (`kv_n_heads`), learned
positions or QK LayerNorms; those shapes are counted as the checkpoint holds them, and the result
says where transformers' own MptForCausalLM (always multi-head, 4 × d_model, no biases) differs."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, WeightTensor
from sizeup.ingest.families.decoder import heads_of
from sizeup.ingest.families.fields import CONTEXT, HEADS, INTERMEDIATE, LAYERS, HIDDEN, VOCAB, Fields
from sizeup.ingest.families.registry import family


def _kv_heads(a: Fields, heads: int) -> int:
    kind = a.text("attn_type", default="multihead_attention")
    if kind == "multihead_attention":
        return heads
    if kind == "multiquery_attention":
        return 1
    if kind == "grouped_query_attention":
        kv = a.int("kv_n_heads", bound=HEADS)
        a.divides("kv_n_heads", kv, "n_heads", heads)
        return kv
    raise a.error("attn_type", kind, "expected multihead_attention, multiquery_attention or grouped_query_attention")


@family("mpt")
def read_mpt(c: Fields, name: str) -> ModelArch:
    h = c.int("d_model", "hidden_size", bound=HIDDEN)
    heads, head_dim = heads_of(c, h, "n_heads", "num_attention_heads", hidden_key="d_model")
    n_layers = c.int("n_layers", "num_hidden_layers", bound=LAYERS)
    ratio = c.int("expansion_ratio", bound=INTERMEDIATE, default=4)
    if ratio * h > INTERMEDIATE.maximum:
        raise c.error("expansion_ratio", ratio, f"expected expansion_ratio × d_model at most {INTERMEDIATE.maximum:,}")
    a = Fields(c.mapping("attn_config") or {}, f"{c.where} (attn_config)")
    alibi = a.flag("alibi", True)  # MptAttentionConfig's default
    kv_heads = _kv_heads(a, heads)
    bias = not c.flag("no_bias", True)
    learned = c.flag("learned_pos_emb", True) and not alibi
    differs = [what for what, yes in (("multi-head attention", kv_heads != heads), ("4 × d_model", ratio != 4),
                                      ("no biases", bias), ("no position embeddings", learned),
                                      ("no QK LayerNorm", a.flag("qk_ln", False))) if yes]
    attn = AttentionSpec(heads=heads, kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim, qkv_bias=bias,
                         o_bias=bias, alibi=alibi, rotary_dim=0 if alibi else None)
    mlp = MLPSpec(intermediate=ratio * h, gated=False, act="gelu_erf", bias=bias)
    extra = []
    if a.flag("qk_ln", False):  # llm-foundry: LayerNorms over the whole query and key widths
        for i in range(n_layers):
            for part, width in (("q_ln", h), ("k_ln", kv_heads * head_dim)):
                extra.append(WeightTensor(f"layers.{i}.attn.{part}.weight", (width,), "norm", i))
                if bias:
                    extra.append(WeightTensor(f"layers.{i}.attn.{part}.bias", (width,), "norm", i))
    seq = c.int("max_seq_len", "max_position_embeddings", bound=CONTEXT, default=2048)
    assumptions = ["ALiBi: positions are a per-head bias on the attention scores (no weights, no rotary)"] if alibi else []
    if c.text("norm_type", default="low_precision_layernorm") == "low_precision_layernorm":
        assumptions.append("mpt: low_precision_layernorm costed as a LayerNorm in the activation dtype")
    if differs:
        assumptions.append(f"mpt: counted as the llm-foundry checkpoint holds it; transformers' MptForCausalLM "
                           f"would build {', '.join(differs)}")
    dropout = max(c.probability("resid_pdrop"), c.probability("emb_pdrop"), a.probability("attn_pdrop"))
    return ModelArch(name=name, model_type="mpt", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=tuple(LayerSpec(attention=attn, mlp=mlp) for _ in range(n_layers)),
                     norm="layer" if bias else "layer_nobias", tie_embeddings=c.flag("tie_word_embeddings", True),
                     positions=seq if learned else 0, max_context=seq, dropout=dropout, extra_tensors=tuple(extra),
                     assumptions=tuple(assumptions))
