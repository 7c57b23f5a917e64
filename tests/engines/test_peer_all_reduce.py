"""The engines' own all-reduce (engines/peer_all_reduce.py): TensorRT-LLM's AUTO strategy, SGLang's by release,
vLLM's and SGLang's on AMD Instinct over xGMI."""

import pytest

from sizeup.engines import resolve
from sizeup.engines.profile import engine_profile
from sizeup.hardware.catalog import load_catalog

CATALOG = load_catalog(include_user=False)


def _tp(spec, device, link, gpus):
    return resolve(spec, CATALOG.device(device)).tensor_parallel(link, gpus)


def test_tensorrt_llm_auto_runs_its_kernels_over_nvlink_within_the_workspace():
    """allreduceOp.cpp selectImplementation: NCCL without NVLink under AUTO; custom up to getMaxRequiredWorkspaceSize,
    16 MB at TP <= 2, 8 MB above (customAllReduceUtils.h); the strategy tables cover TP 2, 4, 8."""
    custom = engine_profile("tensorrt-llm").range("custom_all_reduce_latency_s")
    eight, two = _tp("tensorrt-llm", "h100-sxm-80gb", "nvlink", 8), _tp("tensorrt-llm", "h100-sxm-80gb", "nvlink", 2)
    assert eight.all_reduce_latency_s == custom and eight.all_reduce_max_bytes == 8_000_000
    assert two.all_reduce_max_bytes == 16_000_000
    assert _tp("tensorrt-llm", "h100-sxm-80gb", "nvlink", 6).all_reduce_latency_s is None
    pcie = _tp("tensorrt-llm", "l40s", "pcie", 2)
    assert pcie.all_reduce_latency_s is None and "NVLink only" in pcie.notes[0]


def test_sglang_runs_the_tensorrt_llm_kernel_only_for_the_releases_that_defaulted_to_it():
    """sglang PR #2981 (sgl_kernel's TensorRT-LLM kernel by default) to PR #5079/#5080 (back to vLLM's kernel)."""
    trt, vllm_kernel = (_tp(s, "h100-sxm-80gb", "nvlink", 8).all_reduce_latency_s for s in ("sglang@0.4.3", "sglang"))
    assert trt.typical < vllm_kernel.typical
    assert vllm_kernel == engine_profile("vllm").range("custom_all_reduce_latency_s")
    assert _tp("sglang", "a100-pcie-80gb", "pcie", 4).all_reduce_latency_s is None  # > 2 PCIe GPUs: NCCL


@pytest.mark.parametrize("spec,own", [("vllm", True), ("vllm@0.6", False), ("sglang", True)])
def test_amd_instinct_runs_the_engines_all_reduce_over_xgmi_where_the_release_has_it(spec, own):
    """Upstream vLLM builds its custom all-reduce for ROCm from PR #14125 (taken as 0.9); SGLang on ROCm since
    PR #3067; before that RCCL's ring (price/comm.py on the xGMI mesh)."""
    tp = _tp(spec, "mi300x", "xgmi", 8)
    assert (tp.all_reduce_latency_s is not None) is own
    if own:
        assert tp.all_reduce_latency_s.typical < 1e-5
    else:
        assert "RCCL" in tp.notes[0]


def test_an_estimate_on_mi300x_prices_the_xgmi_mesh():
    """Llama-3.1-70B on 8 MI300X: the per-layer all-reduces ride the xGMI mesh, not PCIe (the RCCL ring on PCIe put
    ~9 ms of communication in each decode step). The step is ~14 ms with vLLM 0.6's hipBLASLt decode GEMMs and HIP
    graph nodes (data/engines/vllm.yaml rocm_decode_memory, decode_overhead_s.hip); vLLM PR 15830 measured 11 ms a
    token for this model in fp16 on 8 MI300X before vLLM's skinny GEMMs (1.412 s for 32 + 128 tokens)."""
    from sizeup.api import estimate

    e = estimate("llama-3.1-70b", device="mi300x", gpus=8, engine="vllm@0.6", quant="bf16", prompt=128, output=128)
    assert e.decode.latency_s.typical < 0.015


def test_vllm_on_four_bridged_h100_nvl_runs_nccl_over_pcie():
    """vLLM's custom all-reduce needs every pair on NVLink above 2 GPUs; 4 H100 NVL are two bridged pairs on PCIe."""
    from sizeup.api import estimate

    e = estimate("llama-3.1-70b", device="h100-nvl-94gb", gpus=4, engine="vllm", quant="bf16", prompt=128, output=16)
    text = " ".join(e.assumptions)
    assert "NCCL" in text and "vLLM custom all-reduce," not in text
    two = estimate("llama-3.1-8b", device="h100-nvl-94gb", gpus=2, engine="vllm", quant="bf16", prompt=128, output=16)
    assert "vLLM custom all-reduce," in " ".join(two.assumptions)
