"""A replica whose tensor-parallel group spans nodes pays the inter-node collectives in the planner's decode steps
exactly as the estimate does (plan/replica.py: workload/tensor_parallel.py tensor_parallel_comm with the estimate's
node layout, workload/nodes.py). Before, the planner priced such a group as one NVLink domain."""

from __future__ import annotations

import pytest

from sizeup.hardware.catalog import load_catalog
from sizeup.ingest.load import load_model
from sizeup.plan.serving import replica_model
from sizeup.workload.inference import InferenceConfig, execution_for
from sizeup.workload.serving import RequestMix
from sizeup.workload.serving_steps import Steps

H100 = load_catalog(include_user=False).device("h100-sxm-80gb")


def _steps(engine: str, gpus_per_node: int | None) -> tuple[dict[int, float], dict[int, float]]:
    """(the planner's GPU step time, the estimate's decode step) by batch, 16 H100s."""
    arch = load_model("llama-3.3-70b")
    cfg = InferenceConfig(prompt=512, output=256, weights="bf16", engine=engine, gpus=16, gpus_per_node=gpus_per_node)
    execution = execution_for(H100, cfg)
    replica = replica_model(arch, H100, cfg, 64, execution)
    steps = Steps(arch, H100, cfg, execution, RequestMix(input_tokens=512, output_tokens=256))
    return (dict(zip(replica.decode_batches, replica.gpu_step_s)),
            {b: steps.sequences(b, "typical") for b in replica.decode_batches})


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_group_across_two_nodes_costs_the_planner_what_it_costs_the_estimate(engine):
    planner, estimate = _steps(engine, None)  # two boards of 8 (comm.yaml nodes)
    planner_one, estimate_one = _steps(engine, 16)  # one node of 16: the NVLink domain
    for b in planner:
        extra = estimate[b] - estimate_one[b]
        assert extra > 1e-3  # 122 two-level all-reduces at the network's latency and more
        assert planner[b] - planner_one[b] == pytest.approx(extra, rel=1e-9)
