"""`measure`: run a model on this machine over batch sizes (or backends, or collectives) and store every point
in the run store, as `sizeup measure`. Needs torch (and onnxruntime for MODEL.onnx)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sizeup.api.options import Options, option
from sizeup.errors import ConfigError, MeasureError

__all__ = ["BackendComparison", "CollectivesResult", "MeasureOptions", "MeasureResult", "measure"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureOptions(Options):
    """What `measure` runs: the flags of `sizeup measure`."""

    inputs: tuple[str, ...] = option((), "float input shapes like 1x3x224x224; the leading dimension is replaced by "
                                         "each batch size")
    input_specs: tuple[str, ...] = option((), "[NAME=]DTYPE:SHAPE, e.g. input_ids=int64:1x128")
    dims: dict[str, int] | None = option(None, "MODEL.onnx: sizes of symbolic dimensions other than the batch",
                                         minimum=1)
    device: str = option("cpu", "cpu, cuda, cuda:N or mps")
    batches: tuple[int, ...] | None = option(None, "batch sizes (default: powers of two until OOM, the latency "
                                                   "target or the budget; preset LLMs 1, 2, 4)", minimum=1)
    train: bool = option(False, "time optimizer steps instead of inference")
    grad_acc: tuple[int, ...] = option((1,), "gradient accumulation steps to sweep with train", minimum=1)
    optimizer: Literal["adamw", "adam", "sgd"] = option("adamw", "optimizer of a train sweep")
    dtype: Literal["fp32", "bf16", "fp16"] = option("fp32", "precision")
    latency_target: float | None = option(None, "stop auto batches past this P95 latency, seconds", minimum=1e-9)
    budget: float = option(120.0, "time budget of the sweep, seconds", minimum=1e-9, maximum=30 * 86_400.0)
    memory_cap: int | None = option(None, "fail allocations past this much more memory, bytes (an OOM test)",
                                    minimum=1)
    profile: bool = option(False, "profile one run per point (time per op kind)")
    threads: int | None = option(None, "torch CPU threads (set for the whole process)", minimum=1, maximum=4096)
    calibration: str | None = option(None, "calibration profile for the predictions (default: local, measured on "
                                           "first use)")
    prompt: int = option(128, "preset LLMs: prompt tokens timed for prefill", minimum=1)
    context: int = option(256, "preset LLMs: cached tokens at which decode is timed", minimum=1)
    backends: tuple[str, ...] | None = option(None, "compare backends instead of sweeping: eager, compile, "
                                                    "channels_last, onnxruntime (at the first batch size)")
    collectives: bool = option(False, "measure all-reduce / all-gather bus bandwidth instead")
    world_size: int = option(2, "collectives: local processes", minimum=2, maximum=1024)
    db: str | Path | None = option(None, "run database (default: the user data folder)")


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureResult:
    """A sweep (`sizeup.measure.sweep.SweepResult`: the run id, its status, every point) with the calibration
    its predictions came from."""

    sweep: Any
    calibration: str
    calibrated: bool

    @property
    def ok(self) -> bool:
        return self.sweep.status in ("ok", "interrupted")

    def to_dict(self) -> dict[str, Any]:
        return self.sweep.to_dict() | {"calibration": self.calibration, "calibrated": self.calibrated}


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendComparison:
    target: str
    batch: int
    device: str
    rows: tuple[dict[str, Any], ...]
    """Per backend: latency, throughput, peak memory, the largest difference from eager, set-up time."""

    ok = True

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "batch": self.batch, "device": self.device,
                "backends": [{k: v for k, v in r.items() if k != "traceback"} for r in self.rows]}


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectivesResult:
    run_id: int
    backend: str
    world_size: int
    points: tuple[dict[str, Any], ...]

    ok = True

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "backend": self.backend, "world_size": self.world_size,
                "points": list(self.points)}


def measure(target: str | None, options: MeasureOptions | None = None, /, *,
            progress: Callable[[str], None] | None = None, **changes: Any):
    """Run `target` (FILE.py:FACTORY or package.module:FACTORY, an nn.Module built with random weights; a preset
    LLM, prefill and decode; or MODEL.onnx through ONNX Runtime) on this machine and store every point; the
    keywords are `MeasureOptions`' fields; `progress` is told each point. Returns a `MeasureResult`
    (`BackendComparison` with `backends`, `CollectivesResult` with `collectives`, target None)."""
    from sizeup.api.options import build_options
    from sizeup.measure.harness import resolve_device

    o = build_options(MeasureOptions, options, changes, "measure")
    resolve_device(o.device)  # a bad device is reported before anything runs
    if o.threads:
        import torch

        torch.set_num_threads(o.threads)
    if o.collectives:
        return _collectives(o)
    if not target:
        raise MeasureError("sizeup measure needs a TARGET (FILE.py:FACTORY), or --collectives")
    onnx = target.lower().endswith(".onnx")
    if ":" not in target and not onnx:
        return _llm(target, o, progress)
    if o.backends:
        return _backends(target, o)
    if o.dims and not onnx:
        raise ConfigError(f"--dim {next(iter(o.dims))}: only for ONNX targets (MODEL.onnx); use --input for torch "
                          "models")
    return _sweep(target, o, progress)


def _profile(store, name: str | None, device: str):
    """The calibration profile `name` (default "local"); micro-benchmarks are measured on first use."""
    from sizeup.measure.calibrate import load_profile, local_device, microbenchmarks, profile_to_dict

    name = name or "local"
    try:
        return load_profile(store, name)
    except MeasureError:
        if name != "local":
            raise
    bench = microbenchmarks(device)
    store.save_calibration(name, device=device, profile=profile_to_dict(local_device(bench), None, None, bench, []),
                           source_runs=[])
    return load_profile(store, name)


def _sweep(target: str, o: MeasureOptions, progress) -> MeasureResult:
    from sizeup.api.flops import parse_input_specs, report_at
    from sizeup.measure.harness import apply_memory_cap
    from sizeup.measure.store import Store
    from sizeup.measure.sweep import SweepConfig, run_sweep
    from sizeup.price.roofline import price

    cfg = SweepConfig(target=target, inputs=tuple(parse_input_specs(o.inputs, o.input_specs)),
                      dims=tuple((o.dims or {}).items()), device=o.device, batches=o.batches, train=o.train,
                      grad_accumulation=o.grad_acc, latency_target_s=o.latency_target, budget_s=o.budget,
                      dtype=o.dtype, optimizer=o.optimizer, profile=o.profile)
    with Store(o.db) as store:
        profile = _profile(store, o.calibration, o.device)
        config = {"onnx": cfg.onnx, "dims": dict(cfg.dims), "dtype": o.dtype,
                  "inputs": [{"shape": list(i.shape), "dtype": i.dtype, "name": i.name} for i in cfg.inputs]}
        if cfg.onnx:
            from sizeup.measure.onnx_runner import load_onnx

            config["batch_dim"] = load_onnx(cfg.target, o.device, dict(cfg.dims)).batch_dim
        cache: dict[int, float] = {}

        def predict(batch: int) -> float:
            """Predicted time of one batch: the target's ledger at that batch priced with the profile."""
            if batch not in cache:
                report = report_at(target, config, batch, o.train)
                cache[batch] = price(report.ledger, profile.device, profile.efficiency).total_s.typical
            return cache[batch]

        if o.memory_cap:
            apply_memory_cap(o.memory_cap)
        result = run_sweep(cfg, store, predict=predict, progress=progress)
    return MeasureResult(sweep=result, calibration=profile.name, calibrated=profile.fitted)


def _llm(target: str, o: MeasureOptions, progress) -> MeasureResult:
    """A preset LLM with random weights: prefill (TTFT) and decode (TPOT) per batch size."""
    from sizeup.ingest.hf_config import load_model
    from sizeup.ingest.transformer_ops import Step, transformer_ledger
    from sizeup.measure.store import Store
    from sizeup.measure.sweep import LLMSweepConfig, run_llm_sweep
    from sizeup.price.roofline import price

    cfg = LLMSweepConfig(model=target, device=o.device, batches=o.batches or (1, 2, 4), prompt=o.prompt,
                         context=o.context, dtype=o.dtype, budget_s=o.budget)
    arch = load_model(target)
    with Store(o.db) as store:
        profile = _profile(store, o.calibration, o.device)

        def predict(phase: str, batch: int) -> float:
            step = Step(batch=batch, new_tokens=o.prompt, context=o.prompt, logits="last") if phase == "prefill" \
                else Step(batch=batch, new_tokens=1, context=o.context)
            ledger = transformer_ledger(arch, step, weights=o.dtype, act_dtype=o.dtype, per_layer=False)
            return price(ledger, profile.device, profile.efficiency).total_s.typical

        result = run_llm_sweep(cfg, store, predict=predict, progress=progress)
    return MeasureResult(sweep=result, calibration=profile.name, calibrated=profile.fitted)


def _backends(target: str, o: MeasureOptions) -> BackendComparison:
    from sizeup.api.flops import parse_input_specs
    from sizeup.ingest.target import load_factory
    from sizeup.measure.backends import compare_backends
    from sizeup.measure.harness import TimingPolicy

    inputs = parse_input_specs(o.inputs, o.input_specs)
    if not inputs:
        raise MeasureError("--backends needs --input or --input-spec")
    batch = o.batches[0] if o.batches else 1
    backends = [b.strip() for b in o.backends if b.strip()]
    results = compare_backends(load_factory(target), inputs, batch, backends, o.device,
                               TimingPolicy(point_budget_s=5.0))
    return BackendComparison(target=target, batch=batch, device=o.device,
                             rows=tuple(r.to_dict(batch) for r in results))


def _collectives(o: MeasureOptions) -> CollectivesResult:
    from sizeup.measure.collectives import measure_collectives
    from sizeup.measure.env import capture_environment
    from sizeup.measure.store import Store

    backend = "nccl" if o.device.startswith("cuda") else "gloo"
    rows = measure_collectives(world_size=o.world_size, backend=backend)
    with Store(o.db) as store:
        run_id = store.start_run(kind="collectives", target=f"{backend} x{o.world_size}", device=o.device,
                                 config={"world_size": o.world_size, "backend": backend},
                                 environment=capture_environment(o.device))
        for row in rows:
            store.add_point(run_id, batch=None, phase=row["op"], status="ok", samples_s=[row["time_s"]],
                            throughput_per_s=row["bus_bytes_per_s"], extra={"size_bytes": row["size_bytes"]})
        store.finish_run(run_id, "ok")
    return CollectivesResult(run_id=run_id, backend=backend, world_size=o.world_size, points=tuple(rows))
