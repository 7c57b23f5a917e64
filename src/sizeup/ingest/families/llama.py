"""LLaMA and the decoders that share its layout exactly: Mistral (with a sliding window when its
config gives one) and IBM Granite (whose multipliers scale activations, not weights)."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder
from sizeup.ingest.families.fields import Fields
from sizeup.ingest.families.registry import family

LLAMA = DecoderTraits()


@family("llama", "mistral", "granite")
def read_llama(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, LLAMA)
