"""The planner's batch generation jobs are static batches (every prompt handed over at once, nothing serves them):
a TensorRT-LLM job is priced as the in-process run (`--engine-opt offline`: trtllm-bench's padded decode graphs),
not trtllm-serve's unpadded capture (a max batch of another size than 1-31, 64, 128 launched eagerly). Sources:
data/engines/tensorrt-llm.yaml (cuda_graph_max_bs.serve, cuda_graph_padding.serve)."""

import pytest

from sizeup.hardware.catalog import load_catalog


def test_the_planners_batch_job_is_priced_in_process():
    from sizeup.ingest.hf_config import load_model
    from sizeup.plan.recommend import plan_scenario
    from sizeup.plan.scenario import parse_scenario
    from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for

    plan = plan_scenario(parse_scenario({
        "name": "b", "model": "llama-3.1-8b", "task": "batch", "job": {"tokens": 1_000_000_000},
        "traffic": {"prompt_tokens": 512, "output_tokens": 256},
        "constraints": {"devices": ["h100-sxm-80gb"], "engines": ["tensorrt-llm"], "quantizations": ["bf16"],
                        "max_gpus": 1}}), load_catalog(include_user=False))
    chosen = plan.chosen
    assert chosen is not None and chosen.engine == "tensorrt-llm"
    cfg = InferenceConfig(prompt=512, output=256, weights="bf16", engine="tensorrt-llm", batch=chosen.max_batch,
                          engine_options=("offline",))
    e = estimate_inference(load_model("llama-3.1-8b"), chosen.device, cfg,
                           execution=execution_for(chosen.device, cfg))
    rate = e.decode.tokens_per_s.typical * 256 / (256 + e.prefill.latency_s.typical / e.decode.latency_s.typical)
    assert chosen.detail["tokens_per_s"] == pytest.approx(rate)
