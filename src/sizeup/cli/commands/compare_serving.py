"""`sizeup compare RUN` for a serving run (`sizeup load`, or a result file brought in by `sizeup runs import`):
the plan's promise beside the measurement — the scenario's SLA percentile by percentile, and sizeup's own
prediction (TTFT, TPOT) for the run's model, device type, engine, concurrency and token lengths."""

from __future__ import annotations

import argparse


def _predictions(run, point: dict, args: argparse.Namespace, profile) -> tuple[dict, str | None]:
    """{"ttft": range, "tpot": range} from `sizeup.api.estimate` at the point's concurrency; or ({}, why not)."""
    from sizeup.errors import SizeupError

    model, device = run.config.get("model"), run.provenance.device_type
    if not model or not device or device == "remote":
        return {}, "no prediction: the run names no model and device type (import it with --model and --device-type)"
    from sizeup.api import estimate

    engine = run.provenance.engine or "vllm"
    prompt = max(1, round(run.config.get("prompt_tokens") or 512))
    output = max(1, round(run.config.get("output_tokens") or 128))
    try:
        if profile is not None:
            from sizeup.cli.calibration import calibrated_scope
            from sizeup.hardware.catalog import load_catalog

            with calibrated_scope(profile, [load_catalog().device(device)]):
                result = estimate(model, device=device, engine=engine, batch=point["concurrency"], prompt=prompt,
                                  output=output, quant=run.config.get("quant") or "bf16",
                                  gpus=int(run.config.get("gpus") or 1))
        else:
            result = estimate(model, device=device, engine=engine, batch=point["concurrency"], prompt=prompt,
                              output=output, quant=run.config.get("quant") or "bf16",
                              gpus=int(run.config.get("gpus") or 1))
    except SizeupError as e:
        return {}, f"no prediction: {e}"
    data = result.to_dict()
    return {"ttft": data["prefill"]["ttft_s"], "tpot": data["decode"]["latency_per_token_s"]}, None


def _profile(store, run, args: argparse.Namespace):
    if not args.calibration:
        return None
    from sizeup.measure.profiles import Workload, choose_profile

    return choose_profile(store, args.calibration, Workload(kind="llm", engine=run.provenance.engine,
                                                            engine_version=run.provenance.engine_version),
                          implicit=False)


def compare_serving(run, store, args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError
    from sizeup.measure.serving_compare import prediction_rows, serving_points, sla_rows

    points = serving_points(run)
    if not points:
        raise ConfigError(f"run {run.id}: the serving run recorded no successful requests")
    if args.sla:
        from sizeup.plan.scenario import load_scenario

        promised, source = load_scenario(args.sla).sla.targets, args.sla
    else:
        first = next(p for p in run.points if p.status == "ok")
        promised, source = first.extra.get("sla") or {}, "the scenario given to sizeup load --sla"
    profile = _profile(store, run, args)
    rows = []
    for point in points:
        predicted, why = _predictions(run, point, args, profile)
        rows.append({**point, "sla": sla_rows(promised, point) if promised else {},
                     "predicted": prediction_rows(point, predicted), "prediction_note": why})
    if not promised and not any(r["predicted"] for r in rows):
        raise ConfigError(f"run {run.id}: nothing to compare it with: give --sla SCENARIO.yaml, or import it with "
                          "--model and --device-type for sizeup's prediction")
    first = rows[0]
    data = {"run_id": run.id, "target": run.target, "sla_source": source if promised else None,
            "sla": first["sla"], "all_met": all(r["met"] for row in rows for r in row["sla"].values()),
            "points": rows, "calibration": profile.name if profile else None,
            "provenance": run.provenance.to_dict()}
    if args.json:
        emit_json(data)
        return 0
    for line in render(run, data):
        print(line)
    return 0


def render(run, data: dict) -> list[str]:
    from sizeup.cli.commands.load import render_sla
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    engine = " ".join(v for v in (run.provenance.engine, run.provenance.engine_version) if v) or "engine unknown"
    lines = [f"run {run.id}: serving test of {run.target} ({run.config.get('model') or 'model unknown'} on "
             f"{run.provenance.device_type or 'an unknown device'}, {engine})"]
    for row in data["points"]:
        lines.append(f"\n{row['label']}: concurrency {row['concurrency']}")
        measured = [[m.upper(), *(format_seconds(row[f"{m}_s"][p]) if p in row[f"{m}_s"] else "" for p in
                                  ("p50", "p90", "p95", "p99"))] for m in ("ttft", "tpot", "itl", "e2e")
                    if row[f"{m}_s"]]
        lines.append(render_table(["measured", "P50", "P90", "P95", "P99"], measured))
        if row["predicted"]:
            table = [[r["metric"].upper(), f"{format_seconds(r['predicted_typical_s'])} "
                      f"({format_seconds(r['predicted_low_s'])}–{format_seconds(r['predicted_high_s'])})",
                      format_seconds(r["measured_p50_s"]) if r["measured_p50_s"] is not None else "n/a",
                      f"{r['error_vs_p50']:+.0%}" if r["error_vs_p50"] is not None else "",
                      format_seconds(r["measured_p99_s"]) if r["measured_p99_s"] is not None else "n/a",
                      {True: "yes", False: "NO", None: ""}[r["p99_within_high"]]] for r in row["predicted"]]
            lines.append(render_table(["promised (sizeup)", "predicted (range)", "measured P50", "error",
                                       "measured P99", "P99 within range"], table))
        elif row["prediction_note"]:
            lines.append(row["prediction_note"])
        if row["sla"]:
            lines.append(f"SLA of {data['sla_source']}:")
            lines.extend("  " + line for line in render_sla(row["sla"]))
    return lines
