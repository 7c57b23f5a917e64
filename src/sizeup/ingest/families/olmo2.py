"""OLMo 2: a LLaMA-style decoder with RMSNorm on queries and keys."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder
from sizeup.ingest.families.fields import Fields
from sizeup.ingest.families.registry import family

OLMO2 = DecoderTraits(qk_norm=True)


@family("olmo2")
def read_olmo2(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, OLMO2)
