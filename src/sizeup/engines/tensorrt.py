"""A plain TensorRT engine (data/engines/tensorrt.yaml), e.g. NVIDIA's BERT demo: fused layers and plugins enqueued
from C++, no serving executor. Its kernels run under the `tensorrt` runtime of data/efficiency/overheads.yaml (per-op
host time, elementwise ops and inference batch norms folded into the matrix kernel before them); no step overhead.
"""

from __future__ import annotations

from sizeup.engines.base import Batching, ExecutionModel, engine


@engine("tensorrt")
class TensorRT(ExecutionModel):
    FORMATS = ("fp16", "int8")

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="static", basis="one execute call per batch of inputs")
