"""MLX (mlx-lm on Apple silicon; data/engines/mlx.yaml). A release is mlx-lm's (`mlx@0.21.4`), with the MLX it
requires.

Kernels: group-wise quantized weights (`mlx-q4`/`q6`/`q8`: affine, group 64, a 16-bit scale and bias per group,
formats.py) run MLX's quantized mat-vec at decode (one pass over the packed weights) and its quantized matmul at
prefill; bf16/fp16 weights its steel GEMM. Their fractions of the Apple GPU's fp32 peak and of its bandwidth are the
engine's own settings (engines/settings_kernels.py); each kernel is encoded into a Metal command buffer at MLX's
per-op host cost (the `mlx` runtime of overheads.yaml).

Memory: unified memory, of which mlx-lm wires up to Metal's recommendedMaxWorkingSetSize for the run
(`mx.set_wired_limit(max_recommended_working_set_size)` in mlx_lm/generate.py): the usable memory of the Apple class
(data/efficiency/usable_memory.yaml soc-apple). The prompt is computed `prefill_step_size` tokens at a time, the KV
cache grows in steps of 256 tokens, and before mlx-lm's causal-mask update (`fused_prefill_attention` 0) one layer's
scores of a chunk against the whole context are materialised; head sizes the fused kernel lacks always are.
"""

from __future__ import annotations

from typing import ClassVar

from sizeup.engines.base import Batching, ExecutionModel, engine
from sizeup.engines.reserve import InferenceMemory
from sizeup.engines.settings_kernels import settings_kernel
from sizeup.ingest.arch import ModelArch
from sizeup.ranges import Range

KV_STEP = 256
"""Tokens a KVCache grows by (mlx_lm/models/cache.py KVCache.step = 256)."""
FUSED_HEAD_DIMS = (64, 80, 128)
"""Head sizes MLX's fused prefill attention (steel_attention) is built for; others run matmul + softmax + matmul."""


@engine("mlx", "mlx-lm", "mlx_lm")
class MLX(ExecutionModel):
    FORMATS = ("bf16", "mlx-q8", "mlx-q6", "mlx-q4")
    FORMAT_NAMES = {f"{spell}": (f"mlx-q{bits}", f"mlx-community's '-{bits}bit' checkpoints: mlx_lm.convert -q "
                                                 f"--q-bits {bits}, group 64, affine")
                    for bits in (2, 3, 4, 6, 8) for spell in (f"{bits}bit", f"q{bits}", f"int{bits}")}

    @classmethod
    def build(cls, device, version=None, *, backend=None, build_date=None, settings=None) -> ExecutionModel:
        from sizeup.errors import ConfigError

        if device.vendor != "apple" or device.kind != "soc":
            raise ConfigError(f"--engine mlx runs on Apple silicon GPUs (Metal); {device.id} is a {device.vendor} "
                              f"{device.kind} (expected an apple-m* device)")
        return super().build(device, version, backend=backend, build_date=build_date, settings=settings)

    COLD_START: ClassVar[bool] = True
    """Whether the prompt's time includes a fresh process's first call (mlx_lm.generate's prompt rate does)."""

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        return settings_kernel(self, weights, decode, peak="vector", name="mlx")

    def step_overhead(self, arch: ModelArch, decode: bool) -> Range | None:
        """At decode none beyond the kernels' own (mlx-lm builds step n+1's graph while step n runs: async_eval); the
        prompt of a fresh process also pays MLX's first call (`cold_start_s`: Metal pipelines built for every kernel
        the model runs), which mlx_lm.generate's reported prompt rate includes."""
        return self.profile.range("cold_start_s") if self.COLD_START and not decode else None

    def phase_notes(self, arch: ModelArch, decode: bool) -> tuple[str, ...]:
        cold = self.step_overhead(arch, decode)
        if cold is None:
            return ()
        return (f"{self.NAME}: the prompt of a fresh process (mlx_lm.generate) includes MLX's first call, "
                f"+{cold.typical:.2f} s (compiling and loading the Metal kernels); a warmed-up run (mlx_lm.server "
                f"after its first request, mlx_lm.benchmark's timed trials) does not pay it: --engine mlx-warm",)

    def memory(self, request):
        notes: list[str] = []
        step = int(self.profile.value("prefill_step_size", 2048))
        chunk = min(step, request.prompt)
        kv = request.kv_per_sequence(KV_STEP) * request.batch
        activations = request.activation_peak(chunk * request.batch, request.batch)
        attending = [layer.attention for layer in request.arch.layers if layer.attention.head_dim]
        fused = bool(self.profile.value("fused_prefill_attention", 1))
        if attending:
            widest = max(attending, key=lambda a: a.heads)
            if fused and widest.head_dim in FUSED_HEAD_DIMS:
                notes.append(f"attention: MLX's fused prefill attention (head size {widest.head_dim}): no s² tensors")
            else:
                why = (f"head size {widest.head_dim} has no fused kernel (built for {FUSED_HEAD_DIMS})" if fused else
                       f"mlx-lm {self.version} passes an explicit causal mask, which the fused kernel does not take")
                activations += request.act_bytes * request.batch * widest.heads * chunk * request.prompt
                notes.append(f"attention: {why}: one layer's scores of a {chunk}-token chunk against the "
                             f"{request.prompt}-token prompt are materialised")
        activations = request.with_tower(activations, fused, 0, "MLX fast SDPA", notes)
        held = self._inflight(request, chunk)
        if held:
            activations += held[0]
            notes.append(held[1])
        notes.append(f"mlx-lm: the prompt in chunks of {step} tokens (prefill_step_size), the KV cache grown in "
                     f"steps of {KV_STEP} tokens; weights wired up to Metal's recommendedMaxWorkingSetSize "
                     f"(the usable memory)")
        usable = request.usable.typical
        if request.weights_bytes > 0.9 * usable:
            notes.append("mlx-lm warns when the weights exceed 90% of the recommended working set: generation may "
                         "page and be slower than priced")
        total = request.weights_bytes + kv + activations
        return InferenceMemory(weights_bytes=request.weights_bytes, kv_cache_bytes=kv, kv_cache_needed_bytes=kv,
                               activations_bytes=activations, overhead_bytes=0, usable_bytes=request.usable,
                               fits=total <= usable, cpu_bytes=0, notes=tuple(notes))

    def _inflight(self, request, chunk: int) -> tuple[int, str] | None:
        """Activations the prompt step's Metal command buffers keep alive: MLX hands every op's input buffers to its
        command buffer's completion handler (mlx/backend/metal/eval.cpp), commits a buffer once its inputs pass
        `max_mb_per_buffer` (mlx/backend/metal/device.cpp: 40 MB on base and Pro chips, 50 on Max and Ultra) and lets
        `max_active_tasks` + 1 run at once (mlx/transforms.cpp MAX_ACTIVE_TASKS = 10): that many buffers' inputs, less
        the share that is weights (alive anyway), are held beyond the one layer priced."""
        arch = request.arch
        attending = [layer.attention for layer in arch.layers if layer.attention.head_dim]
        if not attending or not arch.num_layers:
            return None
        a, inter = attending[0], max(layer.mlp.intermediate for layer in arch.layers)
        # per layer: input, norm, attention output, o-proj / residual; q, k, v; gate, up, activation, product
        per_token = 4 * arch.hidden + a.heads * a.head_dim + 2 * a.kv_heads * a.head_dim + 4 * inter
        act = chunk * request.batch * per_token * request.act_bytes
        weights = request.weights_bytes / arch.num_layers
        big = any(word in f"{self.device.id} {self.device.name}".lower() for word in ("max", "ultra"))
        per_buffer = self.profile.value("command_buffer_mb_max_ultra" if big else "command_buffer_mb", 40) * 1e6
        buffers = self.profile.value("max_active_tasks", 10) + 1
        held = int(buffers * per_buffer * act / (act + weights))
        return held, (f"MLX keeps each command buffer's inputs until the GPU completes it: {buffers:g} buffers of "
                      f"~{per_buffer / 1e6:g} MB in flight (MAX_ACTIVE_TASKS + 1, max_mb_per_buffer), "
                      f"{act / (act + weights):.0%} of them the prompt chunk's activations: +{held / 2**20:,.0f} MiB "
                      f"at the prompt step's peak")

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="static", max_batched_tokens=int(self.profile.value("prefill_step_size", 2048)),
                        basis="mlx_lm.generate runs one prompt to its last token; the prompt is computed "
                              "prefill_step_size tokens per step (mlx_lm/generate.py generate_step)")


@engine("mlx-warm", "mlx-server", "mlx-benchmark")
class MLXWarm(MLX):
    """mlx-lm after a warm-up (mlx_lm.server past its first request, mlx_lm.benchmark's timed trials): the same
    kernels and memory, the prompt without the first call's cost."""

    DATA = "mlx"
    COLD_START = False
