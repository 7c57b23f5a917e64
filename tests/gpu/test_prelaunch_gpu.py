"""The GPU side of the pre-launch checks (issue 33): NVML readings of a busy GPU, the watch's verdict on a
GPU-bound job, a trial on CUDA (allocator peak, pinned batches). Skipped without a GPU; benchmarks/gpu_check.sh
runs them on a CUDA machine."""

import json
import sys

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

BUSY = ("import torch, time\nx = torch.randn(8192, 8192, device='cuda', dtype=torch.float16)\n"
        "end = time.time() + 8\nwhile time.time() < end:\n    y = x @ x\ntorch.cuda.synchronize()\n")


def _reader():
    from sizeup.measure.util_watch import GpuReader

    reader = GpuReader("auto", 0.5)
    if reader.source == "none":
        pytest.skip("neither NVML (nvidia-ml-py) nor nvidia-smi is available")
    return reader


def test_nvml_or_nvidia_smi_reads_every_field():
    reader = _reader()
    try:
        samples = reader.read()
    finally:
        reader.close()
    assert samples and samples[0].util_pct is not None and samples[0].sm_clock_mhz
    assert samples[0].max_sm_clock_mhz and samples[0].memory_total_bytes and samples[0].throttle_mask is not None


def test_a_matmul_loop_is_gpu_bound(capsys, tmp_path, monkeypatch):
    from sizeup.cli.main import main

    _reader().close()
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path))
    code = main(["watch", "--util", "--interval", "0.5s", "--duration", "30s", "--json", "--", sys.executable, "-c",
                 BUSY])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    verdict = out["diagnosis"]["verdict"]
    assert verdict in ("gpu-bound", "memory-bound", "throttled-power", "throttled-thermal"), out["diagnosis"]
    print("\n" + out["diagnosis"]["summary"], *out["diagnosis"]["evidence"], sep="\n  ")


def test_a_cuda_trial_reads_the_allocator_peak():
    from sizeup.measure.trial import TrialConfig, run_trial

    result = run_trial(TrialConfig(model="sizeup.examples.zoo:tiny_cnn", loader="tests.measure.loaders:images",
                                   steps=20, device="cuda", workers=2))
    assert result.memory_kind == "cuda allocated" and result.peak_memory_bytes > 0
    assert not result.cpu_s  # CPU time is not the step's work on a GPU
    assert len(result.step_s) == 20
