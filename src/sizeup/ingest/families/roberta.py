"""RoBERTa and XLM-RoBERTa: BERT's post-norm encoder with its pooler (Liu et al. 2019; Conneau et al.
2020); positions are `max_position_embeddings` rows (two more than the longest sequence: the padding
offset) and one token type. Read as RobertaModel / XLMRobertaModel, without a task head; embedding models
such as BGE-M3 are XLMRobertaModel."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.encoder import encoder_layers, hidden_size
from sizeup.ingest.families.fields import CONTEXT, VOCAB, Fields
from sizeup.ingest.families.registry import family


@family("roberta", "xlm-roberta")
def read_roberta(c: Fields, name: str) -> ModelArch:
    positions = c.int("max_position_embeddings", bound=CONTEXT)
    return ModelArch(name=name, model_type=c.model_type, hidden=hidden_size(c), vocab=c.int("vocab_size", bound=VOCAB),
                     layers=encoder_layers(c, True), norm="layer", positions=positions,
                     type_vocab=c.int("type_vocab_size", bound=VOCAB, default=2, minimum=0), encoder=True,
                     lm_head=False, pooler=True, max_context=max(positions - 2, 1),
                     assumptions=(f"{'XLMRobertaModel' if c.model_type == 'xlm-roberta' else 'RobertaModel'} with "
                                  f"its pooler; no task head",))
