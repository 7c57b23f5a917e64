"""ViT: an encoder over (image_size / patch_size)² patches plus a class token, with a classifier of
`num_labels` (or the labels of `id2label`) or, without labels, a pooler (Dosovitskiy et al. 2021)."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.encoder import encoder_layers
from sizeup.ingest.families.fields import Fields
from sizeup.ingest.families.registry import family


@family("vit")
def read_vit(c: Fields, name: str) -> ModelArch:
    labels = c.get("num_labels") or len(c.get("id2label") or {}) or 0
    assumptions = []
    archs = c.get("architectures") or []
    if "ViTForImageClassification" in archs and not labels:
        labels = 1000
        assumptions.append("ViTForImageClassification with 1000 labels (config lists none)")
    size, patch = c.int("image_size"), c.int("patch_size")
    return ModelArch(name=name, model_type="vit", hidden=c.int("hidden_size"), vocab=0,
                     layers=encoder_layers(c, bool(c.get("qkv_bias", True))), norm="layer", encoder=True,
                     lm_head=False, pooler=not labels, classifier=labels,
                     image=(size, patch, c.int("num_channels", default=3)), max_context=(size // patch) ** 2 + 1,
                     assumptions=tuple(assumptions))
