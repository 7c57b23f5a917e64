"""The run store: measurement runs, their points and every repetition time, in one SQLite file.

Writes are durable one by one: the file is in WAL mode with `synchronous=FULL`, and `start_run`, `add_point`
(a point and its samples together) and `finish_run` each commit their own transaction, so a process killed
mid-sweep loses at most the point in flight; the run keeps the identity of its writer, so that a reader shows a
run whose process was killed as interrupted. Two processes may write at once (each transaction takes the write
lock, waiting up to 30 s for the other).

Opening checks the file first (`store_schema.check_file`, `check_database`) and refuses, in one line and
without writing a byte, a file that is not a sizeup store; an older schema is migrated when opened for writing.
`Store(path, readonly=True)` (or `Store.open_read(path)`) never creates or changes a file: a missing path is
an error that says so, and writes raise.
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
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from sizeup.errors import ConfigError, MeasureError
from sizeup.measure.records import (POINT_COLUMNS, RUN_COLUMNS, PointRecord, RunRecord, decode_json,
                                    point_record, run_record, summarize_samples)
from sizeup.measure.store_schema import SCHEMA_VERSION, check_database, check_file, create_schema, migrate
from sizeup.measure.writer import current_writer, writer_alive

__all__ = [
    "SCHEMA_VERSION",
    "RUN_KINDS",
    "RUN_STATUSES",
    "POINT_STATUSES",
    "RunRecord",
    "PointRecord",
    "Store",
    "default_path",
    "summarize_samples",
]

RUN_KINDS = ("inference", "train", "microbench", "collectives", "watch", "load", "loader", "trial")
RUN_STATUSES = ("running", "ok", "interrupted", "error")
POINT_STATUSES = ("ok", "oom", "error", "skipped")
EXPORT_FORMATS = ("csv", "json")
_POINT_COLUMNS = POINT_COLUMNS
_RUN_COLUMNS = RUN_COLUMNS


def default_path() -> Path:
    """`$SIZEUP_DATA_DIR/runs.sqlite`, else `$XDG_DATA_HOME/sizeup/runs.sqlite`, else `~/.local/share/sizeup/`."""
    if os.environ.get("SIZEUP_DATA_DIR"):
        return Path(os.environ["SIZEUP_DATA_DIR"]).expanduser() / "runs.sqlite"
    if os.environ.get("XDG_DATA_HOME"):
        return Path(os.environ["XDG_DATA_HOME"]).expanduser() / "sizeup" / "runs.sqlite"
    return Path.home() / ".local" / "share" / "sizeup" / "runs.sqlite"


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



WAL_SWITCH_WAIT_S = 30.0
"""As the connection's busy timeout: how long a writer waits for another to finish switching a new file to WAL."""


def _set_wal(conn: sqlite3.Connection) -> None:
    """PRAGMA journal_mode=WAL, waiting for a concurrent writer: SQLite answers "database is locked" at once,
    without its busy handler, when two connections switch a new file's journal mode at the same moment."""
    import time

    deadline = time.monotonic() + WAL_SWITCH_WAIT_S
    delay = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)

class Store:
    """A SQLite file of measurement runs; open it with `Store(path)` or `with Store() as store:`.

    Modes: the default opens for writing, creating the file (and its folder) if missing; `create=False`
    refuses a missing file; `readonly=True` (also `Store.open_read(path)`) refuses a missing file, never writes
    (SQLite's `query_only`), and does not migrate an older schema (it reads it as it is).
    """

    def __init__(self, path: str | Path | None = None, *, create: bool = True, readonly: bool = False) -> None:
        self.path = default_path() if path is None else Path(path).expanduser()
        self.readonly = readonly
        self.version = SCHEMA_VERSION
        self._conn: sqlite3.Connection | None = None
        kind = check_file(self.path, must_exist=readonly or not create)
        if kind == "empty" and readonly:
            raise MeasureError(f"{self.path}: is an empty file, not a sizeup run database")
        if kind == "new":
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MeasureError(f"{self.path}: cannot create its folder ({e.strerror or e})") from None
        conn = self._connect(kind)
        try:
            self._open(conn, kind)
        except sqlite3.DatabaseError as e:  # malformed, not a database, locked past the timeout…
            conn.close()
            text = str(e)
            if "locked" in text or "busy" in text:
                raise MeasureError(f"{self.path}: run database is locked by another process ({text})") from None
            if "malformed" in text or "corrupt" in text:
                raise MeasureError(f"{self.path}: the run database fails its integrity check (SQLite: {text}); it "
                                   "was left as it is") from None
            raise MeasureError(f"{self.path}: not a sizeup run database ({text}); it was left as it is") from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    @classmethod
    def open_read(cls, path: str | Path | None = None) -> Store:
        """The store at `path` (default: the user data folder) for reading only; a missing file is an error."""
        return cls(path, readonly=True)

    def _connect(self, kind: str) -> sqlite3.Connection:
        uri = "file:" + quote(str(self.path.absolute()))
        # "rw" never creates a file; a reader falls back to "ro" for a file it may not write
        modes = ["rwc"] if kind == "new" else ["rw", "ro"] if self.readonly else ["rw"]
        error: sqlite3.Error | None = None
        for mode in modes:
            try:
                return sqlite3.connect(f"{uri}?mode={mode}", uri=True, timeout=30.0, isolation_level=None)
            except sqlite3.Error as e:
                error = e
        what = "for reading" if self.readonly else "for writing"
        raise MeasureError(f"{self.path}: cannot open the run database {what} ({error})")

    def _open(self, conn: sqlite3.Connection, kind: str) -> None:
        version = None if kind in ("new", "empty") else check_database(conn, self.path)
        if self.readonly:
            if version is None:
                raise MeasureError(f"{self.path}: is an SQLite file with no tables, not a sizeup run database")
            conn.execute("PRAGMA query_only=ON")
            self.version = version
            return
        _set_wal(conn)
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        if version == SCHEMA_VERSION:
            return
        with self._transaction(conn):  # create or migrate; another writer may have done it meanwhile
            version = check_database(conn, self.path)
            if version is None:
                create_schema(conn)
            else:
                migrate(conn, version)

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
        with self._transaction(self._writable()) as conn:
            cursor = conn.execute(
                "INSERT INTO runs (created, kind, target, device, status, config, environment, error, writer) "
                "VALUES (?, ?, ?, ?, 'running', ?, ?, NULL, ?)",
                (_now(), kind, str(target), str(device), config_json, env_json, json.dumps(current_writer())))
        return int(cursor.lastrowid)

    def add_point(self, run_id: int, *, batch: int | None, phase: str, status: str, samples_s: Sequence[float] = (),
                  grad_accumulation: int | None = None, throughput_per_s: float | None = None,
                  peak_memory_bytes: int | None = None, error: str | None = None, extra: dict | None = None,
                  cpu_samples_s: Sequence[float] = ()) -> int:
        """Record one point and all its repetition times in one committed transaction; returns the point id.
        `cpu_samples_s`, when given, holds each repetition's CPU time (one per wall time, same order)."""
        _check_choice(status, POINT_STATUSES, "point status")
        _check_count(batch, "batch")
        _check_count(grad_accumulation, "grad_accumulation")
        if not isinstance(phase, str) or not phase:
            raise ConfigError(f"point phase {phase!r} is not a non-empty string")
        values = [float(v) for v in samples_s]
        cpu = [float(v) for v in cpu_samples_s]
        bad = [v for v in values + cpu if not math.isfinite(v) or v < 0]
        if bad:
            raise ConfigError(f"sample time {bad[0]!r} is not a finite number of seconds >= 0")
        if cpu and len(cpu) != len(values):
            raise ConfigError(f"{len(cpu)} CPU times for {len(values)} repetitions: expected one per repetition")
        if peak_memory_bytes is not None and (isinstance(peak_memory_bytes, bool) or peak_memory_bytes < 0):
            raise ConfigError(f"peak_memory_bytes {peak_memory_bytes!r} is not a byte count >= 0")
        summary = summarize_samples(values)
        extra_json = _json(extra or {}, "point extra")
        with self._transaction(self._writable()) as conn:
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
            conn.executemany("INSERT INTO samples (point_id, seq, value_s, cpu_s) VALUES (?, ?, ?, ?)",
                             [(point_id, seq, v, cpu[seq] if cpu else None) for seq, v in enumerate(values)])
        return point_id

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        """Set a run's final status ("ok", "interrupted" or "error") and commit."""
        _check_choice(status, RUN_STATUSES[1:], "final run status")
        with self._transaction(self._writable()) as conn:
            self._require_run(conn, run_id)
            conn.execute("UPDATE runs SET status = ?, error = ? WHERE id = ?", (status, error, run_id))

    def save_calibration(self, name: str, *, device: str, profile: dict, source_runs: list[int]) -> None:
        """Store (or replace) a named calibration profile fitted from `source_runs`."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"calibration name {name!r} is not a non-empty string")
        runs = [int(r) for r in source_runs]
        profile_json = _json(profile, "calibration profile")
        with self._transaction(self._writable()) as conn:
            for run_id in runs:
                self._require_run(conn, run_id)
            conn.execute("INSERT OR REPLACE INTO calibrations (name, created, device, profile, source_runs) "
                         "VALUES (?, ?, ?, ?, ?)", (name, _now(), str(device), profile_json, json.dumps(runs)))

    def _writable(self) -> sqlite3.Connection:
        if self.readonly:
            raise MeasureError(f"{self.path}: run database was opened read-only")
        return self.conn

    # -- reading ---------------------------------------------------------------------------------------------

    def _run_sql(self) -> str:
        writer = "r.writer" if self.version >= 2 else "NULL"
        return (f"SELECT {', '.join('r.' + c for c in _RUN_COLUMNS)}, "
                f"(SELECT COUNT(*) FROM points p WHERE p.run_id = r.id), {writer} FROM runs r")

    def _record(self, row: Sequence, points: tuple[PointRecord, ...] = ()) -> RunRecord:
        gone = False
        if row[5] == "running" and row[-1] is not None:
            writer = decode_json(row[-1], self.path, f"run {row[0]!r} column writer")
            gone = writer_alive(writer) is False
        return run_record(row[:-1], self.path, points, writer_gone=gone)

    def _require_run(self, conn: sqlite3.Connection, run_id: int) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise MeasureError(f"no run {run_id} in {self.path}")

    def runs(self, limit: int | None = None, *, kind: str | None = None) -> list[RunRecord]:
        """Runs newest first, without their points (`point_count` says how many)."""
        if kind is not None:
            _check_choice(kind, RUN_KINDS, "run kind")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ConfigError(f"limit {limit!r} is not an integer >= 0")
        sql = self._run_sql()
        params: list[object] = []
        if kind is not None:
            sql += " WHERE r.kind = ?"
            params.append(kind)
        sql += " ORDER BY r.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [self._record(row) for row in self.conn.execute(sql, params)]

    def run(self, run_id: int) -> RunRecord:
        """One run with its points in the order they were added."""
        row = self.conn.execute(self._run_sql() + " WHERE r.id = ?", (run_id,)).fetchone()
        if row is None:
            raise MeasureError(f"no run {run_id} in {self.path}")
        points = tuple(point_record(p, self.path) for p in self.conn.execute(
            f"SELECT {', '.join(_POINT_COLUMNS)} FROM points WHERE run_id = ? ORDER BY id", (run_id,)))
        return self._record(row, points)

    def samples(self, point_id: int) -> list[float]:
        """Every repetition time of a point, in seconds, in the order measured."""
        if self.conn.execute("SELECT 1 FROM points WHERE id = ?", (point_id,)).fetchone() is None:
            raise MeasureError(f"no point {point_id} in {self.path}")
        values = [r[0] for r in self.conn.execute("SELECT value_s FROM samples WHERE point_id = ? ORDER BY seq",
                                                  (point_id,))]
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            raise MeasureError(f"{self.path}: point {point_id} has a sample {bad[0]!r:.40}, expected seconds: the "
                               "run database is damaged")
        return values

    def cpu_samples(self, point_id: int) -> list[float]:
        """Every repetition's CPU time of a point, in seconds, in the order measured; empty where none was
        recorded (a store before schema version 3, a GPU run, a CPU run on more than one torch thread)."""
        if self.conn.execute("SELECT 1 FROM points WHERE id = ?", (point_id,)).fetchone() is None:
            raise MeasureError(f"no point {point_id} in {self.path}")
        if self.version < 3:
            return []
        values = [r[0] for r in self.conn.execute("SELECT cpu_s FROM samples WHERE point_id = ? ORDER BY seq",
                                                  (point_id,))]
        if not values or any(v is None for v in values):
            return []
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            raise MeasureError(f"{self.path}: point {point_id} has a CPU time {bad[0]!r:.40}, expected seconds: "
                               "the run database is damaged")
        return [float(v) for v in values]

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
                writer.writerow([run.id, run.created, run.kind, run.target, run.device, run.effective_status,
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
        where = f"calibration {name!r}"
        return {"name": row[0], "created": row[1], "device": row[2],
                "profile": decode_json(row[3], self.path, f"{where} column profile"),
                "source_runs": decode_json(row[4], self.path, f"{where} column source_runs", expect=list)}

    def calibrations(self) -> list[str]:
        """Names of the saved calibrations, sorted."""
        return [r[0] for r in self.conn.execute("SELECT name FROM calibrations ORDER BY name")]


