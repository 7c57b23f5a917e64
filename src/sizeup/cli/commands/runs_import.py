"""`sizeup runs import FILE` (a load tester's result file as a stored serving run) and `sizeup runs export
--mlflow` (runs and their predictions to an MLflow tracking server): the two verbs of `runs` that talk to other
tools. The work is in measure.importers and measure.mlflow_export."""

from __future__ import annotations

import argparse


def run_import(args: argparse.Namespace) -> int:
    from sizeup.cli.db import open_writer
    from sizeup.cli.main import emit_json
    from sizeup.measure.importers import read_result_file, store_import
    from sizeup.report.terminal import render_table
    from sizeup.units import format_seconds

    result = read_result_file(args.file, args.source)
    if args.model:
        from sizeup.ingest.hf_config import load_model

        load_model(args.model)  # an unknown model is refused before anything is stored
    with open_writer(args.db) as store:
        run_id = store_import(store, result, model=args.model, device_type=args.device_type, gpus=args.gpus,
                              engine=args.engine, host=args.host)
        record = store.run(run_id) if run_id > 0 else None
    data = {"run_id": run_id, "source": result.source, "file": result.file, "model": args.model or result.model,
            "points": [p.to_extra() | {"concurrency": p.concurrency} for p in result.points],
            "notes": list(result.notes), "provenance": record.provenance.to_dict() if record else None}
    if args.json:
        emit_json(data)
        return 0
    rows = [[p.label, p.concurrency, p.requests, *(format_seconds(m[k]) if k in m else "" for m, k in
                                                   ((p.ttft_s, "p50"), (p.ttft_s, "p99"), (p.tpot_s, "p50"),
                                                    (p.tpot_s, "p99"))),
             f"{p.output_tokens_per_s:,.0f}" if p.output_tokens_per_s else ""] for p in result.points]
    print(render_table(["benchmark", "concurrency", "requests", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
                        "output tok/s"], rows, title=f"run {run_id}: {result.source} result {result.file}"))
    for note in result.notes:
        print(f"note: {note}")
    missing = [flag for flag, value in (("--model", data["model"]), ("--device-type", args.device_type)) if not value]
    if missing:
        print(f"to compare it with a prediction or calibrate from it, import it again with {' and '.join(missing)}")
    return 0


def run_mlflow_export(store, args: argparse.Namespace) -> int:
    from sizeup.measure.mlflow_export import export_runs

    logged = export_runs(store, args.run_ids, tracking_uri=args.tracking_uri, experiment=args.experiment)
    for run_id, mlflow_id in logged:
        print(f"run {run_id} -> MLflow run {mlflow_id} (experiment {args.experiment!r})")
    return 0
