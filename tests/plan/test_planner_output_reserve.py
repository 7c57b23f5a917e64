"""The planner's scheduler admits as the engine does where the engine keeps KV room for outputs to come (its load
policy's `output_reserve`, engines/policies.py): the replica model carries the KV pool in tokens and the rule, so a
plan's running requests are bounded as the estimate's are (issue 28: the estimate allowed 248 of 482 running where
the plan allowed 482); an engine without the rule keeps `max_batch` alone."""

import pytest

from sizeup.plan.capacity import simulate
from sizeup.plan.serving import replica_model
from sizeup.workload.inference import InferenceConfig, execution_for
from sizeup.workload.serving import Load, RequestMix, serving_load


def test_the_reserve_bounds_the_plans_running_requests_as_the_estimates(h100, llama8b):
    """Short prompts, long outputs, a cap far above the pool: the reserve, not the cap, bounds the running requests,
    near the estimate's count (the simulated run averages its ramp and the ratio's decay)."""
    prompt, output = 200, 2000
    cfg = InferenceConfig(prompt=prompt, output=output, weights="bf16", engine="sglang@0.5.3")
    execution = execution_for(h100, cfg)
    model = replica_model(llama8b, h100, cfg, 1024, execution)
    assert model.kv_tokens and model.output_reserve == execution.load_policy.output_reserve
    run = simulate(model, 1e6, prompt, output, requests=2000)
    estimate = serving_load(llama8b, h100, cfg, RequestMix(input_tokens=prompt, output_tokens=output), Load(),
                            execution=execution)
    assert run.mean_batch < 0.5 * model.max_batch
    assert run.mean_batch == pytest.approx(estimate.running.typical, rel=0.25)


def test_an_engine_without_the_reserve_keeps_its_max_batch_alone(h100, llama8b):
    cfg = InferenceConfig(prompt=200, output=2000, weights="bf16", engine="vllm")
    model = replica_model(llama8b, h100, cfg, 256, execution_for(h100, cfg))
    assert model.kv_tokens is None and model.output_reserve is None


def test_a_pool_that_cannot_bind_steps_as_the_cap_alone(h100, llama8b):
    """A pool that holds max_batch of the largest requests and each one's output again beside them is stepped without
    its books (plan/capacity.py): the run is the one the pool would give, just below that bound too."""
    from dataclasses import replace

    prompt, output = 200, 200
    cfg = InferenceConfig(prompt=prompt, output=output, weights="bf16", engine="sglang@0.5.3")
    model = replica_model(llama8b, h100, cfg, 138, execution_for(h100, cfg))
    bound = model.max_batch * (prompt + 2 * output) + prompt + output
    assert model.kv_tokens >= bound
    for rate in (30.0, 1e6):
        free = simulate(model, rate, prompt, output, requests=1000)
        pooled = simulate(replace(model, kv_tokens=bound - 1), rate, prompt, output, requests=1000)
        assert free.ttft.values == pooled.ttft.values and free.e2e.values == pooled.e2e.values
