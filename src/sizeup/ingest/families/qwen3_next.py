"""Qwen3-Next (`Qwen3NextForCausalLM`, transformers' models/qwen3_next): a hybrid of Gated DeltaNet linear attention
(Yang et al. 2024, arXiv:2412.06464) and gated full attention, every layer followed by a high-sparsity MoE (Qwen2-MoE
style: routed experts, one gated shared expert). Layer i is full attention where (i + 1) is a multiple of
`full_attention_interval` (or as `layer_types` says), else linear attention. A full-attention layer is Qwen3's (QK
norm, grouped-query heads, partial rotary) with an output gate: q_proj emits queries and a per-channel gate, the
attention output is multiplied by its sigmoid before o_proj. A linear-attention layer keeps a fixed recurrent state
per sequence (conv window + one key × value state per value head) in place of a KV cache."""

from __future__ import annotations

from dataclasses import replace

from sizeup.ingest.arch import NO_ATTENTION, ModelArch, SSMSpec
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder, rotary_fraction
from sizeup.ingest.families.fields import HEAD_DIM, HEADS, LAYERS, Fields
from sizeup.ingest.families.mamba import CONV, STATE_NOTE
from sizeup.ingest.families.qwen import qwen_windows
from sizeup.ingest.families.qwen_moe import qwen_moe_layer
from sizeup.ingest.families.registry import family

QWEN3_NEXT = DecoderTraits(qk_norm=True, windows=qwen_windows, moe=qwen_moe_layer)
KINDS = ("linear_attention", "full_attention")


def _layer_kinds(c: Fields, layers: int) -> list[str]:
    if "layer_types" in c.data:
        kinds = c.texts("layer_types")
        if len(kinds) != layers or any(k not in KINDS for k in kinds):
            raise c.error("layer_types", kinds, f"{layers:,} entries, each one of {', '.join(KINDS)}")
        return kinds
    interval = c.int("full_attention_interval", bound=LAYERS, default=4)
    return ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]


def _delta_net(c: Fields) -> SSMSpec:
    key_heads = c.int("linear_num_key_heads", bound=HEADS, default=16)
    value_heads = c.int("linear_num_value_heads", bound=HEADS, default=32)
    c.divides("linear_num_key_heads", key_heads, "linear_num_value_heads", value_heads)
    key_dim = c.int("linear_key_head_dim", bound=HEAD_DIM, default=128)
    value_dim = c.int("linear_value_head_dim", bound=HEAD_DIM, default=128)
    return SSMSpec(version=3, inner=value_heads * value_dim, state=key_dim, heads=value_heads, groups=key_heads,
                   conv=c.int("linear_conv_kernel_dim", bound=CONV, default=4), conv_bias=False)


@family("qwen3_next")
def read_qwen3_next(c: Fields, name: str) -> ModelArch:
    gated = c.flag("attn_output_gate", True)
    arch = read_decoder(c, name, QWEN3_NEXT)
    kinds, ssm = _layer_kinds(c, len(arch.layers)), _delta_net(c)
    layers = []
    for layer, kind in zip(arch.layers, kinds):
        if kind == "linear_attention":
            layers.append(replace(layer, attention=NO_ATTENTION, ssm=ssm))
        else:
            a = layer.attention
            rotary = rotary_fraction(c, a.head_dim, "partial_rotary_factor", default=0.25)
            layers.append(replace(layer, attention=replace(a, output_gate=gated, rotary_dim=rotary)))
    return replace(arch, layers=tuple(layers), assumptions=(*arch.assumptions, STATE_NOTE + (
        " (Gated DeltaNet layers: conv window + one key x value state per value head)")))
