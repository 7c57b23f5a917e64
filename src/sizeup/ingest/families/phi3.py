"""Phi-3 and Phi-4: a LLaMA-style decoder whose q/k/v (and gate/up) projections are fused in the
checkpoint; the fused matrices hold the same parameters as the separate ones."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder
from sizeup.ingest.families.fields import Fields
from sizeup.ingest.families.registry import family

PHI3 = DecoderTraits()


@family("phi3")
def read_phi3(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, PHI3)
