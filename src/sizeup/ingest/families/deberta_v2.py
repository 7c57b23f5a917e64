"""DeBERTa-v2 and v3: BERT's post-norm encoder with disentangled attention (He et al. 2021). Positions are
relative: one table of 2 × `position_buckets` rows (or 2 × `max_relative_positions`, itself
`max_position_embeddings` when below 1) shared by every layer and normed once; with `share_att_key` false
each layer adds position key / query projections for its `pos_att_type` (c2p, p2c). Absolute positions
only with `position_biased_input`. Read as DebertaV2Model (no pooler), without a task head; defaults are
DebertaV2Config's."""

from __future__ import annotations

from sizeup.errors import ConfigError
from sizeup.ingest.arch import ModelArch, WeightTensor
from sizeup.ingest.families.encoder import encoder_layers, hidden_size, norm_tensors
from sizeup.ingest.families.fields import CONTEXT, HIDDEN, IMAGE, VOCAB, Fields
from sizeup.ingest.families.registry import family

_POS_ATT_TYPES = {"c2p", "p2c", "p2p"}


def _pos_att_types(c: Fields) -> set[str]:
    value = c.data.get("pos_att_type")
    if value is None:
        return set()
    types = [t.strip() for t in value.lower().split("|")] if isinstance(value, str) else c.texts("pos_att_type")
    if any(t not in _POS_ATT_TYPES for t in types):
        raise c.error("pos_att_type", value, "expected 'c2p', 'p2c' or 'p2p' (a list, or joined by '|')")
    return set(types)


@family("deberta-v2")
def read_deberta_v2(c: Fields, name: str) -> ModelArch:
    h = hidden_size(c)
    positions = c.int("max_position_embeddings", bound=CONTEXT, default=512)
    extras, assumptions = [], ["DebertaV2Model (no pooler); no task head"]
    embedding = c.int("embedding_size", bound=HIDDEN, default=h)
    if embedding != h:
        raise ConfigError(f"{c.where}: embedding_size = {embedding:,} differs from hidden_size = {h:,}: a factorised "
                          f"embedding is not read by the deberta-v2 family")
    layers = encoder_layers(c, True)
    if c.flag("relative_attention", False):
        buckets = c.data.get("position_buckets")
        span = c.int("position_buckets", bound=CONTEXT) if isinstance(buckets, int) and buckets > 0 else None
        if span is None:
            rel = c.data.get("max_relative_positions")
            span = c.int("max_relative_positions", bound=CONTEXT) if isinstance(rel, int) and rel >= 1 else positions
        extras.append(WeightTensor("encoder.rel_embeddings.weight", (2 * span, h), "position"))
        if not c.flag("share_att_key", False):
            types = _pos_att_types(c)
            for i in range(len(layers)):
                for kind, proj in (("c2p", "pos_key_proj"), ("p2c", "pos_query_proj")):
                    if kind in types:
                        extras += [WeightTensor(f"layers.{i}.attn.{proj}.weight", (h, h), "attention", i),
                                   WeightTensor(f"layers.{i}.attn.{proj}.bias", (h,), "bias", i)]
        assumptions.append(f"relative positions: {2 * span:,} shared embeddings; the disentangled position terms "
                           f"are not priced as FLOPs")
    norm_rel = c.text("norm_rel_ebd", default="none").lower()
    if "layer_norm" in [x.strip() for x in norm_rel.split("|")]:
        extras += norm_tensors("encoder.LayerNorm", h, True)
    kernel = c.int("conv_kernel_size", bound=IMAGE, default=0, minimum=0)
    if kernel:
        extras += [WeightTensor("encoder.conv.conv.weight", (h, h, kernel), "attention"),
                   WeightTensor("encoder.conv.conv.bias", (h,), "bias"), *norm_tensors("encoder.conv.LayerNorm", h, True)]
    return ModelArch(name=name, model_type="deberta-v2", hidden=h, vocab=c.int("vocab_size", bound=VOCAB, default=128100),
                     layers=layers, norm="layer", positions=positions if c.flag("position_biased_input", True) else 0,
                     type_vocab=c.int("type_vocab_size", bound=VOCAB, default=0, minimum=0), encoder=True,
                     lm_head=False, max_context=positions, extra_tensors=tuple(extras),
                     assumptions=tuple(assumptions))
