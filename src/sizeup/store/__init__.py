"""The run store: one schema, two backends.

- SQLite (`sqlite.py`, the default): one file in the user data folder, or `--db PATH`.
- PostgreSQL (`postgres.py`, for a team): `--db postgresql://user@host/db`, or `SIZEUP_DB` in the
  environment; psycopg 3 from the `[team]` extra, imported only then. Writers go through the spool
  (`spool.py`): a run that loses the server keeps its points on this machine until `sizeup runs sync`.

`open_store(db)` picks the backend from `db` (a path or a URL; None: `SIZEUP_DB`, else the default file).
The schema and its versioned migrations are shared (`schema.py`, `migrations/`). Nothing here imports a
database driver until a store is opened, and `sizeup estimate` never opens one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from sizeup.files import user_path
from sizeup.store.base import MAX_ID, POINT_STATUSES, RUN_KINDS, RUN_STATUSES, RunStore, check_id
from sizeup.store.records import PointRecord, Provenance, RunRecord, summarize_samples
from sizeup.store.schema import SCHEMA_VERSION
from sizeup.store.sqlite import SQLiteStore, default_path

__all__ = ["SCHEMA_VERSION", "RUN_KINDS", "RUN_STATUSES", "POINT_STATUSES", "MAX_ID", "RunRecord", "PointRecord",
           "Provenance", "RunStore", "SQLiteStore", "Store", "default_path", "summarize_samples", "check_id",
           "open_store", "resolve_db", "is_url", "describe_db"]

Store = SQLiteStore
"""The SQLite store under its historical name (`Store(path)`)."""

ENV = "SIZEUP_DB"


def is_url(db: object) -> bool:
    """Whether `db` names a database server (postgresql://…) rather than a file."""
    from sizeup.store.postgres import is_postgres_url

    return is_postgres_url(db) or (isinstance(db, str) and "://" in db and not db.lower().startswith("file://"))


def resolve_db(db: str | Path | None) -> str | Path:
    """`db` as given (a URL stays a string, a path becomes a Path), else `$SIZEUP_DB`, else the default file."""
    if db is None or db == "":
        db = os.environ.get(ENV) or None
    if db is None:
        return default_path()
    if isinstance(db, str) and is_url(db):
        _check_scheme(db)
        return db
    return user_path(db)


def describe_db(db: str | Path | None) -> str:
    """The database as shown to a user (a URL without its password)."""
    target = resolve_db(db)
    if isinstance(target, str):
        from sizeup.store.postgres import redact_url

        return redact_url(target)
    return str(target)


def _check_scheme(url: str) -> None:
    from sizeup.errors import ConfigError
    from sizeup.store.postgres import is_postgres_url

    if not is_postgres_url(url):
        raise ConfigError(f"--db {url.split('://', 1)[0]}://…: expected a file path or a postgresql:// URL")


def open_store(db: str | Path | None = None, *, readonly: bool = False, create: bool = True,
               on_spool: Callable[[str], None] | None = None):
    """The run store `db` names (see the module). For writing to a server, a `SpoolingStore`: writes go to the
    local spool while the server is away (`on_spool` is told once, with the reason)."""
    target = resolve_db(db)
    if isinstance(target, Path):
        return SQLiteStore(target, readonly=readonly, create=create)
    from sizeup.store.postgres import PostgresStore

    if readonly:
        return PostgresStore(target, readonly=True)
    from sizeup.store.spool import SpoolingStore

    return SpoolingStore(lambda: PostgresStore(target, create=create), on_spool=on_spool)
