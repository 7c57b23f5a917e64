"""Run store write throughput: points per second committed on SQLite and on PostgreSQL, with 1 and 8 writer
processes writing at once (each point its own transaction with its 20 repetition times, as `sizeup measure`
writes them), and the points per second of `sizeup runs sync` uploading a spool.

Each writer opens the store, starts a run, and after a common start signal adds POINTS points, then finishes
the run; throughput = all points / (last writer done - start signal). A fresh database (PostgreSQL) or file
(SQLite) per row. Every row is checked: all points and samples are in the store afterwards.

Run from the repo root:
    python benchmarks/store_throughput.py [--db-url postgresql://postgres@127.0.0.1:5432/postgres] [--points N]
The PostgreSQL rows need a server (--db-url, else $SIZEUP_TEST_DB_URL) and psycopg; without one they are skipped.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SAMPLES = 20


def _writer(db: str, points: int, n: int, ready, go, done) -> None:
    from sizeup.store import open_store

    store = open_store(db)
    run = store.start_run(kind="microbench", target="bench", device="cpu", config={"writer": n}, environment={},
                          provenance={"host": f"writer-{n}"})
    ready.put(n)
    go.wait()
    for k in range(points):
        store.add_point(run, batch=k + 1, phase="forward", status="ok",
                        samples_s=[1e-3 * (1 + 0.01 * i) for i in range(SAMPLES)], extra={"k": k})
    store.finish_run(run, "ok")
    store.close()
    done.put(time.perf_counter())


def measure(db: str, writers: int, points: int) -> float:
    ctx = mp.get_context("spawn")
    ready, done, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_writer, args=(db, points, n, ready, go, done)) for n in range(writers)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=120)
    start = time.perf_counter()
    go.set()
    ends = [done.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode:
            raise SystemExit(f"a writer failed (exit {p.exitcode})")
    elapsed = max(ends) - start
    from sizeup.store import open_store

    with open_store(db, readonly=True) as store:
        runs = store.runs(kind="microbench")
        counts = [store.run(r.id).point_count for r in runs]
        assert counts == [points] * writers, counts
    return writers * points / elapsed


def fresh_pg(url: str):
    import psycopg

    name = f"sizeup_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    from urllib.parse import urlsplit, urlunsplit

    return name, urlunsplit(urlsplit(url)._replace(path="/" + name))


def drop_pg(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')


def sync_rate(url: str, points: int) -> float:
    """Points per second `sync` uploads from a spool of one run of `points` points."""
    from sizeup.store import open_store
    from sizeup.store.spool import sync
    from sizeup.store.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory() as tmp:
        spool = SQLiteStore(Path(tmp) / "spool.sqlite")
        run = spool.start_run(kind="microbench", target="bench", device="cpu", config={}, environment={})
        for k in range(points):
            spool.add_point(run, batch=k + 1, phase="forward", status="ok",
                            samples_s=[1e-3 * (1 + 0.01 * i) for i in range(SAMPLES)])
        spool.finish_run(run, "ok")
        name, db = fresh_pg(url)
        try:
            with open_store(db).server as server:
                start = time.perf_counter()
                report = sync(spool, server)
                elapsed = time.perf_counter() - start
            assert report.points == points
        finally:
            spool.close()
            drop_pg(url, name)
    return points / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-url", default=os.environ.get("SIZEUP_TEST_DB_URL"))
    parser.add_argument("--points", type=int, default=300, help="points per writer (default 300)")
    args = parser.parse_args()
    rows = []
    for writers in (1, 8):
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(("SQLite (WAL, synchronous=FULL)", writers, measure(str(Path(tmp) / "runs.sqlite"), writers,
                                                                          args.points)))
    if args.db_url:
        for writers in (1, 8):
            name, db = fresh_pg(args.db_url)
            try:
                rows.append(("PostgreSQL", writers, measure(db, writers, args.points)))
            finally:
                drop_pg(args.db_url, name)
        rows.append(("PostgreSQL, runs sync of a spool", 1, sync_rate(args.db_url, args.points)))
    else:
        print("(no --db-url or SIZEUP_TEST_DB_URL: PostgreSQL rows skipped)")
    print(f"{'store':34} {'writers':>7} {'points/s':>10}   ({args.points} points of {SAMPLES} samples per writer, "
          f"{os.cpu_count()} CPUs)")
    for store, writers, rate in rows:
        print(f"{store:34} {writers:>7} {rate:>10,.0f}")


if __name__ == "__main__":
    main()
