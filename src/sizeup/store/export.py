"""Runs out of a store as CSV (one row per point, with its run's fields) or JSON (runs with points and samples)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from sizeup.store.records import POINT_COLUMNS

__all__ = ["export_runs"]


def export_runs(store, run_ids: Sequence[int], fmt: str) -> str:
    runs = [store.run(run_id) for run_id in run_ids]
    if fmt == "json":
        data = [r.to_dict() for r in runs]
        for run in data:
            for point in run["points"]:
                point["samples_s"] = store.samples(point["id"])
        return json.dumps(data, indent=2, default=str) + "\n"
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    run_fields = ("run_id", "run_created", "kind", "target", "device", "run_status")
    point_fields = tuple(c for c in POINT_COLUMNS if c != "run_id")
    writer.writerow([*run_fields, *("point_id" if c == "id" else c for c in point_fields)])
    for run in runs:
        for point in run.points:
            values = point.to_dict()
            values["extra"] = json.dumps(values["extra"], sort_keys=True, default=str)
            writer.writerow([run.id, run.created, run.kind, run.target, run.device, run.effective_status,
                             *("" if values[c] is None else values[c] for c in point_fields)])
    return out.getvalue()
