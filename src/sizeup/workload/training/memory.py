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
from functools import lru_cache
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
from sizeup.workload.training.allocator import reserve_range, reserve_regime
from sizeup.workload.training.config import MIXED, OPTIMIZER_STATE_BYTES, PRECISIONS, TrainingConfig, kbit_upcast

__all__ = ["TrainingMemory", "training_memory", "fsdp_upcast", "cuda_context"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingMemory:
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    overhead_bytes: int
    """Gathered ZeRO-3 layers, DDP buckets, QLoRA's dequantized copy and the allocator reserve (typical)."""
    usable_bytes: Range
    reserve_bytes: Range = Range.exact(0.0)
    """The caching allocator's reserve over the allocated peak (its typical value is inside overhead_bytes)."""
    gradients_coexist: bool = True
    """False where the gradients are freed after every optimizer step and one micro-step makes a step: they are
    created as the backward frees the activations, so the peak holds the larger of the two, not both."""
    context_bytes: Range = Range.exact(0.0)
    """The CUDA context outside the allocator (data/training/cuda_context.yaml): nvidia-smi counts it, torch does not."""
    range_ratios: tuple[float, float] | None = None
    """(low, high) ratios of the calibrated range (price/ranges_table.py) around the total, the allocated peak and
    the process memory; None: the allocator reserve's own low and high."""
    step_temp_bytes: int = 0
    """Temporaries of the optimizer step beside the gradients (torch's foreach AdamW: one fp32 tensor list the size
    of the trainable parameters, torch/optim/adamw.py _multi_tensor_adamw: torch._foreach_sqrt(exp_avg_sqs))."""

    @property
    def peak_working_bytes(self) -> int:
        """Activations and gradients as they coexist at the peak (with the optimizer step's temporaries)."""
        if self.gradients_coexist:
            return self.activations_bytes + self.gradients_bytes
        return max(self.activations_bytes, self.gradients_bytes + self.step_temp_bytes)

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.optimizer_bytes + self.peak_working_bytes + self.overhead_bytes

    @property
    def total_range(self) -> Range:
        """The total with the allocator reserve's low and high in place of its typical value: what
        torch.cuda.max_memory_reserved may report."""
        if self.range_ratios is not None:  # never below the model states it counts
            states = min(float(self.weights_bytes + self.gradients_bytes + self.optimizer_bytes), self.total_bytes)
            return Range(max(self.total_bytes * self.range_ratios[0], states), float(self.total_bytes),
                         self.total_bytes * self.range_ratios[1])
        allocated = self.total_bytes - self.reserve_bytes.typical
        return Range(allocated + self.reserve_bytes.low, float(self.total_bytes), allocated + self.reserve_bytes.high)

    @property
    def process_range(self) -> Range:
        """What nvidia-smi shows for the process: the reserved total and the CUDA context."""
        total, ctx = self.total_range, self.context_bytes
        return Range(total.low + ctx.low, total.typical + ctx.typical, total.high + ctx.high)

    @property
    def allocated_bytes(self) -> int:
        """The peak without the allocator reserve: what torch.cuda.max_memory_allocated reports."""
        return int(self.total_bytes - self.reserve_bytes.typical)

    @property
    def allocated_range(self) -> Range:
        low, high = self.range_ratios or (1.0, 1.0)
        return Range(self.allocated_bytes * low, float(self.allocated_bytes), self.allocated_bytes * high)

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.usable_bytes.typical

    def to_dict(self) -> dict[str, Any]:
        return {"weights_bytes": self.weights_bytes, "gradients_bytes": self.gradients_bytes,
                "optimizer_bytes": self.optimizer_bytes, "activations_bytes": self.activations_bytes,
                "overhead_bytes": self.overhead_bytes, "total_bytes": self.total_bytes,
                "total_range_bytes": self.total_range.to_dict(), "allocated_bytes": self.allocated_bytes,
                "allocated_range_bytes": self.allocated_range.to_dict(),
                "allocator_reserve_bytes": self.reserve_bytes.to_dict(), "gradients_coexist": self.gradients_coexist,
                "process_bytes": self.process_range.to_dict(),
                "optimizer_step_temp_bytes": self.step_temp_bytes, "usable_bytes": self.usable_bytes.typical}


def fsdp_upcast(cfg: TrainingConfig) -> bool:
    """Whether the sharded parameters of an HF Trainer FSDP run are fp32: with mixed precision on, accelerate upcasts
    every low-precision flat parameter that requires grad (a LoRA layer's flat parameter holds its frozen base too,
    and bitsandbytes' 4-bit data stored as bf16) to fp32 before FSDP runs (accelerate accelerator.py prepare_model,
    FSDP1: "Upcasted low precision parameters in ... because mixed precision turned on in FSDP")."""
    par = cfg.parallel
    return cfg.mixed_precision == "amp" and cfg.precision in MIXED and par.zero >= 3 and par.dp > 1


@lru_cache(maxsize=1)
def _context() -> Range:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    path = builtin_data_dir() / "training" / "cuda_context.yaml"
    entry = read_yaml(path)["cuda_context"]
    return Range(*(float(entry[lv]) for lv in ("low", "typical", "high")))


def cuda_context(device: DeviceSpec) -> Range:
    """The CUDA context of a PyTorch process on an NVIDIA GPU; zero elsewhere (not modelled)."""
    return _context() if device.kind == "gpu" and device.vendor == "nvidia" else Range.exact(0.0)


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
    """Memory per GPU; `in_flight`: micro-batches per optimizer step, whose activations the first pipeline stage
    holds up to pp of (with more than one the gradients also persist across them)."""
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
    if cfg.mixed_precision == "amp" and cfg.precision in MIXED and spec.method in (Method.FULL, Method.FREEZE):
        # torch.autocast over fp32 weights (HF Trainer bf16=True on an fp32 model): fp32 weights and gradients, no
        # separate master; each weight's 16-bit cast is saved for its product's backward (+2 below)
        weight_width, grad_width, master_width = 4, 4, 0
    states = _state_bytes(arch, cfg, trainable.trainable_params)
    if adapter_cast(cfg) != "none":
        # PEFT's fp32 adapters (autocast_adapter_dtype=True): fp32 weights and gradients, no separate master copy,
        # and torch's AdamW keeps its moments in the parameter's dtype: fp32 even in a pure bf16 run
        weight_width, grad_width, master_width = 4, 4, 0
        states /= precision.state_scale if cfg.optimizer != "adafactor" else 1
    if kbit_upcast(cfg):
        # prepare_model_for_kbit_training upcasts every 16-bit parameter bitsandbytes left alone (embeddings, norms,
        # the LM head) to fp32; under autocast the head's product saves a 16-bit cast of its weight for backward
        unquantized = sum(t.numel for t in arch.tensors() if not bnb_quantized(arch, t))
        frozen_bytes += unquantized * 2 + (arch.vocab * arch.hidden * 2 if arch.lm_head and cfg.precision in MIXED
                                           and not spec.quantize_head else 0)
    if fsdp_upcast(cfg):  # accelerate upcasts the sharded 16-bit flat parameters (and 16-bit-stored NF4) to fp32
        frozen_bytes *= 2
    weights = (frozen_bytes + trainable.trainable_params * weight_width) * share(3)
    if weight_width == 4 and cfg.mixed_precision == "amp" and cfg.precision in MIXED:
        weights += trainable.trainable_params * 2 * share(3)  # autocast's 16-bit casts, alive from forward to backward
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
    coexist = not (cfg.grads_freed and in_flight <= 1)
    temp = trainable.trainable_params * 4 * precision.state_scale * share(1) if cfg.optimizer in ("adamw", "adam") \
        else 0.0  # one moment-sized list, in the moments' dtype
    working = activations + grads if coexist else max(activations, grads + temp)
    if cfg.allocator_reserve == "observed":
        fraction = reserve_range(reserve_regime(cfg))
    elif isinstance(cfg.allocator_reserve, Range):
        fraction = cfg.allocator_reserve
    else:
        fraction = engine_profile("pytorch").range("allocator_overhead_fraction") or Range.exact(0.0)
    allocated = weights + optimizer + working  # the reserve scales with the tensors (as before: not the buffers)
    reserve = Range(*(allocated * getattr(fraction, lv) for lv in ("low", "typical", "high")))
    return TrainingMemory(weights_bytes=int(weights), gradients_bytes=int(grads), optimizer_bytes=int(optimizer),
                          activations_bytes=int(activations), overhead_bytes=int(overhead + reserve.typical),
                          usable_bytes=usable_memory(device).bytes, reserve_bytes=reserve, gradients_coexist=coexist,
                          step_temp_bytes=int(temp), context_bytes=cuda_context(device))
