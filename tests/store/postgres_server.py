"""PostgreSQL for the store tests: a fresh database per test on the server CI starts (`SIZEUP_TEST_DB_URL`, set
by .ci/run), and a private throwaway cluster (initdb + pg_ctl) for the tests that stop and restart the server.

A test that needs PostgreSQL is skipped only when no server URL is given (CI always gives one) or, for a
private cluster, when PostgreSQL's programs are not installed.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

URL_ENV = "SIZEUP_TEST_DB_URL"


def server_url() -> str | None:
    return os.environ.get(URL_ENV) or None


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


@contextmanager
def fresh_database(url: str):
    """A new, empty database on the server at `url` for one test; dropped afterwards."""
    import psycopg

    name = f"sizeup_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A throwaway PostgreSQL cluster on 127.0.0.1 run as the `postgres` user (initdb refuses root)."""

    def __init__(self) -> None:
        self.initdb, self.pg_ctl = _bin("initdb"), _bin("pg_ctl")
        if not self.initdb or not self.pg_ctl:
            raise FileNotFoundError("initdb / pg_ctl not installed")
        self.root = Path(tempfile.mkdtemp(prefix="sizeup-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = None
        if os.geteuid() == 0:
            self.user = "postgres"
            info = pwd.getpwnam(self.user)
            os.chown(self.root, info.pw_uid, info.pw_gid)
        self._run([self.initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"])

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, argv: list[str]) -> None:
        if self.user:
            argv = ["runuser", "-u", self.user, "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run([self.pg_ctl, "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "-o",
                   f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])

    def stop(self, mode: str = "fast") -> None:
        self._run([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"])

    def remove(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)
