"""`sizeup measure`, `sizeup calibrate` and `sizeup compare`: measure on this machine, fit its real
efficiency, and show where the estimate was wrong."""

from __future__ import annotations

import argparse
import sys

from sizeup.report.terminal import render_table
from sizeup.units import format_bytes, format_seconds


def _db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="run database (default: the user data folder)")


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
    m.add_argument("--latency-target", help="stop auto batches past this P95 latency (e.g. 200ms)")
    m.add_argument("--budget", default="120s", help="time budget of the sweep (default 120s)")
    m.add_argument("--memory-cap", help="fail allocations past this much more memory (e.g. 2GiB): an OOM test")
    m.add_argument("--profile", action="store_true", help="profile one run per point (time per op kind)")
    m.add_argument("--calibration", default=None, help="calibration profile for the predictions (default: local)")
    m.add_argument("--prompt", type=int, default=128, help="preset LLMs: prompt tokens timed for prefill")
    m.add_argument("--context", type=int, default=256, help="preset LLMs: cached tokens at which decode is timed")
    m.add_argument("--backends", metavar="B,B,…",
                   help="compare backends instead of sweeping: eager, compile, channels_last, onnxruntime "
                        "(at the first --batch size)")
    m.add_argument("--collectives", action="store_true",
                   help="measure all-reduce / all-gather bus bandwidth instead (gloo on CPU, nccl on GPUs; "
                        "run under torchrun, or spawns --world-size local processes)")
    m.add_argument("--world-size", type=int, default=2)
    m.add_argument("--json", action="store_true")
    _db(m)
    m.set_defaults(func=run_measure)

    c = sub.add_parser("calibrate", help="fit this device's efficiency from micro-benchmarks and stored runs")
    c.add_argument("--quick", action="store_true", help="(re)measure the micro-benchmarks: GEMM sweep and copy")
    c.add_argument("--runs", help="run ids to fit to (default: every finished inference run on this device)")
    c.add_argument("--name", default="local", help="profile name (default local)")
    c.add_argument("--device", default="cpu")
    c.add_argument("--json", action="store_true")
    _db(c)
    c.set_defaults(func=run_calibrate)

    k = sub.add_parser("compare", help="predicted against measured, term by term, for a stored run")
    k.add_argument("run_id", type=int)
    k.add_argument("--calibration", default="local")
    k.add_argument("--sla", metavar="SCENARIO.yaml",
                   help="load-test runs: the scenario whose SLA the run is checked against (default: the one "
                        "given to 'sizeup load --sla')")
    k.add_argument("--json", action="store_true")
    _db(k)
    k.set_defaults(func=run_compare)


def _ints(text: str, what: str) -> tuple[int, ...]:
    from sizeup.errors import MeasureError

    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise MeasureError(f"{what} {text!r}: expected integers like 1,2,4") from None
    if not values or min(values) < 1:
        raise MeasureError(f"{what} {text!r}: every value must be a positive integer")
    return values


def _bytes(text: str) -> int:
    import re

    from sizeup.errors import ConfigError
    from sizeup.units import GIB, KIB, MIB

    match = re.fullmatch(r"\s*([0-9.]+)\s*(gib|gb|mib|mb|kib|kb|b)?\s*", str(text).lower())
    if not match:
        raise ConfigError(f"--memory-cap {text!r}: expected a size like 2GiB or 512MiB")
    scale = {"gib": GIB, "gb": 10**9, "mib": MIB, "mb": 10**6, "kib": KIB, "kb": 10**3, "b": 1, None: 1}
    return int(float(match.group(1)) * scale[match.group(2)])


def _profile(store, name: str | None, device: str):
    """The calibration profile `name` (default "local"); micro-benchmarks are measured on first use."""
    from sizeup.errors import MeasureError
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


def _report_at(target: str, config: dict, batch: int, train: bool = False):
    """The cost report of a measured target at one batch size: the torch trace with the inputs'
    leading dimension set to the batch, or the ONNX graph with its batch dimension bound."""
    from sizeup.api import ParsedInput, count_flops, count_onnx

    if config.get("onnx"):
        dims = dict(config.get("dims") or {})
        if config.get("batch_dim"):
            dims[config["batch_dim"]] = batch
        return count_onnx(target, dims=dims)
    inputs = [ParsedInput(shape=(batch, *i["shape"][1:]), dtype=i["dtype"], name=i["name"]) for i in config["inputs"]]
    return count_flops(target, inputs, dtype=config.get("dtype", "fp32"), mode="train" if train else "inference")


def _predictor(target: str, config: dict, profile, train: bool = False):
    """Predicted time of one batch: the target's ledger at that batch priced with the profile."""
    from sizeup.price.roofline import price

    cache: dict[int, float] = {}

    def predict(batch: int) -> float:
        if batch not in cache:
            report = _report_at(target, config, batch, train)
            cache[batch] = price(report.ledger, profile.device, profile.efficiency).total_s.typical
        return cache[batch]

    return predict


def run_measure(args: argparse.Namespace) -> int:
    from sizeup.api import parse_input_specs
    from sizeup.cli.main import emit_json
    from sizeup.measure.harness import apply_memory_cap, resolve_device
    from sizeup.measure.store import Store
    from sizeup.measure.sweep import SweepConfig, run_sweep
    from sizeup.units import parse_duration_s

    resolve_device(args.device)  # a bad device is reported before anything runs
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

    batches = None if args.batch.strip().lower() == "auto" else _ints(args.batch, "--batch")
    cfg = SweepConfig(target=args.target, inputs=tuple(parse_input_specs(args.input, args.input_spec)),
                      dims=tuple(parse_dims(args.dim).items()),
                      device=args.device, batches=batches, train=args.train,
                      grad_accumulation=_ints(args.grad_acc, "--grad-acc"),
                      latency_target_s=parse_duration_s(args.latency_target) if args.latency_target else None,
                      budget_s=parse_duration_s(args.budget), dtype=args.dtype, optimizer=args.optimizer,
                      profile=args.profile)
    with Store(args.db) as store:
        profile = _profile(store, args.calibration, args.device)
        config = {"onnx": cfg.onnx, "dims": dict(cfg.dims), "dtype": args.dtype,
                  "inputs": [{"shape": list(i.shape), "dtype": i.dtype, "name": i.name} for i in cfg.inputs]}
        if cfg.onnx:
            from sizeup.measure.onnx_runner import load_onnx

            config["batch_dim"] = load_onnx(cfg.target, args.device, dict(cfg.dims)).batch_dim
        predict = _predictor(args.target, config, profile, train=args.train)
        if args.memory_cap:
            apply_memory_cap(_bytes(args.memory_cap))
        quiet = args.json or not sys.stderr.isatty()
        result = run_sweep(cfg, store, predict=predict,
                           progress=None if quiet else (lambda text: print(f"measuring {text}…", file=sys.stderr)))
    if args.json:
        emit_json(result.to_dict() | {"calibration": profile.name, "calibrated": profile.fitted})
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
    print(f"predictions from calibration {profile.name!r} ({'fitted' if profile.fitted else 'micro-benchmarks only'})")
    return 0 if result.status in ("ok", "interrupted") else 1


def _observations(store, run_ids, profile):
    """(traced ledger at the batch, measured median) for every ok inference point of the runs."""
    observations, held = [], []
    for run_id in run_ids:
        run = store.run(run_id)
        if run.kind != "inference" or run.config.get("llm"):
            continue
        for point in run.points:
            if point.status != "ok" or not point.latency_p50_s:
                continue
            ledger = _report_at(run.target, run.config, point.batch).ledger
            observations.append((ledger, point.latency_p50_s))
            held.append((run_id, point.batch))
    return observations, held


def run_calibrate(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import MeasureError
    from sizeup.measure.calibrate import fit_efficiency, load_profile, local_device, microbenchmarks, profile_to_dict
    from sizeup.measure.store import Store

    with Store(args.db) as store:
        if args.quick or args.name not in store.calibrations():
            bench = microbenchmarks(args.device)
        else:
            bench = store.calibration(args.name)["profile"]["bench"]
        device = local_device(bench)
        if args.runs:
            run_ids = list(_ints(args.runs, "--runs"))
        else:
            run_ids = [r.id for r in store.runs(kind="inference") if r.status in ("ok", "interrupted")]
        values = residual = None
        if run_ids and not (args.quick and not args.runs):
            observations, _ = _observations(store, run_ids, None)
            if observations:
                from sizeup.measure.calibrate import size_curve

                values, residual = fit_efficiency(device, observations, size_curve(bench))
        elif not args.quick:
            raise MeasureError("nothing to calibrate on: measure a model first (sizeup measure) or use --quick")
        store.save_calibration(args.name, device=args.device,
                               profile=profile_to_dict(device, values, residual, bench, run_ids if values else []),
                               source_runs=run_ids if values else [])
        profile = load_profile(store, args.name)
    data = {"name": args.name, "bench": bench, "fitted": values, "residual_median": residual,
            "runs": run_ids if values else []}
    if args.json:
        emit_json(data)
        return 0
    print(f"calibration {args.name!r}: GEMM {bench['matmul_flops_per_s'] / 1e9:,.1f} GFLOP/s, copy "
          f"{bench['copy_bytes_per_s'] / 1e9:,.1f} GB/s")
    if values:
        rows = [[k, f"{v:.3g}" if k != "overhead_s" else format_seconds(v)] for k, v in values.items()]
        print(render_table(["efficiency (vs measured peaks)", "fitted"], rows))
        print(f"fit: median error {residual:.1%} over {len(run_ids)} run(s)")
    print(f"profile {profile.name!r} saved ({'fitted' if profile.fitted else 'micro-benchmarks only'})")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.measure.calibrate import load_profile, uncalibrated_efficiency
    from sizeup.measure.store import Store
    from sizeup.price.roofline import price

    with Store(args.db) as store:
        run = store.run(args.run_id)
        if run.kind == "load":
            return _compare_load(run, args)
        if run.kind not in ("inference", "train"):
            from sizeup.errors import MeasureError

            raise MeasureError(f"run {run.id} is a {run.kind} run: nothing was predicted for it "
                               f"(see sizeup runs show {run.id})")
        profile = load_profile(store, args.calibration)
    if run.config.get("llm"):
        return _compare_llm(run, profile, args)
    rows, kinds_total = [], {}
    for point in run.points:
        if point.status != "ok" or not point.latency_p50_s:
            continue
        report = _report_at(run.target, run.config, point.batch, train=run.kind == "train")
        roof = price(report.ledger, profile.device, profile.efficiency)
        raw = price(report.ledger, profile.device, uncalibrated_efficiency(profile.device.kind,
                                                                           profile.data.get("bench")))
        accumulation = point.grad_accumulation or 1
        predicted = roof.total_s.typical * accumulation
        by_kind = {k: v["time_s"].typical * accumulation for k, v in roof.by("kind").items()}
        measured_kinds = point.extra.get("measured_by_kind_s") or {}
        for kind in set(by_kind) | set(measured_kinds):
            entry = kinds_total.setdefault(kind, [0.0, 0.0])
            entry[0] += by_kind.get(kind, 0.0)
            entry[1] += measured_kinds.get(kind, 0.0)
        rows.append({"batch": point.batch, "grad_accumulation": point.grad_accumulation,
                     "measured_s": point.latency_p50_s, "predicted_s": predicted,
                     "uncalibrated_s": raw.total_s.typical * accumulation,
                     "error": predicted / point.latency_p50_s - 1,
                     "predicted_memory_bytes": report.memory.peak_bytes,
                     "measured_memory_bytes": point.peak_memory_bytes,
                     "predicted_memory_by_category": report.memory.by_category,
                     "predicted_by_kind_s": by_kind, "measured_by_kind_s": measured_kinds})
    profiled = any(v[1] for v in kinds_total.values())
    moved = None
    if profiled:
        moved = max(kinds_total, key=lambda k: abs(kinds_total[k][1] - kinds_total[k][0]))
    data = {"run_id": run.id, "target": run.target, "calibration": profile.name, "calibrated": profile.fitted,
            "points": rows, "by_kind": {k: {"predicted_s": v[0], "measured_s": v[1]} for k, v in kinds_total.items()},
            "largest_gap_kind": moved}
    if args.json:
        emit_json(data)
        return 0
    table = [[r["batch"], format_seconds(r["measured_s"]), format_seconds(r["predicted_s"]), f"{r['error']:+.1%}",
              format_seconds(r["uncalibrated_s"]),
              format_bytes(r["measured_memory_bytes"]) if r["measured_memory_bytes"] is not None else "",
              format_bytes(r["predicted_memory_bytes"])] for r in rows]
    print(render_table(["batch", "measured P50", "predicted", "error", "uncalibrated", "measured memory",
                        "predicted peak"], table, title=f"run {run.id}: {run.target} ({profile.name}, "
                                                        f"{'fitted' if profile.fitted else 'not fitted'})"))
    if profiled:
        kinds = [[k, format_seconds(v[0]), format_seconds(v[1]),
                  f"{(v[0] - v[1]) / v[1]:+.0%}" if v[1] else ""] for k, v in
                 sorted(kinds_total.items(), key=lambda kv: -kv[1][1])]
        print()
        print(render_table(["op kind", "predicted", "measured (profiler)", "signed error"], kinds))
        print(f"\nthe largest gap is in {moved} ops: its efficiency assumption moved the estimate most")
    else:
        print("\n(measure with --profile to compare time per op kind)")
    print("measured memory is the process RSS above the point's start on CPU (cuda max_memory_allocated on GPU); "
          "predicted is the trace's live-tensor peak")
    return 0


def _compare_load(run, args: argparse.Namespace) -> int:
    """A load test against the SLA its plan promised: percentile by percentile, met or missed."""
    from sizeup.cli.commands.load import render_sla, sla_rows
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError

    point = run.points[0] if run.points else None
    if point is None:
        raise ConfigError(f"run {run.id}: the load test recorded no requests")
    measured = {k: point.extra.get(k) or {} for k in ("ttft_s", "tpot_s", "itl_s", "e2e_s")}
    if not measured["e2e_s"] and point.samples_s:  # runs stored before e2e percentiles were kept
        import numpy as np

        measured["e2e_s"] = {f"p{q:g}".replace(".", ""): float(np.percentile(point.samples_s, q))
                             for q in (50, 90, 95, 99, 99.9)}
    if args.sla:
        from sizeup.plan.scenario import load_scenario

        promised, source = load_scenario(args.sla).sla.targets, args.sla
    else:
        promised, source = point.extra.get("sla") or {}, "the scenario given to sizeup load --sla"
    if not promised:
        raise ConfigError(f"run {run.id} is a load test with no SLA to compare with: give --sla SCENARIO.yaml")
    rows = sla_rows(promised, measured)
    if args.json:
        emit_json({"run_id": run.id, "target": run.target, "sla_source": source, "sla": rows,
                   "all_met": all(r["met"] for r in rows.values())})
        return 0
    print(f"run {run.id}: load test of {run.target} against {source}")
    for line in render_sla(rows):
        print(line)
    return 0


def run_collectives(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.measure.collectives import measure_collectives
    from sizeup.measure.env import capture_environment
    from sizeup.measure.store import Store

    backend = "nccl" if args.device.startswith("cuda") else "gloo"
    rows = measure_collectives(world_size=args.world_size, backend=backend)
    with Store(args.db) as store:
        run_id = store.start_run(kind="collectives", target=f"{backend} x{args.world_size}", device=args.device,
                                 config={"world_size": args.world_size, "backend": backend},
                                 environment=capture_environment(args.device))
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
    from sizeup.measure.store import Store
    from sizeup.measure.sweep import LLMSweepConfig, run_llm_sweep
    from sizeup.price.roofline import price
    from sizeup.units import parse_duration_s

    batches = (1, 2, 4) if args.batch.strip().lower() == "auto" else _ints(args.batch, "--batch")
    cfg = LLMSweepConfig(model=args.target, device=args.device, batches=batches, prompt=args.prompt,
                         context=args.context, dtype=args.dtype, budget_s=parse_duration_s(args.budget))
    arch = load_model(args.target)
    with Store(args.db) as store:
        profile = _profile(store, args.calibration, args.device)

        def predict(phase: str, batch: int) -> float:
            step = Step(batch=batch, new_tokens=args.prompt, context=args.prompt, logits="last") if phase == "prefill" \
                else Step(batch=batch, new_tokens=1, context=args.context)
            weights = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16"}[args.dtype]
            ledger = transformer_ledger(arch, step, weights=weights, act_dtype=args.dtype, per_layer=False)
            return price(ledger, profile.device, profile.efficiency).total_s.typical

        result = run_llm_sweep(cfg, store, predict=predict)
    if args.json:
        emit_json(result.to_dict() | {"calibration": profile.name, "calibrated": profile.fitted})
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


def _compare_llm(run, profile, args: argparse.Namespace) -> int:
    """Prefill and decode of a preset LLM run against the analytic ledger priced with the profile."""
    from sizeup.cli.main import emit_json
    from sizeup.ingest.hf_config import load_model
    from sizeup.ingest.transformer_ops import Step, transformer_ledger
    from sizeup.price.roofline import price

    arch = load_model(run.target)
    prompt, context, dtype = run.config["prompt"], run.config["context"], run.config.get("dtype", "fp32")
    rows = []
    for point in run.points:
        if point.status != "ok" or not point.latency_p50_s:
            continue
        step = Step(batch=point.batch, new_tokens=prompt, context=prompt) if point.phase == "prefill" else \
            Step(batch=point.batch, new_tokens=1, context=context)
        ledger = transformer_ledger(arch, step, weights=dtype, act_dtype=dtype, per_layer=False)
        predicted = price(ledger, profile.device, profile.efficiency).total_s.typical
        rows.append({"batch": point.batch, "phase": point.phase, "measured_s": point.latency_p50_s,
                     "predicted_s": predicted, "error": predicted / point.latency_p50_s - 1})
    if args.json:
        emit_json({"run_id": run.id, "target": run.target, "calibration": profile.name, "points": rows})
        return 0
    print(render_table(["batch", "phase", "measured P50", "predicted", "error"],
                       [[r["batch"], r["phase"], format_seconds(r["measured_s"]), format_seconds(r["predicted_s"]),
                         f"{r['error']:+.1%}"] for r in rows], title=f"run {run.id}: {run.target} ({profile.name})"))
    return 0


def run_backends(args: argparse.Namespace) -> int:
    from sizeup.api import parse_input_specs
    from sizeup.cli.main import emit_json
    from sizeup.ingest.target import load_factory
    from sizeup.measure.backends import compare_backends
    from sizeup.measure.harness import TimingPolicy

    inputs = parse_input_specs(args.input, args.input_spec)
    if not inputs:
        from sizeup.errors import MeasureError

        raise MeasureError("--backends needs --input or --input-spec")
    batch = 1 if args.batch.strip().lower() == "auto" else _ints(args.batch, "--batch")[0]
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
