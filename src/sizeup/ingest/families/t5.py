"""T5 (Raffel et al. 2020, arXiv:1910.10683) and T5 v1.1 / FLAN-T5 (gated-GELU MLP, untied LM head), as
transformers' `T5ForConditionalGeneration` builds them: one shared embedding, `num_layers` encoder and
`num_decoder_layers` decoder blocks of weight-only RMS norms, bias-free attention of `num_heads` × `d_kv`
(a relative-position bias table of `relative_attention_num_buckets` × heads in the first block of each
stack) and a ReLU (`feed_forward_proj` "relu") or gated (`gated-gelu`) MLP of `d_ff`; each decoder block
adds cross-attention over the encoder. The prompt is the encoder's input (`--prompt` tokens, at most
`n_positions`: 512 for the released checkpoints); the decoder starts from its one start token."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, TowerSpec, WeightTensor
from sizeup.ingest.families.encoder_decoder import ENCODER_NOTE, block_tensors, cross_tensors
from sizeup.ingest.families.fields import (ACTIVATIONS, CONTEXT, HEAD_DIM, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB,
                                           Bound, Fields, activation)
from sizeup.ingest.families.registry import family

BUCKETS = Bound("relative-attention buckets", 4096)


@family("t5")
def read_t5(c: Fields, name: str) -> ModelArch:
    h, heads = c.int("d_model", bound=HIDDEN), c.int("num_heads", bound=HEADS)
    d_kv = c.int("d_kv", bound=HEAD_DIM)
    proj = c.text("feed_forward_proj", default="relu")
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated") or parts[-1].lower() not in ACTIVATIONS:
        raise c.error("feed_forward_proj", proj, "expected an activation or 'gated-<activation>' (relu, gated-gelu)")
    gated, act = len(parts) == 2, parts[-1]
    act = activation("gelu_new" if proj == "gated-gelu" else act)  # transformers maps gated-gelu to gelu_new
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=d_kv, v_head_dim=d_kv, rotary_dim=0)
    spec = LayerSpec(attention=attn, mlp=MLPSpec(intermediate=c.int("d_ff", bound=INTERMEDIATE), gated=gated, act=act))
    enc_layers = c.int("num_layers", bound=LAYERS)
    dec_layers = c.int("num_decoder_layers", bound=LAYERS, default=enc_layers)
    buckets = c.int("relative_attention_num_buckets", bound=BUCKETS, default=32)
    extra: list[WeightTensor] = []
    for i in range(enc_layers):
        extra += block_tensors(f"encoder.layers.{i}", spec, h, norm_bias=False)
    extra.append(WeightTensor("encoder.norm.weight", (h,), "norm"))
    extra += [WeightTensor(f"{stack}.relative_attention_bias.weight", (buckets, heads), "position")
              for stack in ("encoder", "decoder")]
    for i in range(dec_layers):
        extra += cross_tensors(i, spec, h, norm_bias=False)
    source = c.int("n_positions", bound=CONTEXT, default=512)
    tower = TowerSpec(kind="encoder", hidden=h, layer=spec, layers=enc_layers, norm="rms", stem="tokens",
                      relative_bias=True)
    note = ENCODER_NOTE.format(source="the encoder's output (a position per prompt token)")
    return ModelArch(name=name, model_type="t5", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(spec,) * dec_layers, norm="rms", tie_embeddings=c.flag("tie_word_embeddings", True),
                     embed_scale=False, max_context=source, extra_tensors=tuple(extra), cross_source=source,
                     tower=tower, assumptions=(note + " (t5: the prompt is the encoder's input; the decoder starts "
                                               "from one start token)",))
