"""A training or fine-tuning run of a transformer: the micro-batch that fits, memory per GPU, step time,
throughput, MFU, time to train and cost, with the assumptions behind them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.ingest.hf_config import ModelArch
from sizeup.engines.profile import engine_profile
from sizeup.price.memory import max_fitting
from sizeup.price.ranges_table import Backing, backing, borrowed, calibrated_time, peak_derived, training_key
from sizeup.ranges import Range
from sizeup.workload.finetune import Method, trainable_parameters
from sizeup.workload.frameworks import KERNELS, default_framework, framework_ids
from sizeup.errors import ConfigError
from sizeup.workload.training.allocator import reserve_range, reserve_regime
from sizeup.workload.training.activations import adapter_cast
from sizeup.workload.training.config import MIXED, PRECISIONS, SSM_SCANS, TrainingConfig, kbit_upcast, with_attention
from sizeup.workload.training.encoder_decoder import encoder_note, relative_bias_note, source_length
from sizeup.workload.training.batches import sequence_lengths
from sizeup.workload.training.cost import pick_offer, run_cost
from sizeup.workload.training.loss import loss_note
from sizeup.workload.training.memory import TrainingMemory, training_memory
from sizeup.workload.training.step_time import StepTime, step_time, utilization

__all__ = ["TrainingEstimate", "estimate_training"]


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
    max_micro_batch_in_range: int = 0
    micro_batch_rule: str = "given"
    """How the micro-batch was chosen: "given" (--micro-batch), "range" (the largest whose memory range's high end
    fits), "typical" (none fits at the high end: the largest that fits at the typical figure) or "none" (not even 1
    fits: figures for 1)."""
    """The largest micro-batch whose memory range's high end fits the usable memory (0: none): the one that
    fits in the three-way sense, where `max_micro_batch` fits at the typical figure."""
    trainable_params: int
    step_s: Range
    tokens_per_s: Range
    """Real tokens per second (padding excluded)."""
    processed_tokens_per_s: Range
    """Positions computed per second, padding included (what num_input_tokens_seen counts)."""
    mfu: Range
    hfu: Range
    time_to_train_s: Range | None
    cost_usd: dict[str, Range] | None
    offer: Offer | None
    breakdown_s: dict[str, float]
    assumptions: tuple[str, ...]
    backing: dict[str, Any] = field(default_factory=dict)
    """What backs each figure's range (price/ranges_table.Backing): 'step' (time, tokens/s, MFU), 'memory'."""

    @property
    def fit(self):
        """fits / may not fit / does not fit (workload/device_fit.py training_fit_verdict): the memory range's high
        end against the usable memory, as an inference estimate's verdict."""
        from sizeup.workload.device_fit import training_fit_verdict

        return training_fit_verdict(self)

    def _verdict(self) -> dict[str, Any]:
        v = self.fit
        return {"fit": v.verdict, "fit_note": v.why or None}

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
                       "source_seq": source_length(self.arch, cfg) if self.arch.encoder_layers else None,
                       "ssm_scan": cfg.ssm_scan if self.arch.is_recurrent else None,
                       "framework": cfg.framework,
                       "zero": par.zero, "seq": cfg.seq, "mean_seq": cfg.mean_seq, "packing": cfg.packing,
                       "padded_seq": cfg.padded_seq, "loss": cfg.loss, "micro_batch": self.micro_batch,
                       "grad_accumulation": self.grad_accumulation, "global_batch": self.global_batch},
            "memory": {"per_gpu": self.memory.to_dict()},
            "fits": self.memory.fits,
            **self._verdict(),
            "max_micro_batch": self.max_micro_batch,
            "max_micro_batch_in_range": self.max_micro_batch_in_range,
            "micro_batch_rule": self.micro_batch_rule,
            "step": {"latency_s": self.step_s.to_dict(), "breakdown_s": dict(self.breakdown_s)},
            "throughput": {"tokens_per_s": self.tokens_per_s.to_dict(),
                           "tokens_per_s_per_gpu": self.tokens_per_s.scale(1 / par.gpus).to_dict(),
                           "processed_tokens_per_s": self.processed_tokens_per_s.to_dict()},
            "mfu": self.mfu.to_dict(),
            "hfu": self.hfu.to_dict(),
            "time_to_train_s": None if self.time_to_train_s is None else self.time_to_train_s.to_dict(),
            "gpu_hours": None if self.time_to_train_s is None else
            self.time_to_train_s.scale(par.gpus / 3600).to_dict(),
            "cost_usd": None if self.cost_usd is None else {k: v.to_dict() for k, v in self.cost_usd.items()},
            "offer": None if self.offer is None else {"id": self.offer.id, "price_date": self.offer.price_date},
            "assumptions": list(self.assumptions),
            "backing": {k: b.to_dict() for k, b in self.backing.items()},
        }


def estimate_training(arch: ModelArch, device: DeviceSpec, cfg: TrainingConfig, offers: list[Offer] = ()) -> TrainingEstimate:
    par = cfg.parallel
    a0 = arch.layers[0].attention
    par.check_model(a0.heads, a0.kv_heads, arch.num_layers, max((l.mlp.experts for l in arch.layers), default=0))
    if arch.encoder_layers and par.pp > 1:
        raise ConfigError(f"--pp {par.pp} over an encoder-decoder ({arch.name}): pipeline stages of an encoder and a "
                          "decoder are not modelled (expected --pp 1)")
    trainable = trainable_parameters(arch, cfg.finetune)
    cfg, attention = with_attention(cfg, device)
    amp = cfg.mixed_precision == "amp" and cfg.precision in MIXED and \
        cfg.finetune.method in (Method.FULL, Method.FREEZE)
    precision_note = (f"{cfg.framework}: {cfg.precision} as torch.autocast over fp32 weights (a model loaded in "
                      "fp32): fp32 weights, gradients and optimizer state, and each weight's 16-bit cast kept for its "
                      "backward; --precision bf16 for a model loaded in bf16") if amp else PRECISIONS[cfg.precision].note
    assumptions = [*arch.assumptions, *([cfg.framework_note] if cfg.framework_note else []), precision_note,
                   relative_bias_note(arch, cfg, attention.reason) or attention.note]
    if arch.is_recurrent:
        assumptions.append(f"state-space layers: {cfg.ssm_scan} scan ({SSM_SCANS[cfg.ssm_scan]}); --ssm-scan picks")
        if cfg.ssm_scan == "naive":
            assumptions.append("naive scan: the step time prices the scan as the fused kernel does; the reference "
                               "path's per-token loop (sequence-length steps of small kernels) and its traffic over "
                               "the length × inner × state tensors are not priced, so the time is a lower bound")
    if arch.encoder_layers:
        assumptions.append(f"encoder-decoder: target {cfg.seq:,} tokens (--seq), source {source_length(arch, cfg):,} "
                           "positions (--source-seq); " + encoder_note(arch, cfg))
    # micro-batch: given, or the largest that fits
    def accumulation_for(mb: int) -> int:
        return max(1, math.ceil((cfg.global_batch or mb * par.dp) / (mb * par.dp)))

    def fits(mb: int) -> bool:
        return training_memory(arch, device, cfg, mb, accumulation_for(mb)).fits

    max_mb = max_fitting(fits, 1, 4096)
    backing = training_backing(arch, device, cfg)
    high_ratio = backing["memory"].high_ratio

    def fits_whole_range(mb: int) -> bool:  # the memory range's high end within the usable memory (device_fit.py)
        m = training_memory(arch, device, cfg, mb, accumulation_for(mb))
        return m.total_bytes * high_ratio <= m.usable_bytes.typical

    max_in_range = max_fitting(fits_whole_range, 1, max_mb) if max_mb >= 1 else 0
    micro, rule, note = _default_micro_batch(cfg.micro_batch, max_mb, max_in_range)
    if note:
        assumptions.append(note)
    global_batch = cfg.global_batch or micro * par.dp
    accumulation = accumulation_for(micro)
    if global_batch % (micro * par.dp):
        assumptions.append(f"global batch {global_batch} is not a multiple of micro-batch × data parallel "
                           f"({micro} × {par.dp}): {accumulation} accumulation steps of {micro * par.dp}")
        global_batch = accumulation * micro * par.dp
    memory = training_memory(arch, device, cfg, micro, accumulation)
    offer = pick_offer(device, par.gpus, offers, cfg.offer)
    lengths = sequence_lengths(cfg.seq, micro, mean_seq=cfg.mean_seq, packing=cfg.packing, padded_seq=cfg.padded_seq)
    timed = replace(cfg, seq=max(1, round(lengths.processed)))  # time at the length the step computes
    time = step_time(arch, device, timed, micro, accumulation, memory, trainable, offer)
    step = calibrated_time(time.step_s.typical, backing["step"])  # no faster than the tables' best case
    time = replace(time, step_s=Range(max(step.low, time.step_s.low), step.typical, step.high))
    memory = replace(memory, range_ratios=(backing["memory"].low_ratio, backing["memory"].high_ratio))
    assumptions += [n for n in (lengths.note, loss_note(arch, cfg, micro)) if n] + list(time.notes)
    tokens_per_step = round(global_batch * lengths.real)
    processed_per_s = time.step_s.inverse(global_batch * lengths.processed)
    tokens_per_s = time.step_s.inverse(tokens_per_step)
    mfu, hfu, notes = utilization(arch, device, replace(cfg, seq=max(1, round(lengths.real))), time, tokens_per_step)
    assumptions += notes
    time_to_train, cost, notes = run_cost(cfg, time.step_s, tokens_per_step, offer)
    assumptions += notes
    assumptions += _run_notes(cfg, time)
    return TrainingEstimate(arch=arch, device=device, config=cfg, micro_batch=micro, grad_accumulation=accumulation,
                            processed_tokens_per_s=processed_per_s,
                            global_batch=global_batch, memory=memory, max_micro_batch=max_mb,
                            max_micro_batch_in_range=max(max_in_range, 0), micro_batch_rule=rule,
                            trainable_params=trainable.trainable_params, step_s=time.step_s, tokens_per_s=tokens_per_s,
                            mfu=mfu, hfu=hfu, time_to_train_s=time_to_train, cost_usd=cost, offer=offer,
                            breakdown_s=dict(time.breakdown_s), assumptions=tuple(dict.fromkeys(assumptions)),
                            backing=backing)


def _qlora_precisions(cfg: TrainingConfig) -> str:
    """The dtypes a QLoRA run's unquantized parts were priced in: the LM head, the embeddings and norms (fp32 where
    prepare_model_for_kbit_training upcasts them, config.kbit_upcast) and the adapters (activations.adapter_cast)."""
    compute = PRECISIONS[cfg.precision].compute
    upcast = kbit_upcast(cfg)
    head = "LM head in NF4" if cfg.finetune.quantize_head else f"LM head in {'fp32' if upcast else compute}"
    rest = ("embeddings and norms upcast to fp32 (PEFT's prepare_model_for_kbit_training)" if upcast
            else f"embeddings and norms in {compute}")
    adapters = ("fp32 adapters (PEFT's autocast_adapter_dtype)" if adapter_cast(cfg) != "none"
                else f"{compute} adapters")
    return f"{head}, {rest}, {adapters}"


def _default_micro_batch(given: int | None, max_mb: int, max_in_range: int) -> tuple[int, str, str | None]:
    """The micro-batch a run takes and the rule that chose it: the one given; else the largest whose whole memory
    range fits (its high end within the usable memory, as the fit verdict asks); else, where none fits at the high
    end, the largest that fits at the typical figure; else 1. Returns (micro-batch, TrainingEstimate.micro_batch_rule,
    the note saying so or None)."""
    if given:
        return given, "given", None
    if max_in_range >= 1:
        return max_in_range, "range", (
            f"micro-batch {max_in_range}: the largest whose memory range's high end fits the usable memory "
            "(--micro-batch N sets it)" + (f"; {max_mb} fits at the typical figure only" if max_mb > max_in_range
                                           else ""))
    if max_mb >= 1:
        return max_mb, "typical", (f"micro-batch {max_mb}: the largest that fits at the typical figure; not even "
                                   "micro-batch 1 fits the memory range's high end (--micro-batch N sets it)")
    return 1, "none", "not even micro-batch 1 fits: figures are for micro-batch 1"


def training_backing(arch: ModelArch, device: DeviceSpec, cfg: TrainingConfig) -> dict[str, Backing]:
    """The calibrated ranges of a training run's step (time, tokens/s, MFU) and memory: its framework profile and
    method, on its device class (price/ranges_table.py)."""
    from sizeup.hardware.segments import segment_of

    method, gpus, cls = cfg.finetune.method.value, cfg.parallel.gpus, segment_of(device)
    key = training_key(cfg.framework, method, gpus)
    out = {}
    for figure, kind in (("step", "training_step"), ("memory", "training_memory")):
        own = backing(kind, engine=key, device_class=cls, model_type=arch.model_type, derived_peak=peak_derived(device))
        if kind == "training_memory" and own.scope in ("kind", "default"):
            # no row of this framework, method and regime: a measured neighbour's memory errors, widened (the profile
            # prices what this framework keeps); not for the step time, which the frameworks' kernels set apart
            own = next((b for b in (borrowed(kind, engine=key, source=src, why=why, device_class=cls,
                                             model_type=arch.model_type, derived_peak=peak_derived(device))
                                    for src, why in _neighbours(cfg.framework, method, gpus)) if b is not None), own)
        out[figure] = own
    return out


def _neighbours(framework: str | None, method: str, gpus: int) -> list[tuple[str, str]]:
    """Whose rows a training run without rows of its own takes, nearest first: its own framework and method in the
    other regime (one GPU / several), then the default fine-tuning framework's (workload/frameworks.py
    default_framework) for the same method in this regime and the other."""
    other = 1 if gpus > 1 else 2
    regime = {1: "one GPU", 2: "several GPUs"}
    out = [(training_key(framework, method, other), f"the same framework and method on {regime[other]}")]
    default = default_framework()
    if default and (framework or "default") != default:
        out += [(training_key(default, method, g), f"the default framework's, {method} on {regime[min(g, 2)]}")
                for g in (gpus, other)]
    return out


def _run_notes(cfg: TrainingConfig, time: StepTime) -> list[str]:
    """What the estimate assumes about overlap, MFU, model states, links, the allocator and the kernels."""
    par, precision, method = cfg.parallel, PRECISIONS[cfg.precision], cfg.finetune.method
    assumptions = [
        "tensor-parallel collectives " + ("overlapped with the matrix products" if par.tp_overlap
                                          else "on the critical path") + "; pipeline 1F1B bubble (p − 1)/(v·m)",
        f"MFU counts {'6' if method in (Method.FULL, Method.FREEZE) else '4'}·N + 12·L·H·Q·T FLOPs per token "
        f"(PaLM appendix B) against the dense {precision.compute} peak",
    ]
    if cfg.optimizer in ("adamw", "adam") and cfg.precision in MIXED and cfg.mixed_precision == "master":
        assumptions.append("model states: 16 bytes per trainable parameter (2 weights + 2 gradients + 4 master + "
                           "8 moments); the '12 bytes' shortcut is the ZeRO paper's K=12 (master + moments only)")
    if par.tp > 1 and time.intra is not None:
        assumptions.append(f"tensor parallel over {time.intra.kind}")
    reserve = engine_profile("pytorch").range("allocator_overhead_fraction")
    if cfg.allocator_reserve == "observed":
        r = reserve_range(reserve_regime(cfg))
        assumptions.append(f"the caching allocator reserves {r.typical:.0%} ({r.low:.0%} - {r.high:.0%}) beyond the "
                           f"allocated peak, as published {cfg.framework} runs in the '{reserve_regime(cfg)}' regime did "
                           "(data/training/allocator_reserve.yaml); memory.per_gpu.allocated_bytes is what "
                           "max_memory_allocated reports, process_bytes what nvidia-smi shows")
    elif par.zero >= 3 and par.dp > 1 and reserve is not None:
        assumptions.append(f"memory is what PyTorch allocates plus a {reserve.typical:.1%} allocator reserve; "
                           "published FSDP runs "
                           "reserved 7-50% more than they allocated or kept active (meta-llama/llama-cookbook PR #41, "
                           "issue #120), so leave that headroom or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    if par.dp_crosses_nodes and time.inter is not None:
        assumptions.append(f"data parallel across nodes at {time.inter.bytes_per_s * 8 / 1e9:.0f} Gb/s per GPU")
    assumptions.append((f"{cfg.framework}: " if cfg.framework else "") + f"{cfg.kernels} kernels: "
                       + KERNELS[cfg.kernels] + ("" if cfg.framework else "; --framework NAME takes a framework's own"
                                                 f" settings ({', '.join(framework_ids())})"))
    if method == Method.QLORA:
        spec = cfg.finetune
        assumptions.append(f"QLoRA: NF4 base {'with' if spec.double_quant else 'without'} double "
                           f"quantization, {_qlora_precisions(cfg)}; each 4-bit weight is multiplied as {spec.dequant_copies} full-size dequantized "
                           "cop" + ("ies" if spec.dequant_copies > 1 else "y") + " (the largest counted in overhead); "
                           "paged optimizer state counted on the GPU (it pages to CPU RAM only under memory spikes)")
        if cfg.keeps_last_graph and cfg.recompute in ("none", "selective"):
            assumptions.append("QLoRA: the loop keeps the previous step's output while the next forward runs, and "
                               "bitsandbytes keeps its products' inputs in ctx.tensors (outside saved tensors), so "
                               "the previous step's inputs are counted once more at the forward peak")
    return assumptions
