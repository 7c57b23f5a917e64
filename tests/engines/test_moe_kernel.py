"""ExecutionModel.moe_kernel: the grouped GEMM an engine runs for a MoE layer's experts, per weight format and
architecture, from data/engines/NAME.yaml `moe_gemm@FMT@ARCH` / `moe_gemm_memory@FMT@ARCH`."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_vllm_block_fp8_on_hopper_is_the_triton_fused_moe(catalog):
    # github.com/vllm-project/vllm/pull/13932 (H100, DeepSeek-V3 TP1-TP8) and pull/24700 (Qwen3-30B-A3B): the
    # median of five shapes at 64 rows per expert, 0.036 of the FP8 peak, and 0.265 of the bandwidth at 128 tokens
    # (releases to 0.10); from 0.11 the bandwidth share derived from pull/28992's H200 TP8 decode run, 0.34
    kernel = resolve("vllm@0.11.0", catalog.device("h200-sxm-141gb")).moe_kernel("fp8", False, 2048, 64.0)
    assert kernel.fraction.typical == pytest.approx(0.036)
    assert kernel.memory.typical == pytest.approx(0.34)
    assert "13932" in kernel.source and "28992" in kernel.source and "rows64" in kernel.basis
    older = resolve("vllm@0.10.1", catalog.device("h200-sxm-141gb")).moe_kernel("fp8", False, 2048, 64.0)
    assert older.memory.typical == pytest.approx(0.265)


def test_block_fp8_fraction_rises_with_the_rows_per_expert(catalog):
    # the same kernel tables: weight-bound below 64 rows per expert (held there), 0.060 at 96, 0.095 at 256 (Qwen3)
    for engine in ("vllm@0.11.0", "sglang@0.5.4"):
        model = resolve(engine, catalog.device("h100-sxm-80gb"))
        rows = (1, 16, 64, 80, 96, 125, 128, 200, 256, 4096)
        typical = [model.moe_kernel("fp8", False, 512, r).fraction.typical for r in rows]
        assert typical == sorted(typical)
        assert typical[0] == pytest.approx(0.036) and typical[-1] == pytest.approx(0.095)
        assert typical[4] == pytest.approx(0.060) and 0.060 < typical[5] < 0.086


def test_a_deepseek_shape_point_is_its_source_value(catalog):
    # github.com/vllm-project/vllm/pull/13932, H100, Triton TP=2 column at batch 2048: 10111.40 us for DeepSeek-V3
    # (E 256, top-8, K 7168, expert intermediate 2048 / TP 2): 2048 x 8 / 256 = 64 rows per expert
    flops = 2 * 2048 * 8 * 3 * 7168 * 1024
    source = flops / 10111.40e-6 / 1978.9e12  # H100 SXM dense FP8 peak
    kernel = resolve("vllm@0.11.0", catalog.device("h100-sxm-80gb")).moe_kernel("fp8", False, 2048, 2048 * 8 / 256)
    assert kernel.fraction.typical == pytest.approx(source, rel=0.03)
    tp8 = 2 * 2048 * 8 * 3 * 7168 * 256 / 2818.65e-6 / 1978.9e12  # the TP=8 column: the lowest shape there
    assert kernel.fraction.low == pytest.approx(tp8, rel=0.03)


def test_rows_per_expert_come_from_the_models_routing():
    from sizeup.ingest.hf_config import load_model
    from sizeup.price.execution import expert_rows

    assert expert_rows(load_model("deepseek-r1"), 4000) == pytest.approx(4000 * 8 / 256)
    assert expert_rows(load_model("qwen3-30b-a3b"), 2048) == pytest.approx(2048 * 8 / 128)
    assert expert_rows(load_model("qwen3-32b"), 2048) is None


def test_sglang_mxfp4_on_hopper_names_its_fitted_row(catalog):
    kernel = resolve("sglang@0.5.4", catalog.device("h100-sxm-80gb")).moe_kernel("mxfp4", True, 1)
    assert kernel.memory.typical == pytest.approx(0.32)
    assert kernel.fraction.typical == pytest.approx(0.49)
    assert "achatbot" in kernel.source


def test_no_entry_leaves_the_matmul_pricing(catalog):
    h100, b200 = catalog.device("h100-sxm-80gb"), catalog.device("b200")
    assert resolve("vllm", h100).moe_kernel("bf16", False, 512) is None
    assert resolve("vllm", b200).moe_kernel("mxfp4", False, 512) is None
    assert resolve("tensorrt-llm", b200).moe_kernel("mxfp4", True, 1) is None  # Hopper's: test_mxfp4_hopper_moe.py


def test_estimate_says_which_moe_kernel_priced_the_experts():
    from sizeup.api import estimate

    result = estimate("gpt-oss-20b", device="h100-sxm-80gb", engine="vllm@0.11.0", quant="mxfp4")
    said = [a for a in result.to_dict()["assumptions"] if "MoE experts run" in a]
    assert said
    assert any("expert weights streamed at 32% of peak bandwidth" in a for a in said)
    moe = estimate("qwen3-30b-a3b", device="h100-sxm-80gb", engine="vllm@0.11.0", quant="fp8", prompt=2048)
    assert any("at 128 rows per expert" in a and "prefill" in a for a in moe.to_dict()["assumptions"])
    dense = estimate("qwen3-32b", device="h100-sxm-80gb", engine="vllm@0.11.0", quant="fp8")
    assert not any("MoE experts run" in a for a in dense.to_dict()["assumptions"])


def test_tensorrt_llm_nvfp4_experts_stream_at_the_cutlass_module_share(catalog):
    # TensorRT-LLM blog24 (MoE as Dense GEMM), one B200, DeepSeek-V3-style TP8 rank, CUTLASS backend: 128 tokens touch
    # 256 (1 - (1 - 8/256)^128) = 251.6 experts of 3 x 7168 x 256 x 0.5625 B in 335.65 us, of 7.7 TB/s: 0.30
    read = 256 * (1 - (1 - 8 / 256) ** 128) * 3 * 7168 * 256 * 0.5625
    kernel = resolve("tensorrt-llm@1.0", catalog.device("b200")).moe_kernel("nvfp4", True, 128)
    assert kernel.memory.high == pytest.approx(read / 335.65e-6 / 7.7e12, rel=0.02)
    assert kernel.memory.typical == pytest.approx(0.29) and kernel.fraction is None
    assert "blog24" in kernel.source
    # the streaming share is measured on Blackwell's NVFP4 only; Hopper FP8 has the compute share fitted on the 0.17
    # perf-overview's Mixtral table (tests/validation/rows_trtllm_moe.yaml) and no streaming share of its own
    hopper = resolve("tensorrt-llm@1.0", catalog.device("h200-sxm-141gb")).moe_kernel("fp8", True, 128)
    assert hopper.memory is None and "rows_trtllm_moe.yaml" in hopper.source


def test_vllm_block_fp8_on_rocm_is_the_same_triton_fused_moe(catalog):
    # vLLM on ROCm runs a block-FP8 checkpoint's experts through the Triton fused_moe_kernel it runs on Hopper (AITER
    # opt-in): its H100 shares are taken for CDNA3, the memory share of the kernel table (0.265), not the 0.11+ H200
    # bisection (0.34); every release, the Feb 2025 ROCm fork (0.7.3.dev) included
    for release in ("vllm@0.7.2", "vllm@0.11.0"):
        rocm = resolve(release, catalog.device("mi300x")).moe_kernel("fp8", False, 2048, 64.0)
        hopper = resolve("vllm@0.10.1", catalog.device("h100-sxm-80gb")).moe_kernel("fp8", False, 2048, 64.0)
        assert rocm.fraction.typical == pytest.approx(hopper.fraction.typical) == pytest.approx(0.036)
        assert rocm.memory.typical == pytest.approx(0.265)
        assert "21f6ca217" in rocm.source and "13932" in rocm.source and "cdna3@rows64" in rocm.basis
    assert resolve("vllm@0.11.0", catalog.device("mi300x")).moe_kernel("bf16", False, 2048, 64.0) is None
