"""`train`: memory, step time, MFU, time and cost of training or fine-tuning a model, as `sizeup train`;
`train_methods`: several methods side by side at one micro-batch (`sizeup train --compare full,lora,qlora`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from sizeup.api.options import Options, option
from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ranges import Range
from sizeup.units import MAX_GPUS, MAX_LAYERS, MAX_PARALLEL, MAX_TOKENS, MAX_TRAINING_TOKENS
from sizeup.workload.training import TrainingEstimate

__all__ = ["MethodComparison", "MethodRow", "TrainOptions", "TrainResult", "smallest_gpu_count", "train",
           "train_methods"]

Methods = Literal["full", "lora", "qlora", "freeze", "dora"]
METHODS = ("full", "lora", "qlora", "freeze", "dora")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainOptions(Options):
    """What `train` prices: the flags of `sizeup train`, by the same names."""

    device: str | DeviceSpec | None = option(None, "device name (see 'sizeup hw list'), a DeviceSpec, or 'local' "
                                                   "with a calibration")
    method: Methods = option("full", "full, lora, qlora, freeze (the last layers train) or dora")
    rank: int = option(16, "LoRA rank", minimum=1, maximum=65_536)
    targets: tuple[str, ...] = option(("q_proj", "v_proj"), "LoRA target modules, or ('all-linear',)")
    trainable_layers: int = option(2, "freeze: how many of the last layers train", minimum=1, maximum=MAX_LAYERS)
    framework: str | None = option(None, "take the framework's own settings (kernels, loss chunking, LoRA dropout, "
                                         "QLoRA wiring) from data/training/frameworks.yaml; options given here win")
    attention: Literal["sdpa", "eager", "flash2"] | None = option(None, "attention implementation (default: the "
                                                                        "framework's, else sdpa)")
    kernels: Literal["fused", "eager", "liger", "unsloth"] | None = option(
        None, "fused: Megatron / Transformer Engine / torch.compile (default); eager: PyTorch modules op by op; liger: "
              "Liger Kernel's Triton kernels and fused linear cross-entropy; unsloth: Unsloth's Triton and fused LoRA "
              "kernels")
    loss: Literal["chunked", "upcast", "native", "inplace", "fused-linear"] | None = option(
        None, "how the head and cross-entropy run (default: the framework's): upcast = transformers' logits.float(); "
              "fused-linear = Liger / Unsloth / TRL >= 1.6 chunks; inplace = Unsloth 2024's Triton CE")
    adapter_dtype: Literal["base", "fp32"] | None = option(None, "LoRA weights in the base's dtype or fp32 (default: "
                                                                 "the framework's)")
    grads_kept: bool = option(False, "gradients are zeroed, not freed, between steps: they coexist with the "
                                     "activations")
    fused_lora: bool | None = option(None, "the adapters run inside the base products (Unsloth's fast_lora), not as "
                                           "PEFT's separate kernels")
    kbit_upcast: bool | None = option(None, "qlora: the unquantized parameters upcast to fp32 "
                                            "(prepare_model_for_kbit_training; default: the framework's)")
    lora_dropout: float | None = option(None, "LoRA dropout (default 0.0 as PEFT, litgpt 0.05)", minimum=0,
                                        maximum=0.999)
    double_quant: bool | None = option(None, "qlora: NF4 with double-quantized block scales (default: the "
                                             "framework's, else true)")
    fused_qkv: bool | None = option(None, "q, k and v from one product (litgpt): one adapter input for the three")
    optimizer: Literal["adamw", "adam", "adamw-8bit", "sgd", "adafactor", "lion"] | None = option(
        None, "optimizer (default: the framework's, Unsloth adamw-8bit, else adamw)")
    precision: Literal["bf16-mixed", "fp16-mixed", "fp32", "bf16", "fp8"] = option(
        "bf16-mixed", "bf16-mixed / fp16-mixed: 16-bit compute with an fp32 master copy; bf16: a model loaded in bf16")
    recompute: Literal["none", "selective", "selective-op", "full", "offload"] | None = option(
        None, "activation recomputation (default: the framework's, else none): selective = Megatron's, selective-op = "
              "torchtitan's per-op policy, full = gradient checkpointing, offload = checkpointing with layer inputs in "
              "CPU memory")
    loss_chunks: int | None = option(None, "the cross-entropy runs over this many sequence chunks (default 1)",
                                     minimum=1, maximum=MAX_TOKENS)
    flash: bool = option(True, "false: attention without a fused kernel (stores the scores)")
    gpus: int = option(1, "GPUs in all", minimum=1, maximum=MAX_GPUS)
    nodes: int | None = option(None, "nodes (default: the instances of the offer that holds the GPUs)", minimum=1,
                               maximum=MAX_GPUS)
    tp: int = option(1, "tensor parallel", minimum=1, maximum=MAX_PARALLEL)
    pp: int = option(1, "pipeline parallel", minimum=1, maximum=MAX_PARALLEL)
    vp: int = option(1, "virtual pipeline stages per GPU (interleaved 1F1B)", minimum=1, maximum=MAX_PARALLEL)
    tp_overlap: bool = option(False, "tensor-parallel collectives overlapped with the matrix products")
    ep: int = option(1, "expert parallel (MoE)", minimum=1, maximum=MAX_PARALLEL)
    zero: int = option(0, "ZeRO stage 0-3 (FSDP full shard = 3)", minimum=0, maximum=3)
    sequence_parallel: bool = option(True, "with tp, norm activations sharded (false: replicated)")
    seq: int = option(2048, "sequence length, the longest a batch holds: memory is priced here", minimum=1,
                      maximum=MAX_TOKENS)
    mean_seq: float | None = option(None, "mean sample length: time priced at the expected padded length (with packing "
                                          "at full rows); tokens/s counts real tokens", minimum=1, maximum=MAX_TOKENS)
    packing: bool | None = option(None, "samples packed into rows of seq tokens (TRL / Axolotl packing): no padding")
    padded_seq: float | None = option(None, "the measured mean padded length per row, instead of the expectation from "
                                            "mean_seq", minimum=1, maximum=MAX_TOKENS)
    source_seq: int | None = option(None, "encoder-decoders: encoder positions per sequence (seq is then the "
                                          "target length)", minimum=1, maximum=MAX_TOKENS)
    ssm_scan: Literal["fused", "naive"] = option("fused", "state-space models: mamba_ssm's fused kernels or the "
                                                          "PyTorch reference scan")
    micro_batch: int | None = option(None, "per GPU (default: the largest whose memory range fits whole; where "
                                           "none does, the largest that fits at the typical figure)",
                                     minimum=1, maximum=10**7)
    global_batch: int | None = option(None, "sequences per optimizer step", minimum=1, maximum=10**7)
    tokens: float | None = option(None, "tokens to train on (e.g. 1e9)", minimum=1, maximum=MAX_TRAINING_TOKENS)
    epochs: float | None = option(None, "passes over the data (with dataset_tokens)", minimum=1e-9, maximum=10_000)
    dataset_tokens: float | None = option(None, "tokens in the data set", minimum=1, maximum=MAX_TRAINING_TOKENS)
    offer: str | None = option(None, "cloud offer id: the GPUs as it installs them (its stated link, else PCIe), and "
                                     "the price (default: the cheapest offer that holds the GPUs)")
    network_gbps: float | None = option(None, "node-to-node network per node, Gb/s (default from the offer, else "
                                        "400 per GPU: data/efficiency/comm.yaml nodes)",
                                        minimum=1e-9, maximum=10**6)
    inputs: tuple[str, ...] = option((), "FILE.py:FACTORY models: float input shapes like 8x3x224x224 (the batch is "
                                         "the micro-batch)")
    input_specs: tuple[str, ...] = option((), "FILE.py:FACTORY models: [NAME=]DTYPE:SHAPE, e.g. input_ids=int64:4x512")
    dtype: Literal["fp32", "bf16", "fp16"] = option("fp32", "FILE.py:FACTORY models: precision of the traced step")
    calibration: str | None = option(None, "price with this profile from 'sizeup calibrate'")
    db: str | None = option(None, "run database holding the calibration (default: the user data folder)")
    catalog: tuple[str | Path, ...] = option((), "extra folders of device/offer YAML files")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainResult(TrainingEstimate):
    """The training estimate (every field of `TrainingEstimate`), with what would fit when micro-batch 1 does not
    (`sizeup.plan.train_fit.Suggestion`s: a ZeRO stage, recomputation, a smaller micro-batch, more GPUs placed on an
    offer)."""

    would_fit: tuple[Any, ...] = ()

    @property
    def fits(self) -> bool:
        return self.memory.fits and self.max_micro_batch >= 1

    def to_dict(self) -> dict[str, Any]:
        data = TrainingEstimate.to_dict(self)
        return data if self.fits else data | {"would_fit": [w.to_dict() for w in self.would_fit]}


@dataclass(frozen=True, slots=True, kw_only=True)
class MethodRow:
    """One method of `train_methods`."""

    method: str
    micro_batch: int
    trainable_params: int
    memory_per_gpu_bytes: float
    fits: bool
    smallest_gpu_count: int | None
    """The fewest GPUs at which micro-batch 1 fits (ZeRO-3 past one GPU); None: more than 1,024."""
    step_s: Range
    gpus: int | None
    """The GPU count the method is quoted on: the one asked for when it fits there, else the fewest it needs
    (plan.train_fit.quote_methods); None: over 1,024."""
    placement: str
    """The offer that holds those GPUs, as a sentence ('' when none was placed)."""
    tokens_per_s: Range | None
    time_to_train_s: Range | None
    cost_usd: dict[str, Range] | None
    """Speed, time and cost at `gpus`."""

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "micro_batch": self.micro_batch, "trainable_params": self.trainable_params,
                "memory_per_gpu_bytes": self.memory_per_gpu_bytes, "fits": self.fits,
                "smallest_gpu_count": self.smallest_gpu_count, "step_s": self.step_s.to_dict(),
                "gpus": self.gpus, "placement": self.placement,
                "tokens_per_s": None if self.tokens_per_s is None else self.tokens_per_s.to_dict(),
                "time_to_train_s": None if self.time_to_train_s is None else self.time_to_train_s.to_dict(),
                "cost_usd": None if self.cost_usd is None else {k: v.to_dict() for k, v in self.cost_usd.items()}}


@dataclass(frozen=True, slots=True, kw_only=True)
class MethodComparison:
    model: str
    device: DeviceSpec
    rows: tuple[MethodRow, ...]
    assumptions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "device": self.device.id, "methods": [r.to_dict() for r in self.rows],
                "assumptions": list(self.assumptions)}


def train(model: str, options: TrainOptions | None = None, /, **changes: Any):
    """Training or fine-tuning `model` (a preset, a Hugging Face id of a preset, a config.json or model folder;
    or FILE.py:FACTORY with `inputs` / `input_specs`, one step traced) on `device`, placed on the offer that
    holds the GPUs (plan.topology); the keywords are `TrainOptions`' fields. Returns a `TrainResult` (with
    `would_fit` when micro-batch 1 does not fit), or a `TracedTrainingEstimate` for a traced module."""
    from sizeup.api.calibration import calibrated_scope

    o = build(options, changes)
    catalog, profile, device = _setup(o)
    with calibrated_scope(profile, [device]) as notes:
        if o.inputs or o.input_specs:
            result = _traced(model, device, o)
            return replace(result, assumptions=(*notes, *result.assumptions)) if notes else result
        return _placed(model, device, o, catalog.offers_for(), notes)


def _placed(model: str, device, o: TrainOptions, offers, notes: list[str]) -> TrainResult:
    """The run placed as plan.topology allows (the offer named, else the cheapest holding the GPUs), estimated;
    and what would fit when it does not."""
    from dataclasses import fields

    from sizeup.ingest.hf_config import load_model
    from sizeup.plan.train_fit import placed_config, what_would_fit
    from sizeup.workload.training import estimate_training

    arch = load_model(model)
    cfg = training_config(o, o.method)
    device, cfg, priced_on, placement = placed_config(device, cfg, offers, nodes_given=o.nodes is not None)
    estimate = estimate_training(arch, device, cfg, priced_on)
    notes = [*notes, *([placement] if placement else [])]
    if notes:
        estimate = replace(estimate, assumptions=(*notes, *estimate.assumptions))
    fits = estimate.memory.fits and estimate.max_micro_batch >= 1
    would_fit = () if fits else tuple(what_would_fit(arch, device, cfg, offers))
    values = {f.name: getattr(estimate, f.name) for f in fields(estimate) if f.init}
    return TrainResult(**values, would_fit=would_fit)


def train_methods(model: str, methods: tuple[str, ...] | list[str], options: TrainOptions | None = None, /,
                  **changes: Any) -> MethodComparison:
    """`methods` side by side on one device at one micro-batch (the given one, else 1), so memory compares like
    for like; each row with the fewest GPUs at which it fits."""
    from sizeup.api.calibration import calibrated_scope
    from sizeup.ingest.hf_config import load_model

    o = build(options, changes)
    methods = [m.strip() for m in methods if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise ConfigError(f"--compare {','.join(methods)!r}: expected methods from {', '.join(METHODS)}")
    if o.inputs or o.input_specs:
        raise ConfigError("a traced torch module trains all its parameters: use --method full without --compare")
    if o.micro_batch is None:
        o = replace(o, micro_batch=1)
    catalog, profile, device = _setup(o)
    arch = load_model(model)
    offers = catalog.offers_for()
    with calibrated_scope(profile, [device]) as notes:
        from sizeup.plan.train_fit import quote_methods

        cfgs = {m: training_config(o, m) for m in methods}
        quotes = quote_methods(arch, device, cfgs, offers)  # each method at the GPUs it needs
        rows = tuple(_method_row(arch, device, cfgs[m], offers, q) for m, q in zip(methods, quotes))
    return MethodComparison(model=arch.name, device=device, rows=rows, assumptions=tuple(notes))


def build(options: TrainOptions | None, changes: dict[str, Any]) -> TrainOptions:
    from sizeup.api.options import build_options

    o = build_options(TrainOptions, options, changes, "train")
    if o.device is None:
        raise ConfigError("train: give device=NAME (see 'sizeup hw list')")
    return o


def _setup(o: TrainOptions):
    """The catalog, the calibration profile, and the device (as `offer` installs it, when one is named)."""
    from sizeup.api.calibration import load_calibration, resolve_device
    from sizeup.hardware.catalog import load_catalog

    catalog = load_catalog(o.catalog)
    profile = load_calibration(o.calibration, o.db, [o.device], kind="train")
    device = resolve_device(o.device, catalog, profile)
    if o.offer:  # the GPUs as the offer installs them: its stated link, else PCIe
        from sizeup.plan.topology import device_in_offer

        device = device_in_offer(catalog, device, o.offer)[0]
    return catalog, profile, device


def training_config(o: TrainOptions, method: str):
    """The `TrainingConfig` of the options, with `method`."""
    from sizeup.workload.finetune import FinetuneSpec
    from sizeup.workload.frameworks import framework_for, resolve_settings
    from sizeup.workload.parallel import ParallelConfig
    from sizeup.workload.training import TrainingConfig, with_settings

    framework, framework_note = framework_for(o.framework, method)
    fw = resolve_settings(framework, o.seq, kernels=o.kernels, loss_chunks=o.loss_chunks,
                          lora_dropout=o.lora_dropout, fused_qkv=o.fused_qkv, double_quant=o.double_quant,
                          attention=o.attention, loss=o.loss, recompute=o.recompute, optimizer=o.optimizer,
                          packing=o.packing, adapter_dtype=o.adapter_dtype, grads_freed=False if o.grads_kept else None,
                          kbit_fp32_params=o.kbit_upcast, adapter_kernels="fused" if o.fused_lora else None)
    targets = tuple(t.strip() for t in o.targets if t.strip())
    return with_settings(TrainingConfig(
        finetune=FinetuneSpec(method=method, rank=o.rank, targets=targets, trainable_layers=o.trainable_layers),
        optimizer=o.optimizer or "adamw", precision=o.precision, recompute=o.recompute or "none",
        mean_seq=o.mean_seq, padded_seq=o.padded_seq,
        parallel=ParallelConfig(gpus=o.gpus, nodes=o.nodes or 1, tp=o.tp, pp=o.pp, vp=o.vp, ep=o.ep, zero=o.zero,
                                sequence_parallel=o.sequence_parallel, tp_overlap=o.tp_overlap),
        seq=o.seq, source_seq=o.source_seq, ssm_scan=o.ssm_scan, micro_batch=o.micro_batch,
        global_batch=o.global_batch, tokens=None if o.tokens is None else int(o.tokens), epochs=o.epochs,
        dataset_tokens=None if o.dataset_tokens is None else int(o.dataset_tokens),
        flash_attention=o.flash, offer=o.offer, network_gbit_per_s=o.network_gbps, framework_note=framework_note),
        fw, framework)


def smallest_gpu_count(arch, device, cfg) -> int | None:
    """The fewest GPUs (1, 2, 4, 8, then whole 8-GPU nodes, up to 1024) at which micro-batch 1 fits,
    sharding with ZeRO-3 once more than one GPU is used."""
    from sizeup.workload.training import training_memory, with_attention

    cfg = with_attention(cfg, device)[0]
    counts = [1, 2, 4, 8] + [8 * k for k in (2, 4, 8, 16, 32, 64, 128)]
    for n in counts:
        nodes = max(1, n // 8)
        try:
            par = replace(cfg.parallel, gpus=n, nodes=nodes, zero=3 if n > 1 else cfg.parallel.zero,
                          tp=1, pp=1, ep=1)
        except ConfigError:
            continue
        if training_memory(arch, device, replace(cfg, parallel=par, micro_batch=1), 1).fits:
            return n
    return None


def _method_row(arch, device, cfg, offers, quote) -> MethodRow:
    """The method at the configuration asked (memory, fit, step), and quoted at the GPUs it needs (`quote`)."""
    from sizeup.workload.training import estimate_training

    e = estimate_training(arch, device, cfg, offers)
    q = quote.estimate
    return MethodRow(method=cfg.finetune.method.value, micro_batch=e.micro_batch,
                     trainable_params=e.trainable_params, memory_per_gpu_bytes=e.memory.total_bytes,
                     fits=e.memory.fits, smallest_gpu_count=smallest_gpu_count(arch, device, cfg), step_s=e.step_s,
                     gpus=quote.gpus, placement=quote.placement, tokens_per_s=None if q is None else q.tokens_per_s,
                     time_to_train_s=None if q is None else q.time_to_train_s, cost_usd=None if q is None else q.cost_usd)


def _traced(model: str, device: DeviceSpec, o: TrainOptions):
    """A torch module: one training step (forward, backward, optimizer) traced and priced."""
    from sizeup.api.flops import count_flops, parse_input_specs
    from sizeup.workload.training import estimate_traced_training

    optimizer = o.optimizer or "adamw"
    if optimizer not in ("adamw", "adam", "sgd"):
        raise ConfigError(f"--optimizer {optimizer!r}: a traced step supports adamw, adam or sgd")
    if o.method != "full":
        raise ConfigError("a traced torch module trains all its parameters: use --method full without --compare")
    inputs = parse_input_specs(o.inputs, o.input_specs)
    report = count_flops(model, inputs, dtype=o.dtype, mode="train", optimizer=optimizer)
    return estimate_traced_training(report.ledger, device, samples_per_step=inputs[0].shape[0])
