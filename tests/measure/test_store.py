import argparse
import csv
import io
import json
import os
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from sizeup.errors import ConfigError, MeasureError, SizeupError
from sizeup.store import SCHEMA_VERSION, Store, default_path

SRC = Path(__file__).resolve().parents[2] / "src"
SAMPLES = [0.0121, 0.0119, 0.0135, 0.0124, 0.0188, 0.0117, 0.0122, 0.0130, 0.0126, 0.0401]


@pytest.fixture
def db(tmp_path):
    return tmp_path / "runs.sqlite"


def fill(store):
    run_id = store.start_run(kind="inference", target="gpt2", device="cpu", config={"batches": [1, 2]},
                             environment={"torch": "2.4"})
    first = store.add_point(run_id, batch=1, phase="decode", status="ok", samples_s=SAMPLES,
                            throughput_per_s=80.0, peak_memory_bytes=1 << 20, extra={"seq_len": 128})
    second = store.add_point(run_id, batch=64, phase="decode", status="oom", error="CUDA out of memory")
    return run_id, first, second


def test_round_trip_with_numpy_percentiles(db):
    with Store(db) as store:
        run_id, first, second = fill(store)
        store.finish_run(run_id, "ok")
    with Store(db) as store:
        run = store.run(run_id)
        assert (run.kind, run.target, run.device, run.status) == ("inference", "gpt2", "cpu", "ok")
        assert run.config == {"batches": [1, 2]} and run.environment == {"torch": "2.4"}
        assert [p.id for p in run.points] == [first, second] and run.point_count == 2
        p = run.points[0]
        p50, p95, p99 = np.percentile(SAMPLES, [50, 95, 99])
        assert p.latency_p50_s == pytest.approx(p50) and p.latency_p95_s == pytest.approx(p95)
        assert p.latency_p99_s == pytest.approx(p99)
        assert p.latency_mean_s == pytest.approx(np.mean(SAMPLES))
        assert (p.latency_min_s, p.latency_max_s) == (min(SAMPLES), max(SAMPLES))
        assert p.repetitions == len(SAMPLES) and p.extra == {"seq_len": 128}
        assert p.throughput_per_s == 80.0 and p.peak_memory_bytes == 1 << 20
        assert store.samples(first) == SAMPLES
        oom = run.points[1]
        assert oom.status == "oom" and oom.repetitions == 0 and oom.latency_p50_s is None
        assert oom.error == "CUDA out of memory" and store.samples(second) == []
        assert json.loads(json.dumps(run.to_dict()))["points"][0]["batch"] == 1


def test_runs_newest_first_and_limit(db):
    with Store(db) as store:
        ids = [store.start_run(kind=k, target="m", device="cpu", config={}, environment={})
               for k in ("inference", "train", "microbench")]
        assert [r.id for r in store.runs()] == ids[::-1]
        assert [r.id for r in store.runs(limit=2)] == ids[:0:-1]
        assert [r.id for r in store.runs(kind="train")] == [ids[1]]
        assert all(r.status == "running" and r.points == () for r in store.runs())


def test_bad_values_raise(db):
    with Store(db) as store:
        with pytest.raises(ConfigError, match="run kind 'bench'"):
            store.start_run(kind="bench", target="m", device="cpu", config={}, environment={})
        run_id = store.start_run(kind="train", target="m", device="cpu", config={}, environment={})
        with pytest.raises(ConfigError, match="point status 'fine'"):
            store.add_point(run_id, batch=1, phase="step", status="fine")
        with pytest.raises(ConfigError, match="final run status 'done'"):
            store.finish_run(run_id, "done")
        with pytest.raises(ConfigError, match="sample time nan"):
            store.add_point(run_id, batch=1, phase="step", status="ok", samples_s=[0.1, float("nan")])
        with pytest.raises(ConfigError, match="batch 0"):
            store.add_point(run_id, batch=0, phase="step", status="ok")
        with pytest.raises(MeasureError, match=f"no run 999 in {db}"):
            store.run(999)
        with pytest.raises(MeasureError, match="no run 999"):
            store.add_point(999, batch=1, phase="step", status="ok")
        assert store.run(run_id).points == ()


def test_newer_schema_version_is_refused(db):
    Store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(MeasureError) as info:
        Store(db)
    message = str(info.value)
    assert f"version {SCHEMA_VERSION + 1}" in message and f"version {SCHEMA_VERSION};" in message
    assert "\n" not in message


def test_garbage_file_is_refused(db):
    db.write_bytes(b"this is not sqlite\n" * 200)
    with pytest.raises(MeasureError, match=f"{db}: not a sizeup run database"):
        Store(db)


def test_foreign_sqlite_file_is_refused(db):
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(MeasureError, match="not a sizeup run database"):
        Store(db)


def test_missing_file_without_create(db):
    with pytest.raises(MeasureError, match="no such run database"):
        Store(db, create=False)
    assert not db.exists()


def test_default_path_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path / "data"))
    assert default_path() == tmp_path / "data" / "runs.sqlite"
    monkeypatch.delenv("SIZEUP_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "sizeup" / "runs.sqlite"
    with Store() as store:
        assert store.path == tmp_path / "xdg" / "sizeup" / "runs.sqlite" and store.path.exists()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home" / ".local" / "share" / "sizeup" / "runs.sqlite"


def test_export_csv_and_json(db):
    with Store(db) as store:
        run_id, first, second = fill(store)
        other = store.start_run(kind="train", target="resnet", device="cpu", config={}, environment={})
        store.add_point(other, batch=8, grad_accumulation=4, phase="step", status="ok", samples_s=[0.5, 0.7])
        rows = list(csv.DictReader(io.StringIO(store.export([run_id, other], "csv"))))
        assert [int(r["point_id"]) for r in rows[:2]] == [first, second] and len(rows) == 3
        assert rows[0]["target"] == "gpt2" and rows[0]["kind"] == "inference" and int(rows[0]["batch"]) == 1
        assert float(rows[0]["latency_p50_s"]) == pytest.approx(np.percentile(SAMPLES, 50))
        assert json.loads(rows[0]["extra"]) == {"seq_len": 128} and rows[1]["latency_p50_s"] == ""
        assert rows[2]["run_id"] == str(other) and rows[2]["grad_accumulation"] == "4"
        data = json.loads(store.export([run_id], "json"))
        assert len(data) == 1 and data[0]["id"] == run_id
        assert data[0]["points"][0]["samples_s"] == SAMPLES and data[0]["points"][1]["status"] == "oom"
        with pytest.raises(ConfigError, match="export format 'xml'"):
            store.export([run_id], "xml")
        with pytest.raises(MeasureError, match="no run 42"):
            store.export([42], "csv")


def test_calibrations(db):
    with Store(db) as store:
        run_id, _, _ = fill(store)
        assert store.calibrations() == []
        with pytest.raises(MeasureError, match="none saved"):
            store.calibration("cpu-default")
        store.save_calibration("cpu-default", device="cpu", profile={"matmul_efficiency": 0.42},
                               source_runs=[run_id])
        store.save_calibration("a-first", device="cpu", profile={}, source_runs=[])
    with Store(db) as store:
        cal = store.calibration("cpu-default")
        assert cal["device"] == "cpu" and cal["profile"] == {"matmul_efficiency": 0.42}
        assert cal["source_runs"] == [run_id] and cal["created"]
        assert store.calibrations() == ["a-first", "cpu-default"]
        with pytest.raises(MeasureError, match="saved: a-first, cpu-default"):
            store.calibration("gpu")
        store.save_calibration("cpu-default", device="cpu", profile={"matmul_efficiency": 0.5}, source_runs=[])
        assert store.calibration("cpu-default")["profile"] == {"matmul_efficiency": 0.5}
        with pytest.raises(MeasureError, match="no run 77"):
            store.save_calibration("x", device="cpu", profile={}, source_runs=[77])


def test_closed_store_raises(db):
    store = Store(db)
    store.close()
    store.close()
    with pytest.raises(MeasureError, match="closed"):
        store.runs()


# -- the CLI command, through a parser of its own (main.py registers it separately) -------------------------

def cli(*argv):
    from sizeup.cli.commands import runs

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    runs.register(sub)
    args = parser.parse_args(list(argv))
    try:
        return args.func(args)
    except SizeupError as e:
        print(f"sizeup: error: {e}", file=sys.stderr)
        return 1


def test_cli_list_show_export(db, tmp_path, capsys):
    with Store(db) as store:
        run_id, first, _ = fill(store)
        store.finish_run(run_id, "ok")
    assert cli("runs", "list", "--db", str(db)) == 0
    out = capsys.readouterr().out
    assert "gpt2" in out and "inference" in out and "1 runs in" in out
    assert cli("runs", "list", "--db", str(db), "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in data["runs"]] == [run_id] and data["runs"][0]["point_count"] == 2
    assert cli("runs", "show", str(run_id), "--db", str(db)) == 0
    out = capsys.readouterr().out
    assert "oom" in out and "CUDA out of memory" in out and "decode" in out
    assert cli("runs", "show", str(run_id), "--db", str(db), "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["points"][0]["latency_p95_s"] == pytest.approx(np.percentile(SAMPLES, 95))
    assert cli("runs", "export", str(run_id), "--format", "csv", "--db", str(db)) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [int(r["point_id"]) for r in rows][0] == first and len(rows) == 2
    out_file = tmp_path / "runs.json"
    assert cli("runs", "export", str(run_id), "--format", "json", "--out", str(out_file), "--db", str(db)) == 0
    assert str(out_file) in capsys.readouterr().out
    assert json.loads(out_file.read_text())[0]["points"][0]["samples_s"] == SAMPLES


def test_cli_errors(db, tmp_path, capsys):
    assert cli("runs", "show", "3", "--db", str(db)) == 1
    assert "no such run database" in capsys.readouterr().err and not db.exists()
    assert cli("runs", "list", "--db", str(db), "--json") == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []
    Store(db).close()
    assert cli("runs", "show", "3", "--db", str(db)) == 1
    err = capsys.readouterr().err
    assert f"no run 3 in {db}" in err and err.count("\n") == 1
    assert cli("runs", "list", "--db", str(db)) == 0
    assert "no runs in" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli("runs", "export", "1", "--format", "xml", "--db", str(db))
