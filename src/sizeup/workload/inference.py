"""Inference on a device: memory, the largest context and batch that fit, prefill time (TTFT) and
decode time per token (TPOT), each a range with its assumptions.

Prefill and one decode step (at the mean context of the generation) are built as analytic ledgers
and priced by the roofline: weights in their stored format, the KV cache read once per step, the
engine's per-kernel overhead (CUDA graphs or eager dispatch), tensor-parallel all-reduces over the
device's link.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.hf_config import ModelArch
from sizeup.ingest.transformer_ops import KV_BYTES_PER_ELEMENT, Step, transformer_ledger
from sizeup.ledger import Ledger, OpKind
from sizeup.price.comm import collective_time, device_link
from sizeup.price.efficiency import Efficiency, device_efficiency
from sizeup.price.engines import EngineProfile, get_engine
from sizeup.price.memory import InferenceMemory, MemoryConfig, inference_memory, max_fitting
from sizeup.price.roofline import price
from sizeup.ranges import Range
from sizeup.workload.quantize import WeightFormat, get_format, weight_bytes

__all__ = ["InferenceConfig", "PhaseEstimate", "InferenceEstimate", "SweepPoint", "batch_sweep", "estimate_inference"]

MAX_SEARCH_CONTEXT = 1 << 21
MAX_SEARCH_BATCH = 1 << 14


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceConfig:
    batch: int = 1
    prompt: int = 512
    output: int = 128
    context: int | None = None
    """Tokens the cache must hold per sequence; default prompt + output."""
    weights: str = "bf16"
    kv_dtype: str = "fp16"
    engine: str = "hf"
    gpus: int = 1
    gpu_layers: int | None = None

    def __post_init__(self) -> None:
        for name in ("batch", "prompt", "gpus"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name} {getattr(self, name)}: expected a positive integer")
        if self.output < 0:
            raise ConfigError(f"--output {self.output}: expected 0 or more tokens")
        if self.context is not None and self.context < self.prompt + self.output:
            raise ConfigError(f"--context {self.context}: must hold the prompt and output "
                              f"({self.prompt} + {self.output} tokens)")
        if self.kv_dtype not in KV_BYTES_PER_ELEMENT:
            raise ConfigError(f"--kv-dtype {self.kv_dtype!r}: expected one of {', '.join(KV_BYTES_PER_ELEMENT)}")

    @property
    def cache_tokens(self) -> int:
        return self.context or self.prompt + self.output


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseEstimate:
    latency_s: Range
    tokens_per_s: Range
    bound: str
    """Where the typical time goes most: compute, memory, overhead or communication."""
    compute_priced: bool = True
    """False when the device lists no peak for some of the FLOPs: the time is then a lower bound."""

    def to_dict(self, latency_key: str = "latency_s") -> dict[str, Any]:
        return {latency_key: self.latency_s.to_dict(), "tokens_per_s": self.tokens_per_s.to_dict(), "bound": self.bound,
                "compute_priced": self.compute_priced}


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

    def to_dict(self) -> dict[str, Any]:
        cfg = self.config
        data: dict[str, Any] = {
            "model": {"name": self.arch.name, "model_type": self.arch.model_type, "params": self.arch.params,
                      "active_params": self.arch.active_params, "layers": self.arch.num_layers,
                      "reader": self.arch.reader},
            "device": {"id": self.device.id, "name": self.device.name, "count": cfg.gpus},
            "config": {"engine": cfg.engine, "quant": self.weights.id, "kv_dtype": cfg.kv_dtype, "batch": cfg.batch,
                       "prompt_tokens": cfg.prompt, "output_tokens": cfg.output, "context_tokens": cfg.cache_tokens,
                       "tensor_parallel": cfg.gpus, "gpu_layers": cfg.gpu_layers},
            "memory": {**self.memory.to_dict(), "weights_by_role_bytes": weight_bytes(self.arch, self.weights)},
            "fits": self.memory.fits,
            "max_context": self.max_context,
            "max_batch": self.max_batch,
            "prefill": {**self.prefill.to_dict(), "ttft_s": self.prefill.latency_s.to_dict()},
            "decode": None if self.decode is None else {
                **self.decode.to_dict("latency_per_token_s"),
                "per_sequence_tokens_per_s": self.decode.tokens_per_s.scale(1 / cfg.batch).to_dict()},
            "flops_per_token": self.flops_per_token,
            "assumptions": list(self.assumptions),
        }
        return data


def _phase_efficiency(device: DeviceSpec, engine: EngineProfile, decode: bool, weights: WeightFormat) -> Efficiency:
    eff = device_efficiency(device)
    if device.kind == "cpu":
        return eff
    changes: dict[str, Any] = {}
    overhead = engine.range("decode_overhead_s") if decode else None
    if overhead is not None:
        changes["overhead_s"] = overhead
    return replace(eff, **changes, origin=f"{eff.origin}, {engine.id} {'decode' if decode else 'prefill'}") \
        if changes else eff


def _price_phase(ledger: Ledger, device: DeviceSpec, eff: Efficiency, gpus: int, step_overhead: Range | None,
                 tokens: int) -> tuple[PhaseEstimate, list[str]]:
    roof = price(ledger, device, eff)
    total = roof.total_s
    comm = Range(0.0, 0.0, 0.0)
    notes = list(roof.notes)
    if gpus > 1:
        link = device_link(device)
        if link is None:
            notes.append(f"{device.id}: no link bandwidth in the catalog: tensor-parallel communication not priced")
        else:
            for o in ledger.ops:
                if o.kind == OpKind.COMM:
                    comm = comm + collective_time(o.op, o.bytes_written * o.count, gpus, link)
    overhead = step_overhead or Range(0.0, 0.0, 0.0)
    latency = total + comm + overhead
    split = {b: v["time_by_bound_s"] for b, v in roof.by("phase").items()}
    parts = {k: sum(v.get(k, 0.0) for v in split.values()) for k in ("compute", "memory", "overhead")}
    parts["communication"] = comm.typical
    parts["overhead"] += overhead.typical
    priced = not any("not priced" in n for n in roof.notes)
    return PhaseEstimate(latency_s=latency, tokens_per_s=latency.inverse(tokens), bound=max(parts, key=parts.get),
                         compute_priced=priced), notes


def estimate_inference(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, *,
                       limits: bool = True) -> InferenceEstimate:
    """Memory, limits and speed of serving `arch` on `cfg.gpus` × `device` (tensor parallel).
    `limits=False` skips the searches for the largest context and batch (reported as 0)."""
    engine = get_engine(cfg.engine)
    fmt = get_format(cfg.weights)
    if cfg.gpu_layers is not None and engine.id != "llama.cpp":
        raise ConfigError("--gpu-layers is a llama.cpp option: use it with --engine llama.cpp")
    tp = cfg.gpus
    a0 = arch.layers[0].attention
    if tp > 1 and (a0.heads % tp or (a0.kv_heads % tp and tp % a0.kv_heads)):
        raise ConfigError(f"--gpus {tp} does not divide the {a0.heads} attention heads / {a0.kv_heads} KV heads "
                          f"of {arch.name} for tensor parallelism")
    act_dtype = "fp16" if fmt.compute_dtype in ("fp16", "int8") or fmt.family in ("gguf", "gptq", "awq") else "bf16"
    act_bytes = 2

    def memory_for(batch: int, context: int) -> InferenceMemory:
        return inference_memory(arch, device, engine, MemoryConfig(
            batch=batch, context=context, prompt=min(cfg.prompt, context), weights=fmt, kv_dtype=cfg.kv_dtype,
            act_bytes=act_bytes, tp=tp, gpu_layers=cfg.gpu_layers))

    memory = memory_for(cfg.batch, cfg.cache_tokens)
    limit = arch.max_context or MAX_SEARCH_CONTEXT
    max_context = max_batch = 0
    if limits:
        max_context = max_fitting(lambda c: memory_for(cfg.batch, c).fits, 1, limit) if not arch.encoder else limit
        max_batch = max_fitting(lambda b: memory_for(b, cfg.cache_tokens).fits, 1, MAX_SEARCH_BATCH)

    assumptions = list(arch.assumptions) + list(memory.notes)
    step_overhead = engine.range("step_overhead_s")
    prefill_ledger = transformer_ledger(arch, Step(batch=cfg.batch, new_tokens=cfg.prompt, context=cfg.prompt),
                                        weights=fmt, kv_dtype=cfg.kv_dtype, act_dtype=act_dtype, tp=tp, per_layer=False)
    prefill, notes = _price_phase(prefill_ledger, device, _phase_efficiency(device, engine, False, fmt), tp,
                                  step_overhead, cfg.batch * cfg.prompt)
    assumptions += notes
    decode = None
    if not arch.encoder and cfg.output > 0:
        mean_context = cfg.prompt + max(cfg.output // 2, 1)
        decode_ledger = transformer_ledger(arch, Step(batch=cfg.batch, new_tokens=1, context=mean_context),
                                           weights=fmt, kv_dtype=cfg.kv_dtype, act_dtype=act_dtype, tp=tp, per_layer=False)
        decode, notes = _price_phase(decode_ledger, device, _phase_efficiency(device, engine, True, fmt), tp,
                                     step_overhead, cfg.batch)
        assumptions += notes
        assumptions.append(f"decode priced at the mean context of the generation ({mean_context} tokens)")
    if fmt.family in ("gguf", "gptq", "awq", "nf4"):
        assumptions.append(f"{fmt.id}: weights read in their packed form, unpacked at 2 FLOPs per weight (vector "
                           f"work), matrix products at {fmt.compute_dtype}")
    if cfg.gpu_layers is not None and cfg.gpu_layers < arch.num_layers:
        assumptions.append("layers left on the CPU are not priced: speed assumes every layer on the GPU")
    if not memory.fits:
        assumptions.append("does not fit: speed is what the configuration would do with enough memory")
    flops_per_token = transformer_ledger(arch, Step(batch=1, new_tokens=1, context=cfg.prompt), weights=fmt,
                                         kv_dtype=cfg.kv_dtype, act_dtype=act_dtype, per_layer=False).totals().flops
    return InferenceEstimate(arch=arch, device=device, config=cfg, weights=fmt, memory=memory,
                             max_context=max_context, max_batch=max_batch, prefill=prefill, decode=decode,
                             flops_per_token=flops_per_token, assumptions=tuple(dict.fromkeys(assumptions)))


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
        out.append(SweepPoint(batch=b, fits=e.memory.fits, ttft_s=e.prefill.latency_s,
                              tpot_s=None if e.decode is None else e.decode.latency_s,
                              tokens_per_s=None if e.decode is None else e.decode.tokens_per_s))
    return out
