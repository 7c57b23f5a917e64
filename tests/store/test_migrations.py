"""An SQLite store written by the sizeup before schema version 4 migrates in place when opened for writing and
reads back identically; the new provenance columns are filled from what the old rows kept. A PostgreSQL store
is created at the current version once, however many writers open it together."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sizeup.store import SCHEMA_VERSION, Store, open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")

# The schema of sizeup's store before version 4, as its code wrote it (measure/store_schema.py, versions 1-3),
# typed here rather than taken from sizeup.store.migrations, so that a change there cannot hide a break.
OLD_TABLES = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, created TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL,
    device TEXT NOT NULL, status TEXT NOT NULL, config TEXT NOT NULL, environment TEXT NOT NULL, error TEXT);
CREATE TABLE points (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), created TEXT NOT NULL,
    batch INTEGER, grad_accumulation INTEGER, phase TEXT NOT NULL, status TEXT NOT NULL, latency_p50_s REAL,
    latency_p95_s REAL, latency_p99_s REAL, latency_mean_s REAL, latency_min_s REAL, latency_max_s REAL,
    repetitions INTEGER NOT NULL, throughput_per_s REAL, peak_memory_bytes INTEGER, error TEXT, extra TEXT NOT NULL);
CREATE INDEX points_run ON points(run_id);
CREATE TABLE samples (point_id INTEGER NOT NULL REFERENCES points(id), seq INTEGER NOT NULL, value_s REAL NOT NULL);
CREATE INDEX samples_point ON samples(point_id, seq);
CREATE TABLE calibrations (name TEXT PRIMARY KEY, created TEXT NOT NULL, device TEXT NOT NULL, profile TEXT NOT NULL,
    source_runs TEXT NOT NULL);
"""
GPU_ENV = {"torch": "2.4.1", "device": "cuda:0", "gpu_name": "NVIDIA H100 80GB HBM3", "driver": "550.54.15",
           "sm_clock": "1755 MHz", "sm_clock_max": "1980 MHz", "threads": 8}
WRITER = {"host": "lab-box-7", "pid": 4242}


def old_store(path: Path, version: int) -> None:
    """A store of `version` (1 to 3) holding an LLM run on a GPU, a CNN run on the CPU with CPU times, a load
    test, and a calibration profile."""
    conn = sqlite3.connect(path)
    conn.executescript(OLD_TABLES)
    if version >= 2:
        conn.execute("ALTER TABLE runs ADD COLUMN writer TEXT")
    if version >= 3:
        conn.execute("ALTER TABLE samples ADD COLUMN cpu_s REAL")
    conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
    runs = [("inference", "llama-3.2-1b", "cuda:0", "ok", {"llm": True, "prompt": 128, "context": 256}, GPU_ENV),
            ("inference", "cnn.py:build", "cpu", "ok", {"inputs": [{"shape": [1, 3, 32, 32], "dtype": "fp32",
                                                                     "name": None}]},
             {"torch": "2.4.1", "device": "cpu", "cpu_model": "AMD EPYC 7B13", "threads": 1}),
            ("load", "http://127.0.0.1:8000", "remote", "ok", {"api": "openai", "concurrency": 4}, {})]
    for n, (kind, target, device, status, config, env) in enumerate(runs, start=1):
        columns = "created, kind, target, device, status, config, environment" + (", writer" if version >= 2 else "")
        values = [f"2026-11-0{n}T10:00:00.000000+00:00", kind, target, device, status, json.dumps(config),
                  json.dumps(env)] + ([json.dumps(WRITER)] if version >= 2 else [])
        conn.execute(f"INSERT INTO runs ({columns}) VALUES ({', '.join('?' * len(values))})", values)
        for batch in (1, 2):
            samples = [0.01 * batch * (1 + 0.01 * i) for i in range(5)]
            conn.execute("INSERT INTO points (run_id, created, batch, phase, status, latency_p50_s, latency_p95_s, "
                         "latency_p99_s, latency_mean_s, latency_min_s, latency_max_s, repetitions, "
                         "throughput_per_s, peak_memory_bytes, error, extra) VALUES (?, ?, ?, 'forward', 'ok', ?, ?, "
                         "?, ?, ?, ?, 5, ?, ?, NULL, ?)",
                         (n, f"2026-11-0{n}T10:00:0{batch}.000000+00:00", batch, samples[2], samples[4], samples[4],
                          sum(samples) / 5, samples[0], samples[4], batch / samples[2], 1 << 20,
                          json.dumps({"predicted_s": 0.009 * batch})))
            point = conn.execute("SELECT max(id) FROM points").fetchone()[0]
            for seq, value in enumerate(samples):
                if version >= 3:
                    conn.execute("INSERT INTO samples VALUES (?, ?, ?, ?)", (point, seq, value, value * 0.9))
                else:
                    conn.execute("INSERT INTO samples VALUES (?, ?, ?)", (point, seq, value))
    conn.execute("INSERT INTO calibrations VALUES ('local', '2026-11-01T09:00:00+00:00', 'cpu', ?, '[2]')",
                 (json.dumps({"bench": {"matmul_flops_per_s": 1e11}, "values": {"memory": 1.0}}),))
    conn.commit()
    conn.close()


def snapshot(store) -> list:
    """Everything a reader sees of the store, but the columns version 4 added."""
    out = []
    for listed in store.runs():
        record = store.run(listed.id).to_dict()
        record.pop("uid")
        record.pop("provenance")
        record["samples"] = [store.samples(p["id"]) for p in record["points"]]
        record["cpu"] = [store.cpu_samples(p["id"]) for p in record["points"]]
        out.append(record)
    cal = store.calibration("local")
    cal.pop("key")
    return [out, cal, store.calibrations()]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_old_store_migrates_in_place_and_reads_back_identically(tmp_path, version):
    db = tmp_path / "runs.sqlite"
    old_store(db, version)
    with Store(db, readonly=True) as store:
        assert store.version == version
        before = snapshot(store)
    with Store(db) as store:  # writing migrates in place
        assert store.version == SCHEMA_VERSION
        assert snapshot(store) == before
        llm, cnn, load = (store.run(i) for i in (1, 2, 3))
        assert llm.uid is None  # runs from before keep no uid; new ones get one
        new = store.start_run(kind="train", target="new", device="cpu", config={}, environment={})
        assert store.run(new).uid
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with Store(db, readonly=True) as store:
        assert snapshot(store)[0][1:] == before[0] and snapshot(store)[1:] == before[1:]  # newest first: the new run
        p = store.run(1).provenance
        assert (p.engine, p.engine_version, p.workload_class) == ("torch", "2.4.1", "llm")
        assert (p.gpu_product, p.driver, p.gpu_clock_mhz, p.gpu_clock_max_mhz) == (
            "NVIDIA H100 80GB HBM3", "550.54.15", 1755.0, 1980.0)
        assert p.host == ("lab-box-7" if version >= 2 else None)  # version 1 kept no writer
        assert p.sizeup_version is None and p.workload_hash is None  # never recorded: left unknown
        assert store.run(2).provenance.workload_class is None  # a traced model: classified from its ledger later
        assert store.run(3).provenance.workload_class == "serving"


def test_postgres_store_is_created_once_by_writers_starting_together(pg_url):
    code = (f"import sys; sys.path.insert(0, {SRC!r}); from sizeup.store import open_store\n"
            f"s = open_store({pg_url!r}); r = s.start_run(kind='train', target='m', device='cpu', config={{}}, "
            "environment={}); s.finish_run(r, 'ok'); print(r)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [o[1][-1500:] for o in outs]
    with open_store(pg_url, readonly=True) as store:
        assert store.version == SCHEMA_VERSION and len(store.runs()) == 4
        rows = store._rows("SELECT version FROM schema_version")
        assert rows == [(SCHEMA_VERSION,)]


def test_postgres_refuses_a_foreign_database_and_a_newer_schema(pg_url):
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (name TEXT)")
    with pytest.raises(Exception, match="not a sizeup run database") as info:
        open_store(pg_url, readonly=True)
    assert "\n" not in str(info.value)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE runs")
    open_store(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(Exception, match=f"version {SCHEMA_VERSION + 1} is newer"):
        open_store(pg_url, readonly=True)


def test_an_unreachable_server_is_one_line(tmp_path):
    pytest.importorskip("psycopg")
    from tests.store.postgres_server import free_port

    url = f"postgresql://nobody:secret@127.0.0.1:{free_port()}/none"
    with pytest.raises(Exception, match="cannot reach the run database") as info:
        open_store(url, readonly=True)
    assert "\n" not in str(info.value) and "secret" not in str(info.value)
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-m", "sizeup", "runs", "list", "--db", url], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "cannot reach" in out.stderr
    assert "secret" not in out.stderr
