"""`sizeup compare RUN_ID`: a stored run beside its prediction, term by term (time by op kind, memory),
or a load test beside the SLA its plan promised. It only reads the run database."""

from __future__ import annotations

import argparse

from sizeup.cli.db import add_db_argument
from sizeup.units import number_flag
from dataclasses import replace


def register(sub: argparse._SubParsersAction) -> None:
    k = sub.add_parser("compare", help="predicted against measured, term by term, for a stored run")
    k.add_argument("run_id", type=number_flag(integer=True, minimum=1, maximum=2**63 - 1), metavar="RUN_ID")
    k.add_argument("--calibration", default=None,
                   help="the profile the prediction is priced with (default local: its fit of the run's workload "
                        "class where there is one, else its measured peaks)")
    k.add_argument("--statistic", choices=("auto", "min", "p10", "median", "cpu-min"), default=None,
                   help="statistic of the repetitions compared with the prediction (default: the one the "
                        "calibration was fitted to, else min)")
    k.add_argument("--sla", metavar="SCENARIO.yaml",
                   help="serving runs (sizeup load, runs import): the scenario whose SLA the run is checked against "
                        "(default: the one given to 'sizeup load --sla')")
    k.add_argument("--json", action="store_true")
    add_db_argument(k)
    k.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    from sizeup.cli.measured import report_at
    from sizeup.cli.main import emit_json
    from sizeup.measure.calibrate import overhead_comparison, overhead_term, uncalibrated_efficiency
    from sizeup.measure.calibrate_fit import NOISY_SPREAD, resolve_statistic, spread, stored_statistic
    from sizeup.errors import MeasureError
    from sizeup.cli.db import db_exists, open_reader
    from sizeup.store import describe_db
    from sizeup.price.roofline import price
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    if not db_exists(args.db):  # reading never creates a store
        raise MeasureError(f"no run {args.run_id}: no run database at {describe_db(args.db)} (the file does not "
                           "exist)")
    with open_reader(args.db) as store:
        run = store.run(args.run_id)
        if run.kind == "load":
            from sizeup.cli.commands.compare_serving import compare_serving

            return compare_serving(run, store, args)
        if run.kind not in ("inference", "train"):
            raise MeasureError(f"run {run.id} is a {run.kind} run: nothing was predicted for it "
                               f"(see sizeup runs show {run.id})")
        from sizeup.measure.calibrate_runs import run_workload
        from sizeup.measure.profiles import choose_profile

        profile = choose_profile(store, args.calibration or "local", run_workload(run),
                                 implicit=args.calibration is None)
        statistic = resolve_statistic(store, run.points, args.statistic or profile.data.get("statistic") or "auto")
        stats = {p.id: stored_statistic(store, p, statistic) for p in run.points if p.status == "ok"}
        cpu_mins = {p.id: stored_statistic(store, p, "cpu-min") for p in run.points if p.status == "ok"}
    if run.config.get("llm"):
        return _compare_llm(run, profile, args)
    rows, kinds_total, overhead, small = [], {}, None, []
    no_overhead = _small_batch_work(profile)
    for point in run.points:
        if point.status != "ok" or not point.latency_p50_s:
            continue
        report = report_at(run.target, run.config, point.batch, train=run.kind == "train")
        roof = price(report.ledger, profile.device, profile.efficiency)
        value = stats.get(point.id) or point.latency_min_s or point.latency_p50_s
        if not point.grad_accumulation or point.grad_accumulation == 1:
            work = price(report.ledger, profile.device, no_overhead).total_s.typical
            small.append((point.batch, value, roof.total_s.typical, work))
        raw = price(report.ledger, profile.device, uncalibrated_efficiency(profile.device.kind,
                                                                           profile.data.get("bench")))
        accumulation = point.grad_accumulation or 1
        if overhead is None:  # the smallest batch: where the fixed cost is the largest share
            overhead = {**overhead_term(roof), "batch": point.batch}
        predicted = roof.total_s.typical * accumulation
        by_kind = {k: v["time_s"].typical * accumulation for k, v in roof.by("kind").items()}
        measured_kinds = point.extra.get("measured_by_kind_s") or {}
        for kind in set(by_kind) | set(measured_kinds):
            entry = kinds_total.setdefault(kind, [0.0, 0.0])
            entry[0] += by_kind.get(kind, 0.0)
            entry[1] += measured_kinds.get(kind, 0.0)
        rows.append({"batch": point.batch, "grad_accumulation": point.grad_accumulation,
                     "measured_s": point.latency_p50_s, "measured_min_s": point.latency_min_s,
                     "measured_statistic_s": value, "spread": spread(point.latency_min_s, point.latency_p50_s),
                     "measured_cpu_min_s": cpu_mins.get(point.id),
                     "predicted_s": predicted, "uncalibrated_s": raw.total_s.typical * accumulation,
                     "error": predicted / point.latency_p50_s - 1, "error_vs_statistic": predicted / value - 1,
                     "predicted_memory_bytes": report.memory.peak_bytes,
                     "measured_memory_bytes": point.peak_memory_bytes,
                     "predicted_memory_by_category": report.memory.by_category,
                     "predicted_by_kind_s": by_kind, "measured_by_kind_s": measured_kinds})
    profiled = any(v[1] for v in kinds_total.values())
    moved = None
    if profiled:
        moved = max(kinds_total, key=lambda k: abs(kinds_total[k][1] - kinds_total[k][0]))
    if overhead is not None:
        from sizeup.measure.calibrate_runs import run_floor

        overhead = {**overhead_comparison(small, overhead, profile.data.get("fit"), statistic, run_floor(run)),
                    "batch": overhead["batch"]}
        overhead["method"] = (f"measured: the run's forward on an empty batch (every op dispatched, none computed; "
                              f"its {statistic}); predicted: kernels x the profile's host time per kernel "
                              f"({overhead['overhead_source']}); intercept: the batch line's fixed cost less the "
                              "priced fixed work (not the per-op overhead: it holds the weights read every forward)")
    spreads = [r["spread"] for r in rows if r["spread"] is not None]
    stretch = [spread(r["measured_cpu_min_s"], r["measured_min_s"]) for r in rows if r["measured_cpu_min_s"]]
    stretch = [s for s in stretch if s is not None]
    noise = {"max_spread": max(spreads, default=None), "threshold": NOISY_SPREAD,
             "max_wall_over_cpu": max(stretch, default=None),
             "noisy": bool(spreads) and max(spreads) > NOISY_SPREAD,
             "load_avg_1m": [r for p in run.points for r in [p.extra.get("load_avg_1m")] if r is not None]}
    threads = (profile.data.get("bench", {}).get("threads"), run.environment.get("threads"))
    warnings = [f"the calibration's micro-benchmarks ran on {threads[0]} torch thread(s), this run on {threads[1]}: "
                "its rates may not apply"] if None not in threads and threads[0] != threads[1] else []
    data = {"run_id": run.id, "target": run.target, "calibration": profile.name, "calibrated": profile.fitted,
            "calibration_notes": list(profile.notes),
            "statistic": statistic, "noise": noise, "warnings": warnings, "overhead": overhead, "points": rows,
            "by_kind": {k: {"predicted_s": v[0], "measured_s": v[1]} for k, v in kinds_total.items()},
            "largest_gap_kind": moved}
    if args.json:
        emit_json(data)
        return 0
    table = [[r["batch"], format_seconds(r["measured_statistic_s"]), format_seconds(r["measured_s"]),
              f"+{r['spread']:.0%}" if r["spread"] is not None else "", format_seconds(r["predicted_s"]),
              f"{r['error_vs_statistic']:+.1%}", format_seconds(r["uncalibrated_s"]),
              format_bytes(r["measured_memory_bytes"]) if r["measured_memory_bytes"] is not None else "",
              format_bytes(r["predicted_memory_bytes"])] for r in rows]
    print(render_table(["batch", f"measured {statistic}", "measured P50", "spread", "predicted",
                        f"error vs {statistic}", "uncalibrated", "measured memory", "predicted peak"], table,
                       title=f"run {run.id}: {run.target} ({profile.name}, "
                             f"{'fitted' if profile.fitted else 'not fitted'})"))
    for note in profile.notes:
        print(f"calibration: {note}")
    if overhead is not None:
        print("\n" + _overhead_line(overhead, format_seconds))
    for warning in warnings:
        print(f"warning: {warning}")
    if noise["noisy"]:
        print(f"noisy run: a point's median is up to +{noise['max_spread']:.0%} over its minimum (threshold "
              f"{NOISY_SPREAD:.0%}): the machine was busy; the comparison uses the {statistic}"
              + (f" (the fastest wall time is up to +{noise['max_wall_over_cpu']:.0%} over its CPU time)"
                 if noise["max_wall_over_cpu"] is not None else ""))
    if profiled:
        kinds = [[k, format_seconds(v[0]), format_seconds(v[1]),
                  f"{(v[0] - v[1]) / v[1]:+.0%}" if v[1] else ""] for k, v in
                 sorted(kinds_total.items(), key=lambda kv: -kv[1][1])]
        print()
        print(render_table(["op kind", "predicted", "measured (profiler)", "signed error"], kinds))
        print(f"\nthe largest gap is in {moved} ops: its efficiency assumption moved the estimate most")
    else:
        print("\n(measure with --profile to compare time per op kind)")
    print("measured memory is the process RSS above the point's start on CPU (cuda max_memory_allocated on GPU); "
          "predicted is the trace's live-tensor peak")
    return 0


def _small_batch_work(profile):
    """The profile's efficiency with no per-op overhead, at the rate the overhead was fitted with: the small
    batches' own where the fit kept one (measure.calibrate_fit), so the fixed work subtracted from the measured
    intercept is priced as the fit priced it."""
    from sizeup.ranges import Range

    eff = replace(profile.efficiency, overhead_s=Range(0.0, 0.0, 0.0))
    fit = profile.data.get("fit") or {}
    small = fit.get("small_batch_compute")
    values = profile.data.get("values")
    if not small or not values or fit.get("size_curve"):  # a fitted size curve already prices small ops slower
        return eff
    from sizeup.measure.calibrate import profile_efficiency

    factor = {k: small for k in values if k.startswith("tensor_") or k == "vector"}
    return profile_efficiency({**values, **factor, "overhead_s": 0.0}, 0.0, eff.size_curve)


def _overhead_line(o: dict, format_seconds) -> str:
    """The per-op overhead, predicted (± the fit's error) against the measured floor, and the batch line's
    intercept beside it."""
    def pm(value):
        return f" ± {format_seconds(value)}" if value is not None else ""

    text = (f"per-op overhead (batch {o['batch']}): predicted {format_seconds(o['predicted_s'])}"
            f"{pm(o['predicted_stderr_s'])} ({o['kernels']:.0f} kernels x {format_seconds(o['per_kernel_s'])}, "
            f"{o['overhead_source']}), measured ")
    if o["measured_s"] is None:
        reason = (o.get("floor") or {}).get("error") or "the run has no floor (measured before 'measure' timed it)"
        text += f"n/a ({reason})"
    else:
        text += f"{format_seconds(o['measured_s'])} ({o['error']:+.1%}) — the forward on an empty batch ({o['statistic']})"
        if not o["pinned"]:
            text += "\nnot pinned: the floor's repetitions spread over 20% (a busy machine): the agreement means little"
    if o.get("intercept_s") is not None:
        text += (f"\nbatch-line intercept {format_seconds(o['intercept_s'])}{pm(o['intercept_stderr_s'])} (fixed cost "
                 f"{format_seconds(o['fixed_cost_measured_s'])} less priced fixed work {format_seconds(o['fixed_work_s'])}): "
                 "not the per-op overhead — it also holds the weights read every forward")
    return text


def _compare_llm(run, profile, args: argparse.Namespace) -> int:
    """Prefill and decode of a preset LLM run against the analytic ledger priced with the profile."""
    from sizeup.cli.main import emit_json
    from sizeup.ingest.hf_config import load_model
    from sizeup.ingest.transformer_ops import Step, transformer_ledger
    from sizeup.price.roofline import price
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    arch = load_model(run.target)
    prompt, context, dtype = run.config["prompt"], run.config["context"], run.config.get("dtype", "fp32")
    rows = []
    for point in run.points:
        if point.status != "ok" or not point.latency_p50_s:
            continue
        step = Step(batch=point.batch, new_tokens=prompt, context=prompt) if point.phase == "prefill" else \
            Step(batch=point.batch, new_tokens=1, context=context)
        ledger = transformer_ledger(arch, step, weights=dtype, act_dtype=dtype, per_layer=False)
        predicted = price(ledger, profile.device, profile.efficiency).total_s.typical
        rows.append({"batch": point.batch, "phase": point.phase, "measured_s": point.latency_p50_s,
                     "predicted_s": predicted, "error": predicted / point.latency_p50_s - 1})
    if args.json:
        emit_json({"run_id": run.id, "target": run.target, "calibration": profile.name,
                   "calibration_notes": list(profile.notes), "points": rows})
        return 0
    print(render_table(["batch", "phase", "measured P50", "predicted", "error"],
                       [[r["batch"], r["phase"], format_seconds(r["measured_s"]), format_seconds(r["predicted_s"]),
                         f"{r['error']:+.1%}"] for r in rows], title=f"run {run.id}: {run.target} ({profile.name})"))
    for note in profile.notes:
        print(f"calibration: {note}")
    return 0
