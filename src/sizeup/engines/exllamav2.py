"""ExLlamaV2 and ExLlama (v1): single-user GPTQ / EXL2 inference on CUDA (data/engines/exllamav2.yaml, exllama.yaml).

Weights stay packed (GPTQ 4-bit, or EXL2 at a stated average bits per weight: `--quant exl2-4.65bpw`, formats.py)
and batch-1 decode runs the engine's own fused quantized mat-vec (q_gemm/q_matrix), one pass over the packed
weights, at the fraction of the card's bandwidth its data file states per memory class; a prompt is reconstructed
to fp16 per layer and multiplied with cuBLAS (exllamav2 ext_c q_matrix `reconstruct` above a row threshold), at
`prefill_matmul_quantized` of the fp16 tensor peak. Kernels are launched eagerly from Python and C++ (no CUDA
graph): the GPU kind's per-launch cost applies. Several GPUs hold consecutive layers (`gpu_split`, the engines'
placement: base.py MULTI_GPU 'layers'), so `--gpus N` adds memory, not speed. v1 (`exllama`) is its own engine: an older kernel set, measured
slower than v2 on the same cards.
"""

from __future__ import annotations

from sizeup.engines.base import Batching, ExecutionModel, engine
from sizeup.engines.settings_kernels import settings_kernel
from sizeup.errors import ConfigError


@engine("exllamav2", "exl2", "exllama2")
class ExLlamaV2(ExecutionModel):
    MULTI_GPU = "layers"  # gpu_split: consecutive layers per GPU (ExLlamaV2's default placement)
    FORMATS = ("fp16", "exl2-8bpw", "exl2-6bpw", "exl2-5bpw", "exl2-4.65bpw", "gptq-int4", "exl2-4bpw",
               "exl2-3bpw", "gptq-int4-g32")

    @classmethod
    def build(cls, device, version=None, *, backend=None, build_date=None, settings=None) -> ExecutionModel:
        if device.vendor not in ("nvidia", "amd") or device.kind not in ("gpu", "soc"):
            raise ConfigError(f"--engine {cls.NAME} runs on CUDA (and ROCm) GPUs; {device.id} is a {device.vendor} "
                              f"{device.kind}")
        return super().build(device, version, backend=backend, build_date=build_date, settings=settings)

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        return settings_kernel(self, weights, decode, peak="fp16", name=self.NAME)

    def missing_kernel_note(self, weights: str, decode: bool) -> str | None:
        return (f"{'decode' if decode else 'prefill'}: no {self.NAME} fraction fitted for {self.device.id} "
                f"(data/engines/{self.DATA or self.NAME}.yaml): priced at the {self.device.kind} default efficiency")

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="static", basis="one generator, one sequence at a time (single-user inference)")


@engine("exllama", "exllamav1")
class ExLlama(ExLlamaV2):
    """ExLlama v1 (turboderp/exllama, 2023): GPTQ only."""

    FORMATS = ("gptq-int4", "gptq-int4-g0", "gptq-int4-g32")

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        """A prompt's reconstructed fp16 weights are multiplied by cublasHgemm from the 2023-06-04 refactor on
        (exllama_ext q4_matmul_recons_cuda, commit ba8666c): fp16 accumulation, twice the fp32-accumulate tensor rate
        of a GeForce card; before it torch.matmul (fp32 accumulate). `prefill_fp16_accumulate` says which."""
        acc16 = not decode and self.profile.value("prefill_fp16_accumulate", 0)
        return settings_kernel(self, weights, decode, peak="fp16_acc16" if acc16 else "fp16", name=self.NAME)
