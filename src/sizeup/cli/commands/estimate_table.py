"""`sizeup estimate MODEL` without one device: which devices run the model, at which format, how fast
and at what price; and, for one device that does not fit, what would."""

from __future__ import annotations

import argparse
from dataclasses import replace

from sizeup.errors import ConfigError
from sizeup.report.terminal import render_table
from sizeup.units import format_bytes, format_seconds

__all__ = ["run_table", "render_device_table", "what_would_fit", "render_would_fit"]

_ONE_DEVICE_FLAGS = {"calibration": "--calibration", "gpu_layers": "--gpu-layers", "cpu": "--cpu",
                     "threads": "--threads", "sweep": "--sweep"}


def run_table(args: argparse.Namespace) -> int:
    from sizeup.api import compare_devices
    from sizeup.cli.main import emit_json

    if args.device is not None:
        raise ConfigError(f"--device {args.device} and --devices {args.devices}: give one device or one class")
    for dest, flag in _ONE_DEVICE_FLAGS.items():
        if getattr(args, dest, None) is not None:
            raise ConfigError(f"{flag}: applies to one --device, not to a table of devices")
    if args.dim or args.model.lower().endswith(".onnx"):
        raise ConfigError(f"{args.model}: an ONNX graph is estimated on one --device")
    rows = compare_devices(args.model, devices=args.devices or "common", engine=args.engine, gpus=args.gpus,
                           kv_dtype=args.kv_dtype, batch=args.batch, prompt=args.prompt, output=args.output,
                           context=args.context, formats=[args.quant] if args.quant else None,
                           catalog=args.catalog)
    rows.sort(key=lambda r: (not r.fits, -(r.tokens_per_s or 0.0)))
    fits = any(r.fits for r in rows)
    if args.json:
        emit_json({"model": args.model, "devices_class": args.devices or "common", "gpus": args.gpus,
                   "batch": args.batch, "prompt": args.prompt, "output": args.output, "context": args.context,
                   "devices": [r.to_dict() for r in rows]})
    else:
        print(render_device_table(args, rows))
    return 0 if fits else 2


def render_device_table(args: argparse.Namespace, rows) -> str:
    table = []
    for r in rows:
        where = f"{r.offer.provider} {r.offer.region}" if r.offer else "-"
        if not r.fits:
            table.append([r.device.id, r.segment, _engine(r), "does not fit", "", "", "", "", r.reason or "-"])
            continue
        e = r.estimate
        ttft = format_seconds(e.prefill.latency_s.typical) if e.prefill.compute_priced else "unknown"
        rate = f"{r.tokens_per_s:,.1f}" if r.tokens_per_s is not None else "unknown"
        price = f"{r.usd_per_million_tokens:,.2f}" if r.usd_per_million_tokens is not None else "-"
        table.append([r.device.id, r.segment, _engine(r), r.format, format_bytes(e.memory.total_bytes),
                      rate, ttft, price, where])
    gpus = f"{args.gpus} x " if args.gpus > 1 else ""
    title = (f"{args.model} on {gpus}{args.devices or 'common'} devices: batch {args.batch}, prompt {args.prompt:,}, "
             f"output {args.output:,}" + (f", context {args.context:,}" if args.context else ""))
    notes = ["engine: " + ("--engine" if args.engine else "the default of the device's class (llama.cpp on consumer "
                                                          "cards, Macs, edge boards and CPUs, vLLM on workstation and "
                                                          "data-centre GPUs: data/engines/defaults.yaml)")
             + ", at the release named (its current release unless NAME@RELEASE)",
             "format: the most precise of the engine's formats that fits (llama.cpp: q8_0 .. q2_k; "
             "vLLM: bf16, fp8, awq-int4)",
             f"tokens/s: decode of the whole batch of {args.batch}; TTFT: one prompt of {args.prompt:,} tokens",
             "$/M tok: per million output tokens on the cheapest on-demand offer carrying the device (per GPU); "
             "'-' where the catalog holds no offer"]
    return "\n".join([render_table(["device", "class", "engine", "format", "memory", "tokens/s", "TTFT",
                                    "$/M tok", "cheapest offer"], table, title=title), "", *notes])


def _engine(r) -> str:
    return f"{r.engine.partition('@')[0]} {r.engine_version}" if r.engine_version else r.engine


def what_would_fit(args: argparse.Namespace, result) -> list[dict]:
    """For an estimate that does not fit: the most precise smaller format, the fewest GPUs, and the
    largest context and batch that fit, each checked by a full estimate on the same device."""
    from sizeup.workload.device_fit import engine_formats
    from sizeup.workload.inference import estimate_inference

    cfg, arch, device = result.config, result.arch, result.device

    def check(**changes):
        try:
            return estimate_inference(arch, device, replace(cfg, **changes), cpu=result.cpu_device)
        except ConfigError:
            return None

    out: list[dict] = []
    for fmt in engine_formats(cfg.engine):
        if fmt == result.weights.id:
            continue
        e = check(weights=fmt)
        if e is not None and e.memory.fits and e.memory.weights_bytes < result.memory.weights_bytes:
            out.append({"change": f"--quant {fmt}", "flag": "quant", "value": fmt, "total_bytes": e.memory.total_bytes})
            break
    for gpus in (2, 4, 8, 16):
        if gpus <= cfg.gpus:
            continue
        e = check(gpus=gpus)
        if e is not None and e.memory.fits:
            out.append({"change": f"--gpus {gpus}", "flag": "gpus", "value": gpus, "total_bytes": e.memory.total_bytes})
            break
    if result.max_context > 0:
        out.append({"change": f"--context {result.max_context:,}", "flag": "context", "value": result.max_context,
                    "total_bytes": None})
    if cfg.batch > 1 and result.max_batch > 0:
        out.append({"change": f"--batch {result.max_batch:,}", "flag": "batch", "value": result.max_batch,
                    "total_bytes": None})
    return out


def render_would_fit(suggestions: list[dict]) -> str:
    if not suggestions:
        return ("\nnothing fits on this device (no smaller format, up to 16 GPUs, or shorter context): "
                "see 'sizeup estimate MODEL --devices all'")
    lines = ["\nwhat would fit (each alone, the rest unchanged):"]
    for s in suggestions:
        size = f" ({format_bytes(s['total_bytes'])} per GPU)" if s["total_bytes"] else ""
        lines.append(f"  {s['change']}{size}")
    return "\n".join(lines)
