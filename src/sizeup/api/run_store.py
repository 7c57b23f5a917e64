"""`runs`, `run`, `export_runs`: the measurement runs in the run store, as `sizeup runs list|show|export`.

`db` is the store as `--db` takes it: a file path or a postgresql:// URL (default: `$SIZEUP_DB`, else the SQLite
file in the user data folder). Reading never creates a store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError, MeasureError

__all__ = ["RunList", "db_exists", "export_runs", "open_reader_of", "python_warning", "run", "runs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunList:
    db: str
    """Where the store is, as shown to a user (a URL without its password); it may not exist yet."""
    runs: tuple[Any, ...]
    """`sizeup.store.RunRecord`s, newest first, without their points."""
    exists: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"db": self.db, "runs": [r.to_dict() for r in self.runs]}


def db_exists(db: str | Path | None) -> bool:
    """False only for a default or given file that does not exist yet (a server always 'exists')."""
    from sizeup.store import resolve_db

    target = resolve_db(db)
    return isinstance(target, str) or target.exists()


def open_reader_of(db: str | Path | None, missing: str = ""):
    """The store, read-only; a store file that does not exist is refused (after `missing`, e.g. 'no run 3: ')."""
    from sizeup.store import describe_db, open_store

    if not db_exists(db):
        raise MeasureError(f"{missing}no run database at {describe_db(db)} (the file does not exist)")
    return open_store(db, readonly=True)


def runs(*, db: str | Path | None = None, limit: int | None = None) -> RunList:
    """The runs, newest first (the `limit` newest)."""
    from sizeup.store import describe_db, open_store

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit={limit!r}: expected a positive integer")
    where = describe_db(db)
    if not db_exists(db):
        return RunList(db=where, runs=(), exists=False)
    with open_store(db, readonly=True) as store:
        return RunList(db=where, runs=tuple(store.runs(limit=limit)))


def run(run_id: int, *, db: str | Path | None = None):
    """One run with its points and provenance (`sizeup.store.RunRecord`, `to_dict()`)."""
    from sizeup.store import open_store

    with open_store(db, readonly=True) as store:
        return store.run(run_id)


def export_runs(run_ids: Sequence[int], fmt: str = "json", *, db: str | Path | None = None) -> str:
    """Runs as CSV (one row per point) or JSON (runs with points and samples)."""
    from sizeup.store import open_store

    if fmt not in ("csv", "json"):
        raise ConfigError(f"format {fmt!r}: expected csv or json")
    with open_store(db, readonly=True) as store:
        return store.export(list(run_ids), fmt)


def python_warning(message: str) -> None:
    """What the verbs that write the store do with a warning (a server away, runs spooled) when the caller gives
    no `warn=`: a Python RuntimeWarning."""
    import warnings

    warnings.warn(message, RuntimeWarning, stacklevel=3)
