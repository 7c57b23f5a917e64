"""`sizeup calibrate`: fit this device's efficiency from micro-benchmarks and the stored runs."""

from __future__ import annotations

import argparse

from sizeup.cli.db import add_db_argument

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
    c.add_argument("--threads", type=int, help="torch CPU threads for the micro-benchmarks (as measure --threads)")
    c.add_argument("--json", action="store_true")
    add_db_argument(c)
    c.set_defaults(func=run_calibrate)


def kernels_of(ledger) -> float:
    """The kernels a forward launches (the roofline's count)."""
    from sizeup.price.roofline import LedgerArrays

    return float(LedgerArrays.from_ledger(ledger).launches.sum())


def run_floor(run) -> dict | None:
    """The run's floor (the forward on an empty batch, measure.floor), kept in its first point's extra."""
    return next((p.extra["floor"] for p in run.points if isinstance(p.extra.get("floor"), dict)), None)


def _observations(store, run_ids, statistic: str = "auto", floors: list | None = None):
    """(traced ledger at the batch, the statistic of its repetitions) for every ok inference point of the
    runs, (run, batch, minimum, median) of each point used, and the statistic used; given `floors` (a list),
    it gets (kernels, floor seconds) of every run that timed its forward on an empty batch."""
    from sizeup.cli.measured import report_at
    from sizeup.measure.calibrate_fit import resolve_statistic, stored_statistic
    from sizeup.measure.floor import floor_seconds

    runs = [store.run(run_id) for run_id in run_ids]
    runs = [r for r in runs if r.kind == "inference" and not r.config.get("llm")]
    statistic = resolve_statistic(store, [p for r in runs for p in r.points], statistic)
    observations, held = [], []
    for run in runs:
        run_id, before = run.id, len(observations)
        for point in run.points:
            value = stored_statistic(store, point, statistic) if point.status == "ok" else None
            if not value:
                continue
            ledger = report_at(run.target, run.config, point.batch).ledger
            observations.append((ledger, value))
            held.append((run_id, point.batch, point.latency_min_s, point.latency_p50_s))
        seconds = floor_seconds(run_floor(run), statistic)
        if floors is not None and seconds and len(observations) > before:
            floors.append((kernels_of(observations[-1][0]), seconds))
    return observations, held, statistic


def noisy_points(held, threshold: float) -> list[dict]:
    """The points whose median is more than `threshold` above their minimum: measured on a busy machine."""
    from sizeup.measure.calibrate_fit import spread

    out = []
    for run_id, batch, minimum, median in held:
        s = spread(minimum, median)
        if s is not None and s > threshold:
            out.append({"run_id": run_id, "batch": batch, "spread": s})
    return out


def run_calibrate(args: argparse.Namespace) -> int:
    from sizeup.cli.measured import positive_ints
    from sizeup.cli.main import emit_json
    from sizeup.errors import MeasureError
    from sizeup.measure.calibrate import fit_profile, load_profile, local_device, microbenchmarks, profile_to_dict
    from sizeup.measure.calibrate_fit import NOISY_SPREAD
    from sizeup.cli.db import open_writer
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    if args.threads:
        if args.threads < 1:
            raise MeasureError(f"--threads {args.threads}: expected a positive integer")
        import torch

        torch.set_num_threads(args.threads)
    with open_writer(args.db) as store:
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
        fit, held, statistic = None, [], None
        if run_ids and not (args.quick and not args.runs):
            floors: list = []
            observations, held, statistic = _observations(store, run_ids, args.statistic, floors)
            if observations:
                from sizeup.measure.calibrate import size_curve

                fit = fit_profile(device, observations, size_curve(bench), [h[1] for h in held], floors)
        elif not args.quick:
            raise MeasureError("nothing to calibrate on: measure a model first (sizeup measure) or use --quick")
        values = fit.values if fit else None
        residual = fit.residual_median if fit else None
        store.save_calibration(args.name, device=args.device,
                               profile=profile_to_dict(device, values, residual, bench, run_ids if fit else [],
                                                       fit=fit.to_dict() if fit else None,
                                                       statistic=statistic if fit else None),
                               source_runs=run_ids if fit else [])
        profile = load_profile(store, args.name)
    noisy = noisy_points(held, NOISY_SPREAD)
    data = {"name": args.name, "bench": bench, "fitted": values, "residual_median": residual,
            "runs": run_ids if fit else [], "statistic": statistic if fit else None,
            "overhead_stderr_s": fit.overhead_stderr_s if fit else None,
            "compute_stderr": fit.compute_stderr if fit else None, "points": fit.points if fit else 0,
            "overhead_source": fit.overhead_source if fit else None,
            "notes": list(fit.notes) if fit else [], "noisy_points": noisy}
    if args.json:
        emit_json(data)
        return 0
    print(f"calibration {args.name!r}: GEMM {bench['matmul_flops_per_s'] / 1e9:,.1f} GFLOP/s, copy "
          f"{bench['copy_bytes_per_s'] / 1e9:,.1f} GB/s")
    if fit:
        se = {"overhead_s": fit.overhead_stderr_s, **{k: fit.compute_stderr for k in values if k.startswith("tensor")
                                                        or k == "vector"}}
        rows = []
        for k, v in values.items():
            err = se.get(k)
            text = format_seconds(v) if k == "overhead_s" else f"{v:.3g}"
            plus = "" if err is None else " ± " + (format_seconds(err) if k == "overhead_s" else f"{err:.2g}")
            rows.append([k, text + plus])
        print(render_table(["efficiency (vs measured peaks)", "fitted (± standard error)"], rows))
        print(f"fit: {fit.points} points' {statistic} over {len(run_ids)} run(s), median error "
              f"{residual:.1%}; per-op overhead {fit.overhead_source}"
              + (" (the forward on an empty batch / its kernels)" if fit.overhead_source == "measured" else ""))
        for note in fit.notes:
            print(f"note: {note}")
        if noisy:
            worst = max(noisy, key=lambda p: p["spread"])
            print(f"noisy: {len(noisy)} of {len(held)} points have a median more than {NOISY_SPREAD:.0%} above "
                  f"their minimum (worst: run {worst['run_id']} batch {worst['batch']}, +{worst['spread']:.0%}); "
                  f"the fit uses the {statistic}")
    print(f"profile {profile.name!r} saved ({'fitted' if profile.fitted else 'micro-benchmarks only'})")
    return 0
