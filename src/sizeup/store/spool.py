"""A run that loses its database keeps its points: the local spool, and `sizeup runs sync`.

A writer to a server (PostgreSQL) goes through `SpoolingStore`. When the server cannot be reached at the start,
or the connection is lost mid-run, the run goes on into the spool — an SQLite store on this machine
(`spool_path()`: `$SIZEUP_SPOOL`, else `spool.sqlite` beside the default run store) — with the same uid, config,
environment and provenance: the point that met the failure is written there, and so is every later point and
the run's final status. Points already on the server stay there.

`sync(spool, server)` uploads what the spool holds: each run is found on the server by its uid (or created
there with its original start time and writer), each point is inserted unless a point with its uid is already
there (so a point whose commit reached the server just before the connection broke is not doubled, and sync may
run any number of times), then the final status is set; a run whose writer has finished (or died) is then
removed from the spool. Nothing is lost but the point in flight of a writer killed outright.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sizeup.errors import MeasureError
from sizeup.files import user_path
from sizeup.store.base import RunStore, check_id
from sizeup.store.records import Provenance

__all__ = ["SpoolingStore", "spool_path", "sync", "SyncReport"]


def spool_path() -> Path:
    """`$SIZEUP_SPOOL`, else `spool.sqlite` in the folder of the default run store."""
    if os.environ.get("SIZEUP_SPOOL"):
        return user_path(os.environ["SIZEUP_SPOOL"])
    from sizeup.store.sqlite import default_path

    return default_path().parent / "spool.sqlite"


@dataclass(slots=True)
class _Run:
    """What a writer remembers of a run it started: enough to start it again in the spool."""

    args: dict
    server_id: int | None = None
    spool_id: int | None = None


class SpoolingStore:
    """A store on a server whose writes fall back to the local spool (see the module). Reads go to the server.
    Run ids handed out are the server's; a run started while the server was away gets a negative id (minus its
    spool id) until `sizeup runs sync` uploads it."""

    def __init__(self, open_server: Callable[[], RunStore], *, spool: Path | None = None,
                 on_spool: Callable[[str], None] | None = None) -> None:
        from sizeup.store.postgres import StoreUnavailable

        self._unavailable = StoreUnavailable
        self.spool_file = spool or spool_path()
        self._on_spool = on_spool
        self._spool: RunStore | None = None
        self._runs: dict[int, _Run] = {}
        self.spooled: list[int] = []
        """Ids (as handed out) of the runs that went to the spool in this process."""
        self.server: RunStore | None
        try:
            self.server = open_server()
        except StoreUnavailable as e:
            self.server = None
            self._lost(str(e))

    @property
    def readonly(self) -> bool:
        return False

    @property
    def path(self) -> str:
        return self.server.where if self.server is not None else f"{self.spool_file} (spool)"

    @property
    def where(self) -> str:
        return str(self.path)

    def _lost(self, reason: str) -> None:
        if self.server is not None:
            self.server.close()
        self.server = None
        if self._on_spool is not None:
            self._on_spool(f"{reason}; writing to the local spool {self.spool_file} ('sizeup runs sync' uploads it "
                           "when the database is back)")

    def _spool_store(self) -> RunStore:
        if self._spool is None:
            from sizeup.store.sqlite import SQLiteStore

            self._spool = SQLiteStore(self.spool_file)
        return self._spool

    def _to_spool(self, run_id: int) -> int:
        run = self._runs[run_id]
        if run.spool_id is None:
            run.spool_id = self._spool_store().start_run(**run.args)
            self.spooled.append(run_id)
        return run.spool_id

    # -- writing: the server while it answers, the spool after -----------------------------------------------

    def start_run(self, *, kind: str, target: str, device: str, config: dict, environment: dict,
                  provenance: Provenance | dict | None = None, uid: str | None = None, **extra) -> int:
        import uuid

        from sizeup.store.base import now
        from sizeup.store.writer import current_writer

        args = {"kind": kind, "target": target, "device": device, "config": config, "environment": environment,
                "provenance": provenance, "uid": uid or uuid.uuid4().hex, "created": extra.get("created") or now(),
                "writer": extra.get("writer") or current_writer()}
        if self.server is not None:
            try:
                run_id = self.server.start_run(**args)
                self._runs[run_id] = _Run(args, server_id=run_id)
                return run_id
            except self._unavailable as e:
                self._lost(str(e))
        spool_id = self._spool_store().start_run(**args)
        self._runs[-spool_id] = _Run(args, spool_id=spool_id)
        self.spooled.append(-spool_id)
        return -spool_id

    def _write(self, run_id: int, method: str, *args, **kwargs):
        run = self._runs.get(run_id)
        if run is None:
            if self.server is None:
                raise MeasureError(f"run {run_id} was not started by this writer, and its database is away")
            return getattr(self.server, method)(run_id, *args, **kwargs)
        if run.spool_id is None and self.server is not None:
            try:
                return getattr(self.server, method)(run.server_id, *args, **kwargs)
            except self._unavailable as e:
                self._lost(str(e))
        return getattr(self._spool_store(), method)(self._to_spool(run_id), *args, **kwargs)

    def add_point(self, run_id: int, **kwargs) -> int:
        import uuid

        kwargs.setdefault("uid", uuid.uuid4().hex)  # the same uid wherever the point lands
        return self._write(run_id, "add_point", **kwargs)

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        self._write(run_id, "finish_run", status, error)

    def save_calibration(self, *args, **kwargs) -> None:
        self._reader().save_calibration(*args, **kwargs)

    # -- reading: the server ------------------------------------------------------------------------------------

    def _reader(self) -> RunStore:
        if self.server is None:
            raise self._unavailable(f"the run database is away (runs go to the spool {self.spool_file}): cannot "
                                    "read it")
        return self.server

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._reader(), name)

    def close(self) -> None:
        for store in (self.server, self._spool):
            if store is not None:
                store.close()
        self.server = self._spool = None

    def __enter__(self) -> SpoolingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(slots=True)
class SyncReport:
    runs: int = 0
    """Spooled runs seen."""
    created: int = 0
    """Of them, runs the server did not have yet."""
    points: int = 0
    """Points uploaded."""
    duplicates: int = 0
    """Points the server already had (same uid), not uploaded again."""
    kept: list[str] = field(default_factory=list)
    """Uids of runs left in the spool (their writer is still running)."""

    def to_dict(self) -> dict:
        return {"runs": self.runs, "created": self.created, "points": self.points, "duplicates": self.duplicates,
                "kept": list(self.kept)}


def sync(spool: RunStore, server: RunStore) -> SyncReport:
    """Upload every run of the spool to the server (see the module); idempotent."""
    report = SyncReport()
    for listed in list(spool.iter_runs()):
        record = spool.run(listed.id)
        if record.uid is None:
            raise MeasureError(f"{spool.where}: run {record.id} has no uid: not a spool sizeup wrote")
        report.runs += 1
        server_id = server.run_id_of(record.uid)
        if server_id is None:
            server_id = server.start_run(kind=record.kind, target=record.target, device=record.device,
                                         config=record.config, environment=record.environment,
                                         provenance=record.provenance, uid=record.uid, created=record.created,
                                         writer=spool.writer_of(record.id) or {})
            report.created += 1
        have = server.point_uids(server_id)
        for point in record.points:
            uid = spool.point_uid(point.id)
            if uid in have:
                report.duplicates += 1
                continue
            server.add_point(server_id, batch=point.batch, phase=point.phase, status=point.status,
                             samples_s=spool.samples(point.id), cpu_samples_s=spool.cpu_samples(point.id),
                             grad_accumulation=point.grad_accumulation, throughput_per_s=point.throughput_per_s,
                             peak_memory_bytes=point.peak_memory_bytes, error=point.error, extra=point.extra,
                             uid=uid, created=point.created)
            report.points += 1
        if record.status != "running":
            server.finish_run(server_id, record.status, record.error)
        if record.status != "running" or record.writer_gone:
            _drop(spool, record.id)
        else:
            report.kept.append(record.uid)
    return report


def _drop(spool: RunStore, run_id: int) -> None:
    check_id(run_id)
    with spool._transaction():
        spool._rows("DELETE FROM samples WHERE point_id IN (SELECT id FROM points WHERE run_id = ?)", (run_id,))
        spool._rows("DELETE FROM points WHERE run_id = ?", (run_id,))
        spool._rows("DELETE FROM runs WHERE id = ?", (run_id,))
