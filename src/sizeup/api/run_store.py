"""`runs`, `run`, `export_runs`: the measurement runs in the run store, as `sizeup runs list|show|export`.

`db` is the store as `--db` takes it (default: the user data folder); reading never creates one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["RunList", "export_runs", "open_store", "run", "runs", "store_path"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunList:
    db: str
    """Where the store is (it may not exist yet: then there are no runs)."""
    runs: tuple[Any, ...]
    """`sizeup.measure.records.RunRecord`s, newest first, without their points."""
    exists: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"db": self.db, "runs": [r.to_dict() for r in self.runs]}


def store_path(db: str | Path | None) -> Path:
    from sizeup.measure.store import default_path

    return Path(db).expanduser() if db else default_path()


def open_store(db: str | Path | None):
    """The store, read-only: a missing one is refused, never created."""
    from sizeup.measure.store import Store

    return Store(store_path(db), readonly=True)


def runs(*, db: str | Path | None = None, limit: int | None = None) -> RunList:
    """The runs, newest first (the `limit` newest)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit={limit!r}: expected a positive integer")
    path = store_path(db)
    if not path.exists():
        return RunList(db=str(path), runs=(), exists=False)
    with open_store(path) as store:
        return RunList(db=str(path), runs=tuple(store.runs(limit=limit)))


def run(run_id: int, *, db: str | Path | None = None):
    """One run with its points (`sizeup.measure.records.RunRecord`, `to_dict()`)."""
    with open_store(db) as store:
        return store.run(run_id)


def export_runs(run_ids: Sequence[int], fmt: str = "json", *, db: str | Path | None = None) -> str:
    """Runs as CSV (one row per point) or JSON (runs with points and samples)."""
    if fmt not in ("csv", "json"):
        raise ConfigError(f"format {fmt!r}: expected csv or json")
    with open_store(db) as store:
        return store.export(list(run_ids), fmt)
