"""`--db` for every command that reads or writes the run store: a file path or a postgresql:// URL (default:
`$SIZEUP_DB`, else the SQLite file in the user data folder). Only cheap imports here; the store loads when a
command opens it."""

from __future__ import annotations

import argparse
import sys

__all__ = ["DB_HELP", "add_db_argument", "open_writer", "open_reader", "db_exists", "warn"]

DB_HELP = ("run database: a file path, or postgresql://user@host/db for a shared store (default: $SIZEUP_DB, else "
           "$SIZEUP_DATA_DIR/runs.sqlite, else ~/.local/share/sizeup/runs.sqlite)")


def add_db_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="PATH|URL", help=DB_HELP)


def warn(message: str) -> None:
    """A warning on stderr (what the API's `warn=` callbacks get from the commands)."""
    print(f"warning: {message}", file=sys.stderr)


def open_writer(db: str | None):
    """The store for writing; a server that is away sends the runs to the local spool, with a warning."""
    from sizeup.store import open_store

    return open_store(db, on_spool=warn)


def db_exists(db: str | None) -> bool:
    """False only for a default or given file that does not exist yet (a server always 'exists')."""
    from sizeup.store import resolve_db

    target = resolve_db(db)
    return isinstance(target, str) or target.exists()


def open_reader(db: str | None):
    """The store for reading only: a missing file is an error that says so (reading never creates one)."""
    from sizeup.store import open_store

    return open_store(db, readonly=True)
