"""`sizeup train MODEL --method full|lora|qlora|freeze --device NAME`: training memory, time and cost."""

from __future__ import annotations

import argparse

from sizeup.cli.calibration import add_calibration_arguments
from sizeup.cli.commands.hw import add_catalog_argument
from sizeup.cli.flags import BATCH as _BATCH, GPUS as _GPUS, exclusive
from sizeup.report.terminal import render_table
from sizeup.units import (MAX_LAYERS, MAX_PARALLEL, MAX_TOKENS, MAX_TRAINING_TOKENS,
                          format_bytes, format_seconds, number_flag)
from sizeup.workload.frameworks import framework_ids

_DEGREE = number_flag(integer=True, minimum=1, maximum=MAX_PARALLEL)
_TRAINING_TOKENS = number_flag(above=0, maximum=MAX_TRAINING_TOKENS, unit="count")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="memory, step time, MFU and cost of training or fine-tuning a transformer",
                       description="MODEL is a preset, a Hugging Face id of a preset, or a config.json / model folder.")
    p.add_argument("model", nargs="?", help="a preset, config.json or model folder; or FILE.py:FACTORY for a torch "
                                             "module (traced, with --input / --input-spec); none with --from-run")
    p.add_argument("--device", help="device name (see 'sizeup hw list'), or 'local' with --calibration (required "
                                    "but with --from-run)")
    p.add_argument("--input", action="append", default=[], metavar="SHAPE",
                   help="torch module: float input shape like 8x3x224x224 (the batch is the micro-batch)")
    p.add_argument("--input-spec", action="append", default=[], metavar="SPEC",
                   help="torch module: [NAME=]DTYPE:SHAPE, e.g. input_ids=int64:4x512")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"],
                   help="torch module: precision of the traced step (default fp32)")
    p.add_argument("--method", choices=["full", "lora", "qlora", "freeze", "dora"], help="default full")
    p.add_argument("--compare", metavar="M,M,…", help="compare methods side by side, e.g. full,lora,qlora")
    p.add_argument("--rank", type=number_flag(integer=True, minimum=1, maximum=65_536), default=16,
                   help="LoRA rank (default 16)")
    p.add_argument("--targets", default="q_proj,v_proj", help="LoRA target modules, or all-linear (default q_proj,v_proj)")
    p.add_argument("--trainable-layers", type=number_flag(integer=True, minimum=1, maximum=MAX_LAYERS), default=2,
                   help="freeze: how many of the last layers train")
    p.add_argument("--framework", choices=framework_ids(),
                   help="take the framework's own settings (kernels, loss chunking, LoRA dropout, QLoRA wiring) "
                        "from data/training/frameworks.yaml; options given here win")
    p.add_argument("--attention", choices=["sdpa", "eager", "flash2"],
                   help="attention implementation (default: the framework's, else sdpa); which kernel it runs on the "
                        "device and dtype: data/training/attention_kernels.yaml")
    p.add_argument("--kernels", choices=["fused", "eager", "liger", "unsloth"],
                   help="fused: Megatron / Transformer Engine / torch.compile (default); eager: PyTorch modules op by "
                        "op, as transformers, litgpt and torchtune run them (RMSNorm keeps fp32 copies, repeated K/V, "
                        "several memory-bound kernels per norm); liger: Liger Kernel's Triton kernels and fused linear "
                        "cross-entropy over transformers; unsloth: Unsloth's Triton and fused LoRA kernels")
    p.add_argument("--loss", choices=["chunked", "upcast", "native", "inplace", "fused-linear"],
                   help="how the head and cross-entropy run (default: the framework's): upcast = transformers' "
                        "logits.float() over all positions (12 bytes per logit at the peak); fused-linear = Liger / "
                        "Unsloth / TRL >= 1.6 chunks, no full logits; inplace = Unsloth 2024's Triton CE")
    p.add_argument("--adapter-dtype", choices=["base", "fp32"],
                   help="LoRA weights in the base's dtype or fp32 (PEFT >= 0.12's default; default: the framework's)")
    p.add_argument("--grads-kept", action="store_true",
                   help="gradients are zeroed, not freed, between steps (PyTorch < 2.0's zero_grad default, or a loop "
                        "that keeps them): they coexist with the activations")
    p.add_argument("--fused-lora", action="store_const", const=True,
                   help="the adapters run inside the base products (Unsloth's fast_lora, fms-acceleration fused_lora), "
                        "not as PEFT's separate kernels")
    p.add_argument("--no-kbit-upcast", action="store_true",
                   help="qlora: the unquantized parameters stay 16-bit (no prepare_model_for_kbit_training upcast)")
    p.add_argument("--lora-dropout", type=number_flag(minimum=0, below=1),
                   help="LoRA dropout (default 0.0 as PEFT, litgpt 0.05): each adapter then keeps a dropped copy "
                        "of its input")
    p.add_argument("--no-double-quant", action="store_const", const=True,
                   help="qlora: NF4 with fp32 block scales (bitsandbytes nf4, litgpt bnb.nf4) instead of double "
                        "quantization")
    p.add_argument("--fused-qkv", action="store_const", const=True,
                   help="q, k and v from one product (litgpt): one adapter input for the three, not one per module")
    p.add_argument("--optimizer", choices=["adamw", "adam", "adamw-8bit", "sgd", "adafactor", "lion"],
                   help="default: the framework's (Unsloth adamw-8bit), else adamw")
    p.add_argument("--precision", default="bf16-mixed", choices=["bf16-mixed", "fp16-mixed", "fp32", "bf16", "fp8"],
                   help="bf16-mixed / fp16-mixed: 16-bit compute with an fp32 master copy (under --framework hf and "
                        "the other HF Trainer frameworks: fp32 weights under torch.autocast); bf16: a model loaded in "
                        "bf16 (weights, gradients and AdamW moments in bf16)")
    p.add_argument("--recompute", choices=["none", "selective", "selective-op", "full", "offload"],
                   help="activation recomputation (default: the framework's, LLaMA-Factory full, Unsloth offload, else "
                        "none): selective = Megatron's (attention scores), selective-op = torchtitan's per-op policy, "
                        "full = gradient checkpointing, offload = checkpointing with layer inputs in CPU memory")
    p.add_argument("--loss-chunks", type=number_flag(integer=True, minimum=1, maximum=MAX_TOKENS),
                   help="the cross-entropy runs over this many sequence chunks, as litgpt and torchtune do (default 1)")
    p.add_argument("--no-flash", action="store_true", help="attention without a fused kernel (stores the scores)")
    p.add_argument("--gpus", type=_GPUS, default=1, help="GPUs in all (default 1)")
    p.add_argument("--nodes", type=_GPUS, help="nodes (default: the instances of the offer that holds the GPUs)")
    p.add_argument("--tp", type=_DEGREE, default=1, help="tensor parallel")
    p.add_argument("--pp", type=_DEGREE, default=1, help="pipeline parallel")
    p.add_argument("--vp", type=_DEGREE, default=1, help="virtual pipeline stages per GPU (interleaved 1F1B)")
    p.add_argument("--tp-overlap", action="store_true",
                   help="tensor-parallel collectives overlapped with the matrix products (TE userbuffers, async TP)")
    p.add_argument("--ep", type=_DEGREE, default=1, help="expert parallel (MoE)")
    p.add_argument("--zero", type=number_flag(integer=True, minimum=0, maximum=3), default=0,
                   help="ZeRO stage 0-3 (FSDP full shard = 3)")
    p.add_argument("--no-sequence-parallel", action="store_true", help="with --tp, keep norm activations replicated")
    p.add_argument("--seq", type=number_flag(integer=True, minimum=1, maximum=MAX_TOKENS, unit="count"), default=2048,
                   help="sequence length, the longest a batch holds (default 2048): memory is priced here")
    p.add_argument("--mean-seq", type=number_flag(minimum=1, maximum=MAX_TOKENS, unit="count"),
                   help="mean sample length: with padding to the longest in each micro-batch (the default) time is "
                        "priced at the expected padded length, with --packing at full rows; tokens/s counts real tokens")
    p.add_argument("--packing", action="store_const", const=True,
                   help="samples packed into rows of --seq tokens (TRL / Axolotl packing): no padding")
    p.add_argument("--padded-seq", type=number_flag(minimum=1, maximum=MAX_TOKENS, unit="count"),
                   help="the measured mean padded length per row (e.g. num_input_tokens_seen / sequences), instead "
                        "of sizeup's expectation from --mean-seq")
    p.add_argument("--source-seq", type=number_flag(integer=True, minimum=1, maximum=MAX_TOKENS, unit="count"),
                   help="encoder-decoders (T5, Whisper): encoder positions per sequence; --seq is then the target "
                        "length (default: the model's, T5's n_positions, Whisper's 1500 frames)")
    p.add_argument("--ssm-scan", default="fused", choices=["fused", "naive"],
                   help="state-space models (Mamba): fused = mamba_ssm's kernels (states recomputed in backward), "
                        "naive = the PyTorch reference scan (keeps length × inner × state per layer)")
    p.add_argument("--micro-batch", type=_BATCH, help="per GPU (default: the largest whose memory range fits "
                   "whole; where none does, the largest that fits at the typical figure)")
    p.add_argument("--global-batch", type=_BATCH, help="sequences per optimizer step")
    p.add_argument("--tokens", type=_TRAINING_TOKENS, help="tokens to train on (e.g. 1e9)")
    p.add_argument("--epochs", type=number_flag(above=0, maximum=10_000),
                   help="passes over the data (with --dataset-tokens)")
    p.add_argument("--dataset-tokens", type=_TRAINING_TOKENS, help="tokens in the data set")
    p.add_argument("--offer", help="cloud offer id to price on (default: the cheapest for the device)")
    p.add_argument("--network-gbps", type=number_flag(above=0, maximum=10**6, unit="Gbit/s"),
                   help="node-to-node network per node, Gb/s, or with a unit: 400Gbps, 50GB/s (default from the offer)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_calibration_arguments(p)
    add_catalog_argument(p)
    from sizeup.cli.commands.train_job import add_job_arguments

    add_job_arguments(p)
    exclusive(p, "--method", "--compare", "--compare prices each method it lists; give one")
    exclusive(p, "--tokens", "--epochs", "--tokens is the run's length; --epochs × --dataset-tokens is another")
    exclusive(p, "--tokens", "--dataset-tokens", "--tokens is the run's length; --epochs × --dataset-tokens is "
                                                 "another")
    p.set_defaults(func=run)


def train_options(args: argparse.Namespace):
    """The flags as `sizeup.api.TrainOptions`."""
    from sizeup.api import TrainOptions

    return TrainOptions(
        device=args.device, method=args.method or "full", rank=args.rank,
        targets=tuple(t.strip() for t in args.targets.replace("+", ",").split(",") if t.strip()),
        trainable_layers=args.trainable_layers, framework=args.framework, attention=args.attention,
        kernels=args.kernels, loss=args.loss, adapter_dtype=args.adapter_dtype, grads_kept=args.grads_kept,
        fused_lora=args.fused_lora, kbit_upcast=False if args.no_kbit_upcast else None, lora_dropout=args.lora_dropout,
        double_quant=False if args.no_double_quant else None, fused_qkv=args.fused_qkv, optimizer=args.optimizer,
        precision=args.precision, recompute=args.recompute, loss_chunks=args.loss_chunks, flash=not args.no_flash,
        gpus=args.gpus, nodes=args.nodes, tp=args.tp, pp=args.pp, vp=args.vp, tp_overlap=args.tp_overlap, ep=args.ep,
        zero=args.zero, sequence_parallel=not args.no_sequence_parallel, seq=args.seq, mean_seq=args.mean_seq,
        packing=args.packing, padded_seq=args.padded_seq, source_seq=args.source_seq,
        ssm_scan=args.ssm_scan, micro_batch=args.micro_batch, global_batch=args.global_batch, tokens=args.tokens,
        epochs=args.epochs, dataset_tokens=args.dataset_tokens, offer=args.offer, network_gbps=args.network_gbps,
        inputs=tuple(args.input), input_specs=tuple(args.input_spec), dtype=args.dtype,
        calibration=args.calibration, db=args.db, catalog=tuple(args.catalog))


def run(args: argparse.Namespace) -> int:
    from sizeup.cli.commands.train_job import run_job, wants_job

    if wants_job(args):
        return run_job(args)
    if not args.model or not args.device:
        from sizeup.errors import ConfigError

        raise ConfigError("sizeup train needs MODEL and --device NAME (or --from-run RUN)")
    from sizeup.api import train, train_methods
    from sizeup.cli.main import emit_json

    options = train_options(args)
    if args.compare:
        result = train_methods(args.model, args.compare.split(","), options)
        emit_json(result.to_dict()) if args.json else print(render_compare(result))
        return 0
    result = train(args.model, options)
    traced = bool(args.input or args.input_spec)
    if args.json:
        emit_json(result.to_dict())
    elif traced:
        print(render_traced(result, args.optimizer or "adamw", args.dtype))
    else:
        print(render_training(result))
        if not result.fits:
            print(render_would_fit(result.would_fit))
    return 0 if traced or result.fits else NOT_FIT_EXIT


NOT_FIT_EXIT = 2
"""As `estimate`: the configuration does not fit (what would fit is printed)."""


def render_would_fit(suggestions) -> str:
    if not suggestions:
        return "\nnothing fits on this device up to 1,024 GPUs"
    lines = ["\nwhat would fit (each alone, the rest unchanged):"]
    for s in suggestions:
        size = f" ({format_bytes(s.total_bytes)} per GPU)" if s.total_bytes else ""
        lines.append(f"  {s.change}{size}" + (f"  [{s.note}]" if s.note else ""))
    return "\n".join(lines)


def render_compare(result) -> str:
    rows = [r.to_dict() for r in result.rows]
    table = []
    for r in rows:
        cost = r["cost_usd"]["on_demand"]["typical"] if r["cost_usd"] else None
        time = r["time_to_train_s"]["typical"] if r["time_to_train_s"] else None
        table.append([r["method"], f"{r['trainable_params']:,}", format_bytes(r["memory_per_gpu_bytes"]),
                      "yes" if r["fits"] else "no", r["smallest_gpu_count"] or "> 1024", r.get("gpus") or "-",
                      "" if r["tokens_per_s"] is None else f"{r['tokens_per_s']['typical']:,.0f}",
                      "" if time is None else format_seconds(time), "" if cost is None else f"${cost:,.0f}"])
    return render_table(["method", "trainable", "memory/GPU", "fits", "min GPUs", "quoted on", "tokens/s", "time",
                         "cost"], table,
                        title=f"{result.model} on {result.device.name}, micro-batch {rows[0]['micro_batch']} per GPU; "
                              "each method quoted on the GPUs it needs (ZeRO-3 past one GPU)"
                        ) + "".join(f"\nassumption: {note}" for note in result.assumptions)


def _training_verdict(e) -> str:
    """FITS / FITS at the typical figure, MAY NOT FIT / DOES NOT FIT (workload/device_fit.py training_fit_verdict)."""
    from sizeup.workload.device_fit import FITS, MAY_NOT_FIT

    v = e.fit
    if v.verdict == MAY_NOT_FIT:
        return f"FITS at the typical figure, but MAY NOT FIT: {v.why}"
    return "FITS" if v.verdict == FITS else "DOES NOT FIT"


_RULES = {"range": "; micro-batch {mb} chosen: the largest whose memory range fits",
          "typical": "; micro-batch {mb} chosen: the largest that fits at the typical figure (none fits the range's "
                     "high end)"}
"""Why the run took its micro-batch when none was given (TrainingEstimate.micro_batch_rule)."""


def render_training(e) -> str:
    cfg, par, m = e.config, e.config.parallel, e.memory
    lines = [f"{e.arch.name}: {cfg.finetune.method.value} ({e.trainable_params:,} trainable of {e.arch.params:,}), "
             f"{cfg.optimizer}, {cfg.precision}, recompute {cfg.recompute}",
             f"{par.gpus} x {e.device.name} ({par.nodes} node{'s' if par.nodes > 1 else ''}): tp {par.tp}, pp {par.pp}, "
             f"dp {par.dp}, ZeRO {par.zero}; seq {cfg.seq}, micro-batch {e.micro_batch}, accumulation "
             f"{e.grad_accumulation}, global batch {e.global_batch}", ""]
    rows = [["weights", format_bytes(m.weights_bytes)], ["gradients", format_bytes(m.gradients_bytes)],
            ["optimizer state", format_bytes(m.optimizer_bytes)], ["activations", format_bytes(m.activations_bytes)],
            ["overhead", format_bytes(m.overhead_bytes)],
            ["total", f"{format_bytes(m.total_bytes)} ({format_bytes(int(m.total_range.low))} - "
                      f"{format_bytes(int(m.total_range.high))})"],
            ["usable", format_bytes(m.usable_bytes.typical)]]
    lines.append(render_table(["memory per GPU", ""], rows, right=[False, True]))
    within = (f" ({e.max_micro_batch_in_range} with the memory range's high end)"
              if e.max_micro_batch_in_range != e.max_micro_batch else "")
    lines.append(f"\n{_training_verdict(e)}; largest micro-batch that fits: {e.max_micro_batch}{within}"
                 + _RULES.get(e.micro_batch_rule, "").format(mb=e.micro_batch))
    s = e.step_s
    lines.append(f"step: {format_seconds(s.typical)} ({format_seconds(s.low)} - {format_seconds(s.high)}); "
                 f"{e.tokens_per_s.typical:,.0f} tokens/s ({e.tokens_per_s.typical / par.gpus:,.0f} per GPU); "
                 f"MFU {e.mfu.typical:.1%} ({e.mfu.low:.1%} - {e.mfu.high:.1%}), HFU {e.hfu.typical:.1%}")
    parts = ", ".join(f"{k} {format_seconds(v)}" for k, v in e.breakdown_s.items() if v > 0)
    lines.append(f"step breakdown: {parts}")
    if e.time_to_train_s is not None:
        t = e.time_to_train_s
        lines.append(f"time to train: {t.typical / 3600:,.1f} h ({t.low / 3600:,.1f} - {t.high / 3600:,.1f} h), "
                     f"{t.typical * par.gpus / 3600:,.0f} GPU-hours")
        if e.cost_usd:
            lines.append("cost: " + ", ".join(f"{k} ${v.typical:,.0f} (${v.low:,.0f} - ${v.high:,.0f})"
                                              for k, v in e.cost_usd.items()))
    lines += [f"range of {figure}: {b.text}" for figure, b in e.backing.items()]
    for note in e.assumptions:
        lines.append(f"assumption: {note}")
    return "\n".join(lines)


def render_traced(estimate, optimizer: str, dtype: str) -> str:
    """A traced torch module's training step."""
    lines = [f"{estimate.name}: one training step ({optimizer}, {dtype}) on {estimate.device.name}"]
    rows = [[k, format_bytes(v)] for k, v in estimate.memory_by_category.items()]
    rows += [["peak", format_bytes(estimate.memory_peak_bytes)], ["usable", format_bytes(estimate.usable_bytes.typical)]]
    lines.append(render_table(["memory at the peak (traced)", ""], rows, right=[False, True]))
    s = estimate.step_s
    lines.append(f"\n{'FITS' if estimate.fits else 'DOES NOT FIT'}; step {format_seconds(s.typical)} "
                 f"({format_seconds(s.low)} - {format_seconds(s.high)}), "
                 f"{estimate.samples_per_step / s.typical:,.1f} samples/s")
    lines.append("by phase: " + ", ".join(f"{k} {format_seconds(v)}" for k, v in estimate.by_phase_s.items()))
    lines.extend(f"assumption: {a}" for a in estimate.assumptions)
    return "\n".join(lines)
