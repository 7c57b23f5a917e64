"""The sizes every ViT-style `vision_config` names (CLIP, SigLIP, Pixtral), read and checked once for the
vision-language families: the tower's own weights and stems stay in each family's file."""

from __future__ import annotations

from typing import NamedTuple

from sizeup.ingest.families.fields import CHANNELS, HEADS, HIDDEN, IMAGE, INTERMEDIATE, LAYERS, Fields

__all__ = ["ViTSizes", "vit_sizes"]


class ViTSizes(NamedTuple):
    hidden: int
    inter: int
    heads: int
    layers: int
    image: int
    patch: int
    channels: int


def vit_sizes(v: Fields) -> ViTSizes:
    """Hidden and MLP width, heads (dividing the width), layers, image side, patch (at most the image side) and
    input channels of a vision_config whose defaults the caller has already filled in."""
    h, inter = v.int("hidden_size", bound=HIDDEN), v.int("intermediate_size", bound=INTERMEDIATE)
    heads, layers = v.int("num_attention_heads", bound=HEADS), v.int("num_hidden_layers", bound=LAYERS)
    v.divides("num_attention_heads", heads, "hidden_size", h)
    size, patch = v.int("image_size", bound=IMAGE), v.int("patch_size", bound=IMAGE)
    v.at_most("patch_size", patch, "image_size", size)
    return ViTSizes(h, inter, heads, layers, size, patch, v.int("num_channels", bound=CHANNELS))
