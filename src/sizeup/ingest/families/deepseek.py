"""DeepSeek V2 / V3: multi-head latent attention (keys and values through a shared latent of
`kv_lora_rank`, plus a decoupled RoPE key) and MoE layers after the first `first_k_dense_replace`,
with shared experts and, under `topk_method = noaux_tc`, a routing bias (DeepSeek-V3 report, §2.1)."""

from __future__ import annotations

from sizeup.ingest.arch import MLPSpec, ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder, top_k
from sizeup.ingest.families.fields import EXPERTS, INTERMEDIATE, LAYERS, Fields
from sizeup.ingest.families.registry import family


TOPK_METHODS = ("greedy", "group_limited_greedy", "noaux_tc")
"""DeepSeek's routing methods (V2: greedy, group_limited_greedy; V3: noaux_tc, with its routing bias)."""


def deepseek_layer(c: Fields, i: int, act: str, dense: MLPSpec) -> MLPSpec:
    routed = c.int("n_routed_experts", bound=EXPERTS, default=0, minimum=0)
    freq = c.int("moe_layer_freq", bound=LAYERS, default=1)
    first = c.int("first_k_dense_replace", bound=LAYERS, default=0, minimum=0)
    c.at_most("first_k_dense_replace", first, "num_hidden_layers", c.int("num_hidden_layers", bound=LAYERS))
    method = c.choice("topk_method", default="greedy", allowed=TOPK_METHODS)
    if not routed or i < first or i % freq:
        return dense
    inter = c.int("moe_intermediate_size", bound=INTERMEDIATE)
    return MLPSpec(intermediate=inter, gated=True, act=act, experts=routed, top_k=top_k(c, routed, "n_routed_experts"),
                   shared_experts=c.int("n_shared_experts", bound=EXPERTS, default=0, minimum=0),
                   shared_intermediate=inter, router_bias=method == "noaux_tc")


DEEPSEEK = DecoderTraits(mla=True, moe=deepseek_layer)


@family("deepseek_v2", "deepseek_v3")
def read_deepseek(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, DEEPSEEK)
