"""Whisper (Radford et al. 2022, arXiv:2212.04356) as transformers' `WhisperForConditionalGeneration`
builds it: an audio encoder (two 3-tap convolutions over `num_mel_bins` log-mel channels, the second of
stride 2, `max_source_positions` position rows, `encoder_layers` pre-norm layers) and a text decoder
(learned positions of `max_target_positions`, `decoder_layers` layers with cross-attention over the
encoder's `max_source_positions` frames — 1,500 for a 30 s window), LayerNorms with biases, biases on every
projection but k_proj, a GELU MLP, the output projection tied to the token embedding."""

from __future__ import annotations

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, TowerSpec, WeightTensor
from sizeup.ingest.families.encoder_decoder import ENCODER_NOTE, block_tensors, cross_tensors
from sizeup.ingest.families.fields import CHANNELS, CONTEXT, HEADS, HIDDEN, INTERMEDIATE, LAYERS, VOCAB, Fields
from sizeup.ingest.families.registry import family


def _spec(c: Fields, h: int, side: str) -> LayerSpec:
    heads = c.int(f"{side}_attention_heads", bound=HEADS)
    c.divides(f"{side}_attention_heads", heads, "d_model", h)
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=False,
                         o_bias=True, rotary_dim=0)  # q/v biases: extra tensors (k_proj has none)
    return LayerSpec(attention=attn, mlp=MLPSpec(intermediate=c.int(f"{side}_ffn_dim", bound=INTERMEDIATE),
                                                  gated=False, bias=True,
                                                  act=c.activation("activation_function", default="gelu")))


@family("whisper")
def read_whisper(c: Fields, name: str) -> ModelArch:
    h, mels = c.int("d_model", bound=HIDDEN), c.int("num_mel_bins", bound=CHANNELS)
    enc, dec = _spec(c, h, "encoder"), _spec(c, h, "decoder")
    source = c.int("max_source_positions", bound=CONTEXT)
    target = c.int("max_target_positions", bound=CONTEXT)
    biased = LayerSpec(attention=AttentionSpec(heads=enc.attention.heads, kv_heads=enc.attention.heads,
                                               head_dim=enc.attention.head_dim, v_head_dim=enc.attention.head_dim,
                                               qkv_bias=True, o_bias=True), mlp=enc.mlp)
    extra = [WeightTensor("encoder.conv1.weight", (h, mels, 3), "conv"), WeightTensor("encoder.conv1.bias", (h,), "bias"),
             WeightTensor("encoder.conv2.weight", (h, h, 3), "conv"), WeightTensor("encoder.conv2.bias", (h,), "bias"),
             WeightTensor("encoder.embed_positions.weight", (source, h), "position")]
    enc_layers = c.int("encoder_layers", bound=LAYERS)
    for i in range(enc_layers):
        extra += block_tensors(f"encoder.layers.{i}", biased, h, norm_bias=True, k_bias=False)
    extra += [WeightTensor("encoder.norm.weight", (h,), "norm"), WeightTensor("encoder.norm.bias", (h,), "norm")]
    dec_layers = c.int("decoder_layers", bound=LAYERS)
    tower = TowerSpec(kind="encoder", hidden=h, layer=biased, layers=c.int("encoder_layers", bound=LAYERS), norm="layer",
                      stem="audio_conv", positions=source, channels=mels, k_bias=False)
    cross = LayerSpec(attention=biased.attention, mlp=dec.mlp)
    for i in range(dec_layers):
        extra += [WeightTensor(f"layers.{i}.attn.q_proj.bias", (h,), "bias", i),
                  WeightTensor(f"layers.{i}.attn.v_proj.bias", (h,), "bias", i)]
        extra += cross_tensors(i, cross, h, norm_bias=True, k_bias=False)
    note = ENCODER_NOTE.format(source=f"the encoder's {source:,} positions")
    return ModelArch(name=name, model_type="whisper", hidden=h, vocab=c.int("vocab_size", bound=VOCAB),
                     layers=(dec,) * dec_layers, norm="layer", tie_embeddings=c.flag("tie_word_embeddings", True),
                     positions=target, max_context=target, extra_tensors=tuple(extra), cross_source=source,
                     tower=tower, assumptions=(note + f" (whisper: one {2 * source:,}-frame log-mel window per "
                                               f"request)",))
