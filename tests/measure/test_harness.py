"""Measurement on this CPU with real small models; fakes only for what cannot run here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from sizeup.api import ParsedInput  # noqa: E402
from sizeup.errors import MeasureError  # noqa: E402
from sizeup.measure.calibrate import fit_efficiency, local_device, profile_efficiency  # noqa: E402
from sizeup.measure.harness import TimingPolicy, resolve_device  # noqa: E402
from sizeup.store import Store  # noqa: E402
from sizeup.measure.sweep import SweepConfig, run_sweep  # noqa: E402
from sizeup.price.roofline import price  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")
FAST = TimingPolicy(warmup=1, min_repetitions=3, max_repetitions=10, point_budget_s=0.5)


@pytest.mark.parametrize("name, message", [("gpu0", "unknown device 'gpu0'"), ("cuda:x", "unknown device"),
                                           ("tpu", "unknown device 'tpu'")])
def test_unknown_devices(name, message):
    with pytest.raises(MeasureError, match=message):
        resolve_device(name)


def test_sweep_stores_every_point(tmp_path):
    cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 16, 16)),), batches=(1, 2, 4),
                      policy=FAST)
    with Store(tmp_path / "runs.sqlite") as store:
        result = run_sweep(cfg, store, predict=lambda b: 0.001 * b)
        run = store.run(result.run_id)
    assert run.status == "ok" and [p.batch for p in run.points] == [1, 2, 4]
    assert all(p.status == "ok" and p.latency_p50_s > 0 and p.repetitions >= 3 for p in run.points)
    assert run.points[2].extra["predicted_s"] == pytest.approx(0.004)
    assert "load_avg_1m" in run.points[0].extra
    assert run.environment["torch"] == torch.__version__


def test_one_torch_thread_stores_each_repetitions_cpu_time(tmp_path):
    """With one thread every op runs on the timing thread, so its CPU time is stored beside the wall time; with
    more, none is (the other threads' work is not in that clock)."""
    cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 8, 8)),), batches=(1,),
                      policy=FAST)
    threads = torch.get_num_threads()
    try:
        with Store(tmp_path / "runs.sqlite") as store:
            torch.set_num_threads(1)
            one = store.run(run_sweep(cfg, store).run_id).points[0]
            cpu = store.cpu_samples(one.id)
            assert len(cpu) == one.repetitions == len(store.samples(one.id)) and all(c > 0 for c in cpu)
            torch.set_num_threads(2)
            two = store.run(run_sweep(cfg, store).run_id).points[0]
            assert store.cpu_samples(two.id) == [] and two.repetitions >= 3
    finally:
        torch.set_num_threads(threads)


def test_training_grid(tmp_path):
    cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 8, 8)),), batches=(1, 2),
                      train=True, grad_accumulation=(1, 2), policy=FAST)
    with Store(tmp_path / "runs.sqlite") as store:
        result = run_sweep(cfg, store)
    assert [(p.batch, p.grad_accumulation) for p in result.points] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert all(p.result.status == "ok" for p in result.points)


def test_error_inside_forward_is_stored_with_its_traceback(tmp_path):
    model = tmp_path / "broken.py"
    model.write_text("import torch\n\nclass Broken(torch.nn.Module):\n    def forward(self, x):\n"
                     "        raise ValueError('boom at batch %d' % x.shape[0])\n\ndef build():\n    return Broken()\n")
    cfg = SweepConfig(target=f"{model}:build", inputs=(ParsedInput(shape=(1, 4)),), batches=(1, 2), policy=FAST)
    with Store(tmp_path / "runs.sqlite") as store:
        result = run_sweep(cfg, store)
        run = store.run(result.run_id)
    assert run.status == "error" and all(p.status == "error" for p in run.points)
    assert "ValueError: boom at batch 1" in run.points[0].error and "Traceback" in run.points[0].error


def test_batch_list_with_zero_is_refused():
    with pytest.raises(MeasureError, match="every batch size must be a positive integer"):
        SweepConfig(target="x:y", inputs=(ParsedInput(shape=(1, 4)),), batches=(0, 2))


def test_oom_under_a_memory_cap_keeps_earlier_points(tmp_path):
    """A 4096-wide linear layer: batch 16 needs little, batch 1,000,000 needs gigabytes past the cap."""
    db = tmp_path / "runs.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "sizeup", "measure", "sizeup.examples.zoo:mlp_conv_net", "--input", "1x3x32x32",
         "--batch", "2,4,200000", "--memory-cap", "1GiB", "--budget", "60s", "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": SRC})
    data = json.loads(proc.stdout)
    statuses = [p["status"] for p in data["points"]]
    assert statuses == ["ok", "ok", "oom"], proc.stderr
    with Store(db) as store:
        run = store.run(data["run_id"])
    assert [p.status for p in run.points] == ["ok", "ok", "oom"] and run.status == "ok"


def test_fit_recovers_known_efficiencies():
    """Times generated by the roofline with known factors are fitted back (the fit's own consistency)."""
    from sizeup.examples import zoo
    from sizeup.ingest.torch_trace import InputSpec, trace_module

    device = local_device({"matmul_flops_per_s": 100e9, "copy_bytes_per_s": 20e9, "device": "cpu", "dtype": "fp32"})
    truth = {"tensor_matmul": 0.7, "tensor_conv": 0.7, "tensor_attention": 0.7, "vector": 0.4, "memory": 1.0,
             "overhead_s": 2e-5}
    ledgers = [trace_module(f, [InputSpec(shape=s)]) for f, s in
               [(zoo.mlp_conv_net, (b, 3, 32, 32)) for b in (1, 4, 16)] + [(zoo.llama_block, (b, 64, 512)) for b in (1, 4)]]
    observations = [(led, price(led, device, profile_efficiency(truth, 0.0)).total_s.typical) for led in ledgers]
    values, residual = fit_efficiency(device, observations)
    # the weak prior towards the uncalibrated profile costs a little exactness on noise-free data
    assert residual < 0.05
    assert values["tensor_matmul"] == pytest.approx(0.7, rel=0.1)
