"""Mistral 3 (Mistral Small 3.1, mistralai/Mistral-Small-3.1-24B-Instruct-2503) as transformers'
`Mistral3ForConditionalGeneration` builds it: the language model of `text_config` (read by its own family,
Mistral by default), a Pixtral vision tower (`vision_config`, model_type `pixtral`: a bias-free patch conv,
RMSNorm ln_pre, layers of RMSNorm, bias-free attention with 2D RoPE and a bias-free gated MLP) and
Mistral 3's multi_modal_projector: an RMSNorm, the patch merger (spatial_merge_size² patches concatenated,
one bias-free linear back to the vision width), then linear_1, GELU, linear_2 to the text width (biases
when multimodal_projector_bias). Every weight is counted (transformers 5.24.0's modeling_mistral3.py and
modeling_pixtral.py).

Pixtral reads images at their own resolution: an image larger than `vision_config.image_size` (1540, the
processor's longest_edge) is scaled down, each side rounded up to a multiple of patch_size ×
spatial_merge_size (28), and it adds rows × (cols + 1) prompt tokens (one per 28 × 28 block, a break after
each row; 272 for 448 × 448). The estimate says so; they are the user's to count in `--prompt`. The tower
runs once per image (`--images`, `--image-size`), priced in prefill (`ingest/tower_ops.py`).

A config without text_config / vision_config takes Mistral3Config's own sub-config defaults (Mistral Small
3.1's); fields a present vision_config leaves out take PixtralVisionConfig's (hidden 1024, intermediate
4096, 24 layers, 16 heads, 3 channels, image 1024, patch 16), transformers 5.24.0's configuration_mistral3.py
and configuration_pixtral.py."""

from __future__ import annotations

from dataclasses import replace

from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, TowerSpec, WeightTensor
from sizeup.ingest.families.fields import IMAGE, Fields
from sizeup.ingest.families.registry import family, parse_config
from sizeup.ingest.families.vision_fields import feature_layers, vit_sizes

TEXT_DEFAULTS = {"model_type": "mistral", "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
                 "intermediate_size": 32768, "max_position_embeddings": 131072, "num_attention_heads": 32,
                 "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1e9,
                 "sliding_window": None, "vocab_size": 131072}
"""Mistral3Config's text_config when a config names none."""
VISION_DEFAULTS = {"intermediate_size": 4096, "hidden_size": 1024, "patch_size": 14, "image_size": 1540,
                   "num_hidden_layers": 24, "num_attention_heads": 16, "hidden_act": "gelu"}
"""Mistral3Config's vision_config when a config names none."""
PIXTRAL_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
                    "num_channels": 3, "image_size": 1024, "patch_size": 16, "hidden_act": "gelu"}
"""transformers' PixtralVisionConfig defaults."""


def pixtral_vision_tensors(v: Fields, prefix: str) -> tuple[tuple[WeightTensor, ...], TowerSpec]:
    """A Pixtral vision transformer's weights (role "vision") and how it runs (no projector yet)."""
    v = Fields({**PIXTRAL_DEFAULTS, **{k: val for k, val in v.data.items() if val is not None}}, v.where)
    h, inter, heads, layers, size, patch, channels = vit_sizes(v)

    def t(name: str, *shape: int) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", shape, "vision")

    out = [t("patch_conv.weight", h, channels, patch, patch), t("ln_pre.weight", h)]
    for i in range(layers):
        p = f"transformer.layers.{i}"
        out += [t(f"{p}.attention.{proj}.weight", h, h) for proj in ("q_proj", "k_proj", "v_proj", "o_proj")]
        out += [t(f"{p}.feed_forward.gate_proj.weight", inter, h), t(f"{p}.feed_forward.up_proj.weight", inter, h),
                t(f"{p}.feed_forward.down_proj.weight", h, inter), t(f"{p}.attention_norm.weight", h),
                t(f"{p}.ffn_norm.weight", h)]
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=False,
                         o_bias=False, causal=False)
    mlp = MLPSpec(intermediate=inter, gated=True, bias=False, act=v.activation("hidden_act", default="gelu"))
    spec = TowerSpec(kind="vision", hidden=h, layer=LayerSpec(attention=attn, mlp=mlp), layers=layers, norm="rms",
                     stem="patch_conv", channels=channels, patch=patch, rotary=True, variant="pixtral",
                     max_image_side=size)
    return tuple(out), spec


@family("mistral3")
def read_mistral3(c: Fields, name: str) -> ModelArch:
    text = c.mapping("text_config")
    inner = dict(text) if text is not None else dict(TEXT_DEFAULTS)
    inner.setdefault("model_type", "mistral")
    arch = parse_config(inner, name, f"{c.where} (text_config)")
    if c.data.get("tie_word_embeddings") is not None:  # the wrapper's own flag, where it names one, decides
        arch = replace(arch, tie_embeddings=c.flag("tie_word_embeddings", False))
    vision = c.mapping("vision_config")
    v = Fields(dict(vision) if vision is not None else dict(VISION_DEFAULTS), f"{c.where} (vision_config)")
    if v.text("model_type", default="pixtral") != "pixtral":
        raise v.error("model_type", v.data["model_type"], "expected 'pixtral' (the vision tower sizeup's mistral3 "
                      "family builds)")
    tower, spec = pixtral_vision_tensors(v, "vision_tower")
    merge = c.int("spatial_merge_size", bound=IMAGE, default=2)
    width = spec.hidden * feature_layers(c, -1, spec.layers)
    bias = c.flag("multimodal_projector_bias", False)

    def p(name: str, *shape: int) -> WeightTensor:
        return WeightTensor(f"multi_modal_projector.{name}", shape, "projector")

    projector = [p("norm.weight", spec.hidden), p("patch_merger.merging_layer.weight", spec.hidden,
                                                   spec.hidden * merge * merge),
                 p("linear_1.weight", arch.hidden, width), p("linear_2.weight", arch.hidden, arch.hidden)]
    if bias:
        projector += [p("linear_1.bias", arch.hidden), p("linear_2.bias", arch.hidden)]
    spec = replace(spec, merge=merge, projector=(width, arch.hidden, arch.hidden), projector_bias=bias)
    from sizeup.ingest.tower_ops import DEFAULT_IMAGE_SIDE, image_grid  # the processor's resize, kept in one place
    example, block = image_grid(spec, None)[1], spec.patch * merge
    note = (f"mistral3: an image adds one prompt token per {block} × {block} pixels plus a break per row ({example:,} "
            f"for {DEFAULT_IMAGE_SIDE} × {DEFAULT_IMAGE_SIDE}; sides above {spec.max_image_side:,} scaled down; count "
            f"them in --prompt); the Pixtral vision tower ({spec.layers} layers) and the projector are counted and "
            f"run once per image (--images, --image-size), priced in prefill")
    return replace(arch, model_type="mistral3", tower=spec, extra_tensors=arch.extra_tensors + tower + tuple(projector),
                   assumptions=arch.assumptions + (note,))
