"""Training memory per GPU, term by term: weights, gradients, optimizer state, activations, overhead.

Model states per trainable parameter (bytes): weights + gradients + fp32 master copy + optimizer
state. With AdamW and bf16 mixed precision that is 2 + 2 + 4 + 4 + 4 = 16 (Rajbhandari et al.,
ZeRO, 2020: "2Ψ + 2Ψ + KΨ" with K = 12 for the master copy and two moments — the "×12 bytes"
shortcut counts only those K bytes). PEFT's fp32 adapters on a 16-bit base (FinetuneSpec.adapter_dtype "fp32")
are 4 + 4 + 8: fp32 weights and gradients, no master copy, fp32 moments. Activations:
sizeup.workload.training.activations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sizeup.hardware.schema import DeviceSpec
from sizeup.hardware.usable import usable_memory
from sizeup.ingest.hf_config import ModelArch
from sizeup.engines.profile import engine_profile
from sizeup.ranges import Range
from sizeup.units import MIB
from sizeup.workload.finetune import FinetuneSpec, Method, bnb_quantized, trainable_parameters
from sizeup.workload.quantize import LINEAR_ROLES, get_format, nf4_matrix_bytes, tensor_bytes_map
from sizeup.workload.training.activations import activation_bytes, adapter_cast
from sizeup.workload.training.config import OPTIMIZER_STATE_BYTES, PRECISIONS, TrainingConfig

__all__ = ["TrainingMemory", "training_memory"]


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


def _largest_quantized_matrix(arch: ModelArch, spec: FinetuneSpec) -> int:
    """Elements of the largest single 4-bit weight matrix (one expert of a stacked expert tensor)."""
    largest = max((t.shape[-2] * t.shape[-1] for t in arch.tensors() if bnb_quantized(arch, t)), default=0)
    if spec.quantize_head and arch.lm_head:
        largest = max(largest, arch.vocab * arch.hidden)
    return largest


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
        sizes = tensor_bytes_map(arch, nf4)
        frozen_bytes = sum(sizes[t.name] if bnb_quantized(arch, t) or t.role not in LINEAR_ROLES else t.numel * 2
                           for t in arch.tensors())  # the linears bitsandbytes leaves alone stay 16-bit
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

    weight_width, grad_width, master_width = precision.weight, precision.grad, precision.master
    states = _state_bytes(arch, cfg, trainable.trainable_params)
    if adapter_cast(cfg) != "none":
        # PEFT's fp32 adapters (autocast_adapter_dtype=True): fp32 weights and gradients, no separate master copy,
        # and torch's AdamW keeps its moments in the parameter's dtype: fp32 even in a pure bf16 run
        weight_width, grad_width, master_width = 4, 4, 0
        states /= precision.state_scale if cfg.optimizer != "adafactor" else 1
    weights = (frozen_bytes + trainable.trainable_params * weight_width) * share(3)
    grads = trainable.trainable_params * grad_width * share(2)
    optimizer = (trainable.trainable_params * master_width + states) * share(1)
    trainable_from = min(trainable.trainable_layers, default=0) if spec.method == Method.FREEZE else 0
    activations = activation_bytes(arch, cfg, micro_batch, trainable_from, in_flight)
    overhead = 0.0
    if par.zero >= 3:  # the layer being computed and the one prefetched, gathered whole (local experts only)
        layer_params = (dense_params + expert_params / par.ep) / max(arch.num_layers, 1) / model_split
        overhead += 2 * layer_params * precision.weight
    if par.dp > 1 and par.zero < 3:
        overhead += 2 * 25 * MIB  # DDP's two 25 MiB gradient buckets
    if spec.method == Method.QLORA:  # a 4-bit weight is multiplied as a full-size bf16 (fp16 + bf16) copy
        overhead += _largest_quantized_matrix(arch, spec) * 2 * spec.dequant_copies / par.tp
    fraction = engine_profile("pytorch").range("allocator_overhead_fraction")
    overhead += (weights + grads + optimizer + activations) * (fraction.typical if fraction else 0.0)
    return TrainingMemory(weights_bytes=int(weights), gradients_bytes=int(grads), optimizer_bytes=int(optimizer),
                          activations_bytes=int(activations), overhead_bytes=int(overhead),
                          usable_bytes=usable_memory(device).bytes)
