"""The run store in one SQLite file (the default, embedded backend).

The file is in WAL mode with `synchronous=FULL`; each write commits its own transaction (`BEGIN IMMEDIATE`,
waiting up to 30 s for another writer), so several processes may write at once and one killed mid-sweep loses at
most the point in flight.

A file given as a run database is checked before anything is written to it: it must be a regular file, begin
with SQLite's header, hold every sizeup table with its columns, carry a schema version this sizeup knows, pass
`PRAGMA quick_check`, and hold valid JSON in its JSON columns. A file that fails is refused with one line and
left as it was (byte for byte). An older schema is migrated in place when the file is opened for writing;
`readonly=True` (also `SQLiteStore.open_read(path)`) never creates or changes a file, refuses a missing one, and
reads an older schema as it is. A file (or its folder) this process may not write is refused for writing in one
line when it is opened, before any work is done.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from sizeup.errors import MeasureError
from sizeup.files import user_path
from sizeup.store.base import RunStore
from sizeup.store.schema import JSON_COLUMNS, SCHEMA_VERSION, check_version, expected_columns, migrate

__all__ = ["SQLiteStore", "default_path", "check_file", "check_database", "SQLITE_HEADER"]

SQLITE_HEADER = b"SQLite format 3\x00"
WAL_SWITCH_WAIT_S = 30.0
"""As the connection's busy timeout: how long a writer waits for another to finish switching a new file to WAL."""


def default_path() -> Path:
    """`$SIZEUP_DATA_DIR/runs.sqlite`, else `$XDG_DATA_HOME/sizeup/runs.sqlite`, else `~/.local/share/sizeup/`."""
    if os.environ.get("SIZEUP_DATA_DIR"):
        return user_path(os.environ["SIZEUP_DATA_DIR"]) / "runs.sqlite"
    if os.environ.get("XDG_DATA_HOME"):
        return user_path(os.environ["XDG_DATA_HOME"]) / "sizeup" / "runs.sqlite"
    return Path.home() / ".local" / "share" / "sizeup" / "runs.sqlite"


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


def _check_writable(path: Path, kind: str) -> None:
    """Refuse, before any work, a store this process cannot write: the file, or the folder where SQLite keeps
    its write-ahead log beside it."""
    folder = path.parent if path.parent != Path("") else Path(".")
    if kind != "new" and not os.access(path, os.W_OK):
        raise MeasureError(f"{path}: the run database is read-only for this user: nothing can be saved there "
                           "(give --db a writable path)")
    if kind != "new" and folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise MeasureError(f"{path}: its folder {folder} is read-only for this user, and SQLite writes its journal "
                           "there: nothing can be saved (give --db a writable path)")


def _bad_json(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a store with a JSON column that does not parse. SQLite's json_valid() finds the candidates
    quickly; Python confirms them (json_valid refuses the NaN that sizeup may write for an unknown value)."""
    for table, columns in JSON_COLUMNS.items():
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
    version = check_version([r[0] for r in conn.execute("SELECT version FROM schema_version").fetchall()], path)
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
        text = " ".join(str(problems[0]).split())[:120]
        raise MeasureError(f"{path}: the run database fails its integrity check (PRAGMA quick_check: {text}); it "
                           "was left as it is")
    _bad_json(conn, path)
    return version


def _set_wal(conn: sqlite3.Connection) -> None:
    """PRAGMA journal_mode=WAL, waiting for a concurrent writer: SQLite answers "database is locked" at once,
    without its busy handler, when two connections switch a new file's journal mode at the same moment."""
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


class SQLiteStore(RunStore):
    """A SQLite file of measurement runs; open it with `SQLiteStore(path)` or `with SQLiteStore() as store:`.

    Modes: the default opens for writing, creating the file (and its folder) if missing; `create=False`
    refuses a missing file; `readonly=True` refuses a missing file, never writes (SQLite's `query_only`), and
    does not migrate an older schema (it reads it as it is).
    """

    dialect = "sqlite"

    def __init__(self, path: str | Path | None = None, *, create: bool = True, readonly: bool = False) -> None:
        self.path = default_path() if path is None else user_path(path)
        self.readonly = readonly
        self.version = SCHEMA_VERSION
        self._conn: sqlite3.Connection | None = None
        kind = check_file(self.path, must_exist=readonly or not create)
        if kind == "empty" and readonly:
            raise MeasureError(f"{self.path}: is an empty file, not a sizeup run database")
        if not readonly:
            _check_writable(self.path, kind)
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
            if "readonly" in text:
                raise MeasureError(f"{self.path}: the run database is read-only ({text}): nothing can be saved "
                                   "there (give --db a writable path)") from None
            raise MeasureError(f"{self.path}: not a sizeup run database ({text}); it was left as it is") from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    @classmethod
    def open_read(cls, path: str | Path | None = None) -> SQLiteStore:
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
        self._conn = conn
        try:
            with self._transaction():  # create or migrate; another writer may have done it meanwhile
                version = check_database(conn, self.path)
                migrate(self._rows, version or 0, "sqlite")
        finally:
            self._conn = None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        conn = self.conn
        with self._errors():
            conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        with self._errors():
            conn.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._errors():
            return self.conn.execute(sql, tuple(params)).fetchall()

    def _insert(self, sql: str, params: Sequence = ()) -> int:
        with self._errors():
            return int(self.conn.execute(sql, tuple(params)).lastrowid)

    def _many(self, sql: str, rows: Sequence[Sequence]) -> None:
        with self._errors():
            self.conn.executemany(sql, rows)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors on a store already open (it went read-only, its disk filled, a lock outlasted the
        timeout) as one MeasureError naming the file."""
        try:
            yield
        except OverflowError:
            raise MeasureError(f"{self.path}: a number is too large for the run database (at most 2**63 - 1)") \
                from None
        except sqlite3.Error as e:
            text = " ".join(str(e).split())[:200]
            if "readonly" in text:
                raise MeasureError(f"{self.path}: the run database became read-only ({text}): the run could not be "
                                   "saved") from None
            raise MeasureError(f"{self.path}: the run database refused a statement ({text})") from None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MeasureError(f"{self.path}: run database is closed")
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"
