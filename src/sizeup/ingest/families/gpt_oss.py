"""gpt-oss (OpenAI 2025, gpt-oss-120b & gpt-oss-20b model card): a decoder of RMSNorm and
grouped-query attention with biases and a learned attention sink per head, alternating
sliding-window and full layers (`layer_types`; every other layer when absent), and MoE MLPs of
`num_local_experts` gated experts, `num_experts_per_tok` routed per token, with biases on the
router and on every expert projection. Its clamped SwiGLU costs as a gated SiLU MLP."""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError
from sizeup.ingest.arch import MLPSpec, ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, quantization_note, read_decoder, top_k
from sizeup.ingest.families.fields import EXPERTS, INTERMEDIATE, Fields
from sizeup.ingest.families.gemma import alternate_windows
from sizeup.ingest.families.registry import family


def gpt_oss_layer(c: Fields, i: int, act: str, dense: MLPSpec) -> MLPSpec:
    experts = c.int("num_local_experts", bound=EXPERTS)
    k = top_k(c, experts, "num_local_experts")
    if c.has("experts_per_token") and c.int("experts_per_token", bound=EXPERTS) != k:
        raise ConfigError(f"{c.where}: experts_per_token = {c.data['experts_per_token']!r} contradicts "
                          f"num_experts_per_tok = {k:,}")
    return MLPSpec(intermediate=c.int("intermediate_size", bound=INTERMEDIATE), gated=True, act="silu", bias=True,
                   experts=experts, top_k=k, router_linear_bias=True)


GPT_OSS = DecoderTraits(sinks=True, moe=gpt_oss_layer, windows=alternate_windows, attention_bias=True,
                        class_defaults={"sliding_window": 128, "head_dim": 64})
"""GptOssConfig's defaults for fields a config may leave out."""


@family("gpt_oss")
def read_gpt_oss(c: Fields, name: str) -> ModelArch:
    notes = ["gpt_oss: the clamped SwiGLU (swiglu_limit) is costed as a gated SiLU; the attention sinks are "
             "counted as weights (one logit per head), their softmax term is not costed"]
    q = c.mapping("quantization_config")
    if q and str(q.get("quant_method", "")).lower() == "mxfp4":
        # the checkpoint's own format: priced as shipped unless --quant names another (api.weights_format)
        arch = read_decoder(c, name, GPT_OSS, notes)
        return replace(arch, stored_format="mxfp4", stored_format_from=(
            "config.json quantization_config quant_method mxfp4: the MoE experts in MXFP4, attention, router, "
            "embeddings and LM head bf16 (modules_to_not_convert)"))
    return read_decoder(c, name, GPT_OSS, notes + quantization_note(c))
