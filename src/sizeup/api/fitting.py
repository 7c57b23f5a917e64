"""`fit`: the question the other way round — which models run on this device, under which engine and format,
and how fast, fastest first (`sizeup fit DEVICE`).

Per model and engine the row is the most precise format of the engine's list that fits (data/efficiency/
engine_formats.yaml: only formats the engine loads on that device), priced by the same inference estimate as
`sizeup estimate`. A format is skipped without an estimate when its weights alone exceed the usable memory.
`task` sets the workload: chat and code price one request's prefill and decode, finetune one training step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sizeup.api.options import Options, option
from sizeup.errors import ConfigError, SizeupError
from sizeup.units import MAX_BATCH, MAX_TOKENS

__all__ = ["FitMiss", "FitOptions", "FitResult", "FitRow", "TASK_WORKLOADS", "fit"]

TASK_WORKLOADS = {
    "chat": (800, 250, "a chat turn: 800 prompt and 250 output tokens, the quick plan's chat request (sizeup plan "
                       "MODEL --task chat)"),
    "code": (8192, 512, "a code-assistant request: 8,192 prompt tokens of file and repository context and 512 output "
                        "tokens (a stated choice, not a measured mix; set prompt / output for yours)"),
}
"""Prompt and output tokens per request of the serving tasks, with the sentence that states them."""

FINETUNE_METHODS = (("full", "bf16"), ("lora", "bf16"), ("qlora", "nf4"))
"""Tried in order, most precise first: the first whose micro-batch of 1 fits is the row."""

RECOMPUTE = "full"
"""finetune: gradient checkpointing on, as the QLoRA paper's single-GPU runs (Dettmers et al. 2023,
arXiv:2305.14314)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FitOptions(Options):
    task: Literal["chat", "code", "finetune"] = option("chat", "chat or code: one request's prefill and decode; "
                                                               "finetune: one training step (full, LoRA or QLoRA)")
    models: tuple[str, ...] | None = option(None, "models to try (presets, Hugging Face ids, config.json files); "
                                                  "default every text-generating preset")
    engine: str | None = option(None, "only this serving engine: llama.cpp or vllm (default both, where they run)")
    formats: tuple[str, ...] | None = option(None, "only these formats, most precise first (default: what each "
                                                   "engine loads on the device)")
    batch: int = option(1, "concurrent sequences (chat, code)", minimum=1, maximum=MAX_BATCH)
    prompt: int | None = option(None, "prompt tokens per request (default by task: chat 800, code 8,192)",
                                minimum=1, maximum=MAX_TOKENS)
    output: int | None = option(None, "output tokens per request (default by task: chat 250, code 512)",
                                minimum=0, maximum=MAX_TOKENS)
    seq: int = option(2048, "finetune: sequence length", minimum=1, maximum=MAX_TOKENS)
    catalog: tuple[str | Path, ...] = option((), "extra folders of device/offer YAML files")


@dataclass(frozen=True, slots=True, kw_only=True)
class FitRow:
    """One model that runs on the device, under one engine, at the most precise format that fits."""

    model: str
    params: int
    engine: str
    """llama.cpp or vllm (serving); hf (finetune: Transformers + PEFT + bitsandbytes)."""
    format: str
    method: str | None
    """finetune: full, lora or qlora."""
    tokens_per_s: float | None
    """Typical: decode tokens/s of the whole batch (serving), training tokens/s (finetune); None: compute unknown."""
    ttft_s: float | None
    memory_bytes: float
    usable_bytes: float
    max_context: int | None
    """Serving: the largest context per sequence that fits at the batch."""
    tried: tuple[str, ...]
    estimate: Any = None
    """The full estimate behind the row (`EstimateResult`-like inference estimate, or a `TrainingEstimate`)."""

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "params": self.params, "engine": self.engine, "format": self.format,
                "method": self.method, "tokens_per_s": self.tokens_per_s, "ttft_s": self.ttft_s,
                "memory_bytes": self.memory_bytes, "usable_bytes": self.usable_bytes, "max_context": self.max_context,
                "formats_tried": list(self.tried)}


@dataclass(frozen=True, slots=True, kw_only=True)
class FitMiss:
    """A model that runs under no engine and format on the device, and why."""

    model: str
    params: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "params": self.params, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class FitResult:
    device: Any
    task: str
    workload: dict[str, int]
    engines: dict[str, str]
    """Each engine tried on the device: what it is and what it loads there."""
    rows: tuple[FitRow, ...]
    """Fastest first (unknown speeds last)."""
    does_not_fit: tuple[FitMiss, ...]
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"device": {"id": self.device.id, "name": self.device.name}, "task": self.task,
                "workload": self.workload, "engines": self.engines, "models": [r.to_dict() for r in self.rows],
                "does_not_fit": [m.to_dict() for m in self.does_not_fit], "assumptions": list(self.assumptions)}


def fit(device: str, options: FitOptions | None = None, /, **changes: Any) -> FitResult:
    """Which models run on `device` (a catalog name), at which engine, format and speed, fastest first; the
    keywords are `FitOptions`' fields."""
    from sizeup.api.options import build_options
    from sizeup.hardware.catalog import load_catalog

    o = build_options(FitOptions, options, changes, "fit")
    target = load_catalog(o.catalog).device(device)
    archs = _models(o)
    if o.task == "finetune":
        return _fit_finetune(target, archs, o)
    return _fit_serving(target, archs, o)


def _models(o: FitOptions) -> list:
    from sizeup.ingest.hf_config import load_model
    from sizeup.ingest.load import list_presets

    if o.models is not None:
        return [load_model(m) for m in o.models]
    archs = [load_model(p) for p in list_presets()]
    return [a for a in archs if not (a.encoder or a.image or a.cross_source)]


def _fit_serving(device, archs: list, o: FitOptions) -> FitResult:
    from sizeup.api.inference import check_context
    from sizeup.hardware.usable import usable_memory
    from sizeup.workload.engine_formats import engines_on

    prompt = o.prompt if o.prompt is not None else TASK_WORKLOADS[o.task][0]
    output = o.output if o.output is not None else TASK_WORKLOADS[o.task][1]
    engines = engines_on(device, o.engine)
    if not engines:
        raise ConfigError(f"fit: {device.id} runs none of the serving engines sizeup knows the formats of "
                          f"({'llama.cpp, vllm' if o.engine is None else o.engine})")
    usable = usable_memory(device).bytes.typical
    rows, misses = [], []
    for arch in archs:
        try:
            check_context(arch, prompt=prompt, total=prompt + output, what=f"{prompt:,} + {output:,} tokens")
        except ConfigError as e:
            misses.append(FitMiss(model=arch.name, params=arch.params, reason=str(e)))
            continue
        found, needs = [], []
        for engine in engines:
            ladder = o.formats or engine.formats_for(device)
            row, need = _serve_row(arch, device, engine.engine, ladder, usable, o.batch, prompt, output)
            if row is not None:
                found.append(row)
            elif need:
                needs.append(need)
        rows.extend(found)
        if not found:
            misses.append(FitMiss(model=arch.name, params=arch.params, reason="; ".join(needs) or "no format tried"))
    rows.sort(key=lambda r: (r.tokens_per_s is None, -(r.tokens_per_s or 0.0), r.model, r.engine))
    engine_notes = {e.engine: f"{e.label}: {', '.join(o.formats or e.formats_for(device))} ({e.note})"
                    for e in engines}
    assumptions = [f"workload: {TASK_WORKLOADS[o.task][2]}" if o.prompt is None and o.output is None else
                   f"workload: {prompt:,} prompt and {output:,} output tokens per request",
                   f"batch {o.batch}; tokens/s is the typical decode rate of the whole batch, TTFT one prompt",
                   "per model and engine the most precise format that fits; a format whose weights alone exceed the "
                   f"usable memory ({usable / 2**30:.1f} GiB) is skipped unpriced",
                   *[f"{name}: {text}" for name, text in engine_notes.items()]]
    return FitResult(device=device, task=o.task, workload={"batch": o.batch, "prompt": prompt, "output": output},
                     engines=engine_notes, rows=tuple(rows), does_not_fit=tuple(misses), assumptions=tuple(assumptions))


def _serve_row(arch, device, engine: str, ladder, usable: float, batch: int, prompt: int, output: int):
    """The row of the first format of `ladder` that fits, or None and why none did."""
    from sizeup.workload.inference import InferenceConfig, estimate_inference
    from sizeup.workload.quantize import get_format, weight_bytes

    tried, need = [], ""
    for fmt in ladder:
        tried.append(fmt)
        weights = sum(weight_bytes(arch, get_format(fmt)).values())
        if weights > usable:
            need = f"{engine}: weights alone {weights / 2**30:.1f} GiB at {fmt}"
            continue
        try:
            e = estimate_inference(arch, device, InferenceConfig(batch=batch, prompt=prompt, output=output,
                                                                 weights=fmt, engine=engine))
        except SizeupError as exc:
            need = f"{engine} {fmt}: {exc}"
            continue
        if not e.memory.fits:
            need = f"{engine}: needs {e.memory.total_bytes / 2**30:.1f} GiB at {fmt}"
            continue
        known = e.decode is not None and e.decode.compute_priced and e.decode.tokens_per_s is not None
        return FitRow(model=arch.name, params=arch.params, engine=engine, format=fmt, method=None,
                      tokens_per_s=e.decode.tokens_per_s.typical if known else None,
                      ttft_s=e.prefill.latency_s.typical if e.prefill.compute_priced else None,
                      memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                      max_context=e.max_context, tried=tuple(tried), estimate=e), ""
    return None, need




def _fit_finetune(device, archs: list, o: FitOptions) -> FitResult:
    """Per model the most precise method whose micro-batch of one sequence fits (full, then LoRA, then QLoRA),
    and its training tokens/s."""
    from sizeup.api.inference import check_context
    from sizeup.api.training import TrainOptions, training_config
    from sizeup.workload.engine_formats import trainers_on
    from sizeup.workload.training import estimate_training, training_memory, with_attention

    trainers = trainers_on(device)
    if not trainers:
        raise ConfigError(f"fit --task finetune: {device.id} is not a device sizeup prices fine-tuning on "
                          "(Transformers + PEFT + bitsandbytes: NVIDIA GPUs)")
    trainer = trainers[0]
    rows, misses = [], []
    for arch in archs:
        tried, need, row = [], "", None
        try:
            check_context(arch, prompt=o.seq, total=o.seq, what=f"seq {o.seq:,}")
        except ConfigError as e:
            misses.append(FitMiss(model=arch.name, params=arch.params, reason=str(e)))
            continue
        for method, fmt in FINETUNE_METHODS:
            tried.append(method)
            opts = TrainOptions(device=device, method=method, framework=trainer.id, recompute=RECOMPUTE,
                                micro_batch=1, seq=o.seq, targets=("all-linear",))
            try:
                cfg = training_config(opts, method)
                memory = training_memory(arch, device, with_attention(cfg, device)[0], 1)
            except SizeupError as exc:
                need = f"{method}: {exc}"
                continue
            if not memory.fits:
                need = f"needs {memory.total_bytes / 2**30:.1f} GiB at {method}"
                continue
            e = estimate_training(arch, device, cfg)
            row = FitRow(model=arch.name, params=arch.params, engine=trainer.id, format=fmt, method=method,
                         tokens_per_s=e.tokens_per_s.typical, ttft_s=None, memory_bytes=e.memory.total_bytes,
                         usable_bytes=e.memory.usable_bytes.typical, max_context=None, tried=tuple(tried), estimate=e)
            break
        if row is None:
            misses.append(FitMiss(model=arch.name, params=arch.params, reason=need or "no method tried"))
        else:
            rows.append(row)
    rows.sort(key=lambda r: (-r.tokens_per_s, r.model))
    assumptions = (f"workload: one training step of micro-batch 1 at {o.seq:,} tokens, recompute {RECOMPUTE} "
                   "(gradient checkpointing, as the QLoRA paper's single-GPU runs: Dettmers et al. 2023)",
                   "per model the most precise method whose micro-batch fits: full (bf16), LoRA (bf16 base), QLoRA "
                   "(NF4 base); LoRA rank 16 on every linear layer, as the QLoRA paper",
                   "tokens/s: typical training tokens per second of that step",
                   f"{trainer.id}: {trainer.label} ({trainer.note})")
    return FitResult(device=device, task="finetune", workload={"micro_batch": 1, "seq": o.seq},
                     engines={trainer.id: f"{trainer.label} ({trainer.note})"}, rows=tuple(rows),
                     does_not_fit=tuple(misses), assumptions=assumptions)
