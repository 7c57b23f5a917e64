"""MLC-LLM (data/engines/mlc.yaml): models compiled by TVM for CUDA, ROCm, Vulkan or Metal, Jetson boards included.

Weights in MLC's own layouts (`mlc-q4f16_1`: 4-bit, group 32, an fp16 scale per group, embedding and head
quantized; `mlc-q4f16_ft`: FasterTransformer int4 per channel; fp16; formats.py). Batch-1 decode runs TVM's fused
dequantize + mat-vec, one pass over the packed weights, replayed as a CUDA graph on CUDA; its bandwidth fraction
per memory class is the engine's setting (engines/settings_kernels.py), as is the prompt's GEMM fraction of the
fp16 tensor peak. `--backend` names the build's runtime (cuda, hip for ROCm, vulkan, metal); a backend without a
fitted fraction keeps the device default and says so. Tensor parallelism (`--gpus N`) is MLC's own (NCCL/RCCL
all-reduce per layer): its compiler's default all-reduce strategy is NCCL's ring (mlc-ai/mlc-llm PR #1990: the
`allreduce-strategy` flag "defaults to ring"; the one-shot / two-shot CUDA-IPC kernels from TensorRT-LLM only when asked
for, and by PR #2706 at `--opt O3`), which is what sizeup prices, and the estimate says so.

On Metal there is no graph replay: TVM's Metal runtime opens, encodes and commits one MTLCommandBuffer per kernel
launch (apache/tvm src/runtime/metal/metal_module.mm, MetalWrappedFunc::operator(): `stream->GetCommandBuffer`,
`computeCommandEncoder`, `dispatchThreadgroups`, `endEncoding`, `commit` for every call), so each kernel of a step
pays a command buffer's cost on the GPU's timeline (`metal_command_buffer_s`), added to the step (`step_extra`).
The kernels are the ledger's ops as MLC builds the model (python/mlc_llm/model/llama/llama_model.py: one
`qkv_proj`, one `gate_up_proj`, so q/k/v and gate/up are one kernel each).
"""

from __future__ import annotations

from sizeup.engines.base import Batching, ExecutionModel, TensorParallel, engine
from sizeup.engines.settings_kernels import settings_kernel
from sizeup.errors import ConfigError
from sizeup.ledger import OpKind

BACKENDS = {"nvidia": ("cuda", "vulkan"), "amd": ("hip", "vulkan"), "apple": ("metal",), "intel": ("vulkan",)}
"""Runtimes MLC-LLM builds a model for, by vendor (mlc_llm compile --device cuda|rocm|vulkan|metal)."""
NATIVE = {"nvidia": "cuda", "amd": "hip", "apple": "metal", "intel": "vulkan"}
FUSED_PROJECTIONS = (".k_proj", ".v_proj", ".up_proj")
"""Ledger ops MLC runs inside another kernel: k and v in `qkv_proj`, up in `gate_up_proj` (llama_model.py)."""


@engine("mlc", "mlc-llm", "mlc_llm")
class MLC(ExecutionModel):
    FORMATS = ("fp16", "mlc-q4f16_1", "mlc-q4f16_ft")
    OPTIONS = frozenset({"backend"})

    @classmethod
    def build(cls, device, version=None, *, backend=None, build_date=None, settings=None) -> ExecutionModel:
        can = BACKENDS.get(device.vendor, ()) if device.kind in ("gpu", "soc") else ()
        if not can:
            raise ConfigError(f"--engine mlc runs on GPUs (CUDA, ROCm, Vulkan, Metal); {device.id} is a "
                              f"{device.vendor} {device.kind}")
        if backend is not None and backend not in can:
            raise ConfigError(f"--backend {backend}: MLC-LLM runs {device.id} ({device.vendor}) with "
                              f"{' or '.join(can)}")
        model = super().build(device, version, settings=settings)
        if backend is None or backend == NATIVE[device.vendor]:
            return model
        return cls(device=device, profile=model.profile, backend=backend, notes=(
            *model.notes, f"MLC-LLM built for {backend} (--backend; {device.id}'s default: {NATIVE[device.vendor]})"))

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        if self.backend is not None:
            return None  # fractions were fit on the native runtime only
        return settings_kernel(self, weights, decode, peak="fp16", name="mlc")

    def missing_kernel_note(self, weights: str, decode: bool) -> str | None:
        if self.backend is None:
            return None
        return (f"{'decode' if decode else 'prefill'}: MLC-LLM on {self.backend}: no fitted fraction for this "
                f"runtime, priced at the {self.device.kind} default efficiency (derived)")

    def step_extra(self, arch, ledger, weights: str, decode: bool, tokens: int):
        """On Metal: one command buffer per kernel (TVM's Metal runtime), each at `metal_command_buffer_s`."""
        per = self.profile.range("metal_command_buffer_s")
        if (self.backend or NATIVE.get(self.device.vendor)) != "metal" or per is None:
            return None
        kernels = sum(op.count for op in ledger.ops if op.kind != OpKind.VIEW
                      and not op.scope.endswith(FUSED_PROJECTIONS))
        t = per.scale(kernels)
        return t, (f"MLC-LLM on Metal: TVM's Metal runtime commits one command buffer per kernel; {kernels:,} kernels "
                   f"a step (q/k/v and gate/up fused as MLC builds them) x {per.typical * 1e6:.0f} us "
                   f"({per.low * 1e6:.0f}-{per.high * 1e6:.0f}) = {t.typical * 1e3:,.1f} ms")

    def tensor_parallel(self, link_kind: str, gpus: int) -> TensorParallel | None:
        note = (f"MLC-LLM tensor parallelism over {gpus} GPUs: NCCL's ring all-reduce per layer, the compiler's "
                f"default strategy (custom one-shot / two-shot kernels only with --opt allreduce-strategy or O3, not "
                f"modelled)")
        return TensorParallel(notes=(note,))

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="continuous", basis="MLC-LLM's serve engine batches requests continuously "
                                                       "(mlc_llm serve); a chat or bench run is one sequence")
