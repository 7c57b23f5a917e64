"""The run store refuses what is not a sizeup store (in one line, leaving the file as it was), never creates
a file for a reading command, migrates an older schema, and lets two writers land at once."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sizeup.cli.main import main
from sizeup.errors import MeasureError
from sizeup.store.records import RunRecord
from sizeup.store import SCHEMA_VERSION, Store
from sizeup.store.migrations import v0001_initial
from sizeup.store.writer import current_writer, writer_alive

SRC = Path(__file__).resolve().parents[2] / "src"


def side_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name and p.name.startswith(path.name))


def filled(path: Path, points: int = 3) -> int:
    with Store(path) as store:
        run_id = store.start_run(kind="inference", target="m", device="cpu", config={"a": 1}, environment={})
        for n in range(points):
            store.add_point(run_id, batch=n + 1, phase="forward", status="ok", samples_s=[0.001 * (n + 1)] * 20)
        store.finish_run(run_id, "ok")
    return run_id


def garbage(path: Path) -> None:
    path.write_bytes(b"\x00\xffnot sqlite at all" * 500)


def _sql(path: Path, statement: str, *params) -> None:
    conn = sqlite3.connect(path)
    conn.execute(statement, params)
    conn.commit()
    conn.close()


def foreign(path: Path) -> None:
    _sql(path, "CREATE TABLE people (name TEXT)")
    _sql(path, "INSERT INTO people VALUES ('ada')")


def missing_column(path: Path) -> None:
    filled(path)
    _sql(path, "ALTER TABLE points DROP COLUMN latency_p99_s")


def corrupt(path: Path) -> None:
    filled(path, points=300)
    data = bytearray(path.read_bytes())
    middle = (len(data) // 4096 // 2) * 4096
    data[middle:middle + 4096] = b"\xab" * 4096
    path.write_bytes(bytes(data))


def bad_json(path: Path) -> None:
    filled(path)
    _sql(path, "UPDATE runs SET config = '{\"a\": 1,' WHERE id = 1")


def bad_point_json(path: Path) -> None:
    filled(path)
    _sql(path, "UPDATE points SET extra = 'nope' WHERE id = 2")


def newer(path: Path) -> None:
    filled(path)
    _sql(path, "UPDATE schema_version SET version = ?", SCHEMA_VERSION + 1)


BAD = [(garbage, "not an SQLite file"), (foreign, "no schema_version table; has people"),
       (missing_column, "table points has no column latency_p99_s"), (corrupt, "fails its integrity check"),
       (bad_json, "runs row 1 column config is not valid JSON"), (bad_point_json, "points row 2 column extra"),
       (newer, f"schema version {SCHEMA_VERSION + 1} is newer")]


@pytest.mark.parametrize("make, message", BAD, ids=[m.__name__ for m, _ in BAD])
@pytest.mark.parametrize("readonly", [False, True])
def test_bad_file_is_refused_and_left_byte_identical(tmp_path, make, message, readonly):
    db = tmp_path / "runs.sqlite"
    make(db)
    for name in side_files(db):  # the helpers' own connections are closed: checkpointed files only
        (tmp_path / name).unlink()
    before = db.read_bytes()
    with pytest.raises(MeasureError, match=message) as info:
        Store(db, readonly=readonly)
    assert "\n" not in str(info.value) and str(db) in str(info.value)
    assert db.read_bytes() == before and side_files(db) == []


@pytest.mark.parametrize("make, message", BAD[:5], ids=[m.__name__ for m, _ in BAD[:5]])
@pytest.mark.parametrize("argv", [["runs", "list"], ["runs", "show", "1"], ["measure", "x.py:f", "--input", "1x4"],
                                  ["compare", "1"], ["watch", "--pid", str(os.getpid()), "--duration", "1s"]],
                         ids=["list", "show", "measure", "compare", "watch"])
def test_cli_refuses_a_bad_db_in_one_line(tmp_path, capsys, make, message, argv):
    db = tmp_path / "runs.sqlite"
    make(db)
    for name in side_files(db):
        (tmp_path / name).unlink()
    before = db.read_bytes()
    assert main([*argv, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sizeup: error: ") and err.count("\n") == 1 and message in err
    assert db.read_bytes() == before and side_files(db) == []


def test_bad_json_found_only_when_read_is_still_one_line(tmp_path, capsys):
    """A sample that is not a number (SQLite columns are not typed) is reported when read, in one line."""
    db = tmp_path / "runs.sqlite"
    run_id = filled(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE points SET batch = 'eight' WHERE id = 1")
    conn.commit()
    conn.close()
    assert main(["runs", "show", str(run_id), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "point 1 column batch holds 'eight', expected an integer" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["runs", "show", "1"], ["runs", "export", "1", "--format", "csv"],
                                  ["compare", "1"],
                                  ["estimate", "llama-3.1-8b", "--device", "h100-sxm", "--calibration", "mine"]],
                         ids=["show", "export", "compare", "estimate"])
def test_reading_a_mistyped_db_says_it_does_not_exist(tmp_path, capsys, argv):
    db = tmp_path / "typo" / "runz.sqlite"
    assert main([*argv, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and str(db) in err and err.count("\n") == 1
    assert not db.exists() and not db.parent.exists()


def test_runs_list_of_a_missing_db_creates_nothing(tmp_path, capsys):
    db = tmp_path / "none.sqlite"
    assert main(["runs", "list", "--db", str(db)]) == 0
    assert "does not exist" in capsys.readouterr().out and not db.exists()


def test_reading_commands_without_db_create_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path / "data"))
    assert main(["runs", "list"]) == 0
    assert main(["compare", "3"]) == 1
    assert main(["estimate", "llama-3.1-8b", "--device", "h100-sxm", "--calibration", "mine"]) == 1
    assert main(["estimate", "llama-3.1-8b", "--device", "local"]) == 1
    err = capsys.readouterr().err
    assert "sizeup calibrate" in err and not (tmp_path / "data").exists()


def test_dev_null_and_fifo_are_refused_without_a_journal(tmp_path, capsys):
    journal = Path("/dev/null-journal")
    existed = journal.exists()
    assert main(["runs", "list", "--db", "/dev/null"]) == 1
    assert "not a regular file" in capsys.readouterr().err
    assert main(["measure", "x.py:f", "--input", "1x4", "--db", "/dev/null"]) == 1
    assert "not a regular file" in capsys.readouterr().err
    assert journal.exists() == existed
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for readonly in (False, True):
        with pytest.raises(MeasureError, match="not a regular file"):
            Store(fifo, readonly=readonly)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
    with pytest.raises(MeasureError, match="is a folder"):
        Store(tmp_path, readonly=True)


def test_readonly_store_reads_and_refuses_writes(tmp_path):
    db = tmp_path / "runs.sqlite"
    run_id = filled(db)
    before = db.read_bytes()
    with Store.open_read(db) as store:
        assert store.readonly and store.run(run_id).point_count == 3 and len(store.samples(1)) == 20
        with pytest.raises(MeasureError, match="opened read-only"):
            store.start_run(kind="inference", target="m", device="cpu", config={}, environment={})
        with pytest.raises(MeasureError, match="opened read-only"):
            store.save_calibration("x", device="cpu", profile={}, source_runs=[])
    assert db.read_bytes() == before and side_files(db) == []
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(MeasureError, match="empty file"):
        Store(empty, readonly=True)
    with Store(empty) as store:  # an empty file may become a store when written to
        assert store.runs() == []


def v1_store(path: Path) -> None:
    conn = sqlite3.connect(path)
    for statement in v0001_initial.SQLITE[:-1]:  # the version-1 tables, as sizeup wrote them then
        conn.execute(statement)
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.execute("INSERT INTO runs (created, kind, target, device, status, config, environment) "
                 "VALUES ('2026-12-01T00:00:00+00:00', 'inference', 'old', 'cpu', 'running', '{}', '{}')")
    conn.commit()
    conn.close()


def test_version_1_is_read_as_is_and_migrated_when_written(tmp_path):
    db = tmp_path / "runs.sqlite"
    v1_store(db)
    before = db.read_bytes()
    with Store(db, readonly=True) as store:
        assert store.version == 1
        old = store.runs()[0]
        assert old.target == "old" and old.effective_status == "running"  # no writer stored: cannot tell
    assert db.read_bytes() == before
    with Store(db) as store:
        assert store.version == SCHEMA_VERSION
        new = store.start_run(kind="train", target="new", device="cpu", config={}, environment={})
        assert [r.target for r in store.runs()] == ["new", "old"] and store.run(new).effective_status == "running"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_writer_identity():
    me = current_writer()
    assert writer_alive(me) is True
    assert writer_alive({**me, "host": me["host"] + "-elsewhere"}) is None
    assert writer_alive(None) is None and writer_alive({"host": me["host"], "pid": "7"}) is None
    if "start_ticks" in me:  # Linux: a reused pid with another start time is not the writer
        assert writer_alive({**me, "start_ticks": me["start_ticks"] + 1}) is False
        assert writer_alive({**me, "boot_id": "another-boot"}) is False
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert writer_alive({"host": me["host"], "pid": int(proc.stdout)}) in (False, True)  # pid may be reused


def test_a_run_of_a_dead_writer_reads_as_interrupted(tmp_path):
    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        run_id = store.start_run(kind="inference", target="m", device="cpu", config={}, environment={})
        assert store.run(run_id).effective_status == "running" and not store.run(run_id).writer_gone
        dead = {**current_writer(), "pid": 2**22 + 1, "start_ticks": 1}
        store.conn.execute("UPDATE runs SET writer = ? WHERE id = ?", (json.dumps(dead), run_id))
        record = store.run(run_id)
    assert isinstance(record, RunRecord) and record.status == "running" and record.writer_gone
    assert record.effective_status == "interrupted" and record.to_dict()["status"] == "interrupted"


WRITER = """
import sys
sys.path.insert(0, {src!r})
from sizeup.store import Store
with Store({db!r}) as store:
    run_id = store.start_run(kind="microbench", target=sys.argv[1], device="cpu", config={{}}, environment={{}})
    for n in range(40):
        store.add_point(run_id, batch=n + 1, phase="forward", status="ok", samples_s=[0.001] * 10)
    store.finish_run(run_id, "ok")
"""


def test_two_writers_at_once_on_a_new_file_both_land(tmp_path):
    db = tmp_path / "new" / "runs.sqlite"
    code = WRITER.format(src=str(SRC), db=str(db))
    procs = [subprocess.Popen([sys.executable, "-c", code, name], stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with Store(db, readonly=True) as store:
        runs = store.runs()
        assert sorted(r.target for r in runs) == ["a", "b"]
        assert all(r.status == "ok" and r.point_count == 40 for r in runs)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT COUNT(*) FROM samples").fetchone() == (800,)
    conn.close()
