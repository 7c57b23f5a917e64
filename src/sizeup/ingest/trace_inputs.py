"""What a torch trace is asked for, without torch: the model's inputs and the trace mode. Shared by the
tracer (sizeup.ingest.torch_trace) and its on-disk cache (sizeup.ingest.trace_cache), which must name a
trace before deciding whether torch has to load at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from sizeup.errors import ConfigError

__all__ = ["InputSpec", "TraceMode", "parse_input_specs", "parse_shape"]


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


def parse_shape(text: str) -> tuple[int, ...]:
    """'1x64x64x64' -> (1, 64, 64, 64); every dimension a positive integer."""
    parts = text.strip().lower().split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"input shape {text!r}: expected positive integers joined by 'x', e.g. 1x3x224x224") from None
    if not shape or any(d <= 0 for d in shape):
        raise ConfigError(f"input shape {text!r}: every dimension must be a positive integer")
    return shape


def parse_input_specs(shapes: Sequence[str] = (), specs: Sequence[str] = ()) -> list[InputSpec]:
    """`shapes`: '1x64x64x64' (float inputs, comma-separated for several); `specs`:
    'NAME=DTYPE:SHAPE' or 'DTYPE:SHAPE' (e.g. 'input_ids=int64:1x128'), comma-separated."""
    from sizeup.units import normalize_dtype

    out: list[InputSpec] = []
    for group in shapes:
        for text in filter(None, (s.strip() for s in group.split(","))):
            out.append(InputSpec(shape=parse_shape(text)))
    for group in specs:
        for text in filter(None, (s.strip() for s in group.split(","))):
            name, _, rest = text.rpartition("=")
            dtype, sep, shape = rest.partition(":")
            if not sep:
                raise ConfigError(f"input spec {text!r}: expected [NAME=]DTYPE:SHAPE, e.g. input_ids=int64:1x128")
            out.append(InputSpec(shape=parse_shape(shape), dtype=normalize_dtype(dtype), name=name or None))
    return out
