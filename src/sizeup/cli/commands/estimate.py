"""`sizeup estimate MODEL --device NAME`: memory, limits and speed of serving a transformer."""

from __future__ import annotations

import argparse

from sizeup.cli.calibration import add_calibration_arguments, add_runtime_argument
from sizeup.cli.commands.hw import add_catalog_argument
from sizeup.cli.flags import BATCH as _BATCH, GPUS as _GPUS, TOKENS as _TOKENS, TOKENS_OR_ZERO
from sizeup.engines.base import engine_names
from sizeup.units import MAX_LAYERS, format_bytes, format_seconds, number_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="memory and speed of a transformer from its config, on a device",
                       description="MODEL is a preset name (llama-3.1-8b), a Hugging Face id of a preset, a "
                                   "config.json or model folder, a .safetensors / .gguf file (header only), or an "
                                   "ONNX graph (memory and latency per batch from its own ledger).")
    p.add_argument("model")
    p.add_argument("--device", help="device name (see 'sizeup hw list'), or 'local' with --calibration; without it "
                                    "(or with --devices) a table compares devices")
    p.add_argument("--devices", metavar="CLASS|A,B,…",
                   help="compare devices: which run the model, at which format, tokens/s and $ per million tokens; "
                        "a class (consumer, workstation, apple, datacenter, accelerator, edge, cpu, all) or device "
                        "names separated by commas (default without --device: a few common cards)")
    p.add_argument("--gpus", type=_GPUS, default=1, help="tensor-parallel GPUs (default 1)")
    p.add_argument("--split", choices=("tensor", "layers"), default="tensor",
                   help="how --gpus share the model: tensor (tensor parallel, the default) or layers (consecutive "
                        "layers per GPU, one GPU at a time: accelerate device_map='auto')")
    p.add_argument("--pp", type=_GPUS, default=1, metavar="N",
                   help="pipeline stages: --gpus split into N stages of consecutive layers, each tensor parallel over "
                        "gpus/N; at batch 1 a token pays every stage in turn, under load micro-batches fill the "
                        "stages (vLLM --pipeline-parallel-size, TensorRT-LLM pp_size; default 1)")
    p.add_argument("--gpus-per-node", type=_GPUS, metavar="N",
                   help="GPUs per node where --gpus span nodes: tensor-parallel collectives run in two levels, sends "
                        "between pipeline stages on different nodes over the network (default: the device's board, 8 "
                        "for NVLink-switch and xGMI-mesh devices, 72 for GB200/GB300 NVL72; other devices one node)")
    p.add_argument("--network-gbps", type=number_flag(above=0, maximum=10**6, unit="Gbit/s"),
                   help="node-to-node network per node, Gb/s, or with a unit: 3200Gbps, 400GB/s (default 400 Gb/s "
                        "per GPU: one NDR InfiniBand HCA each)")
    p.add_argument("--offer", metavar="ID", help="the device as this cloud offer installs it: the GPU link the offer "
                                                 "states, else PCIe; GPUs past one instance span its instances, joined "
                                                 "by the network it states (see 'sizeup hw offers'; a plan's recipe "
                                                 "names it)")
    p.add_argument("--quant", default=None, help="weight format: bf16, fp16, fp8, int8, awq-int4, gptq-int4, nf4, "
                                                  "q4_k_m, q8_0, … (default: the format a .gguf file stores, else the "
                                                  "most precise of the engine's formats that fits)")
    p.add_argument("--kv-dtype", default=None, type=_kv_dtype,
                   help="KV cache: fp16, bf16, fp8 (vLLM's fp8_e4m3 / fp8_e5m2), q8_0, q4_0 (default fp16, or the "
                                                    "engine's own where it differs: an FP8 checkpoint on TensorRT-LLM)")
    p.add_argument("--engine", metavar="NAME[@RELEASE]",
                   help=f"serving engine: {', '.join(engine_names())}, at its current release or one named (e.g. "
                        "vllm@0.10) (default: llama.cpp on consumer cards, Macs, edge boards and CPUs, vllm on "
                        "workstation and data-centre GPUs: data/engines/defaults.yaml; tensorrt: a plain TensorRT "
                        "engine)")
    p.add_argument("--batch", type=_BATCH, default=1, help="concurrent sequences (default 1)")
    p.add_argument("--input-len", "--prompt", dest="prompt", type=_TOKENS, default=None,
                   help="prompt tokens (default 512; under load the mean, default the --dataset's)")
    p.add_argument("--output-len", "--output", dest="output", type=TOKENS_OR_ZERO, default=None,
                   help="generated tokens (default 128; under load the mean, default the --dataset's)")
    p.add_argument("--context", type=_TOKENS, help="tokens the cache must hold per sequence (default prompt + output)")
    p.add_argument("--images", type=number_flag(integer=True, minimum=0, maximum=10_000), default=0,
                   help="vision-language models (llava, qwen2_vl): images per sequence, each through the vision "
                        "tower in prefill; their tokens are part of --prompt (default 0)")
    p.add_argument("--image-size", metavar="HxW", help="pixels of each image, e.g. 448x448 or 448 (qwen2_vl reads "
                                                       "images at their own size; default 448x448)")
    p.add_argument("--gpu-layers", "--n-gpu-layers", type=number_flag(integer=True, minimum=0, maximum=MAX_LAYERS),
                   help="llama.cpp: layers offloaded to the GPU (default all)")
    p.add_argument("--cpu", metavar="NAME", help="llama.cpp: the host CPU device where layers kept off the GPU "
                                                 "run (default: the device's host_cpu, e.g. an SoC's CPU cluster)")
    p.add_argument("--threads", type=number_flag(integer=True, minimum=1, maximum=100_000),
                   help="llama.cpp: CPU threads for those layers (default all cores)")
    p.add_argument("--backend", choices=["vulkan", "cuda", "hip", "sycl", "metal", "cpu"], type=_backend,
                   help="llama.cpp, ollama, mlc: the backend the build uses (default the device's own: cuda on "
                        "NVIDIA, hip on AMD, sycl on Intel (vulkan for mlc), metal on Apple); vllm: only the "
                        "platform it runs the device on (cuda, hip, sycl = Intel XPU, cpu); rocm and xpu are "
                        "taken for hip and sycl")
    p.add_argument("--build-date", metavar="YYYY-MM-DD",
                   help="llama.cpp: the date of the build, for kernels that changed over time (e.g. F16 decode "
                        "ran DMMV before 2024-10-10; default: current builds)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                   help="MODEL.onnx: size of a symbolic dimension other than the batch (repeatable)")
    p.add_argument("--sweep", nargs="?", const="auto", metavar="B,B,…",
                   help="also sweep the batch size: powers of two up to the largest that fits, or a list")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_load_arguments(p)
    add_runtime_argument(p)
    add_calibration_arguments(p)
    add_catalog_argument(p)
    p.set_defaults(func=run)


def _add_load_arguments(p: argparse.ArgumentParser) -> None:
    """Throughput under load: the flags of a serving benchmark's stated conditions (vllm bench serve,
    sglang.bench_serving, trtllm-bench, MLPerf)."""
    p.add_argument("--concurrency", metavar="N|inf",
                   help="throughput under load: N requests in flight (closed loop, e.g. vllm bench serve "
                        "--max-concurrency N), or 'inf': every request queued at once (offline: MLPerf Offline, "
                        "trtllm-bench, benchmark_throughput)")
    p.add_argument("--rps", type=number_flag(minimum=1e-6, maximum=1e9), metavar="R",
                   help="throughput under load at Poisson arrivals of R requests/s (vllm bench serve "
                        "--request-rate R, MLPerf Server at its target QPS)")
    p.add_argument("--replicas", type=number_flag(integer=True, minimum=1, maximum=100_000), default=1,
                   help="copies of the server, each on --gpus GPUs, the load spread over them (data parallel; "
                        "default 1)")
    p.add_argument("--dataset", metavar="NAME",
                   help="request lengths of a benchmark dataset (sharegpt, mlperf-llama2-openorca, "
                        "mlperf-mixtral-15k, mlperf-gptj-cnndm); --prompt / --output given replace its means")
    p.add_argument("--input-len-spread", type=number_flag(minimum=0, maximum=1e7), metavar="TOKENS",
                   help="standard deviation of the input length (with --concurrency / --rps)")
    p.add_argument("--output-len-spread", type=number_flag(minimum=0, maximum=1e7), metavar="TOKENS",
                   help="standard deviation of the output length (a static batch runs to its longest)")
    p.add_argument("--num-prompts", type=number_flag(integer=True, minimum=1, maximum=1_000_000), metavar="N",
                   help="a finite run of N requests (vllm bench / benchmark_throughput --num-prompts N), sent at "
                        "--rps R (Poisson, as the serving benchmarks' --request-rate), fed at --concurrency or all at "
                        "once: TTFT waits for the prompts ahead, the run drains at its end")
    p.add_argument("--batcher-window", type=number_flag(unit="s", above=0, maximum=3600), metavar="SECONDS",
                   help="with --rps: a front end that holds arriving requests up to SECONDS (or --batcher-max N) "
                        "and sends them on together (an MLPerf harness batcher); its wait adds to TTFT")
    p.add_argument("--batcher-max", type=number_flag(integer=True, minimum=1, maximum=1_000_000), metavar="N",
                   help="with --batcher-window: the batcher sends early once it holds N requests")
    p.add_argument("--engine-opt", action="append", default=[], metavar="KEY[=VALUE]",
                   help="an engine option the run set, as the engine spells it (vllm: num-scheduler-steps=10, "
                        "max-num-seqs=256, v1, offline; sglang: chunked-prefill-size=4096, disable-radix-cache, "
                        "offline; tensorrt-llm: max-batch-size=896, max-num-tokens=8192, offline). offline, per "
                        "engine: vllm the offline LLM class (LLM.generate, vllm bench throughput) and sglang its "
                        "offline engine (Engine.generate), every prompt in one call: loaded only at --concurrency "
                        "inf (implied by --dataset / --num-prompts), --rps and --concurrency N refused (cap the batch "
                        "with max-num-seqs=N / max-running-requests=N); tensorrt-llm its in-process run (trtllm-bench, "
                        "the LLM API), which takes requests as they come: --rps and --concurrency N allowed, and "
                        "from 1.0 no trtllm-serve front end (before 1.0 it changes nothing). Switches "
                        "take 0 or 1; repeatable")


BACKEND_SPELLINGS = {"rocm": "hip", "xpu": "sycl"}
"""The engines' own names of two backends: vLLM's platforms `rocm` and `xpu` (vllm/platforms), llama.cpp's ROCm build
(its HIP backend)."""


KV_SPELLINGS = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8-e4m3": "fp8", "fp8-e5m2": "fp8"}
"""vLLM's --kv-cache-dtype names of its 1-byte caches (both priced as fp8: one byte per element)."""


def _kv_dtype(text: str) -> str:
    key = str(text).strip().lower()
    return KV_SPELLINGS.get(key, key)


def _backend(text: str) -> str:
    key = str(text).strip().lower()
    return BACKEND_SPELLINGS.get(key, key)


def run(args: argparse.Namespace) -> int:
    from sizeup.api import estimate
    from sizeup.cli.main import emit_json

    if args.device is None or args.devices:
        from sizeup.cli.commands.estimate_table import run_table

        if args.pp > 1:
            from sizeup.errors import ConfigError

            raise ConfigError(f"--pp {args.pp}: pipeline stages need one --device (a table compares devices "
                              f"without a pipeline)")

        return run_table(args)
    result = estimate(args.model, estimate_options(args))
    onnx = args.model.lower().endswith(".onnx")
    if args.json:
        emit_json(result.to_dict())
    else:
        print(render_onnx(result) if onnx else render_result(result))
    return 0 if onnx or result.fits else NOT_FIT_EXIT


def estimate_options(args: argparse.Namespace):
    """The flags as `sizeup.api.EstimateOptions`."""
    from sizeup.api import EstimateOptions
    from sizeup.cli.commands.flops import parse_dims

    from sizeup.cli.commands.estimate_load import parse_concurrency

    concurrency, offline = parse_concurrency(args.concurrency)
    return EstimateOptions(
        device=args.device, offer=args.offer, gpus=args.gpus, split=args.split, quant=args.quant, kv_dtype=args.kv_dtype,
        engine=args.engine, pp=args.pp, gpus_per_node=args.gpus_per_node, network_gbps=args.network_gbps,
        batch=args.batch, prompt=args.prompt, output=args.output, context=args.context,
        gpu_layers=args.gpu_layers, cpu=args.cpu, threads=args.threads, images=args.images,
        image_size=parse_image_size(args.image_size), backend=args.backend, build_date=args.build_date,
        sweep=False if not args.sweep else True if args.sweep == "auto" else _batches(args.sweep),
        dims=parse_dims(args.dim) or None, runtime=args.runtime, calibration=args.calibration, db=args.db,
        catalog=tuple(args.catalog), engine_options=tuple(args.engine_opt), concurrency=concurrency,
        offline=offline, rps=args.rps, replicas=args.replicas, dataset=args.dataset,
        input_len_spread=args.input_len_spread, output_len_spread=args.output_len_spread,
        num_prompts=args.num_prompts, batcher_window=args.batcher_window, batcher_max=args.batcher_max)


def render_result(result) -> str:
    """The estimate, its batch sweep, and what would fit when it does not."""
    parts = [render_estimate(result)]
    if result.under_load is not None:
        from sizeup.cli.commands.estimate_load import render_load

        parts += ["", render_load(result.under_load)]
    if result.batch_sweep is not None:
        parts += ["", render_sweep(result.batch_sweep, result.sweep_under_load)]
    if not result.fits:
        from sizeup.cli.commands.estimate_table import render_would_fit

        parts.append(render_would_fit(result.would_fit))
    return "\n".join(parts)


def parse_image_size(text: str | None) -> tuple[int, int] | None:
    """'448x336' -> (448, 336) (height x width); '448' -> (448, 448)."""
    if text is None:
        return None
    from sizeup.errors import ConfigError

    parts = text.lower().split("x")
    try:
        sides = [int(v) for v in parts]
    except ValueError:
        sides = []
    if len(sides) not in (1, 2) or min(sides) < 1 or max(sides) > 100_000:
        raise ConfigError(f"--image-size {text!r}: expected HEIGHTxWIDTH in pixels (1 to 100,000), e.g. 448x448")
    return (sides[0], sides[-1])


NOT_FIT_EXIT = 2
"""`sizeup estimate` of a configuration that does not fit: an answer, not an input error (that is 1)."""


def render_onnx(e) -> str:
    """`sizeup estimate MODEL.onnx --device NAME [--batch B] [--dim NAME=SIZE] [--sweep]`."""
    from sizeup.report.terminal import render_table

    point, report, usable, device = e.point, e.point.report, e.point.usable, e.device
    total = report.total
    lines = [f"{report.ledger.name} (ONNX, {report.dtype}) on {device.name}: batch {point.batch}"
             + (f" ({e.batch_dim})" if e.batch_dim else "")
             + (f", {', '.join(f'{k}={v}' for k, v in e.dims.items())}" if e.dims else "")]
    lines.append(f"  {format_bytes(report.memory.peak_bytes)} peak live memory of {format_bytes(int(usable.typical))} "
                 f"usable: {'fits' if point.fits else 'does NOT fit'}  ("
                 + ", ".join(f"{k} {format_bytes(v)}" for k, v in report.memory.by_category.items() if v) + ")")
    lat, thr = point.latency_s, point.throughput_per_s
    lines.append(f"  {total.flops / 1e9:,.2f} GFLOP per inference; latency {format_seconds(lat.typical)} "
                 f"({format_seconds(lat.low)} - {format_seconds(lat.high)}), {thr.typical:,.1f} samples/s, "
                 f"{point.bound}-bound")
    if point.backing is not None:
        lines.append(f"  range: {point.backing.text}")
    if e.batch_sweep:
        lines.append("")
        lines.append(render_table(["batch", "peak memory", "fits", "latency", "samples/s", "bound"],
                                  [[p.batch, format_bytes(p.report.memory.peak_bytes), "yes" if p.fits else "no",
                                    format_seconds(p.latency_s.typical), f"{p.throughput_per_s.typical:,.1f}",
                                    p.bound] for p in e.batch_sweep]))
    lines.extend(f"assumption: {note}" for note in e.assumptions)
    return "\n".join(lines)


def _batches(text: str) -> list[int] | None:
    from sizeup.errors import ConfigError

    if text == "auto":
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--sweep {text!r}: expected batch sizes like 1,4,16") from None
    if not values or min(values) < 1:
        raise ConfigError(f"--sweep {text!r}: every batch size must be a positive integer")
    return values


def render_sweep(points, loads=None) -> str:
    from sizeup.report.terminal import render_table

    rows = []
    loads = loads or (None,) * len(points)
    for p, s in zip(points, loads):
        rows.append([p.batch, "yes" if p.fits else "no", format_seconds(p.ttft_s.typical),
                     "" if s is None else format_seconds(s.ttft_s.typical),
                     "" if p.tpot_s is None else format_seconds(p.tpot_s.typical),
                     "" if p.tokens_per_s is None else f"{p.tokens_per_s.typical:,.0f}",
                     "" if s is None else f"{s.output_tokens_per_s.typical:,.0f}",
                     "" if s is None else format_seconds(s.e2e_latency_s.typical),
                     "" if p.tokens_per_s is None else f"{p.tokens_per_s.typical / p.batch:,.1f}"])
    return render_table(["batch", "fits", "prefill of the batch", "TTFT under load", "TPOT", "tokens/s (decode)",
                         "tokens/s under load", "end-to-end", "per sequence"], rows,
                        title="batch sweep (typical; prefill of the batch: its B prompts as one prefill; under load: "
                              "that many requests in flight, prompts interleaved as the engine schedules them, TTFT "
                              "a request's wait for its step plus its prompt's steps beside the running decodes)")


def engine_label(e) -> str:
    """'vllm 0.34 (current release)': the engine and release an estimate describes."""
    x = e.execution
    if x is None:
        return e.config.engine
    versions = x.profile.versions
    return x.label + (" (current release)" if versions is not None and x.version == versions.default else "")


def _range(r, fmt) -> str:
    return f"{fmt(r.typical)} ({fmt(r.low)} - {fmt(r.high)})"


def _verdict(e) -> str:
    """FITS / FITS at the typical figure, MAY NOT FIT / DOES NOT FIT (workload/device_fit.py fit_verdict)."""
    from sizeup.workload.device_fit import FITS, MAY_NOT_FIT, fit_verdict

    v = fit_verdict(e)
    if v.verdict == MAY_NOT_FIT:
        return f"FITS at the typical figure, but MAY NOT FIT: {v.why}"
    return "FITS" if v.verdict == FITS else "DOES NOT FIT"


def render_estimate(e) -> str:
    from sizeup.report.terminal import render_table

    cfg, m, arch = e.config, e.memory, e.arch
    moe = f", {arch.active_params / 1e9:.2f}B active" if arch.is_moe else ""
    lines = [f"{arch.name} ({arch.model_type}, {arch.params / 1e9:.2f}B parameters{moe}) on "
             f"{cfg.gpus} x {e.device.name}, {engine_label(e)}, weights {e.weights.id}, KV {cfg.kv_dtype}",
             f"batch {cfg.batch}, prompt {cfg.prompt}, output {cfg.output}, cache {e.decoder_cache_tokens} tokens per sequence"
             + (f", {cfg.images} image(s) per sequence" if cfg.images else ""),
             *([f"read by {arch.reader}"] if arch.reader else []),
             *[f"default {what}: {why}" for what, why in e.defaults.items()],
             ""]
    rows = [["weights", format_bytes(m.weights_bytes)],
            ["KV cache" + (" pool" if m.max_concurrent_sequences is not None else ""), format_bytes(m.kv_cache_bytes)],
            ["activations (peak)", format_bytes(m.activations_bytes)],
            *([["vLLM multimodal profile", format_bytes(m.multimodal_profile_bytes)]] if m.multimodal_profile else []),
            ["engine overhead", format_bytes(m.overhead_bytes)],
            ["total", format_bytes(m.total_bytes) if e.ranges is None else
             f"{format_bytes(m.total_bytes)} ({format_bytes(int(e.ranges.memory_total_bytes.low))} - "
             f"{format_bytes(int(e.ranges.memory_total_bytes.high))})"],
            ["usable on the device", _range(m.usable_bytes, format_bytes)]]
    if m.cpu_bytes:
        rows.append(["in CPU RAM", format_bytes(m.cpu_bytes)])
    lines.append(render_table(["memory per GPU", ""], rows, right=[False, True]))
    lines.append(f"\n{_verdict(e)}; largest context at batch {cfg.batch}: {e.max_context:,} tokens; largest batch at "
                 f"{cfg.cache_tokens:,} tokens: {e.max_batch:,}")
    if getattr(e, "memory_variants_line", ""):
        lines.append(f"by memory size ({e.device.memory_bytes / 2**30:g} GB assumed): {e.memory_variants_line}")
    if m.max_concurrent_sequences is not None:
        pool = e.execution.label if e.execution is not None else cfg.engine
        lines.append(f"{pool} KV pool holds {m.max_concurrent_sequences:,} sequences of {cfg.cache_tokens:,} tokens")
    if e.prefill.compute_priced:
        lines.append(f"\nprefill (TTFT): {_range(e.prefill.latency_s, format_seconds)}, "
                     f"{e.prefill.tokens_per_s.typical:,.0f} tokens/s, {e.prefill.bound}-bound")
    else:
        lines.append(f"\nprefill (TTFT): unknown (compute unknown: {', '.join(e.prefill.unknown_compute)}); "
                     f"tokens/s unknown")
    if e.tower is not None and e.prefill.compute_priced:
        unit = "sequence" if e.tower.kind == "encoder" else "image"
        lines.append(f"  of which {e.tower.label}: {_range(e.tower.latency_s, format_seconds)} ({e.tower.inputs:,} "
                     f"{unit}(s) x {e.tower.positions:,} positions, {e.tower.flops / 1e9:,.1f} GFLOP, "
                     f"{e.tower.bound}-bound); decoder prefill: {_range(e.tower.decoder_latency_s, format_seconds)}")
    if e.decode is not None and e.decode.compute_priced:
        lines.append(f"decode (TPOT):  {_range(e.decode.latency_s, format_seconds)} per token, "
                     f"{e.decode.tokens_per_s.typical:,.1f} tokens/s "
                     f"({e.decode.tokens_per_s.low:,.1f} - {e.decode.tokens_per_s.high:,.1f}), {e.decode.bound}-bound")
    elif e.decode is not None:
        lines.append(f"decode (TPOT):  unknown (compute unknown: {', '.join(e.decode.unknown_compute)}); "
                     f"tokens/s unknown")
    if e.ranges is not None and e.ranges.throughput_tokens_per_s is not None:
        t = e.ranges.throughput_tokens_per_s
        lines.append(f"batch end to end: {t.typical:,.1f} generated tokens/s ({t.low:,.1f} - {t.high:,.1f})")
    if e.ranges is not None:
        lines += [f"range of {line}" for line in e.ranges.lines()]
    for note in e.assumptions:
        lines.append(f"assumption: {note}")
    return "\n".join(lines)
