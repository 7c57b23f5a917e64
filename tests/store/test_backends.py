"""The run store behaves the same on SQLite and on PostgreSQL: round trip, refusals, provenance, calibrations,
export, and many writer processes at once (4 simulated hosts), each point kept once with all its samples."""

import csv
import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from sizeup.errors import ConfigError, MeasureError
from sizeup.store import MAX_ID, SCHEMA_VERSION, Provenance, open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")
SAMPLES = [0.0121, 0.0119, 0.0135, 0.0124, 0.0188, 0.0117, 0.0122, 0.0130, 0.0126, 0.0401]


def test_round_trip_with_provenance(db):
    origin = {"host": "node-a", "engine": "vllm", "engine_version": "0.10.1", "driver": "570.86", "gpu_product":
              "NVIDIA H100 80GB HBM3", "gpu_clock_mhz": 1980, "gpu_clock_max_mhz": 1980.0, "power_limit_w": 700.0,
              "sizeup_version": "0.1.0", "workload_hash": "0123456789abcdef", "device_type": "h100-sxm-80gb",
              "workload_class": "llm"}
    with open_store(db) as store:
        run = store.start_run(kind="inference", target="gpt2", device="cuda:0", config={"nan": float("nan")},
                              environment={"torch": "2.4"}, provenance=origin)
        first = store.add_point(run, batch=1, phase="decode", status="ok", samples_s=SAMPLES,
                                cpu_samples_s=[s / 2 for s in SAMPLES], throughput_per_s=80.0,
                                peak_memory_bytes=1 << 40, extra={"seq_len": 128, "text": "a\x00b"})
        second = store.add_point(run, batch=64, phase="decode", status="oom", error="CUDA out of memory")
        store.finish_run(run, "ok")
    with open_store(db, readonly=True) as store:
        assert store.version == SCHEMA_VERSION
        record = store.run(run)
        assert record.status == "ok" and math_nan(record.config["nan"]) and record.uid
        assert record.provenance == Provenance.from_dict(origin)
        assert [p.id for p in record.points] == [first, second]
        p = record.points[0]
        assert p.latency_p50_s == pytest.approx(np.percentile(SAMPLES, 50)) and p.peak_memory_bytes == 1 << 40
        assert p.extra == {"seq_len": 128, "text": "a\x00b"}
        assert store.samples(first) == SAMPLES and store.cpu_samples(first) == pytest.approx([s / 2 for s in SAMPLES])
        assert store.samples(second) == [] and record.points[1].error == "CUDA out of memory"
        assert json.loads(json.dumps(record.to_dict()))["provenance"]["host"] == "node-a"
        rows = list(csv.DictReader(io.StringIO(store.export([run], "csv"))))
        assert [int(r["point_id"]) for r in rows] == [first, second]
        with pytest.raises(MeasureError, match="opened read-only"):
            store.start_run(kind="train", target="m", device="cpu", config={}, environment={})


def math_nan(value):
    return value != value


@pytest.mark.parametrize("run_id", [0, -1, MAX_ID + 1, 10**30])
def test_ids_out_of_range_are_no_run(db, run_id):
    with open_store(db) as store:
        store.start_run(kind="train", target="m", device="cpu", config={}, environment={})
        with pytest.raises(MeasureError, match="no run") as info:
            store.run(run_id)
        assert "\n" not in str(info.value)
        with pytest.raises(ConfigError, match="expected an integer from 1"):
            store.add_point(run_id, batch=1, phase="step", status="ok")


def test_refusals_are_the_same_on_both(db):
    with open_store(db) as store:
        with pytest.raises(ConfigError, match="run kind 'bench'"):
            store.start_run(kind="bench", target="m", device="cpu", config={}, environment={})
        with pytest.raises(MeasureError, match="provenance key 'gpu'"):
            store.start_run(kind="train", target="m", device="cpu", config={}, environment={}, provenance={"gpu": 1})
        run = store.start_run(kind="train", target="m", device="cpu", config={}, environment={})
        with pytest.raises(ConfigError, match="sample time nan"):
            store.add_point(run, batch=1, phase="step", status="ok", samples_s=[0.1, float("nan")])
        with pytest.raises(MeasureError, match="no run 999"):
            store.add_point(999, batch=1, phase="step", status="ok")
        with pytest.raises(MeasureError, match="no run 77"):
            store.save_calibration("x", device="cpu", profile={}, source_runs=[77])
        assert store.run(run).points == ()


def test_calibrations_replace_and_keep_their_key(db):
    with open_store(db) as store:
        run = store.start_run(kind="inference", target="m", device="cpu", config={}, environment={})
        store.save_calibration("h100/vllm@0.10/serving", device="cuda", profile={"values": {"memory": 0.8}},
                               source_runs=[run], key={"device_type": "h100-sxm-80gb", "engine": "vllm",
                                                       "engine_version": "0.10", "workload_class": "serving"})
        store.save_calibration("a", device="cpu", profile={}, source_runs=[])
        store.save_calibration("a", device="cpu", profile={"x": 2}, source_runs=[run])
        assert store.calibrations() == ["a", "h100/vllm@0.10/serving"]
        saved = store.calibration("h100/vllm@0.10/serving")
        assert saved["key"] == {"device_type": "h100-sxm-80gb", "engine": "vllm", "engine_version": "0.10",
                                "workload_class": "serving"}
        assert store.calibration("a")["profile"] == {"x": 2} and store.calibration("a")["source_runs"] == [run]
        with pytest.raises(MeasureError, match="saved: a, h100"):
            store.calibration("nope")


WRITER = """
import os, sys, time
sys.path.insert(0, {src!r})
from sizeup.store import open_store
from sizeup.measure.provenance import host_name
store = open_store({db!r})
run = store.start_run(kind="microbench", target="matmul", device="cpu", config={{"writer": {n}}}, environment={{}},
                      provenance={{"host": host_name(), "workload_class": "traced"}})
print("run", run, flush=True)
for k in range({points}):
    store.add_point(run, batch=k + 1, phase="forward", status="ok",
                    samples_s=[0.001 * (k + 1) + 1e-5 * i for i in range(20)])
store.finish_run(run, "ok")
print("done", flush=True)
"""


def test_four_hosts_write_at_once_and_every_point_is_kept(db):
    """4 processes with different simulated hosts (SIZEUP_HOST) write 60 points each into one store at once."""
    points = 60
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(src=SRC, db=db, n=n, points=points)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "SIZEUP_HOST": f"node-{n}"}) for n in range(4)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [o[1][-2000:] for o in outputs]
    with open_store(db, readonly=True) as store:
        runs = store.runs(kind="microbench")
        assert sorted(r.provenance.host for r in runs) == [f"node-{n}" for n in range(4)]
        for listed in runs:
            record = store.run(listed.id)
            assert record.status == "ok" and [p.batch for p in record.points] == list(range(1, points + 1))
            assert all(len(store.samples(p.id)) == p.repetitions == 20 for p in record.points)


CHILD = """
import sys, time
sys.path.insert(0, {src!r})
from sizeup.store import open_store
store = open_store({db!r})
run_id = store.start_run(kind="microbench", target="matmul", device="cpu", config={{}}, environment={{}})
print("run", run_id, flush=True)
n = 0
while True:
    store.add_point(run_id, batch=n + 1, phase="forward", status="ok",
                    samples_s=[0.001 * (n + 1) + 0.0001 * i for i in range(20)])
    n += 1
    print(n, flush=True)
"""


def test_sigkill_of_a_writer_loses_at_most_its_point_in_flight(db):
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(src=SRC, db=db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        header = proc.stdout.readline().split()
        assert header and header[0] == "run", proc.stderr.read()
        run_id = int(header[1])
        reported = 0
        while reported < 25:
            line = proc.stdout.readline()
            assert line, f"child exited early: {proc.stderr.read()}"
            reported = int(line)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        reported = max([reported, *(int(x) for x in proc.stdout.read().split())])  # lines still in the pipe
    finally:
        watchdog.cancel()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    with open_store(db, readonly=True) as store:
        run = store.run(run_id)
        assert run.status == "running" and run.writer_gone and run.effective_status == "interrupted"
        # every point the child committed and reported is there, whole; the kill may have come after the commit of
        # one more point and before its line: at most that one point was in flight
        assert reported <= len(run.points) <= reported + 1
        for n, point in enumerate(run.points, start=1):
            assert point.batch == n and point.repetitions == 20 == len(store.samples(point.id))
