"""ExecutionModel.moe_kernel: the grouped GEMM an engine runs for a MoE layer's experts, per weight format and
architecture, from data/engines/NAME.yaml `moe_gemm@FMT@ARCH` / `moe_gemm_memory@FMT@ARCH`."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_vllm_block_fp8_on_hopper_is_the_triton_fused_moe(catalog):
    # github.com/vllm-project/vllm/pull/13932 (H100, DeepSeek-V3 TP1 / TP8) and pull/24700 (Qwen3-30B-A3B): the
    # median of three shapes, 0.040 of the FP8 peak at large batches and 0.265 of the bandwidth at 128 tokens
    kernel = resolve("vllm@0.11.0", catalog.device("h200-sxm-141gb")).moe_kernel("fp8", False, 512)
    assert kernel.fraction.typical == pytest.approx(0.040)
    assert kernel.memory.typical == pytest.approx(0.265)
    assert "13932" in kernel.source


def test_sglang_mxfp4_on_hopper_names_its_fitted_row(catalog):
    kernel = resolve("sglang@0.5.4", catalog.device("h100-sxm-80gb")).moe_kernel("mxfp4", True, 1)
    assert kernel.memory.typical == pytest.approx(0.32)
    assert kernel.fraction.typical == pytest.approx(0.49)
    assert "achatbot" in kernel.source


def test_no_entry_leaves_the_matmul_pricing(catalog):
    h100, b200 = catalog.device("h100-sxm-80gb"), catalog.device("b200")
    assert resolve("vllm", h100).moe_kernel("bf16", False, 512) is None
    assert resolve("vllm", b200).moe_kernel("mxfp4", False, 512) is None
    assert resolve("tensorrt-llm", h100).moe_kernel("mxfp4", True, 1) is None


def test_estimate_says_which_moe_kernel_priced_the_experts():
    from sizeup.api import estimate

    result = estimate("gpt-oss-20b", device="h100-sxm-80gb", engine="vllm@0.11.0", quant="mxfp4")
    said = [a for a in result.to_dict()["assumptions"] if "MoE experts run" in a]
    assert said
    assert any("expert weights streamed at 32% of peak bandwidth" in a for a in said)
    dense = estimate("qwen3-32b", device="h100-sxm-80gb", engine="vllm@0.11.0", quant="fp8")
    assert not any("MoE experts run" in a for a in dense.to_dict()["assumptions"])
