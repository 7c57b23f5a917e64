"""`sizeup measure`: run a model on this machine over batch sizes (or backends, or collectives) and store every
point. `register` also registers `calibrate` and `compare`, which live in their own modules."""

from __future__ import annotations

import argparse
import sys

from sizeup.cli.flags import DURATION_S, SIZE_BYTES, SLA_S, TOKENS, exclusive
from sizeup.cli.measured import positive_ints
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
    from sizeup.cli.commands.measure_loader import add_loader_arguments

    add_loader_arguments(m)
    m.set_defaults(func=run_measure)

    from sizeup.cli.commands import calibrate, compare  # argparse only at import: cheap

    calibrate.register(sub)
    compare.register(sub)


def measure_options(args: argparse.Namespace):
    """The flags as `sizeup.api.MeasureOptions`."""
    from sizeup.api import MeasureOptions
    from sizeup.cli.commands.flops import parse_dims

    auto = args.batch.strip().lower() == "auto"
    return MeasureOptions(
        inputs=tuple(args.input), input_specs=tuple(args.input_spec), dims=parse_dims(args.dim) or None,
        device=args.device, batches=None if auto else positive_ints(args.batch, "--batch"), train=args.train,
        grad_acc=positive_ints(args.grad_acc, "--grad-acc"), optimizer=args.optimizer, dtype=args.dtype,
        latency_target=args.latency_target, budget=args.budget, memory_cap=args.memory_cap, profile=args.profile,
        threads=args.threads, calibration=args.calibration, prompt=args.prompt, context=args.context,
        backends=tuple(args.backends.split(",")) if args.backends else None, collectives=args.collectives,
        world_size=args.world_size, db=args.db)


def run_measure(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from sizeup.api import measure
    from sizeup.cli.db import warn
    from sizeup.cli.main import emit_json
    from sizeup.cli.progress import Progress

    if args.dataloader:
        from sizeup.cli.commands.measure_loader import run_loader

        return run_loader(args)
    options = measure_options(args)
    llm = bool(args.target) and ":" not in args.target and not args.target.lower().endswith(".onnx")
    sweep = not (args.collectives or args.backends or llm)
    timed = args.target and not (args.collectives or args.backends)
    with Progress(f"measuring {args.target}", budget_s=options.budget) if timed else nullcontext() as bar:
        result = measure(args.target, options, progress=bar.step if bar else None, warn=warn)
    if args.collectives and result.run_id is None:  # under torchrun, a rank other than 0: rank 0 stores and prints
        return 0
    if args.json:
        emit_json(result.to_dict())
    elif args.collectives:
        print(render_collectives(result))
    elif args.backends:
        print(render_backends(result))
    elif llm:
        print(render_llm(result, args))
    else:
        print(render_sweep(result, args))
    return 0 if not sweep or result.ok else 1


def render_sweep(result, args: argparse.Namespace) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    sweep = result.sweep
    rows = []
    for p in sweep.points:
        d = p.to_dict()
        rows.append([d["batch"] if not args.train else f"{d['batch']} x {d['grad_accumulation']}", d["status"],
                     format_seconds(d["latency_p50_s"]) if d["latency_p50_s"] else "",
                     format_seconds(d["latency_p95_s"]) if d["latency_p95_s"] else "",
                     format_seconds(d["latency_p99_s"]) if d["latency_p99_s"] else "",
                     f"{d['throughput_per_s']:,.1f}" if d["throughput_per_s"] else "",
                     format_bytes(d["peak_memory_bytes"]) if d["peak_memory_bytes"] else "",
                     format_seconds(d["predicted_s"]) if d["predicted_s"] else ""])
    lines = [render_table(["batch", "status", "P50", "P95", "P99", "samples/s", "peak memory", "predicted"], rows,
                          title=f"run {sweep.run_id}: {args.target} on {args.device} ({sweep.status})"),
             f"\nknee (P95 starts growing with the batch): {sweep.knee_batch()}; largest batch that ran: "
             f"{sweep.largest_before_oom()}"]
    if args.latency_target:
        lines.append(f"largest batch with P95 <= {format_seconds(args.latency_target)}: "
                     f"{sweep.largest_meeting(args.latency_target)}")
    for w in sweep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if any(p.result.status == "error" for p in sweep.points):
        print(f"some points failed: the tracebacks are stored (sizeup runs show {sweep.run_id})", file=sys.stderr)
    return "\n".join([*lines, *calibration_lines(result)])


def calibration_lines(result) -> list[str]:
    """Which calibration priced the predictions, and the notes of the fit it took."""
    if result.calibration is None:
        return ["no predictions: the database holding the calibration is away"]
    return [f"predictions from calibration {result.calibration!r} "
            f"({'fitted' if result.calibrated else 'micro-benchmarks only'})",
            *(f"calibration: {note}" for note in result.calibration_notes)]


def render_collectives(result) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    table = [[r["op"], format_bytes(r["size_bytes"]), format_seconds(r["time_s"]),
              f"{r['bus_bytes_per_s'] / 1e9:,.2f}"] for r in result.points]
    return render_table(["collective", "size", "time", "bus GB/s"], table,
                        title=f"run {result.run_id}: {result.backend}, {result.world_size} processes")


def render_llm(result, args: argparse.Namespace) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    rows = []
    for point, phase in zip(result.sweep.points, ["prefill", "decode"] * len(result.sweep.points)):
        d = point.to_dict()
        rows.append([d["batch"], phase, d["status"], format_seconds(d["latency_p50_s"]) if d["latency_p50_s"] else "",
                     format_seconds(d["latency_p95_s"]) if d["latency_p95_s"] else "",
                     format_seconds(d["predicted_s"]) if d["predicted_s"] else ""])
    return render_table(["batch", "phase", "status", "P50", "P95", "predicted"], rows,
                        title=f"run {result.sweep.run_id}: {args.target} on {args.device}, prompt {args.prompt}, "
                              f"decode at {args.context} cached tokens")


def render_backends(result) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    table = [[r["backend"], r["status"], format_seconds(r["latency_p50_s"]) if r["latency_p50_s"] else "",
              format_seconds(r["latency_p99_s"]) if r["latency_p99_s"] else "",
              f"{r['throughput_per_s']:,.1f}" if r["throughput_per_s"] else "",
              format_bytes(r["peak_memory_bytes"]) if r["peak_memory_bytes"] is not None else "",
              f"{r['max_abs_diff']:.2e}" if r["max_abs_diff"] is not None else "",
              format_seconds(r["setup_s"]) if r["setup_s"] else "", r["error"] or ""] for r in result.rows]
    return render_table(["backend", "status", "P50", "P99", "samples/s", "peak memory", "max |diff|", "setup", "note"],
                        table, title=f"{result.target}, batch {result.batch} on {result.device}")
