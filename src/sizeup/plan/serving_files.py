"""What a serving plan is carried out with (data/plan/serving.yaml): the checkpoint of the model in the
planned weight format (or a placeholder the user must fill when none is listed), the pinned server image,
the engine's command line with the plan's flags, and the request metric the autoscaler reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError, ConfigError

__all__ = ["Checkpoint", "checkpoint", "image", "metric", "engine_command", "hf_id", "PORTS"]

PORTS = {"vllm": 8000, "llama.cpp": 8080, "tensorrt-llm": 8000, "torch": 8000}
_VLLM_QUANT = {"awq-int4": "awq", "gptq-int4": "gptq", "fp8": "fp8", "int8": "bitsandbytes", "nf4": "bitsandbytes"}
_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "f16": "float16", "fp32": "float32"}
_OWN_CHECKPOINT = {"awq-int4": "AWQ", "gptq-int4": "GPTQ"}
"""Formats vLLM and TensorRT-LLM load only from a checkpoint quantized ahead (the others: from the
model's own weights, fp8 and bitsandbytes quantized as they load)."""


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
    """The checkpoint that matches the planned weight format on `engine`."""
    base = hf_id(model)
    for entry in _data()["checkpoints"]:
        if entry["model"] in (model, base) and entry["format"] == quant:
            return Checkpoint(repo=entry["repo"], tag=entry.get("tag"), note=entry.get("note", ""))
    if engine == "llama.cpp":
        return Checkpoint(repo=f"<GGUF repository of {base} with a {quant.upper()} file: fill in>",
                          tag=quant.upper(), placeholder=True,
                          note=f"no published GGUF of {base} at {quant} is listed in data/plan/serving.yaml")
    if quant in _OWN_CHECKPOINT:
        return Checkpoint(repo=f"<{_OWN_CHECKPOINT[quant]} checkpoint of {base}: fill in>", placeholder=True,
                          note=f"{quant} needs weights quantized ahead; none of {base} is listed in "
                               "data/plan/serving.yaml")
    return Checkpoint(repo=base, note="fp8 / bitsandbytes quantized by the engine as it loads" if quant in
                      _VLLM_QUANT else "")


def image(engine: str) -> str:
    images = _data()["images"]
    if engine not in images:
        raise ConfigError(f"--deploy: engine {engine!r} has no server image; expected one of {', '.join(images)}")
    return images[engine]["image"]


def metric(engine: str) -> dict[str, Any] | None:
    """The request series the autoscaler reads for `engine`, or None when no such metric is known."""
    return _data()["metrics"].get(engine)


def engine_command(result, chosen) -> tuple[list[str], list[str], Checkpoint]:
    """(command, args, checkpoint) of the engine server with the plan's flags: tensor parallel size, maximum
    model length = p95 prompt + p95 output, the engine profile's memory share, maximum concurrent sequences =
    the batch the plan simulated, the weight format."""
    traffic = result.scenario.traffic
    max_len = traffic.prompt_p95_tokens + traffic.output_p95_tokens
    port = str(PORTS.get(chosen.engine, 8000))
    ckpt = checkpoint(result.scenario.model, chosen.quant, chosen.engine)
    if chosen.engine == "vllm":
        from sizeup.engines.profile import engine_profile

        util = engine_profile(chosen.engine, chosen.engine_version or None).value("gpu_memory_utilization", 0.92)
        args = [ckpt.ref, "--host", "0.0.0.0", "--port", port, "--tensor-parallel-size", str(chosen.gpus),
                "--max-model-len", str(max_len), "--gpu-memory-utilization", f"{util:g}",
                "--max-num-seqs", str(max(1, chosen.max_batch))]
        if chosen.quant in _VLLM_QUANT:
            args += ["--quantization", _VLLM_QUANT[chosen.quant]]
        if chosen.quant in _DTYPE:
            args += ["--dtype", _DTYPE[chosen.quant]]
        return ["vllm", "serve"], args + _vllm_multimodal_args(traffic, chosen), ckpt
    if chosen.engine == "llama.cpp":
        parallel = max(1, chosen.max_batch)
        return ["llama-server"], ["--hf-repo", ckpt.ref, "--host", "0.0.0.0", "--port", port, "--n-gpu-layers", "999",
                                  "--ctx-size", str(max_len * parallel), "--parallel", str(parallel), "--metrics"], ckpt
    if chosen.engine == "tensorrt-llm":
        return ["trtllm-serve"], [ckpt.ref, "--host", "0.0.0.0", "--port", port, "--tp_size", str(chosen.gpus),
                                  "--max_seq_len", str(max_len), "--max_batch_size", str(max(1, chosen.max_batch)),
                                  "--kv_cache_free_gpu_memory_fraction", "0.9"], ckpt
    if chosen.engine == "torch":
        return ["tritonserver"], ["--model-repository=/models", f"--http-port={port}"], ckpt
    raise ConfigError(f"engine {chosen.engine!r} has no server command; expected vllm, tensorrt-llm or llama.cpp")


def _vllm_multimodal_args(traffic, chosen) -> list[str]:
    """The images per prompt (and their size) the plan's vLLM multimodal profile assumed
    (engines/vllm_multimodal.py), so the server profiles, and keeps back, what the plan sized; without them
    vLLM profiles its default limit of images at the processor's largest size."""
    if not chosen.detail.get("multimodal_profile") or not getattr(traffic, "images", 0):
        return []
    images: Any = traffic.images
    if traffic.image_hw:
        images = {"count": traffic.images, "width": traffic.image_hw[1], "height": traffic.image_hw[0]}
    return ["--limit-mm-per-prompt", json.dumps({"image": images}, separators=(",", ":"))]
