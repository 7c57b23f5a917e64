"""DistilBERT: a 6-layer BERT without token types or pooler (Sanh et al. 2019), its sizes under `dim`,
`n_heads`, `n_layers` and `hidden_dim`; positions are an embedding table of `max_position_embeddings`
rows whether learned or sinusoidal (`sinusoidal_pos_embds` fills the same parameter). Read as
DistilBertModel, without a task head."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.encoder import EncoderKeys, encoder_layers, hidden_size
from sizeup.ingest.families.fields import CONTEXT, VOCAB, Fields
from sizeup.ingest.families.registry import family

DISTILBERT_KEYS = EncoderKeys(hidden=("dim", "hidden_size"), heads=("n_heads", "num_attention_heads"),
                              layers=("n_layers", "num_hidden_layers"), intermediate=("hidden_dim", "intermediate_size"),
                              act=("activation", "hidden_act"))


@family("distilbert")
def read_distilbert(c: Fields, name: str) -> ModelArch:
    positions = c.int("max_position_embeddings", bound=CONTEXT)
    return ModelArch(name=name, model_type="distilbert", hidden=hidden_size(c, DISTILBERT_KEYS),
                     vocab=c.int("vocab_size", bound=VOCAB), layers=encoder_layers(c, True, DISTILBERT_KEYS),
                     norm="layer", positions=positions, encoder=True, lm_head=False, max_context=positions,
                     assumptions=("DistilBertModel; no task head",))
