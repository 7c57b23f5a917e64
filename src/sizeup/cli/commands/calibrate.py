"""`sizeup calibrate`: fit this device's efficiency from micro-benchmarks and the stored runs."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("calibrate", help="fit this device's efficiency from micro-benchmarks and stored runs")
    c.add_argument("--quick", action="store_true", help="(re)measure the micro-benchmarks: GEMM sweep and copy")
    c.add_argument("--runs", help="run ids to fit to (default: every finished inference run on this device)")
    c.add_argument("--name", default="local", help="profile name (default local)")
    c.add_argument("--device", default="cpu")
    c.add_argument("--json", action="store_true")
    c.add_argument("--db", help="run database (default: the user data folder)")
    c.set_defaults(func=run_calibrate)


def _observations(store, run_ids, profile):
    """(traced ledger at the batch, measured median) for every ok inference point of the runs."""
    from sizeup.cli.measured import report_at

    observations, held = [], []
    for run_id in run_ids:
        run = store.run(run_id)
        if run.kind != "inference" or run.config.get("llm"):
            continue
        for point in run.points:
            if point.status != "ok" or not point.latency_p50_s:
                continue
            ledger = report_at(run.target, run.config, point.batch).ledger
            observations.append((ledger, point.latency_p50_s))
            held.append((run_id, point.batch))
    return observations, held


def run_calibrate(args: argparse.Namespace) -> int:
    from sizeup.cli.measured import positive_ints
    from sizeup.cli.main import emit_json
    from sizeup.errors import MeasureError
    from sizeup.measure.calibrate import fit_efficiency, load_profile, local_device, microbenchmarks, profile_to_dict
    from sizeup.measure.store import Store
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    with Store(args.db) as store:
        if args.quick or args.name not in store.calibrations():
            from sizeup.cli.progress import Progress

            with Progress("calibrate: GEMM sweep and copy micro-benchmarks"):
                bench = microbenchmarks(args.device)
        else:
            bench = store.calibration(args.name)["profile"]["bench"]
        device = local_device(bench)
        if args.runs:
            run_ids = list(positive_ints(args.runs, "--runs"))
        else:
            run_ids = [r.id for r in store.runs(kind="inference") if r.effective_status in ("ok", "interrupted")]
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
