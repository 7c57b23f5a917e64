"""`sizeup watch --util`: the flags and the run of the bottleneck diagnosis (registered by `watch.py`).

    sizeup watch --util --duration 2min -- python train.py          # start a job, watch it, diagnose it
    sizeup watch --util --pid 4242 --steps /tmp/steps.txt           # a running job that logs its step times
    sizeup watch --replay tegrastats.log --max-gpu-clock 1020 --trip 99   # a recorded log

Why `watch --util` and not a `diagnose` command: the target (a pid or a command after --), the interval and the
duration, the run store and the process handling are the leak watch's; only what is sampled and concluded
differs.
"""

from __future__ import annotations

import argparse

from sizeup.units import number_flag

__all__ = ["add_util_arguments", "run_util", "render_util"]


def add_util_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("bottleneck diagnosis (--util)")
    g.add_argument("--util", action="store_true",
                   help="diagnose instead of watching memory: GPU utilisation, SM clock, power, temperature and "
                        "throttle reasons, CPU per core, disk and network, step times; ends with a verdict")
    g.add_argument("--gpu-source", default="auto", choices=["auto", "nvml", "nvidia-smi", "tegrastats", "none"],
                   help="where GPU readings come from (default auto: NVML via nvidia-ml-py, else tegrastats)")
    g.add_argument("--steps", metavar="FILE",
                   help="a file the job appends one step time (seconds) per line to; a command started after -- "
                        "gets one in $SIZEUP_STEP_FILE")
    g.add_argument("--replay", metavar="LOG",
                   help="diagnose a recorded log instead: nvidia-smi --query-gpu … --format=csv output, or "
                        "tegrastats lines")
    g.add_argument("--max-gpu-clock", type=number_flag(above=0, maximum=10_000), metavar="MHZ",
                   help="Jetson: the power mode's GPU maximum clock (tegrastats does not print it)")
    g.add_argument("--trip", type=number_flag(minimum=-50, maximum=200), metavar="CELSIUS",
                   help="Jetson: the temperature at which the GPU is throttled")
    g.add_argument("--device", metavar="NAME",
                   help="the catalog device watched (e.g. 'orin nano 15w'): --max-gpu-clock from its power mode and "
                        "--trip from its published thermal trip points, unless given")


def _from_catalog(args: argparse.Namespace) -> None:
    """Fill --max-gpu-clock and --trip from the catalog device --device names (what the flags give wins)."""
    if not args.device:
        return
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.thermal import thermal_profile

    device = load_catalog().device(args.device)
    if args.max_gpu_clock is None:
        hz = device.power_mode_clocks.get("gpu_max_hz") or device.boost_clock_hz
        args.max_gpu_clock = hz / 1e6 if hz else None
    if args.trip is None:
        profile = thermal_profile(device)
        args.trip = profile.trips[0].temperature_c if profile is not None else None


def run_util(args: argparse.Namespace, command: list[str]) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError

    _from_catalog(args)

    if args.replay:
        if args.pid is not None or command:
            raise ConfigError("--replay diagnoses a recorded log: give no --pid or command")
        from sizeup.errors import MeasureError
        from sizeup.files import read_regular
        from sizeup.measure.util_watch import replay

        text = read_regular(args.replay, what="--replay", error=MeasureError, limit=64 << 20).decode(
            "utf-8", errors="replace")
        result = replay(text, max_gpu_clock_mhz=args.max_gpu_clock, trip_c=args.trip,
                        interval_s=args.interval or 1.0, name=str(args.replay))
        run_id = None
    else:
        result, run_id = _watch(args, command)
    if args.json:
        emit_json(result.to_dict() | {"run_id": run_id})
        return 0
    print(render_util(result))
    if run_id is not None:
        print(f"run {run_id} saved")
    return 0


def _watch(args: argparse.Namespace, command: list[str]):
    from sizeup.cli.db import open_writer
    from sizeup.measure.util_watch import UtilConfig, watch_util

    cfg = UtilConfig(pid=args.pid, command=tuple(command), interval_s=args.interval or 1.0,
                     duration_s=args.duration, gpu=args.gpu_source, steps_path=args.steps,
                     max_gpu_clock_mhz=args.max_gpu_clock, trip_c=args.trip, children=True)
    if args.pid is not None:
        from sizeup.measure.leak import sample_process

        sample_process(args.pid)  # an unknown pid fails here, before anything is recorded
    result = watch_util(cfg, stdout=2 if args.json else None)
    with open_writer(args.db) as store:
        run_id = store.start_run(kind="watch", target=result.target, device="local",
                                 config={"mode": "util", "interval_s": cfg.interval_s, "gpu_source": result.gpu_source},
                                 environment={})
        store.add_point(run_id, batch=None, phase="util", status="ok", samples_s=result.steps,
                        extra={"diagnosis": result.diagnosis.to_dict(), "ended": result.ended,
                               "samples": len(result.host)})
        store.finish_run(run_id, "ok")
    return result, run_id


def render_util(result) -> str:
    from sizeup.units import format_seconds

    d = result.diagnosis
    lines = [f"watched {result.target}: {len(result.host) or len(result.gpu)} samples every "
             f"{format_seconds(result.interval_s)} (GPU readings: {result.gpu_source}; ended: {result.ended})",
             f"verdict: {d.summary}"]
    lines += [f"  evidence: {e}" for e in d.evidence]
    lines += [f"  also: {f}" for f in d.findings]
    for index, per in result.per_device.items():
        lines.append(f"GPU {index}: {per.summary}")
    if result.bad_step_lines:
        lines.append(f"note: {result.bad_step_lines} lines of the step file were not a number of seconds (skipped)")
    return "\n".join(lines)
