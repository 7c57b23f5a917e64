"""Sweeps: inference over batch sizes (until OOM, a latency ceiling or the time budget), training over
micro-batch × gradient accumulation. Every point is stored as soon as it is measured, with the
prediction for it, so an interrupted sweep keeps everything measured so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from sizeup.errors import MeasureError
from sizeup.measure.harness import (PointResult, TimingPolicy, build_model, measure_inference, measure_train,
                                    resolve_device)

__all__ = ["SweepConfig", "SweepPoint", "SweepResult", "run_sweep", "knee"]

MAX_AUTO_BATCH = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepConfig:
    target: str
    inputs: tuple[Any, ...]
    """ParsedInput specs; their leading dimension is replaced by each batch size."""
    device: str = "cpu"
    batches: tuple[int, ...] | None = None
    """None: powers of two from 1 until OOM, the latency target or the budget."""
    train: bool = False
    grad_accumulation: tuple[int, ...] = (1,)
    latency_target_s: float | None = None
    budget_s: float = 120.0
    dtype: str = "fp32"
    optimizer: str = "adamw"
    profile: bool = False
    """Also profile one run per point: measured time per op kind, for `sizeup compare`."""
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    dims: tuple[tuple[str, int], ...] = ()
    """ONNX targets: sizes of the symbolic dimensions other than the batch."""
    floor: bool = True
    """Inference of a torch model: also time the forward at batch 0 (measure.floor: the per-op host cost, measured),
    kept in the first point's extra as "floor"."""

    @property
    def onnx(self) -> bool:
        return self.target.lower().endswith(".onnx")

    def __post_init__(self) -> None:
        if self.batches is not None and (not self.batches or min(self.batches) < 1):
            raise MeasureError(f"batch sizes {list(self.batches)}: every batch size must be a positive integer")
        if not self.grad_accumulation or min(self.grad_accumulation) < 1:
            raise MeasureError(f"gradient accumulation {list(self.grad_accumulation)}: expected positive integers")
        if self.budget_s <= 0:
            raise MeasureError(f"budget {self.budget_s} s: expected a positive time")
        if self.onnx and self.profile:
            raise MeasureError(f"{self.target}: --profile times torch ops; it does not apply to ONNX Runtime")
        if self.onnx and (self.train or self.inputs):
            raise MeasureError(f"{self.target}: an ONNX file is measured for inference with the shapes it carries "
                               "(no --train, no --input; bind symbolic sizes with --dim NAME=SIZE)")
        if not self.inputs and not self.onnx:
            raise MeasureError("a measurement needs --input or --input-spec (the leading dimension is the batch)")


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    batch: int
    grad_accumulation: int
    result: PointResult
    predicted_s: float | None = None
    point_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        samples = sorted(self.result.samples_s)

        def q(p: float) -> float | None:
            if not samples:
                return None
            import numpy as np

            return float(np.percentile(samples, p))

        latency = q(50)
        per_step = self.batch * self.grad_accumulation
        return {"batch": self.batch, "grad_accumulation": self.grad_accumulation, "status": self.result.status,
                "latency_p50_s": latency, "latency_p95_s": q(95), "latency_p99_s": q(99),
                "throughput_per_s": per_step / latency if latency else None,
                "peak_memory_bytes": self.result.peak_memory_bytes, "predicted_s": self.predicted_s,
                "repetitions": len(samples), "point_id": self.point_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepResult:
    run_id: int
    points: tuple[SweepPoint, ...]
    status: str
    warnings: tuple[str, ...] = ()

    def knee_batch(self) -> int | None:
        return knee([p for p in self.points if p.result.status == "ok"])

    def largest_meeting(self, target_s: float | None) -> int | None:
        if target_s is None:
            return None
        ok = [p for p in self.points if p.result.status == "ok" and p.to_dict()["latency_p95_s"] <= target_s]
        return max((p.batch for p in ok), default=None)

    def largest_before_oom(self) -> int | None:
        ok = [p.batch for p in self.points if p.result.status == "ok"]
        return max(ok, default=None)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "status": self.status, "points": [p.to_dict() for p in self.points],
                "knee_batch": self.knee_batch(), "largest_batch_ok": self.largest_before_oom(),
                "warnings": list(self.warnings)}


def knee(points: Sequence[SweepPoint]) -> int | None:
    """The first batch after which doubling the batch nearly doubles P95 latency (throughput stops
    growing: the device is saturated)."""
    ordered = sorted(points, key=lambda p: p.batch)
    for a, b in zip(ordered, ordered[1:]):
        la, lb = a.to_dict()["latency_p95_s"], b.to_dict()["latency_p95_s"]
        if la and lb and (lb / la) > 0.8 * (b.batch / a.batch):
            return a.batch
    return None


def run_sweep(cfg: SweepConfig, store, *, predict: Callable[[int], float | None] | None = None,
              progress: Callable[[str], None] | None = None, provenance: dict | None = None) -> SweepResult:
    """Measure every point, storing each as it completes; Ctrl-C ends the sweep and keeps the points.
    `provenance`: what the caller knows of the run beyond its environment (measure.provenance, e.g. the
    workload class of a traced model)."""
    from sizeup.ingest.target import load_factory
    from sizeup.ingest.torch_trace import torch_dtype
    from sizeup.measure.env import capture_environment, environment_warnings
    from sizeup.measure.provenance import capture_provenance

    device = resolve_device(cfg.device)
    dtype = torch_dtype(cfg.dtype)
    environment = capture_environment(str(device))
    warnings = tuple(environment_warnings(environment))
    config = {"inputs": [{"shape": list(s.shape), "dtype": s.dtype, "name": s.name} for s in cfg.inputs],
              "batches": None if cfg.batches is None else list(cfg.batches), "train": cfg.train,
              "grad_accumulation": list(cfg.grad_accumulation), "latency_target_s": cfg.latency_target_s,
              "budget_s": cfg.budget_s, "dtype": cfg.dtype, "optimizer": cfg.optimizer, "profile": cfg.profile}
    onnx_model = None
    if cfg.onnx:  # a file ONNX Runtime cannot load is reported before a run is recorded
        from sizeup.measure.onnx_runner import load_onnx

        onnx_model = load_onnx(cfg.target, str(device), dict(cfg.dims))
        config |= {"onnx": True, "dims": dict(cfg.dims), "batch_dim": onnx_model.batch_dim,
                   "backend": f"onnxruntime ({onnx_model.provider})"}
    kind = "train" if cfg.train else "inference"
    run_id = store.start_run(kind=kind, target=cfg.target, device=str(device), config=config, environment=environment,
                             provenance=capture_provenance(kind, cfg.target, config, environment, **(provenance or {})))
    points: list[SweepPoint] = []
    status = "ok"
    try:
        model = build_model(load_factory(cfg.target), device, dtype) if onnx_model is None else None
        optimizer = None
        if cfg.train:
            optimizer = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "sgd": torch.optim.SGD}.get(
                cfg.optimizer, torch.optim.AdamW)(model.parameters(), lr=1e-4)
        floor = None
        if cfg.floor and model is not None and not cfg.train:
            from sizeup.measure.floor import measure_floor

            floor = measure_floor(model, cfg.inputs, device, dtype)
        start = time.perf_counter()
        batches = list(cfg.batches) if cfg.batches is not None else [2 ** k for k in range(13)]
        stop = False
        for batch in batches:
            for accumulation in (cfg.grad_accumulation if cfg.train else (1,)):
                if time.perf_counter() - start > cfg.budget_s:
                    stop = True
                    break
                if progress:
                    progress(f"batch {batch}" + (f" × {accumulation}" if cfg.train else ""))
                if onnx_model is not None:
                    from sizeup.measure.onnx_runner import measure_onnx

                    result = measure_onnx(onnx_model, batch, cfg.policy)
                elif cfg.train:
                    result = measure_train(model, cfg.inputs, batch, accumulation, device, dtype, cfg.policy, optimizer)
                else:
                    result = measure_inference(model, cfg.inputs, batch, device, dtype, cfg.policy, cfg.profile)
                predicted = None
                if predict is not None and result.status == "ok":
                    try:
                        predicted = predict(batch) * accumulation if cfg.train else predict(batch)
                    except Exception as e:  # a failed prediction must not lose the measurement
                        result = PointResult(status=result.status, samples_s=result.samples_s,
                                             cpu_samples_s=result.cpu_samples_s,
                                             peak_memory_bytes=result.peak_memory_bytes, error=result.error,
                                             extra={**result.extra, "prediction_error": str(e)})
                point_id = store.add_point(run_id, batch=batch, grad_accumulation=accumulation if cfg.train else None,
                                           phase="train_step" if cfg.train else "forward", status=result.status,
                                           samples_s=result.samples_s, cpu_samples_s=result.cpu_samples_s,
                                           peak_memory_bytes=result.peak_memory_bytes,
                                           throughput_per_s=(batch * accumulation / result.median_s
                                                             if result.samples_s else None),
                                           error=result.error, extra={**result.extra, "predicted_s": predicted,
                                                                      **({"floor": floor} if floor and not points
                                                                         else {})})
                points.append(SweepPoint(batch=batch, grad_accumulation=accumulation, result=result,
                                         predicted_s=predicted, point_id=point_id))
                if result.status == "oom" and cfg.batches is None:
                    stop = True
                if (cfg.batches is None and cfg.latency_target_s is not None and result.samples_s
                        and points[-1].to_dict()["latency_p95_s"] > cfg.latency_target_s):
                    stop = True
            if stop:
                break
    except KeyboardInterrupt:
        status = "interrupted"
    except Exception as error:
        import traceback

        store.finish_run(run_id, "error", traceback.format_exc())
        raise MeasureError(f"run {run_id} failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                           f" (traceback stored: sizeup runs show {run_id})") from None
    if any(p.result.status == "error" for p in points):
        status = "error" if status == "ok" else status
    store.finish_run(run_id, status)
    return SweepResult(run_id=run_id, points=tuple(points), status=status, warnings=warnings)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSweepConfig:
    model: str
    """A preset name, Hugging Face id of a preset, or config.json."""
    device: str = "cpu"
    batches: tuple[int, ...] = (1, 2, 4)
    prompt: int = 128
    context: int = 256
    """Cache length at which decode steps are timed."""
    dtype: str = "fp32"
    budget_s: float = 120.0
    policy: TimingPolicy = field(default_factory=TimingPolicy)

    def __post_init__(self) -> None:
        if not self.batches or min(self.batches) < 1:
            raise MeasureError(f"batch sizes {list(self.batches)}: every batch size must be a positive integer")
        if self.prompt < 1 or self.context < self.prompt:
            raise MeasureError(f"prompt {self.prompt} and context {self.context}: expected 1 <= prompt <= context")


def run_llm_sweep(cfg: LLMSweepConfig, store, *, predict: Callable[[str, int], float | None] | None = None,
                  progress: Callable[[str], None] | None = None) -> SweepResult:
    """Prefill (TTFT) and decode (TPOT at `context` cached tokens) per batch size, stored as phases
    "prefill" and "decode" of one run."""
    from sizeup.ingest.hf_config import load_model
    from sizeup.ingest.torch_trace import torch_dtype
    from sizeup.measure.env import capture_environment, environment_warnings
    from sizeup.measure.harness import _point
    from sizeup.measure.llm import build_decoder

    device = resolve_device(cfg.device)
    dtype = torch_dtype(cfg.dtype)
    arch = load_model(cfg.model)
    from sizeup.measure.provenance import capture_provenance

    environment = capture_environment(str(device))
    config = {"llm": True, "prompt": cfg.prompt, "context": cfg.context, "batches": list(cfg.batches),
              "dtype": cfg.dtype, "inputs": []}
    run_id = store.start_run(kind="inference", target=cfg.model, device=str(device), config=config,
                             environment=environment,
                             provenance=capture_provenance("inference", cfg.model, config, environment))
    points: list[SweepPoint] = []
    status = "ok"
    try:
        model = build_decoder(arch, device, dtype)
        start = time.perf_counter()
        for batch in cfg.batches:
            if time.perf_counter() - start > cfg.budget_s:
                break
            if progress:
                progress(f"batch {batch}")
            ids = torch.randint(0, arch.vocab, (batch, cfg.prompt), device=device)

            def prefill() -> None:
                with torch.inference_mode():
                    model(ids, model.empty_caches())

            caches = model.empty_caches()
            with torch.inference_mode():
                model(torch.randint(0, arch.vocab, (batch, cfg.context - 1), device=device), caches)
            token = torch.randint(0, arch.vocab, (batch, 1), device=device)

            def decode() -> None:
                saved = [list(c) for c in caches]
                with torch.inference_mode():
                    model(token, caches, start=cfg.context - 1)
                for c, s in zip(caches, saved):  # back to the same cache length for the next repetition
                    c[0], c[1] = s

            for phase, fn in (("prefill", prefill), ("decode", decode)):
                result = _point(fn, device, cfg.policy)
                predicted = predict(phase, batch) if predict and result.status == "ok" else None
                tokens = batch * (cfg.prompt if phase == "prefill" else 1)
                point_id = store.add_point(run_id, batch=batch, phase=phase, status=result.status,
                                           samples_s=result.samples_s, peak_memory_bytes=result.peak_memory_bytes,
                                           throughput_per_s=tokens / result.median_s if result.samples_s else None,
                                           error=result.error, extra={**result.extra, "predicted_s": predicted,
                                                                      "prompt": cfg.prompt, "context": cfg.context})
                points.append(SweepPoint(batch=batch, grad_accumulation=1, result=result, predicted_s=predicted,
                                         point_id=point_id))
            del caches
    except KeyboardInterrupt:
        status = "interrupted"
    store.finish_run(run_id, status)
    return SweepResult(run_id=run_id, points=tuple(points), status=status,
                       warnings=tuple(environment_warnings(environment)))
