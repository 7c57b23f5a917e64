"""`sizeup watch (--pid PID | -- COMMAND ...)`: sample a process's memory and say whether it leaks."""

from __future__ import annotations

import argparse

from sizeup.cli.db import add_db_argument
from sizeup.cli.flags import DURATION_S
from sizeup.units import number_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "watch", help="watch a process's memory (does it leak?) or, with --util, why it is slow",
        description="Sample the RSS (and optionally GPU memory) of a running process, or of a command started "
                    "after --, and fit a robust trend over the minima of its sawtooth. With --util: sample GPU "
                    "utilisation, clocks, power, temperature and throttle reasons, CPU per core, disk and network "
                    "and the job's step times, and say what limits it (GPU-bound, input-bound, throttled, "
                    "memory-bound, idle gaps) with the evidence.",
        usage="%(prog)s (--pid PID | -- COMMAND ...) [--interval 10s] [--duration 2h] [options]")
    p.add_argument("--pid", type=number_flag(integer=True, minimum=1, maximum=2**31), metavar="PID",
                   help="the running process to watch")
    p.add_argument("--interval", type=DURATION_S, metavar="DURATION",
                   help="time between samples (default 10s; 1s with --util)")
    p.add_argument("--duration", type=DURATION_S, default="1h", metavar="DURATION",
                   help="how long to watch at most; the watch also ends when the process exits (default 1h)")
    p.add_argument("--gpu", action="store_true", help="also sample the process's GPU memory via NVML (nvidia-ml-py)")
    p.add_argument("--children", action="store_true", help="add the RSS of the process's descendants")
    p.add_argument("--threshold-mb-per-hour", type=number_flag(minimum=0, maximum=10**12), default=10.0, metavar="MB",
                   help="growth above this many MB (10**6 bytes) per hour counts as a leak (default 10)")
    p.add_argument("--plot", metavar="FILE.png", help="write a plot of memory and the fitted trend (needs matplotlib)")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="a command to start, watch, and terminate at the end")
    from sizeup.cli.commands.watch_util import add_util_arguments

    add_util_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup.cli.db import open_writer
    from sizeup.errors import ConfigError, MeasureError
    from sizeup.measure.leak import plot_trend, watch
    from sizeup.measure.leak_verdict import check_plot_path
    from sizeup.units import MEGA

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.util or args.replay:
        from sizeup.cli.commands.watch_util import run_util

        return run_util(args, command)
    if (args.pid is None) == (not command):
        raise ConfigError("give --pid PID or -- COMMAND ..., not both and not neither")
    interval_s, duration_s = args.interval or 10.0, args.duration
    if args.plot:
        check_plot_path(args.plot)  # an unwritable plot is refused before the watch, not after it
    if args.pid is not None:
        from sizeup.measure.leak import sample_process

        sample_process(args.pid)  # an unknown pid fails here, before a run is recorded
    with open_writer(args.db) as store:  # a store that cannot be written is refused here, before the watch
        result = watch(pid=args.pid, command=command or None, interval_s=interval_s, duration_s=duration_s,
                       store=store, gpu=args.gpu, children=args.children,
                       threshold_bytes_per_hour=args.threshold_mb_per_hour * MEGA,
                       stdout=2 if args.json else None)
        db_path = store.where
    plot = str(plot_trend(result, args.plot)) if args.plot else None
    if args.json:
        from sizeup.cli.main import emit_json

        emit_json(result.to_dict() | {"db": str(db_path), "plot": plot})
        return 1 if result.store_error else 0
    print(render_watch(result, gpu=args.gpu))
    if plot:
        print(f"plot written to {plot}")
    if result.store_error:
        raise MeasureError(f"the watch's verdict stands, but its run was not fully saved: {result.store_error}")
    print(f"run {result.run_id} saved in {db_path}")
    return 0


def _mb_per_hour(bytes_per_s: float) -> str:
    from sizeup.measure.leak import format_mb_per_hour
    from sizeup.units import parse_duration_s

    return format_mb_per_hour(bytes_per_s * parse_duration_s("1h"), sign=True)


def render_watch(result, *, gpu: bool = False) -> str:
    from sizeup.units import format_bytes, format_seconds

    lines = [f"watched {result.target}"]
    samples = result.samples
    span = samples[-1].monotonic_s - samples[0].monotonic_s if samples else 0.0
    lines.append(f"{len(samples)} samples every {format_seconds(result.interval_s)} over {format_seconds(span)} "
                 f"(ended: {result.ended})")
    if samples:
        memory = [s.memory_bytes for s in samples]
        lines.append(f"memory: {format_bytes(memory[0])} first, {format_bytes(memory[-1])} last, "
                     f"{format_bytes(min(memory))} min, {format_bytes(max(memory))} max")
    lines.append(f"verdict: {result.verdict}")
    trend = result.trend
    if trend is not None:
        lines.append(f"slope: {_mb_per_hour(trend.slope_bytes_per_s)} MB/hour "
                     f"({trend.band_level:.0%} band {_mb_per_hour(trend.band_low_bytes_per_s)} to "
                     f"{_mb_per_hour(trend.band_high_bytes_per_s)} MB/hour; confidence of growth "
                     f"{trend.confidence:.1%}), fitted over {trend.points} of {trend.samples} samples")
        lines.extend(f"note: {n}" for n in trend.notes)
    if result.gpu_trend is not None:
        g = result.gpu_trend
        lines.append(f"gpu: {result.gpu_verdict}; slope {_mb_per_hour(g.slope_bytes_per_s)} MB/hour "
                     f"({g.band_level:.0%} band {_mb_per_hour(g.band_low_bytes_per_s)} to "
                     f"{_mb_per_hour(g.band_high_bytes_per_s)})")
    elif gpu and all(s.gpu_memory_bytes is None for s in samples):
        lines.append("gpu: not readable (no NVML, or the process is not visible to it)")
    return "\n".join(lines)

