"""`sizeup measure --dataloader FILE.py:FACTORY`: the input pipeline (registered by `measure.py`).

    sizeup measure --dataloader data.py:make_loader --workers 0,1,2,4            # the loader alone
    sizeup measure model.py:net --input 64x3x224x224 --train --dataloader data.py:make_loader --gpu a100-80g
                                                           # beside the GPU's predicted samples/s: workers needed
    sizeup measure model.py:net --train --dataloader data.py:make_loader --steps 50   # a trial run to scale
"""

from __future__ import annotations

import argparse

from sizeup.cli.flags import COUNT, exclusive
from sizeup.units import number_flag

__all__ = ["add_loader_arguments", "run_loader"]


def add_loader_arguments(m: argparse.ArgumentParser) -> None:
    g = m.add_argument_group("input pipeline (--dataloader)")
    g.add_argument("--dataloader", metavar="FILE.py:FACTORY",
                   help="time your DataLoader (or any iterable of batches) at several worker counts; FACTORY takes "
                        "num_workers, or returns a DataLoader that is rebuilt with it")
    g.add_argument("--workers", metavar="N,N,…",
                   help="worker counts to time (default 0,1,2,4,… up to the cores); with --steps, the one count used")
    g.add_argument("--batches", type=number_flag(integer=True, minimum=2, maximum=1_000_000), default=40,
                   help="batches timed per worker count (default 40, within --budget)")
    g.add_argument("--gpu", metavar="DEVICE",
                   help="set the loader beside the model's predicted samples/s on this catalog device (TARGET and "
                        "--input give the model and its batch; --train for a training step)")
    g.add_argument("--gpu-rate", type=number_flag(above=0, maximum=1e12), metavar="SAMPLES_PER_S",
                   help="the GPU's samples/s, when you know it (from a run on the GPU)")
    g.add_argument("--steps", type=COUNT,
                   help="a trial run: train TARGET on the loader for this many steps and store it for "
                        "'sizeup train --from-run RUN --samples N --epochs E'")
    exclusive(m, "--gpu", "--gpu-rate", "--gpu predicts the GPU's rate; --gpu-rate gives it")


def _worker_counts(text: str | None, single: bool) -> list[int] | None:
    from sizeup.errors import ConfigError

    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--workers {text!r}: expected counts like 0,1,2,4") from None
    if not values or min(values) < 0 or max(values) > 1024:
        raise ConfigError(f"--workers {text!r}: expected counts from 0 to 1024")
    if single and len(values) != 1:
        raise ConfigError(f"--workers {text!r}: a trial runs at one worker count")
    return values


def run_loader(args: argparse.Namespace) -> int:
    from sizeup.errors import ConfigError

    if args.steps is not None:
        return run_trial_command(args)
    if args.train and not args.gpu:
        raise ConfigError("--train with --dataloader: give --gpu DEVICE (compare with a training step) or --steps "
                          "N (a trial run)")
    from sizeup.cli.main import emit_json
    from sizeup.measure.dataloader import measure_loader
    from sizeup.cli.db import open_writer
    from sizeup.workload.input_pipeline import compare_pipeline, rates_from_points

    gpu_rate, gpu_note = args.gpu_rate, "given (--gpu-rate)" if args.gpu_rate else None
    if args.gpu:  # the prediction first: a bad device or model fails before the loader is timed
        gpu_rate, gpu_note = _predicted_rate(args)
    elif args.target:
        raise ConfigError("a TARGET with --dataloader is the model of --gpu or --steps: give one of them")
    measurement = measure_loader(args.dataloader, _worker_counts(args.workers, False), batches=args.batches,
                                 budget_s=args.budget)
    rows = [p.to_dict() for p in measurement.points]
    data = measurement.to_dict() | {"gpu_samples_per_s": gpu_rate, "gpu": gpu_note}
    if gpu_rate and all(p.workers is not None for p in measurement.points):
        rates = rates_from_points(rows, measurement.cores)
        verdicts = [compare_pipeline(rates, gpu_rate, p.workers) for p in measurement.points]
        for row, v in zip(rows, verdicts):
            row["gpu_wait"] = v.gpu_wait
        data["points"] = rows
        data["verdict"] = verdicts[0].to_dict()
    elif gpu_rate:
        p = measurement.points[0]
        wait = max(0.0, 1 - p.samples_per_s / gpu_rate)
        data["verdict"] = {"input_bound": wait > 0, "gpu_wait": wait,
                           "summary": f"the loader gives {p.samples_per_s:,.0f} samples/s against the GPU's "
                                      f"{gpu_rate:,.0f}: the GPU waits {wait:.0%} of the time"}
    from sizeup.measure.env import capture_environment
    from sizeup.measure.provenance import capture_provenance

    config = {"cores": measurement.cores, "gpu": args.gpu, "gpu_samples_per_s": gpu_rate, "model": args.target,
              "train": bool(args.train)}
    environment = capture_environment("cpu")
    with open_writer(args.db) as store:
        run_id = store.start_run(kind="loader", target=args.dataloader, device="local", config=config,
                                 environment=environment,
                                 provenance=capture_provenance("loader", args.dataloader, config, environment))
        for p in measurement.points:
            store.add_point(run_id, batch=p.batch_size, phase="loader", status="ok", samples_s=p.batch_s,
                            throughput_per_s=p.samples_per_s, extra=p.to_dict())
        store.finish_run(run_id, "ok")
    data["run_id"] = run_id
    if args.json:
        emit_json(data)
        return 0
    print(render_loader(data))
    return 0


def _predicted_rate(args: argparse.Namespace) -> tuple[float, str]:
    from sizeup.api import parse_input_specs
    from sizeup.errors import ConfigError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.trace_inputs import InputSpec
    from sizeup.workload.input_pipeline import gpu_samples_per_s

    if not args.target or not (args.input or args.input_spec):
        raise ConfigError("--gpu needs the model: TARGET (FILE.py:FACTORY) and --input with its batch")
    device = load_catalog().device(args.gpu)
    inputs = [InputSpec(shape=i.shape, dtype=i.dtype, name=i.name)
              for i in parse_input_specs(args.input, args.input_spec)]
    return gpu_samples_per_s(args.target, inputs, device, train=args.train, dtype=args.dtype,
                             optimizer=args.optimizer)


def render_loader(data: dict) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    rows = []
    for p in data["points"]:
        w = p["workers"]
        per = p["samples_per_s"] / w if w else p["samples_per_s"]
        rows.append(["as built" if w is None else w, f"{p['samples_per_s']:,.1f}", f"{per:,.1f}",
                     format_seconds(p["startup_s"]), f"{p['gpu_wait']:.0%}" if "gpu_wait" in p else ""])
    lines = [render_table(["workers", "samples/s", "per worker", "start-up", "GPU waits"], rows,
                          title=f"run {data['run_id']}: {data['target']} on {data['cores']} usable cores")]
    if data.get("gpu_samples_per_s"):
        lines.append(f"GPU: {data['gpu_samples_per_s']:,.1f} samples/s ({data['gpu']})")
    verdict = data.get("verdict")
    if verdict:
        lines.append(f"verdict: {verdict['summary']}")
        lines.extend(f"assumption: {a}" for a in verdict.get("assumptions", []))
    lines.extend(f"note: {n}" for n in data["notes"])
    return "\n".join(lines)


def run_trial_command(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError
    from sizeup.measure.env import capture_environment
    from sizeup.cli.db import open_writer
    from sizeup.measure.trial import TrialConfig, run_trial
    from sizeup.units import format_bytes, format_seconds

    if not args.target or ":" not in args.target or not args.train:
        raise ConfigError("--steps runs a trial: give the model (FILE.py:FACTORY) and --train")
    if args.gpu or args.gpu_rate:
        raise ConfigError("--steps trains on this machine: --gpu and --gpu-rate do not apply")
    workers = _worker_counts(args.workers, True)
    if getattr(args, "threads", None):  # one thread: each step's CPU time is its work's, stored beside the wall time
        import torch

        torch.set_num_threads(args.threads)
    cfg = TrialConfig(model=args.target, loader=args.dataloader, steps=args.steps,
                      workers=None if workers is None else workers[0], device=args.device, optimizer=args.optimizer,
                      dtype=args.dtype)
    result = run_trial(cfg)
    data = result.to_dict()
    from sizeup.measure.provenance import capture_provenance

    config = {"model": args.target, "loader": args.dataloader, "workers": cfg.workers, "batch_size": result.batch_size,
              "samples_per_epoch": result.samples_per_epoch, "drop_last": result.drop_last,
              "optimizer": cfg.optimizer, "dtype": cfg.dtype, "device": args.device}
    environment = capture_environment(args.device)
    with open_writer(args.db) as store:
        run_id = store.start_run(kind="trial", target=args.target, device=args.device, config=config,
                                 environment=environment,
                                 provenance=capture_provenance("trial", args.target, config, environment,
                                                               workload_class="train-step"))
        store.add_point(run_id, batch=result.batch_size, phase="train-step", status="ok", samples_s=result.step_s,
                        cpu_samples_s=result.cpu_s,
                        throughput_per_s=result.batch_size / data["step_mean_s"],
                        peak_memory_bytes=result.peak_memory_bytes,
                        extra={k: data[k] for k in ("data_wait_share", "loader_samples_per_s", "epoch_restart_s",
                                                    "peak_memory_bytes", "memory_kind", "loss", "warmup_s",
                                                    "notes")} | {"data_wait_s": list(result.data_wait_s),
                                                                 "epoch_start": list(result.epoch_start)})
        store.finish_run(run_id, "ok")
    data["run_id"] = run_id
    if args.json:
        emit_json(data)
        return 0
    print(f"run {run_id}: {len(result.step_s)} training steps of {args.target} on {args.dataloader} "
          f"({args.device}), batch {result.batch_size}")
    print(f"step: mean {format_seconds(data['step_mean_s'])}, P50 {format_seconds(data['step_p50_s'])}, "
          f"P90 {format_seconds(data['step_p90_s'])}; waiting for data {data['data_wait_share']:.0%} of it")
    print(f"peak memory {format_bytes(result.peak_memory_bytes)} ({result.memory_kind})"
          + (f"; epoch restart {format_seconds(data['epoch_restart_s'])}" if data["epoch_restart_s"] is not None
             else ""))
    for note in data["notes"]:
        print(f"note: {note}")
    print(f"scale it: sizeup train --from-run {run_id} --samples N --epochs E [--offer ID]")
    return 0
