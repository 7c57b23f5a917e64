"""Inference memory of a transformer on one device: weights in their format, the KV cache, the
activation peak of a forward step and the engine's own overhead, against the memory a framework
really gets — and the largest context and batch that fit.

Engines differ in policy:
- `hf`: everything allocated on demand; the whole prompt is one forward pass.
- `vllm`: takes `gpu_memory_utilization` of the GPU up front; after weights, the peak of its profiling run (the
  larger of a `max_num_batched_tokens` forward step and the dummy sampler over `max_num_seqs` rows of logits, with
  `vllm serve`'s defaults for the GPU) and non-torch memory, the rest is the paged KV pool (blocks of 16). For a
  vision-language model its profiling run also pushes the largest dummy image batch through the vision tower
  and holds the embeddings in the encoder cache beside the decoder's step (`sizeup.price.vllm_multimodal`):
  its excess is a line of its own, `multimodal_profile_bytes`, whatever the request's images.
- `llama.cpp`: the KV cache is allocated for the whole context; the compute buffer is sized for a
  physical batch (`n_ubatch`); layers not offloaded to the GPU (`gpu_layers`) stay in CPU RAM.

A tower ahead of the decoder (an encoder, a vision tower: `MemoryConfig.tower`) runs before the decoder's
prefill: the activation peak is the larger of its pass and the decoder's step plus what the tower leaves it
(`sizeup.price.tower_memory`), under every engine but vLLM with a vision tower (its profile above bounds it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from sizeup.errors import ConfigError
from sizeup.formats import WeightFormat, tensor_bytes_map
from sizeup.hardware.schema import DeviceSpec
from sizeup.hardware.usable import usable_memory
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.tower_ops import TowerInput
from sizeup.ingest.transformer_ops import KV_BYTES_PER_ELEMENT
from sizeup.price.attention_kernels import attention_path
from sizeup.price.engines import EngineProfile
from sizeup.price.tower_memory import tower_activations
from sizeup.price.vllm_multimodal import MultimodalProfile, vllm_multimodal_profile
from sizeup.ranges import Range
from sizeup.units import GIB

__all__ = ["MemoryConfig", "InferenceMemory", "inference_memory", "kv_bytes_per_sequence", "max_fitting",
           "vllm_batch_defaults", "vllm_sampler_peak"]

LOGITS_BYTES = 4
"""Logits are upcast to fp32 for sampling."""

SAMPLER_SORT_BYTES = 4 + 4 + 8 + 8 + 4 + 8
"""Per logit while vLLM's dummy sampler sorts (beside the model-dtype logits): the Sampler's fp32 copy, the sort's fp32
values and int64 indices, PyTorch's int64 reverse-index input (SortStable.cu segmented_sort_pairs, taken for 128 or
more rows) and cub's third key and value buffers (DispatchSegmentedRadixSort, not overwriting its input)."""

SAMPLER_MASK_BYTES = 4 + 4 + 8 + 1 + 4 + 1 + 4
"""Per logit after the sort: the fp32 copy, sorted values and indices, the top-k bool mask, the fp32 softmax of the
sorted logits (cumsum in place), the top-p bool mask and the fp32 scatter back (apply_top_k_top_p)."""

SAMPLER_BYTES_PER_LOGIT = max(SAMPLER_SORT_BYTES, SAMPLER_MASK_BYTES)
"""vLLM's dummy sampler run at its peak, beside the model-dtype logits (`vllm_sampler_peak`). Sources:
vllm/v1/sample/sampler.py at 3e342658b2e9c85a30a54d19e64e5ad77b8a26a6, vllm/v1/sample/ops/topk_topp_sampler.py at
3babc05a035b42bb9d0ae51b83e102c85e3e5626 (github.com/vllm-project/vllm); aten/src/ATen/native/cuda/SortStable.cu
(github.com/pytorch/pytorch, launch_stable_sort_kernel and segmented_sort_pairs, commit
420d374dfeb7a2826c9101260e74d730304d1a73); cub/cub/device/dispatch/dispatch_segmented_radix_sort.cuh
(github.com/NVIDIA/cccl, "bytes needed for 3rd keys buffer" / "3rd values buffer", commit
004ad1986064aaa82892ed00d0dbda88b90fa6e6)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryConfig:
    batch: int
    context: int
    """Tokens per sequence the self-attention cache must hold (prompt + output; T5's decoder: its own output
    and start token, the prompt being the encoder's, whose cross-attention K/V `arch.cross_source` sizes)."""
    prompt: int
    weights: WeightFormat
    kv_dtype: str = "fp16"
    act_bytes: int = 2
    tp: int = 1
    gpu_layers: int | None = None
    """llama.cpp: layers offloaded to the GPU (None: all)."""
    attention: str = "sdpa"
    """hf engine: the attention implementation transformers runs (sdpa, eager, flash2); on the math path the
    prefill's s² scores and softmax output are live (sizeup.price.attention_kernels)."""
    compute_dtype: str = "fp16"
    """The dtype attention computes in, for the kernel choice (fp32, fp16, bf16)."""
    tower: TowerInput | None = None
    """What the model's tower (`arch.tower`) reads in this prefill; its pass joins the activation peak
    (`sizeup.price.tower_memory`). None: no tower runs."""


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
    multimodal_profile: MultimodalProfile | None = None

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


def kv_bytes_per_sequence(arch: ModelArch, context: int, kv_dtype: str, tp: int = 1, block: int = 1) -> int:
    """Cache bytes one sequence of `context` tokens holds on one GPU (sliding-window layers keep at most
    the window; a paged cache rounds up to whole blocks; a state-space layer holds its fixed recurrent
    state, and an encoder-decoder its cross-attention K/V over the encoder's positions, whatever the context)."""
    if arch.encoder:
        return 0
    per_element = KV_BYTES_PER_ELEMENT[kv_dtype]
    total = 0.0
    for layer in arch.layers:
        if layer.ssm is not None:
            total += layer.ssm.state_elements * per_element / tp
            continue
        a = layer.attention
        tokens = min(context, a.window) if a.window else context
        tokens = -(-tokens // block) * block
        elements = arch.kv_elements_per_token(layer)
        if a.mla is None and tp > 1:
            elements = max(a.kv_heads // tp, 1) * (a.head_dim + a.v_head_dim)
        total += tokens * elements * per_element
    total += arch.cross_kv_elements_per_sequence() * per_element / tp  # encoder-decoders: fixed by the encoder
    return int(total)


def _activation_peak(arch: ModelArch, tokens: int, logit_rows: int, act_bytes: int, tp: int) -> int:
    """Largest set of live temporaries in one forward step of `tokens` tokens: the residual stream and
    normed input (2·T·h), plus the widest stage — the MLP (gate and up outputs and the activation,
    3·T·I), the q/k/v projections or a state-space mixer's projections — and the fp32 logits of the sampled rows."""
    h = arch.hidden
    widest = 0
    for layer in arch.layers:
        m, a = layer.mlp, layer.attention
        if m.is_moe:
            mlp = tokens * m.top_k * 3 * m.intermediate // tp + 3 * tokens * m.shared_intermediate * m.shared_experts // tp
        else:
            mlp = 3 * tokens * m.intermediate // tp
        qkv = tokens * (a.heads + 2 * a.kv_heads) * a.head_dim // tp
        # a state-space mixer: in_proj's output (z, x and, for Mamba-2, B, C, Δ) and the conv output
        ssm = 0 if layer.ssm is None else tokens * (2 * layer.ssm.inner + 2 * layer.ssm.conv_channels)
        widest = max(widest, mlp, qkv, ssm)
    return (2 * tokens * h + widest) * act_bytes + logit_rows * arch.vocab * LOGITS_BYTES // max(tp, 1)


def _weights_on_gpu(arch: ModelArch, cfg: MemoryConfig) -> tuple[int, int]:
    return _weights_split(arch, cfg.weights, cfg.tp, cfg.gpu_layers)


@lru_cache(maxsize=64)
def _weights_split(arch: ModelArch, weights: WeightFormat, tp: int, gpu_layers: int | None) -> tuple[int, int]:
    """(GPU bytes, CPU bytes) of the weights, per GPU under tensor parallelism."""
    gpu = cpu = 0
    n = arch.num_layers
    offload = n if gpu_layers is None else gpu_layers
    sizes = tensor_bytes_map(arch, weights)
    for t in arch.tensors():
        size = sizes[t.name]
        if t.layer is not None:
            on_gpu = t.layer < offload
        elif t.role in ("embedding", "position") and gpu_layers is not None:
            on_gpu = False  # llama.cpp keeps the token embedding lookup on the CPU
        else:
            on_gpu = offload >= n
        if on_gpu:
            gpu += size // tp if t.role not in ("norm",) else size
        else:
            cpu += size
    return gpu, cpu


def inference_memory(arch: ModelArch, device: DeviceSpec, engine: EngineProfile, cfg: MemoryConfig) -> InferenceMemory:
    if cfg.batch < 1 or cfg.context < 1:
        raise ConfigError(f"batch {cfg.batch} and context {cfg.context}: expected positive integers")
    usable = usable_memory(device).bytes
    weights, cpu_weights = _weights_on_gpu(arch, cfg)
    notes: list[str] = []
    if engine.id == "vllm":
        return _vllm_memory(arch, device, engine, cfg, usable, weights, cpu_weights)
    if engine.id == "llama.cpp":
        ubatch = int(engine.value("n_ubatch", 512))
        n = arch.num_layers
        on_gpu = n if cfg.gpu_layers is None else min(cfg.gpu_layers, n)
        kv_total = kv_bytes_per_sequence(arch, cfg.context, cfg.kv_dtype, cfg.tp) * cfg.batch
        kv_gpu = kv_total * on_gpu // n
        activations = _activation_peak(arch, min(ubatch, cfg.batch * cfg.prompt), cfg.batch, cfg.act_bytes, cfg.tp)
        activations = _with_tower(arch, device, engine, cfg, activations, notes)
        overhead = 0
        if cfg.gpu_layers is not None and on_gpu < n:
            notes.append(f"{n - on_gpu} of {n} layers and their KV cache stay in CPU RAM")
        total = weights + kv_gpu + activations + overhead
        return InferenceMemory(weights_bytes=weights, kv_cache_bytes=kv_gpu, kv_cache_needed_bytes=kv_total,
                               activations_bytes=activations, overhead_bytes=overhead, usable_bytes=usable,
                               fits=total <= usable.typical, cpu_bytes=cpu_weights + kv_total - kv_gpu,
                               notes=tuple(notes))
    # hf and tensorrt-llm: allocate what the request needs
    kv = kv_bytes_per_sequence(arch, cfg.context, cfg.kv_dtype, cfg.tp) * cfg.batch
    activations = _activation_peak(arch, cfg.batch * cfg.prompt, cfg.batch, cfg.act_bytes, cfg.tp)
    path = attention_path(device, cfg.compute_dtype, cfg.attention)
    attending = [layer.attention.heads for layer in arch.layers if layer.attention.head_dim]
    if not attending:  # a state-space model (NO_ATTENTION layers): no attention kernel runs, no s² tensors
        pass
    elif not path.fused:  # one layer's scores and their softmax output, live together (the widest layer's heads)
        heads = max(attending)
        activations += 2 * cfg.act_bytes * cfg.batch * heads * cfg.prompt * cfg.prompt // max(cfg.tp, 1)
        notes.append(f"attention: {path.implementation} runs the math path ({path.reason}): one layer's s² scores "
                     "and softmax output are live during prefill")
    else:
        notes.append(f"attention: {path.implementation} runs a fused kernel ({path.kernel}, {path.reason}): no s² "
                     "tensors")
    activations = _with_tower(arch, device, engine, cfg, activations, notes)
    fraction = engine.range("allocator_overhead_fraction")
    overhead = int((activations + kv) * (fraction.typical if fraction else 0.0))
    if fraction:
        notes.append(f"PyTorch caching allocator: +{fraction.typical:.0%} of activations and cache reserved")
    total = weights + kv + activations + overhead
    return InferenceMemory(weights_bytes=weights, kv_cache_bytes=kv, kv_cache_needed_bytes=kv,
                           activations_bytes=activations, overhead_bytes=overhead, usable_bytes=usable,
                           fits=total <= usable.typical, cpu_bytes=cpu_weights, notes=tuple(notes))


def vllm_batch_defaults(engine: EngineProfile, device: DeviceSpec) -> tuple[int, int, str]:
    """(max_num_batched_tokens, max_num_seqs, why) vLLM starts with on `device`: the engine profile's explicit
    values where it sets them, else `vllm serve`'s defaults for the GPU (EngineArgs.get_batch_defaults, the
    OPENAI_API_SERVER usage context: sizeup's plans deploy the OpenAI server): GPUs whose CUDA total is at least
    `default_large_gpu_min_gib` and whose name has no "a100" take the large tier, the others the small one."""
    gib = (usable_memory(device).bytes.typical + _context_reserve(device)) / GIB
    large = gib >= engine.value("default_large_gpu_min_gib", 70) and "a100" not in device.name.lower()
    tier = "large_gpu" if large else "other_gpu"
    step = engine.values.get("max_num_batched_tokens")
    seqs = engine.values.get("max_num_seqs")
    step = int(step if step is not None else engine.value(f"default_max_num_batched_tokens.{tier}",
                                                         8192 if large else 2048))
    seqs = int(seqs if seqs is not None else engine.value(f"default_max_num_seqs.{tier}", 1024 if large else 256))
    why = (f"vllm serve defaults on a {gib:,.0f} GiB {'GPU' if large else 'GPU (under 70 GiB or an A100)'}: "
           f"max_num_batched_tokens {step:,}, max_num_seqs {seqs:,}")
    return step, seqs, why


def vllm_sampler_peak(arch: ModelArch, rows: int, act_bytes: int) -> int:
    """Live bytes at the peak of vLLM's dummy sampler run over `rows` requests (GPUModelRunner._dummy_sampler_run:
    top_p 0.9, top_k vocab - 1, neither all greedy nor all random, no logprobs, the PyTorch-native top-k/top-p path
    that is the default): per logit, compute_logits' output in the model dtype beside the larger of the sort's stage
    (the fp32 copy, the sorted values and indices and the sort's workspace) and the masking stage after it. Every
    tensor-parallel rank gathers the whole vocabulary, so tp does not divide it. Fewer than 128 rows take PyTorch's
    other sort paths, whose workspace differs (taken as the same here)."""
    return rows * arch.vocab * (act_bytes + SAMPLER_BYTES_PER_LOGIT)


def _vllm_memory(arch: ModelArch, device: DeviceSpec, engine: EngineProfile, cfg: MemoryConfig, usable: Range,
                 weights: int, cpu_weights: int) -> InferenceMemory:
    """vLLM's KV pool: `gpu_memory_utilization` of the CUDA total less the weights, the profiling run's torch peak,
    non-torch and CUDA-graph memory. profile_run (vllm/v1/worker/gpu_model_runner.py) runs the forward of one
    max_num_batched_tokens step (after the multimodal profile for a VLM), keeps its hidden states, then the sampler on
    min(max_num_seqs, step) rows with the encoder cache still held: the peak is the larger of the two phases."""
    notes: list[str] = []
    step_tokens, max_seqs, why = vllm_batch_defaults(engine, device)
    engine = replace(engine, values={**engine.values, "max_num_batched_tokens": step_tokens, "max_num_seqs": max_seqs})
    notes.append(why)
    block = int(engine.value("kv_block_tokens", 16))
    kv_seq = kv_bytes_per_sequence(arch, cfg.context, cfg.kv_dtype, cfg.tp, block)
    rows = min(max_seqs, step_tokens)
    forward = _activation_peak(arch, step_tokens, 0, cfg.act_bytes, cfg.tp)  # the forward computes no logits
    # the sampler phase: its peak beside the step's hidden states and the sampled rows (and their random copy)
    kept = (step_tokens + 2 * rows) * arch.hidden * cfg.act_bytes
    sampler = vllm_sampler_peak(arch, rows, cfg.act_bytes) + kept
    profile = _vllm_profile(arch, engine, cfg, forward)
    if profile is None:
        forward = _with_tower(arch, device, engine, cfg, forward, notes)
        activations, mm_bytes = max(forward, sampler), 0
    else:
        notes.extend(profile.notes)
        activations = max(forward, sampler)
        mm_bytes = max(profile.peak_bytes, sampler + profile.encoder_cache_bytes) - activations
    phase = "the sampler's" if sampler > forward else "the forward's"
    notes.append(f"vLLM profiling run: the {step_tokens:,}-token forward peaks at {forward / GIB:,.2f} GiB, the dummy "
                 f"sampler over {rows:,} rows × {arch.vocab:,} logits at {sampler / GIB:,.2f} GiB (model-dtype and fp32 "
                 f"logits, the top-k/top-p sort and its workspace): {phase} is the peak")
    non_torch = engine.range("non_torch_bytes") or Range(0.5 * GIB, 0.5 * GIB, 0.5 * GIB)
    graphs = engine.range("cuda_graph_bytes") or Range(0.5 * GIB, 0.5 * GIB, 0.5 * GIB)
    utilization = engine.value("gpu_memory_utilization", 0.92)
    # vLLM takes `utilization` of the total CUDA reports; the CUDA context stays outside that budget,
    # and since v0.21 the CUDA-graph memory is estimated inside it (engines.yaml sources)
    cuda_total = usable.typical + _context_reserve(device)
    budget = cuda_total * utilization
    overhead = int(non_torch.typical + graphs.typical)
    pool = int(budget - weights - activations - mm_bytes - overhead)
    needed = kv_seq * cfg.batch
    concurrency = min(max(pool, 0) // kv_seq, max_seqs) if kv_seq else None
    fits = pool >= needed and pool > 0 and budget <= usable.typical
    notes.append(f"vLLM takes {utilization:.0%} of the GPU up front; the KV pool is what remains after weights, "
                 f"the profiling run's peak" + (" (with the multimodal profile)" if profile else "")
                 + ", non-torch and CUDA-graph memory; at most max_num_seqs "
                 f"{max_seqs:,} sequences run at once")
    return InferenceMemory(weights_bytes=weights, kv_cache_bytes=max(pool, 0), kv_cache_needed_bytes=needed,
                           activations_bytes=activations, overhead_bytes=overhead, usable_bytes=usable, fits=fits,
                           cpu_bytes=cpu_weights, max_concurrent_sequences=concurrency, notes=tuple(notes),
                           multimodal_profile_bytes=mm_bytes, multimodal_profile=profile)


def _vllm_profile(arch: ModelArch, engine: EngineProfile, cfg: MemoryConfig, decoder: int) -> MultimodalProfile | None:
    """vLLM's multimodal profile for a vision tower: the scenario's images per prompt and image size as the
    deploy's limit_mm_per_prompt, max_model_len the model's own context (the cache's where the config names none)."""
    if arch.tower is None or arch.tower.kind != "vision":
        return None
    feed = cfg.tower
    return vllm_multimodal_profile(arch, engine, decoder_bytes=decoder, images=feed.images if feed else 0,
                                   image_hw=feed.image_hw if feed else None,
                                   max_model_len=arch.max_context or cfg.context, act_bytes=cfg.act_bytes, tp=cfg.tp)


def _with_tower(arch: ModelArch, device: DeviceSpec, engine: EngineProfile, cfg: MemoryConfig, decoder: int,
                notes: list[str]) -> int:
    """The activation peak with the tower's pass ahead of the decoder's prefill: the larger of the tower's pass
    and the decoder's prefill plus what the tower leaves it (not their sum: one runs after the other)."""
    if cfg.tower is None or arch.tower is None:
        return decoder
    t, keep = arch.tower, 0
    if engine.id == "hf":  # transformers: the implementation the decoder runs
        path = attention_path(device, cfg.compute_dtype, cfg.attention)
        fused, name = path.fused, f"{path.implementation} {path.kernel}, {path.reason}"
        if t.kind == "vision" and t.class_token and t.projector:  # LLaVA's vision_feature_layer(s) beyond one
            keep = t.projector[0] // t.hidden - 1
    elif engine.id == "llama.cpp":
        fused, name = False, "ggml's K·Qᵀ and softmax as tensors, as without flash attention: an upper bound"
    else:
        fused, name = True, f"{engine.id}'s fused attention backend; at this request's inputs"
    tower = tower_activations(arch, cfg.tower, act_bytes=cfg.act_bytes, tp=cfg.tp, fused=fused,
                              kept_layers=keep, path=name)
    if tower.note:
        notes.append(tower.note)
    return max(tower.peak_bytes, decoder + tower.kept_bytes)


def _context_reserve(device: DeviceSpec) -> float:
    """The per-process part of the reserve (CUDA context): the card total CUDA reports includes it."""
    from sizeup.hardware.usable import memory_classes

    for cls in memory_classes():
        if cls.matches(device):
            return cls.reserve_bytes.typical
    return 0.0


def max_fitting(fits, low: int, high: int) -> int:
    """Largest integer in [low, high] for which the monotone predicate `fits` holds (low - 1 if none)."""
    if not fits(low):
        return low - 1
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low

