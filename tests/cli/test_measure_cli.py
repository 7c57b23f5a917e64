import json

import pytest

pytest.importorskip("torch")

from sizeup.cli.main import main  # noqa: E402


def test_measure_calibrate_compare_round_trip(tmp_path, capsys):
    db = str(tmp_path / "runs.sqlite")
    base = ["--db", db]
    # one torch thread: each repetition's CPU time is kept, and calibrate fits (and judges noise) on it, so that a
    # busy test machine does not make the run too noisy to fit (measure.calibrate_runs.NOISY_REJECT)
    assert main(["measure", "sizeup.examples.zoo:mlp_conv_net", "--input", "1x3x32x32", "--batch", "1,2,4",
                 "--budget", "30s", "--profile", "--threads", "1", "--json", *base]) == 0
    run = json.loads(capsys.readouterr().out)
    assert [p["status"] for p in run["points"]] == ["ok", "ok", "ok"]
    assert all(p["latency_p50_s"] <= p["latency_p95_s"] <= p["latency_p99_s"] for p in run["points"])
    assert main(["calibrate", "--threads", "1", "--json", *base]) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["fitted"] and fit["runs"] == [run["run_id"]]
    assert main(["compare", str(run["run_id"]), "--json", *base]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert len(comparison["points"]) == 3 and comparison["calibrated"]
    assert comparison["largest_gap_kind"] in comparison["by_kind"]
    assert main(["runs", "list", *base]) == 0
    assert "mlp_conv_net" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["measure", "sizeup.examples.zoo:c2f", "--input", "1x64x8x8", "--device", "gpu0"], "unknown device 'gpu0'"),
    (["measure", "sizeup.examples.zoo:c2f", "--input", "1x64x8x8", "--batch", "0,2"],
     "every value must be a positive integer"),
    (["compare", "999"], "no run 999"),
])
def test_bad_measure_input(tmp_path, capsys, argv, message):
    assert main([*argv, "--db", str(tmp_path / "runs.sqlite")]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_preset_llm_prefill_and_decode(tmp_path, capsys):
    db = ["--db", str(tmp_path / "runs.sqlite")]
    assert main(["measure", "qwen2.5-0.5b", "--batch", "1", "--prompt", "16", "--context", "32", "--budget", "60s",
                 "--json", *db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["status"] for p in data["points"]] == ["ok", "ok"]  # prefill, decode
    assert main(["compare", str(data["run_id"]), "--json", *db]) == 0
    phases = [p["phase"] for p in json.loads(capsys.readouterr().out)["points"]]
    assert phases == ["prefill", "decode"]
    assert main(["measure", "mixtral-8x7b", *db]) == 1
    assert "is not supported" in capsys.readouterr().err


def test_roofline_with_a_calibration_profile(tmp_path, capsys):
    db = ["--db", str(tmp_path / "runs.sqlite")]
    assert main(["calibrate", "--quick", "--json", *db]) == 0
    capsys.readouterr()
    assert main(["roofline", "sizeup.examples.zoo:c2f", "--input", "1x64x16x16", "--device", "local",
                 "--calibration", "local", "--json", *db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["devices"][0]["device"] == "calibrated-local" and data["devices"][0]["time_s"]["typical"] > 0
