"""The planner's mixed step (plan/capacity.py `_step_pricing`) is the estimate's (workload/serving_steps.py
`Steps.joined`): what a step's prompt tokens add, the decodes' GEMMs, collectives and all, at the kernel of the step's
rows, between the batches the estimate prices (powers of 2^(1/2) up to 64, each batch above), not between the
planner's powers of 2; on one GPU and on tensor-parallel replicas of 2, 4 and 8, dense and mixture of experts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.plan.capacity import _step_pricing
from sizeup.plan.serving import replica_model
from sizeup.workload.inference import InferenceConfig, execution_for
from sizeup.workload.serving import RequestMix
from sizeup.workload.serving_steps import Steps


def _planner_and_estimate(model: str, device: str, cfg: InferenceConfig, max_batch: int, decodes: int,
                          prompt: int) -> tuple[float, float]:
    """(the planner's, the estimate's) time that `prompt` prompt tokens add to a step of `decodes` decodes, the
    estimate's with a lump of the whole prompt: the step's excess at exactly those rows in both."""
    device, arch = load_catalog().device(device), load_model(model)
    execution = execution_for(device, cfg)
    # the GPU's part: the engine's host time raises a whole step in both (workload/host_floor.py raised), so the
    # prompt tokens' increment is compared without it
    _, step = _step_pricing(replace(replica_model(arch, device, cfg, max_batch, execution), host_s=()))
    steps = Steps(arch, device, cfg, execution, RequestMix(input_tokens=cfg.prompt, output_tokens=cfg.output))
    estimate = (steps.joined(decodes, prompt, "typical") + steps.streaming(decodes, "typical", prompt, prompt)
                - steps.streaming(decodes, "typical"))
    return step(decodes, prompt) - step(decodes, 0), estimate


@pytest.mark.parametrize("decodes, prompt", [(1024, 1024), (512, 1536), (256, 256)])
def test_the_planners_mixed_step_is_the_estimates(decodes, prompt):
    # TensorRT-LLM's NVFP4 GEMM reaches its FP4-peak fraction from 2,048 rows (fp4_gemm_min_tokens, as in
    # tests/workload/test_serving.py): 1,024 decodes with 1,024 prompt tokens run it for the decodes too, in the
    # estimate and in the planner's simulated step alike; at 512 rows the decodes keep their kernel but a token's
    # compute is the slower one below 2,048 rows in both.
    cfg = InferenceConfig(prompt=128, output=128, weights="nvfp4", kv_dtype="fp8", engine="tensorrt-llm")
    planner, estimate = _planner_and_estimate("llama-3.3-70b", "rtx-pro-6000-server", cfg, 1024, decodes, prompt)
    assert planner == pytest.approx(estimate, rel=1e-9)


# Dense: the same NVFP4 GEMM on B200, so 200 decodes in a step of 2,200 rows run a faster kernel than their own. MoE:
# vLLM's fused-MoE FP8 GEMM on Hopper is priced by its rows per expert (moe_gemm@fp8@hopper@rows<R> in
# data/engines/vllm.yaml), which a step of 2,000 rows raises over 200 decodes' own. Before the planner priced the
# step with the estimate's function, the 200-decode cases were off by +0.5% / +0.2% / -0.02% (dense, TP 2 / 4 / 8)
# and -2.3% / -2.2% / -2.1% (MoE).
CASES = [("llama-3.3-70b", "b200", "tensorrt-llm", "nvfp4", 200, 2000),
         ("llama-3.3-70b", "b200", "tensorrt-llm", "nvfp4", 48, 2100),
         ("mixtral-8x7b", "h100-sxm-80gb", "vllm", "fp8", 200, 1800),
         ("mixtral-8x7b", "h100-sxm-80gb", "vllm", "fp8", 96, 1024)]


@pytest.mark.parametrize("gpus", [2, 4, 8])
@pytest.mark.parametrize("model, device, engine, quant, decodes, prompt", CASES)
def test_the_planners_mixed_step_is_the_estimates_at_tensor_parallel(model, device, engine, quant, decodes, prompt,
                                                                      gpus):
    cfg = InferenceConfig(prompt=512, output=256, weights=quant, engine=engine, gpus=gpus)
    planner, estimate = _planner_and_estimate(model, device, cfg, 256, decodes, prompt)
    assert planner == pytest.approx(estimate, rel=1e-9)


def test_the_planners_shortcut_where_the_decodes_keep_their_kernel_gives_the_estimates_value():
    # plan/serving.py `_joined` skips the decode estimates where Steps.gemm_rows says the decodes keep their kernel;
    # over batches below, at and above 64 and steps below and above the kernels' thresholds, both ways agree
    device, arch = load_catalog().device("h100-sxm-80gb"), load_model("mixtral-8x7b")
    cfg = InferenceConfig(prompt=512, output=256, weights="fp8", engine="vllm", gpus=2)
    execution = execution_for(device, cfg)
    _, step = _step_pricing(replica_model(arch, device, cfg, 256, execution))
    steps = Steps(arch, device, cfg, execution, RequestMix(input_tokens=512, output_tokens=256))
    kernels = 0
    for decodes in (3, 23, 64, 65, 130, 256):
        for prompt in (700, 2100, 8000):
            kernels += steps.sequences(decodes, "typical", decodes + prompt) != steps.sequences(decodes, "typical")
            estimate = (steps.joined(decodes, prompt, "typical") + steps.streaming(decodes, "typical", prompt, prompt)
                        - steps.streaming(decodes, "typical"))
            assert step(decodes, prompt) - step(decodes, 0) == pytest.approx(estimate, rel=1e-9), (decodes, prompt)
    assert 0 < kernels < 18  # both: steps whose decodes run another kernel, and steps whose decodes keep theirs
