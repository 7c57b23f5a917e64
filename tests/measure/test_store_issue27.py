"""The run-store defects of issue 27: a read-only store is refused before a watch starts (and a store that
stops taking writes mid-watch costs the run, not the verdict); a huge run id is "no such run" in one line; a
`--plot` that cannot be written is refused before the watch, not after it."""

import os
import sys
import time

import pytest

from sizeup.cli.main import main
from sizeup.errors import MeasureError
from sizeup.store import Store

pytest.importorskip("psutil")


def one_line(capsys):
    err = capsys.readouterr().err
    assert err.startswith("sizeup: error: ") and err.count("\n") == 1, err
    return err


def test_a_read_only_store_is_refused_before_the_watch(tmp_path, capsys, monkeypatch):
    db = tmp_path / "runs.sqlite"
    Store(db).close()
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if str(path) == str(db) and mode & os.W_OK
                        else real(path, mode, **kw))  # as for a user without write permission (tests run as root)
    start = time.monotonic()
    assert main(["watch", "--db", str(db), "--interval", "1s", "--duration", "30s", "--", sys.executable, "-c",
                 "import time; time.sleep(30)"]) == 1
    assert time.monotonic() - start < 10  # refused up front, not after 30 s of watching
    assert "read-only for this user" in one_line(capsys)


def test_a_store_that_stops_taking_writes_keeps_the_verdict(tmp_path, capsys, monkeypatch):
    from sizeup.store.sqlite import SQLiteStore

    db = tmp_path / "runs.sqlite"
    calls = {"n": 0}
    real_add = SQLiteStore.add_point

    def add_point(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 2:
            raise MeasureError(f"{db}: the run database became read-only (attempt to write a readonly database)")
        return real_add(self, *args, **kwargs)

    monkeypatch.setattr(SQLiteStore, "add_point", add_point)
    assert main(["watch", "--db", str(db), "--interval", "0.2s", "--duration", "2s", "--", sys.executable, "-c",
                 "import time; time.sleep(1.5)"]) == 1
    captured = capsys.readouterr()
    assert "verdict:" in captured.out  # the watch ran to its end and said what it saw
    assert "its run was not fully saved" in captured.err and captured.err.count("\n") == 1


@pytest.mark.parametrize("run_id", ["99999999999999999999999", str(2**63), "0", "-4"])
def test_a_run_id_out_of_range_is_one_line(tmp_path, capsys, run_id):
    db = tmp_path / "runs.sqlite"
    Store(db).close()
    for argv in (["runs", "show", run_id], ["compare", run_id], ["runs", "export", run_id, "--json"]):
        assert main([*argv, "--db", str(db)]) == 1
        assert "bug" not in one_line(capsys)
    with Store(db, readonly=True) as store, pytest.raises(MeasureError, match="no run"):
        store.run(int(run_id))


@pytest.mark.parametrize("plot, message", [("/proc/nope/x.png", "does not exist"), ("{tmp}", "is a folder"),
                                           ("{tmp}/x.txt", "expected an image file")])
def test_an_unwritable_plot_is_refused_before_the_watch(tmp_path, capsys, plot, message):
    start = time.monotonic()
    assert main(["watch", "--db", str(tmp_path / "runs.sqlite"), "--plot", plot.format(tmp=tmp_path), "--interval",
                 "1s", "--duration", "30s", "--", sys.executable, "-c", "import time; time.sleep(30)"]) == 1
    assert time.monotonic() - start < 10
    assert message in one_line(capsys)
    assert not (tmp_path / "runs.sqlite").exists()  # nothing was recorded
