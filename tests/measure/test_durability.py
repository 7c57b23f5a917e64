"""Durability: the real `sizeup measure` command, killed with SIGKILL after its second point, leaves a store
that passes `PRAGMA integrity_check`, holds both points with their samples, and lists the run as interrupted."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from sizeup.errors import MeasureError  # noqa: E402
from sizeup.measure.calibrate import local_device, profile_to_dict  # noqa: E402
from sizeup.store import Store  # noqa: E402
from tests.measure.slow_model import BENCH, slow_model  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")
MODEL = slow_model(0.02)


def sizeup(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sizeup", *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": SRC})


def test_sweep_killed_after_its_second_point(tmp_path):
    model = tmp_path / "slow.py"
    model.write_text(MODEL)
    db = tmp_path / "runs.sqlite"
    with Store(db) as store:  # a saved profile: the command goes straight to the sweep (no micro-benchmarks)
        store.save_calibration("local", device="cpu", source_runs=[],
                               profile=profile_to_dict(local_device(BENCH), None, None, BENCH, []))
    batches = ",".join(str(b) for b in range(1, 201))
    proc = subprocess.Popen([sys.executable, "-m", "sizeup", "measure", f"{model}:build", "--input", "1x8",
                             "--batch", batches, "--budget", "600s", "--db", str(db), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": SRC})
    points = 0
    try:
        deadline = time.monotonic() + 180
        while points < 2:
            assert proc.poll() is None, f"the sweep ended early: {proc.stderr.read().decode()[-2000:]}"
            assert time.monotonic() < deadline, "no second point within 180 s"
            time.sleep(0.05)
            try:
                with Store.open_read(db) as store:
                    runs = store.runs(kind="inference")
                    points = runs[0].point_count if runs else 0
            except MeasureError as e:  # a read racing the writer may find it busy; any other refusal fails
                assert "locked" in str(e), str(e)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with Store.open_read(db) as store:
        run = store.runs(kind="inference")[0]
        record = store.run(run.id)
        assert record.status == "running" and record.writer_gone and record.effective_status == "interrupted"
        assert len(record.points) >= 2 and [p.batch for p in record.points[:2]] == [1, 2]
        for point in record.points[:2]:
            assert point.status == "ok" and point.repetitions == len(store.samples(point.id)) >= 5
            assert point.latency_p50_s >= 0.02

    listed = sizeup("runs", "list", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.lstrip().startswith(str(run.id)))
    assert "interrupted" in row and "slow.py:build" in row
    shown = sizeup("runs", "show", str(run.id), "--db", str(db), "--json")
    data = json.loads(shown.stdout)
    assert data["status"] == "interrupted" and data["stored_status"] == "running" and len(data["points"]) >= 2
