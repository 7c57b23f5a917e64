"""TensorRT-LLM's CapacitySchedulerPolicy under `--engine-opt batch-scheduler-policy=...` (engines/tensorrt_llm.py
OPTION_WORDS; data/engines/tensorrt-llm.yaml kv_reserve_to_completion, kv_preempt_recompute): GUARANTEED_NO_EVICT (the
default) reserves each request's whole output; MAX_UTILIZATION admits on the prompt's blocks and pauses the latest
started, recomputed (capacityScheduler.cpp MaxUtilizationScheduler, LlmRequest::pause), as vLLM's preemption."""

from __future__ import annotations

import pytest

from sizeup.engines import resolve
from sizeup.engines.base import engine_settings
from sizeup.errors import ConfigError
from sizeup.hardware.catalog import load_catalog
from sizeup.workload.scheduler import run

H200 = load_catalog(include_user=False).device("h200-sxm-141gb")


def _policy(*opts: str):
    return resolve("tensorrt-llm", H200, settings=engine_settings("tensorrt-llm", opts) or None).load_policy


@pytest.mark.parametrize("word", ["max_utilization", "max_util", "MAX-UTILIZATION"])
def test_max_utilization_preempts_by_recompute_with_no_reserve(word):
    policy = _policy(f"batch-scheduler-policy={word}")
    assert policy.preempts and not policy.reserve_to_completion and policy.kv_watermark == 0.0
    assert policy.output_reserve is None  # vLLM's admit-on-prompt rule, not SGLang's output reserve


@pytest.mark.parametrize("opts", [(), ("batch-scheduler-policy=guaranteed_no_evict",),
                                  ("batch-scheduler-policy=no_evict",)])
def test_guaranteed_no_evict_is_the_default_and_never_preempts(opts):
    policy = _policy(*opts)
    assert policy.reserve_to_completion and not policy.preempts


@pytest.mark.parametrize("item", ["batch-scheduler-policy=static", "batch-scheduler-policy=1",
                                  "batch-scheduler-policy"])
def test_a_policy_the_engine_does_not_name_is_refused_naming_the_words(item):
    with pytest.raises(ConfigError, match="max_utilization"):
        engine_settings("tensorrt-llm", (item,))


def test_without_the_option_no_release_preempts():
    for release in ("0.21", "1.0", None):
        policy = resolve("tensorrt-llm" + (f"@{release}" if release else ""), H200).load_policy
        assert not policy.preempts


def test_a_pool_that_runs_out_pauses_the_latest_started_and_recomputes_it():
    # two requests of 10-token prompts and 20-token outputs in a pool of 45 tokens: both admitted on their prompts,
    # the pool runs out while both decode, the later one is paused and its prompt + generated tokens recomputed
    trace = run([(10, 20), (10, 20)], limit=8, budget=None, mixes=True, step=lambda d, p: 1.0 + 0.01 * p,
                decode=lambda b: 1.0, kv_tokens=45)
    assert trace.preempted >= 1
    assert trace.done[0] < trace.done[1]
