"""`sizeup compare RUN` of a serving run, as text: measured percentiles, sizeup's predicted range beside them, and
the SLA rows (the comparison is `sizeup.api.compare_run`, sizeup.api.serving_compare)."""

from __future__ import annotations


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
