"""The run store on a PostgreSQL server, for a team: `--db postgresql://user@host/db` or `SIZEUP_DB`.

Through psycopg 3 (the `[team]` extra), imported only when such a store is opened. The tables are those of the
SQLite store (`migrations/`, PostgreSQL dialect: identity ids, DOUBLE PRECISION); JSON columns are kept as text,
as in SQLite, so that the NaN sizeup writes for an unknown value survives. Every write is its own transaction
(autocommit connection, explicit `transaction()` blocks), so writers on many machines run side by side: ids come
from identity sequences, and nothing else is shared. Creating or migrating the schema takes a transaction-level
advisory lock, so that writers starting together do it once.

A server that cannot be reached, or a connection lost mid-run, raises `StoreUnavailable` (a MeasureError): a
writer then keeps its points in the local spool (`spool.py`) and `sizeup runs sync` uploads them later.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from sizeup.errors import MeasureError
from sizeup.store.base import RunStore
from sizeup.store.schema import SCHEMA_VERSION, check_version, expected_columns, migrate

__all__ = ["PostgresStore", "StoreUnavailable", "redact_url", "is_postgres_url"]

MIGRATION_LOCK = 0x73697A6575700001
"""The advisory lock key (any 64-bit number) held while the schema is created or migrated."""
CONNECT_TIMEOUT_S = 10
_PLACEHOLDER = re.compile(r"\?")


class StoreUnavailable(MeasureError):
    """The database server cannot be reached, or the connection to it was lost."""


def is_postgres_url(text: object) -> bool:
    return isinstance(text, str) and text.split(":", 1)[0].lower() in ("postgresql", "postgres")


def redact_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://…"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise MeasureError("a PostgreSQL run database needs psycopg: pip install 'sizeup[team]'") from None
    return psycopg


def _text(value: object) -> object:
    """PostgreSQL text cannot hold NUL characters: each becomes U+FFFD (sizeup's JSON escapes them already)."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


class PostgresStore(RunStore):
    """A PostgreSQL database of measurement runs (see the module). `readonly=True` never creates or migrates
    the schema and refuses writes; a database without sizeup's tables is then an error."""

    dialect = "postgres"

    def __init__(self, url: str, *, readonly: bool = False, create: bool = True) -> None:
        self.url = url
        self.path = redact_url(url)
        self.readonly = readonly
        self.version = SCHEMA_VERSION
        psycopg = _psycopg()
        self._errors = (psycopg.OperationalError, psycopg.InterfaceError)
        self._database_error = psycopg.DatabaseError
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except self._errors as e:
            raise StoreUnavailable(f"{self.path}: cannot reach the run database ({_first_line(e)})") from None
        except (psycopg.Error, ValueError) as e:  # a malformed URL, an unknown option
            raise MeasureError(f"{self.path}: not a usable PostgreSQL URL ({_first_line(e)})") from None
        try:
            self._open(create)
        except BaseException:
            self.close()
            raise

    def _open(self, create: bool) -> None:
        version = self._check()
        if self.readonly:
            if version is None:
                raise MeasureError(f"{self.path}: has no sizeup tables: not a sizeup run database")
            self.version = version
            return
        if version == SCHEMA_VERSION:
            return
        if version is None and not create:
            raise MeasureError(f"{self.path}: has no sizeup tables: not a sizeup run database")
        with self._transaction():
            self._rows("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            version = self._check()  # another writer may have created or migrated it meanwhile
            if version != SCHEMA_VERSION:
                migrate(self._rows, version or 0, "postgres")

    def _check(self) -> int | None:
        """The schema version after checking every table and column; None for a database with no sizeup
        tables (other tables of the team's may be there: they are left alone)."""
        tables = {r[0] for r in self._rows("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_schema = current_schema()")}
        if "schema_version" not in tables:
            if {"runs", "points", "samples", "calibrations"} & tables:
                raise MeasureError(f"{self.path}: has a runs/points table but no schema_version table: not a "
                                   "sizeup run database (use another database or schema)")
            return None
        version = check_version([r[0] for r in self._rows("SELECT version FROM schema_version")], self.path)
        present: dict[str, set[str]] = {}
        for table, column in self._rows("SELECT table_name, column_name FROM information_schema.columns "
                                        "WHERE table_schema = current_schema()"):
            present.setdefault(table, set()).add(column)
        for table, columns in expected_columns(version).items():
            if table not in present:
                raise MeasureError(f"{self.path}: not a sizeup run database (no {table} table)")
            missing = [c for c in columns if c not in present[table]]
            if missing:
                raise MeasureError(f"{self.path}: not a sizeup run database (table {table} has no column "
                                   f"{', '.join(missing)})")
        return version

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            with self.conn.transaction():
                yield
        except self._errors as e:
            raise StoreUnavailable(f"{self.path}: lost the run database ({_first_line(e)})") from None

    def _sql(self, sql: str) -> str:
        return _PLACEHOLDER.sub("%s", sql.replace("%", "%%"))

    def _rows(self, sql: str, params: Sequence = ()) -> list[tuple]:
        try:
            cursor = self.conn.execute(self._sql(sql), tuple(_text(p) for p in params))
            return cursor.fetchall() if cursor.description is not None else []
        except self._errors as e:
            raise StoreUnavailable(f"{self.path}: lost the run database ({_first_line(e)})") from None
        except self._database_error as e:
            raise MeasureError(f"{self.path}: the run database refused a statement ({_first_line(e)})") from None

    def _insert(self, sql: str, params: Sequence = ()) -> int:
        return int(self._rows(sql + " RETURNING id", params)[0][0])

    def _many(self, sql: str, rows: Sequence[Sequence]) -> None:
        if not rows:
            return
        try:
            with self.conn.cursor() as cursor:
                cursor.executemany(self._sql(sql), [tuple(_text(p) for p in r) for r in rows])
        except self._errors as e:
            raise StoreUnavailable(f"{self.path}: lost the run database ({_first_line(e)})") from None

    @property
    def conn(self):
        if self._conn is None:
            raise MeasureError(f"{self.path}: run database is closed")
        return self._conn

    def close(self) -> None:
        conn, self._conn = getattr(self, "_conn", None), None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # closing a connection the server dropped must not hide the first error
                pass


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
