"""`sizeup compare RUN_ID`: a stored run beside its prediction, term by term (time by op kind, memory),
or a load test beside the SLA its plan promised. It only reads the run database."""

from __future__ import annotations

import argparse

from sizeup.cli.db import add_db_argument
from sizeup.units import number_flag


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
    from sizeup.api import compare_run
    from sizeup.api.run_compare import RunComparison
    from sizeup.api.serving_compare import ServingComparison
    from sizeup.cli.main import emit_json

    result = compare_run(args.run_id, db=args.db, calibration=args.calibration, statistic=args.statistic,
                         sla=args.sla)
    if args.json:
        emit_json(result.to_dict())
    elif isinstance(result, ServingComparison):
        from sizeup.cli.commands.compare_serving import render

        print("\n".join(render(result.run, result.to_dict())))
    elif isinstance(result, RunComparison):
        print(render_comparison(result))
    else:
        print(render_llm(result))
    return 0


def render_comparison(c) -> str:
    """A model run: per point measured against predicted, the per-op overhead, noise, and time per op kind."""
    from sizeup.measure.calibrate_fit import NOISY_SPREAD
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    table = [[r["batch"], format_seconds(r["measured_statistic_s"]), format_seconds(r["measured_s"]),
              f"+{r['spread']:.0%}" if r["spread"] is not None else "", format_seconds(r["predicted_s"]),
              f"{r['error_vs_statistic']:+.1%}", format_seconds(r["uncalibrated_s"]),
              format_bytes(r["measured_memory_bytes"]) if r["measured_memory_bytes"] is not None else "",
              format_bytes(r["predicted_memory_bytes"])] for r in c.points]
    lines = [render_table(["batch", f"measured {c.statistic}", "measured P50", "spread", "predicted",
                           f"error vs {c.statistic}", "uncalibrated", "measured memory", "predicted peak"], table,
                          title=f"run {c.run_id}: {c.target} ({c.calibration}, "
                                f"{'fitted' if c.calibrated else 'not fitted'})")]
    lines.extend(f"calibration: {note}" for note in c.calibration_notes)
    if c.overhead is not None:
        lines.append("\n" + _overhead_line(c.overhead, format_seconds))
    lines.extend(f"warning: {warning}" for warning in c.warnings)
    noise = c.noise
    if noise["noisy"]:
        lines.append(f"noisy run: a point's median is up to +{noise['max_spread']:.0%} over its minimum (threshold "
                     f"{NOISY_SPREAD:.0%}): the machine was busy; the comparison uses the {c.statistic}"
                     + (f" (the fastest wall time is up to +{noise['max_wall_over_cpu']:.0%} over its CPU time)"
                        if noise["max_wall_over_cpu"] is not None else ""))
    if c.profiled:
        kinds = [[k, format_seconds(v["predicted_s"]), format_seconds(v["measured_s"]),
                  f"{(v['predicted_s'] - v['measured_s']) / v['measured_s']:+.0%}" if v["measured_s"] else ""]
                 for k, v in sorted(c.by_kind.items(), key=lambda kv: -kv[1]["measured_s"])]
        lines += ["", render_table(["op kind", "predicted", "measured (profiler)", "signed error"], kinds),
                  f"\nthe largest gap is in {c.largest_gap_kind} ops: its efficiency assumption moved the estimate "
                  "most"]
    else:
        lines.append("\n(measure with --profile to compare time per op kind)")
    lines.append("measured memory is the process RSS above the point's start on CPU (cuda max_memory_allocated on "
                 "GPU); predicted is the trace's live-tensor peak")
    return "\n".join(lines)


def render_llm(c) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    table = render_table(["batch", "phase", "measured P50", "predicted", "error"],
                         [[r["batch"], r["phase"], format_seconds(r["measured_s"]), format_seconds(r["predicted_s"]),
                           f"{r['error']:+.1%}"] for r in c.points],
                         title=f"run {c.run_id}: {c.target} ({c.calibration})")
    return "\n".join([table, *(f"calibration: {note}" for note in c.calibration_notes)])


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
