"""What a training run is: the precision recipe, the optimizer, the recomputation policy, and the run's
configuration (method, parallelism, batch, length of the run)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.workload.finetune import FinetuneSpec, Method
from sizeup.hardware.schema import DeviceSpec
from sizeup.price.attention_kernels import IMPLEMENTATIONS, AttentionPath, attention_path
from sizeup.ranges import Range
from sizeup.workload.frameworks import KERNELS, LOSSES, allocator_reserve
from sizeup.workload.parallel import ParallelConfig

__all__ = ["Precision", "PRECISIONS", "MIXED", "RECOMPUTE_POLICIES", "SSM_SCANS", "OPTIMIZER_STATE_BYTES",
           "TrainingConfig",
           "with_settings", "with_method", "with_attention", "kbit_upcast"]


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
    "fp16-mixed": Precision(weight=2, grad=2, master=4, state_scale=1, compute="fp16",
                            note="fp16 weights and gradients with an fp32 master copy and fp32 optimizer state "
                                 "(AMP with loss scaling, for parts without bf16 such as V100 and T4)"),
    "fp8": Precision(weight=3, grad=2, master=4, state_scale=1, compute="fp8",
                     note="Transformer Engine style fp8: bf16 weights plus an fp8 copy, fp32 master and state; "
                          "matrix products at the fp8 peak"),
}

MIXED = ("bf16-mixed", "fp16-mixed")
"""The precisions with an fp32 master copy: laid out as Megatron's 16-bit weights + master, or as fp32 weights under
torch.autocast (TrainingConfig.mixed_precision)."""

RECOMPUTE_POLICIES = {
    "none": "no recomputation: every layer keeps what its backward pass reads",
    "selective": "Megatron-style selective recomputation: the attention scores (a·s² terms) are recomputed, "
                 "which saves nothing more under FlashAttention",
    "selective-op": "per-op selective checkpointing as torchtitan applies it (selective_ac_option 'op'): each layer "
                    "keeps its input, the attention output and every other matrix-product output in call order; "
                    "the other products, norms and activations are recomputed",
    "full": "full recomputation: each layer keeps only its input and reruns its forward pass in backward",
    "offload": "full recomputation with each layer's input offloaded to CPU memory during forward and brought back "
               "for its backward (Unsloth's use_gradient_checkpointing=\"unsloth\", TRL's activation_offloading): "
               "the GPU holds two layers' inputs in flight and the layer being recomputed",
}

SSM_SCANS = {
    "fused": "mamba_ssm's hardware-aware kernels (what transformers runs with mamba-ssm and causal-conv1d installed): "
             "the scan states are recomputed in backward, nothing of size length × inner × state is kept",
    "naive": "the PyTorch reference scan (transformers without those packages): the discretised A and B and every "
             "step's state are kept for backward, length × inner × state per layer",
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
    source_seq: int | None = None
    """Encoder-decoders: encoder positions per sequence (`seq` is then the decoder's target length); None:
    the model's own (T5's n_positions, Whisper's 1,500 frames)."""
    ssm_scan: str = "fused"
    """State-space models: which selective scan runs in training (SSM_SCANS)."""
    flash_attention: bool = True
    """False (--no-flash) forces the math path; otherwise `with_attention` sets it from the kernel that runs."""
    attention: str = "sdpa"
    """The attention implementation asked for: sdpa, eager or flash2 (sizeup.price.attention_kernels)."""
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
    framework_note: str | None = None
    """Why the profile was taken when the run named none (workload/frameworks.py framework_for)."""
    loss: str = "chunked"
    """How the head and the cross-entropy run (sizeup.workload.frameworks.LOSSES; workload/training/loss.py)."""
    mixed_precision: str = "master"
    """bf16-mixed laid out as 16-bit weights with an fp32 master copy (master: Megatron, DeepSpeed) or as fp32 weights
    run under torch.autocast (amp: HF Trainer, Lightning), whose 16-bit weight copies live from forward to backward."""
    grads_freed: bool = False
    """zero_grad(set_to_none=True) frees the gradients after each optimizer step (PyTorch's default since 2.0): with
    one micro-step per step they never coexist with the forward's activations."""
    kbit_fp32_params: bool = False
    """QLoRA through PEFT's prepare_model_for_kbit_training: every 16-bit parameter left unquantized (embeddings,
    norms, LM head) is upcast to fp32, so the residual stream and each checkpointed layer input are fp32."""
    adapter_kernels: str = "peft"
    """peft: each adapter runs as its own eager kernels (dropout, A, B, scale, add); fused: the adapter products are
    fused with the base's (Unsloth's fast_lora)."""
    allocator_reserve: Range | str | None = None
    """The caching allocator's reserve over the peak allocated memory: a range, "observed" (the fine-tuning
    observations by regime, workload/training/allocator.py), or None (sizeup's default)."""
    mean_seq: float | None = None
    """Mean sample length; `seq` is then the longest (workload/training/batches.py)."""
    packing: bool = False
    padded_seq: float | None = None
    """Measured mean padded length per row, where known."""
    offer: str | None = None
    network_gbit_per_s: float | None = None
    """Per node; default from the offer, else comm.yaml nodes.network_gbit_per_gpu per GPU (400 Gb/s)."""

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZER_STATE_BYTES:
            raise ConfigError(f"--optimizer {self.optimizer!r}: expected one of {', '.join(OPTIMIZER_STATE_BYTES)}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"--precision {self.precision!r}: expected one of {', '.join(PRECISIONS)}")
        if self.recompute not in RECOMPUTE_POLICIES:
            raise ConfigError(f"--recompute {self.recompute!r}: expected one of {', '.join(RECOMPUTE_POLICIES)}")
        if self.seq < 1:
            raise ConfigError(f"--seq {self.seq}: expected a positive integer")
        if self.source_seq is not None and self.source_seq < 1:
            raise ConfigError(f"--source-seq {self.source_seq}: expected a positive integer")
        if self.ssm_scan not in SSM_SCANS:
            raise ConfigError(f"--ssm-scan {self.ssm_scan!r}: expected one of {', '.join(SSM_SCANS)}")
        if self.micro_batch is not None and self.micro_batch < 1:
            raise ConfigError(f"--micro-batch {self.micro_batch}: expected a positive integer")
        if self.loss_chunks < 1:
            raise ConfigError(f"--loss-chunks {self.loss_chunks}: expected a positive integer")
        if self.global_batch is not None and self.global_batch < 1:
            raise ConfigError(f"--global-batch {self.global_batch}: expected a positive integer")
        if self.kernels not in KERNELS:
            raise ConfigError(f"--kernels {self.kernels!r}: expected one of {', '.join(KERNELS)}")
        if self.attention not in IMPLEMENTATIONS:
            raise ConfigError(f"--attention {self.attention!r}: expected one of {', '.join(IMPLEMENTATIONS)}")
        if self.loss not in LOSSES:
            raise ConfigError(f"--loss {self.loss!r}: expected one of {', '.join(LOSSES)}")
        if self.mixed_precision not in ("amp", "master"):
            raise ConfigError(f"mixed_precision {self.mixed_precision!r}: expected amp or master")
        if self.adapter_kernels not in ("peft", "fused"):
            raise ConfigError(f"adapter_kernels {self.adapter_kernels!r}: expected peft or fused")
        if self.finetune.method == Method.QLORA and self.precision == "fp32":
            raise ConfigError("--method qlora computes in bf16: use --precision bf16-mixed or bf16")


def with_settings(cfg: TrainingConfig, settings: dict[str, Any], framework: str | None = None) -> TrainingConfig:
    """`cfg` with the framework-dependent settings of sizeup.workload.frameworks.resolve_settings."""
    spec = replace(cfg.finetune, dropout=settings["lora_dropout"], fused_qkv=settings["fused_qkv"],
                   double_quant=settings["double_quant"], quantize_head=settings["quantize_head"],
                   dequant_copies=settings["dequant_copies"],
                   adapter_dtype=settings.get("adapter_dtype", cfg.finetune.adapter_dtype))
    run = {k: settings[k] for k in ("recompute", "optimizer", "packing") if settings.get(k) is not None}
    extra = {k: settings[k] for k in ("loss", "mixed_precision", "grads_freed", "kbit_fp32_params", "adapter_kernels")
             if k in settings}
    return replace(cfg, finetune=spec, loss_chunks=settings["loss_chunks"], kernels=settings["kernels"],
                   keeps_last_graph=settings["keeps_last_graph"], attention=settings["attention"], framework=framework,
                   allocator_reserve=allocator_reserve(framework), **run, **extra)


def kbit_upcast(cfg: TrainingConfig) -> bool:
    """Whether QLoRA's unquantized parameters are upcast to fp32 (TrainingConfig.kbit_fp32_params): not for a sharded
    QLoRA (FSDP / ZeRO-3 over several GPUs), where TRL skips prepare_model_for_kbit_training to keep one dtype
    across the shards (trl v0.13.0 sft_trainer.py: is_sharded_qlora, "and not is_sharded_qlora")."""
    par = cfg.parallel
    return (cfg.kbit_fp32_params and cfg.finetune.method == Method.QLORA and PRECISIONS[cfg.precision].compute != "fp32"
            and not (par.zero >= 3 and par.dp > 1))


def with_method(cfg: TrainingConfig, method: str) -> TrainingConfig:
    return replace(cfg, finetune=replace(cfg.finetune, method=Method(method)))


def with_attention(cfg: TrainingConfig, device: DeviceSpec) -> tuple[TrainingConfig, AttentionPath]:
    """`cfg` with flash_attention set from the kernel `cfg.attention` runs on `device` at the run's compute
    dtype (no FlashAttention before Ampere or in fp32; SDPA's memory-efficient kernel where it applies)."""
    if not cfg.flash_attention:
        return cfg, AttentionPath(implementation=cfg.attention, kernel="math",
                                  note="attention: math path (--no-flash): the s² softmax output and dropout mask "
                                       "are kept per layer")
    path = attention_path(device, PRECISIONS[cfg.precision].compute, cfg.attention)
    return replace(cfg, flash_attention=path.fused), path
