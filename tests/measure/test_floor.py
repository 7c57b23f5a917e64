"""The floor on this CPU with real small models: the forward on an empty batch is timed and kept with the run; a
model that cannot take an empty batch leaves an error, not a failed run."""

import pytest

torch = pytest.importorskip("torch")

from sizeup.api import ParsedInput  # noqa: E402
from sizeup.measure.floor import floor_seconds, measure_floor  # noqa: E402
from sizeup.measure.harness import TimingPolicy  # noqa: E402
from sizeup.store import Store  # noqa: E402
from sizeup.measure.sweep import SweepConfig, run_sweep  # noqa: E402

FAST = TimingPolicy(warmup=1, min_repetitions=3, max_repetitions=10, point_budget_s=0.5)


class MaxOverBatch(torch.nn.Module):
    def forward(self, x):
        return x.max(dim=0).values  # a reduction over the batch: an empty one has no maximum


def test_the_floor_is_kept_in_the_first_point_and_is_below_batch_one(tmp_path):
    cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 16, 16)),), batches=(1, 2),
                      policy=FAST)
    with Store(tmp_path / "runs.sqlite") as store:
        run = store.run(run_sweep(cfg, store).run_id)
    floor = run.points[0].extra["floor"]
    assert "floor" not in run.points[1].extra
    assert floor["repetitions"] >= 10 and 0 < floor["min_s"] <= floor["median_s"]
    assert 0 < floor_seconds(floor, "min") < run.points[0].latency_min_s  # dispatch alone, no arithmetic


def test_a_model_that_cannot_take_an_empty_batch_leaves_an_error():
    floor = measure_floor(MaxOverBatch(), (ParsedInput(shape=(1, 3, 4, 4)),), torch.device("cpu"), torch.float32)
    assert "error" in floor and floor_seconds(floor, "min") is None


def test_no_floor_when_asked_for_none(tmp_path):
    cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 8, 8)),), batches=(1,),
                      policy=FAST, floor=False)
    with Store(tmp_path / "runs.sqlite") as store:
        run = store.run(run_sweep(cfg, store).run_id)
    assert "floor" not in run.points[0].extra
