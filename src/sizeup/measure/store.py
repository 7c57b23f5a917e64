"""The run store: measurement runs, their points and every repetition time, in one SQLite file.

Writes are durable one by one: the file is in WAL mode with `synchronous=FULL`, and `start_run`, `add_point`
(a point and its samples together) and `finish_run` each commit their own transaction, so a process killed
mid-sweep loses at most the point in flight. The schema carries a version; a file written by a newer sizeup
is refused rather than misread.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sizeup.errors import ConfigError, MeasureError

__all__ = [
    "SCHEMA_VERSION",
    "RUN_KINDS",
    "RUN_STATUSES",
    "POINT_STATUSES",
    "RunRecord",
    "PointRecord",
    "Store",
    "default_path",
]

SCHEMA_VERSION = 1
RUN_KINDS = ("inference", "train", "microbench", "collectives", "watch", "load")
RUN_STATUSES = ("running", "ok", "interrupted", "error")
POINT_STATUSES = ("ok", "oom", "error", "skipped")
EXPORT_FORMATS = ("csv", "json")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    created TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    device TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    environment TEXT NOT NULL,
    error TEXT
);
CREATE TABLE IF NOT EXISTS points (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    created TEXT NOT NULL,
    batch INTEGER,
    grad_accumulation INTEGER,
    phase TEXT NOT NULL,
    status TEXT NOT NULL,
    latency_p50_s REAL,
    latency_p95_s REAL,
    latency_p99_s REAL,
    latency_mean_s REAL,
    latency_min_s REAL,
    latency_max_s REAL,
    repetitions INTEGER NOT NULL,
    throughput_per_s REAL,
    peak_memory_bytes INTEGER,
    error TEXT,
    extra TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS points_run ON points(run_id);
CREATE TABLE IF NOT EXISTS samples (
    point_id INTEGER NOT NULL REFERENCES points(id),
    seq INTEGER NOT NULL,
    value_s REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_point ON samples(point_id, seq);
CREATE TABLE IF NOT EXISTS calibrations (
    name TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    device TEXT NOT NULL,
    profile TEXT NOT NULL,
    source_runs TEXT NOT NULL
);
"""

_POINT_COLUMNS = ("id", "run_id", "created", "batch", "grad_accumulation", "phase", "status", "latency_p50_s",
                  "latency_p95_s", "latency_p99_s", "latency_mean_s", "latency_min_s", "latency_max_s",
                  "repetitions", "throughput_per_s", "peak_memory_bytes", "error", "extra")
_RUN_COLUMNS = ("id", "created", "kind", "target", "device", "status", "config", "environment", "error")


def default_path() -> Path:
    """`$SIZEUP_DATA_DIR/runs.sqlite`, else `$XDG_DATA_HOME/sizeup/runs.sqlite`, else `~/.local/share/sizeup/`."""
    if os.environ.get("SIZEUP_DATA_DIR"):
        return Path(os.environ["SIZEUP_DATA_DIR"]).expanduser() / "runs.sqlite"
    if os.environ.get("XDG_DATA_HOME"):
        return Path(os.environ["XDG_DATA_HOME"]).expanduser() / "sizeup" / "runs.sqlite"
    return Path.home() / ".local" / "share" / "sizeup" / "runs.sqlite"


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
        return {name: (dict(self.extra) if name == "extra" else getattr(self, name)) for name in _POINT_COLUMNS}


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
    """One of `RUN_STATUSES`; "running" for a run whose process died before `finish_run`."""
    config: dict
    environment: dict
    error: str | None
    point_count: int
    points: tuple[PointRecord, ...] = ()

    def to_dict(self) -> dict:
        return {
            "id": self.id, "created": self.created, "kind": self.kind, "target": self.target,
            "device": self.device, "status": self.status, "config": dict(self.config),
            "environment": dict(self.environment), "error": self.error, "point_count": self.point_count,
            "points": [p.to_dict() for p in self.points],
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _json(value: object, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=str, allow_nan=True)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{what} is not JSON-serializable: {e}") from e


def _check_choice(value: object, choices: Sequence[str], what: str) -> None:
    if value not in choices:
        raise ConfigError(f"{what} {value!r} is not one of {', '.join(choices)}")


def _check_count(value: object, what: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{what} {value!r} is not a positive integer")


class Store:
    """A SQLite file of measurement runs; open it with `Store(path)` or `with Store() as store:`."""

    def __init__(self, path: str | Path | None = None, *, create: bool = True) -> None:
        self.path = default_path() if path is None else Path(path).expanduser()
        self._conn: sqlite3.Connection | None = None
        if not self.path.exists():
            if not create:
                raise MeasureError(f"{self.path}: no such run database")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MeasureError(f"{self.path}: cannot create its folder ({e})") from e
        elif self.path.is_dir():
            raise MeasureError(f"{self.path}: is a folder, not a sizeup run database")
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except sqlite3.Error as e:
            raise MeasureError(f"{self.path}: cannot open run database ({e})") from e
        try:
            self._open(conn)
        except sqlite3.OperationalError as e:
            conn.close()
            raise MeasureError(f"{self.path}: cannot open run database ({e})") from e
        except sqlite3.DatabaseError as e:
            conn.close()
            raise MeasureError(f"{self.path}: not a sizeup run database ({e})") from e
        except MeasureError:
            conn.close()
            raise
        self._conn = conn

    def _open(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "schema_version" not in tables:
            raise MeasureError(f"{self.path}: not a sizeup run database (no schema_version table; "
                               f"has {', '.join(sorted(tables))})")
        if "schema_version" in tables:
            version = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            if version is not None and version > SCHEMA_VERSION:
                raise MeasureError(f"{self.path}: run database schema version {version} is newer than this "
                                   f"sizeup's version {SCHEMA_VERSION}; upgrade sizeup to read it")
        with self._transaction(conn):
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            if conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 0:
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    @staticmethod
    @contextmanager
    def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MeasureError(f"{self.path}: run database is closed")
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # -- writing ---------------------------------------------------------------------------------------------

    def start_run(self, *, kind: str, target: str, device: str, config: dict, environment: dict) -> int:
        """Record a new run with status "running" and commit; returns its id."""
        _check_choice(kind, RUN_KINDS, "run kind")
        config_json, env_json = _json(config, "run config"), _json(environment, "run environment")
        with self._transaction(self.conn) as conn:
            cursor = conn.execute(
                "INSERT INTO runs (created, kind, target, device, status, config, environment, error) "
                "VALUES (?, ?, ?, ?, 'running', ?, ?, NULL)",
                (_now(), kind, str(target), str(device), config_json, env_json))
        return int(cursor.lastrowid)

    def add_point(self, run_id: int, *, batch: int | None, phase: str, status: str, samples_s: Sequence[float] = (),
                  grad_accumulation: int | None = None, throughput_per_s: float | None = None,
                  peak_memory_bytes: int | None = None, error: str | None = None, extra: dict | None = None) -> int:
        """Record one point and all its repetition times in one committed transaction; returns the point id."""
        _check_choice(status, POINT_STATUSES, "point status")
        _check_count(batch, "batch")
        _check_count(grad_accumulation, "grad_accumulation")
        if not isinstance(phase, str) or not phase:
            raise ConfigError(f"point phase {phase!r} is not a non-empty string")
        values = [float(v) for v in samples_s]
        bad = [v for v in values if not math.isfinite(v) or v < 0]
        if bad:
            raise ConfigError(f"sample time {bad[0]!r} is not a finite number of seconds >= 0")
        if peak_memory_bytes is not None and (isinstance(peak_memory_bytes, bool) or peak_memory_bytes < 0):
            raise ConfigError(f"peak_memory_bytes {peak_memory_bytes!r} is not a byte count >= 0")
        summary = summarize_samples(values)
        extra_json = _json(extra or {}, "point extra")
        with self._transaction(self.conn) as conn:
            self._require_run(conn, run_id)
            cursor = conn.execute(
                "INSERT INTO points (run_id, created, batch, grad_accumulation, phase, status, latency_p50_s, "
                "latency_p95_s, latency_p99_s, latency_mean_s, latency_min_s, latency_max_s, repetitions, "
                "throughput_per_s, peak_memory_bytes, error, extra) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, _now(), batch, grad_accumulation, phase, status, summary["latency_p50_s"],
                 summary["latency_p95_s"], summary["latency_p99_s"], summary["latency_mean_s"],
                 summary["latency_min_s"], summary["latency_max_s"], len(values),
                 None if throughput_per_s is None else float(throughput_per_s),
                 None if peak_memory_bytes is None else int(peak_memory_bytes), error, extra_json))
            point_id = int(cursor.lastrowid)
            conn.executemany("INSERT INTO samples (point_id, seq, value_s) VALUES (?, ?, ?)",
                             [(point_id, seq, v) for seq, v in enumerate(values)])
        return point_id

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        """Set a run's final status ("ok", "interrupted" or "error") and commit."""
        _check_choice(status, RUN_STATUSES[1:], "final run status")
        with self._transaction(self.conn) as conn:
            self._require_run(conn, run_id)
            conn.execute("UPDATE runs SET status = ?, error = ? WHERE id = ?", (status, error, run_id))

    def save_calibration(self, name: str, *, device: str, profile: dict, source_runs: list[int]) -> None:
        """Store (or replace) a named calibration profile fitted from `source_runs`."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"calibration name {name!r} is not a non-empty string")
        runs = [int(r) for r in source_runs]
        profile_json = _json(profile, "calibration profile")
        with self._transaction(self.conn) as conn:
            for run_id in runs:
                self._require_run(conn, run_id)
            conn.execute("INSERT OR REPLACE INTO calibrations (name, created, device, profile, source_runs) "
                         "VALUES (?, ?, ?, ?, ?)", (name, _now(), str(device), profile_json, json.dumps(runs)))

    # -- reading ---------------------------------------------------------------------------------------------

    def _require_run(self, conn: sqlite3.Connection, run_id: int) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise MeasureError(f"no run {run_id} in {self.path}")

    def runs(self, limit: int | None = None, *, kind: str | None = None) -> list[RunRecord]:
        """Runs newest first, without their points (`point_count` says how many)."""
        if kind is not None:
            _check_choice(kind, RUN_KINDS, "run kind")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ConfigError(f"limit {limit!r} is not an integer >= 0")
        sql = (f"SELECT {', '.join('r.' + c for c in _RUN_COLUMNS)}, "
               "(SELECT COUNT(*) FROM points p WHERE p.run_id = r.id) FROM runs r")
        params: list[object] = []
        if kind is not None:
            sql += " WHERE r.kind = ?"
            params.append(kind)
        sql += " ORDER BY r.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_run_record(row) for row in self.conn.execute(sql, params)]

    def run(self, run_id: int) -> RunRecord:
        """One run with its points in the order they were added."""
        row = self.conn.execute(
            f"SELECT {', '.join('r.' + c for c in _RUN_COLUMNS)}, "
            "(SELECT COUNT(*) FROM points p WHERE p.run_id = r.id) FROM runs r WHERE r.id = ?", (run_id,)).fetchone()
        if row is None:
            raise MeasureError(f"no run {run_id} in {self.path}")
        points = tuple(_point_record(p) for p in self.conn.execute(
            f"SELECT {', '.join(_POINT_COLUMNS)} FROM points WHERE run_id = ? ORDER BY id", (run_id,)))
        return _run_record(row, points)

    def samples(self, point_id: int) -> list[float]:
        """Every repetition time of a point, in seconds, in the order measured."""
        if self.conn.execute("SELECT 1 FROM points WHERE id = ?", (point_id,)).fetchone() is None:
            raise MeasureError(f"no point {point_id} in {self.path}")
        return [r[0] for r in self.conn.execute("SELECT value_s FROM samples WHERE point_id = ? ORDER BY seq",
                                                (point_id,))]

    def export(self, run_ids: Sequence[int], fmt: str) -> str:
        """Runs as CSV (one row per point, with its run's fields) or JSON (a list of runs with points and samples)."""
        _check_choice(fmt, EXPORT_FORMATS, "export format")
        runs = [self.run(run_id) for run_id in run_ids]
        if fmt == "json":
            data = [r.to_dict() for r in runs]
            for run in data:
                for point in run["points"]:
                    point["samples_s"] = self.samples(point["id"])
            return json.dumps(data, indent=2, default=str) + "\n"
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        run_fields = ("run_id", "run_created", "kind", "target", "device", "run_status")
        point_fields = tuple(c for c in _POINT_COLUMNS if c != "run_id")
        writer.writerow([*run_fields, *("point_id" if c == "id" else c for c in point_fields)])
        for run in runs:
            for point in run.points:
                values = point.to_dict()
                values["extra"] = json.dumps(values["extra"], sort_keys=True, default=str)
                writer.writerow([run.id, run.created, run.kind, run.target, run.device, run.status,
                                 *("" if values[c] is None else values[c] for c in point_fields)])
        return out.getvalue()

    def calibration(self, name: str) -> dict:
        """A saved calibration: {name, created, device, profile, source_runs}."""
        row = self.conn.execute("SELECT name, created, device, profile, source_runs FROM calibrations "
                                "WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = self.calibrations()
            saved = ", ".join(names) if names else "none saved"
            raise MeasureError(f"no calibration {name!r} in {self.path}; saved: {saved}")
        return {"name": row[0], "created": row[1], "device": row[2], "profile": json.loads(row[3]),
                "source_runs": json.loads(row[4])}

    def calibrations(self) -> list[str]:
        """Names of the saved calibrations, sorted."""
        return [r[0] for r in self.conn.execute("SELECT name FROM calibrations ORDER BY name")]


def _run_record(row: Sequence, points: tuple[PointRecord, ...] = ()) -> RunRecord:
    values = dict(zip(_RUN_COLUMNS, row))
    values["config"] = json.loads(values["config"])
    values["environment"] = json.loads(values["environment"])
    return RunRecord(**values, point_count=int(row[len(_RUN_COLUMNS)]), points=points)


def _point_record(row: Sequence) -> PointRecord:
    values = dict(zip(_POINT_COLUMNS, row))
    values["extra"] = json.loads(values["extra"])
    return PointRecord(**values)
