"""Gemma, Gemma 2 and Gemma 3 (text): tied embeddings scaled by sqrt(hidden); Gemma 2/3 add
post-norms (4 per layer) and local sliding-window layers: every other layer in Gemma 2, all but every
`sliding_window_pattern`-th in Gemma 3, which also norms queries and keys."""

from __future__ import annotations

from sizeup.ingest.arch import ModelArch
from sizeup.ingest.families.decoder import DecoderTraits, read_decoder
from sizeup.ingest.families.fields import LAYERS, Fields
from sizeup.ingest.families.registry import family


def alternate_windows(c: Fields, layers: int, window: int | None) -> list:
    return [window if i % 2 == 0 else None for i in range(layers)]


def pattern_windows(c: Fields, layers: int, window: int | None) -> list:
    pattern = c.int("sliding_window_pattern", bound=LAYERS, default=6)
    return [None if (i + 1) % pattern == 0 else window for i in range(layers)]


GEMMA = DecoderTraits(tie_default=True, embed_scale=True)
GEMMA2 = DecoderTraits(norms=4, tie_default=True, embed_scale=True, windows=alternate_windows)
GEMMA3_TEXT = DecoderTraits(norms=4, qk_norm=True, tie_default=True, embed_scale=True, windows=pattern_windows,
                            class_defaults={"vocab_size": 262_208, "sliding_window": 4096, "head_dim": 256})
"""Gemma3TextConfig's defaults: its config.json inside a Gemma 3 checkpoint leaves these out."""


@family("gemma")
def read_gemma(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, GEMMA)


@family("gemma2")
def read_gemma2(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, GEMMA2)


@family("gemma3_text")
def read_gemma3_text(c: Fields, name: str) -> ModelArch:
    return read_decoder(c, name, GEMMA3_TEXT)
