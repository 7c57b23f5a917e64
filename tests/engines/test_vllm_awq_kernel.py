"""vLLM's AWQ decode kernel by release (data/engines/vllm.yaml decode_alu_ops_per_weight@awq-int4): llm-awq's GEMM
kernel before 0.5.3 (4.1 lane-instructions per weight, counted from csrc/quantization/awq/gemm_kernels.cu),
awq_marlin from 0.5.3 (the device default)."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog


@pytest.fixture(scope="module")
def a100():
    return load_catalog().device("a100-pcie-80gb")


def test_old_release_runs_the_gemm_kernel_at_its_counted_instructions(a100):
    kernel = resolve("vllm@0.2.0", a100).matrix_kernel("awq-int4", True, 1)
    assert kernel is not None and kernel.peak == "alu"
    assert kernel.fraction.typical == pytest.approx(2 / 4.1)
    assert kernel.memory is None  # the bandwidth stays the device default
    assert "gemm_kernels.cu" in kernel.source


@pytest.mark.parametrize("release", ["0.5.3", "0.6", "0.10"])
def test_marlin_releases_keep_the_device_default(a100, release):
    assert resolve(f"vllm@{release}", a100).matrix_kernel("awq-int4", True, 1) is None


def test_only_awq_decode_is_affected(a100):
    old = resolve("vllm@0.2.0", a100)
    assert old.matrix_kernel("fp16", True, 1) is None
    assert old.matrix_kernel("awq-int4", False, 512) is None


def test_the_counted_kernel_slows_an_a100_awq_decode(a100):
    from sizeup import api

    old = api.estimate("llama-2-70b", device="a100-pcie-80gb", gpus=2, engine="vllm@0.2.0", quant="awq-int4", batch=1,
                       prompt=8, output=256)
    assert old.decode.bound == "compute"  # the instruction term binds on the A100 (64 FP32 lanes per SM)
    assert any("awq-int4 decode" in a for a in old.assumptions)


def test_a_batch_up_to_a_tile_shares_one_unpacking(a100):
    old = resolve("vllm@0.2.0", a100)
    one, sixteen, seventeen = (old.matrix_kernel("awq-int4", True, b).fraction.typical for b in (1, 16, 17))
    assert sixteen == pytest.approx(16 * one)  # 16 rows, one tile: the unpacking is paid once per weight
    assert seventeen == pytest.approx(17 / 2 * one)  # a second tile unpacks every weight again
