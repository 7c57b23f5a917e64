"""Runs out of a store as CSV (one row per point, with its run's fields) or JSON (runs with points and samples).

A run's text (its target, device, host, a server's error) came from files and servers: in CSV every text cell shows
control characters as escapes (`sizeup.escape.terminal_line`) and one that a spreadsheet would read as a formula
(`= + - @`, not a number) is written with Excel's quote prefix, as `report/xlsx.py` writes its cells. JSON escapes
control characters itself."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from sizeup.escape import spreadsheet_text, terminal_line
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
            writer.writerow([_cell(v) for v in (run.id, run.created, run.kind, run.target, run.device,
                                                 run.effective_status, *(values[c] for c in point_fields))])
    return out.getvalue()


def _cell(value: object) -> object:
    """A CSV cell: numbers as they are, text with control characters escaped and formula starts quoted."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return value
    text = terminal_line(value)
    if spreadsheet_text(text):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text
