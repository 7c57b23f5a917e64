"""`estimate`: memory, largest context and batch, and prefill / decode speed of serving a model on a device,
as `sizeup estimate MODEL --device NAME`; for a configuration that does not fit, what would."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from sizeup.api.options import Options, option
from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.units import MAX_BATCH, MAX_GPUS, MAX_LAYERS, MAX_TOKENS
from sizeup.workload.inference import InferenceEstimate, SweepPoint

__all__ = ["Alternative", "EstimateOptions", "EstimateResult", "ServingOptions", "check_context",
           "check_scenario_context", "estimate", "weights_format", "what_would_fit"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingOptions(Options):
    """What every serving estimate prices, on one device or many: the requests and the GPUs per replica."""

    gpus: int = option(1, "tensor-parallel GPUs", minimum=1, maximum=MAX_GPUS)
    split: str = option("tensor", "how the GPUs share the model: tensor (tensor parallel) or layers (consecutive "
                                  "layers per GPU, one active at a time: accelerate device_map='auto')")
    kv_dtype: str | None = option(None, "KV cache: fp16, bf16, fp8, q8_0, q4_0 (default fp16, or the engine's own "
                                        "where it differs: an FP8 checkpoint on TensorRT-LLM)")
    batch: int = option(1, "concurrent sequences", minimum=1, maximum=MAX_BATCH)
    prompt: int = option(512, "prompt tokens", minimum=1, maximum=MAX_TOKENS)
    output: int = option(128, "generated tokens", minimum=0, maximum=MAX_TOKENS)
    context: int | None = option(None, "tokens the cache must hold per sequence (default prompt + output)",
                                 minimum=1, maximum=MAX_TOKENS)


@dataclass(frozen=True, slots=True, kw_only=True)
class EstimateOptions(ServingOptions):
    """What `estimate` prices: the flags of `sizeup estimate`, by the same names."""

    prompt: int | None = option(None, "prompt tokens (default 512; under load the mean, default the dataset's)",
                                minimum=1, maximum=MAX_TOKENS)
    output: int | None = option(None, "generated tokens (default 128; under load the mean, default the dataset's)",
                                minimum=0, maximum=MAX_TOKENS)
    pp: int = option(1, "pipeline stages: the GPUs split into this many stages of consecutive layers, each stage "
                        "tensor parallel over gpus / pp (vLLM --pipeline-parallel-size, TensorRT-LLM pp_size)",
                     minimum=1, maximum=MAX_GPUS)
    gpus_per_node: int | None = option(None, "GPUs per node where the GPUs span nodes (default: the device's board, 8 "
                                             "for NVLink-switch and xGMI-mesh devices; else one node)",
                                       minimum=1, maximum=MAX_GPUS)
    network_gbps: float | None = option(None, "node-to-node network per node, Gb/s (default 400 per GPU)",
                                        minimum=1e-9, maximum=10**6)
    device: str | DeviceSpec | None = option(None, "device name (see 'sizeup hw list'), a DeviceSpec, or 'local' "
                                                   "with a calibration")
    offer: str | None = option(None, "the device as this cloud offer installs it: the GPU link the offer states, "
                                     "else PCIe; GPUs past one instance span its instances (--gpus-per-node), joined "
                                     "by the network it states (see 'sizeup hw offers')")
    quant: str | None = option(None, "weight format: bf16, fp16, fp8, int8, awq-int4, gptq-int4, nf4, q4_k_m, q8_0, ... "
                                     "(default: the format a .gguf file stores, else the most precise of the engine's "
                                     "formats that fits)")
    engine: str | None = option(None, "serving engine NAME or NAME@RELEASE: hf, vllm, llama.cpp, tensorrt-llm, tensorrt "
                                      "(default: the engine of the device's class, data/engines/defaults.yaml)")
    gpu_layers: int | None = option(None, "llama.cpp: layers offloaded to the GPU (default all)",
                                    minimum=0, maximum=MAX_LAYERS)
    cpu: str | DeviceSpec | None = option(None, "llama.cpp: the host CPU where layers kept off the GPU run "
                                                "(default: the device's host_cpu)")
    threads: int | None = option(None, "llama.cpp: CPU threads for those layers (default all cores)",
                                 minimum=1, maximum=100_000)
    images: int = option(0, "vision-language models: images per sequence, through the vision tower in prefill",
                         minimum=0, maximum=10_000)
    image_size: tuple[int, int] | None = option(None, "(height, width) of each image in pixels (default 448 x 448)",
                                                minimum=1, maximum=100_000)
    backend: str | None = option(None, "llama.cpp, mlc, ollama: the build's backend: vulkan, cuda, hip, sycl, metal, "
                                       "cpu (default the device's own); vllm: the platform it runs the device on "
                                       "(cuda, hip, sycl for Intel XPU, cpu), no other")
    build_date: str | None = option(None, "llama.cpp: the build's date YYYY-MM-DD, for kernels that changed "
                                          "(default current builds)")
    sweep: bool | tuple[int, ...] = option(False, "also sweep the batch size: true for powers of two up to the "
                                                  "largest that fits, or a list of batch sizes", minimum=1)
    dims: dict[str, int] | None = option(None, "MODEL.onnx: sizes of symbolic dimensions other than the batch",
                                         minimum=1)
    runtime: str | None = option(None, "MODEL.onnx: the runtime whose per-op overhead applies (pytorch-eager, "
                                       "onnxruntime, tensorrt, ...)")
    calibration: str | None = option(None, "price with this profile from 'sizeup calibrate'")
    db: str | None = option(None, "run database holding the calibration (default: the user data folder)")
    catalog: tuple[str | Path, ...] = option((), "extra folders of device/offer YAML files")
    engine_options: tuple[str, ...] = option((), "engine options the run set, KEY or KEY=VALUE as the engine spells "
                                                 "them (vllm num-scheduler-steps=10, sglang chunked-prefill-size=4096,"
                                                 " tensorrt-llm max-batch-size=896)")
    concurrency: int | None = option(None, "throughput under load: requests in flight (a closed loop, vllm bench "
                                           "serve --max-concurrency)", minimum=1, maximum=10_000_000)
    offline: bool = option(False, "throughput under load with every request queued at once (MLPerf Offline, "
                                  "trtllm-bench; the CLI's --concurrency inf)")
    rps: float | None = option(None, "throughput under load at Poisson arrivals of this many requests/s",
                               minimum=1e-6, maximum=1e9)
    replicas: int = option(1, "copies of the server, each on `gpus` GPUs, the load spread over them",
                           minimum=1, maximum=100_000)
    dataset: str | None = option(None, "request lengths of a benchmark dataset (sharegpt, mlperf-llama2-openorca, "
                                       "mlperf-mixtral-15k, mlperf-gptj-cnndm); prompt / output given replace its "
                                       "means")
    input_len_spread: float | None = option(None, "standard deviation of the input length under load (tokens)",
                                            minimum=0, maximum=1e7)
    output_len_spread: float | None = option(None, "standard deviation of the output length under load (tokens)",
                                             minimum=0, maximum=1e7)
    num_prompts: int | None = option(None, "a finite run of this many requests (vllm bench --num-prompts), sent at "
                                           "the rate (Poisson), fed at the concurrency or all at once, priced to its "
                                           "last", minimum=1, maximum=1_000_000)
    batcher_window: float | None = option(None, "a front end holding arrivals up to this many seconds before it "
                                                "sends them on together (an MLPerf harness batcher), with rps",
                                          minimum=1e-6, maximum=3600)
    batcher_max: int | None = option(None, "the batcher sends early once it holds this many requests",
                                     minimum=1, maximum=1_000_000)

    @property
    def under_load(self) -> bool:
        return self.offline or self.concurrency is not None or self.rps is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Alternative:
    """One change that makes a configuration fit, the rest unchanged."""

    change: str
    """As a flag: '--quant q4_k_m'."""
    flag: str
    value: str | int
    total_bytes: int | None
    """Memory per GPU with the change, where a full estimate was made (None for the largest context / batch)."""

    def to_dict(self) -> dict[str, Any]:
        return {"change": self.change, "flag": self.flag, "value": self.value, "total_bytes": self.total_bytes}


@dataclass(frozen=True, slots=True, kw_only=True)
class EstimateResult(InferenceEstimate):
    """The inference estimate (every field of `InferenceEstimate`), with what would fit when it does not,
    and the batch sweep when one was asked for."""

    would_fit: tuple[Alternative, ...] = ()
    batch_sweep: tuple[SweepPoint, ...] | None = None
    under_load: Any = None
    """Throughput under load (workload/serving.py ServingEstimate) when a concurrency, a rate or offline was asked."""
    sweep_under_load: tuple[Any, ...] | None = None
    """For each batch of the sweep, that many requests in flight (None where it does not fit)."""
    memory_variants: tuple[Any, ...] = ()
    """The verdict on each memory size of the device (api/variant_fit.py VariantFit) when the name picked none."""

    @property
    def fit(self):
        """The three-way verdict (workload/device_fit.py fit_verdict): fits / may not fit / does not fit."""
        from sizeup.workload.device_fit import fit_verdict

        return fit_verdict(self)

    @property
    def memory_variants_line(self) -> str:
        from sizeup.api.variant_fit import variants_line

        return variants_line(self.memory_variants)

    @property
    def fits(self) -> bool:
        return self.memory.fits

    def to_dict(self) -> dict[str, Any]:
        data = InferenceEstimate.to_dict(self)
        verdict = self.fit
        data.update(fit=verdict.verdict, fit_note=verdict.why or None)
        if self.memory_variants:
            data["memory_variants"] = [v.to_dict() for v in self.memory_variants]
            data["memory_variants_line"] = self.memory_variants_line or None
        if self.under_load is not None:
            data["throughput_under_load"] = self.under_load.to_dict()
        if self.batch_sweep is not None:
            loads = self.sweep_under_load or (None,) * len(self.batch_sweep)
            data["batch_sweep"] = [{**p.to_dict(), "under_load": None if s is None else s.to_dict()}
                                   for p, s in zip(self.batch_sweep, loads)]
        if not self.fits:
            data["would_fit"] = [a.to_dict() for a in self.would_fit]
        return data


def estimate(model: str, options: EstimateOptions | None = None, /, **changes: Any):
    """Serving `model` (a preset, a Hugging Face id of a preset, a config.json or model folder, a .safetensors /
    .gguf header, or an ONNX graph) on one device; the keywords are `EstimateOptions`' fields. Returns an
    `EstimateResult` (an `OnnxEstimate` for MODEL.onnx); a configuration that does not fit is a result with
    `fits` False and `would_fit`, not an error."""
    from sizeup.api.calibration import calibrated_scope, load_calibration, resolve_device
    from sizeup.hardware.catalog import load_catalog

    o = _options(options, changes)
    if o.device is None:
        raise ConfigError("estimate: give device=NAME (see 'sizeup hw list'); to compare devices use compare()")
    catalog = load_catalog(o.catalog)
    onnx = model.lower().endswith(".onnx")
    profile = load_calibration(o.calibration, o.db, [o.device], kind="vision" if onnx else "llm",
                               engine=_engine_for_profile(o, catalog))
    device = resolve_device(o.device, catalog, profile)
    offer_note = ""
    if o.offer:  # the GPUs as the offer installs them; past one instance, its instances are the nodes
        from sizeup.plan.topology import device_in_offer, offer_nodes

        device, offer = device_in_offer(catalog, device, o.offer)
        per_node, network, offer_note = offer_nodes(offer, o.gpus, o.gpus_per_node, o.network_gbps)
        o = replace(o, gpus_per_node=per_node, network_gbps=network)
    if onnx:
        from sizeup.api.onnx_estimate import estimate_onnx

        with calibrated_scope(profile, [device]) as notes:
            return estimate_onnx(model, device, o, notes)
    if o.dims:
        raise ConfigError(f"--dim {next(iter(o.dims))}: only for ONNX models (MODEL.onnx)")
    if o.runtime:
        raise ConfigError(f"--runtime {o.runtime}: only for ONNX models (MODEL.onnx); an LLM's runtime is --engine")
    from sizeup.api.serving_load import load_of, offline_load, sweep_loads, with_lengths

    o, implied = offline_load(o, device)
    o = with_lengths(o)
    with calibrated_scope(profile, [device]) as notes:
        result = _estimate(model, device, o, catalog)
        sweep = loaded = sweep_load = None
        if o.under_load:
            loaded = load_of(result, o)
        if o.sweep:
            from sizeup.workload.inference import batch_sweep

            batches = None if o.sweep is True else list(o.sweep)
            sweep = tuple(batch_sweep(result.arch, result.device, result.config, batches))
            sweep_load = sweep_loads(result, sweep)
        by_size = _by_memory_size(model, device, o, catalog, result)
        size_note = [_assumed(device, by_size)] if by_size and not device.resolved_as else []
        result = replace(result, assumptions=(*notes, *size_note, *([implied] if implied else []),
                                              *([offer_note] if offer_note else []), *result.assumptions))
        alternatives = () if result.memory.fits else tuple(what_would_fit(result))
    values = {f.name: getattr(result, f.name) for f in fields(result) if f.init}
    return EstimateResult(**values, would_fit=alternatives, batch_sweep=sweep, under_load=loaded,
                          sweep_under_load=sweep_load, memory_variants=by_size)


def _assumed(device: DeviceSpec, by_size: tuple) -> str:
    from sizeup.api.variant_fit import assumed_note

    return assumed_note(device, by_size)


def _by_memory_size(model: str, device: DeviceSpec, o: EstimateOptions, catalog, result) -> tuple:
    """The verdict on each memory size of `device` when the name picked none (api/variant_fit.py), the
    engine and format held at those of `result`; () when there is no choice to make."""
    from sizeup.api.variant_fit import memory_variants, variant_fits

    if not isinstance(o.device, str) or o.offer:
        return ()
    variants = memory_variants(catalog, device, o.device)
    if not variants:
        return ()
    held = replace(o, quant=o.quant or result.weights.id, engine=o.engine or result.config.engine)
    return variant_fits(result, variants, lambda d: _estimate(model, d, held, catalog))


def _engine_for_profile(o: EstimateOptions, catalog) -> str | None:
    """The engine the estimate will run, for choosing a calibration profile: the one named, else (a catalog device)
    its class's default (data/engines/defaults.yaml); None where neither is known yet (a calibrated local machine)."""
    if o.engine is not None or not o.calibration or not isinstance(o.device, str) or o.device == "local":
        return o.engine
    from sizeup.engines.defaults import default_for_segment
    from sizeup.hardware.segments import segment_of

    return default_for_segment(segment_of(catalog.device(o.device)))[0]


def _options(options: EstimateOptions | None, changes: dict[str, Any]) -> EstimateOptions:
    from sizeup.api.options import build_options

    return build_options(EstimateOptions, options, changes, "estimate")


def _estimate(model: str, device: DeviceSpec, o: EstimateOptions, catalog) -> InferenceEstimate:
    """The estimate at the engine and format named; with none named, the device class's engine (data/engines/
    defaults.yaml) and the most precise of its formats that fits, as the device table chooses. The estimate's
    `defaults` say what was taken and why."""
    from sizeup.engines.format_names import engine_format_name
    from sizeup.engines.defaults import default_for_segment, default_for_weights
    from sizeup.errors import SizeupError
    from sizeup.hardware.segments import segment_of
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.device_fit import formats_to_try
    from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for

    arch = load_model(model)
    defaults: dict[str, str] = {}
    engine = o.engine
    if engine is None:
        engine, why = default_for_segment(segment_of(device))
        defaults["engine"] = f"{engine}: none named; {why} (data/engines/defaults.yaml)"
    quant, weights_note = o.quant, ""
    if quant is not None:  # the engine's own spelling of a format (mlx: '4bit' -> mlx-q4)
        quant, weights_note = engine_format_name(engine, quant)
    if quant is not None or getattr(arch, "stored_format_from", ""):  # named, or the format a .gguf file stores
        quant, stored_note = weights_format(arch, quant, model)
        weights_note = "; ".join(n for n in (weights_note, stored_note) if n)
        if o.quant is None:
            defaults["quant"] = weights_note
    if o.engine is None and o.quant is not None:  # a format the class's engine cannot load: its other one, if named
        other, why = default_for_weights(segment_of(device), quant)
        if other != engine:
            engine, defaults["engine"] = other, f"{other}: none named; {why} (data/engines/defaults.yaml)"
    context_note = engine_context_check(engine, arch, o)
    formats = [quant] if quant is not None else list(formats_to_try(engine, device))
    # llama.cpp layers kept off the GPU run on the host CPU: the one named, else the device's own host_cpu
    host = o.cpu if isinstance(o.cpu, DeviceSpec) or o.cpu is None else catalog.device(o.cpu)
    if host is None and device.host_cpu and device.host_cpu in catalog.devices:
        host = catalog.devices[device.host_cpu]
    execution = result = None
    for fmt in formats:
        cfg = InferenceConfig(batch=o.batch, prompt=o.prompt, output=o.output, context=o.context, weights=fmt,
                              kv_dtype=o.kv_dtype or "fp16", engine=engine, gpus=o.gpus, gpu_layers=o.gpu_layers,
                              threads=o.threads, images=o.images, image_hw=o.image_size, backend=o.backend,
                              build_date=o.build_date, engine_options=o.engine_options, split=o.split, pp=o.pp,
                              gpus_per_node=o.gpus_per_node, network_gbit_per_s=o.network_gbps)
        # one engine on one device, resolved once: with no load a static batch (nothing serves it)
        execution = execution or execution_for(device, cfg).for_static_batch(not o.under_load)
        own_kv = execution.default_kv_dtype(fmt) if o.kv_dtype is None else None
        if own_kv is not None:  # the engine's own KV format for these weights (an FP8 checkpoint's FP8 cache)
            cfg = replace(cfg, kv_dtype=own_kv[0])
            defaults["kv_dtype"] = f"{own_kv[0]}: none named; {own_kv[1]}"
        else:
            defaults.pop("kv_dtype", None)
        try:
            result = estimate_inference(arch, device, cfg, cpu=host, execution=execution)
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
    notes = tuple(n for n in (weights_note, context_note) if n)
    if notes:
        result = replace(result, assumptions=(*notes, *result.assumptions))
    return replace(result, defaults=defaults) if defaults else result


def engine_context_check(engine: str, arch, o: EstimateOptions) -> str:
    """Refuse a sequence longer than the model's context (check_context), unless the engine does not hold a run to
    it: a data file's `caps_context` 0 (mlx-lm reads max_position_embeddings only to set up RoPE). Then the
    sequence is priced as the engine runs it and the sentence returned says so ('' where nothing is to say)."""
    from sizeup.engines.base import engine_class, parse_engine

    total = o.context if o.context is not None else o.prompt + o.output
    ref = parse_engine(engine)
    if engine_class(ref.name).profile_at(ref.version).value("caps_context", 1):
        check_context(arch, prompt=o.prompt, total=total, what=tokens_text(o.prompt, o.output, o.context))
        return ""
    limit = arch.max_context
    if not limit or total <= limit or arch.encoder:
        return ""
    return (f"{total:,} tokens per sequence, beyond the {limit:,}-token context of {arch.name} (from its config): "
            f"{ref.name} does not cap a run at the model's context (data/engines/{ref.name}.yaml caps_context), so "
            f"it is priced as run; positions past the trained context may lose quality")


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


def tokens_text(prompt: int, output: int, context: int | None) -> str:
    return f"--context {context:,}" if context is not None else f"--prompt {prompt:,} + --output {output:,} tokens"


def what_would_fit(result: InferenceEstimate) -> list[Alternative]:
    """For an estimate that does not fit: the most precise smaller format and the fewest GPUs whose whole memory
    range fits (where none does, the first that fits at the typical figure), and the largest context and batch
    that fit, each checked by a full estimate on the same device."""
    from sizeup.workload.device_fit import engine_formats, fit_verdict
    from sizeup.workload.inference import estimate_inference

    cfg, arch, device = result.config, result.arch, result.device

    def check(**changes):
        try:
            return estimate_inference(arch, device, replace(cfg, **changes), cpu=result.cpu_device)
        except ConfigError:
            return None

    def first(estimates):
        """Of `estimates` (in order), the first whose whole memory range fits (fit_verdict 'fits'), else the first
        that fits at the typical figure ('may not fit'), else None."""
        fallback = None
        for e in estimates:
            if e is not None and e.memory.fits:
                if fit_verdict(e).comfortable:
                    return e
                fallback = fallback or e
        return fallback

    out: list[Alternative] = []
    smaller = (e for e in (check(weights=f) for f in engine_formats(cfg.engine) if f != result.weights.id)
               if e is not None and e.memory.weights_bytes < result.memory.weights_bytes)
    if (e := first(smaller)) is not None:
        out.append(Alternative(change=f"--quant {e.weights.id}", flag="quant", value=e.weights.id,
                               total_bytes=e.memory.total_bytes))
    if (e := first(check(gpus=g) for g in (2, 4, 8, 16) if g > cfg.gpus)) is not None:
        out.append(Alternative(change=f"--gpus {e.config.gpus}", flag="gpus", value=e.config.gpus,
                               total_bytes=e.memory.total_bytes))
    if result.max_context > 0:
        out.append(Alternative(change=f"--context {result.max_context:,}", flag="context", value=result.max_context,
                               total_bytes=None))
    if cfg.batch > 1 and result.max_batch > 0:
        out.append(Alternative(change=f"--batch {result.max_batch:,}", flag="batch", value=result.max_batch,
                               total_bytes=None))
    return out


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
