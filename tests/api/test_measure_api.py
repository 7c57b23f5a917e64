"""`measure`, `calibrate`, `compare` and `runs` through the API on a real small model on the CPU, and the
commands' JSON equal to the API's on the same store."""

import pytest

pytest.importorskip("torch")

from sizeup import api  # noqa: E402
from tests.api.conftest import as_json  # noqa: E402


def test_measure_calibrate_compare_and_runs(tmp_path, cli_json):
    db = str(tmp_path / "runs.sqlite")
    measured = api.measure("sizeup.examples.zoo:mlp_conv_net", inputs=("1x3x32x32",), batches=(1, 2, 4), budget=30.0,
                           db=db)
    assert measured.ok and [p.result.status for p in measured.sweep.points] == ["ok", "ok", "ok"]
    run_id = measured.sweep.run_id
    assert set(measured.to_dict()) >= {"run_id", "status", "points", "calibration", "calibrated"}
    # two measurements never time alike: the command's JSON is checked for the API result's shape
    printed = cli_json(["measure", "sizeup.examples.zoo:mlp_conv_net", "--input", "1x3x32x32", "--batch", "1,2",
                        "--budget", "20s", "--json", "--db", db])
    expected = as_json(measured.to_dict())
    assert set(printed) == set(expected) and set(printed["points"][0]) == set(expected["points"][0])
    assert printed["run_id"] == run_id + 1

    fitted = api.calibrate(db=db).to_dict()  # a run measured while the machine is busy is left out, with the reason
    assert set(fitted["runs"]) | {i["run_id"] for i in fitted["ignored"]} == {run_id, run_id + 1}
    assert all(i["reason"] for i in fitted["ignored"]) and (fitted["fitted"] is not None) == bool(fitted["runs"])
    assert cli_json(["calibrate", "--json", "--db", db]) == as_json(api.calibrate(db=db).to_dict())

    comparison = api.compare_run(run_id, db=db)
    assert len(comparison.points) == 3 and comparison.calibrated == bool(fitted["runs"])
    assert cli_json(["compare", str(run_id), "--json", "--db", db]) == as_json(comparison.to_dict())

    assert cli_json(["runs", "list", "--json", "--db", db]) == as_json(api.runs(db=db).to_dict())
    assert cli_json(["runs", "show", str(run_id), "--json", "--db", db]) == as_json(api.run(run_id, db=db).to_dict())
    assert [r.id for r in api.runs(db=db).runs] == [run_id + 1, run_id]


def test_runs_of_a_store_not_yet_made(tmp_path):
    listed = api.runs(db=tmp_path / "none.sqlite")
    assert not listed.exists and listed.runs == () and not (tmp_path / "none.sqlite").exists()
