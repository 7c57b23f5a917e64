"""ViT: an encoder over (image_size / patch_size)² patches plus a class token, with a classifier of
`num_labels` (or the labels of `id2label`) or, without labels, a pooler (Dosovitskiy et al. 2021)."""

from __future__ import annotations

from sizeup.errors import ConfigError
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.encoder import encoder_layers
from sizeup.ingest.families.fields import CHANNELS, CONTEXT, HIDDEN, IMAGE, LABELS, Fields
from sizeup.ingest.families.registry import family


@family("vit")
def read_vit(c: Fields, name: str) -> ModelArch:
    labels = c.int("num_labels", bound=LABELS, default=0, minimum=0) or len(c.mapping("id2label") or {})
    assumptions = []
    if "ViTForImageClassification" in c.texts("architectures") and not labels:
        labels = 1000
        assumptions.append("ViTForImageClassification with 1000 labels (config lists none)")
    size, patch = c.int("image_size", bound=IMAGE), c.int("patch_size", bound=IMAGE)
    c.at_most("patch_size", patch, "image_size", size)
    patches = (size // patch) ** 2 + 1
    if patches > CONTEXT.maximum:
        raise ConfigError(f"{c.where}: image_size {size:,} / patch_size {patch:,} gives {patches:,} patches: expected "
                          f"at most {CONTEXT.maximum:,} (the bound on {CONTEXT.what})")
    return ModelArch(name=name, model_type="vit", hidden=c.int("hidden_size", bound=HIDDEN), vocab=0,
                     layers=encoder_layers(c, c.flag("qkv_bias", True)), norm="layer", encoder=True,
                     lm_head=False, pooler=not labels, classifier=labels,
                     image=(size, patch, c.int("num_channels", bound=CHANNELS, default=3)), max_context=patches,
                     assumptions=tuple(assumptions))
