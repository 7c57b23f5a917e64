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
    db: str | Path | None = option(None, "run database: a path or a postgresql:// URL (default: $SIZEUP_DB, else the "
                                         "user data folder)")


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureResult:
    """A sweep (`sizeup.measure.sweep.SweepResult`: the run id, its status, every point) with the calibration
    its predictions came from (None: the database holding it was away, and nothing was predicted)."""

    sweep: Any
    calibration: str | None
    calibrated: bool
    calibration_notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.sweep.status in ("ok", "interrupted")

    def to_dict(self) -> dict[str, Any]:
        return self.sweep.to_dict() | {"calibration": self.calibration, "calibrated": self.calibrated,
                                       "calibration_notes": list(self.calibration_notes)}


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
    run_id: int | None
    """None in a torchrun process other than rank 0 (rank 0 stores the run)."""
    backend: str
    world_size: int
    points: tuple[dict[str, Any], ...]

    ok = True

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "backend": self.backend, "world_size": self.world_size,
                "points": list(self.points)}


def measure(target: str | None, options: MeasureOptions | None = None, /, *,
            progress: Callable[[str], None] | None = None, warn: Callable[[str], None] | None = None,
            **changes: Any):
    """Run `target` (FILE.py:FACTORY or package.module:FACTORY, an nn.Module built with random weights; a preset
    LLM, prefill and decode; or MODEL.onnx through ONNX Runtime) on this machine and store every point; the
    keywords are `MeasureOptions`' fields; `progress` is told each point; `warn` is told when the database server
    is away (runs then go to the local spool; default: a Python warning). Returns a `MeasureResult`
    (`BackendComparison` with `backends`, `CollectivesResult` with `collectives`, target None)."""
    from sizeup.api.options import build_options
    from sizeup.api.run_store import python_warning
    from sizeup.measure.harness import resolve_device

    o = build_options(MeasureOptions, options, changes, "measure")
    resolve_device(o.device)  # a bad device is reported before anything runs
    if o.threads:
        import torch

        torch.set_num_threads(o.threads)
    warn = warn or python_warning
    if o.collectives:
        return _collectives(o, warn)
    if not target:
        raise MeasureError("sizeup measure needs a TARGET (FILE.py:FACTORY), or --collectives")
    onnx = target.lower().endswith(".onnx")
    if ":" not in target and not onnx:
        return _llm(target, o, progress, warn)
    if o.backends:
        return _backends(target, o)
    if o.dims and not onnx:
        raise ConfigError(f"--dim {next(iter(o.dims))}: only for ONNX targets (MODEL.onnx); use --input for torch "
                          "models")
    return _sweep(target, o, progress, warn)



def _profile(store, name: str | None, device: str, kind: str, engine: str, warn):
    """The profile the predictions are priced with: from `name` (default "local"), its fit of the workload `kind`
    and `engine` where it has one, else its measured peaks (measure.profiles.choose_profile); the micro-benchmarks
    are measured on first use. None when the database holding it is away (the run then goes to the spool, without
    predictions)."""
    from sizeup.measure.calibrate import local_device, microbenchmarks, profile_to_dict
    from sizeup.measure.profiles import Workload, choose_profile
    from sizeup.store.postgres import StoreUnavailable

    try:
        if name is None and "local" not in store.calibrations():
            bench = microbenchmarks(device)
            store.save_calibration("local", device=device, source_runs=[],
                                   profile=profile_to_dict(local_device(bench), None, None, bench, []))
        return choose_profile(store, name or "local", Workload(kind=kind, engine=engine), implicit=name is None)
    except StoreUnavailable:
        warn("no predictions: the database holding the calibration profile is away")
        return None


def _result(sweep, profile) -> MeasureResult:
    if profile is None:
        return MeasureResult(sweep=sweep, calibration=None, calibrated=False)
    return MeasureResult(sweep=sweep, calibration=profile.name, calibrated=profile.fitted,
                         calibration_notes=tuple(profile.notes))


def _sweep(target: str, o: MeasureOptions, progress, warn) -> MeasureResult:
    from sizeup.api.flops import parse_input_specs, report_at
    from sizeup.measure.harness import apply_memory_cap
    from sizeup.measure.sweep import SweepConfig, run_sweep
    from sizeup.price.roofline import price
    from sizeup.store import open_store

    cfg = SweepConfig(target=target, inputs=tuple(parse_input_specs(o.inputs, o.input_specs)),
                      dims=tuple((o.dims or {}).items()), device=o.device, batches=o.batches, train=o.train,
                      grad_accumulation=o.grad_acc, latency_target_s=o.latency_target, budget_s=o.budget,
                      dtype=o.dtype, optimizer=o.optimizer, profile=o.profile)
    with open_store(o.db, on_spool=warn) as store:  # a bad db is refused before the model is read
        config = {"onnx": cfg.onnx, "dims": dict(cfg.dims), "dtype": o.dtype,
                  "inputs": [{"shape": list(i.shape), "dtype": i.dtype, "name": i.name} for i in cfg.inputs]}
        if cfg.onnx:
            from sizeup.measure.onnx_runner import load_onnx

            config["batch_dim"] = load_onnx(cfg.target, o.device, dict(cfg.dims)).batch_dim
        workload_class = _traced_class(target, config, o.batches, o.train)
        profile = _profile(store, o.calibration, o.device, "train" if o.train else "vision",
                           "onnxruntime" if cfg.onnx else "torch", warn)
        cache: dict[int, float] = {}

        def predict(batch: int) -> float:
            """Predicted time of one batch: the target's ledger at that batch priced with the profile."""
            if batch not in cache:
                report = report_at(target, config, batch, o.train)
                cache[batch] = price(report.ledger, profile.device, profile.efficiency).total_s.typical
            return cache[batch]

        if o.memory_cap:
            apply_memory_cap(o.memory_cap)
        result = run_sweep(cfg, store, predict=predict if profile is not None else None, progress=progress,
                           provenance={"workload_class": workload_class})
    return _result(result, profile)


def _traced_class(target: str, config: dict, batches, train: bool) -> str:
    """The workload class of a traced model's sweep (measure.profiles.ledger_class), from its ledger at the first
    batch: recorded with the run, and the class of the profile that predicts it."""
    if train:
        return "train-step"
    from sizeup.measure.ledgers import run_ledger
    from sizeup.measure.profiles import ledger_class

    return ledger_class(run_ledger(target, config, (batches or (1,))[0]))


def _llm(target: str, o: MeasureOptions, progress, warn) -> MeasureResult:
    """A preset LLM with random weights: prefill (TTFT) and decode (TPOT) per batch size."""
    from sizeup.ingest.hf_config import load_model
    from sizeup.measure.ledgers import llm_ledger
    from sizeup.measure.sweep import LLMSweepConfig, run_llm_sweep
    from sizeup.price.roofline import price
    from sizeup.store import open_store

    cfg = LLMSweepConfig(model=target, device=o.device, batches=o.batches or (1, 2, 4), prompt=o.prompt,
                         context=o.context, dtype=o.dtype, budget_s=o.budget)
    arch = load_model(target)
    with open_store(o.db, on_spool=warn) as store:
        profile = _profile(store, o.calibration, o.device, "llm", "torch", warn)

        def predict(phase: str, batch: int) -> float:
            ledger = llm_ledger(arch, phase, batch, o.prompt, o.context, o.dtype)
            return price(ledger, profile.device, profile.efficiency).total_s.typical

        result = run_llm_sweep(cfg, store, predict=predict if profile is not None else None, progress=progress)
    return _result(result, profile)


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


def _collectives(o: MeasureOptions, warn) -> CollectivesResult:
    import os

    from sizeup.measure.collectives import measure_collectives
    from sizeup.measure.env import capture_environment
    from sizeup.measure.provenance import capture_provenance
    from sizeup.store import open_store

    backend = "nccl" if o.device.startswith("cuda") else "gloo"
    rows = measure_collectives(world_size=o.world_size, backend=backend)
    world_size = int(os.environ.get("WORLD_SIZE", o.world_size))
    if int(os.environ.get("RANK", "0")) != 0:  # under torchrun: rank 0 measured and stores the run
        return CollectivesResult(run_id=None, backend=backend, world_size=world_size, points=tuple(rows))
    with open_store(o.db, on_spool=warn) as store:
        config, environment = {"world_size": world_size, "backend": backend}, capture_environment(o.device)
        target = f"{backend} x{world_size}"
        run_id = store.start_run(kind="collectives", target=target, device=o.device, config=config,
                                 environment=environment,
                                 provenance=capture_provenance("collectives", target, config, environment,
                                                               engine=backend))
        for row in rows:
            store.add_point(run_id, batch=None, phase=row["op"], status="ok", samples_s=[row["time_s"]],
                            throughput_per_s=row["bus_bytes_per_s"], extra={"size_bytes": row["size_bytes"]})
        store.finish_run(run_id, "ok")
    return CollectivesResult(run_id=run_id, backend=backend, world_size=world_size, points=tuple(rows))
