"""Trial to full job: a short trial of a zoo CNN on a real DataLoader, stored, then scaled by `sizeup train
--from-run`; the prediction checked against running the job's epochs with a stopwatch."""

import json

import pytest

torch = pytest.importorskip("torch")

from sizeup.cli.main import main  # noqa: E402
from sizeup.measure.trial import TrialConfig, run_trial  # noqa: E402
from sizeup.errors import ConfigError  # noqa: E402

MODEL = "sizeup.examples.zoo:tiny_cnn"
LOADER = "tests.measure.loaders:images"


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_a_trial_records_steps_waits_memory_and_the_loss(one_thread):
    result = run_trial(TrialConfig(model=MODEL, loader=LOADER, steps=8, warmup=2))
    assert len(result.step_s) == 8 and len(result.warmup_s) == 2 and result.batch_size == 32
    assert result.samples_per_epoch == 1600 and result.loss == "cross-entropy"
    assert all(0 <= w < s for w, s in zip(result.data_wait_s, result.step_s))
    assert result.peak_memory_bytes > 0 and result.memory_kind == "rss"
    assert result.epoch_start == (False,) * 8  # 10 of 50 batches: no epoch boundary


def test_crossing_an_epoch_restarts_the_loader(one_thread):
    # 160 samples in batches of 32: 5 steps per epoch, so 12 steps cross two boundaries
    result = run_trial(TrialConfig(model=MODEL, loader="tests.measure.loaders:images_small", steps=12, warmup=1,
                                   workers=1))
    assert sum(result.epoch_start) == 2 and result.epoch_restart_s is not None and result.epoch_restart_s > 0


def test_bad_trials():
    with pytest.raises(ConfigError, match="--steps"):
        TrialConfig(model=MODEL, loader=LOADER, steps=2)
    with pytest.raises(ConfigError, match="num_workers"):
        run_trial(TrialConfig(model=MODEL, loader="tests.measure.loaders:plain_iterable", steps=5, workers=2))


def test_from_run_scales_and_prices(cli_json, tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path))
    trial = cli_json(["measure", MODEL, "--train", "--dataloader", LOADER, "--steps", "20", "--json"])
    job = cli_json(["train", "--from-run", str(trial["run_id"]), "--epochs", "3", "--price-per-hour", "2", "--json"])
    j = job["job"]
    assert j["samples"] == 1600 and j["steps"] == pytest.approx(150)  # the loader's dataset size, 50 per epoch
    assert j["time_s"]["typical"] == pytest.approx(150 * trial["step_mean_s"])
    assert j["time_s"]["low"] <= j["time_s"]["typical"] <= j["time_s"]["high"]
    assert j["cost_usd"]["typical"] == pytest.approx(j["time_s"]["typical"] / 3600 * 2)
    assert job["peak_memory_bytes"] == trial["peak_memory_bytes"]


def test_from_run_refusals(cli_json, capsys, tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path))
    trial = cli_json(["measure", MODEL, "--train", "--dataloader", LOADER, "--steps", "5", "--json"])
    run = str(trial["run_id"])
    for argv, match in ((["--from-run", run], "give --epochs"),
                        (["--from-run", run, "--epochs", "2", "--offer", "runpod-a100-sxm-80gb-community"],
                         "ran on cpu"),
                        (["--from-run", run, "--epochs", "2", "--workers", "2"], "--workers does not apply"),
                        (["--from-run", "999", "--epochs", "2"], "999")):
        assert main(["train", *argv]) == 1
        assert match in capsys.readouterr().err


JOB = """
import json, sys, time, torch
torch.set_num_threads(1)
from sizeup.examples.zoo import tiny_cnn
from tests.measure.loaders import images
torch.manual_seed(0)
model = tiny_cnn()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = images()
epochs = int(sys.argv[1])
cpu0, wall0 = time.thread_time(), time.perf_counter()
for _ in range(epochs):
    for x, y in loader:
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
print(json.dumps({"cpu_s": time.thread_time() - cpu0, "wall_s": time.perf_counter() - wall0}))
"""


def _run(argv, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)]),
                        "SIZEUP_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_a_50_step_trial_predicts_the_job_within_15_percent(tmp_path):
    """The issue's check: a 50-step trial of a zoo CNN (its own process, as `sizeup measure` runs) scaled to 20
    epochs of 1,600 images; 2 of those epochs run for real in a fresh process with a stopwatch (the job script
    above, the training loop a user writes); the prediction for 2 epochs (a tenth of the 20-epoch figure) is
    within 15%.

    The machine is shared (other processes take turns on its cores, and how many changes by the minute), so the
    stopwatch is the training thread's CPU time on both sides — the trial stores each step's CPU time (one torch
    thread, the loader in-process) and `train --from-run` scales it as the job on an idle machine — and the
    two-epoch run is made once before the trial and once after it, the prediction compared with their mean (a
    drift of the machine's speed during the test cancels to first order). When the two runs of the same job
    differ by more than 30%, this machine cannot reproduce itself well enough to check 15%: skipped, saying so."""
    before = _run(["-c", JOB, "2"], tmp_path)
    trial = _run(["-m", "sizeup", "measure", MODEL, "--train", "--dataloader", LOADER, "--steps", "50", "--threads",
                  "1", "--json"], tmp_path)
    out = _run(["-m", "sizeup", "train", "--from-run", str(trial["run_id"]), "--samples", "1600", "--epochs", "20",
                "--json"], tmp_path)
    after = _run(["-c", JOB, "2"], tmp_path)
    job, cpu_job = out["job"], out["job_cpu_time"]
    assert cpu_job is not None
    measured_cpu = (before["cpu_s"] + after["cpu_s"]) / 2
    measured_wall = (before["wall_s"] + after["wall_s"]) / 2
    predicted_cpu, predicted_wall = cpu_job["time_s"]["typical"] / 10, job["time_s"]["typical"] / 10
    print(f"\ntrial: 50 steps, mean {trial['step_mean_s'] * 1e3:.1f} ms wall, {trial['cpu_step_mean_s'] * 1e3:.1f} ms "
          f"CPU; 20 epochs predicted {cpu_job['time_s']['typical']:.1f} s CPU ({cpu_job['time_s']['low']:.1f} - "
          f"{cpu_job['time_s']['high']:.1f}), {job['time_s']['typical']:.1f} s wall\n2 epochs: CPU time measured "
          f"{before['cpu_s']:.2f} s before and {after['cpu_s']:.2f} s after the trial vs predicted {predicted_cpu:.2f} s "
          f"({predicted_cpu / measured_cpu - 1:+.1%}); wall measured {measured_wall:.2f} s vs predicted "
          f"{predicted_wall:.2f} s ({predicted_wall / measured_wall - 1:+.1%})")
    spread = abs(before["cpu_s"] - after["cpu_s"]) / measured_cpu
    if spread > 0.3:
        pytest.skip(f"the same two-epoch job took {before['cpu_s']:.2f} s and {after['cpu_s']:.2f} s of CPU: this "
                    "machine's noise is beyond the 15% being checked")
    assert predicted_cpu == pytest.approx(measured_cpu, rel=0.15)
