"""A run that loses its database keeps its points: the real `sizeup measure` writing to a PostgreSQL server that is
stopped mid-sweep finishes into the local spool, and `sizeup runs sync` uploads every point exactly once (again and
again: sync is idempotent). Also: a server away from the start, and a point whose commit reached the server before
the connection broke (same uid: not doubled)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sizeup.measure.calibrate import local_device, profile_to_dict
from sizeup.store import open_store
from sizeup.store.spool import SpoolingStore, sync
from sizeup.store.sqlite import SQLiteStore
from tests.measure.slow_model import BENCH, slow_model

SRC = str(Path(__file__).resolve().parents[2] / "src")
MODEL = slow_model(0.01)
BATCHES = 24


def sizeup(*argv, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "sizeup", *argv], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_database_stopped_mid_sweep_loses_nothing_after_sync(cluster, tmp_path):
    pytest.importorskip("torch")
    model = tmp_path / "slow.py"
    model.write_text(MODEL)
    url = cluster.url
    with open_store(url) as store:  # a saved profile: measure goes straight to the sweep
        store.save_calibration("local", device="cpu", source_runs=[],
                               profile=profile_to_dict(local_device(BENCH), None, None, BENCH, []))
    env = {**os.environ, "PYTHONPATH": SRC, "SIZEUP_SPOOL": str(tmp_path / "spool.sqlite")}
    batches = ",".join(str(b) for b in range(1, BATCHES + 1))
    proc = subprocess.Popen([sys.executable, "-m", "sizeup", "measure", f"{model}:build", "--input", "1x8", "--batch",
                             batches, "--budget", "600s", "--db", url, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 240
        points = 0
        while points < 3:
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "no third point on the server within 240 s"
            time.sleep(0.2)
            with open_store(url, readonly=True) as store:
                runs = store.runs(kind="inference")
                points = runs[0].point_count if runs else 0
        cluster.stop("fast")  # the database goes away mid-sweep
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    assert "writing to the local spool" in err and "sizeup runs sync" in err
    result = json.loads(out)
    assert [p["status"] for p in result["points"]] == ["ok"] * BATCHES  # the sweep never noticed
    cluster.start()
    synced = sizeup("runs", "sync", "--db", url, "--json", env=env)
    assert synced.returncode == 0, synced.stderr
    report = json.loads(synced.stdout)
    assert report["runs"] == 1 and report["created"] == 0 and report["kept"] == []
    with open_store(url, readonly=True) as store:
        [listed] = store.runs(kind="inference")
        run = store.run(listed.id)
        assert run.status == "ok" and [p.batch for p in run.points] == list(range(1, BATCHES + 1))
        assert all(len(store.samples(p.id)) == p.repetitions >= 5 for p in run.points)
        assert report["points"] + points <= BATCHES + 1  # uploaded = those the server missed (+1: the one in flight)
    again = sizeup("runs", "sync", "--db", url, "--json", env=env)
    assert json.loads(again.stdout)["points"] == 0  # nothing twice
    with SQLiteStore(tmp_path / "spool.sqlite", readonly=True) as spool:
        assert spool.runs() == []  # a finished run leaves the spool once uploaded


def test_a_server_away_from_the_start_and_a_point_that_reached_it_before_the_break(cluster, tmp_path):
    spool_file = tmp_path / "spool.sqlite"
    url = cluster.url
    with open_store(url) as store:
        store.start_run(kind="train", target="warm-up", device="cpu", config={}, environment={})  # schema created
    notices = []
    # the server stops between this writer's runs: its next run starts in the spool
    cluster.stop("fast")
    writer = SpoolingStore(lambda: __import__("sizeup.store.postgres", fromlist=["x"]).PostgresStore(url),
                           spool=spool_file, on_spool=notices.append)
    run = writer.start_run(kind="inference", target="m", device="cpu", config={}, environment={},
                           provenance={"host": "node-3"})
    assert run < 0 and writer.spooled == [run] and len(notices) == 1 and "cannot reach" in notices[0]
    for b in (1, 2, 3):
        writer.add_point(run, batch=b, phase="forward", status="ok", samples_s=[0.1 * b, 0.11 * b])
    writer.finish_run(run, "ok")
    writer.close()
    cluster.start()
    with SQLiteStore(spool_file) as spool, open_store(url, readonly=False).server as server:
        # a point already on the server with the uid of the spooled run's first point (its commit arrived just
        # before the connection broke): sync must not add it twice
        record = spool.run(spool.runs()[0].id)
        server_run = server.start_run(kind="inference", target="m", device="cpu", config={}, environment={},
                                      uid=record.uid)
        server.add_point(server_run, batch=1, phase="forward", status="ok", samples_s=[0.1, 0.11],
                         uid=spool.point_uid(record.points[0].id))
        report = sync(spool, server)
        assert (report.runs, report.created, report.points, report.duplicates) == (1, 0, 2, 1)
        synced = server.run(server_run)
        assert synced.status == "ok" and [p.batch for p in synced.points] == [1, 2, 3]
        assert spool.runs() == []
