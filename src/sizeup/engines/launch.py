"""How an engine's server is started to carry a serving plan out (`ExecutionModel.launch`).

The plan fixes what the server must hold (`LaunchRequest`: the checkpoint, tensor-parallel size, longest request,
batch the plan simulated, weight format, images per prompt); the engine's own file says how its server takes that
(`Launch`: the command line, the port, the health and metrics endpoints, whether the image's entry point already
starts the server). plan/serving_files.py and report/deploy.py ask the chosen engine's execution model, so an
engine that can be served is one file: its pricing and its launch line. An engine sizeup lists no server line for
returns None, and the plan says so in one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Launch", "LaunchRequest", "dtype_flag", "images_flag"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchRequest:
    """What the plan fixed for one replica's server."""

    checkpoint: str
    """The repository to load (for a GGUF repository `repo:TAG`), or a placeholder the user must fill."""
    gpus: int
    """GPUs of the replica (tensor parallel)."""
    max_len: int
    """Longest request the server must hold: p95 prompt + p95 output."""
    max_batch: int
    """Concurrent sequences the plan simulated (its batch cap)."""
    quant: str
    """The planned weight format (formats.py id)."""
    images: Any = None
    """Images per prompt the plan sized ({"count", "width", "height"} or a count); None: a text-only plan."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """One server's start: `command` + `args` in a container of the engine's image (data/plan/serving.yaml)."""

    command: tuple[str, ...]
    args: tuple[str, ...]
    port: int
    release: str = ""
    """The engine release the plan priced, for an image tag that follows it (data/plan/serving.yaml `{release}`)."""
    entrypoint: bool = False
    """The image's entry point already starts the server: a manifest gives only `args`."""
    health: tuple[str, str] = ("/health", "/health")
    """(readiness, liveness) HTTP paths."""
    metrics_port: int | None = None
    """Port of /metrics when it is not the HTTP port."""


_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "f16": "float16", "fp32": "float32"}


def dtype_flag(quant: str, flag: str = "--dtype") -> list[str]:
    """`--dtype bfloat16` for an unquantized weight format, nothing for a quantized one."""
    return [flag, _DTYPE[quant]] if quant in _DTYPE else []


def images_flag(request: LaunchRequest, flag: str) -> list[str]:
    """The images per prompt the plan sized, as a JSON limit (`{"image": ...}`); nothing for a text-only plan."""
    if not request.images:
        return []
    return [flag, json.dumps({"image": request.images}, separators=(",", ":"))]
