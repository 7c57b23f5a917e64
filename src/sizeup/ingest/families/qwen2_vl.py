"""Qwen2-VL (Wang et al. 2024, arXiv:2409.12191) as transformers' `Qwen2VLForConditionalGeneration` builds
it: a Qwen2 language model (the config's top-level fields, or `text_config` where a newer file nests
them) and a ViT of `depth` blocks at `embed_dim` (a bias-free 3D patch embedding over
`temporal_patch_size` frames of `patch_size`² pixels, fused qkv with biases, a GELU MLP of `mlp_ratio` ×
embed_dim, LayerNorms with biases) whose merger folds `spatial_merge_size`² patches into one token of the
text width (`vision_config.hidden_size`). Every weight is counted.

Qwen2-VL reads images at their own resolution: an image of H × W pixels adds
(H / patch) · (W / patch) / spatial_merge_size² prompt tokens (256 for 448 × 448); the estimate says so,
and they are the user's to count in `--prompt`. The vision tower's forward (3D patch conv, the ViT blocks
over each image's patches, the merger) is priced once per image in prefill (`ingest/tower_ops.py`)."""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError
from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, TowerSpec, WeightTensor
from sizeup.ingest.families.fields import CHANNELS, HEADS, HIDDEN, IMAGE, LAYERS, Bound, Fields
from sizeup.ingest.families.registry import family, parse_config

RATIO = Bound("MLP ratio", 64)
EXAMPLE_SIDE = 448


def _vision(v: Fields, text_width: int) -> tuple[tuple[WeightTensor, ...], TowerSpec]:
    """The vision tower's weights (role "vision"; the merger "projector") and how it runs."""
    d, depth = v.int("embed_dim", bound=HIDDEN), v.int("depth", bound=LAYERS)
    heads = v.int("num_heads", bound=HEADS)
    v.divides("num_heads", heads, "embed_dim", d)
    ratio = v.data.get("mlp_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= RATIO.maximum:
        raise v.error("mlp_ratio", ratio, f"expected a number above 0 and at most {RATIO.maximum}")
    inter = int(d * ratio)
    patch, temporal = v.int("patch_size", bound=IMAGE), v.int("temporal_patch_size", bound=IMAGE, default=2)
    channels, merge = v.int("in_chans", "in_channels", bound=CHANNELS, default=3), v.int("spatial_merge_size", bound=IMAGE,
                                                                                          default=2)
    out_width = v.int("hidden_size", bound=HIDDEN, default=text_width)
    if out_width != text_width:
        raise v.error("hidden_size", out_width, f"expected the language model's hidden size {text_width:,} (the merger's "
                      f"output feeds it)")

    def t(name: str, *shape: int, role: str = "vision") -> WeightTensor:
        return WeightTensor(f"visual.{name}", shape, role)

    out = [t("patch_embed.proj.weight", d, channels, temporal, patch, patch)]
    for i in range(depth):
        p = f"blocks.{i}"
        out += [t(f"{p}.norm{n}.{w}", d) for n in (1, 2) for w in ("weight", "bias")]
        out += [t(f"{p}.attn.qkv.weight", 3 * d, d), t(f"{p}.attn.qkv.bias", 3 * d),
                t(f"{p}.attn.proj.weight", d, d), t(f"{p}.attn.proj.bias", d),
                t(f"{p}.mlp.fc1.weight", inter, d), t(f"{p}.mlp.fc1.bias", inter),
                t(f"{p}.mlp.fc2.weight", d, inter), t(f"{p}.mlp.fc2.bias", d)]
    folded = d * merge * merge
    out += [t("merger.ln_q.weight", d, role="projector"), t("merger.ln_q.bias", d, role="projector"),
            t("merger.mlp.0.weight", folded, folded, role="projector"), t("merger.mlp.0.bias", folded, role="projector"),
            t("merger.mlp.2.weight", out_width, folded, role="projector"),
            t("merger.mlp.2.bias", out_width, role="projector")]
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=d // heads, v_head_dim=d // heads, qkv_bias=True,
                         o_bias=True, causal=False)
    mlp = MLPSpec(intermediate=inter, gated=False, bias=True, act=v.activation("hidden_act", default="quick_gelu"))
    spec = TowerSpec(kind="vision", hidden=d, layer=LayerSpec(attention=attn, mlp=mlp), layers=depth, norm="layer",
                     stem="patch_conv", channels=channels, patch=patch, temporal=temporal, rotary=True, merge=merge,
                     projector=(folded, folded, out_width), projector_norm=True)
    return tuple(out), spec


@family("qwen2_vl")
def read_qwen2_vl(c: Fields, name: str) -> ModelArch:
    vision = c.mapping("vision_config")
    if vision is None:
        raise ConfigError(f"{c.where}: missing field 'vision_config' (needed for model_type 'qwen2_vl')")
    text = c.mapping("text_config")
    inner = dict(text) if text is not None else {k: v for k, v in c.data.items() if k != "vision_config"}
    inner["model_type"] = "qwen2"
    arch = parse_config(inner, name, f"{c.where} (text_config)" if text is not None else c.where)
    tower, spec = _vision(Fields(vision, f"{c.where} (vision_config)"), arch.hidden)
    pixels_per_token = (spec.patch * spec.merge) ** 2
    example = EXAMPLE_SIDE * EXAMPLE_SIDE // pixels_per_token
    note = (f"qwen2_vl: an image of H × W pixels adds H·W / {pixels_per_token:,} prompt tokens ({example:,} for "
            f"{EXAMPLE_SIDE} × {EXAMPLE_SIDE}; count them in --prompt); the vision tower runs once per image (--images, "
            f"--image-size), priced in prefill")
    return replace(arch, model_type="qwen2_vl", tower=spec, extra_tensors=arch.extra_tensors + tower,
                   assumptions=arch.assumptions + (note,))
