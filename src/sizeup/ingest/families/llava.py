"""LLaVA (Liu et al. 2023, arXiv:2304.08485; LLaVA-1.5: arXiv:2310.03744) as transformers'
`LlavaForConditionalGeneration` builds it: the language model of `text_config` (read by its own family),
a CLIP vision tower (`vision_config`, every layer built, whatever `vision_feature_layer` picks) and a
two-layer GELU projector from the vision width to the text width. All three are counted exactly.

Each image of `image_size`² becomes (image_size / patch_size)² tokens of the prompt (one more with
`vision_feature_select_strategy` "full"); the estimate says how many, and they are the user's to count
in `--prompt`. The vision tower's forward (patch conv, every CLIP layer, the projector) is priced once per
image in prefill (`ingest/tower_ops.py`), for the images the scenario gives (`--images`).

Fields a sparse sub-config leaves out take transformers' defaults, as transformers does: `LlamaConfig`
(hidden 4096, intermediate 11008, 32 layers, 32 heads, vocab 32000) and `CLIPVisionConfig` (hidden 768,
intermediate 3072, 12 layers, 12 heads, image 224, patch 32, 3 channels), transformers 5.24.0's
configuration_llama.py and configuration_clip.py."""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError
from sizeup.ingest.arch import AttentionSpec, LayerSpec, MLPSpec, ModelArch, TowerSpec, WeightTensor
from sizeup.ingest.families.fields import VOCAB, Fields
from sizeup.ingest.families.registry import family, parse_config
from sizeup.ingest.families.vision_fields import feature_layers, vit_sizes

LLAMA_DEFAULTS = {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
                  "vocab_size": 32000}
"""transformers' LlamaConfig defaults: what a LLaVA text_config of model_type llama that omits a size is built with."""
CLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "image_size": 224, "patch_size": 32, "num_channels": 3}
"""transformers' CLIPVisionConfig defaults."""


def clip_vision_tensors(v: Fields, prefix: str) -> tuple[tuple[WeightTensor, ...], TowerSpec]:
    """A CLIP vision transformer's weights (role "vision") and how it runs (no projector yet)."""
    d = {k: v.data.get(k, default) for k, default in CLIP_DEFAULTS.items()}
    v = Fields({**v.data, **{k: val for k, val in d.items() if val is not None}}, v.where)
    h, inter, heads, layers, size, patch, channels = vit_sizes(v)
    patches = (size // patch) ** 2

    def t(name: str, *shape: int) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", shape, "vision")

    out = [t("embeddings.class_embedding", h), t("embeddings.patch_embedding.weight", h, channels, patch, patch),
           t("embeddings.position_embedding.weight", patches + 1, h), t("pre_layrnorm.weight", h),
           t("pre_layrnorm.bias", h)]
    for i in range(layers):
        p = f"encoder.layers.{i}"
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out += [t(f"{p}.self_attn.{proj}.weight", h, h), t(f"{p}.self_attn.{proj}.bias", h)]
        out += [t(f"{p}.mlp.fc1.weight", inter, h), t(f"{p}.mlp.fc1.bias", inter),
                t(f"{p}.mlp.fc2.weight", h, inter), t(f"{p}.mlp.fc2.bias", h)]
        out += [t(f"{p}.layer_norm{n}.{w}", h) for n in (1, 2) for w in ("weight", "bias")]
    out += [t("post_layernorm.weight", h), t("post_layernorm.bias", h)]
    attn = AttentionSpec(heads=heads, kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads, qkv_bias=True,
                         o_bias=True, causal=False)
    mlp = MLPSpec(intermediate=inter, gated=False, bias=True, act=v.activation("hidden_act", default="quick_gelu"))
    spec = TowerSpec(kind="vision", hidden=h, layer=LayerSpec(attention=attn, mlp=mlp), layers=layers, norm="layer",
                     stem="patch_conv", positions=patches + 1, channels=channels, patch=patch, image_size=size,
                     class_token=True)
    return tuple(out), spec


@family("llava")
def read_llava(c: Fields, name: str) -> ModelArch:
    text, vision = c.mapping("text_config"), c.mapping("vision_config")
    for key, value in (("text_config", text), ("vision_config", vision)):
        if value is None:
            raise ConfigError(f"{c.where}: missing field {key!r} (needed for model_type 'llava')")
    inner = dict(text)
    inner.setdefault("model_type", "llama")
    filled = []
    if inner["model_type"] == "llama":
        filled = [k for k in LLAMA_DEFAULTS if inner.get(k) is None]
        inner.update({k: LLAMA_DEFAULTS[k] for k in filled})
    arch = parse_config(inner, name, f"{c.where} (text_config)")
    outer_vocab = c.optional_int("vocab_size", bound=VOCAB)  # older configs repeat the text model's at the top
    v = Fields(vision, f"{c.where} (vision_config)")
    if v.text("model_type", default="clip_vision_model") != "clip_vision_model":
        raise v.error("model_type", v.data["model_type"], "expected 'clip_vision_model' (the vision tower sizeup's "
                      "llava family builds)")
    tower, spec = clip_vision_tensors(v, "vision_tower")
    width, patches = spec.hidden, spec.positions - 1
    features = feature_layers(c, -2, spec.layers)
    bias = c.flag("multimodal_projector_bias", True)
    projector = [WeightTensor("multi_modal_projector.linear_1.weight", (arch.hidden, width * features), "projector"),
                 WeightTensor("multi_modal_projector.linear_2.weight", (arch.hidden, arch.hidden), "projector")]
    if bias:
        projector += [WeightTensor("multi_modal_projector.linear_1.bias", (arch.hidden,), "projector"),
                      WeightTensor("multi_modal_projector.linear_2.bias", (arch.hidden,), "projector")]
    strategy = c.choice("vision_feature_select_strategy", default="default", allowed=("default", "full"))
    tokens = patches + (1 if strategy == "full" else 0)
    spec = replace(spec, projector=(width * features, arch.hidden, arch.hidden), feature_tokens=tokens)
    notes = [f"llava: each image adds {tokens:,} prompt tokens (count them in --prompt); the vision tower runs once "
             f"per image (--images), priced in prefill (every CLIP layer, as transformers runs it)"]
    if filled:
        notes.append(f"llava: text_config omits {', '.join(filled)}: transformers' LlamaConfig defaults")
    if outer_vocab is not None and outer_vocab != arch.vocab:  # transformers builds the embedding from text_config
        notes.append(f"llava: the top-level vocab_size ({outer_vocab:,}) differs from text_config's ({arch.vocab:,}); "
                     f"the embedding and LM head are built from text_config's, as transformers builds them")
    return replace(arch, model_type="llava", tower=spec, extra_tensors=arch.extra_tensors + tower + tuple(projector),
                   assumptions=arch.assumptions + tuple(notes))
