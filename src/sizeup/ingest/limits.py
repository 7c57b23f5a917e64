"""The plausible bounds on a model's sizes, each named in the error that refuses more: what the
config parser, the header readers and the ONNX reader check before they build or loop over
anything a file claims."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Bound", "LAYERS", "HIDDEN", "INTERMEDIATE", "VOCAB", "HEADS", "HEAD_DIM", "EXPERTS", "CONTEXT", "IMAGE",
           "CHANNELS", "LABELS", "MAX_PARAMS", "MAX_PARAMS_TEXT"]


@dataclass(frozen=True, slots=True)
class Bound:
    """The largest plausible value of one kind of size."""

    what: str
    maximum: int


LAYERS = Bound("layers", 1_000)
HIDDEN = Bound("hidden size", 1_000_000)
INTERMEDIATE = Bound("intermediate size", 10_000_000)
VOCAB = Bound("vocabulary size", 10_000_000)
HEADS = Bound("attention heads", 100_000)
HEAD_DIM = Bound("head dimension", 100_000)
EXPERTS = Bound("experts", 100_000)
CONTEXT = Bound("context length", 100_000_000)
IMAGE = Bound("image size", 100_000)
CHANNELS = Bound("image channels", 1_024)
LABELS = Bound("labels", 10_000_000)
MAX_PARAMS = 10**14
"""Largest parameter count accepted (100 T; the largest published models are near 2 T)."""
MAX_PARAMS_TEXT = "1e14"
