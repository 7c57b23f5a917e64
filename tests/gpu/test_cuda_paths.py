"""The CUDA paths of the harness: CUDA-event timing, max_memory_allocated, a GPU OOM. Skipped without
a GPU (run with `-m gpu` on a CUDA machine; benchmarks/gpu_check.sh runs the whole GPU check)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_cuda_sweep_times_with_events_and_reads_allocator_peak(tmp_path):
    from sizeup.api import ParsedInput
    from sizeup.measure.harness import TimingPolicy
    from sizeup.store import Store
    from sizeup.measure.sweep import SweepConfig, run_sweep

    cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 64, 64)),), device="cuda",
                      batches=(1, 8), dtype="fp16", policy=TimingPolicy(point_budget_s=1.0))
    with Store(tmp_path / "runs.sqlite") as store:
        result = run_sweep(cfg, store)
    assert all(p.result.status == "ok" for p in result.points)
    assert result.points[1].result.peak_memory_bytes > result.points[0].result.peak_memory_bytes > 0
    assert result.points[0].result.extra["memory_source"] == "cuda max_memory_allocated"


def test_cuda_oom_is_a_point_not_a_crash(tmp_path):
    from sizeup.api import ParsedInput
    from sizeup.measure.harness import TimingPolicy
    from sizeup.store import Store
    from sizeup.measure.sweep import SweepConfig, run_sweep

    huge = int(torch.cuda.get_device_properties(0).total_memory // (64 * 64 * 64 * 2) * 4)
    cfg = SweepConfig(target="sizeup.examples.zoo:c2f", inputs=(ParsedInput(shape=(1, 64, 64, 64)),), device="cuda",
                      batches=(1, huge), dtype="fp16", policy=TimingPolicy(point_budget_s=1.0))
    with Store(tmp_path / "runs.sqlite") as store:
        result = run_sweep(cfg, store)
    assert [p.result.status for p in result.points] == ["ok", "oom"]
