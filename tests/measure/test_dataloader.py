"""`sizeup measure --dataloader`: the user's loader timed at several worker counts, its CPU per sample, and the
verdict beside the GPU's rate — input-bound, and the worker count that fixes it, checked by running it."""

import json

import pytest

torch = pytest.importorskip("torch")

from sizeup.cli.main import main  # noqa: E402
from sizeup.errors import ConfigError  # noqa: E402
from sizeup.measure.dataloader import batch_samples, measure_loader  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def test_batch_samples():
    assert batch_samples(torch.zeros(5, 3)) == 5
    assert batch_samples((torch.zeros(7, 2), torch.zeros(7))) == 7
    assert batch_samples({"pixels": torch.zeros(3, 1)}) == 3
    assert batch_samples([1, 2, 3, 4]) == 4


def test_a_cpu_heavy_loader_costs_its_cpu_per_sample():
    m = measure_loader("tests.measure.loaders:cpu_heavy", [0, 1], batches=6, budget_s=30)
    zero, one = m.points
    assert zero.workers == 0 and one.workers == 1 and zero.batch_size == 8
    # each sample burns 3 ms of CPU: the in-process figure is that plus the collation's own
    assert 0.003 <= zero.cpu_s_per_sample < 0.006
    assert one.cpu_s_per_sample is None or one.cpu_s_per_sample >= 0.003
    assert zero.samples_per_s < 1 / 0.003  # never faster than its CPU allows


def test_a_plain_iterable_is_timed_as_it_comes():
    with pytest.raises(Exception, match="only one batch"):
        measure_loader("tests.measure.loaders:plain_iterable", batches=3)


def test_bad_loader_targets(capsys):
    with pytest.raises(ConfigError, match="--dataloader"):
        measure_loader("tests/measure/nope.py:loader")
    assert main(["measure", "--dataloader", "tests.measure.loaders:cpu_heavy", "--workers", "x"]) == 1
    assert "--workers 'x'" in capsys.readouterr().err
    assert main(["measure", "--dataloader", "tests.measure.loaders:cpu_heavy", "--train"]) == 1
    assert "give --gpu DEVICE" in capsys.readouterr().err


def test_the_cpu_heavy_loader_is_input_bound_beside_a_predicted_gpu(capsys, tmp_path, monkeypatch):
    """A zoo CNN's training step predicted on an A100 is about 500 samples/s at batch 8 (eager launches decide
    it); a loader spending 12 ms of CPU per sample gives under 100 a core: input-bound, with the GPU's wait and
    how many workers (if any, on these cores) would keep up."""
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path))
    code = main(["measure", "sizeup.examples.zoo:mlp_conv_net", "--input", "8x3x32x32", "--train", "--gpu",
                 "a100-80g", "--dataloader", "tests.measure.loaders:mosaic_heavy", "--workers", "0,1", "--batches", "4",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    from sizeup.api import parse_input_specs
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.trace_inputs import InputSpec
    from sizeup.workload.input_pipeline import gpu_samples_per_s

    spec = parse_input_specs(["8x3x32x32"], [])[0]
    predicted, _ = gpu_samples_per_s("sizeup.examples.zoo:mlp_conv_net",
                                     [InputSpec(shape=spec.shape, dtype=spec.dtype, name=spec.name)],
                                     load_catalog().device("a100-80g"), train=True)
    assert out["gpu_samples_per_s"] == pytest.approx(predicted)
    v = out["verdict"]
    assert v["input_bound"] and v["gpu_wait"] > 0.5
    loader = out["points"][0]["samples_per_s"]
    assert v["gpu_wait"] == pytest.approx(1 - loader / predicted)
    assert "input-bound: the GPU waits" in v["summary"]


def test_the_worker_count_it_names_fixes_it(capsys, tmp_path, monkeypatch):
    """A loader that waits 10 ms per sample on a read and then computes: at 0 workers it cannot feed a GPU that
    takes 2.2x its rate; sizeup names the worker count that keeps up, and running the loader at that count
    does keep up (within 15%: this machine is shared)."""
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path))
    first = measure_loader("tests.measure.loaders:slow_read", [0], batches=8, budget_s=20).points[0]
    gpu_rate = 2.2 * first.samples_per_s
    code = main(["measure", "--dataloader", "tests.measure.loaders:slow_read", "--workers", "0,1,2",
                 "--gpu-rate", f"{gpu_rate:.3f}", "--batches", "12", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    v = out["verdict"]
    assert v["input_bound"] and v["workers_needed"] is not None and v["workers_needed"] >= 2
    fixed = measure_loader("tests.measure.loaders:slow_read", [v["workers_needed"]], batches=24,
                           budget_s=30).points[0]
    assert fixed.samples_per_s >= 0.85 * gpu_rate, (v["summary"], fixed.samples_per_s)
    print(f"\nslow_read: 0 workers {first.samples_per_s:.1f}/s, GPU {gpu_rate:.1f}/s, sizeup: "
          f"{v['workers_needed']} workers; measured there {fixed.samples_per_s:.1f}/s")
