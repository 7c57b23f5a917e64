"""The planner's mixed step (plan/capacity.py `_step_pricing`) is the estimate's (workload/serving_steps.py
`Steps.joined`) at tensor-parallel replicas of 2, 4 and 8 GPUs, dense and mixture of experts, at decode batches off
the planner's powers-of-2 decode table: the decodes' GEMMs, collectives and all, at the kernel of the step's rows,
between the batches the estimate prices (powers of 2^(1/2) up to 64, each batch above), not between powers of 2."""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.plan.capacity import _step_pricing
from sizeup.plan.serving import replica_model
from sizeup.workload.inference import InferenceConfig, execution_for
from sizeup.workload.serving import RequestMix
from sizeup.workload.serving_steps import Steps

# Dense: TensorRT-LLM's NVFP4 GEMM on Blackwell reaches its FP4-peak fraction from 2,048 rows (fp4_gemm_min_tokens in
# data/efficiency/kernels.yaml), so 200 decodes in a step of 2,200 rows run a faster kernel than their own. MoE: vLLM's
# fused-MoE FP8 GEMM on Hopper is priced by its rows per expert (moe_gemm@fp8@hopper@rows in data/engines/vllm.yaml),
# which a step of 2,000 rows raises over 200 decodes' own.
CASES = [("llama-3.3-70b", "b200", "tensorrt-llm", "nvfp4", 200, 2000),
         ("llama-3.3-70b", "b200", "tensorrt-llm", "nvfp4", 48, 2100),
         ("mixtral-8x7b", "h100-sxm-80gb", "vllm", "fp8", 200, 1800),
         ("mixtral-8x7b", "h100-sxm-80gb", "vllm", "fp8", 96, 1024)]


@pytest.mark.parametrize("gpus", [2, 4, 8])
@pytest.mark.parametrize("model, device, engine, quant, decodes, prompt", CASES)
def test_the_planners_mixed_step_is_the_estimates_at_tensor_parallel(model, device, engine, quant, decodes, prompt,
                                                                      gpus):
    device, arch = load_catalog().device(device), load_model(model)
    cfg = InferenceConfig(prompt=512, output=256, weights=quant, engine=engine, gpus=gpus)
    execution = execution_for(device, cfg)
    _, step = _step_pricing(replica_model(arch, device, cfg, 256, execution))
    steps = Steps(arch, device, cfg, execution, RequestMix(input_tokens=512, output_tokens=256))
    estimate = (steps.joined(decodes, prompt, "typical") + steps.streaming(decodes, "typical", prompt, prompt)
                - steps.streaming(decodes, "typical"))
    assert step(decodes, prompt) - step(decodes, 0) == pytest.approx(estimate, rel=1e-9)
