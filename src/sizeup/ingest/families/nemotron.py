"""Nemotron: LayerNorm (1p, with a bias) and a plain up/down MLP with squared ReLU, no gate
(arXiv:2402.16819)."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder
from sizeup.ingest.families.fields import Fields
from sizeup.ingest.families.registry import family

NEMOTRON = DecoderTraits(norm="layer", gated=False)


@family("nemotron")
def read_nemotron(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, NEMOTRON)
