"""Gemma 3 (Gemma Team 2025, arXiv:2503.19786) as transformers' `Gemma3ForConditionalGeneration` builds it:
the Gemma 3 language model of `text_config` (read by its own family), a SigLIP vision tower
(`vision_config`, `siglip_vision_model`: a patch conv with bias, learned position embeddings, no class token,
encoder layers with biases, a post-LayerNorm, and SigLIP's attention-pooling head only where
`vision_use_head` is true) and Gemma 3's multi_modal_projector: an average pool of the patch grid down to
`mm_tokens_per_image`, a Gemma RMSNorm and a bias-free matrix from the vision width to the text width.
Every weight is counted (transformers 5.24.0's modeling_gemma3.py and modeling_siglip.py).

Each image is resized to `image_size`² and adds `mm_tokens_per_image` (256) prompt tokens; the estimate
says so, and they are the user's to count in `--prompt`. The tower's forward (patch conv, every SigLIP
layer over the (image_size / patch_size)² patches, the pool and projector) is priced once per image in
prefill (`ingest/tower_ops.py`).

Fields a sparse vision_config leaves out take SiglipVisionConfig's defaults (hidden 768, intermediate
3072, 12 layers, 12 heads, 3 channels, image 224, patch 16, vision_use_head true), transformers 5.24.0's
configuration_siglip.py."""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError
from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, TowerSpec, WeightTensor
from sizeup.ingest.families.fields import IMAGE, Fields
from sizeup.ingest.families.registry import family, parse_config
from sizeup.ingest.families.vision_fields import vit_sizes

SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                   "num_channels": 3, "image_size": 224, "patch_size": 16, "vision_use_head": True}
"""transformers' SiglipVisionConfig defaults."""


def siglip_vision_tensors(v: Fields, prefix: str) -> tuple[tuple[WeightTensor, ...], TowerSpec]:
    """A SigLIP vision transformer's weights (role "vision") and how it runs (no projector yet)."""
    v = Fields({**SIGLIP_DEFAULTS, **{k: val for k, val in v.data.items() if val is not None}}, v.where)
    h, inter, heads, layers, size, patch, channels = vit_sizes(v)
    patches = (size // patch) ** 2

    def t(name: str, *shape: int) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", shape, "vision")

    def encoder_layer(p: str) -> list[WeightTensor]:
        out = [t(f"{p}.self_attn.{proj}.{w}", *((h, h) if w == "weight" else (h,)))
               for proj in ("q_proj", "k_proj", "v_proj", "out_proj") for w in ("weight", "bias")]
        out += [t(f"{p}.mlp.fc1.weight", inter, h), t(f"{p}.mlp.fc1.bias", inter),
                t(f"{p}.mlp.fc2.weight", h, inter), t(f"{p}.mlp.fc2.bias", h)]
        return out + [t(f"{p}.layer_norm{n}.{w}", h) for n in (1, 2) for w in ("weight", "bias")]

    out = [t("embeddings.patch_embedding.weight", h, channels, patch, patch), t("embeddings.patch_embedding.bias", h),
           t("embeddings.position_embedding.weight", patches, h)]
    for i in range(layers):
        out += encoder_layer(f"encoder.layers.{i}")
    out += [t("post_layernorm.weight", h), t("post_layernorm.bias", h)]
    if v.flag("vision_use_head", True):  # attention pooling: a probe, nn.MultiheadAttention, LayerNorm, an MLP
        out += [t("head.probe", 1, 1, h), t("head.attention.in_proj_weight", 3 * h, h),
                t("head.attention.in_proj_bias", 3 * h), t("head.attention.out_proj.weight", h, h),
                t("head.attention.out_proj.bias", h), t("head.layernorm.weight", h), t("head.layernorm.bias", h),
                t("head.mlp.fc1.weight", inter, h), t("head.mlp.fc1.bias", inter),
                t("head.mlp.fc2.weight", h, inter), t("head.mlp.fc2.bias", h)]
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=True,
                         o_bias=True, causal=False)
    mlp = MLPSpec(intermediate=inter, gated=False, bias=True,
                  act=v.activation("hidden_act", default="gelu_pytorch_tanh"))
    spec = TowerSpec(kind="vision", hidden=h, layer=LayerSpec(attention=attn, mlp=mlp), layers=layers, norm="layer",
                     stem="patch_conv", positions=patches, channels=channels, patch=patch, image_size=size,
                     variant="siglip")
    return tuple(out), spec


@family("gemma3")
def read_gemma3(c: Fields, name: str) -> ModelArch:
    text = c.mapping("text_config")
    if text is None:
        raise ConfigError(f"{c.where}: missing field 'text_config' (the language model, needed for model_type "
                          f"'gemma3')")
    inner = dict(text)
    inner.setdefault("model_type", "gemma3_text")
    arch = parse_config(inner, name, f"{c.where} (text_config)")
    v = Fields(c.mapping("vision_config") or {}, f"{c.where} (vision_config)")
    if v.text("model_type", default="siglip_vision_model") != "siglip_vision_model":
        raise v.error("model_type", v.data["model_type"], "expected 'siglip_vision_model' (the vision tower sizeup's "
                      "gemma3 family builds)")
    tower, spec = siglip_vision_tensors(v, "vision_tower.vision_model")
    tokens = c.int("mm_tokens_per_image", bound=IMAGE, default=256)
    side, per_side = spec.image_size // spec.patch, int(tokens ** 0.5)
    kernel = side // per_side if per_side else 0
    if per_side * per_side != tokens or not kernel or (side // kernel) ** 2 != tokens:
        raise c.error("mm_tokens_per_image", tokens, f"expected a square whose side divides the {side} × {side} patch "
                      f"grid (image_size {spec.image_size} / patch_size {spec.patch}), as the projector's average "
                      f"pool needs")
    projector = (WeightTensor("multi_modal_projector.mm_input_projection_weight", (spec.hidden, arch.hidden),
                              "projector"),
                 WeightTensor("multi_modal_projector.mm_soft_emb_norm.weight", (spec.hidden,), "projector"))
    spec = replace(spec, projector=(spec.hidden, arch.hidden), projector_norm=True, projector_bias=False,
                   feature_tokens=tokens, merge=kernel)
    image = f"{spec.image_size} × {spec.image_size}"
    note = (f"gemma3: each image adds {tokens:,} prompt tokens (count them in --prompt); the SigLIP vision tower "
            f"({spec.layers} layers over {side * side:,} patches of a {image} image) and the projector (average "
            f"pool {kernel} × {kernel}, RMSNorm, {spec.hidden:,} -> {arch.hidden:,}) are counted and run once per "
            f"image (--images), priced in prefill")
    return replace(arch, model_type="gemma3", tower=spec, extra_tensors=arch.extra_tensors + tower + projector,
                   assumptions=arch.assumptions + (note,))
