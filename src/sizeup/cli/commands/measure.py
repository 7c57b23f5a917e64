"""`sizeup measure`: run a model on this machine over batch sizes (or backends, or collectives) and store every
point. `register` also registers `calibrate` and `compare`, which live in their own modules."""

from __future__ import annotations

import argparse
import sys

from sizeup.cli.flags import DURATION_S, SIZE_BYTES, SLA_S, TOKENS, exclusive
from sizeup.cli.measured import positive_ints, report_at
from sizeup.units import number_flag


def _db(p: argparse.ArgumentParser) -> None:
    from sizeup.cli.db import add_db_argument

    add_db_argument(p)


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("measure", help="run a model on this machine over batch sizes and store every point",
                       description="TARGET is FILE.py:FACTORY or package.module:FACTORY (an nn.Module), built "
                                   "with random weights, a preset LLM, or MODEL.onnx (run by ONNX Runtime).")
    m.add_argument("target", nargs="?", help="FILE.py:FACTORY, MODEL.onnx, or a preset LLM (llama-3.2-1b, "
                                              "qwen2.5-0.5b…) for prefill and decode; omit with --collectives")
    m.add_argument("--input", action="append", default=[], metavar="SHAPE",
                   help="float input shape; the leading dimension is replaced by each batch size")
    m.add_argument("--input-spec", action="append", default=[], metavar="SPEC", help="[NAME=]DTYPE:SHAPE")
    m.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                   help="MODEL.onnx: size of a symbolic dimension other than the batch (repeatable)")
    m.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or mps (default cpu)")
    m.add_argument("--batch", default="auto", help="batch sizes like 1,2,4,8, or auto (powers of two until OOM, "
                                                  "the latency target or the budget)")
    m.add_argument("--train", action="store_true", help="time optimizer steps instead of inference")
    m.add_argument("--grad-acc", default="1", help="gradient accumulation steps to sweep with --train (e.g. 1,2,4)")
    m.add_argument("--optimizer", default="adamw", choices=["adamw", "adam", "sgd"])
    m.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    m.add_argument("--latency-target", type=SLA_S, help="stop auto batches past this P95 latency (e.g. 200ms)")
    m.add_argument("--budget", type=DURATION_S, default="120s", help="time budget of the sweep (default 120s)")
    m.add_argument("--memory-cap", type=SIZE_BYTES,
                   help="fail allocations past this much more memory (e.g. 2GiB): an OOM test")
    m.add_argument("--profile", action="store_true", help="profile one run per point (time per op kind)")
    m.add_argument("--threads", type=number_flag(integer=True, minimum=1, maximum=4096),
                   help="torch CPU threads (default: torch's); with 1, each repetition's CPU time is stored too, "
                        "which load from other processes does not add to")
    m.add_argument("--calibration", default=None, help="calibration profile for the predictions (default: local)")
    m.add_argument("--prompt", type=TOKENS, default=128, help="preset LLMs: prompt tokens timed for prefill")
    m.add_argument("--context", type=TOKENS, default=256, help="preset LLMs: cached tokens at which decode is timed")
    m.add_argument("--backends", metavar="B,B,…",
                   help="compare backends instead of sweeping: eager, compile, channels_last, onnxruntime "
                        "(at the first --batch size)")
    m.add_argument("--collectives", action="store_true",
                   help="measure all-reduce / all-gather bus bandwidth instead (gloo on CPU, nccl on GPUs; "
                        "run under torchrun, or spawns --world-size local processes)")
    m.add_argument("--world-size", type=number_flag(integer=True, minimum=2, maximum=1024), default=2)
    m.add_argument("--json", action="store_true")
    _db(m)
    exclusive(m, "--collectives", "target", "--collectives measures the links, not a model")
    exclusive(m, "--collectives", "--backends", "--collectives measures the links, not a model's backends")
    exclusive(m, "--backends", "--train", "--backends compares inference backends")
    m.set_defaults(func=run_measure)

    from sizeup.cli.commands import calibrate, compare  # argparse only at import: cheap

    calibrate.register(sub)
    compare.register(sub)


def _profile(store, name: str | None, device: str, kind: str, engine: str):
    """The profile the predictions are priced with: from `name` (default "local"), its fit of the workload
    `kind` and `engine` where it has one, else its measured peaks (measure.profiles.choose_profile); the
    micro-benchmarks are measured on first use. None when the database holding it is away (the run then goes
    to the spool, without predictions)."""
    from sizeup.measure.calibrate import local_device, microbenchmarks, profile_to_dict
    from sizeup.measure.profiles import Workload, choose_profile
    from sizeup.store.postgres import StoreUnavailable

    chosen = name or "local"
    try:
        if name is None and "local" not in store.calibrations():
            bench = microbenchmarks(device)
            store.save_calibration("local", device=device, source_runs=[],
                                   profile=profile_to_dict(local_device(bench), None, None, bench, []))
        return choose_profile(store, chosen, Workload(kind=kind, engine=engine), implicit=name is None)
    except StoreUnavailable:
        print("warning: no predictions: the database holding the calibration profile is away", file=sys.stderr)
        return None


def _predictor(target: str, config: dict, profile, train: bool = False):
    """Predicted time of one batch: the target's ledger at that batch priced with the profile."""
    from sizeup.price.roofline import price

    cache: dict[int, float] = {}

    def predict(batch: int) -> float:
        if batch not in cache:
            report = report_at(target, config, batch, train)
            cache[batch] = price(report.ledger, profile.device, profile.efficiency).total_s.typical
        return cache[batch]

    return predict


def run_measure(args: argparse.Namespace) -> int:
    from sizeup.api import parse_input_specs
    from sizeup.cli.main import emit_json
    from sizeup.measure.harness import apply_memory_cap, resolve_device
    from sizeup.cli.db import open_writer
    from sizeup.measure.sweep import SweepConfig, run_sweep
    from sizeup.report.terminal import render_table
    from sizeup.cli.progress import Progress
    from sizeup.units import format_bytes, format_seconds

    resolve_device(args.device)  # a bad device is reported before anything runs
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    if args.collectives:
        return run_collectives(args)
    if not args.target:
        from sizeup.errors import MeasureError

        raise MeasureError("sizeup measure needs a TARGET (FILE.py:FACTORY), or --collectives")
    onnx = args.target.lower().endswith(".onnx")
    if ":" not in args.target and not onnx:
        return run_llm(args)
    if args.backends:
        return run_backends(args)
    if args.dim and not onnx:
        from sizeup.errors import ConfigError

        raise ConfigError(f"--dim {args.dim[0]}: only for ONNX targets (MODEL.onnx); use --input for torch models")
    from sizeup.cli.commands.flops import parse_dims

    batches = None if args.batch.strip().lower() == "auto" else positive_ints(args.batch, "--batch")
    cfg = SweepConfig(target=args.target, inputs=tuple(parse_input_specs(args.input, args.input_spec)),
                      dims=tuple(parse_dims(args.dim).items()),
                      device=args.device, batches=batches, train=args.train,
                      grad_accumulation=positive_ints(args.grad_acc, "--grad-acc"),
                      latency_target_s=args.latency_target, budget_s=args.budget, dtype=args.dtype, optimizer=args.optimizer,
                      profile=args.profile)
    with open_writer(args.db) as store:  # a bad --db is refused before the model is read
        config = {"onnx": cfg.onnx, "dims": dict(cfg.dims), "dtype": args.dtype,
                  "inputs": [{"shape": list(i.shape), "dtype": i.dtype, "name": i.name} for i in cfg.inputs]}
        if cfg.onnx:
            from sizeup.measure.onnx_runner import load_onnx

            config["batch_dim"] = load_onnx(cfg.target, args.device, dict(cfg.dims)).batch_dim
        workload_class = _traced_class(args.target, config, batches, args.train)
        profile = _profile(store, args.calibration, args.device, "train" if args.train else "vision",
                           "onnxruntime" if cfg.onnx else "torch")
        predict = _predictor(args.target, config, profile, train=args.train) if profile is not None else None
        if args.memory_cap:
            apply_memory_cap(args.memory_cap)
        with Progress(f"measuring {args.target}", budget_s=cfg.budget_s) as bar:
            result = run_sweep(cfg, store, predict=predict, progress=bar.step,
                               provenance={"workload_class": workload_class})
    if args.json:
        emit_json(result.to_dict() | _calibration_keys(profile))
        return 0 if result.status in ("ok", "interrupted") else 1
    rows = []
    for p in result.points:
        d = p.to_dict()
        rows.append([d["batch"] if not args.train else f"{d['batch']} x {d['grad_accumulation']}", d["status"],
                     format_seconds(d["latency_p50_s"]) if d["latency_p50_s"] else "",
                     format_seconds(d["latency_p95_s"]) if d["latency_p95_s"] else "",
                     format_seconds(d["latency_p99_s"]) if d["latency_p99_s"] else "",
                     f"{d['throughput_per_s']:,.1f}" if d["throughput_per_s"] else "",
                     format_bytes(d["peak_memory_bytes"]) if d["peak_memory_bytes"] else "",
                     format_seconds(d["predicted_s"]) if d["predicted_s"] else ""])
    print(render_table(["batch", "status", "P50", "P95", "P99", "samples/s", "peak memory", "predicted"], rows,
                       title=f"run {result.run_id}: {args.target} on {args.device} ({result.status})"))
    print(f"\nknee (P95 starts growing with the batch): {result.knee_batch()}; largest batch that ran: "
          f"{result.largest_before_oom()}")
    if cfg.latency_target_s:
        print(f"largest batch with P95 <= {format_seconds(cfg.latency_target_s)}: "
              f"{result.largest_meeting(cfg.latency_target_s)}")
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if any(p.result.status == "error" for p in result.points):
        print(f"some points failed: the tracebacks are stored (sizeup runs show {result.run_id})", file=sys.stderr)
    _print_calibration(profile)
    return 0 if result.status in ("ok", "interrupted") else 1


def _traced_class(target: str, config: dict, batches, train: bool) -> str:
    """The workload class of a traced model's sweep (measure.profiles.ledger_class), from its ledger at the
    first batch: recorded with the run, and the class of the profile that predicts it."""
    if train:
        return "train-step"
    from sizeup.measure.ledgers import run_ledger
    from sizeup.measure.profiles import ledger_class

    return ledger_class(run_ledger(target, config, (batches or (1,))[0]))


def _calibration_keys(profile) -> dict:
    if profile is None:
        return {"calibration": None, "calibrated": False, "calibration_notes": []}
    return {"calibration": profile.name, "calibrated": profile.fitted, "calibration_notes": list(profile.notes)}


def _print_calibration(profile) -> None:
    if profile is None:
        print("no predictions: the database holding the calibration is away")
        return
    print(f"predictions from calibration {profile.name!r} ({'fitted' if profile.fitted else 'micro-benchmarks only'})")
    for note in profile.notes:
        print(f"calibration: {note}")


def run_collectives(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.measure.collectives import measure_collectives
    from sizeup.measure.env import capture_environment
    from sizeup.cli.db import open_writer
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    import os

    backend = "nccl" if args.device.startswith("cuda") else "gloo"
    rows = measure_collectives(world_size=args.world_size, backend=backend)
    if int(os.environ.get("RANK", "0")) != 0:  # under torchrun: rank 0 measured and stores the run
        return 0
    if "WORLD_SIZE" in os.environ:
        args.world_size = int(os.environ["WORLD_SIZE"])
    with open_writer(args.db) as store:
        from sizeup.measure.provenance import capture_provenance

        config, environment = {"world_size": args.world_size, "backend": backend}, capture_environment(args.device)
        target = f"{backend} x{args.world_size}"
        run_id = store.start_run(kind="collectives", target=target, device=args.device, config=config,
                                 environment=environment,
                                 provenance=capture_provenance("collectives", target, config, environment,
                                                               engine=backend))
        for row in rows:
            store.add_point(run_id, batch=None, phase=row["op"], status="ok", samples_s=[row["time_s"]],
                            throughput_per_s=row["bus_bytes_per_s"], extra={"size_bytes": row["size_bytes"]})
        store.finish_run(run_id, "ok")
    if args.json:
        emit_json({"run_id": run_id, "backend": backend, "world_size": args.world_size, "points": rows})
        return 0
    table = [[r["op"], format_bytes(r["size_bytes"]), format_seconds(r["time_s"]),
              f"{r['bus_bytes_per_s'] / 1e9:,.2f}"] for r in rows]
    print(render_table(["collective", "size", "time", "bus GB/s"], table,
                       title=f"run {run_id}: {backend}, {args.world_size} processes"))
    return 0


def run_llm(args: argparse.Namespace) -> int:
    """A preset LLM with random weights: prefill (TTFT) and decode (TPOT) per batch size."""
    from sizeup.cli.main import emit_json
    from sizeup.ingest.hf_config import load_model
    from sizeup.ingest.transformer_ops import Step, transformer_ledger
    from sizeup.cli.db import open_writer
    from sizeup.measure.sweep import LLMSweepConfig, run_llm_sweep
    from sizeup.price.roofline import price
    from sizeup.report.terminal import render_table
    from sizeup.cli.progress import Progress
    from sizeup.units import format_seconds

    batches = (1, 2, 4) if args.batch.strip().lower() == "auto" else positive_ints(args.batch, "--batch")
    cfg = LLMSweepConfig(model=args.target, device=args.device, batches=batches, prompt=args.prompt,
                         context=args.context, dtype=args.dtype, budget_s=args.budget)
    arch = load_model(args.target)
    with open_writer(args.db) as store:
        profile = _profile(store, args.calibration, args.device, "llm", "torch")

        def predict(phase: str, batch: int) -> float:
            step = Step(batch=batch, new_tokens=args.prompt, context=args.prompt, logits="last") if phase == "prefill" \
                else Step(batch=batch, new_tokens=1, context=args.context)
            weights = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16"}[args.dtype]
            ledger = transformer_ledger(arch, step, weights=weights, act_dtype=args.dtype, per_layer=False)
            return price(ledger, profile.device, profile.efficiency).total_s.typical

        with Progress(f"measuring {args.target}", budget_s=cfg.budget_s) as bar:
            result = run_llm_sweep(cfg, store, predict=predict if profile is not None else None, progress=bar.step)
    if args.json:
        emit_json(result.to_dict() | _calibration_keys(profile))
        return 0
    rows = []
    for point, phase in zip(result.points, ["prefill", "decode"] * len(result.points)):
        d = point.to_dict()
        rows.append([d["batch"], phase, d["status"], format_seconds(d["latency_p50_s"]) if d["latency_p50_s"] else "",
                     format_seconds(d["latency_p95_s"]) if d["latency_p95_s"] else "",
                     format_seconds(d["predicted_s"]) if d["predicted_s"] else ""])
    print(render_table(["batch", "phase", "status", "P50", "P95", "predicted"], rows,
                       title=f"run {result.run_id}: {args.target} on {args.device}, prompt {args.prompt}, "
                             f"decode at {args.context} cached tokens"))
    return 0


def run_backends(args: argparse.Namespace) -> int:
    from sizeup.api import parse_input_specs
    from sizeup.cli.main import emit_json
    from sizeup.ingest.target import load_factory
    from sizeup.measure.backends import compare_backends
    from sizeup.measure.harness import TimingPolicy
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    inputs = parse_input_specs(args.input, args.input_spec)
    if not inputs:
        from sizeup.errors import MeasureError

        raise MeasureError("--backends needs --input or --input-spec")
    batch = 1 if args.batch.strip().lower() == "auto" else positive_ints(args.batch, "--batch")[0]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results = compare_backends(load_factory(args.target), inputs, batch, backends, args.device,
                               TimingPolicy(point_budget_s=5.0))
    rows = [r.to_dict(batch) for r in results]
    if args.json:
        emit_json({"target": args.target, "batch": batch, "device": args.device,
                   "backends": [{k: v for k, v in r.items() if k != "traceback"} for r in rows]})
        return 0
    table = [[r["backend"], r["status"], format_seconds(r["latency_p50_s"]) if r["latency_p50_s"] else "",
              format_seconds(r["latency_p99_s"]) if r["latency_p99_s"] else "",
              f"{r['throughput_per_s']:,.1f}" if r["throughput_per_s"] else "",
              format_bytes(r["peak_memory_bytes"]) if r["peak_memory_bytes"] is not None else "",
              f"{r['max_abs_diff']:.2e}" if r["max_abs_diff"] is not None else "",
              format_seconds(r["setup_s"]) if r["setup_s"] else "", r["error"] or ""] for r in rows]
    print(render_table(["backend", "status", "P50", "P99", "samples/s", "peak memory", "max |diff|", "setup", "note"],
                       table, title=f"{args.target}, batch {batch} on {args.device}"))
    return 0
