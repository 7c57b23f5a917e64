"""TensorRT-LLM's NVFP4 path (engines/tensorrt_llm.py `matrix_kernel`, data/engines/tensorrt-llm.yaml `fp4_gemm@ARCH`):
FP4 x FP4 GEMMs on Blackwell's FP4 tensor cores at a sourced fraction of the FP4 peak, refused where a device has none
("Note that NVFP4 is only supported on NVIDIA Blackwell", TensorRT-LLM docs/source/deployment-guide/
quick-start-recipe-for-llama3.3-70b-on-trtllm.md)."""

from __future__ import annotations

import pytest

from sizeup.api import estimate
from sizeup.engines import resolve
from sizeup.errors import ConfigError
from sizeup.formats import get_format
from sizeup.hardware.catalog import load_catalog
from sizeup.price.execution import kernel_matmul, phase_efficiency

CATALOG = load_catalog(include_user=False)


@pytest.mark.parametrize("device, typical", [("b200", 0.44), ("rtx-pro-6000-server", 0.64), ("rtx-5090", 0.64)])
def test_nvfp4_prefill_runs_the_fp4_gemm_at_its_architecture_fraction(device, typical):
    """0.44: median of eight B200 FP4 GEMM measurements at M >= 2,048 (vLLM PR 20646, DeepGEMM PR 348); 0.64: the
    sm_120 figure between a measured Triton kernel (0.51, vLLM PR 38338) and the derived CUTLASS one (0.78)."""
    model = resolve("tensorrt-llm", CATALOG.device(device))
    kernel = model.matrix_kernel("nvfp4", False, 8192)
    assert kernel.peak == "fp4" and kernel.fraction.typical == pytest.approx(typical)
    eff = phase_efficiency(model, False, get_format("nvfp4"), 8192)
    assert eff.tensor["matmul@fp4"].typical == pytest.approx(typical)


def test_the_fp4_kernel_prices_fp4_matmuls_only():
    """A GEMM on the FP4 units says nothing of the bf16 matmuls beside it (an LM head kept 16-bit): those keep the
    device default, not the FP4 fraction scaled by 4x."""
    model = resolve("tensorrt-llm", CATALOG.device("b200"))
    fractions = kernel_matmul(model.device, model.matrix_kernel("nvfp4", False, 4096))
    assert set(fractions) == {"matmul@fp4"}


def test_small_steps_and_other_formats_keep_the_device_default():
    """Below fp4_gemm_min_tokens (2,048: the M from which the measured fractions reach the large-GEMM range) the
    device default matmul@fp4 applies; MXFP4 (gpt-oss's MoE experts) is not this kernel."""
    model = resolve("tensorrt-llm", CATALOG.device("b200"))
    assert model.matrix_kernel("nvfp4", True, 256) is None
    assert model.matrix_kernel("nvfp4", True, 2048) is not None
    assert model.matrix_kernel("mxfp4", False, 8192) is None
    assert model.matrix_kernel("fp8", False, 8192) is None


@pytest.mark.parametrize("device", ["h100-sxm-80gb", "a100-sxm-80gb", "rtx-4090"])
def test_nvfp4_without_fp4_tensor_cores_is_refused_in_one_line(device):
    with pytest.raises(ConfigError) as e:
        estimate("llama-3.1-8b", device=device, engine="tensorrt-llm", quant="nvfp4")
    message = str(e.value)
    assert "\n" not in message and "FP4 tensor cores" in message and device in message and "--engine vllm" in message


def test_an_nvfp4_prefill_is_faster_than_at_the_device_default():
    """The same prompt priced at 0.44 of the FP4 peak (the kernel) instead of the default 0.338: compute-bound, so
    faster, and the estimate names the kernel it priced with."""
    est = estimate("llama-3.1-70b", device="b200", engine="tensorrt-llm", quant="nvfp4", prompt=4096, output=16)
    vllm = estimate("llama-3.1-70b", device="b200", engine="vllm", quant="nvfp4", prompt=4096, output=16)
    assert est.prefill.tokens_per_s.typical > 1.2 * vllm.prefill.tokens_per_s.typical
    assert any("NVFP4 GEMM kernel" in a and "of the fp4 peak" in a for a in est.assumptions)


def test_an_nvfp4_checkpoint_runs_an_fp8_kv_cache_by_default_from_1_0():
    """ModelOpt's hf_ptq exports --kv_cache_qformat fp8 unless told otherwise, and TensorRT-LLM 1.x follows the
    checkpoint (KvCacheConfig dtype 'auto'); a TensorRT engine of 0.5-0.21 chose its KV format at build time."""
    current = estimate("llama-3.1-8b", device="b200", engine="tensorrt-llm", quant="nvfp4")
    assert current.config.kv_dtype == "fp8" and "kv_cache_qformat" in current.defaults["kv_dtype"]
    older = estimate("llama-3.1-8b", device="b200", engine="tensorrt-llm@0.21.0", quant="nvfp4")
    assert older.config.kv_dtype == "fp16" and "kv_dtype" not in older.defaults
    named = estimate("llama-3.1-8b", device="b200", engine="tensorrt-llm", quant="nvfp4", kv_dtype="fp16")
    assert named.config.kv_dtype == "fp16"
