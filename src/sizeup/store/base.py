"""What every run store does, whatever holds it: `RunStore`, the backend-independent half of the SQLite store
(`sqlite.py`) and the PostgreSQL store (`postgres.py`).

Writes are durable one by one: `start_run`, `add_point` (a point and its samples together) and `finish_run` each
commit their own transaction, so a process killed mid-sweep loses at most the point in flight. Every run and
point carries a unique id (`uid`, a UUID chosen by the writer): a run written to a local spool while its
database was away (`spool.py`) is uploaded once by `sizeup runs sync`, however often sync is run. Each run
keeps the identity of its writer, so that a reader shows a run whose process was killed as interrupted.

A backend supplies `_rows(sql, params)` (every row of a statement; SQL written with `?` placeholders),
`_insert(sql, params)` (the new row's id), `_many(sql, rows)`, `_transaction()` and `close()`.
"""

from __future__ import annotations

import json
import math
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timezone

from sizeup.errors import ConfigError, MeasureError
from sizeup.store.records import (POINT_COLUMNS, PROVENANCE_COLUMNS, RUN_COLUMNS, PointRecord, Provenance,
                                  RunRecord, decode_json, point_record, run_record, summarize_samples)
from sizeup.store.schema import SCHEMA_VERSION
from sizeup.store.writer import current_writer, writer_alive

__all__ = ["RUN_KINDS", "RUN_STATUSES", "POINT_STATUSES", "EXPORT_FORMATS", "MAX_ID", "RunStore", "check_id"]

RUN_KINDS = ("inference", "train", "microbench", "collectives", "watch", "load", "loader", "trial")
RUN_STATUSES = ("running", "ok", "interrupted", "error")
POINT_STATUSES = ("ok", "oom", "error", "skipped")
EXPORT_FORMATS = ("csv", "json")
MAX_ID = 2**63 - 1
"""The largest row id either backend stores (a signed 64-bit integer)."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def to_json(value: object, what: str) -> str:
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


def check_id(value: object, what: str = "run") -> int:
    """A row id as stored: an integer from 1 to 2**63 - 1; anything else is a ConfigError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise ConfigError(f"{what} id {value!r:.40}: expected an integer from 1 to {MAX_ID}")
    return value


def _check_uid(value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 64:
        raise ConfigError(f"uid {value!r:.40}: expected a text of 1 to 64 characters")
    return value


class RunStore(ABC):
    """Runs, points, samples and calibration profiles in one database (see the module). Subclasses:
    `sizeup.store.sqlite.SQLiteStore`, `sizeup.store.postgres.PostgresStore`."""

    dialect = ""
    readonly = False
    version = SCHEMA_VERSION

    @property
    def where(self) -> str:
        """The database as shown in messages: a file path, or a server URL without its password."""
        return str(self.path)

    path: object = ""

    # -- what a backend supplies --------------------------------------------------------------------------------

    @abstractmethod
    def _rows(self, sql: str, params: Sequence = ()) -> list[tuple]:
        """Supplied by each backend (sqlite.py, postgres.py)."""

    @abstractmethod
    def _insert(self, sql: str, params: Sequence = ()) -> int:
        """Supplied by each backend (sqlite.py, postgres.py)."""

    def _many(self, sql: str, rows: Sequence[Sequence]) -> None:
        for params in rows:
            self._rows(sql, params)

    @abstractmethod
    def _transaction(self) -> AbstractContextManager:
        """Supplied by each backend (sqlite.py, postgres.py)."""

    @abstractmethod
    def close(self) -> None:
        """Supplied by each backend (sqlite.py, postgres.py)."""

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"

    def _writable(self) -> None:
        if self.readonly:
            raise MeasureError(f"{self.where}: run database was opened read-only")

    # -- writing ---------------------------------------------------------------------------------------------

    def start_run(self, *, kind: str, target: str, device: str, config: dict, environment: dict,
                  provenance: Provenance | dict | None = None, uid: str | None = None,
                  created: str | None = None, writer: dict | None = None) -> int:
        """Record a new run with status "running" and commit; returns its id. `uid` (default: a new UUID) names
        the run in every database it reaches; `created` and `writer` are given only when a run is copied."""
        _check_choice(kind, RUN_KINDS, "run kind")
        config_json, env_json = to_json(config, "run config"), to_json(environment, "run environment")
        origin = provenance if isinstance(provenance, Provenance) else Provenance.from_dict(provenance or {})
        uid = _check_uid(uid) if uid is not None else uuid.uuid4().hex
        values = origin.to_dict()
        self._writable()
        columns = ("created", "kind", "target", "device", "status", "config", "environment", "error", "writer",
                   "uid", *PROVENANCE_COLUMNS)
        params = (created or now(), kind, str(target), str(device), "running", config_json, env_json, None,
                  json.dumps(writer if writer is not None else current_writer()), uid,
                  *(values[c] for c in PROVENANCE_COLUMNS))
        with self._transaction():
            return self._insert(f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                                params)

    def add_point(self, run_id: int, *, batch: int | None, phase: str, status: str, samples_s: Sequence[float] = (),
                  grad_accumulation: int | None = None, throughput_per_s: float | None = None,
                  peak_memory_bytes: int | None = None, error: str | None = None, extra: dict | None = None,
                  cpu_samples_s: Sequence[float] = (), uid: str | None = None, created: str | None = None) -> int:
        """Record one point and all its repetition times in one committed transaction; returns the point id.
        `cpu_samples_s`, when given, holds each repetition's CPU time (one per wall time, same order)."""
        check_id(run_id)
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
        extra_json = to_json(extra or {}, "point extra")
        uid = _check_uid(uid) if uid is not None else uuid.uuid4().hex
        self._writable()
        with self._transaction():
            self._require_run(run_id)
            point_id = self._insert(
                "INSERT INTO points (run_id, created, batch, grad_accumulation, phase, status, latency_p50_s, "
                "latency_p95_s, latency_p99_s, latency_mean_s, latency_min_s, latency_max_s, repetitions, "
                "throughput_per_s, peak_memory_bytes, error, extra, uid) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, created or now(), batch, grad_accumulation, phase, status, summary["latency_p50_s"],
                 summary["latency_p95_s"], summary["latency_p99_s"], summary["latency_mean_s"],
                 summary["latency_min_s"], summary["latency_max_s"], len(values),
                 None if throughput_per_s is None else float(throughput_per_s),
                 None if peak_memory_bytes is None else int(peak_memory_bytes), error, extra_json, uid))
            self._insert_samples(point_id, values, cpu)
        return point_id

    def _insert_samples(self, point_id: int, values: list[float], cpu: list[float]) -> None:
        self._many("INSERT INTO samples (point_id, seq, value_s, cpu_s) VALUES (?, ?, ?, ?)",
                   [(point_id, seq, v, cpu[seq] if cpu else None) for seq, v in enumerate(values)])

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        """Set a run's final status ("ok", "interrupted" or "error") and commit."""
        check_id(run_id)
        _check_choice(status, RUN_STATUSES[1:], "final run status")
        self._writable()
        with self._transaction():
            self._require_run(run_id)
            self._rows("UPDATE runs SET status = ?, error = ? WHERE id = ?", (status, error, run_id))

    def save_calibration(self, name: str, *, device: str, profile: dict, source_runs: list[int],
                         key: dict | None = None) -> None:
        """Store (or replace) a named calibration profile fitted from `source_runs`; `key` holds its
        device_type, engine, engine_version and workload_class (each optional)."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"calibration name {name!r} is not a non-empty string")
        key = dict(key or {})
        unknown = sorted(set(key) - {"device_type", "engine", "engine_version", "workload_class"})
        if unknown:
            raise ConfigError(f"calibration key {unknown[0]!r}: expected device_type, engine, engine_version or "
                              "workload_class")
        runs = [check_id(int(r)) for r in source_runs]
        profile_json = to_json(profile, "calibration profile")
        self._writable()
        params = (name, now(), str(device), profile_json, json.dumps(runs), key.get("device_type"),
                  key.get("engine"), key.get("engine_version"), key.get("workload_class"))
        with self._transaction():
            for run_id in runs:
                self._require_run(run_id)
            self._rows("INSERT INTO calibrations (name, created, device, profile, source_runs, device_type, engine, "
                       "engine_version, workload_class) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO "
                       "UPDATE SET created = excluded.created, device = excluded.device, profile = excluded.profile, "
                       "source_runs = excluded.source_runs, device_type = excluded.device_type, "
                       "engine = excluded.engine, engine_version = excluded.engine_version, "
                       "workload_class = excluded.workload_class", params)

    # -- reading ---------------------------------------------------------------------------------------------

    def _run_sql(self) -> str:
        newer = ["r.writer" if self.version >= 2 else "NULL"]
        newer += [f"r.{c}" if self.version >= 4 else "NULL" for c in ("uid", *PROVENANCE_COLUMNS)]
        return (f"SELECT {', '.join('r.' + c for c in RUN_COLUMNS)}, "
                f"(SELECT COUNT(*) FROM points p WHERE p.run_id = r.id), {', '.join(newer)} FROM runs r")

    def _record(self, row: Sequence, points: tuple[PointRecord, ...] = ()) -> RunRecord:
        base = len(RUN_COLUMNS) + 1
        writer_text, uid, origin = row[base], row[base + 1], row[base + 2:]
        gone = False
        if row[5] == "running" and writer_text is not None:
            writer = decode_json(writer_text, self.where, f"run {row[0]!r} column writer")
            gone = writer_alive(writer) is False
        return run_record(row[:base], self.where, points, writer_gone=gone, uid=uid, provenance=origin)

    def _require_run(self, run_id: int) -> None:
        if not self._rows("SELECT 1 FROM runs WHERE id = ?", (run_id,)):
            raise MeasureError(f"no run {run_id} in {self.where}")

    def runs(self, limit: int | None = None, *, kind: str | None = None) -> list[RunRecord]:
        """Runs newest first, without their points (`point_count` says how many)."""
        if kind is not None:
            _check_choice(kind, RUN_KINDS, "run kind")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_ID):
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
        return [self._record(row) for row in self._rows(sql, params)]

    def run(self, run_id: int) -> RunRecord:
        """One run with its points in the order they were added."""
        if isinstance(run_id, bool) or not isinstance(run_id, int) or not 1 <= run_id <= MAX_ID:
            raise MeasureError(f"no run {run_id!r:.40} in {self.where} (run ids are integers from 1 to {MAX_ID})")
        rows = self._rows(self._run_sql() + " WHERE r.id = ?", (run_id,))
        if not rows:
            raise MeasureError(f"no run {run_id} in {self.where}")
        points = tuple(point_record(p, self.where) for p in self._rows(
            f"SELECT {', '.join(POINT_COLUMNS)} FROM points WHERE run_id = ? ORDER BY id", (run_id,)))
        return self._record(rows[0], points)

    def run_id_of(self, uid: str) -> int | None:
        """The id of the run with this uid here, or None."""
        if self.version < 4:
            return None
        rows = self._rows("SELECT id FROM runs WHERE uid = ?", (_check_uid(uid),))
        return int(rows[0][0]) if rows else None

    def point_uids(self, run_id: int) -> set[str]:
        """The uids of a run's points stored here."""
        if self.version < 4:
            return set()
        return {r[0] for r in self._rows("SELECT uid FROM points WHERE run_id = ? AND uid IS NOT NULL",
                                         (check_id(run_id),))}

    def point_uid(self, point_id: int) -> str | None:
        if self.version < 4:
            return None
        rows = self._rows("SELECT uid FROM points WHERE id = ?", (check_id(point_id, "point"),))
        return rows[0][0] if rows else None

    def writer_of(self, run_id: int) -> dict | None:
        """The stored identity of the process that wrote a run (None before schema version 2)."""
        if self.version < 2:
            return None
        rows = self._rows("SELECT writer FROM runs WHERE id = ?", (check_id(run_id),))
        if not rows or rows[0][0] is None:
            return None
        return decode_json(rows[0][0], self.where, f"run {run_id} column writer")

    def _require_point(self, point_id: int) -> None:
        if isinstance(point_id, bool) or not isinstance(point_id, int) or not 1 <= point_id <= MAX_ID:
            raise MeasureError(f"no point {point_id!r:.40} in {self.where}")
        if not self._rows("SELECT 1 FROM points WHERE id = ?", (point_id,)):
            raise MeasureError(f"no point {point_id} in {self.where}")

    def samples(self, point_id: int) -> list[float]:
        """Every repetition time of a point, in seconds, in the order measured."""
        self._require_point(point_id)
        values = [r[0] for r in self._rows("SELECT value_s FROM samples WHERE point_id = ? ORDER BY seq",
                                           (point_id,))]
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            raise MeasureError(f"{self.where}: point {point_id} has a sample {bad[0]!r:.40}, expected seconds: the "
                               "run database is damaged")
        return values

    def cpu_samples(self, point_id: int) -> list[float]:
        """Every repetition's CPU time of a point, in seconds, in the order measured; empty where none was
        recorded (a store before schema version 3, a GPU run, a CPU run on more than one torch thread)."""
        self._require_point(point_id)
        if self.version < 3:
            return []
        values = [r[0] for r in self._rows("SELECT cpu_s FROM samples WHERE point_id = ? ORDER BY seq",
                                           (point_id,))]
        if not values or any(v is None for v in values):
            return []
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            raise MeasureError(f"{self.where}: point {point_id} has a CPU time {bad[0]!r:.40}, expected seconds: "
                               "the run database is damaged")
        return [float(v) for v in values]

    def export(self, run_ids: Sequence[int], fmt: str) -> str:
        """Runs as CSV (one row per point, with its run's fields) or JSON (a list of runs with points and samples)."""
        from sizeup.store.export import export_runs

        _check_choice(fmt, EXPORT_FORMATS, "export format")
        return export_runs(self, run_ids, fmt)

    def calibration(self, name: str) -> dict:
        """A saved calibration: {name, created, device, profile, source_runs, key}."""
        key_columns = ("device_type", "engine", "engine_version", "workload_class")
        extra = ", ".join(key_columns) if self.version >= 4 else ", ".join("NULL" for _ in key_columns)
        rows = self._rows(f"SELECT name, created, device, profile, source_runs, {extra} FROM calibrations "
                          "WHERE name = ?", (name,))
        if not rows:
            names = self.calibrations()
            saved = ", ".join(names) if names else "none saved"
            raise MeasureError(f"no calibration {name!r} in {self.where}; saved: {saved}")
        row = rows[0]
        where = f"calibration {name!r}"
        return {"name": row[0], "created": row[1], "device": row[2],
                "profile": decode_json(row[3], self.where, f"{where} column profile"),
                "source_runs": decode_json(row[4], self.where, f"{where} column source_runs", expect=list),
                "key": dict(zip(key_columns, row[5:]))}

    def calibrations(self) -> list[str]:
        """Names of the saved calibrations, sorted."""
        return [r[0] for r in self._rows("SELECT name FROM calibrations ORDER BY name")]

    def iter_runs(self, batch: int = 500) -> Iterator[RunRecord]:
        """Every run, oldest first, without points, read `batch` at a time."""
        last = 0
        while True:
            rows = self._rows(self._run_sql() + " WHERE r.id > ? ORDER BY r.id LIMIT ?", (last, batch))
            if not rows:
                return
            for row in rows:
                yield self._record(row)
            last = rows[-1][0]
