"""The run store's schema, its version and migrations, and the checks a file passes before it is used.

A file given as a run database is checked before anything is written to it: it must be a regular file, begin
with SQLite's header, hold every sizeup table with its columns, carry a schema version this sizeup knows, pass
`PRAGMA quick_check`, and hold valid JSON in its JSON columns. A file that fails is refused with one line and
left as it was (byte for byte): the checks only read.

Versions: 1 — runs, points, samples, calibrations; 2 — `runs.writer`, the identity of the process writing a
run (see `writer.py`), so that a run killed with SIGKILL can be told from one still running; 3 —
`samples.cpu_s`, each repetition's thread CPU time beside its wall time (NULL where not recorded: older rows,
GPU runs, CPU runs on more than one torch thread), which load from other processes does not add to.
"""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

from sizeup.errors import MeasureError
from sizeup.measure.records import POINT_COLUMNS, RUN_COLUMNS

__all__ = ["SCHEMA_VERSION", "check_file", "check_database", "create_schema", "migrate"]

SCHEMA_VERSION = 3
SQLITE_HEADER = b"SQLite format 3\x00"

_TABLES_V1 = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (
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
CREATE TABLE points (
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
CREATE INDEX points_run ON points(run_id);
CREATE TABLE samples (
    point_id INTEGER NOT NULL REFERENCES points(id),
    seq INTEGER NOT NULL,
    value_s REAL NOT NULL
);
CREATE INDEX samples_point ON samples(point_id, seq);
CREATE TABLE calibrations (
    name TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    device TEXT NOT NULL,
    profile TEXT NOT NULL,
    source_runs TEXT NOT NULL
)
"""
_MIGRATIONS = {1: ("ALTER TABLE runs ADD COLUMN writer TEXT",), 2: ("ALTER TABLE samples ADD COLUMN cpu_s REAL",)}
"""Statements that take a store from version N to N + 1."""

_COLUMNS_V1 = {
    "schema_version": ("version",),
    "runs": RUN_COLUMNS,
    "points": POINT_COLUMNS,
    "samples": ("point_id", "seq", "value_s"),
    "calibrations": ("name", "created", "device", "profile", "source_runs"),
}
_EXTRA_COLUMNS = {2: {"runs": ("writer",)}, 3: {"samples": ("cpu_s",)}}
_JSON_COLUMNS = {"runs": ("config", "environment"), "points": ("extra",), "calibrations": ("profile", "source_runs")}


def expected_columns(version: int) -> dict[str, tuple[str, ...]]:
    columns = {table: tuple(names) for table, names in _COLUMNS_V1.items()}
    for v in range(2, version + 1):
        for table, names in _EXTRA_COLUMNS.get(v, {}).items():
            columns[table] += names
    return columns


def check_file(path: Path, *, must_exist: bool) -> str:
    """"new" (no file yet), "empty" (a file of 0 bytes) or "sqlite"; anything else is refused here, before
    SQLite opens it (so no journal is created beside a device such as /dev/null)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        if must_exist:
            raise MeasureError(f"{path}: no such run database (the file does not exist)") from None
        return "new"
    except OSError as e:
        raise MeasureError(f"{path}: cannot read the run database ({e.strerror or e})") from None
    if stat.S_ISDIR(info.st_mode):
        raise MeasureError(f"{path}: is a folder, not a sizeup run database")
    if not stat.S_ISREG(info.st_mode):
        raise MeasureError(f"{path}: is not a regular file (a device, pipe or socket), not a sizeup run database")
    if info.st_size == 0:
        return "empty"
    try:
        with open(path, "rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
    except OSError as e:
        raise MeasureError(f"{path}: cannot read the run database ({e.strerror or e})") from None
    if header != SQLITE_HEADER:
        raise MeasureError(f"{path}: not a sizeup run database (not an SQLite file: it begins {header[:8]!r})")
    return "sqlite"


def _version(conn: sqlite3.Connection, path: Path) -> int:
    rows = conn.execute("SELECT version FROM schema_version").fetchall()
    if not rows:
        raise MeasureError(f"{path}: not a sizeup run database (its schema_version table is empty)")
    versions = [r[0] for r in rows]
    if any(isinstance(v, bool) or not isinstance(v, int) for v in versions):
        raise MeasureError(f"{path}: not a sizeup run database (schema version {versions[0]!r} is not an integer)")
    version = max(versions)
    if version > SCHEMA_VERSION:
        raise MeasureError(f"{path}: run database schema version {version} is newer than this "
                           f"sizeup's version {SCHEMA_VERSION}; upgrade sizeup to read it")
    if version < 1:
        raise MeasureError(f"{path}: not a sizeup run database (schema version {version} is unknown)")
    return version


def _bad_json(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a store with a JSON column that does not parse. SQLite's json_valid() finds the candidates
    quickly; Python confirms them (json_valid refuses the NaN that sizeup may write for an unknown value)."""
    for table, columns in _JSON_COLUMNS.items():
        key = "name" if table == "calibrations" else "id"
        test = " OR ".join(f"NOT json_valid({c})" for c in columns)
        try:
            rows = conn.execute(f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE {test}").fetchall()
        except sqlite3.OperationalError:  # an SQLite without JSON functions, or a text that is not text
            rows = conn.execute(f"SELECT {key}, {', '.join(columns)} FROM {table}").fetchall()
        for row in rows:
            for column, text in zip(columns, row[1:]):
                try:
                    json.loads(text)
                except (TypeError, ValueError, RecursionError):
                    raise MeasureError(f"{path}: {table} row {row[0]!r} column {column} is not valid JSON: the run "
                                       "database is damaged") from None


def check_database(conn: sqlite3.Connection, path: Path) -> int | None:
    """The store's schema version after every check, or None for an SQLite file with no tables at all."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return None
    if "schema_version" not in tables:
        raise MeasureError(f"{path}: not a sizeup run database (no schema_version table; "
                           f"has {', '.join(sorted(tables))[:200]})")
    version = _version(conn, path)
    for table, columns in expected_columns(version).items():
        if table not in tables:
            raise MeasureError(f"{path}: not a sizeup run database (no {table} table)")
        present = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        missing = [c for c in columns if c not in present]
        if missing:
            raise MeasureError(f"{path}: not a sizeup run database (table {table} has no column "
                               f"{', '.join(missing)})")
    problems = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        raise MeasureError(f"{path}: the run database fails its integrity check (PRAGMA quick_check: "
                           f"{str(problems[0])[:120]}); it was left as it is")
    _bad_json(conn, path)
    return version


def create_schema(conn: sqlite3.Connection) -> None:
    """Every table at the current version; inside the caller's transaction."""
    for statement in _TABLES_V1.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (1,))
    migrate(conn, 1)


def migrate(conn: sqlite3.Connection, version: int) -> None:
    """Take a store from `version` to `SCHEMA_VERSION`; inside the caller's transaction."""
    for v in range(version, SCHEMA_VERSION):
        for statement in _MIGRATIONS[v]:
            conn.execute(statement)
    if version < SCHEMA_VERSION:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
