"""Training and fine-tuning a transformer: memory per GPU with every term, step time, MFU, time to
train and cost.

Model states per trainable parameter (bytes): weights + gradients + fp32 master copy + optimizer
state. With AdamW and bf16 mixed precision that is 2 + 2 + 4 + 4 + 4 = 16 (Rajbhandari et al.,
ZeRO, 2020: "2Ψ + 2Ψ + KΨ" with K = 12 for the master copy and two moments — the "×12 bytes"
shortcut counts only those K bytes).

Activations per layer follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", §4), generalised from their GPT-3 layer (s·b·h·(34 + 5·a·s/h) bytes) to
grouped-query attention, gated MLPs and any intermediate size: every tensor a backward pass reads is
counted at 2 bytes, dropout masks at 1 byte, the a·s² softmax terms only without a fused (flash)
kernel. Tensor parallelism divides the inner terms by t, sequence parallelism the rest; selective
recomputation drops the s² terms, full recomputation keeps only each layer's input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.hardware.usable import usable_memory
from sizeup.ingest.hf_config import LayerSpec, ModelArch
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.ledger import OpKind
from sizeup.price.comm import Link, collective_time, device_link, group_collective_time, network_link
from sizeup.price.efficiency import device_efficiency
from sizeup.price.engines import get_engine
from sizeup.price.memory import max_fitting
from sizeup.price.roofline import price, tensor_precision
from sizeup.ranges import Range
from sizeup.units import MIB
from sizeup.workload.finetune import FinetuneSpec, Method, targeted, trainable_parameters
from sizeup.workload.frameworks import KERNELS
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.quantize import LINEAR_ROLES, get_format, nf4_matrix_bytes, tensor_bytes_map

__all__ = ["Precision", "PRECISIONS", "OPTIMIZER_STATE_BYTES", "RECOMPUTE_POLICIES", "TrainingConfig",
           "TrainingMemory", "TrainingEstimate", "layer_activation_bytes", "layer_projections", "estimate_training"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Precision:
    weight: float
    """Bytes of the working copy of each parameter."""
    grad: float
    master: float
    """fp32 master copy kept by mixed precision."""
    state_scale: float
    """Optimizer state relative to fp32 moments (0.5: moments kept in bf16)."""
    compute: str
    note: str


PRECISIONS = {
    "fp32": Precision(weight=4, grad=4, master=0, state_scale=1, compute="fp32",
                      note="fp32 weights and gradients, no master copy"),
    "bf16-mixed": Precision(weight=2, grad=2, master=4, state_scale=1, compute="bf16",
                            note="bf16 weights and gradients with an fp32 master copy and fp32 optimizer state"),
    "bf16": Precision(weight=2, grad=2, master=0, state_scale=0.5, compute="bf16",
                      note="pure bf16: weights, gradients and optimizer moments in bf16, no master copy"),
    "fp8": Precision(weight=3, grad=2, master=4, state_scale=1, compute="fp8",
                     note="Transformer Engine style fp8: bf16 weights plus an fp8 copy, fp32 master and state; "
                          "matrix products at the fp8 peak"),
}

RECOMPUTE_POLICIES = {
    "none": "no recomputation: every layer keeps what its backward pass reads",
    "selective": "Megatron-style selective recomputation: the attention scores (a·s² terms) are recomputed, "
                 "which saves nothing more under FlashAttention",
    "selective-op": "per-op selective checkpointing as torchtitan applies it (selective_ac_option 'op'): each layer "
                    "keeps its input, the attention output and every other matrix-product output in call order; "
                    "the other products, norms and activations are recomputed",
    "full": "full recomputation: each layer keeps only its input and reruns its forward pass in backward",
}

OPTIMIZER_STATE_BYTES = {
    "adamw": 8.0, "adam": 8.0,  # two fp32 moments
    "adamw-8bit": 2.0,  # bitsandbytes: two 8-bit moments (block-wise scales, 2 × 4 bytes per 2048, ignored)
    "sgd": 4.0,  # momentum buffer
    "lion": 4.0,  # one momentum buffer
    "adafactor": 0.0,  # factored second moment: rows + columns per matrix, added per tensor
}


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingConfig:
    finetune: FinetuneSpec = field(default_factory=FinetuneSpec)
    optimizer: str = "adamw"
    precision: str = "bf16-mixed"
    recompute: str = "none"
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    seq: int = 2048
    micro_batch: int | None = None
    """Per GPU; None: the largest that fits."""
    global_batch: int | None = None
    """Sequences per optimizer step; None: micro_batch × data parallel (no accumulation)."""
    tokens: int | None = None
    epochs: float | None = None
    dataset_tokens: int | None = None
    flash_attention: bool = True
    loss_chunks: int = 1
    """The cross-entropy runs over this many slices of the sequence (litgpt, torchtune chunk it); 1: all
    at once."""
    kernels: str = "fused"
    """fused: Korthikanti's count (Megatron / Transformer Engine, torch.compile); eager: PyTorch modules op by
    op (see sizeup.workload.frameworks.KERNELS)."""
    keeps_last_graph: bool = False
    """The training loop still references the previous step's output while the next forward runs (litgpt):
    whatever that graph holds outside autograd's saved tensors is still alive at the forward peak."""
    framework: str | None = None
    """The framework profile the settings came from, for the report."""
    offer: str | None = None
    network_gbit_per_s: float | None = None
    """Per node; default from the offer, else 400 Gb/s per GPU."""

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZER_STATE_BYTES:
            raise ConfigError(f"--optimizer {self.optimizer!r}: expected one of {', '.join(OPTIMIZER_STATE_BYTES)}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"--precision {self.precision!r}: expected one of {', '.join(PRECISIONS)}")
        if self.recompute not in RECOMPUTE_POLICIES:
            raise ConfigError(f"--recompute {self.recompute!r}: expected one of {', '.join(RECOMPUTE_POLICIES)}")
        if self.seq < 1:
            raise ConfigError(f"--seq {self.seq}: expected a positive integer")
        if self.micro_batch is not None and self.micro_batch < 1:
            raise ConfigError(f"--micro-batch {self.micro_batch}: expected a positive integer")
        if self.loss_chunks < 1:
            raise ConfigError(f"--loss-chunks {self.loss_chunks}: expected a positive integer")
        if self.global_batch is not None and self.global_batch < 1:
            raise ConfigError(f"--global-batch {self.global_batch}: expected a positive integer")
        if self.kernels not in KERNELS:
            raise ConfigError(f"--kernels {self.kernels!r}: expected one of {', '.join(KERNELS)}")
        if self.finetune.method == Method.QLORA and self.precision == "fp32":
            raise ConfigError("--method qlora computes in bf16: use --precision bf16-mixed or bf16")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingMemory:
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    overhead_bytes: int
    usable_bytes: Range

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes + \
            self.overhead_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.usable_bytes.typical

    def to_dict(self) -> dict[str, Any]:
        return {"weights_bytes": self.weights_bytes, "gradients_bytes": self.gradients_bytes,
                "optimizer_bytes": self.optimizer_bytes, "activations_bytes": self.activations_bytes,
                "overhead_bytes": self.overhead_bytes, "total_bytes": self.total_bytes,
                "usable_bytes": self.usable_bytes.typical}


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingEstimate:
    arch: ModelArch
    device: DeviceSpec
    config: TrainingConfig
    micro_batch: int
    grad_accumulation: int
    global_batch: int
    memory: TrainingMemory
    max_micro_batch: int
    trainable_params: int
    step_s: Range
    tokens_per_s: Range
    mfu: Range
    hfu: Range
    time_to_train_s: Range | None
    cost_usd: dict[str, Range] | None
    offer: Offer | None
    breakdown_s: dict[str, float]
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        cfg, par = self.config, self.config.parallel
        return {
            "model": {"name": self.arch.name, "params": self.arch.params, "active_params": self.arch.active_params,
                      "trainable_params": self.trainable_params},
            "device": {"id": self.device.id, "name": self.device.name, "gpus": par.gpus, "nodes": par.nodes},
            "config": {"method": cfg.finetune.method.value, "rank": cfg.finetune.rank,
                       "targets": list(cfg.finetune.targets), "optimizer": cfg.optimizer, "precision": cfg.precision,
                       "recompute": cfg.recompute, "tp": par.tp, "pp": par.pp, "vp": par.vp, "dp": par.dp, "ep": par.ep,
                       "tp_overlap": par.tp_overlap, "loss_chunks": cfg.loss_chunks, "kernels": cfg.kernels,
                       "framework": cfg.framework,
                       "zero": par.zero, "seq": cfg.seq, "micro_batch": self.micro_batch,
                       "grad_accumulation": self.grad_accumulation, "global_batch": self.global_batch},
            "memory": {"per_gpu": self.memory.to_dict()},
            "fits": self.memory.fits,
            "max_micro_batch": self.max_micro_batch,
            "step": {"latency_s": self.step_s.to_dict(), "breakdown_s": dict(self.breakdown_s)},
            "throughput": {"tokens_per_s": self.tokens_per_s.to_dict(),
                           "tokens_per_s_per_gpu": self.tokens_per_s.scale(1 / par.gpus).to_dict()},
            "mfu": self.mfu.to_dict(),
            "hfu": self.hfu.to_dict(),
            "time_to_train_s": None if self.time_to_train_s is None else self.time_to_train_s.to_dict(),
            "gpu_hours": None if self.time_to_train_s is None else
            self.time_to_train_s.scale(par.gpus / 3600).to_dict(),
            "cost_usd": None if self.cost_usd is None else {k: v.to_dict() for k, v in self.cost_usd.items()},
            "offer": None if self.offer is None else {"id": self.offer.id, "price_date": self.offer.price_date},
            "assumptions": list(self.assumptions),
        }


# ---- activations --------------------------------------------------------------------------

def layer_projections(arch: ModelArch, layer: LayerSpec) -> list[tuple[int, int, bool]]:
    """The layer's matrix products with a weight, in call order: (output width, input width, split
    across tensor-parallel ranks). Column-parallel products split their output; row-parallel ones
    (attention output, MLP down) produce a full-width partial sum on every rank. Routed experts run as
    grouped products and are left out."""
    a, m, h = layer.attention, layer.mlp, arch.hidden
    out: list[tuple[int, int, bool]] = []
    if a.mla is not None:
        nope_rope = a.mla.qk_nope_head_dim + a.mla.qk_rope_head_dim
        if a.mla.q_lora_rank:
            out += [(a.mla.q_lora_rank, h, False), (a.heads * nope_rope, a.mla.q_lora_rank, True)]
        else:
            out.append((a.heads * nope_rope, h, True))
        out += [(a.mla.kv_lora_rank + a.mla.qk_rope_head_dim, h, False),
                (a.heads * (a.mla.qk_nope_head_dim + a.mla.v_head_dim), a.mla.kv_lora_rank, True)]
    else:
        out += [(a.heads * a.head_dim, h, True), (a.kv_heads * a.head_dim, h, True),
                (a.kv_heads * a.v_head_dim, h, True)]
    out.append((h, a.heads * a.v_head_dim, False))
    def mlp(inter: int) -> list[tuple[int, int, bool]]:
        return ([(inter, h, True)] if m.gated else []) + [(inter, h, True), (h, inter, False)]
    if m.is_moe:
        out.append((m.experts, h, False))  # the router
        if m.shared_experts:
            out += mlp(m.shared_intermediate * m.shared_experts)
    else:
        out += mlp(m.intermediate)
    return out


def layer_activation_bytes(arch: ModelArch, layer: LayerSpec, micro_batch: int, seq: int, *, tp: int = 1,
                           sequence_parallel: bool = False, recompute: str = "none", flash: bool = True,
                           act_bytes: int = 2) -> int:
    """Bytes one layer keeps for its backward pass (Korthikanti et al. 2022, generalised)."""
    s, b, h = seq, micro_batch, arch.hidden
    a, m = layer.attention, layer.mlp
    dropout = arch.dropout > 0
    sbh = s * b * h
    shard = tp if sequence_parallel else 1
    if recompute == "full":
        return act_bytes * sbh // shard  # the layer's input
    if recompute == "selective-op":
        # the input, the attention output with its fp32 log-sum-exp, and the 1st, 3rd, 5th… products' outputs
        kept = act_bytes * sbh // shard + (act_bytes * s * b * a.heads * a.v_head_dim + 4 * s * b * a.heads) // tp
        for width, _, split in layer_projections(arch, layer)[::2]:
            kept += act_bytes * s * b * width // (tp if split else 1)
        return kept
    # replicated across tensor-parallel ranks unless sequence parallel: norm inputs, the inputs of the
    # qkv and MLP projections, the two dropout masks after the attention and MLP projections
    replicated = act_bytes * sbh * (layer.norms + 2) + (2 * sbh if dropout else 0)
    # split across tensor-parallel ranks: q, k, v, attention output, MLP intermediates
    q = act_bytes * s * b * a.heads * a.head_dim
    kv = act_bytes * s * b * a.kv_heads * (a.head_dim + a.v_head_dim)
    if a.mla is not None:
        kv = act_bytes * s * b * a.heads * (a.head_dim + a.v_head_dim) + act_bytes * s * b * (
            a.mla.kv_lora_rank + a.mla.qk_rope_head_dim)
    out = act_bytes * s * b * a.heads * a.v_head_dim
    scores = 0
    if not flash and recompute == "none":
        # softmax output, and with dropout its mask (1 byte) and the dropped copy
        scores = s * s * b * a.heads * (act_bytes + (1 + act_bytes if dropout else 0))
    inter = m.intermediate * (m.top_k if m.is_moe else 1) + m.shared_intermediate * m.shared_experts
    mlp = act_bytes * s * b * inter * (4 if m.gated else 2)  # gate, up, act(gate), product | act in, act out
    split = q + kv + out + scores + mlp
    return replicated // shard + split // tp


def _adapter_activation_bytes(arch: ModelArch, layer: LayerSpec, cfg: TrainingConfig, micro_batch: int) -> int:
    """What adapters change in one layer's saved activations (none/selective recomputation, dense layers).

    The Korthikanti count keeps every projection's input, as full training does. A frozen weight needs
    no input for its own gradient: PyTorch's autograd saves an input of a matrix product only for the
    gradient that needs it, so under LoRA the attention and MLP inputs and the MLP product are kept only
    where an adapter reads them without dropout (the attention output stays: FlashAttention keeps it).
    bitsandbytes' 4-bit product (QLoRA) keeps its input whenever gradients flow (MatMul4Bit saves
    ctx.tensors = (A, B)), so QLoRA keeps them all. With dropout p > 0 each adapter keeps its own dropped
    input (2 bytes) and mask (1 byte) per element.
    """
    spec = cfg.finetune
    if not spec.uses_adapters or cfg.recompute not in ("none", "selective") or layer.attention.mla is not None:
        return 0
    par = cfg.parallel
    tokens = micro_batch * cfg.seq
    h = arch.hidden // (par.tp if par.sequence_parallel and par.tp > 1 else 1)  # as the base count shards it
    mlp = [] if layer.mlp.is_moe else [("mlp_in", h, "gate_proj"), ("mlp_in", h, "up_proj"),
                                        ("mlp_mid", layer.mlp.intermediate // par.tp, "down_proj")]
    if not layer.mlp.gated:
        mlp = [m for m in mlp if m[2] != "gate_proj"]
    inputs = [("attn_in", h, "q_proj"), ("attn_in", h, "k_proj"), ("attn_in", h, "v_proj")] + mlp
    change = 0
    for group in ("attn_in", "mlp_in", "mlp_mid"):
        members = [(width, name) for g, width, name in inputs if g == group]
        if not members:
            continue
        width = members[0][0]
        hit = [name for _, name in members if targeted(name, spec)]
        kept = spec.method == Method.QLORA or (hit and spec.dropout == 0)
        if not kept:
            change -= 2 * tokens * width
        if hit and spec.dropout > 0:
            copies = 1 if group == "attn_in" and spec.fused_qkv else len(hit)
            change += 3 * tokens * width * copies
    if spec.dropout > 0 and targeted("o_proj", spec):
        change += 3 * tokens * layer.attention.heads * layer.attention.v_head_dim // par.tp
    return change


def _eager_activation_bytes(arch: ModelArch, layer: LayerSpec, cfg: TrainingConfig, micro_batch: int,
                            recompute: str) -> int:
    """What one layer keeps beyond the fused count when PyTorch runs its modules op by op (kernels 'eager').

    - RMSNorm computes in fp32 (x.float(), x * rsqrt(mean(x²))): it keeps the 4-byte copy of its input instead
      of the 2-byte input, and the 2-byte normalized output too when its weight trains. LayerNorm runs as one
      kernel (native_layer_norm) and keeps what the fused count says.
    - Grouped K and V are repeated to the query heads before scaled_dot_product_attention (transformers'
      repeat_kv, litgpt's repeat_interleave), which keeps the repeated copies.
    - With one fused qkv product and as many K/V heads as query heads, V is a view of that product's output
      (q and k are new tensors after RoPE), so the whole output stays alive.
    - Without a fused attention kernel the output projection reads a reshaped copy of the attention output,
      kept when the projection needs its input (trained weights, bitsandbytes 4-bit products, an adapter
      without dropout). Flash and memory-efficient kernels return a transposed view of a (batch, sequence,
      heads, dim) buffer, so there the reshape is a view of the tensor the kernel already keeps.
    """
    if cfg.kernels != "eager" or recompute not in ("none", "selective"):
        return 0
    par, spec = cfg.parallel, cfg.finetune
    tokens = micro_batch * cfg.seq
    a = layer.attention
    h = arch.hidden // (par.tp if par.sequence_parallel and par.tp > 1 else 1)
    weights_train = spec.method in (Method.FULL, Method.FREEZE)
    extra = 0
    if arch.norm == "rms":
        extra += layer.norms * tokens * h * (4 if weights_train else 2)
    if a.mla is None:
        if a.kv_heads < a.heads:
            extra += 2 * tokens * (a.heads - a.kv_heads) * (a.head_dim + a.v_head_dim) // par.tp
        elif spec.fused_qkv:
            extra += 2 * tokens * (a.heads + a.kv_heads) * a.head_dim // par.tp
    if not cfg.flash_attention and (weights_train or spec.method == Method.QLORA or (
            spec.uses_adapters and targeted("o_proj", spec) and spec.dropout == 0)):
        extra += 2 * tokens * a.heads * a.v_head_dim // par.tp
    return extra


def _bnb_held_input_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int) -> int:
    """Inputs that bitsandbytes' 4-bit products keep in ctx.tensors (outside autograd's saved tensors, so
    they live as long as the graph): per layer the attention input, the attention output, the MLP input
    and the MLP product (routed experts: top-k copies), plus the head's input when the head is quantized."""
    tokens = micro_batch * cfg.seq
    per_token = arch.hidden if cfg.finetune.quantize_head else 0
    for layer in arch.layers:
        a, m = layer.attention, layer.mlp
        per_token += arch.hidden + a.heads * a.v_head_dim
        if m.is_moe:
            per_token += m.top_k * (arch.hidden + m.intermediate)
            if m.shared_experts:
                per_token += arch.hidden + m.shared_intermediate * m.shared_experts
        else:
            per_token += arch.hidden + m.intermediate
    return 2 * tokens * per_token // cfg.parallel.tp


def _largest_quantized_matrix(arch: ModelArch, spec: FinetuneSpec) -> int:
    """Elements of the largest single 4-bit weight matrix (one expert of a stacked expert tensor)."""
    largest = max((t.shape[-2] * t.shape[-1] for t in arch.tensors()
                   if t.role in LINEAR_ROLES and len(t.shape) >= 2), default=0)
    if spec.quantize_head and arch.lm_head:
        largest = max(largest, arch.vocab * arch.hidden)
    return largest


def _activation_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int, trainable_from: int,
                      in_flight: int) -> int:
    """Saved activations on the first pipeline stage: its layers (only those at or above the lowest
    trainable layer need them), pp micro-batches in flight under 1F1B, plus the logits."""
    par = cfg.parallel
    per_stage = -(-arch.num_layers // par.pp)
    sp = par.sequence_parallel and par.tp > 1
    layers = [layer for i, layer in enumerate(arch.layers) if i < per_stage and i >= trainable_from]
    act = sum(layer_activation_bytes(arch, layer, micro_batch, cfg.seq, tp=par.tp, sequence_parallel=sp,
                                     recompute=cfg.recompute, flash=cfg.flash_attention)
              + _adapter_activation_bytes(arch, layer, cfg, micro_batch)
              + _eager_activation_bytes(arch, layer, cfg, micro_batch, cfg.recompute) for layer in layers)
    act *= max(1, min(par.pp, in_flight))
    if cfg.recompute in ("full", "selective-op") and layers:  # one layer is rematerialised at a time in backward
        act += layer_activation_bytes(arch, layers[0], micro_batch, cfg.seq, tp=par.tp, sequence_parallel=sp,
                                      flash=cfg.flash_attention) + \
            _eager_activation_bytes(arch, layers[0], cfg, micro_batch, "none")
    if cfg.finetune.method == Method.QLORA and cfg.keeps_last_graph and cfg.recompute in ("none", "selective"):
        # the previous step's graph is still referenced during this forward: its 4-bit products' inputs too
        act += _bnb_held_input_bytes(arch, cfg, micro_batch)
    # the logits and the loss (vocab-parallel ÷ tp): the bf16 logits stay alive through the loss, and
    # cross-entropy upcasts them to fp32 and keeps an fp32 log-softmax for its backward: 2 + 4 + 4 bytes
    # per logit, the fp32 part for one chunk at a time when the loss is chunked
    if arch.lm_head:
        act += int(micro_batch * cfg.seq * arch.vocab * (2 + 8 / min(cfg.loss_chunks, cfg.seq))) // par.tp
        if cfg.finetune.uses_adapters and cfg.finetune.dropout > 0 and targeted("lm_head", cfg.finetune):
            act += 3 * micro_batch * cfg.seq * arch.hidden  # the head adapter's dropped input and mask
    return act


# ---- memory -------------------------------------------------------------------------------

def _state_bytes(arch: ModelArch, cfg: TrainingConfig, trainable: int) -> float:
    """Optimizer state bytes for `trainable` parameters (Adafactor: factored rows + columns)."""
    precision = PRECISIONS[cfg.precision]
    if cfg.optimizer != "adafactor":
        return trainable * OPTIMIZER_STATE_BYTES[cfg.optimizer] * precision.state_scale
    if cfg.finetune.method != Method.FULL:
        return trainable * 4.0  # adapters are small: count their full second moment
    total = 0
    for t in arch.tensors():
        total += (t.shape[-2] + t.shape[-1]) * 4 if len(t.shape) >= 2 else t.numel * 4
    return total * precision.state_scale


def training_memory(arch: ModelArch, device: DeviceSpec, cfg: TrainingConfig, micro_batch: int,
                    in_flight: int = 1) -> TrainingMemory:
    """Memory per GPU; `in_flight`: micro-batches whose activations the first pipeline stage holds."""
    par, precision = cfg.parallel, PRECISIONS[cfg.precision]
    spec = cfg.finetune
    trainable = trainable_parameters(arch, spec)
    model_split = par.tp * par.pp  # each GPU holds this fraction of every matrix and layer
    expert_params = sum(t.numel for t in arch.tensors() if t.role == "expert")
    dense_params = arch.params - expert_params
    # frozen base weights, in their storage format
    frozen_width = 4 if precision.compute == "fp32" else 2
    if spec.method == Method.QLORA:
        nf4 = get_format("nf4" if spec.double_quant else "nf4-no-dq")
        frozen_bytes = sum(tensor_bytes_map(arch, nf4).values())
        if spec.quantize_head and arch.lm_head:  # the head as its own 4-bit matrix (a tied one gets a copy)
            frozen_bytes += nf4_matrix_bytes(arch.vocab, arch.hidden, nf4) - \
                (0 if arch.tie_embeddings else arch.vocab * arch.hidden * 2)
    elif spec.method == Method.FULL:
        frozen_bytes = 0
    elif spec.method == Method.FREEZE:
        frozen_bytes = (arch.params - trainable.trainable_params) * frozen_width
    else:
        frozen_bytes = arch.params * frozen_width
    # fraction of every tensor one GPU holds: dense tensors ÷ tp·pp, routed experts also ÷ ep; ZeRO
    # shards dense tensors over all dp ranks and experts over the dp/ep ranks that hold the same experts
    def share(zero_stage: int) -> float:
        dp, expert_dp = (par.dp, max(1, par.dp // par.ep)) if par.zero >= zero_stage else (1, 1)
        return (dense_params / (model_split * dp) + expert_params / (model_split * par.ep * expert_dp)) / arch.params

    weights = (frozen_bytes + trainable.trainable_params * precision.weight) * share(3)
    grads = trainable.trainable_params * precision.grad * share(2)
    optimizer = (trainable.trainable_params * precision.master + _state_bytes(arch, cfg, trainable.trainable_params)) \
        * share(1)
    trainable_from = min(trainable.trainable_layers, default=0) if spec.method == Method.FREEZE else 0
    activations = _activation_bytes(arch, cfg, micro_batch, trainable_from, in_flight)
    overhead = 0.0
    if par.zero >= 3:  # the layer being computed and the one prefetched, gathered whole (local experts only)
        layer_params = (dense_params + expert_params / par.ep) / max(arch.num_layers, 1) / model_split
        overhead += 2 * layer_params * precision.weight
    if par.dp > 1 and par.zero < 3:
        overhead += 2 * 25 * MIB  # DDP's two 25 MiB gradient buckets
    if spec.method == Method.QLORA:  # a 4-bit weight is multiplied as a full-size bf16 (fp16 + bf16) copy
        overhead += _largest_quantized_matrix(arch, spec) * 2 * spec.dequant_copies / par.tp
    fraction = get_engine("hf").range("allocator_overhead_fraction")
    overhead += (weights + grads + optimizer + activations) * (fraction.typical if fraction else 0.0)
    return TrainingMemory(weights_bytes=int(weights), gradients_bytes=int(grads), optimizer_bytes=int(optimizer),
                          activations_bytes=int(activations), overhead_bytes=int(overhead),
                          usable_bytes=usable_memory(device).bytes)


# ---- time ----------------------------------------------------------------------------------

def _links(device: DeviceSpec, cfg: TrainingConfig, offer: Offer | None) -> tuple[Link | None, Link | None]:
    intra = device_link(device)
    if cfg.parallel.nodes == 1:
        return intra, None
    per_node = cfg.network_gbit_per_s or (offer.network_bytes_per_s * 8 / 1e9 if offer and offer.network_bytes_per_s
                                          else 400.0 * cfg.parallel.gpus_per_node)
    return intra, network_link(per_node * 1e9 / 8 / cfg.parallel.gpus_per_node)


def _model_flops_per_token(arch: ModelArch, seq: int, method: Method) -> float:
    """6·N + 12·L·H·Q·T per token (PaLM appendix B; N without the embedding lookup), with 4·N for
    adapter methods, which compute no weight gradients for the frozen base."""
    n = arch.active_params - (0 if arch.image else arch.vocab * arch.hidden * (0 if arch.tie_embeddings else 1))
    attention = sum(12 * layer.attention.heads * layer.attention.head_dim * seq for layer in arch.layers)
    factor = 6 if method in (Method.FULL, Method.FREEZE) else 4
    return factor * n + attention


def _recomputed_product_share(arch: ModelArch) -> float:
    """Share of the weight products' FLOPs that per-op selective checkpointing reruns: the 2nd, 4th…
    product of every layer and the routed experts (FLOPs ∝ output × input width at a fixed token
    count), against all products including the head."""
    rerun = total = 0
    for layer in arch.layers:
        products = [w * i for w, i, _ in layer_projections(arch, layer)]
        rerun += sum(products[1::2])
        total += sum(products)
        m = layer.mlp
        if m.is_moe:  # routed experts run as grouped products, which the policy does not keep: all rerun
            experts = m.top_k * m.intermediate * arch.hidden * (3 if m.gated else 2)
            rerun, total = rerun + experts, total + experts
    if arch.lm_head:
        total += arch.vocab * arch.hidden
    return rerun / total if total else 0.0


def estimate_training(arch: ModelArch, device: DeviceSpec, cfg: TrainingConfig, offers: list[Offer] = ()) -> TrainingEstimate:
    par = cfg.parallel
    a0 = arch.layers[0].attention
    par.check_model(a0.heads, a0.kv_heads, arch.num_layers, max((l.mlp.experts for l in arch.layers), default=0))
    trainable = trainable_parameters(arch, cfg.finetune)
    assumptions = [PRECISIONS[cfg.precision].note]
    # micro-batch: given, or the largest that fits
    def accumulation_for(mb: int) -> int:
        return max(1, math.ceil((cfg.global_batch or mb * par.dp) / (mb * par.dp)))

    def fits(mb: int) -> bool:
        return training_memory(arch, device, cfg, mb, accumulation_for(mb)).fits

    max_mb = max_fitting(fits, 1, 4096)
    micro = cfg.micro_batch or max(max_mb, 1)
    if cfg.micro_batch is None and max_mb < 1:
        assumptions.append("not even micro-batch 1 fits: figures are for micro-batch 1")
    global_batch = cfg.global_batch or micro * par.dp
    accumulation = accumulation_for(micro)
    if global_batch % (micro * par.dp):
        assumptions.append(f"global batch {global_batch} is not a multiple of micro-batch × data parallel "
                           f"({micro} × {par.dp}): {accumulation} accumulation steps of {micro * par.dp}")
        global_batch = accumulation * micro * par.dp
    memory = training_memory(arch, device, cfg, micro, accumulation)

    precision = PRECISIONS[cfg.precision]
    weights = "nf4" if cfg.finetune.method == Method.QLORA else precision.compute if precision.compute != "fp8" else "fp8"
    weights = {"fp32": "fp32", "bf16": "bf16"}.get(weights, weights)
    forward = transformer_ledger(arch, Step(batch=micro, new_tokens=cfg.seq, context=cfg.seq, logits="all"),
                                 weights=weights, act_dtype="fp32" if cfg.precision == "fp32" else "bf16", tp=par.tp, per_layer=False)
    eff = device_efficiency(device)
    roof = price(forward, device, eff)
    by_kind = {k: v["time_s"].scale(1 / par.pp) for k, v in roof.by("kind").items()}
    zero = Range.exact(0.0)
    t_fwd = roof.total_s.scale(1 / par.pp)
    t_attn = by_kind.get("attention", zero)
    t_weights = by_kind.get("matmul", zero)  # products with a weight matrix (the projections, the head)
    if precision.compute == "fp8":  # each FP8 product first quantizes its operands (cast, scale, transpose)
        quantize = get_engine("transformer-engine").range("fp8_quantize_overhead_fraction") or zero
        t_quantize = Range(*(getattr(t_weights, lv) * getattr(quantize, lv) for lv in ("low", "typical", "high")))
        t_fwd, t_weights = t_fwd + t_quantize, t_weights + t_quantize
        assumptions.append(f"FP8 products pay Transformer Engine's operand quantization, +{quantize.typical:.0%} "
                           f"of their kernel time (current scaling)")
    t_rest = sum((t for k, t in by_kind.items() if k not in ("attention", "matmul")), zero)  # norms, activations…
    method = cfg.finetune.method
    reach = 1.0 if method == Method.FULL else \
        1 - min(trainable.trainable_layers, default=arch.num_layers) / arch.num_layers
    # backward per op kind: a weight product costs its input gradient plus, where the weight is
    # trained, its weight gradient (1 + 1 forward); adapter methods skip the frozen weights' half.
    # FlashAttention's backward recomputes the scores: 5 matrix products against the forward's 2
    # (Dao et al. 2022, FlashAttention: S and P are rebuilt from Q, K in backward); materialised
    # scores need 4. Everything else ≈ 2× forward.
    weight_factor = 2.0 if method in (Method.FULL, Method.FREEZE) else 1.0
    attention_factor = 2.5 if cfg.flash_attention else 2.0
    t_bwd = (t_weights.scale(weight_factor) + t_attn.scale(attention_factor) + t_rest.scale(2.0)).scale(reach)
    if cfg.recompute == "full":
        t_recompute = t_fwd
    elif cfg.recompute == "selective-op":  # the even-numbered products and every non-product op, not attention
        t_recompute = t_weights.scale(_recomputed_product_share(arch)) + t_rest
    elif cfg.recompute == "selective" and not cfg.flash_attention:
        t_recompute = t_attn
    else:
        t_recompute = zero
    offer = _pick_offer(device, par.gpus, offers, cfg.offer)
    intra, inter = _links(device, cfg, offer)
    # tensor-parallel collectives: 2 per layer forward, 2 backward (and 2 more with full recompute)
    t_tp = Range.exact(0.0)
    if par.tp > 1:
        if intra is None:
            assumptions.append(f"{device.id}: no link bandwidth in the catalog: tensor-parallel traffic not priced")
        else:
            size = micro * cfg.seq * arch.hidden * 2
            per_layer = collective_time("all_reduce", size, par.tp, intra)
            count = (4 + (2 if cfg.recompute == "full" else 0)) * -(-arch.num_layers // par.pp)
            t_tp = per_layer.scale(count)
            if par.tp_overlap:  # hidden behind the products it is split into, only the excess exposed
                t_tp = _exposed(t_tp, t_weights + t_weights.scale(weight_factor * reach))
    micro_step = t_fwd + t_bwd + t_recompute + t_tp
    bubble = (par.pp - 1) / (par.vp * accumulation) if par.pp > 1 else 0.0
    compute = micro_step.scale(accumulation * (1 + bubble))
    # data-parallel gradient traffic, overlapped with the backward pass. Routed experts are sharded ÷ ep
    # and replicated only across the dp/ep ranks that hold the same experts, so their traffic runs in
    # that smaller group (expert data parallelism)
    t_dp = Range.exact(0.0)
    link = inter if par.dp_crosses_nodes else intra
    expert_share = sum(t.numel for t in arch.tensors() if t.role == "expert") / arch.params
    trained_expert_share = expert_share if method in (Method.FULL, Method.FREEZE) else 0.0
    # ranks of one data-parallel group on a node: tensor parallel is innermost, then data parallel
    dp_per_node = max(1, min(par.dp, par.gpus_per_node // par.tp))
    dp_inter = inter if par.dp_crosses_nodes else None

    def dp_collective(kind: str, total_bytes: float, expert_fraction: float) -> Range:
        dense = group_collective_time(kind, total_bytes * (1 - expert_fraction), par.dp, dp_per_node, intra, dp_inter)
        expert_group = par.dp // par.ep
        if expert_fraction and expert_group > 1:
            dense = dense + group_collective_time(kind, total_bytes * expert_fraction / par.ep, expert_group,
                                                  max(1, dp_per_node // par.ep), intra, dp_inter)
        return dense

    grad_bytes = trainable.trainable_params * precision.grad / (par.tp * par.pp)
    if par.dp > 1:
        if link is None:
            assumptions.append(f"{device.id}: no link bandwidth in the catalog: data-parallel traffic not priced")
        else:
            if par.zero >= 3:  # all-gather weights forward and backward, reduce-scatter gradients, each micro-step
                weight_bytes = arch.params * precision.weight / (par.tp * par.pp)
                one = dp_collective("all_gather", weight_bytes, expert_share).scale(2) + \
                    dp_collective("reduce_scatter", grad_bytes, trained_expert_share)
                t_dp = _exposed(one, t_fwd + t_bwd).scale(accumulation)
            else:
                t_dp = _exposed(dp_collective("all_reduce", grad_bytes, trained_expert_share), t_bwd)
    # expert-parallel all-to-alls: dispatch and combine, forward and backward, per MoE layer
    t_ep = Range.exact(0.0)
    if par.ep > 1 and intra is not None:
        moe_layers = sum(1 for layer in arch.layers if layer.mlp.is_moe)
        top_k = max((layer.mlp.top_k for layer in arch.layers), default=0)
        size = micro * cfg.seq * top_k * arch.hidden * 2
        t_ep = group_collective_time("all_to_all", size, par.ep, min(par.ep, dp_per_node), intra,
                                     inter if par.nodes > 1 else None).scale(
            4 * moe_layers * accumulation / par.pp)
    # optimizer step: reads and writes master, moments, gradients and weights once (memory-bound)
    opt_bytes = 2 * (memory.optimizer_bytes + memory.gradients_bytes + trainable.trainable_params * precision.weight
                     / (par.tp * par.pp * (par.dp if par.zero >= 3 else 1)))
    t_opt = Range(*(opt_bytes / (device.memory_bandwidth_bytes_per_s * getattr(eff.memory, lv))
                    for lv in ("high", "typical", "low")))
    step = compute + t_dp + t_ep + t_opt
    tokens_per_step = global_batch * cfg.seq
    tokens_per_s = step.inverse(tokens_per_step)
    peak = tensor_precision(device, "matmul", precision.compute)
    model_flops = _model_flops_per_token(arch, cfg.seq, method) * tokens_per_step
    recompute_factor = 1 + t_recompute.typical / max((t_fwd + t_bwd).typical, 1e-30)
    if peak is None:
        mfu = hfu = Range.exact(0.0)
        assumptions.append(f"{device.id} lists no {precision.compute} peak: MFU not computed")
    else:
        denominator = peak[2] * par.gpus
        mfu = step.inverse(model_flops / denominator)
        hfu = mfu.scale(recompute_factor)
    total_tokens = cfg.tokens
    if total_tokens is None and cfg.epochs is not None:
        if not cfg.dataset_tokens:
            raise ConfigError("--epochs needs --dataset-tokens (tokens in one pass over the data)")
        total_tokens = int(cfg.epochs * cfg.dataset_tokens)
    time_to_train = cost = None
    if total_tokens:
        steps = math.ceil(total_tokens / tokens_per_step)
        time_to_train = step.scale(steps)
        if offer is not None:
            instances = math.ceil(par.gpus / offer.gpu_count)
            hours = time_to_train.scale(1 / 3600)
            cost = {"on_demand": hours.scale(instances * offer.on_demand_usd_per_hour)}
            if offer.spot_usd_per_hour:
                cost["spot"] = hours.scale(instances * offer.spot_usd_per_hour)
            assumptions.append(f"cost on {instances} × {offer.id} at ${offer.on_demand_usd_per_hour:.2f}/h "
                               f"(price of {offer.price_date}); spot without preemption overhead")
    breakdown = {"forward": t_fwd.typical * accumulation, "backward": t_bwd.typical * accumulation,
                 "recompute": t_recompute.typical * accumulation, "tensor_parallel": t_tp.typical * accumulation,
                 "pipeline_bubble": micro_step.typical * accumulation * bubble, "data_parallel_exposed": t_dp.typical,
                 "expert_parallel": t_ep.typical, "optimizer": t_opt.typical}
    assumptions += [
        "data-parallel gradient traffic overlaps the backward pass; only what exceeds it is exposed",
        "tensor-parallel collectives " + ("overlapped with the matrix products" if par.tp_overlap
                                          else "on the critical path") + "; pipeline 1F1B bubble (p − 1)/(v·m)",
        f"MFU counts {'6' if method in (Method.FULL, Method.FREEZE) else '4'}·N + 12·L·H·Q·T FLOPs per token "
        f"(PaLM appendix B) against the dense {precision.compute} peak",
    ]
    if cfg.optimizer in ("adamw", "adam") and cfg.precision == "bf16-mixed":
        assumptions.append("model states: 16 bytes per trainable parameter (2 weights + 2 gradients + 4 master + "
                           "8 moments); the '12 bytes' shortcut is the ZeRO paper's K=12 (master + moments only)")
    if par.tp > 1 and intra is not None:
        assumptions.append(f"tensor parallel over {intra.kind}")
    reserve = get_engine("hf").range("allocator_overhead_fraction")
    if par.zero >= 3 and par.dp > 1 and reserve is not None:
        assumptions.append(f"memory is what PyTorch allocates plus a {reserve.typical:.1%} allocator reserve; "
                           "published FSDP runs "
                           "reserved 7-50% more than they allocated or kept active (meta-llama/llama-cookbook PR #41, "
                           "issue #120), so leave that headroom or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    if par.dp_crosses_nodes and inter is not None:
        assumptions.append(f"data parallel across nodes at {inter.bytes_per_s * 8 / 1e9:.0f} Gb/s per GPU")
    assumptions.append((f"{cfg.framework}: " if cfg.framework else "") + f"{cfg.kernels} kernels: "
                       + KERNELS[cfg.kernels] + ("" if cfg.framework else "; --framework NAME takes a framework's own"
                                                 " settings (hf, litgpt, megatron, torchtitan, torchtune)"))
    if method == Method.QLORA:
        spec = cfg.finetune
        assumptions.append(f"QLoRA: NF4 base {'with' if spec.double_quant else 'without'} double "
                           f"quantization, LM head {'in NF4' if spec.quantize_head else 'in bf16'}, bf16 adapters; "
                           f"each 4-bit weight is multiplied as {spec.dequant_copies} full-size dequantized "
                           "cop" + ("ies" if spec.dequant_copies > 1 else "y") + " (the largest counted in overhead); "
                           "paged optimizer state counted on the GPU (it pages to CPU RAM only under memory spikes)")
        if cfg.keeps_last_graph and cfg.recompute in ("none", "selective"):
            assumptions.append("QLoRA: the loop keeps the previous step's output while the next forward runs, and "
                               "bitsandbytes keeps its products' inputs in ctx.tensors (outside saved tensors), so "
                               "the previous step's inputs are counted once more at the forward peak")
    return TrainingEstimate(arch=arch, device=device, config=cfg, micro_batch=micro, grad_accumulation=accumulation,
                            global_batch=global_batch, memory=memory, max_micro_batch=max_mb,
                            trainable_params=trainable.trainable_params, step_s=step, tokens_per_s=tokens_per_s,
                            mfu=mfu, hfu=hfu, time_to_train_s=time_to_train, cost_usd=cost, offer=offer,
                            breakdown_s=breakdown, assumptions=tuple(dict.fromkeys(assumptions)))


def _exposed(comm: Range, hidden_behind: Range) -> Range:
    """Communication left over after overlapping it with `hidden_behind` (sorted into a range)."""
    return Range(*sorted(max(0.0, getattr(comm, lv) - getattr(hidden_behind, lv)) for lv in ("low", "typical", "high")))


def _pick_offer(device: DeviceSpec, gpus: int, offers, wanted: str | None) -> Offer | None:
    candidates = [o for o in offers if o.gpu == device.id]
    if wanted:
        chosen = [o for o in offers if o.id == wanted]
        if not chosen:
            raise ConfigError(f"--offer {wanted!r}: no such offer (see 'sizeup hw offers')")
        return chosen[0]
    if not candidates:
        return None
    return min(candidates, key=lambda o: (math.ceil(gpus / o.gpu_count) * o.on_demand_usd_per_hour, o.id))


def with_settings(cfg: TrainingConfig, settings: dict[str, Any], framework: str | None = None) -> TrainingConfig:
    """`cfg` with the framework-dependent settings of sizeup.workload.frameworks.resolve_settings."""
    spec = replace(cfg.finetune, dropout=settings["lora_dropout"], fused_qkv=settings["fused_qkv"],
                   double_quant=settings["double_quant"], quantize_head=settings["quantize_head"],
                   dequant_copies=settings["dequant_copies"])
    return replace(cfg, finetune=spec, loss_chunks=settings["loss_chunks"], kernels=settings["kernels"],
                   keeps_last_graph=settings["keeps_last_graph"], framework=framework)


def with_method(cfg: TrainingConfig, method: str) -> TrainingConfig:
    return replace(cfg, finetune=replace(cfg.finetune, method=Method(method)))


@dataclass(frozen=True, slots=True, kw_only=True)
class TracedTrainingEstimate:
    """A training step of a traced torch module: the exact saved-tensor bytes from the trace, priced."""

    name: str
    device: DeviceSpec
    memory_peak_bytes: int
    memory_by_category: dict[str, int]
    usable_bytes: Range
    step_s: Range
    samples_per_step: int
    by_phase_s: dict[str, float]
    assumptions: tuple[str, ...]

    @property
    def fits(self) -> bool:
        return self.memory_peak_bytes <= self.usable_bytes.typical

    def to_dict(self) -> dict[str, Any]:
        return {"model": {"name": self.name}, "device": {"id": self.device.id, "name": self.device.name},
                "memory": {"per_gpu": {"total_bytes": self.memory_peak_bytes, "by_category": self.memory_by_category,
                                       "usable_bytes": self.usable_bytes.typical}},
                "fits": self.fits, "step": {"latency_s": self.step_s.to_dict(), "by_phase_s": self.by_phase_s},
                "throughput": {"samples_per_s": self.step_s.inverse(self.samples_per_step).to_dict()},
                "assumptions": list(self.assumptions)}


def estimate_traced_training(ledger, device: DeviceSpec, samples_per_step: int) -> TracedTrainingEstimate:
    """Price a traced training ledger (forward, backward and optimizer phases) on `device`; its peak
    memory is the trace's own, by category (parameters, gradients, optimizer state, activations…)."""
    peak = ledger.memory_peak()
    roof = price(ledger, device)
    phases = {k: v["time_s"].typical for k, v in roof.by("phase").items()}
    return TracedTrainingEstimate(name=ledger.name, device=device, memory_peak_bytes=peak.peak_bytes,
                                  memory_by_category=dict(peak.by_category), usable_bytes=usable_memory(device).bytes,
                                  step_s=roof.total_s, samples_per_step=samples_per_step, by_phase_s=phases,
                                  assumptions=tuple(ledger.assumptions) + tuple(roof.notes))
