"""BERT: a post-norm encoder with learned positions, token-type embeddings and a pooler
(Devlin et al. 2019); read as BertModel, without a task head."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.encoder import encoder_layers
from sizeup.ingest.families.fields import CONTEXT, HIDDEN, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("bert")
def read_bert(c: Fields, name: str) -> ModelArch:
    positions = c.int("max_position_embeddings", bound=CONTEXT)
    return ModelArch(name=name, model_type="bert", hidden=c.int("hidden_size", bound=HIDDEN),
                     vocab=c.int("vocab_size", bound=VOCAB), layers=encoder_layers(c, True), norm="layer",
                     positions=positions, type_vocab=c.int("type_vocab_size", bound=VOCAB, default=2, minimum=0),
                     encoder=True, lm_head=False, pooler=True, max_context=positions,
                     assumptions=("BertModel with its pooler; no task head",))
