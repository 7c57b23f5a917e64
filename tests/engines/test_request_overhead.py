"""The request's path outside the GPU steps (engines/base.py ExecutionModel.request_overhead and
Batching.first_token_lag_steps), read from data/engines/*.yaml by release."""

import pytest

from sizeup.engines import resolve
from sizeup.hardware.catalog import load_catalog

A100 = load_catalog().device("a100-sxm-80gb")


def test_vllm_and_sglang_front_ends_are_sourced_figures():
    # vLLM: bare `vllm serve` TTFT p50 16.9 ms at c=1 less a 0.5B prefill of 5 (7) ms (ray-project/ray PR #64534);
    # SGLang: 9.54 ms median TTFT less a 2.632 ms mock forward (tenstorrent/tt-inference-server #3560)
    vllm, _ = resolve("vllm", A100).request_overhead()
    assert (vllm.low, vllm.typical, vllm.high) == pytest.approx((0.010, 0.012, 0.0169), abs=2e-4)
    sglang, said = resolve("sglang@0.3", A100).request_overhead()
    assert sglang.typical == pytest.approx(0.00954 - 0.002632, abs=1e-4) and sglang.low < sglang.typical < sglang.high
    assert "6.9 ms" in said and "TTFT" in said and "after its prefill" not in said  # 0.3: no overlap
    assert "leaves 1 step after its prefill" in resolve("sglang@0.4", A100).request_overhead()[1]


def test_an_in_process_run_or_a_release_without_data_adds_nothing():
    # TensorRT-LLM in-process (--engine-opt offline: trtllm-bench, an MLPerf harness) has no HTTP front end; releases
    # before 1.0 state 0 (no trtllm-serve figure read for them); trtllm-serve itself: tests/engines/test_tensorrt_llm_serve.py
    assert resolve("tensorrt-llm", A100, settings={"offline_frontend": 1.0}).request_overhead() is None
    assert resolve("tensorrt-llm@0.12", A100).request_overhead() is None
    assert resolve("tensorrt-llm", A100).load_policy.first_token_lag_steps == 0


@pytest.mark.parametrize("spec, lag", [("vllm@0.5", 0), ("vllm@0.6", 1), ("vllm@0.7", 1), ("vllm@0.8", 0),
                                       ("vllm", 0), ("sglang@0.3", 0), ("sglang@0.4", 1), ("sglang", 1)])
def test_first_token_lag_follows_async_output_processing_by_release(spec, lag):
    # vLLM V0's async output processing came with 0.6.0 (V1 from 0.8); SGLang's overlap scheduler with 0.4
    model = resolve(spec, A100)
    assert model.load_policy.first_token_lag_steps == lag and model.batching.first_token_lag_steps == 0
