"""gpt-oss's MXFP4 experts on Hopper: vLLM (Mxfp4Backend.TRITON), SGLang (moe_runner_backend triton_kernel) and
TensorRT-LLM (MoE backend TRITON, what AUTO resolves to for W4A16_MXFP4 on SM90) run OpenAI's triton_kernels
matmul_ogs, so each engine's data prices that grouped GEMM with the same fractions (data/engines/*.yaml
moe_gemm[_memory]@mxfp4@hopper; TensorRT-LLM's derived from the other two: PR 19035's release note)."""

import pytest

from sizeup.engines.base import resolve
from sizeup.hardware.catalog import load_catalog


@pytest.mark.parametrize("engine", ["vllm@0.11.0", "sglang@0.5.4", "tensorrt-llm@1.2"])
def test_every_engine_prices_the_triton_kernels_grouped_gemm_on_hopper(engine):
    model = resolve(engine, load_catalog().device("h100-sxm-80gb"))
    kernel = model.moe_kernel("mxfp4", True, 256, rows=32.0)
    assert kernel is not None, engine
    assert kernel.fraction.typical == pytest.approx(0.49)
    assert kernel.memory.typical == pytest.approx(0.32)
    assert "triton" in kernel.source.lower() or "triton" in kernel.basis.lower() or "mxfp4.py" in kernel.source


def test_tensorrt_llm_cites_its_own_backend_choice():
    model = resolve("tensorrt-llm@1.2", load_catalog().device("h100-sxm-80gb"))
    kernel = model.moe_kernel("mxfp4", False, 4096, rows=512.0)
    assert "19035" in kernel.source and "blog9" in kernel.source
