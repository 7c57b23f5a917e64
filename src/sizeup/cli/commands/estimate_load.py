"""`sizeup estimate ... --concurrency N | --rps R | --dataset NAME`: throughput under load (workload/serving.py),
its flags, and how it prints."""

from __future__ import annotations

import argparse

from sizeup.units import format_seconds

DEFAULT_PROMPT, DEFAULT_OUTPUT = 512, 128


def _concurrency(text: str) -> int | None:
    """'inf' (every request queued at once) -> None; else a positive integer."""
    from sizeup.errors import ConfigError

    if str(text).strip().lower() in ("inf", "infinite", "max"):
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 10_000_000:
        raise ConfigError(f"--concurrency {text!r}: expected a positive integer or 'inf'")
    return value


def under_load(args: argparse.Namespace) -> bool:
    return args.concurrency is not None or args.rps is not None


def fill_lengths(args: argparse.Namespace) -> None:
    """--prompt / --output from --dataset where not given, else their defaults; checks that the load flags go
    together."""
    from sizeup.errors import ConfigError

    loaded = under_load(args)
    if not loaded:
        for flag, value in (("--dataset", args.dataset), ("--input-len-spread", args.input_len_spread),
                            ("--output-len-spread", args.output_len_spread)):
            if value is not None:
                raise ConfigError(f"{flag} {value}: describes requests under load: give --concurrency N|inf or "
                                  f"--rps R with it")
        if args.replicas != 1:
            raise ConfigError(f"--replicas {args.replicas}: with --concurrency N|inf or --rps R")
    if args.dataset is not None:
        from sizeup.workload.serving import dataset_mix

        mix = dataset_mix(args.dataset, input_tokens=args.prompt, output_tokens=args.output or None)
        args.prompt, args.output = args.prompt or mix.input_tokens, args.output or mix.output_tokens
    args.prompt = DEFAULT_PROMPT if args.prompt is None else args.prompt
    args.output = DEFAULT_OUTPUT if args.output is None else args.output


def load_estimate(args: argparse.Namespace, result):
    """The estimate's configuration under the load the flags name (workload/serving.py ServingEstimate)."""
    from sizeup.errors import ConfigError
    from sizeup.workload.serving import Load, RequestMix, dataset_mix, serving_load

    if args.batch != 1:
        raise ConfigError(f"--batch {args.batch}: under load the engine forms its batches; give --concurrency "
                          f"N|inf or --rps R, not --batch")
    if args.dataset is not None:
        mix = dataset_mix(args.dataset, input_tokens=args.prompt, output_tokens=args.output,
                          input_spread=args.input_len_spread, output_spread=args.output_len_spread)
    else:
        mix = RequestMix(input_tokens=args.prompt, output_tokens=args.output, input_spread=args.input_len_spread,
                         output_spread=args.output_len_spread)
    concurrency = _concurrency(args.concurrency) if args.concurrency is not None else None
    load = Load(concurrency=concurrency, rate=args.rps, replicas=args.replicas)
    return serving_load(result.arch, result.device, result.config, mix, load, execution=result.execution)


def render_load(s) -> str:
    from sizeup.report.terminal import render_table

    def r(x, fmt):
        return f"{fmt(x.typical)} ({fmt(x.low)} - {fmt(x.high)})"

    num = "{:,.0f}".format
    rows = [["output tokens/s", r(s.output_tokens_per_s, num)],
            ["total tokens/s (input + output)", r(s.total_tokens_per_s, num)],
            ["requests/s", r(s.requests_per_s, "{:,.3g}".format)],
            ["decode steps alone (batch / TPOT)", r(s.decode_only_tokens_per_s, num)],
            ["TTFT", r(s.ttft_s, format_seconds)], ["TPOT", r(s.tpot_s, format_seconds)],
            ["end-to-end latency", r(s.e2e_latency_s, format_seconds)],
            ["requests running", f"{s.running.typical:,.0f} of at most {s.capacity:,}"]]
    head = (f"under load: {s.load.label}; {s.mix.input_tokens:,} in / {s.mix.output_tokens:,} out tokens; "
            f"{s.policy}" + ("; SATURATED" if s.saturated else "")
            + (f"; utilization {s.utilization:.0%}" if s.utilization is not None and not s.saturated else ""))
    return head + "\n" + render_table(["throughput under load", ""], rows, right=[False, True])


def sweep_under_load(result, points) -> list:
    """For each batch of a --sweep, the steady state of that many requests in flight (a closed loop of the
    estimate's prompt and output lengths): the throughput a server holds at that concurrency, prefill included,
    beside the decode-only batch / TPOT. None where the point does not fit or its compute is unknown."""
    from sizeup.errors import ConfigError
    from sizeup.workload.serving import Load, RequestMix, serving_load

    cfg = result.config
    if result.arch.encoder or cfg.output < 1:
        return [None] * len(points)
    mix = RequestMix(input_tokens=cfg.prompt, output_tokens=cfg.output)
    out = []
    for p in points:
        if not p.fits or p.tokens_per_s is None:
            out.append(None)
            continue
        try:
            out.append(serving_load(result.arch, result.device, cfg, mix, Load(concurrency=p.batch),
                                    execution=result.execution))
        except ConfigError:
            out.append(None)
    return out
