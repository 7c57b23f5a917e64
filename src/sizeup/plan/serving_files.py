"""What a serving plan is carried out with (data/plan/serving.yaml): the checkpoint of the model in the
planned weight format (or a placeholder the user must fill when none is listed), the server image (pinned, or the
tag of the release the plan priced), the engine's command line with the plan's flags (the engine's own
`ExecutionModel.launch`, engines/launch.py), and the request metric the autoscaler reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sizeup.errors import CatalogError, ConfigError

if TYPE_CHECKING:
    from sizeup.engines.launch import Launch

__all__ = ["Checkpoint", "checkpoint", "image", "metric", "server", "engine_command", "hf_id", "TRITON_PORT"]

TRITON_PORT = 8000
"""Triton Inference Server's HTTP port: the server of a request/response model planned on a runtime (vision)."""
_OWN_CHECKPOINT = {"awq-int4": "AWQ", "gptq-int4": "GPTQ"}
"""Formats an engine loads only from a checkpoint quantized ahead (the others: from the model's own weights, fp8 and
bitsandbytes quantized as they load)."""
_QUANTIZED_AS_LOADED = ("fp8", "int8", "nf4")


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    path = builtin_data_dir() / "plan" / "serving.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), (dict, list)) for k in
                                             ("images", "metrics", "checkpoints")):
        raise CatalogError(f"{path}: expected images, metrics and checkpoints")
    for section in ("images", "metrics"):
        for name, entry in data[section].items():
            if not entry.get("source") or not entry.get("retrieved"):
                raise CatalogError(f"{path}: {section}.{name}: missing source or retrieved")
    for entry in data["checkpoints"]:
        if not entry.get("source") or not entry.get("retrieved") or not entry.get("repo"):
            raise CatalogError(f"{path}: checkpoint {entry!r}: missing repo, source or retrieved")
    return data


def hf_id(model: str) -> str:
    """The Hugging Face repository of a catalog preset, else the model string as given."""
    from sizeup.hardware.catalog import builtin_data_dir

    path = builtin_data_dir() / "models" / f"{model}.json"
    try:
        return json.loads(path.read_text())["sizeup"]["hf_id"]
    except (OSError, KeyError, ValueError, TypeError):
        return model


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    repo: str
    """The repository to load, or a placeholder in angle brackets the user must replace."""
    tag: str | None = None
    """llama.cpp: the quantization tag of a GGUF repository (`-hf repo:tag`)."""
    placeholder: bool = False
    note: str = ""

    @property
    def ref(self) -> str:
        return f"{self.repo}:{self.tag}" if self.tag else self.repo


def checkpoint(model: str, quant: str, engine: str) -> Checkpoint:
    """The checkpoint that matches the planned weight format on `engine` (a GGUF file where the engine reads one,
    `ExecutionModel.CHECKPOINT`)."""
    from sizeup.engines.base import engine_class

    base = hf_id(model)
    for entry in _data()["checkpoints"]:
        if entry["model"] in (model, base) and entry["format"] == quant:
            return Checkpoint(repo=entry["repo"], tag=entry.get("tag"), note=entry.get("note", ""))
    if engine_class(engine).CHECKPOINT == "gguf":
        return Checkpoint(repo=f"<GGUF repository of {base} with a {quant.upper()} file: fill in>",
                          tag=quant.upper(), placeholder=True,
                          note=f"no published GGUF of {base} at {quant} is listed in data/plan/serving.yaml")
    if quant in _OWN_CHECKPOINT:
        return Checkpoint(repo=f"<{_OWN_CHECKPOINT[quant]} checkpoint of {base}: fill in>", placeholder=True,
                          note=f"{quant} needs weights quantized ahead; none of {base} is listed in "
                               "data/plan/serving.yaml")
    return Checkpoint(repo=base, note="fp8 / bitsandbytes quantized by the engine as it loads" if quant in
                      _QUANTIZED_AS_LOADED else "")


def image(engine: str, release: str = "") -> str:
    """The server image of `engine`: pinned, or the tag of the release the plan priced where the data's image names
    `{release}` (a release series `0.34` is its first patch, `0.34.0`)."""
    images = _data()["images"]
    if engine not in images:
        raise ConfigError(f"--deploy: engine {engine!r} has no server image; expected one of {', '.join(images)}")
    pattern = images[engine]["image"]
    if "{release}" not in pattern:
        return pattern
    if not release:
        raise ConfigError(f"--deploy: the image of {engine} follows the engine release, and the plan names none")
    parts = release.split(".")
    return pattern.format(release=".".join(parts + ["0"] * (3 - len(parts))))


def metric(engine: str) -> dict[str, Any] | None:
    """The request series the autoscaler reads for `engine`, or None when no such metric is known."""
    return _data()["metrics"].get(engine)


def server(result, chosen) -> tuple[Launch, Checkpoint]:
    """How one replica's server is started (engines/launch.py): the chosen engine's own line with the plan's flags
    (tensor parallel size, maximum model length = p95 prompt + p95 output, the memory share the plan priced,
    maximum concurrent sequences = the batch the plan simulated, the weight format); Triton Inference Server for a
    model planned on a runtime. One-line ConfigError where sizeup lists no server line for the engine."""
    from sizeup.engines.base import engine_class, resolve
    from sizeup.engines.launch import Launch, LaunchRequest

    traffic = result.scenario.traffic
    if chosen.engine == "torch":  # a request/response model on a runtime (vision): Triton serves the exported model
        return (Launch(command=("tritonserver",), args=("--model-repository=/models", f"--http-port={TRITON_PORT}"),
                       port=TRITON_PORT, health=("/v2/health/ready", "/v2/health/live"), metrics_port=8002),
                Checkpoint(repo=hf_id(result.scenario.model)))
    engine_class(chosen.engine)  # an unknown engine: refused in one line
    ckpt = checkpoint(result.scenario.model, chosen.quant, chosen.engine)
    images: Any = None
    if chosen.detail.get("multimodal_profile") and getattr(traffic, "images", 0):
        images = traffic.images
        if traffic.image_hw:
            images = {"count": traffic.images, "width": traffic.image_hw[1], "height": traffic.image_hw[0]}
    model = resolve(chosen.engine_ref, chosen.device).at_gpus(chosen.gpus)
    launch = model.launch(LaunchRequest(
        checkpoint=ckpt.ref, gpus=chosen.gpus, max_len=traffic.prompt_p95_tokens + traffic.output_p95_tokens,
        max_batch=chosen.max_batch, quant=chosen.quant, images=images))
    if launch is None:
        raise ConfigError(f"engine {chosen.engine!r} has no server command; expected one of "
                          f"{', '.join(e for e in _data()['images'] if e not in ('train', 'torch'))}")
    return launch, ckpt


def engine_command(result, chosen) -> tuple[list[str], list[str], Checkpoint]:
    """(command, args, checkpoint) of the engine server with the plan's flags (`server`)."""
    launch, ckpt = server(result, chosen)
    return list(launch.command), list(launch.args), ckpt
