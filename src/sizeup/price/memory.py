"""Inference memory of a transformer on one device: weights in their format, the KV cache, the
activation peak of a forward step and the engine's own overhead, against the memory a framework
really gets — and the largest context and batch that fit.

What the engine holds is its execution model's (engines/base.py `memory`, engines/reserve.py): this module builds
the request and the formulas it is priced with (the KV bytes of a sequence, the activation peak of a forward step,
a tower's pass) and hands them to the engine; no engine is named here.

A tower ahead of the decoder (an encoder, a vision tower: `MemoryConfig.tower`) runs before the decoder's
prefill: the activation peak is the larger of its pass and the decoder's step plus what the tower leaves it
(`sizeup.price.tower_memory`), with the attention kernel the engine says its tower runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from sizeup.engines.reserve import InferenceMemory, MemoryRequest
from sizeup.errors import ConfigError
from sizeup.formats import WeightFormat, tensor_bytes_map
from sizeup.hardware.usable import usable_memory
from sizeup.ingest.arch import ModelArch
from sizeup.ingest.tower_ops import TowerInput
from sizeup.ingest.transformer_ops import KV_BYTES_PER_ELEMENT
from sizeup.price.attention_kernels import attention_path
from sizeup.price.tower_memory import tower_activations

__all__ = ["MemoryConfig", "InferenceMemory", "inference_memory", "kv_bytes_per_sequence", "max_fitting"]

LOGITS_BYTES = 4
"""Logits are upcast to fp32 for sampling."""


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
    """Layers offloaded to the GPU by an engine that splits them with the CPU (None: all)."""
    attention: str = "sdpa"
    """The library engine: the attention implementation the model library runs (sdpa, eager, flash2); on the math
    path the prefill's s² scores and softmax output are live (sizeup.price.attention_kernels)."""
    compute_dtype: str = "fp16"
    """The dtype attention computes in, for the kernel choice (fp32, fp16, bf16)."""
    tower: TowerInput | None = None
    """What the model's tower (`arch.tower`) reads in this prefill; its pass joins the activation peak
    (`sizeup.price.tower_memory`). None: no tower runs."""
    host_experts: int = 0
    """The first N layers whose routed experts' weights stay in host memory (the engine's `host_expert_layers`)."""
    host_expert_fraction: float = 1.0
    """The share of those layers' routed experts held in host memory (the engine's `host_expert_fraction`: 1 for
    whole layers, (E - N) / E where N experts per layer stay on the device)."""
    pp: int = 1
    """Pipeline stages (workload/pipeline.py): each GPU holds its stage's ceil(layers / pp) layers of weights and
    cache, and the larger of the embedding (first stage) and the head (last stage)."""


@lru_cache(maxsize=4096)  # a pure function of hashable arguments, asked for at every batch and context searched
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
        elif a.mla is not None and a.mla.expanded_v_dim and tp > 1:  # per-head K/V: each rank holds its heads'
            elements = max(a.heads // tp, 1) * (a.head_dim + a.mla.expanded_v_dim)
        total += tokens * elements * per_element
    total += arch.cross_kv_elements_per_sequence() * per_element / tp  # encoder-decoders: fixed by the encoder
    return int(total)


@lru_cache(maxsize=4096)
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
    if cfg.pp > 1:
        return _stage_weights(arch, cfg.weights, cfg.tp, cfg.pp), 0
    return _weights_split(arch, cfg.weights, cfg.tp, cfg.gpu_layers, cfg.host_experts, cfg.host_expert_fraction)


def stage_share(arch: ModelArch, pp: int) -> float:
    """The share of the layers the largest of `pp` pipeline stages holds: ceil(layers / pp) / layers."""
    n = arch.num_layers
    return -(-n // pp) / n if pp > 1 and n else 1.0


@lru_cache(maxsize=64)
def host_read_share(arch: ModelArch, weights: WeightFormat, gpu_layers: int | None, host_experts: int,
                    fraction: float = 1.0) -> float:
    """The share of the weight bytes one decoded token reads that live in host memory: the layers past `gpu_layers`
    whole and the routed experts of the first `host_experts` layers (`fraction` of each layer's experts), each
    expert tensor counted at top-k / experts (the experts a token is routed to, routing taken as uniform), the
    embedding lookup not counted (one row a token)."""
    sizes = tensor_bytes_map(arch, weights)
    n, total, host = arch.num_layers, 0.0, 0.0
    offload = n if gpu_layers is None else gpu_layers
    for t in arch.tensors():
        if t.role in ("embedding", "position"):
            continue
        read = float(sizes[t.name])
        if t.role == "expert" and t.layer is not None:
            mlp = arch.layers[t.layer].mlp
            read *= mlp.top_k / mlp.experts
        total += read
        if t.layer is not None and t.layer < offload and t.role == "expert" and t.layer < host_experts:
            host += read * fraction
        elif t.layer is not None and t.layer >= offload:
            host += read
        elif t.layer is None and offload < n:
            host += read  # the output layer stays off the device with any layer off it
    return host / total if total else 0.0


@lru_cache(maxsize=64)
def _stage_weights(arch: ModelArch, weights: WeightFormat, tp: int, pp: int) -> int:
    """GPU bytes of the weights on the largest pipeline stage: its share of the layers' tensors (÷ tp, norms whole)
    and the larger of the first stage's embedding and the last stage's head and final norm."""
    sizes = tensor_bytes_map(arch, weights)
    layers = first = last = 0
    for t in arch.tensors():
        size = sizes[t.name] if t.role == "norm" else sizes[t.name] // tp
        if t.layer is not None:
            layers += size
        elif t.role in ("embedding", "position"):
            first += size
        else:
            last += size
    return int(layers * stage_share(arch, pp)) + max(first, last)


@lru_cache(maxsize=64)
def _weights_split(arch: ModelArch, weights: WeightFormat, tp: int, gpu_layers: int | None,
                   host_experts: int = 0, fraction: float = 1.0) -> tuple[int, int]:
    """(GPU bytes, CPU bytes) of the weights, per GPU under tensor parallelism; the routed experts of the first
    `host_experts` layers in host memory (`fraction` of each such layer's experts, the rest on the GPU)."""
    gpu = cpu = 0
    n = arch.num_layers
    offload = n if gpu_layers is None else gpu_layers
    sizes = tensor_bytes_map(arch, weights)
    for t in arch.tensors():
        size = sizes[t.name]
        if t.layer is not None and t.layer < offload and t.role == "expert" and t.layer < host_experts \
                and fraction < 1.0:
            cpu += int(size * fraction)
            gpu += int(size * (1.0 - fraction)) // tp
            continue
        if t.layer is not None:
            on_gpu = t.layer < offload and not (t.role == "expert" and t.layer < host_experts)
        elif t.role in ("embedding", "position") and gpu_layers is not None:
            on_gpu = False  # an offloading engine keeps the token embedding lookup on the CPU
        else:
            on_gpu = offload >= n
        if on_gpu:
            gpu += size // tp if t.role not in ("norm",) else size
        else:
            cpu += size
    return gpu, cpu


@lru_cache(maxsize=64)
def whole_beside_experts(arch: ModelArch, weights: WeightFormat, tp: int) -> int:
    """The bytes a GPU holds beyond its 1/`tp` share where attention runs data-parallel (ExecutionModel.attention_ranks,
    engines/attention_dp.py): every tensor but the routed experts held whole on every rank (the attention weights,
    dense MLPs and shared experts, embedding and head); norms are whole either way."""
    sizes = tensor_bytes_map(arch, weights)
    return sum(sizes[t.name] - sizes[t.name] // tp for t in arch.tensors() if t.role not in ("expert", "norm"))


def inference_memory(arch: ModelArch, execution, cfg: MemoryConfig) -> InferenceMemory:
    """What `execution` (an engines.base.ExecutionModel: one engine on one device) holds for the request `cfg`."""
    if cfg.batch < 1 or cfg.context < 1:
        raise ConfigError(f"batch {cfg.batch} and context {cfg.context}: expected positive integers")
    device = execution.device
    if not cfg.host_experts and device.kind != "cpu":
        cfg = replace(cfg, host_experts=execution.host_expert_layers(arch),
                      host_expert_fraction=float(getattr(execution, "host_expert_fraction", lambda a: 1.0)(arch)))
    weights, cpu_weights = _weights_on_gpu(arch, cfg)
    if getattr(execution, "attention_ranks", 1) > 1 and cfg.gpu_layers is None and cfg.pp == 1:
        weights += whole_beside_experts(arch, cfg.weights, cfg.tp)

    def with_tower(decoder: int, fused: bool, kept_layers: int, path: str, notes: list[str]) -> int:
        """The activation peak with the tower's pass ahead of the decoder's prefill: the larger of the tower's pass
        and the decoder's prefill plus what the tower leaves it (not their sum: one runs after the other)."""
        if cfg.tower is None or arch.tower is None:
            return decoder
        tower = tower_activations(arch, cfg.tower, act_bytes=cfg.act_bytes, tp=cfg.tp, fused=fused,
                                  kept_layers=kept_layers, path=path)
        if tower.note:
            notes.append(tower.note)
        return max(tower.peak_bytes, decoder + tower.kept_bytes)

    return execution.memory(MemoryRequest(
        arch=arch, device=device, batch=cfg.batch, context=cfg.context, prompt=cfg.prompt, weights=cfg.weights,
        kv_dtype=cfg.kv_dtype, act_bytes=cfg.act_bytes, tp=cfg.tp, gpu_layers=cfg.gpu_layers, attention=cfg.attention,
        compute_dtype=cfg.compute_dtype, tower=cfg.tower, usable=usable_memory(device).bytes,
        weights_bytes=weights, cpu_weights_bytes=cpu_weights,
        kv_per_sequence=lambda block: int(kv_bytes_per_sequence(arch, cfg.context, cfg.kv_dtype, cfg.tp, block)
                                          * stage_share(arch, cfg.pp)),
        activation_peak=lambda tokens, rows: _activation_peak(arch, tokens, rows, cfg.act_bytes, cfg.tp),
        attention_path=lambda implementation: attention_path(device, cfg.compute_dtype, implementation),
        with_tower=with_tower, tower_pass=tower_activations, pp=cfg.pp))


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

