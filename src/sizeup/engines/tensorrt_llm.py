"""TensorRT-LLM (data/engines/tensorrt-llm.yaml), its PyTorch backend: decode-only batches replayed from CUDA graphs
(`decode_overhead_s` per kernel) and the executor's host time per iteration (`step_overhead_s`); memory allocated
as the request needs it, attention through its fused kernels.
"""

from __future__ import annotations

from sizeup.engines.base import Batching, ExecutionModel, engine


@engine("tensorrt-llm", "trtllm", "trt-llm")
class TensorRTLLM(ExecutionModel):
    FORMATS = ("bf16", "fp8", "awq-int4")
    NATIVE_FP8_ONLY = True

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="continuous", chunked_prefill=False,
                        basis="in-flight batching: the executor adds and retires requests at every iteration")
