"""The run store's versioned migrations: one module per schema version, each holding the statements that take a
store from the version before to its own, in SQLite's and in PostgreSQL's dialect, and optionally a `backfill`
that fills the new columns of rows written before (run inside the same transaction).

A new version is one new module here (`vNNNN_what.py` with VERSION, SQLITE, POSTGRES and, if needed, backfill)
added to MIGRATIONS; `schema.SCHEMA_VERSION` is the last one's VERSION. Both backends apply the same list, so a
PostgreSQL store and an SQLite store at the same version have the same tables and columns.
"""

from __future__ import annotations

from types import ModuleType

from sizeup.store.migrations import v0001_initial, v0002_writer, v0003_cpu_time, v0004_provenance

__all__ = ["MIGRATIONS", "statements"]

MIGRATIONS: tuple[ModuleType, ...] = (v0001_initial, v0002_writer, v0003_cpu_time, v0004_provenance)
"""In order; MIGRATIONS[i].VERSION == i + 1."""


def statements(version: int, dialect: str) -> tuple[str, ...]:
    """The statements that bring a store to `version` (from version - 1) in `dialect` ("sqlite" or "postgres")."""
    module = MIGRATIONS[version - 1]
    return module.SQLITE if dialect == "sqlite" else module.POSTGRES
