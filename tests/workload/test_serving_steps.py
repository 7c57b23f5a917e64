"""Steps.keeps_kernel (workload/serving_steps.py): whether a decode step priced by `Steps.sequences` at a step's rows
reads only estimates whose GEMMs keep their own kernel there, the planner's shortcut (plan/serving.py `_joined`)."""

from __future__ import annotations

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.workload.inference import InferenceConfig, execution_for
from sizeup.workload.serving import RequestMix
from sizeup.workload.serving_steps import Steps


def test_keeps_kernel_only_where_the_rows_leave_the_decode_step_unchanged():
    # vLLM's fused-MoE FP8 GEMM on Hopper is priced by its rows per expert (data/engines/vllm.yaml
    # moe_gemm@fp8@hopper@rows<R>): a step's prompt tokens move the decodes to another kernel at some rows
    cfg = InferenceConfig(prompt=512, output=256, weights="fp8", engine="vllm")
    device, arch = load_catalog().device("h100-sxm-80gb"), load_model("mixtral-8x7b")
    steps = Steps(arch, device, cfg, execution_for(device, cfg), RequestMix(input_tokens=512, output_tokens=256))
    seen = set()
    for batch in (1, 3, 5, 12, 48, 64, 96, 200):
        for rows in (batch, batch + 16, 1024, 2000, 4096):
            keeps = steps.keeps_kernel(batch, rows)
            seen.add(keeps)
            if keeps:  # the shortcut is sound: the step at those rows is the decode step itself
                assert steps.sequences(batch, "typical", rows) == steps.sequences(batch, "typical")
            if steps.gemm_rows(True, batch, rows) is not None:  # the batch itself changes kernel
                assert not keeps
    assert seen == {True, False}
