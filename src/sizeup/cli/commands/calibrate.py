"""`sizeup calibrate`: this device's measured peaks (micro-benchmarks), and one profile per workload class,
engine and version fitted from every matching run in the store, saying why it left each other run out
(measure.calibrate_team, measure.calibrate_runs)."""

from __future__ import annotations

import argparse

from sizeup.cli.db import add_db_argument
from sizeup.units import number_flag

STATISTICS = ("auto", "min", "p10", "median", "cpu-min")  # measure.calibrate_fit's, and auto (numpy-free here)


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("calibrate", help="fit this device's efficiency from micro-benchmarks and stored runs")
    c.add_argument("--quick", action="store_true", help="(re)measure the micro-benchmarks: GEMM sweep and copy")
    c.add_argument("--runs", help="run ids to fit to (default: every finished run of the device type, from any "
                                  "machine)")
    c.add_argument("--name", default="local", help="profile name (default local); class fits are saved as "
                                                   "NAME/CLASS/ENGINE@VERSION")
    c.add_argument("--device", default="cpu", help="this machine's device for the micro-benchmarks (default cpu)")
    c.add_argument("--device-type", metavar="DEVICE",
                   help="calibrate another machines' device type (a catalog name, e.g. h100) from their stored "
                        "runs, against its datasheet peaks, without micro-benchmarks")
    c.add_argument("--statistic", choices=STATISTICS, default="auto",
                   help="which statistic of each point's repetitions to fit: min (load only adds time), p10, "
                        "median, cpu-min (least CPU time, runs measured with --threads 1); default auto: cpu-min "
                        "where every point has CPU times, else min")
    c.add_argument("--threads", type=number_flag(integer=True, minimum=1, maximum=4096), help="torch CPU threads for the micro-benchmarks (as measure --threads)")
    c.add_argument("--json", action="store_true")
    add_db_argument(c)
    c.set_defaults(func=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:
    from sizeup.api import CalibrateOptions, calibrate
    from sizeup.cli.db import warn
    from sizeup.cli.main import emit_json
    from sizeup.cli.measured import positive_ints
    from sizeup.cli.progress import Progress

    options = CalibrateOptions(quick=args.quick, runs=positive_ints(args.runs, "--runs") if args.runs else None,
                               name=args.name, device=args.device, device_type=args.device_type,
                               statistic=args.statistic, threads=args.threads, db=args.db)
    with Progress("calibrate") as bar:
        report = calibrate(options, progress=bar.note, warn=warn)
    data = report.to_dict()
    if args.json:
        emit_json(data)
        return 0
    for line in render_calibration(data):
        print(line)
    return 0


def render_calibration(data: dict) -> list[str]:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    lines = []
    bench = data["bench"]
    if bench:
        lines.append(f"calibration {data['name']!r}: GEMM {bench['matmul_flops_per_s'] / 1e9:,.1f} GFLOP/s, copy "
                     f"{bench['copy_bytes_per_s'] / 1e9:,.1f} GB/s on device type {data['device_type']}")
    for p in data["profiles"]:
        key = p["key"]
        engine = " ".join(v for v in (key.get("engine"), key.get("engine_version")) if v) or "engine unknown"
        hosts = len(p["hosts"])
        lines.append(f"\nprofile {p['name']!r} (class {key['workload_class']}): calibrated on {len(p['runs'])} run(s) "
                     f"from {hosts} machine{'s' if hosts != 1 else ''}, {engine}; {p['points']} points' "
                     f"{p['statistic']}, median error {p['residual_median']:.1%}")
        se = {"overhead_s": p["overhead_stderr_s"]}
        rows = []
        for k, v in p["values"].items():
            err = se.get(k, p["compute_stderr"] if k.startswith("tensor") or k == "vector" else None)
            text = format_seconds(v) if k == "overhead_s" else f"{v:.3g}"
            plus = "" if err is None else " ± " + (format_seconds(err) if k == "overhead_s" else f"{err:.2g}")
            rows.append([k, text + plus])
        lines.append(render_table(["efficiency", "fitted (± standard error)"], rows))
        lines.extend(f"note: {n}" for n in p["notes"])
    if not data["profiles"]:
        lines.append("no profile fitted" + (" (micro-benchmarks only: measured peaks saved)" if bench else ""))
    for i in data["ignored"]:
        where = f"run {i['run_id']}" + (f" batch {i['batch']}" if i["batch"] is not None else "") + \
            (f" {i['phase']}" if i["phase"] and i["batch"] is not None else "")
        lines.append(f"left out {where}: {i['reason']}")
    return lines
