"""Timing under contention: the point budget bounds only the repetitions past `min_repetitions`, so a busy
machine makes points slower, never thinner. The sweep of test_harness runs here beside busy loops that keep
every core spinning (each bounded in time, and killed when the test ends)."""

import os
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")

from sizeup.api import ParsedInput  # noqa: E402
from sizeup.errors import MeasureError  # noqa: E402
from sizeup.measure.harness import TimingPolicy, time_callable  # noqa: E402
from sizeup.store import Store  # noqa: E402
from sizeup.measure.sweep import SweepConfig, run_sweep  # noqa: E402

FAST = TimingPolicy(warmup=1, min_repetitions=3, max_repetitions=10, point_budget_s=0.5)
SPIN_S = 90.0
SPIN = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"


def test_min_repetitions_hold_when_one_call_outlasts_the_budget():
    calls = []

    def slow() -> None:
        calls.append(1)
        time.sleep(0.02)

    policy = TimingPolicy(warmup=1, min_repetitions=5, max_repetitions=50, point_budget_s=0.001, tolerance=0.0)
    samples = time_callable(slow, torch.device("cpu"), policy)
    assert len(samples) == 5 and len(calls) == 6  # the budget was spent after the first; the minimum still held
    assert all(s >= 0.02 for s in samples)


@pytest.mark.parametrize("kwargs, message", [({"min_repetitions": 0}, "min_repetitions 0"),
                                             ({"min_repetitions": 5, "max_repetitions": 3}, "below min_repetitions"),
                                             ({"point_budget_s": float("nan")}, "point_budget_s nan"),
                                             ({"warmup": -1}, "warmup -1")])
def test_bad_timing_policy_is_refused(kwargs, message):
    with pytest.raises(MeasureError, match=message):
        TimingPolicy(**kwargs)


def test_sweep_stores_every_point_beside_busy_loops(tmp_path):
    cores = max(2, min(os.cpu_count() or 2, 8))
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN, str(SPIN_S)]) for _ in range(cores)]
    try:
        time.sleep(0.3)  # let them reach the loop
        assert all(p.poll() is None for p in spinners)
        cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 16, 16)),),
                          batches=(1, 2, 4), policy=FAST)
        with Store(tmp_path / "runs.sqlite") as store:
            result = run_sweep(cfg, store, predict=lambda b: 0.001 * b)
            run = store.run(result.run_id)
        still_spinning = all(p.poll() is None for p in spinners)
    finally:
        for p in spinners:
            p.kill()
            p.wait(timeout=10)
    assert still_spinning, "the busy loops ended before the sweep did: the test did not run under contention"
    assert run.status == "ok" and [p.batch for p in run.points] == [1, 2, 4]
    assert all(p.status == "ok" and p.latency_p50_s > 0 and p.repetitions >= 3 for p in run.points)
    assert run.points[2].extra["predicted_s"] == pytest.approx(0.004)
