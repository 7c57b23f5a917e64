"""The sizes every ViT-style `vision_config` names (CLIP, SigLIP, Pixtral), read and checked once for the
vision-language families: the tower's own weights and stems stay in each family's file."""

from __future__ import annotations

from typing import NamedTuple

from sizeup.ingest.families.fields import CHANNELS, HEADS, HIDDEN, IMAGE, INTERMEDIATE, LAYERS, Fields

__all__ = ["ViTSizes", "vit_sizes", "feature_layers"]


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


def feature_layers(c: Fields, default: int, tower_layers: int) -> int:
    """How many of the vision tower's hidden states `vision_feature_layer` concatenates (an index, or a list of
    them; `default` when absent). The tower has tower_layers + 1 hidden states (the embeddings, then each
    layer's output), so an index runs from -(tower_layers + 1) to tower_layers, as Python indexes them."""
    value = c.data.get("vision_feature_layer")
    items = [default] if value is None else value if isinstance(value, list) else [value]
    low, high = -(tower_layers + 1), tower_layers
    if not items or len(items) > tower_layers + 1 or any(
            isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high for v in items):
        raise c.error("vision_feature_layer", value, f"expected a layer index from {low} to {high} (the vision "
                      f"tower's {tower_layers} layers), or a non-empty list of them")
    return len(items)
