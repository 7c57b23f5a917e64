"""`runs export` as CSV: text from files and servers comes out inert — control characters escaped, formula starts
quoted as a spreadsheet text cell — and numbers stay numbers."""

import csv
import io

from sizeup.store import Store
from sizeup.store.export import _cell, export_runs


def test_cells_are_inert_and_numbers_stay_numbers():
    assert _cell("\x1b[2J\rsizeup: error: forged") == "\\x1b[2J\\rsizeup: error: forged"
    assert _cell("=HYPERLINK(\"http://evil\")") == "'=HYPERLINK(\"http://evil\")"
    assert _cell("+cmd|' /C calc'!A0") == "'+cmd|' /C calc'!A0"
    assert _cell("@SUM(1)") == "'@SUM(1)"
    assert _cell("-1.5") == "-1.5" and _cell(-1.5) == -1.5 and _cell(None) == ""
    assert _cell("rtl\u202eevil") == "rtl\\u202eevil"
    assert _cell("\t=1+1") == "\\t=1+1" and _cell("\r=1+1") == "\\r=1+1"  # shown escaped: no longer a formula start
    assert _cell("-1+1") == "'-1+1" and _cell("-2") == "-2"


def test_a_run_with_hostile_names_exports_inert_csv(tmp_path):
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = store.start_run(kind="load", target="=cmd|' /C calc'!A0\x1b[2J", device="cpu", config={},
                                 environment={})
        store.add_point(run_id, batch=1, phase="load", status="ok", samples_s=[0.1])
        store.finish_run(run_id, "ok")
        text = export_runs(store, [run_id], "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1][3] == "'=cmd|' /C calc'!A0\\x1b[2J"
    assert "\x1b" not in text


def test_runs_export_csv_from_the_command_line_is_inert(tmp_path, capsys):
    from sizeup.cli.main import main

    db = tmp_path / "runs.sqlite"
    with Store(db) as store:
        run_id = store.start_run(kind="load", target="@SUM(A1)\t", device="-2+3", config={}, environment={})
        store.add_point(run_id, batch=1, phase="load", status="ok", samples_s=[0.1])
        store.finish_run(run_id, "ok")
    assert main(["runs", "export", str(run_id), "--format", "csv", "--db", str(db)]) == 0
    row = list(csv.reader(io.StringIO(capsys.readouterr().out)))[1]
    assert row[3:5] == ["'@SUM(A1)\\t", "'-2+3"]
