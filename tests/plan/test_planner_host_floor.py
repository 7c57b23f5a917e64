"""The planner's decode step pays the engine's host time for the iteration as the estimate's does (one function,
workload/host_floor.py `raised`): vLLM's per-request scheduler time, TensorRT-LLM's executor and trtllm-serve front
process, SGLang's HTTP process. It used to pay only SGLang's front process, so `plan` ranked engines unlike `estimate`."""

from __future__ import annotations

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.plan.serving import replica_model
from sizeup.workload.host_floor import raised
from sizeup.workload.inference import InferenceConfig


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_the_planner_step_is_at_least_the_engines_host_time(engine):
    device = load_catalog(include_user=False).device("h100-sxm-80gb")
    cfg = InferenceConfig(prompt=512, output=256, weights="bf16", engine=engine)
    model = resolve(engine, device)
    replica = replica_model(load_model("qwen2.5-7b"), device, cfg, 256, model)
    step = dict(zip(replica.decode_batches, replica.decode_step_s))[256]
    floor = model.host_floor(256, 1)
    front = model.front_floor(256)
    need = max(floor.typical if floor is not None else 0.0, front.typical if front is not None else 0.0)
    assert need > 0 and step >= need * (1 - 1e-9)
    assert raised(model, 256, 1, 0.0, "typical") == pytest.approx(need) or not model.host_overlapped
