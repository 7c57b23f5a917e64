"""What a framework's kernels add to a training step beyond the ledger's one kernel per op: eager PyTorch's several
memory-bound kernels per norm, rotary and activation; PEFT's adapters as separate kernels; the loss's passes over the
logits; the PCIe traffic of offloaded checkpointing. Each is memory traffic priced at the device's bandwidth (these
kernels are memory-bound), so a framework's kernels change the step time, not only its memory."""

from __future__ import annotations

from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.hf_config import ModelArch
from sizeup.engines.eager_kernels import transformers_eager
from sizeup.ranges import Range
from sizeup.workload.finetune import targeted
from sizeup.workload.training.activations import adapter_cast
from sizeup.workload.training.config import TrainingConfig
from sizeup.workload.training.loss import loss_traffic_bytes

__all__ = ["eager_rest_time", "adapter_traffic_bytes", "traffic_time", "offload_bytes", "EAGER_OPS"]

EAGER_OPS = ("rms_norm", "rotary_embedding", "act_mul")
"""Ledger ops whose eager PyTorch form runs several kernels (data/engines/hf.yaml eager_kernels, counted from
transformers' modules: RMSNorm 8 with its casts (6 in fp32), rotary 10, SiLU x up 2)."""


def eager_rest_time(by_op: dict[str, dict], cfg: TrainingConfig, pp: int) -> Range:
    """Forward seconds of the ops EAGER_OPS names as eager PyTorch runs them: each of its kernels makes one more pass
    over the op's tensors, so the op takes about (kernels) x its fused time. Zero unless `cfg.kernels` is eager."""
    zero = Range.exact(0.0)
    if cfg.kernels != "eager":
        return zero
    engine = transformers_eager()
    fp32 = cfg.precision == "fp32"
    extra = zero
    for op in EAGER_OPS:
        if op not in by_op:
            continue
        kernels = engine.value(f"eager_kernels.{op}@fp32", 0.0) if fp32 else 0.0
        kernels = kernels or engine.value(f"eager_kernels.{op}", 1.0)
        extra = extra + by_op[op]["time_s"].scale(max(0.0, kernels - 1) / pp)
    return extra


def adapter_traffic_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int, seq: int) -> float:
    """Forward bytes PEFT's adapters move per micro-step beyond the base product. Per adapted module and token:
    the adapter reads its input (its own fp32 or autocast copy where the adapters are fp32: one more read of the
    16-bit input and a write of the copy), with dropout a dropped copy and its mask, then writes B's output, scales
    it and adds it into the base output (read both, write the sum). The A and B products' FLOPs are negligible at a
    rank much below the width. Zero where the adapters are fused into the base products (Unsloth's fast_lora)."""
    spec = cfg.finetune
    if not spec.uses_adapters or cfg.adapter_kernels == "fused":
        return 0.0
    cast = adapter_cast(cfg)
    elem = 4 if cast == "cast" else 2
    tokens = micro_batch * seq
    a = arch.layers[0].attention if arch.layers else None
    per_layer = 0.0
    for layer in arch.layers:
        a, m = layer.attention, layer.mlp
        widths = {"q_proj": (arch.hidden, a.heads * a.head_dim), "k_proj": (arch.hidden, a.kv_heads * a.head_dim),
                  "v_proj": (arch.hidden, a.kv_heads * a.v_head_dim), "o_proj": (a.heads * a.v_head_dim, arch.hidden)}
        if not m.is_moe:
            widths |= {"up_proj": (arch.hidden, m.intermediate), "down_proj": (m.intermediate, arch.hidden)}
            if m.gated:
                widths["gate_proj"] = (arch.hidden, m.intermediate)
        for name, (width_in, width_out) in widths.items():
            if not targeted(name, spec):
                continue
            read_in = width_in * (elem + (2 + elem if cast != "none" else 0))
            dropout = width_in * (2 * elem + 1) if spec.dropout > 0 else 0
            per_layer += read_in + dropout + width_out * (elem + 2 * elem + 3 * 2)
    return tokens * per_layer / cfg.parallel.tp / cfg.parallel.pp


def offload_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int, seq: int) -> float:
    """Bytes each direction of PCIe moves per micro-step under offloaded checkpointing: every layer's 16-bit input."""
    if cfg.recompute != "offload":
        return 0.0
    return 2.0 * micro_batch * seq * arch.hidden * arch.num_layers / cfg.parallel.pp


def traffic_time(bytes_moved: float, device: DeviceSpec, memory_fraction: Range) -> Range:
    """Seconds to move `bytes_moved` through device memory at the achieved bandwidth fraction (low time at high)."""
    if not bytes_moved:
        return Range.exact(0.0)
    bw = device.memory_bandwidth_bytes_per_s
    return Range(*(bytes_moved / (bw * getattr(memory_fraction, lv)) for lv in ("high", "typical", "low")))


def loss_time(arch: ModelArch, cfg: TrainingConfig, micro_batch: int, seq: int, device: DeviceSpec,
              memory_fraction: Range) -> Range:
    """Seconds of the loss's passes over the logits per micro-step (forward and backward)."""
    return traffic_time(loss_traffic_bytes(arch, cfg, micro_batch, seq), device, memory_fraction)


def eager_host_forward(ops: list, arch: ModelArch, cfg: TrainingConfig) -> Range:
    """Host seconds to launch one forward pass from Python, op by op, under an eager PyTorch framework (any kernels
    but "fused", which stands for Megatron / Transformer Engine / torch.compile): the ledger's kernels, the extra
    kernels eager modules run (EAGER_OPS), autocast's cast per weight product in a mixed run, and PEFT's adapter
    kernels (dropout, A, B, scale, add, and the cast to fp32 adapters), each at PyTorch eager's per-op host cost
    (overheads.yaml pytorch-eager). Backward kernels are launched by autograd's C++ engine and are taken to keep
    pace with the GPU. Zero for "fused" kernels."""
    if cfg.kernels == "fused":
        return Range.exact(0.0)
    from sizeup.ledger import OpKind
    from sizeup.engines.runtimes import get_runtime

    engine = transformers_eager()
    kernels = 0.0
    for op in ops:
        if op.kind == OpKind.VIEW:
            continue
        n = engine.value(f"eager_kernels.{op.op}", 1.0) if cfg.kernels == "eager" and op.op in EAGER_OPS else 1.0
        kernels += op.count * n
        if op.kind == OpKind.MATMUL and cfg.precision in ("bf16-mixed", "fp16-mixed"):
            kernels += op.count  # autocast's cast of the product's input (and of an fp32 weight)
    spec = cfg.finetune
    if spec.uses_adapters and cfg.adapter_kernels == "peft":
        per_module = 5 + (1 if spec.dropout > 0 else 0) + (1 if adapter_cast(cfg) != "none" else 0)
        adapted = sum(1 for layer in arch.layers for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                              "up_proj", "down_proj") if targeted(name, spec))
        kernels += adapted * per_module / cfg.parallel.pp
    return get_runtime("pytorch-eager").per_op_s.scale(kernels)
