"""What a torch trace is asked for, without torch: the model's inputs and the trace mode. Shared by the
tracer (sizeup.ingest.torch_trace) and its on-disk cache (sizeup.ingest.trace_cache), which must name a
trace before deciding whether torch has to load at all."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["InputSpec", "TraceMode"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InputSpec:
    """One model input: positional when `name` is None, else passed as a keyword argument."""

    shape: tuple[int, ...]
    dtype: str | None = None
    """None: the trace's float dtype."""
    name: str | None = None


class TraceMode(str, Enum):
    INFERENCE = "inference"
    BACKWARD = "backward"
    TRAIN = "train"
