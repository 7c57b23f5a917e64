"""`sizeup calibrate`: fit this device's efficiency from micro-benchmarks and the stored runs."""

from __future__ import annotations

import argparse

from sizeup.units import number_flag

STATISTICS = ("auto", "min", "p10", "median", "cpu-min")  # measure.calibrate_fit's, and auto (numpy-free here)


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("calibrate", help="fit this device's efficiency from micro-benchmarks and stored runs")
    c.add_argument("--quick", action="store_true", help="(re)measure the micro-benchmarks: GEMM sweep and copy")
    c.add_argument("--runs", help="run ids to fit to (default: every finished inference run on this device)")
    c.add_argument("--name", default="local", help="profile name (default local)")
    c.add_argument("--device", default="cpu")
    c.add_argument("--statistic", choices=STATISTICS, default="auto",
                   help="which statistic of each point's repetitions to fit: min (load only adds time), p10, "
                        "median, cpu-min (least CPU time, runs measured with --threads 1); default auto: cpu-min "
                        "where every point has CPU times, else min")
    c.add_argument("--threads", type=number_flag(integer=True, minimum=1, maximum=4096), help="torch CPU threads for the micro-benchmarks (as measure --threads)")
    c.add_argument("--json", action="store_true")
    c.add_argument("--db", help="run database (default: the user data folder)")
    c.set_defaults(func=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:
    from sizeup.api import CalibrateOptions, calibrate
    from sizeup.cli.main import emit_json
    from sizeup.cli.measured import positive_ints
    from sizeup.cli.progress import Progress

    options = CalibrateOptions(quick=args.quick, runs=positive_ints(args.runs, "--runs") if args.runs else None,
                               name=args.name, device=args.device, statistic=args.statistic, threads=args.threads,
                               db=args.db)
    with Progress("calibrate") as bar:
        result = calibrate(options, progress=bar.note)
    emit_json(result.to_dict()) if args.json else print(render_calibration(result))
    return 0


def render_calibration(r) -> str:
    from sizeup.measure.calibrate_fit import NOISY_SPREAD
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    lines = [f"calibration {r.name!r}: GEMM {r.bench['matmul_flops_per_s'] / 1e9:,.1f} GFLOP/s, copy "
             f"{r.bench['copy_bytes_per_s'] / 1e9:,.1f} GB/s"]
    if r.fitted:
        se = {"overhead_s": r.overhead_stderr_s,
              **{k: r.compute_stderr for k in r.fitted if k.startswith("tensor") or k == "vector"}}
        rows = []
        for k, v in r.fitted.items():
            err = se.get(k)
            text = format_seconds(v) if k == "overhead_s" else f"{v:.3g}"
            plus = "" if err is None else " ± " + (format_seconds(err) if k == "overhead_s" else f"{err:.2g}")
            rows.append([k, text + plus])
        lines.append(render_table(["efficiency (vs measured peaks)", "fitted (± standard error)"], rows))
        lines.append(f"fit: {r.points} points' {r.statistic} over {len(r.runs)} run(s), median error "
                     f"{r.residual_median:.1%}; per-op overhead {r.overhead_source}"
                     + (" (the forward on an empty batch / its kernels)" if r.overhead_source == "measured" else ""))
        lines.extend(f"note: {note}" for note in r.notes)
        if r.noisy_points:
            worst = max(r.noisy_points, key=lambda p: p["spread"])
            lines.append(f"noisy: {len(r.noisy_points)} of {r.points_held} points have a median more than "
                         f"{NOISY_SPREAD:.0%} above their minimum (worst: run {worst['run_id']} batch "
                         f"{worst['batch']}, +{worst['spread']:.0%}); the fit uses the {r.statistic}")
    lines.append(f"profile {r.name!r} saved ({'fitted' if r.profile_fitted else 'micro-benchmarks only'})")
    return "\n".join(lines)
