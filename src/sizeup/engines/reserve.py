"""What an engine holds in device memory for a request, and the policies engines share.

The pricing layer (price/memory.py) builds a `MemoryRequest`: the request (batch, context, prompt, formats,
tensor parallelism, offload, the tower's input), the usable memory of the device, the weights on it, and its
memory formulas bound to the model (KV bytes of one sequence, the activation peak of a forward step, a tower's
pass); an engine's `ExecutionModel.memory(request)` turns it into an `InferenceMemory` by its own policy. Two
policies are shared here:
- `allocate_on_demand`: everything allocated as the request needs it, the whole prompt one forward pass (hf,
  TensorRT-LLM, TensorRT), with the PyTorch caching allocator's reserve where the engine runs on PyTorch's;
- `whole_context_cache`: the KV cache allocated for the whole context and a compute buffer sized for one physical
  batch, layers not offloaded kept in CPU RAM (llama.cpp).
A pre-allocated pool (vLLM) is its engine's own (engines/vllm.py). A new engine with another policy (a unified
memory with a wired limit, a static fraction of the free memory) writes its own `memory` from the same request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sizeup.formats import WeightFormat
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.tower_ops import TowerInput
from sizeup.ranges import Range

__all__ = ["InferenceMemory", "MemoryRequest", "allocate_on_demand", "whole_context_cache", "device_total_bytes",
           "split_by_layers"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceMemory:
    weights_bytes: int
    kv_cache_bytes: int
    """KV cache held on the GPU: the requested batch × context (vLLM: the whole pre-allocated pool)."""
    kv_cache_needed_bytes: int
    activations_bytes: int
    overhead_bytes: int
    usable_bytes: Range
    fits: bool
    cpu_bytes: int = 0
    """Weights and cache left in CPU RAM (llama.cpp partial offload)."""
    max_concurrent_sequences: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    multimodal_profile_bytes: int = 0
    """vLLM with a vision tower: what its profiling run's vision pass and encoder cache add to the decoder's
    activation peak before the KV pool is sized (`multimodal_profile` says how)."""
    multimodal_profile: Any = None
    """The engine's account of that profile (engines/vllm_multimodal.py MultimodalProfile), with `to_dict()`."""

    @property
    def total_bytes(self) -> int:
        return (self.weights_bytes + self.kv_cache_bytes + self.activations_bytes + self.multimodal_profile_bytes
                + self.overhead_bytes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes, "kv_cache_bytes": self.kv_cache_bytes,
            "kv_cache_needed_bytes": self.kv_cache_needed_bytes, "activations_bytes": self.activations_bytes,
            "overhead_bytes": self.overhead_bytes, "total_bytes": self.total_bytes,
            "usable_bytes": self.usable_bytes.typical, "usable_bytes_range": self.usable_bytes.to_dict(),
            "cpu_bytes": self.cpu_bytes, "max_concurrent_sequences": self.max_concurrent_sequences,
            "multimodal_profile_bytes": self.multimodal_profile_bytes,
            "multimodal_profile": None if self.multimodal_profile is None else self.multimodal_profile.to_dict(),
        }


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class MemoryRequest:
    """One request's memory inputs and the pricing layer's formulas bound to its model (price/memory.py)."""

    arch: ModelArch
    device: DeviceSpec
    batch: int
    context: int
    """Tokens per sequence the self-attention cache holds."""
    prompt: int
    weights: WeightFormat
    kv_dtype: str
    act_bytes: int
    tp: int
    gpu_layers: int | None
    """Layers offloaded to the GPU (None: all)."""
    attention: str
    """The attention implementation asked for (sdpa, eager, flash2), where the engine lets the user choose."""
    compute_dtype: str
    tower: TowerInput | None
    usable: Range
    """Memory a framework gets on the device (hardware/usable.py); `device_total_bytes(device)` is the card's
    total as CUDA reports it (with the per-process reserve)."""
    weights_bytes: int
    """Weights held on the device, per GPU."""
    cpu_weights_bytes: int
    kv_per_sequence: Callable[[int], int]
    """Cache bytes of one sequence of `context` tokens on one GPU, its blocks rounded up to `block` tokens."""
    activation_peak: Callable[[int, int], int]
    """Live bytes at the peak of a forward step of `tokens` tokens computing `logit_rows` rows of logits."""
    attention_path: Callable[[str], Any]
    """The attention kernel an implementation runs on this device (price/attention_kernels.py AttentionPath)."""
    with_tower: Callable[[int, bool, int, str, list[str]], int]
    """(decoder peak, fused attention, layer outputs kept, kernel named in the note, notes) -> the peak with the
    tower's pass ahead of the decoder's prefill."""
    tower_pass: Callable[..., Any]
    """The activation peak of one tower pass (price/tower_memory.py tower_activations)."""
    pp: int = 1
    """Pipeline stages the model is split into (an engine whose reserve grows with the ranks reads it)."""


def allocate_on_demand(req: MemoryRequest, *, tower: tuple[bool, str, int], allocator: Range | None) -> InferenceMemory:
    """Everything allocated as the request needs it: its KV cache, and the activation peak of the whole prompt as one
    forward pass, with one layer's s² scores and softmax output where the request's attention implementation runs
    the math path on this device. `tower`: (fused attention, the kernel named in the note, layer outputs kept) of the
    tower's pass; `allocator`: the caching allocator's reserve as a fraction of activations and cache (None: none)."""
    notes: list[str] = []
    kv = req.kv_per_sequence(1) * req.batch
    activations = req.activation_peak(req.batch * req.prompt, req.batch)
    path = req.attention_path(req.attention)
    attending = [layer.attention.heads for layer in req.arch.layers if layer.attention.head_dim]
    if not attending:  # a state-space model (NO_ATTENTION layers): no attention kernel runs, no s² tensors
        pass
    elif not path.fused:  # one layer's scores and their softmax output, live together (the widest layer's heads)
        heads = max(attending)
        activations += 2 * req.act_bytes * req.batch * heads * req.prompt * req.prompt // max(req.tp, 1)
        notes.append(f"attention: {path.implementation} runs the math path ({path.reason}): one layer's s² scores "
                     "and softmax output are live during prefill")
    else:
        notes.append(f"attention: {path.implementation} runs a fused kernel ({path.kernel}, {path.reason}): no s² "
                     "tensors")
    fused, kernel, kept = tower
    activations = req.with_tower(activations, fused, kept, kernel, notes)
    overhead = int((activations + kv) * (allocator.typical if allocator else 0.0))
    if allocator:
        notes.append(f"PyTorch caching allocator: +{allocator.typical:.0%} of activations and cache reserved")
    total = req.weights_bytes + kv + activations + overhead
    return InferenceMemory(weights_bytes=req.weights_bytes, kv_cache_bytes=kv, kv_cache_needed_bytes=kv,
                           activations_bytes=activations, overhead_bytes=overhead, usable_bytes=req.usable,
                           fits=total <= req.usable.typical, cpu_bytes=req.cpu_weights_bytes, notes=tuple(notes))


def whole_context_cache(req: MemoryRequest, *, ubatch: int, tower: tuple[bool, str, int],
                        compute: tuple[int, str] | None = None, host_input: tuple[int, str] | None = None
                        ) -> InferenceMemory:
    """The KV cache allocated for the whole context (its offloaded layers' share on the device), a compute buffer
    sized for one physical batch of `ubatch` tokens, and the layers kept off the GPU in CPU RAM. `compute`: the
    engine's own compute buffer (bytes, the sentence saying how it is sized) in place of the request's activation
    peak; `host_input`: (bytes, sentence) of weights the engine keeps in CPU RAM even with every layer on the device
    (llama.cpp's input layer)."""
    notes: list[str] = []
    n = req.arch.num_layers
    on_gpu = n if req.gpu_layers is None else min(req.gpu_layers, n)
    kv_total = req.kv_per_sequence(1) * req.batch
    kv_gpu = kv_total * on_gpu // n
    if compute is None:
        activations = req.activation_peak(min(ubatch, req.batch * req.prompt), req.batch)
    else:
        activations = compute[0]
        notes.append(compute[1])
    fused, kernel, kept = tower
    activations = req.with_tower(activations, fused, kept, kernel, notes)
    overhead = 0
    weights, cpu = req.weights_bytes, req.cpu_weights_bytes
    if host_input is not None and host_input[0] and req.gpu_layers is None:  # partial offload keeps it there already
        weights, cpu = weights - host_input[0], cpu + host_input[0]
        notes.append(host_input[1])
    if req.gpu_layers is not None and on_gpu < n:
        notes.append(f"{n - on_gpu} of {n} layers and their KV cache stay in CPU RAM")
    total = weights + kv_gpu + activations + overhead
    return InferenceMemory(weights_bytes=weights, kv_cache_bytes=kv_gpu, kv_cache_needed_bytes=kv_total,
                           activations_bytes=activations, overhead_bytes=overhead, usable_bytes=req.usable,
                           fits=total <= req.usable.typical, cpu_bytes=cpu + kv_total - kv_gpu, notes=tuple(notes))


def device_total_bytes(device: DeviceSpec) -> float:
    """The card's total as CUDA reports it: the memory a framework gets (hardware/usable.py) plus the per-process part
    of the reserve (the CUDA context), which the total includes."""
    from sizeup.hardware.usable import memory_classes, usable_memory

    reserve = next((cls.reserve_bytes.typical for cls in memory_classes() if cls.matches(device)), 0.0)
    return usable_memory(device).bytes.typical + reserve


def split_by_layers(mem: InferenceMemory, gpus: int) -> InferenceMemory:
    """`mem` of the whole model on one device, spread by layers over `gpus` devices (an engine whose MULTI_GPU is
    'layers'): each holds its share of the weights and cache (rounded up) and one layer's activations, as a
    whole-model memory does; the largest share decides whether it fits."""
    from dataclasses import replace

    weights, kv, needed = (-(-b // gpus) for b in (mem.weights_bytes, mem.kv_cache_bytes, mem.kv_cache_needed_bytes))
    total = weights + kv + mem.activations_bytes + mem.multimodal_profile_bytes + mem.overhead_bytes
    note = (f"layers split over {gpus} GPUs (one busy at a time): each holds ~1/{gpus} of the weights and cache; a "
            f"token crosses {gpus - 1} device boundaries (a hidden vector each, not priced)")
    return replace(mem, weights_bytes=weights, kv_cache_bytes=kv, kv_cache_needed_bytes=needed,
                   fits=total <= mem.usable_bytes.typical, notes=(*mem.notes, note))
