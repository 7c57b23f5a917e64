"""vLLM's KV admission and preemption (data/engines/vllm.yaml kv_preempt_recompute, kv_admission_watermark; engines/
base.py load_policy): admitted on the prompt's pages, the latest admitted preempted and recomputed when the pool
runs out; V0's block manager keeps 1% of the blocks free at admission (vllm/core/block_manager_v1.py watermark=0.01),
V1's scheduler none."""

from __future__ import annotations

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog

H100 = load_catalog(include_user=False).device("h100-sxm-80gb")


def test_vllm_admits_on_the_prompt_and_preempts_by_recompute():
    v1, v0 = resolve("vllm@0.11.0", H100).load_policy, resolve("vllm@0.5.4", H100).load_policy
    assert v1.preempts and v1.kv_watermark == 0.0
    assert v0.preempts and v0.kv_watermark == 0.01
    assert v1.to_dict()["preempts"] is True


def test_an_engine_that_reserves_the_whole_output_never_preempts():
    policy = resolve("trtllm", H100).load_policy
    assert policy.reserve_to_completion and not policy.preempts
