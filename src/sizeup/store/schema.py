"""The run store's schema: its version, the columns each version has, and the runner of the versioned
migrations (`migrations/`), shared by both backends.

Versions: 1 — runs, points, samples, calibrations; 2 — `runs.writer`, the identity of the process writing a
run; 3 — `samples.cpu_s`, each repetition's thread CPU time; 4 — provenance on every run, unique ids of runs
and points (spool and sync), the key of a calibration profile. Each is one module under `migrations/`.
"""

from __future__ import annotations

from collections.abc import Callable

from sizeup.errors import MeasureError
from sizeup.store.migrations import MIGRATIONS, statements
from sizeup.store.records import POINT_COLUMNS, PROVENANCE_COLUMNS, RUN_COLUMNS

__all__ = ["SCHEMA_VERSION", "JSON_COLUMNS", "expected_columns", "migrate", "check_version"]

SCHEMA_VERSION = MIGRATIONS[-1].VERSION

_COLUMNS_V1 = {
    "schema_version": ("version",),
    "runs": RUN_COLUMNS,
    "points": POINT_COLUMNS,
    "samples": ("point_id", "seq", "value_s"),
    "calibrations": ("name", "created", "device", "profile", "source_runs"),
}
_EXTRA_COLUMNS = {2: {"runs": ("writer",)}, 3: {"samples": ("cpu_s",)},
                  4: {"runs": ("uid", *PROVENANCE_COLUMNS), "points": ("uid",),
                      "calibrations": ("device_type", "engine", "engine_version", "workload_class")}}
JSON_COLUMNS = {"runs": ("config", "environment"), "points": ("extra",), "calibrations": ("profile", "source_runs")}


def expected_columns(version: int) -> dict[str, tuple[str, ...]]:
    """Every table of a store at `version` with the columns it must have."""
    columns = {table: tuple(names) for table, names in _COLUMNS_V1.items()}
    for v in range(2, version + 1):
        for table, names in _EXTRA_COLUMNS.get(v, {}).items():
            columns[table] += names
    return columns


def check_version(versions: list, where: object) -> int:
    """The store's version from the rows of its schema_version table; one MeasureError for anything else."""
    if not versions:
        raise MeasureError(f"{where}: not a sizeup run database (its schema_version table is empty)")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in versions):
        raise MeasureError(f"{where}: not a sizeup run database (schema version {versions[0]!r} is not an integer)")
    version = max(versions)
    if version > SCHEMA_VERSION:
        raise MeasureError(f"{where}: run database schema version {version} is newer than this "
                           f"sizeup's version {SCHEMA_VERSION}; upgrade sizeup to read it")
    if version < 1:
        raise MeasureError(f"{where}: not a sizeup run database (schema version {version} is unknown)")
    return version


def migrate(execute: Callable[[str, tuple], list], version: int, dialect: str) -> None:
    """Take a store from `version` (0: an empty database) to SCHEMA_VERSION, inside the caller's transaction:
    each version's statements, then its backfill of the rows written before."""
    for v in range(version + 1, SCHEMA_VERSION + 1):
        for statement in statements(v, dialect):
            execute(statement, ())
        backfill = getattr(MIGRATIONS[v - 1], "backfill", None)
        if backfill is not None and version > 0:
            backfill(execute)
    if 0 < version < SCHEMA_VERSION:
        execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    elif version == 0 and SCHEMA_VERSION > 1:
        execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
