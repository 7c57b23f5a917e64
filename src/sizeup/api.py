"""The documented entry points. Each returns a typed result with `to_dict()`.

Nothing heavy is imported here at module level: torch loads only when a torch model is traced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ledger import CostTotals, Ledger, MemoryPeak, OpKind, Phase, scope_depth

__all__ = ["FlopsReport", "check_context", "check_scenario_context", "compare_devices", "count_flops", "estimate",
           "parse_input_specs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedInput:
    shape: tuple[int, ...]
    dtype: str | None = None
    name: str | None = None


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


def parse_input_specs(shapes: Sequence[str] = (), specs: Sequence[str] = ()) -> list[ParsedInput]:
    """`shapes`: '1x64x64x64' (float inputs, comma-separated for several); `specs`:
    'NAME=DTYPE:SHAPE' or 'DTYPE:SHAPE' (e.g. 'input_ids=int64:1x128'), comma-separated."""
    from sizeup.units import normalize_dtype

    out: list[ParsedInput] = []
    for group in shapes:
        for text in filter(None, (s.strip() for s in group.split(","))):
            out.append(ParsedInput(shape=parse_shape(text)))
    for group in specs:
        for text in filter(None, (s.strip() for s in group.split(","))):
            name, _, rest = text.rpartition("=")
            dtype, sep, shape = rest.partition(":")
            if not sep:
                raise ConfigError(f"input spec {text!r}: expected [NAME=]DTYPE:SHAPE, e.g. input_ids=int64:1x128")
            out.append(ParsedInput(shape=parse_shape(shape), dtype=normalize_dtype(dtype), name=name or None))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class FlopsReport:
    """FLOPs, bytes and peak memory of one traced model."""

    ledger: Ledger
    mode: str
    dtype: str
    memory: MemoryPeak
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total(self) -> CostTotals:
        return self.ledger.totals()

    def scopes(self, depth: int | None = None) -> dict[str, CostTotals]:
        return self.ledger.by_scope(depth)

    def to_dict(self, depth: int | None = None) -> dict[str, Any]:
        total = self.total
        scopes = []
        for scope, t in self.scopes(depth).items():
            row = {"scope": scope, "depth": scope_depth(scope), **t.to_dict()}
            row["share_of_flops"] = t.flops / total.flops if total.flops else 0.0
            scopes.append(row)
        return {
            "model": self.ledger.name,
            "mode": self.mode,
            "dtype": self.dtype,
            "total": total.to_dict(),
            "by_phase": {k: v.to_dict() for k, v in self.ledger.by_phase().items()},
            "by_kind": {k: v.to_dict() for k, v in self.ledger.by_kind().items()},
            "scopes": scopes,
            "ops": [o.to_dict() for o in self.ledger.ops if o.kind != OpKind.VIEW],
            "uncounted_ops": self.ledger.uncounted_ops(),
            "memory": self.memory.to_dict(),
            "assumptions": list(self.assumptions),
        }


def count_flops(
    target: str | Callable[[], Any],
    inputs: Sequence[ParsedInput],
    *,
    dtype: str = "fp32",
    mode: str = "inference",
    optimizer: str = "adamw",
) -> FlopsReport:
    """Trace a PyTorch model (a "file.py:factory" / "module:factory" target or a factory) on fake
    tensors and count every op. `mode`: inference, backward or train (forward + backward + optimizer)."""
    from sizeup.ingest.target import load_factory
    from sizeup.ingest.torch_trace import InputSpec, TraceMode, trace_module

    try:
        trace_mode = TraceMode(mode)
    except ValueError:
        raise ConfigError(f"mode {mode!r}: expected inference, backward or train") from None
    factory = load_factory(target) if isinstance(target, str) else target
    specs = [InputSpec(shape=i.shape, dtype=i.dtype, name=i.name) for i in inputs]
    ledger = trace_module(factory, specs, dtype=dtype, mode=trace_mode, optimizer=optimizer,
                          name=target.rpartition(":")[2] if isinstance(target, str) else None)
    phases = [Phase.FORWARD] if trace_mode == TraceMode.INFERENCE else None
    return FlopsReport(ledger=ledger, mode=trace_mode.value, dtype=dtype, memory=ledger.memory_peak(phases),
                       assumptions=tuple(ledger.assumptions))


def count_onnx(path: str, *, dims: dict[str, int] | None = None) -> FlopsReport:
    """Read an ONNX graph (inference only) and cost every node; `dims` binds its symbolic input sizes,
    e.g. {"batch": 8}. The precision is the graph's own (shown as the dtype doing most FLOPs)."""
    from sizeup.ingest.onnx_graph import onnx_ledger

    ledger = onnx_ledger(path, dims=dims, name=Path(path).stem)
    by_dtype: dict[str, int] = {}
    for o in ledger.ops:
        by_dtype[o.dtype] = by_dtype.get(o.dtype, 0) + o.flops
    dtype = max(by_dtype, key=by_dtype.__getitem__) if by_dtype else "fp32"
    return FlopsReport(ledger=ledger, mode="inference", dtype=str(dtype), memory=ledger.memory_peak([Phase.FORWARD]),
                       assumptions=tuple(ledger.assumptions))


def estimate(
    model: str,
    *,
    device: str | DeviceSpec,
    gpus: int = 1,
    quant: str | None = None,
    kv_dtype: str | None = None,
    engine: str | None = None,
    batch: int = 1,
    prompt: int = 512,
    output: int = 128,
    context: int | None = None,
    gpu_layers: int | None = None,
    catalog: Sequence[str] = (),
    cpu: str | DeviceSpec | None = None,
    threads: int | None = None,
    images: int = 0,
    image_size: tuple[int, int] | None = None,
    backend: str | None = None,
    build_date: str | None = None,
    engine_options: Sequence[str] = (),
):
    """Memory, largest context and batch, and prefill / decode speed of serving `model` (a preset,
    a Hugging Face id of a preset, a config.json, or a .safetensors / .gguf file) on `device` (a catalog
    name, or a device spec such as a calibrated local machine). `engine`: 'vllm', 'vllm@0.10', ... (None: the
    default for the device's class, data/engines/defaults.yaml); `quant`: the weight format (None: the format a
    .gguf file stores, else the most precise of the engine's formats that fits, as a device table chooses); the
    estimate's `defaults` say what was taken and why. `images` per sequence (of `image_size` (height, width) pixels)
    run through a vision-language model's vision tower in prefill. `backend`: the llama.cpp build's backend
    (vulkan, cuda, hip, sycl, metal, cpu; None: the device's default); `build_date` (YYYY-MM-DD) the llama.cpp
    build's date, for kernels that changed (None: current builds). `kv_dtype` None: fp16, or the engine's own
    default where it differs (ExecutionModel.default_kv_dtype: an FP8 checkpoint on TensorRT-LLM), said in
    `defaults`; `engine_options`: `--engine-opt KEY[=VALUE]` settings of the engine's run."""
    from dataclasses import replace

    from sizeup.engines.defaults import default_for_segment
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.segments import segment_of
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.device_fit import formats_to_try
    from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for

    cat = load_catalog(catalog)
    target = device if isinstance(device, DeviceSpec) else cat.device(device)
    arch = load_model(model)
    tokens = f"--context {context:,}" if context is not None else f"--prompt {prompt:,} + --output {output:,} tokens"
    check_context(arch, prompt=prompt, total=context if context is not None else prompt + output, what=tokens)
    defaults: dict[str, str] = {}
    if engine is None:
        engine, why = default_for_segment(segment_of(target))
        defaults["engine"] = f"{engine}: none named; {why} (data/engines/defaults.yaml)"
    weights_note = ""
    if quant is not None or getattr(arch, "stored_format_from", ""):  # named, or the format a .gguf file stores
        named = quant is not None
        quant, weights_note = weights_format(arch, quant, model)
        if not named:
            defaults["quant"] = weights_note
    formats = [quant] if quant is not None else list(formats_to_try(engine, target))
    # llama.cpp layers kept off the GPU run on the host CPU: the one named, else the device's own host_cpu
    host = cpu if isinstance(cpu, DeviceSpec) or cpu is None else cat.device(cpu)
    if host is None and target.host_cpu and target.host_cpu in cat.devices:
        host = cat.devices[target.host_cpu]
    execution = result = None
    for fmt in formats:
        cfg = InferenceConfig(batch=batch, prompt=prompt, output=output, context=context, weights=fmt,
                              kv_dtype=kv_dtype or "fp16", engine=engine, gpus=gpus, gpu_layers=gpu_layers,
                              threads=threads, images=images, image_hw=image_size, backend=backend,
                              build_date=build_date, engine_options=tuple(engine_options))
        execution = execution or execution_for(target, cfg)  # one engine on one device: resolved once
        own_kv = execution.default_kv_dtype(fmt) if kv_dtype is None else None
        if own_kv is not None:
            cfg = replace(cfg, kv_dtype=own_kv[0])
            defaults["kv_dtype"] = f"{own_kv[0]}: none named; {own_kv[1]}"
        else:
            defaults.pop("kv_dtype", None)
        try:
            result = estimate_inference(arch, target, cfg, cpu=host, execution=execution)
        except SizeupError:
            if quant is not None or (fmt == formats[-1] and result is None):
                raise
            continue
        if result.memory.fits:
            break
    if quant is None:
        fitted = "that fits" if result.memory.fits else "tried: none fits, the least precise shown"
        defaults["quant"] = (f"{result.weights.id}: none named; the most precise of {execution.name}'s formats "
                             f"({', '.join(formats)}) {fitted}")
    if weights_note:
        result = replace(result, assumptions=(weights_note, *result.assumptions))
    return replace(result, defaults=defaults) if defaults else result


def weights_format(arch, quant: str | None, model: str) -> tuple[str, str]:
    """The weight format to price and the note that says why: `quant` when given, else the format the model
    file stores (a GGUF file's general.file_type), else bf16 (a config says nothing of it)."""
    from sizeup.formats import get_format

    stored, source = getattr(arch, "stored_format", ""), getattr(arch, "stored_format_from", "")
    if quant is not None:
        if stored and get_format(quant).id != stored:
            return quant, f"weights priced as {quant} (--quant), not as the {stored} the file stores ({source})"
        return quant, ""
    if stored:
        return stored, f"weights {stored}: the format the file stores ({source}; --quant prices another)"
    if source:
        raise ConfigError(f"{model}: {source}, a weight format sizeup does not price: expected --quant with one of "
                          f"its formats (e.g. q4_k_m, q8_0, f16)")
    return "bf16", ""


def compare_devices(
    model: str,
    *,
    devices: str | Sequence[str] = "common",
    engine: str | None = None,
    gpus: int = 1,
    kv_dtype: str | None = "fp16",
    batch: int = 1,
    prompt: int = 512,
    output: int = 128,
    context: int | None = None,
    formats: Sequence[str] | None = None,
    catalog: Sequence[str] = (),
):
    """One row per device (`sizeup.workload.device_fit.DeviceFit`): the most precise format of the
    device's engine that fits `batch` sequences of the context, its decode tokens/s, and the price per
    million tokens on the cheapest on-demand offer. `devices` is a class (consumer, workstation, apple,
    datacenter, edge, cpu), 'all', 'common' (a few cards most asked about) or a list of names;
    `formats` replaces the engine's ladder of formats to try (a .gguf file: the format it stores)."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.segments import COMMON_DEVICES, SEGMENTS, segment_of
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.device_fit import device_fit
    from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for

    cat = load_catalog(catalog)
    if isinstance(devices, str):
        if devices == "common":
            targets = [cat.devices[d] for d in COMMON_DEVICES if d in cat.devices]
        elif devices == "all":  # a class lists base devices; memory-size and power-mode variants are asked by name
            targets = [d for d in cat.devices.values() if not d.variant_of]
        elif devices in SEGMENTS:
            targets = [d for d in cat.devices.values() if segment_of(d) == devices and not d.variant_of]
        else:
            raise ConfigError(f"--devices {devices!r}: expected one of {', '.join(SEGMENTS)}, all or common")
    else:
        targets = [cat.device(name) for name in devices]
    arch = load_model(model)
    kv_dtype = kv_dtype or "fp16"
    tokens = f"--context {context:,}" if context is not None else f"--prompt {prompt:,} + --output {output:,} tokens"
    check_context(arch, prompt=prompt, total=context if context is not None else prompt + output, what=tokens)
    if formats is None and arch.stored_format_from:  # a GGUF file: the format it stores, not an engine's ladder
        formats = [weights_format(arch, None, model)[0]]

    resolved: dict[tuple[str, str], object] = {}

    def estimate_at(device: DeviceSpec, eng: str, fmt: str):
        cfg = InferenceConfig(batch=batch, prompt=prompt, output=output, context=context, weights=fmt,
                              kv_dtype=kv_dtype, engine=eng, gpus=gpus)
        key = (device.id, eng)
        if key not in resolved:  # each device's engine resolved once, for all the formats tried on it
            resolved[key] = execution_for(device, cfg)
        return estimate_inference(arch, device, cfg, execution=resolved[key])

    return [device_fit(arch, d, cat, engine=engine, estimate_at=estimate_at, formats=formats) for d in targets]


UNSTATED_CONTEXT_LIMIT = 1 << 21
"""As the inference estimate's search for the largest context (workload.inference.MAX_SEARCH_CONTEXT)."""


def check_scenario_context(scenario) -> None:
    """Refuse a serving scenario whose longest request (p95 prompt + p95 output) exceeds the model's
    context, naming both; the planner would otherwise reject every option as 'does not fit'."""
    if scenario.traffic is None or scenario.task == "vision":
        return
    from sizeup.ingest.hf_config import load_model

    arch = load_model(scenario.model)
    t = scenario.traffic
    check_context(arch, prompt=t.prompt_p95_tokens, total=t.prompt_p95_tokens + t.output_p95_tokens,
                  what=f"scenario {scenario.name!r}: p95 prompt + output ({t.prompt_p95_tokens:,} + "
                       f"{t.output_p95_tokens:,} tokens)")


def check_context(arch, *, prompt: int, total: int, what: str) -> None:
    """`total` tokens per sequence (prompt + output, or the cache) must fit the model's context
    (`max_position_embeddings`); an encoder reads only the prompt; a vision model's tokens come from
    its image. A model whose config states no context is held to the largest context sizeup searches."""
    if getattr(arch, "image", None):
        return
    tokens = prompt if arch.encoder else total
    limit = arch.max_context
    if limit and tokens > limit:
        raise ConfigError(f"{what}: longer than the {limit:,}-token context of {arch.name} "
                          "(from its config)")
    if not limit and tokens > UNSTATED_CONTEXT_LIMIT:
        raise ConfigError(f"{what}: {arch.name} states no context length, and sizeup estimates at most "
                          f"{UNSTATED_CONTEXT_LIMIT:,} tokens per sequence")
