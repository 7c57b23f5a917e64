"""TensorRT-LLM's executor loop (data/engines/tensorrt-llm.yaml schedule_ahead_steps): from 1.0 the PyTorch executor's
overlap scheduler forms step n+1 before step n ends, so under load an arriving request waits one step more; the C++
executor of 0.x fetches new requests between steps; an idle engine schedules a lone request at once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sizeup.api import estimate
from sizeup.engines import resolve
from sizeup.engines.policies import Batching
from sizeup.engines.tensorrt_llm import TensorRTLLM
from sizeup.hardware.catalog import load_catalog
from sizeup.workload.serving_runs import ahead, front

H200 = load_catalog(include_user=False).device("h200-sxm-141gb")


@pytest.mark.parametrize(("release", "steps"), [("1.0.0", 1), ("1.2", 1), ("0.21", 0), ("0.9.0", 0)])
def test_the_overlap_scheduler_forms_one_step_ahead_from_1_0(release, steps):
    policy = resolve(f"tensorrt-llm@{release}", H200).load_policy
    assert policy.schedule_ahead_steps == steps
    assert policy.first_token_lag_steps == 0  # the first token leaves as its own step ends
    assert policy.to_dict()["schedule_ahead_steps"] == steps


def test_the_step_formed_ahead_is_paid_only_where_others_keep_the_engine_stepping():
    policy = Batching(scheduling="continuous", schedule_ahead_steps=1)
    assert ahead(policy, 1.0) == 0.0  # a lone request: the loop waits on its queue, schedules it at once
    assert ahead(policy, 1.5) == pytest.approx(0.5)
    assert ahead(policy, 64.0) == 1.0
    assert front(None, policy, 0.1, "typical", 64.0) == pytest.approx(0.1)
    assert front(None, policy, 0.1, "typical") == 0.0
    assert ahead(Batching(scheduling="continuous"), 64.0) == 0.0


def test_under_a_request_rate_the_step_formed_ahead_adds_about_a_step_to_ttft(monkeypatch):
    kwargs = {"device": "h200-sxm-141gb", "quant": "fp8", "rps": 20.0, "prompt": 1000, "output": 200,
              "engine": "tensorrt-llm@1.2", "engine_options": ("offline",)}
    ahead_run = estimate("llama-3.1-8b", **kwargs).under_load
    policy = TensorRTLLM.load_policy.fget
    monkeypatch.setattr(TensorRTLLM, "load_policy", property(lambda m: replace(policy(m), schedule_ahead_steps=0)))
    between = estimate("llama-3.1-8b", **kwargs).under_load
    # many requests running: one more step (about a TPOT under load) before the prompt's own step
    assert ahead_run.ttft_s.typical - between.ttft_s.typical == pytest.approx(between.tpot_s.typical, rel=0.3)
    assert ahead_run.tpot_s.typical == pytest.approx(between.tpot_s.typical)


def test_at_concurrency_1_nothing_is_added():
    kwargs = {"device": "h200-sxm-141gb", "quant": "fp8", "concurrency": 1, "prompt": 1000, "output": 200,
              "engine_options": ("offline",)}
    run = estimate("llama-3.1-8b", engine="tensorrt-llm@1.2", **kwargs)
    assert run.under_load.ttft_s.typical < run.under_load.tpot_s.typical + run.prefill.latency_s.typical * 1.2
