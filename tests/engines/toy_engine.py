"""A whole engine in one file: what a new engine adds to sizeup (tests/engines/test_one_file_per_engine.py registers
it and estimates through it). Its settings live here rather than in data/engines/ so the file stands alone; a real
engine reads them from data/engines/NAME.yaml with a source per value.

The toy engine runs its matrix products at a fixed half of the fp16 peak, pays 1 ms of host time per step, batches
continuously with chunked prefill, and reserves a fixed 1 GiB beside what the request allocates."""

from __future__ import annotations

from dataclasses import replace

from sizeup.engines.base import Batching, ExecutionModel, engine
from sizeup.engines.kernels import Kernel
from sizeup.engines.profile import EngineProfile, Versions
from sizeup.engines.reserve import allocate_on_demand
from sizeup.ranges import Range
from sizeup.units import GIB

NAME = "toy-engine"
RESERVE_BYTES = GIB
STEP = Range(1e-3, 1e-3, 1e-3)
GEMM = Kernel(NAME, "toy-gemm", "a fixed half of the fp16 peak", "fp16", Range(0.5, 0.5, 0.5), "by construction",
              "tests/engines/toy_engine.py", table="toy_engine.py")
PROFILE = EngineProfile(id=NAME, description="a fixture engine", ranges={"step_overhead_s": STEP},
                        versions=Versions(default="2.0", first="1.0", source="tests/engines/toy_engine.py"))


@engine(NAME, "toy")
class ToyEngine(ExecutionModel):
    FORMATS = ("bf16", "int8")

    @classmethod
    def profile_at(cls, version: str | None) -> EngineProfile:
        return replace(PROFILE, version=version or PROFILE.versions.default)

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        return GEMM

    def memory(self, request):
        m = allocate_on_demand(request, tower=(True, "the toy engine's fused attention", 0), allocator=None)
        return replace(m, overhead_bytes=m.overhead_bytes + RESERVE_BYTES, notes=(*m.notes, "toy engine: 1 GiB held"),
                       fits=m.total_bytes + RESERVE_BYTES <= request.usable.typical)

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="continuous", chunked_prefill=True, max_batched_tokens=4096, max_sequences=64,
                        basis="by construction")
