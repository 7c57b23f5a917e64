"""`sizeup train FILE.py:FACTORY --input … --samples N --epochs E` (a traced step priced on a GPU, times the
job, priced on an offer) and `--cpu NAME --workers N` with the loader's rate (the loader decides when slower)."""

import pytest

pytest.importorskip("torch")

from sizeup.cli.main import main  # noqa: E402

MODEL = "sizeup.examples.zoo:tiny_cnn"


def test_the_job_is_steps_times_the_priced_step(cli_json):
    out = cli_json(["train", MODEL, "--input", "64x3x32x32", "--device", "a100-80g", "--samples", "50000", "--epochs",
                 "20", "--json"])
    job, step = out["job"], out["gpu_step_s"]
    assert job["steps"] == pytest.approx(50000 / 64 * 20)
    assert job["time_s"]["typical"] == pytest.approx(job["steps"] * step["typical"])
    assert job["time_s"]["low"] == pytest.approx(job["steps"] * step["low"])
    assert job["cost_usd"]["typical"] == pytest.approx(job["time_s"]["typical"] / 3600 * job["hourly_usd"])
    assert out["priced_on"].endswith("on-demand") and out["loader"] is None


def test_a_slow_loader_decides(cli_json):
    # one worker gives 200 samples/s; 8 workers on a 96-core EPYC 9654: 1,600/s, far below the A100's rate
    out = cli_json(["train", MODEL, "--input", "64x3x32x32", "--device", "a100-80g", "--samples", "50000", "--epochs",
                 "20", "--cpu", "epyc-9654", "--workers", "8", "--loader-rate", "200", "--json"])
    loader = out["loader"]
    assert loader["input_bound"] and loader["cores"] == 96
    assert loader["loader_samples_per_s"] == pytest.approx(8 * 200 * loader_scale(out))
    per_step = 64 / loader["loader_samples_per_s"]
    assert out["job"]["time_s"]["typical"] == pytest.approx(out["job"]["steps"] * per_step)
    assert any("the loader, not the GPU, decides" in n for n in out["notes"])


def loader_scale(out):
    """The clock scale applied (1 when the measuring CPU is not in the catalog, as on most machines)."""
    notes = " ".join(out["loader"]["assumptions"])
    if "scaled x" in notes:
        return float(notes.split("scaled x")[1].split()[0])
    return 1.0


def test_enough_workers_keep_up(cli_json):
    out = cli_json(["train", MODEL, "--input", "8x3x32x32", "--device", "jetson-orin-nano-8gb", "--cpu", "epyc-9654",
                 "--workers", "32", "--loader-rate", "5000", "--json"])
    assert not out["loader"]["input_bound"] and "job" not in out


def test_the_loader_from_a_measured_run(cli_json, tmp_path, monkeypatch):
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path))
    run = cli_json(["measure", "--dataloader", "tests.measure.loaders:cpu_heavy", "--workers", "0,1", "--batches", "4",
                 "--json"])
    out = cli_json(["train", MODEL, "--input", "64x3x32x32", "--device", "a100-80g", "--cpu", "epyc-9654", "--workers",
                 "4", "--loader-run", str(run["run_id"]), "--json"])
    assert out["loader"]["input_bound"] and f"run {run['run_id']}" in " ".join(out["loader"]["assumptions"])


@pytest.mark.parametrize("argv, match", [
    (["--device", "a100-80g", "--workers", "4", "--loader-rate", "10"], "give --cpu NAME"),
    (["--device", "a100-80g", "--cpu", "epyc-9654", "--workers", "4"], "give the loader's rate"),
    (["--device", "a100-80g", "--cpu", "a100-80g", "--workers", "4", "--loader-rate", "9"], "is not a CPU"),
    (["--device", "a100-80g", "--samples", "100"], "give --epochs"),
    (["--samples", "100", "--epochs", "1"], "give --device"),
])
def test_refusals(argv, match, capsys):
    assert main(["train", MODEL, "--input", "8x3x32x32", *argv]) == 1
    assert match in capsys.readouterr().err


def test_a_preset_with_samples_is_refused(capsys):
    assert main(["train", "llama-3.2-1b", "--device", "a100-80g", "--samples", "10", "--epochs", "1"]) == 1
    assert "for a torch model" in capsys.readouterr().err
    assert main(["train", "--device", "a100-80g"]) == 1
    assert "needs MODEL" in capsys.readouterr().err
