"""What the run store returns: `RunRecord` (with its `Provenance`) and `PointRecord`, decoded (and checked) from
their rows.

A row that does not decode — bad JSON, a text where a number belongs — raises one `MeasureError` that names the
database, the row and the column, never a `json`/`TypeError` traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import MeasureError

__all__ = ["RUN_COLUMNS", "POINT_COLUMNS", "PROVENANCE_COLUMNS", "Provenance", "PointRecord", "RunRecord",
           "summarize_samples", "decode_json", "run_record", "point_record"]

RUN_COLUMNS = ("id", "created", "kind", "target", "device", "status", "config", "environment", "error")
PROVENANCE_TEXT = ("host", "engine", "engine_version", "driver", "gpu_product", "sizeup_version", "workload_hash",
                   "device_type", "workload_class")
PROVENANCE_NUMBERS = ("gpu_clock_mhz", "gpu_clock_max_mhz", "power_limit_w")
PROVENANCE_COLUMNS = PROVENANCE_TEXT + PROVENANCE_NUMBERS
"""Run columns since schema version 4: what produced the run (each NULL where unknown)."""
POINT_COLUMNS = ("id", "run_id", "created", "batch", "grad_accumulation", "phase", "status", "latency_p50_s",
                 "latency_p95_s", "latency_p99_s", "latency_mean_s", "latency_min_s", "latency_max_s",
                 "repetitions", "throughput_per_s", "peak_memory_bytes", "error", "extra")
_POINT_INTS = ("id", "run_id", "repetitions")
_POINT_OPTIONAL_INTS = ("batch", "grad_accumulation", "peak_memory_bytes")
_POINT_OPTIONAL_FLOATS = ("latency_p50_s", "latency_p95_s", "latency_p99_s", "latency_mean_s", "latency_min_s",
                          "latency_max_s", "throughput_per_s")
_TEXT = ("created", "phase", "status")


@dataclass(frozen=True, slots=True, kw_only=True)
class PointRecord:
    """One measured point of a run: a batch size (and phase) with its latency summary."""

    id: int
    run_id: int
    created: str
    """ISO 8601 time in UTC when the point was committed."""
    batch: int | None
    grad_accumulation: int | None
    phase: str
    """What was timed, e.g. "prefill", "decode", "step", "forward"."""
    status: str
    """One of `POINT_STATUSES`."""
    latency_p50_s: float | None
    """Percentiles of the repetition times, numpy's linear interpolation; None when no samples."""
    latency_p95_s: float | None
    latency_p99_s: float | None
    latency_mean_s: float | None
    latency_min_s: float | None
    latency_max_s: float | None
    repetitions: int
    """How many repetition times were stored (`Store.samples(id)` returns them)."""
    throughput_per_s: float | None
    peak_memory_bytes: int | None
    error: str | None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {name: (dict(self.extra) if name == "extra" else getattr(self, name)) for name in POINT_COLUMNS}


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What produced a run, so that runs from many machines can be compared: None where it was not recorded
    (runs stored before schema version 4 keep what their environment held, filled in by the migration)."""

    host: str | None = None
    engine: str | None = None
    """The runtime that ran the work: "torch", "onnxruntime", "vllm", "llama.cpp"… (without its version)."""
    engine_version: str | None = None
    driver: str | None = None
    """GPU driver version (nvidia-smi), or None on a CPU."""
    gpu_product: str | None = None
    """The GPU's product name as the driver reports it ("NVIDIA H100 80GB HBM3")."""
    sizeup_version: str | None = None
    workload_hash: str | None = None
    """sha256 (first 16 hex digits) of what was measured: the target's bytes where it is a file, and the run's
    kind and config (measure.provenance.workload_hash)."""
    device_type: str | None = None
    """The device the run measured, as calibration groups it: a catalog id ("h100-sxm-80gb") where recognised,
    else "gpu:<product>" or "cpu:<model>"."""
    workload_class: str | None = None
    """"llm", "serving", "cnn", "traced" or "train-step" (measure.profiles.WORKLOAD_CLASSES)."""
    gpu_clock_mhz: float | None = None
    """SM clock when the run started, and its maximum; the board power limit in watts."""
    gpu_clock_max_mhz: float | None = None
    power_limit_w: float | None = None

    def __post_init__(self) -> None:
        for name in PROVENANCE_TEXT:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise MeasureError(f"provenance {name} {value!r:.60}: expected text or None")
        for name in PROVENANCE_NUMBERS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise MeasureError(f"provenance {name} {value!r:.60}: expected a finite number or None")

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in PROVENANCE_COLUMNS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        """From a dict with any subset of the provenance keys; unknown keys are refused."""
        unknown = sorted(set(data) - set(PROVENANCE_COLUMNS))
        if unknown:
            raise MeasureError(f"provenance key {unknown[0]!r}: expected one of {', '.join(PROVENANCE_COLUMNS)}")
        return cls(**{k: (float(v) if k in PROVENANCE_NUMBERS and isinstance(v, int) and not isinstance(v, bool)
                          else v) for k, v in data.items()})


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One measurement run; `points` is filled by `Store.run()` and empty in `Store.runs()` listings."""

    id: int
    created: str
    """ISO 8601 time in UTC when the run started."""
    kind: str
    """One of `RUN_KINDS`."""
    target: str
    """What was measured: a model name, a file, an endpoint."""
    device: str
    status: str
    """One of `RUN_STATUSES`, as stored; "running" for a run whose process died before `finish_run`
    (`writer_gone` then says so, and `effective_status` is "interrupted")."""
    config: dict
    environment: dict
    error: str | None
    point_count: int
    points: tuple[PointRecord, ...] = ()
    writer_gone: bool = False
    """True when the run is stored as "running" but the process that wrote it has ended (killed with
    SIGKILL, crashed, the machine rebooted): no one will finish it."""
    uid: str | None = None
    """A unique id the writer gave the run (a UUID), the same in every database a spooled run reaches; None for
    runs stored before schema version 4."""
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def effective_status(self) -> str:
        """The status to show: "interrupted" for a run whose writer is gone, else the stored status."""
        return "interrupted" if self.writer_gone and self.status == "running" else self.status

    def to_dict(self) -> dict:
        return {
            "id": self.id, "created": self.created, "kind": self.kind, "target": self.target,
            "device": self.device, "status": self.effective_status, "stored_status": self.status,
            "writer_gone": self.writer_gone, "config": dict(self.config),
            "environment": dict(self.environment), "error": self.error, "point_count": self.point_count,
            "uid": self.uid, "provenance": self.provenance.to_dict(), "points": [p.to_dict() for p in self.points],
        }


def summarize_samples(samples_s: Sequence[float]) -> dict[str, float | None]:
    """p50/p95/p99 (numpy `percentile`, linear interpolation), mean, min and max; all None when empty."""
    names = ("latency_p50_s", "latency_p95_s", "latency_p99_s", "latency_mean_s", "latency_min_s",
             "latency_max_s")
    if len(samples_s) == 0:
        return dict.fromkeys(names)
    import numpy as np

    values = np.asarray(samples_s, dtype=float)
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return dict(zip(names, (float(p50), float(p95), float(p99), float(values.mean()), float(values.min()),
                            float(values.max()))))


def decode_json(text: object, path: Path | str, where: str, *, expect: type = dict) -> object:
    """A JSON column's value, or one MeasureError naming the file, the row and the column."""
    if not isinstance(text, str):
        raise MeasureError(f"{path}: {where} holds {type(text).__name__}, not JSON text: not a sizeup run database")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise MeasureError(f"{path}: {where} is not valid JSON ({str(e)[:80]}): the run database is damaged") \
            from None
    if not isinstance(value, expect):
        raise MeasureError(f"{path}: {where} holds a JSON {type(value).__name__}, expected a {expect.__name__}: "
                           "the run database is damaged")
    return value


def _bad(path: Path | str, where: str, column: str, value: object, expected: str) -> MeasureError:
    return MeasureError(f"{path}: {where} column {column} holds {value!r:.60}, expected {expected}: "
                        "the run database is damaged")


def run_record(row: Sequence, path: Path | str, points: tuple[PointRecord, ...] = (), *,
               writer_gone: bool = False, uid: object = None, provenance: Sequence = ()) -> RunRecord:
    """A `RunRecord` from `SELECT <RUN_COLUMNS>, <point count>`; `uid` and `provenance` (the values of
    PROVENANCE_COLUMNS, in order) from the columns of schema version 4."""
    values = dict(zip(RUN_COLUMNS, row))
    where = f"run {values['id']!r}"
    if isinstance(values["id"], bool) or not isinstance(values["id"], int):
        raise _bad(path, where, "id", values["id"], "an integer")
    for column in ("created", "kind", "target", "device", "status"):
        if not isinstance(values[column], str):
            raise _bad(path, where, column, values[column], "text")
    if values["error"] is not None and not isinstance(values["error"], str):
        raise _bad(path, where, "error", values["error"], "text or NULL")
    values["config"] = decode_json(values["config"], path, f"{where} column config")
    values["environment"] = decode_json(values["environment"], path, f"{where} column environment")
    if uid is not None and not isinstance(uid, str):
        raise _bad(path, where, "uid", uid, "text or NULL")
    try:
        origin = Provenance(**dict(zip(PROVENANCE_COLUMNS, provenance)))
    except MeasureError as e:
        raise MeasureError(f"{path}: {where}: {e}: the run database is damaged") from None
    return RunRecord(**values, point_count=int(row[len(RUN_COLUMNS)]), points=points, writer_gone=writer_gone,
                     uid=uid, provenance=origin)


def point_record(row: Sequence, path: Path | str) -> PointRecord:
    """A `PointRecord` from `SELECT <POINT_COLUMNS>`, each column checked against its type."""
    values = dict(zip(POINT_COLUMNS, row))
    where = f"point {values['id']!r}"
    for column in _POINT_INTS + _POINT_OPTIONAL_INTS:
        value = values[column]
        if value is None and column in _POINT_OPTIONAL_INTS:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(path, where, column, value, "an integer")
    for column in _POINT_OPTIONAL_FLOATS:
        value = values[column]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise _bad(path, where, column, value, "a number or NULL")
        values[column] = float(value)
    for column in _TEXT:
        if not isinstance(values[column], str):
            raise _bad(path, where, column, values[column], "text")
    if values["error"] is not None and not isinstance(values["error"], str):
        raise _bad(path, where, "error", values["error"], "text or NULL")
    values["extra"] = decode_json(values["extra"], path, f"{where} column extra")
    return PointRecord(**values)
