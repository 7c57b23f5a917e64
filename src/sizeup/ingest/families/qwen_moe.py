"""Qwen2-MoE and Qwen3-MoE: routed experts every `decoder_sparse_step` layers except the
`mlp_only_layers`; Qwen2-MoE adds a gated shared expert."""

from __future__ import annotations

from sizeup.ingest.arch import MLPSpec, ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder, top_k
from sizeup.ingest.families.fields import EXPERTS, INTERMEDIATE, LAYERS, Fields
from sizeup.ingest.families.qwen import qwen_windows
from sizeup.ingest.families.registry import family


def qwen_moe_layer(c: Fields, i: int, act: str, dense: MLPSpec) -> MLPSpec:
    layers = c.int("num_hidden_layers", bound=LAYERS)
    step = c.int("decoder_sparse_step", bound=LAYERS, default=1)
    experts = c.int("num_experts", bound=EXPERTS, minimum=0)
    if experts == 0 or i in c.indices("mlp_only_layers", below=layers) or (i + 1) % step:
        return dense
    shared = c.int("shared_expert_intermediate_size", bound=INTERMEDIATE, default=0, minimum=0)
    return MLPSpec(intermediate=c.int("moe_intermediate_size", bound=INTERMEDIATE), gated=True, act=act,
                   experts=experts, top_k=top_k(c, experts, "num_experts"), shared_experts=1 if shared else 0,
                   shared_intermediate=shared, shared_gate=bool(shared))


QWEN2_MOE = DecoderTraits(qkv_bias=True, windows=qwen_windows, moe=qwen_moe_layer)
QWEN3_MOE = DecoderTraits(qk_norm=True, windows=qwen_windows, moe=qwen_moe_layer)


@family("qwen2_moe")
def read_qwen2_moe(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, QWEN2_MOE)


@family("qwen3_moe")
def read_qwen3_moe(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, QWEN3_MOE)
