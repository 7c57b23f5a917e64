"""Mixtral: every layer's MLP is `num_local_experts` gated experts, `num_experts_per_tok` of them
routed per token (Mistral AI, Mixtral of experts, 2024)."""

from __future__ import annotations

from sizeup.ingest.arch import MLPSpec, ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder, top_k
from sizeup.ingest.families.fields import EXPERTS, INTERMEDIATE, Fields
from sizeup.ingest.families.registry import family


def mixtral_layer(c: Fields, i: int, act: str, dense: MLPSpec) -> MLPSpec:
    experts = c.int("num_local_experts", bound=EXPERTS)
    return MLPSpec(intermediate=c.int("intermediate_size", bound=INTERMEDIATE), gated=True, act=act,
                   experts=experts, top_k=top_k(c, experts, "num_local_experts"))


MIXTRAL = DecoderTraits(moe=mixtral_layer)


@family("mixtral")
def read_mixtral(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, MIXTRAL)
