"""`sizeup estimate MODEL` without one device: which devices run the model, at which format, how fast
and at what price; and, for one device that does not fit, what would."""

from __future__ import annotations

import argparse

from sizeup.errors import ConfigError
from sizeup.report.terminal import render_table
from sizeup.units import format_bytes, format_seconds

__all__ = ["run_table", "table_result", "render_device_table", "render_would_fit"]

_ONE_DEVICE_FLAGS = {"calibration": "--calibration", "gpu_layers": "--gpu-layers", "cpu": "--cpu",
                     "threads": "--threads", "sweep": "--sweep"}


def run_table(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json

    result = table_result(args)
    if args.json:
        emit_json(result.to_dict())
    else:
        print(render_device_table(result))
    return 0 if result.fits else 2


def table_result(args: argparse.Namespace):
    """The device table the flags ask for (`sizeup.api.compare`); flags of one device refused in one line."""
    from sizeup.api import compare

    if args.backend:
        raise ConfigError(f"--backend {args.backend}: only with --device NAME (the device table prices each "
                          f"device's default backend)")
    if args.build_date:
        raise ConfigError(f"--build-date {args.build_date}: only with --device NAME")
    if args.offer:
        raise ConfigError(f"--offer {args.offer}: only with --device NAME (the device table prices each device's "
                          "cheapest offer)")
    if args.images or args.image_size:
        raise ConfigError("--images / --image-size: only with --device NAME (the device table prices text prompts)")
    if args.device is not None:
        raise ConfigError(f"--device {args.device} and --devices {args.devices}: give one device or one class")
    for dest, flag in _ONE_DEVICE_FLAGS.items():
        if getattr(args, dest, None) is not None:
            raise ConfigError(f"{flag}: applies to one --device, not to a table of devices")
    if args.dim or args.model.lower().endswith(".onnx"):
        raise ConfigError(f"{args.model}: an ONNX graph is estimated on one --device")
    for flag, given in (("--concurrency", args.concurrency is not None), ("--rps", args.rps is not None),
                        ("--dataset", args.dataset is not None), ("--replicas", args.replicas != 1),
                        ("--engine-opt", bool(args.engine_opt))):
        if given:
            raise ConfigError(f"{flag}: applies to one --device, not to a table of devices")
    return compare(args.model, devices=args.devices or "common", engine=args.engine, gpus=args.gpus,
                   kv_dtype=args.kv_dtype or "fp16", batch=args.batch,
                   prompt=512 if args.prompt is None else args.prompt,
                   output=128 if args.output is None else args.output,
                   context=args.context, formats=(args.quant,) if args.quant else None, catalog=tuple(args.catalog))


def render_device_table(result) -> str:
    o = result.options
    table = []
    for r in result.rows:
        where = f"{r.offer.provider} {r.offer.region}" if r.offer else "-"
        if not r.fits:
            table.append([r.device.id, r.segment, _engine(r), "does not fit", "", "", "", "", r.reason or "-"])
            continue
        e = r.estimate
        ttft = format_seconds(e.prefill.latency_s.typical) if e.prefill.compute_priced else "unknown"
        rate = f"{r.tokens_per_s:,.1f}" if r.tokens_per_s is not None else "unknown"
        price = f"{r.usd_per_million_tokens:,.2f}" if r.usd_per_million_tokens is not None else "-"
        memory = format_bytes(e.memory.total_bytes) + (" (may not fit)" if r.fit == "may not fit" else "")
        table.append([r.device.id, r.segment, _engine(r), r.format, memory,
                      rate, ttft, price, where])
    gpus = f"{o.gpus} x " if o.gpus > 1 else ""
    title = (f"{result.model} on {gpus}{result.devices} devices: batch {o.batch}, prompt {o.prompt:,}, "
             f"output {o.output:,}" + (f", context {o.context:,}" if o.context else ""))
    notes = ["engine: " + ("as named" if o.engine else "the default of the device's class (llama.cpp on consumer "
                                                       "cards, Macs, edge boards and CPUs, vLLM on workstation and "
                                                       "data-centre GPUs, vLLM on consumer cards for a --quant "
                                                       "llama.cpp cannot load: data/engines/defaults.yaml)")
             + ", at the release named (its current release unless NAME@RELEASE)",
             "format: the most precise of the engine's formats that fits (llama.cpp: q8_0 .. q2_k; "
             "vLLM: bf16, fp8, awq-int4)",
             "memory: per GPU, typical; '(may not fit)': the high end of its range exceeds the usable memory",
             f"tokens/s: decode of the whole batch of {o.batch}; TTFT: one prompt of {o.prompt:,} tokens",
             "$/M tok: per million output tokens on the cheapest on-demand offer carrying the device (per GPU); "
             "'-' where the catalog holds no offer"]
    return "\n".join([render_table(["device", "class", "engine", "format", "memory", "tokens/s", "TTFT",
                                    "$/M tok", "cheapest offer"], table, title=title), "", *notes])


def _engine(r) -> str:
    """'llama.cpp 2026-12-03': a row's engine at the release its estimate describes."""
    return f"{r.engine.partition('@')[0]} {r.engine_version}" if r.engine_version else r.engine


def render_would_fit(suggestions) -> str:
    if not suggestions:
        return ("\nnothing fits on this device (no smaller format, up to 16 GPUs, or shorter context): "
                "see 'sizeup estimate MODEL --devices all'")
    lines = ["\nwhat would fit (each alone, the rest unchanged):"]
    for s in suggestions:
        size = f" ({format_bytes(s.total_bytes)} per GPU)" if s.total_bytes else ""
        lines.append(f"  {s.change}{size}")
    return "\n".join(lines)
