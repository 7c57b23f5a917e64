"""Ollama (data/engines/ollama.yaml): llama.cpp underneath (engines/llama_cpp.py: its kernels, backends and memory
policy), with Ollama's own defaults stated per release: the default tag's weights (Q4_K_M: the first of FORMATS, so
an estimate without `--quant` takes it where it fits), the context every loaded model gets (`num_ctx`: 2048, then
4096 from v0.6.7, then chosen by the GPU's memory from v0.15.5), `num_parallel` slots of it, and an f16 KV cache.

The cache is allocated for num_ctx x num_parallel tokens when the request needs less (a longer `--context` is what
a user sets num_ctx to); llama.cpp's kernels price the speed. A release is Ollama's (`ollama@0.6.7`); the llama.cpp
build it bundles is llama.cpp's current one.

Layers on the GPU: Ollama picks them itself from the GPU's free memory (`auto_gpu_layers`), as its scheduler does
(ollama/ollama llm/memory.go EstimateGPULayers up to v0.12.10; from v0.12.11 llm/server.go buildLayout /
assignLayers / greedyFit): the GPU keeps a minimum (457 MiB on CUDA/ROCm, 512 MiB on Metal) and the compute graph,
then takes whole layers (weights plus their KV cache at num_ctx x num_parallel) from the last one down while they
fit, the output layer last (dropped first when not all fit); the rest run on the CPU. `--gpu-layers N` or
`--engine-opt num_gpu=N` (Ollama's own option) names the count instead.
"""

from __future__ import annotations

from sizeup.engines.base import engine
from sizeup.engines.llama_cpp import LlamaCpp
from sizeup.engines.profile import release_key
from sizeup.errors import ConfigError

GIB = 1 << 30
MIB = 1 << 20


@engine("ollama")
class Ollama(LlamaCpp):
    FORMATS = ("q4_k_m", "q8_0", "f16")
    OPTIONS = frozenset({"gpu_layers", "threads", "backend"})
    FORMAT_NAMES = {}
    """Not llama.cpp's `mxfp4` -> mxfp4_moe: Ollama's own gpt-oss blobs keep the non-expert tensors 16-bit
    (ollama.com/library/gpt-oss: gpt-oss:20b 14GB, gpt-oss:120b 65GB, read 2026-12-06; the MXFP4_MOE GGUFs are
    12.1 GB and, by sizeup's MXFP4_MOE rule, 63.4 GB), so `--quant mxfp4` there stays MXFP4 experts with bf16
    elsewhere."""
    ENGINE_OPTIONS = {"num-gpu": "num_gpu"}
    """`num_gpu` (Ollama's option: layers to offload; -1 or absent: Ollama decides from free memory)."""

    @classmethod
    def build(cls, device, version=None, *, backend=None, build_date=None, settings=None):
        if build_date is not None:
            raise ConfigError("--build-date names a llama.cpp build; Ollama bundles its own: name an Ollama release "
                              "(--engine ollama@0.6.7)")
        model = super(LlamaCpp, cls).build(device, version, backend=backend, settings=settings)
        from sizeup.engines.kernels import check_backend

        check_backend(backend, device)
        return model

    @classmethod
    def check_version(cls, version: str) -> None:
        try:
            release_key(version)
        except ValueError:
            raise ConfigError(f"--engine ollama@{version}: an Ollama release is like 0.6.7") from None
        super(LlamaCpp, cls).check_version(version)

    def default_context(self, arch) -> tuple[int, str]:
        """Ollama's num_ctx for this device and release, capped at the model's context, and why."""
        total = self.device.memory_bytes or 0
        ctx, why = int(self.profile.value("num_ctx", 2048)), "its default num_ctx"
        for key, floor in (("num_ctx_48gib", 48), ("num_ctx_24gib", 24)):
            tier = int(self.profile.value(key, 0))
            if tier and total >= floor * GIB:
                ctx, why = tier, f"its num_ctx for {floor} GiB of GPU memory and more"
                break
        limit = arch.max_context or ctx
        return min(ctx, limit), why

    def flash_attention(self) -> bool:
        """Ollama runs without flash attention unless OLLAMA_FLASH_ATTENTION is set (ollama.yaml)."""
        return bool(self.profile.value("flash_attention", 0))

    def slots(self, arch, weights, context: int, gpus: int) -> tuple[int, str]:
        """num_parallel for this release and the sentence saying why: the release's default, or 1 where that
        release falls back to one slot when the default's cache keeps the model from fitting whole on the GPU."""
        slots = int(self.profile.value("num_parallel", 1))
        ctx, _ = self.default_context(arch)
        cache = max(ctx, context)
        if slots > 1 and self.profile.value("num_parallel_fallback", 0) and self.device.kind in ("gpu", "soc"):
            from sizeup.engines.ollama_fit import whole_on_gpu

            if not whole_on_gpu(self, arch, weights, cache * slots, gpus):
                return 1, (f"{slots} parallel slots would keep the model from fitting whole on {self.device.id}: "
                           f"Ollama {self.version} falls back to 1 (server/sched.go pickBestFitGPUs)")
            return slots, f"Ollama {self.version}'s default parallelism, the model fitting whole with it"
        return slots, f"Ollama {self.version}'s default OLLAMA_NUM_PARALLEL"

    def cache_cells(self, request) -> tuple[int, str | None]:
        """num_ctx x num_parallel cells whatever the request uses (a longer --context is the num_ctx a user sets)."""
        slots, slots_why = self.slots(request.arch, request.weights, request.context, 1)
        ctx, why = self.default_context(request.arch)
        held = max(ctx, request.context) * slots
        if held <= request.context * request.batch:
            return request.context * request.batch, None
        return held, (f"ollama {self.version}: the KV cache is allocated for {ctx} tokens ({why}) x {slots} parallel "
                      f"slot(s) ({slots_why}) = {held} tokens, f16, whatever the request uses")

    def auto_gpu_layers(self, arch, weights, context: int, batch: int, gpus: int) -> tuple[int, str] | None:
        """Layers Ollama's scheduler offloads to the GPU for this request when none are named, and the sentence that
        says where they went; None where every layer fits (nothing to say) or the device is a CPU."""
        from sizeup.engines.ollama_fit import ollama_gpu_layers

        asked = self.profile.value("num_gpu", -1)
        n = arch.num_layers
        if asked is not None and asked >= 0:
            on_gpu = min(int(asked), n)
            return on_gpu, (f"ollama: num_gpu={int(asked)} (--engine-opt): {on_gpu} of {n} layers on "
                            f"{self.device.id}, {n - on_gpu} on the CPU")
        if self.device.kind not in ("gpu", "soc"):
            return None
        ctx, why = self.default_context(arch)
        slots, _ = self.slots(arch, weights, context, gpus)
        fit = ollama_gpu_layers(self, arch, weights, max(ctx, context) * slots, gpus)
        return fit if fit[0] < n else None
