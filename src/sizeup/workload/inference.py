"""Inference on a device: memory, the largest context and batch that fit, prefill time (TTFT) and decode time per
token (TPOT), each a range with its assumptions.

Prefill and one decode step (at the mean context of the generation) are built as analytic ledgers and priced by the
roofline: weights in their stored format, the KV cache read once per step, the engine's per-kernel overhead (CUDA
graphs or eager dispatch), tensor-parallel all-reduces over the device's link.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.hf_config import ModelArch
from sizeup.ingest.tower_ops import tower_ledger, tower_positions
from sizeup.ingest.transformer_ops import KV_BYTES_PER_ELEMENT, Step, step_ledger
from sizeup.engines.base import (OPTIONS, ExecutionModel, engine_class, engine_settings, option_owners, parse_engine,
                                 resolve)
from sizeup.engines.defaults import default_engine
from sizeup.engines.reserve import split_by_layers
from sizeup.ledger import Ledger
from sizeup.memo import IdentityMemo
from sizeup.price.efficiency import Efficiency
from sizeup.price.execution import expert_rows, phase_efficiency, phase_note
from sizeup.price.memory import InferenceMemory, MemoryConfig, inference_memory, max_fitting
from sizeup.price.rates import PhaseTotals, price_totals
from sizeup.ranges import Range
from sizeup.workload.offload import host_split, on_device_share
from sizeup.workload.nodes import Nodes, node_layout
from sizeup.workload.pipeline import check_pipeline, hop_time, micro_batch, pipeline_note
from sizeup.workload.quantize import WeightFormat, get_format, weight_bytes
from sizeup.workload.tensor_parallel import tensor_parallel_comm
from sizeup.workload.towers import (TowerEstimate, decoder_arch, decoder_cache_tokens, decoder_prompt, tower_input,
                                    tower_notes)

__all__ = ["InferenceConfig", "PhaseEstimate", "InferenceEstimate", "SweepPoint", "batch_sweep", "estimate_inference",
           "execution_for", "tensor_parallel_comm"]

MAX_SEARCH_CONTEXT = 1 << 21
MAX_SEARCH_BATCH = 1 << 14
SPLITS = ("tensor", "layers")
"""How a model is placed on several GPUs (InferenceConfig.split)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceConfig:
    batch: int = 1
    prompt: int = 512
    output: int = 128
    context: int | None = None
    """Tokens the cache must hold per sequence; default prompt + output."""
    weights: str = "bf16"
    kv_dtype: str = "fp16"
    engine: str = field(default_factory=lambda: default_engine("library")[0])
    """The engine, by name and optionally release ('NAME', 'NAME@RELEASE'); default: data/engines/defaults.yaml
    `library` (the model library's own generate())."""
    gpus: int = 1
    gpu_layers: int | None = None
    threads: int | None = None
    """CPU threads for the layers an engine keeps on the CPU (default: all the CPU's cores)."""
    images: int = 0
    """Images per sequence, each through a vision-language model's vision tower in prefill."""
    image_hw: tuple[int, int] | None = None
    """(height, width) of each image in pixels; None: the model's own size (448 × 448 for Qwen2-VL)."""
    backend: str | None = None
    """The engine build's GPU backend (engines/kernels.py BACKENDS: vulkan, cuda, hip, ...); None: the device's
    default."""
    build_date: str | None = None
    """'YYYY-MM-DD' of an older engine build: the kernels it ran (kernels.yaml `until`); None: the current build."""
    engine_options: tuple[str, ...] = ()
    """`--engine-opt KEY[=VALUE]` settings of the engine's run (ExecutionModel.ENGINE_OPTIONS)."""
    split: str = "tensor"
    """How `gpus` share the model: "tensor" (tensor parallel) or "layers" (consecutive layers per GPU, one GPU at a
    time: a device map that places whole layers, or an engine's split of layers over GPUs)."""
    pp: int = 1
    """Pipeline stages (workload/pipeline.py): `gpus / pp` GPUs per stage, tensor parallel inside it."""
    step_tokens: int | None = None
    """The rows of the server step a phase runs in (workload/serving.py: a mixed step's decodes and prompt tokens
    share one GEMM per weight matrix): the matrix kernel and MoE rows chosen there; None: the phase's own tokens."""
    gpus_per_node: int | None = None  # GPUs per node (workload/nodes.py); None: the device's board
    network_gbit_per_s: float | None = None  # node-to-node network per node, Gb/s; None: 400 per GPU

    def __post_init__(self) -> None:
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"--threads {self.threads}: expected a positive integer")
        if self.gpu_layers is not None and self.gpu_layers < 0:
            raise ConfigError(f"--gpu-layers {self.gpu_layers}: expected 0 or more layers")
        if self.split not in SPLITS:
            raise ConfigError(f"--split {self.split!r}: expected one of {', '.join(SPLITS)}")
        for name in ("batch", "prompt", "gpus"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name} {getattr(self, name)}: expected a positive integer")
        if self.images < 0:
            raise ConfigError(f"--images {self.images}: expected 0 or more images per sequence")
        if self.output < 0:
            raise ConfigError(f"--output {self.output}: expected 0 or more tokens")
        if self.context is not None and self.context < self.prompt + self.output:
            raise ConfigError(f"--context {self.context}: must hold the prompt and output "
                              f"({self.prompt} + {self.output} tokens)")
        name = parse_engine(self.engine).name
        taken = engine_class(name).OPTIONS
        for option, value in (("backend", self.backend), ("build_date", self.build_date)):
            if value is not None and option not in taken:
                owners = " or ".join(option_owners(option))
                raise ConfigError(f"{OPTIONS[option]} {value}: a {owners} build option: use it with --engine {owners}")
        if self.build_date is not None and not _is_date(self.build_date):
            raise ConfigError(f"--build-date {self.build_date!r}: expected a date YYYY-MM-DD of a {name} build")
        if self.kv_dtype not in KV_BYTES_PER_ELEMENT:
            raise ConfigError(f"--kv-dtype {self.kv_dtype!r}: expected one of {', '.join(KV_BYTES_PER_ELEMENT)}")

    @property
    def cache_tokens(self) -> int:
        return self.context or self.prompt + self.output


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseEstimate:
    latency_s: Range
    """The phase's time; when compute is unknown, only its lower bound (memory, overhead)."""
    tokens_per_s: Range | None
    """None when compute is unknown: no speed is given rather than an unbounded one."""
    bound: str
    """Where the typical time goes most: compute, memory, overhead or communication ('unknown')."""
    compute_priced: bool = True
    """False when some FLOPs have no peak, published or derived: the speed is then unknown."""
    unknown_compute: tuple[str, ...] = ()

    @property
    def compute_known(self) -> bool:
        return self.compute_priced

    def to_dict(self, latency_key: str = "latency_s") -> dict[str, Any]:
        if not self.compute_priced:
            return {latency_key: None, "latency_lower_bound_s": self.latency_s.to_dict(), "tokens_per_s": None,
                    "bound": "unknown", "compute_priced": False, "compute_known": False,
                    "unknown_compute": list(self.unknown_compute)}
        return {latency_key: self.latency_s.to_dict(), "tokens_per_s": self.tokens_per_s.to_dict(), "bound": self.bound,
                "compute_priced": True, "compute_known": True}


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceEstimate:
    arch: ModelArch
    device: DeviceSpec
    config: InferenceConfig
    weights: WeightFormat
    memory: InferenceMemory
    max_context: int
    max_batch: int
    prefill: PhaseEstimate
    decode: PhaseEstimate | None
    flops_per_token: int
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    cpu_device: DeviceSpec | None = None
    """Where layers kept off the GPU were priced (None: every layer on `device`)."""
    tower: TowerEstimate | None = None
    """The encoder or vision tower run ahead of the decoder, its time inside `prefill` (None: none ran)."""
    execution: ExecutionModel | None = None
    """The engine, release and build this estimate describes (engines/base.py)."""
    defaults: dict[str, str] = field(default_factory=dict)
    """What was taken by default because the caller named none ('engine', 'quant'), and why."""
    ranges: Any = None
    """The calibrated ranges and what backs them (workload/inference_ranges.EstimateRanges)."""

    @property
    def decoder_cache_tokens(self) -> int:
        """Tokens of the decoder's self-attention cache per sequence: the context, or for T5 its output and
        start token (the prompt went to the encoder; the cross-attention cache spans it)."""
        return decoder_cache_tokens(self.arch, self.config.prompt, self.config.cache_tokens)

    def to_dict(self) -> dict[str, Any]:
        cfg = self.config
        data: dict[str, Any] = {
            "model": {"name": self.arch.name, "model_type": self.arch.model_type, "params": self.arch.params,
                      "active_params": self.arch.active_params, "layers": self.arch.num_layers,
                      "reader": self.arch.reader},
            "device": {"id": self.device.id, "name": self.device.name, "count": cfg.gpus},
            "config": {"engine": self.execution.name if self.execution else cfg.engine,
                       "engine_version": self.execution.version if self.execution else None,
                       "quant": self.weights.id, "kv_dtype": cfg.kv_dtype, "batch": cfg.batch,
                       "prompt_tokens": cfg.prompt, "output_tokens": cfg.output, "context_tokens": cfg.cache_tokens,
                       "decoder_cache_tokens": self.decoder_cache_tokens, "tensor_parallel": cfg.gpus // cfg.pp if cfg.split == "tensor" else 1, "pipeline_parallel": cfg.pp, "split": cfg.split, "gpu_layers": cfg.gpu_layers, "images": cfg.images,
                       "image_size": None if cfg.image_hw is None else list(cfg.image_hw),
                       "backend": cfg.backend, "build_date": cfg.build_date},
            "memory": {**self.memory.to_dict(), "weights_by_role_bytes": weight_bytes(self.arch, self.weights)},
            "fits": self.memory.fits,
            "max_context": self.max_context,
            "max_batch": self.max_batch,
            "prefill": {**self.prefill.to_dict(), "ttft_s": self.prefill.to_dict()["latency_s"],
                        "includes": ["decoder"] + ([self.tower.key] if self.tower else []),
                        "terms_s": None if self.tower is None or not self.prefill.compute_priced else {
                            "decoder": self.tower.decoder_latency_s.to_dict(),
                            self.tower.key: self.tower.latency_s.to_dict()}},
            "tower": None if self.tower is None else self.tower.to_dict(),
            "decode": None if self.decode is None else {
                **self.decode.to_dict("latency_per_token_s"),
                "per_sequence_tokens_per_s": None if self.decode.tokens_per_s is None else
                self.decode.tokens_per_s.scale(1 / cfg.batch).to_dict()},
            "cpu_device": None if self.cpu_device is None else {"id": self.cpu_device.id, "name": self.cpu_device.name,
                                                                "threads": cfg.threads},
            "flops_per_token": self.flops_per_token,
            "execution": None if self.execution is None else self.execution.describe(),
            "defaults": dict(self.defaults),
            "assumptions": list(self.assumptions),
        }
        return self.ranges.update(data) if self.ranges is not None else data


def _is_date(text: str) -> bool:
    from datetime import date

    try:
        return bool(date.fromisoformat(text))
    except ValueError:
        return False


def _priced(ledger: Ledger, device: DeviceSpec, eff: Efficiency, runtime=None) -> PhaseTotals:
    """`_totals`, kept for the last phases priced (sizeup/memo.py: by the objects' identity and the ledger's ops,
    `Ledger.version`; a traced model's ledger is not kept): a plan prices a family's step ledgers from several
    estimates."""
    return _PRICED.cached((ledger, device, eff, runtime), ledger.version(),
                          lambda: _totals(ledger, device, eff, runtime), keep=len(ledger.ops) <= SCALAR_PRICING_MAX_OPS)


_PRICED = IdentityMemo(256)


def _totals(ledger: Ledger, device: DeviceSpec, eff: Efficiency, runtime=None) -> PhaseTotals:
    """The phase's totals: op by op for an analytic ledger (no numpy to import), vectorised for a large
    one, a calibrated size curve or an engine that runs as a runtime of overheads.yaml (its fused kernels:
    price/overhead.py); `tests/price/test_rates.py` holds the two equal."""
    if not eff.size_curve and runtime is None and len(ledger.ops) <= SCALAR_PRICING_MAX_OPS:
        return price_totals(ledger, device, eff)
    from sizeup.price.roofline import price

    roof = price(ledger, device, eff, runtime=None if device.kind == "cpu" else runtime)
    split = roof.by("phase").values()
    return PhaseTotals(total_s=roof.total_s, notes=list(roof.notes), unknown_compute=roof.unknown_compute,
                       by_bound_s={k: sum(v["time_by_bound_s"].get(k, 0.0) for v in split)
                                   for k in ("compute", "memory", "overhead")})


SCALAR_PRICING_MAX_OPS = 2000
"""Ledgers up to this many ops are priced op by op; beyond it numpy's vectorised roofline is faster."""


def _price_phase(ledger: Ledger, device: DeviceSpec, eff: Efficiency, gpus: int, step_overhead: Range | None,
                 tokens: int, runtime=None, hops: Range | None = None,
                 model: ExecutionModel | None = None, nodes: Nodes | None = None) -> tuple[PhaseEstimate, list[str]]:
    roof = _priced(ledger, device, eff, runtime)
    total = roof.total_s
    comm = hops or Range(0.0, 0.0, 0.0)  # a pipeline's sends between stages (workload/pipeline.py)
    notes = list(roof.notes)
    overhead = step_overhead or Range(0.0, 0.0, 0.0)
    if gpus > 1:
        tp_comm, host, comm_notes = tensor_parallel_comm(ledger, device, gpus, model, roof.by_bound_s, nodes)
        comm, notes = comm + tp_comm, notes + comm_notes
        overhead = overhead + host
    latency = total + comm + overhead
    parts = dict(roof.by_bound_s)
    parts["communication"] = comm.typical
    parts["overhead"] += overhead.typical
    return _phase(latency, tokens, max(parts, key=parts.get), roof.unknown_compute), notes


def _phase(latency: Range, tokens: int, bound: str, unknown: tuple[str, ...]) -> PhaseEstimate:
    if unknown:
        return PhaseEstimate(latency_s=latency, tokens_per_s=None, bound="unknown", compute_priced=False,
                             unknown_compute=unknown)
    return PhaseEstimate(latency_s=latency, tokens_per_s=latency.inverse(tokens), bound=bound)


def _split_phase(gpu: PhaseEstimate, cpu: PhaseEstimate, on_gpu: float, tokens: int) -> PhaseEstimate:
    """Partial offload: layers run one after another, a fraction `on_gpu` of them on the GPU."""
    latency = gpu.latency_s.scale(on_gpu) + cpu.latency_s.scale(1.0 - on_gpu)
    bound = cpu.bound if (1.0 - on_gpu) * cpu.latency_s.typical >= on_gpu * gpu.latency_s.typical else gpu.bound
    unknown = tuple(dict.fromkeys((*(gpu.unknown_compute if on_gpu > 0 else ()),
                                   *(cpu.unknown_compute if on_gpu < 1 else ()))))
    return _phase(latency, tokens, bound, unknown)


def with_threads(cpu: DeviceSpec, threads: int | None) -> tuple[DeviceSpec, list[str]]:
    """`cpu` with its compute peaks scaled to `threads` of its cores (memory bandwidth unchanged)."""
    cores = cpu.compute_units
    if threads is None or not cores or threads >= cores:
        note = [] if threads is None or not cores else [
            f"--threads {threads}: {cpu.id} has {cores} cores; compute priced on all of them"]
        return cpu, note
    f = threads / cores
    scaled = replace(cpu, peak_flops_per_s={k: v * f for k, v in cpu.peak_flops_per_s.items()},
                     vector_flops_per_s={k: v * f for k, v in cpu.vector_flops_per_s.items()})
    return scaled, [f"--threads {threads} of {cores} cores on {cpu.id}: compute peaks scaled by {f:.2f}; memory "
                    f"bandwidth kept (a few threads may not reach it)"]


def execution_for(device: DeviceSpec, cfg: InferenceConfig) -> ExecutionModel:
    """The execution model `cfg` names (engine, release, build backend and date) on `device`, resolved once."""
    settings = engine_settings(cfg.engine, cfg.engine_options) if cfg.engine_options else None
    model = resolve(cfg.engine, device, backend=cfg.backend, build_date=cfg.build_date, settings=settings)
    return model.check_weights(fmt := get_format(cfg.weights)) or model.check_device_weights(fmt) or model  # refused


def estimate_inference(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, *,
                       limits: bool = True, cpu: DeviceSpec | None = None,
                       execution: ExecutionModel | None = None, search_context: bool = True) -> InferenceEstimate:
    """Memory, limits and speed of serving `arch` on `cfg.gpus` × `device` (tensor parallel). `limits=False` skips
    the searches for the largest context and batch (reported as 0). `cpu`: the host CPU where layers kept off the GPU
    (`gpu_layers`, or the engine's own split) run, at its compute peak and bandwidth (an SoC's CPU cluster: the share
    of unified memory its data file states). `execution`: the engine's execution model on `device` where the caller
    resolved it already (the planner, once per family; a run under load, its served one); default: resolved here
    from `cfg` as a static batch (`for_static_batch`: a batch job, an estimate with no load). `search_context=False`:
    of the limits only the largest batch is searched (the largest context reported as 0)."""
    fmt = get_format(cfg.weights)
    taken = engine_class(parse_engine(cfg.engine).name).OPTIONS
    for option, value in (("gpu_layers", cfg.gpu_layers), ("threads", cfg.threads)):
        if value is not None and option not in taken:
            owners = " or ".join(option_owners(option))
            raise ConfigError(f"{OPTIONS[option]} is a {owners} option: use it with --engine {owners}")
    model = execution or execution_for(device, cfg).for_static_batch()
    split = cfg.gpus if cfg.gpus > 1 and (model.MULTI_GPU == "layers" or cfg.split == "layers") else 1
    # consecutive layers per GPU, one active at a time: the engine's own placement or --split layers
    check_pipeline(cfg.pp, cfg.gpus, arch.num_layers, split > 1)
    tp, micro = cfg.gpus // split // cfg.pp, micro_batch(cfg.batch, cfg.pp)
    model, arch, as_run = model.as_run(arch, tp)  # settings by TP size, the model as the engine runs it
    placed = None if cfg.gpu_layers is not None or device.kind == "cpu" else model.auto_gpu_layers(
        decoder_arch(arch, cfg.prompt), fmt, cfg.cache_tokens, cfg.batch, cfg.gpus)  # the engine's own GPU/CPU split
    cfg = replace(cfg, gpu_layers=placed[0]) if placed else cfg
    if cpu is not None and cpu.kind != "cpu":
        raise ConfigError(f"--cpu {cpu.id!r}: expected a cpu device, got a {cpu.kind}")
    feed = tower_input(arch, batch=cfg.batch, prompt=cfg.prompt, images=cfg.images, image_hw=cfg.image_hw)
    arch, dec_prompt = decoder_arch(arch, cfg.prompt), decoder_prompt(arch, cfg.prompt)
    a0 = next((layer.attention for layer in arch.layers if layer.ssm is None), arch.layers[0].attention)  # a hybrid's
    if tp > 1 and any(layer.ssm is not None and layer.ssm.version != 3 for layer in arch.layers):  # Gated DeltaNet splits
        raise ConfigError(f"--gpus {tp}: tensor parallelism over the state-space layers of {arch.name} is not "
                          f"modelled (expected --gpus 1)")
    if tp > 1 and (a0.heads % tp or (a0.kv_heads % tp and tp % a0.kv_heads)):
        raise ConfigError(f"--gpus {tp} does not divide the {a0.heads} attention heads / {a0.kv_heads} KV heads "
                          f"of {arch.name} for tensor parallelism")
    act_dtype = "fp16" if fmt.compute_dtype in ("fp16", "int8") or fmt.family in ("gguf", "gptq", "awq") else "bf16"
    act_bytes = 2

    def memory_for(batch: int, context: int) -> InferenceMemory:  # the decoder's own tokens; the tower's input
        whole = inference_memory(arch, model, MemoryConfig(
            batch=batch, context=decoder_cache_tokens(arch, cfg.prompt, context), prompt=min(dec_prompt, context),
            weights=fmt, kv_dtype=cfg.kv_dtype, act_bytes=act_bytes, tp=tp, gpu_layers=cfg.gpu_layers,
            compute_dtype=act_dtype, tower=None if feed is None else replace(feed, batch=batch), pp=cfg.pp))
        return split_by_layers(whole, split) if split > 1 else whole

    memory = memory_for(cfg.batch, cfg.cache_tokens)
    limit = (model.profile.value("caps_context", 1) and arch.max_context) or MAX_SEARCH_CONTEXT  # 0: runs past it
    max_context = max_batch = 0
    if limits:
        if arch.encoder or search_context:
            max_context = limit if arch.encoder else max_fitting(lambda c: memory_for(cfg.batch, c).fits, 1, limit)
        max_batch = max_fitting(lambda b: memory_for(b, cfg.cache_tokens).fits, 1, MAX_SEARCH_BATCH)

    assumptions = [n for n in (device.resolved_as,) if n] + list(arch.assumptions) + list(memory.notes)
    assumptions += tower_notes(arch, feed)
    assumptions += model.notes + as_run
    assumptions += [*model.option_notes(), *([placed[1]] if placed else [])]
    if cfg.pp > 1:
        assumptions.append(pipeline_note(cfg.pp, tp, cfg.batch, device))
    nodes, nodes_note = node_layout(device, cfg.gpus if split == 1 else 1, cfg.gpus_per_node, cfg.network_gbit_per_s)
    assumptions += [nodes_note] if nodes_note else []
    if cfg.split == "layers" and cfg.gpus > 1:
        assumptions.append(f"--split layers: {cfg.gpus} GPUs each hold about 1/{cfg.gpus} of the layers (weights and "
                           f"cache) and run them in turn, one GPU active at a time: a step takes the time of the whole "
                           f"model on one {device.id} (the hidden state's hop between GPUs not priced)")
    share, host, notes = host_split(arch, fmt, cfg, model, device, cpu, with_threads)  # workload/offload.py
    assumptions += notes
    dev, on_dev_model = device, model
    if device.kind == "cpu" and cfg.threads is not None:
        dev, notes = with_threads(device, cfg.threads)
        on_dev_model = model.on(dev)
        assumptions += notes
    on_host_model = model.on(host) if host is not None else None

    def phase(ledger: Ledger, decode: bool, tokens: int, hop_tokens: int = 0) -> PhaseEstimate:
        on_dev = on_cpu = None
        on_gpu = on_device_share(share, model, arch, device, cfg, decode, tokens)
        if on_gpu > 0:
            rows = cfg.step_tokens or tokens  # the GEMMs' M: the server step's, where the phase runs in one
            eff = phase_efficiency(on_dev_model, decode, fmt, tokens, expert_rows(arch, rows), rows)
            overhead = on_dev_model.step_overhead(arch, decode)
            eager = on_dev_model.extra_launches(ledger, fmt.compute_dtype == "fp32", eff.overhead_s) if decode else None
            if eager is not None:
                overhead = overhead + eager[0] if overhead is not None else eager[0]
                assumptions.append(eager[1])
            extra = on_dev_model.step_extra(arch, ledger, fmt.id, decode, tokens)
            if extra is not None:
                overhead = overhead + extra[0] if overhead is not None else extra[0]
                assumptions.append(extra[1])
            hops, no_link = hop_time(dev, cfg.pp, hop_tokens, arch.hidden, act_bytes, nodes, tp)
            on_dev, notes = _price_phase(ledger, dev, eff, tp, overhead, tokens, on_dev_model.runtime, hops, on_dev_model,
                                         nodes)
            assumptions.extend(notes + ([no_link] if no_link else []))
            note = phase_note(on_dev_model, eff, fmt, decode, rows, moe=arch.is_moe)
            if note is not None:
                assumptions.append(note)
        if on_gpu < 1:
            if host is None:
                on_cpu = PhaseEstimate(latency_s=Range(0.0, 0.0, 0.0), tokens_per_s=None, bound="unknown",
                                       compute_priced=False, unknown_compute=("layers on the CPU (no CPU device)",))
            else:
                on_cpu, notes = _price_phase(ledger, host, phase_efficiency(on_host_model, decode, fmt), 1,
                                             on_host_model.step_overhead(arch, False), tokens)
                assumptions.extend(notes)
        if on_cpu is None:
            return on_dev
        if on_dev is None:
            return _split_phase(on_cpu, on_cpu, 0.0, tokens)
        return _split_phase(on_dev, on_cpu, on_gpu, tokens)

    ranks = model.attention_ranks  # attention data parallelism: the ledger of one rank (engines/attention_dp.py)
    if ranks > 1 and (cfg.pp > 1 or cfg.gpu_layers is not None):
        raise ConfigError(f"attention data parallelism over {ranks} ranks with --pp {cfg.pp}"
                          + (f" / --gpu-layers {cfg.gpu_layers}" if cfg.gpu_layers is not None else "")
                          + ": not priced (its ranks are the tensor-parallel GPUs of one stage); drop one of them")
    prefill_ledger = step_ledger(arch, Step(batch=micro, new_tokens=dec_prompt, context=dec_prompt), fmt,
                                 cfg.kv_dtype, act_dtype, tp, ranks)
    prefill = phase(prefill_ledger, False, cfg.batch * dec_prompt, micro * dec_prompt)
    tower = None
    tower_ops = tower_ledger(arch, feed, weights=fmt, kv_dtype=cfg.kv_dtype, act_dtype=act_dtype, tp=tp) \
        if feed is not None else None
    if tower_ops is not None and tower_ops.ops:
        inputs, positions = tower_positions(arch.tower, feed)
        assumptions.extend(tower_ops.assumptions)
        ahead = phase(tower_ops, False, inputs * positions)
        tower = TowerEstimate(kind=arch.tower.kind, inputs=inputs, positions=positions, flops=tower_ops.totals().flops,
                              latency_s=ahead.latency_s, bound=ahead.bound, compute_priced=ahead.compute_priced,
                              decoder_latency_s=prefill.latency_s)
        bound = prefill.bound if prefill.latency_s.typical >= ahead.latency_s.typical else ahead.bound
        prefill = _phase(prefill.latency_s + ahead.latency_s, cfg.batch * cfg.prompt, bound,
                         tuple(dict.fromkeys(prefill.unknown_compute + ahead.unknown_compute)))
        assumptions.append(f"prefill (TTFT) includes the {tower.label} ({tower.flops / 1e9:,.1f} GFLOP, priced as its "
                           f"own pass with the engine's step overhead) beside the decoder's prefill")
    decode = None
    if not arch.encoder and cfg.output > 0:
        mean_context = dec_prompt + max(cfg.output // 2, 1)
        decode_ledger = step_ledger(arch, Step(batch=micro, new_tokens=1, context=mean_context), fmt, cfg.kv_dtype,
                                    act_dtype, tp, ranks)
        decode = phase(decode_ledger, True, cfg.batch, micro)
        assumptions.append(f"decode priced at the mean context of the generation ({mean_context:,} tokens)")
        if share > 0:
            assumptions.extend(on_dev_model.phase_notes(arch, decode=True))
    for p_name, p in (("prefill", prefill), ("decode", decode)):
        if p is not None and not p.compute_priced:
            assumptions.append(f"{p_name}: compute unknown ({', '.join(p.unknown_compute)}): no tokens/s given")
    if fmt.family in ("gguf", "gptq", "awq", "nf4"):
        assumptions.append(f"{fmt.id}: weights read in their packed form, unpacked at 2 FLOPs per weight (vector "
                           f"work), matrix products at {fmt.compute_dtype}")
    if not memory.fits:
        assumptions.append("does not fit: speed is what the configuration would do with enough memory")
    flops_per_token = step_ledger(arch, Step(batch=1, new_tokens=1, context=cfg.prompt), fmt, cfg.kv_dtype,
                                  act_dtype, 1).totals().flops
    from sizeup.workload.inference_ranges import calibrate_inference

    return calibrate_inference(InferenceEstimate(
        arch=arch, device=device, config=cfg, weights=fmt, memory=memory, max_context=max_context,
        max_batch=max_batch, prefill=prefill, decode=decode, flops_per_token=flops_per_token,
        assumptions=tuple(dict.fromkeys(assumptions)), cpu_device=host, tower=tower, execution=model))


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    batch: int
    fits: bool
    ttft_s: Range
    tpot_s: Range | None
    tokens_per_s: Range | None

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "fits": self.fits, "ttft_s": self.ttft_s.to_dict(),
                "tpot_s": None if self.tpot_s is None else self.tpot_s.to_dict(),
                "tokens_per_s": None if self.tokens_per_s is None else self.tokens_per_s.to_dict()}


def batch_sweep(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig,
                batches: list[int] | None = None) -> list[SweepPoint]:
    """Throughput and latency against batch size: powers of two up to the largest batch that fits
    (and one past it, marked as not fitting), or the given batches."""
    if batches is None:
        limit = estimate_inference(arch, device, cfg).max_batch
        batches, b = [], 1
        while b <= max(limit, 1):
            batches.append(b)
            b *= 2
        batches.append(b)
    out = []
    for b in batches:
        e = estimate_inference(arch, device, replace(cfg, batch=b))
        known = e.decode is not None and e.decode.compute_priced
        out.append(SweepPoint(batch=b, fits=e.memory.fits, ttft_s=e.prefill.latency_s,
                              tpot_s=e.decode.latency_s if known else None,
                              tokens_per_s=e.decode.tokens_per_s if known else None))
    return out
