"""Qwen2 / Qwen2.5 (a bias on q, k and v) and Qwen3 (RMSNorm on queries and keys instead), dense.

Their sliding window applies only with `use_sliding_window`, and then from layer
`max_window_layers` on; the layers below it attend globally."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder
from sizeup.ingest.families.fields import LAYERS, Fields
from sizeup.ingest.families.registry import family


def qwen_windows(c: Fields, layers: int, window: int | None) -> list:
    if not c.flag("use_sliding_window", False):
        return [None] * layers
    first_full = c.int("max_window_layers", bound=LAYERS, default=layers, minimum=0)
    c.at_most("max_window_layers", first_full, "num_hidden_layers", layers)
    return [window if i >= first_full else None for i in range(layers)]


QWEN2 = DecoderTraits(qkv_bias=True, o_bias_follows_attention_bias=False, windows=qwen_windows)
QWEN3 = DecoderTraits(qk_norm=True, windows=qwen_windows)


@family("qwen2")
def read_qwen2(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, QWEN2)


@family("qwen3")
def read_qwen3(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, QWEN3)
