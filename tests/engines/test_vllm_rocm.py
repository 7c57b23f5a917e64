"""vLLM on ROCm (engines/vllm.py, the hip platform's keys of data/engines/vllm.yaml): a HIP graph's cost per node at
decode, the decode GEMMs' share of the HBM bandwidth by release (hipBLASLt before vLLM's skinny GEMMs, wvSplitK after),
and fp8 GEMMs at the fraction fitted on the tuned MLPerf v4.1 MI300X Offline rows. None of it reaches a CUDA device."""

import pytest

from sizeup import api
from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog
from sizeup.price.execution import kernel_matmul

CATALOG = load_catalog(include_user=False)
MI300X, H100 = CATALOG.device("mi300x"), CATALOG.device("h100")


def test_a_hip_graph_node_costs_its_measured_dispatch_time_at_decode():
    rocm, cuda = resolve("vllm", MI300X), resolve("vllm", H100)
    # rocm-systems#10834: 941 tiny kernels replayed by hipGraphLaunch, 3.845 us a node at 128 blocks
    assert rocm.per_op_overhead(True).typical == pytest.approx(3.845e-6)
    assert cuda.per_op_overhead(True).typical == pytest.approx(5.0e-7)  # CUDA graph replay, unchanged
    assert rocm.per_op_overhead(False) == cuda.per_op_overhead(False)


@pytest.mark.parametrize("release, typical", [("0.6", 0.73), ("0.34", 0.87)])
def test_decode_gemms_read_the_weights_at_the_kernel_of_the_release(release, typical):
    # rocm-libraries PR 12329, MI300X at M = 1: hipBLASLt median 0.73, wvSpltK median 0.87 of 5.3 TB/s
    kernel = resolve(f"vllm@{release}", MI300X).matrix_kernel("bf16", True, 1)
    assert kernel.memory.typical == pytest.approx(typical)
    assert kernel.fraction is None  # 16-bit weights keep the cdna3 class's GEMM fraction


def test_fp8_gemms_price_only_fp8_matmuls_at_the_fitted_fraction():
    kernel = resolve("vllm@0.6", MI300X).matrix_kernel("fp8", False, 512)
    assert kernel.peak == "fp8" and kernel.memory is None
    assert kernel.fraction.typical == pytest.approx(0.536)  # median of the two tuned rows' implied 0.524 / 0.549
    assert kernel_matmul(MI300X, kernel) == {"matmul@fp8": kernel.fraction}


def test_no_rocm_kernel_on_cuda():
    assert resolve("vllm", H100).matrix_kernel("fp8", True, 1) is None


def test_the_estimate_names_the_rocm_kernel_and_is_slower_on_the_old_release():
    opts = dict(device="mi300x", gpus=8, quant="fp8", batch=1, prompt=128, output=128)
    old = api.estimate("llama-3.1-405b", api.EstimateOptions(**opts, engine="vllm@0.6"))
    new = api.estimate("llama-3.1-405b", api.EstimateOptions(**opts, engine="vllm@0.34"))
    assert any("ROCm decode GEMM" in a and "73% of peak bandwidth" in a for a in old.assumptions)
    assert old.decode.latency_s.typical > new.decode.latency_s.typical


def test_awq_weights_keep_the_device_defaults_on_rocm():
    assert resolve("vllm", MI300X).matrix_kernel("awq-int4", True, 1) is None
