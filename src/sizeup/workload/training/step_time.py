"""Time of one training step: forward, backward (with what each kind of op costs there), recomputation,
tensor-, data- and expert-parallel communication, the pipeline bubble and the optimizer step; and the
model FLOPs utilisation that follows from it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.ingest.hf_config import ModelArch
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.price.attention_kernels import compute_capability, flash2_fraction
from sizeup.price.comm import Link, collective_time, device_link, group_collective_time, network_link
from sizeup.price.efficiency import device_efficiency
from sizeup.engines.profile import engine_profile
from sizeup.price.roofline import price, tensor_precision
from sizeup.ranges import Range
from sizeup.workload.finetune import Method, Trainable, dequant_traffic_bytes
from sizeup.workload.frameworks import matmul_fraction
from sizeup.workload.nodes import network_gbit_per_gpu
from sizeup.workload.training.activations import layer_projections
from sizeup.workload.training.config import PRECISIONS, TrainingConfig
from sizeup.workload.training.encoder_decoder import (encoder_decoder_flops_per_sequence, encoder_time, encoder_trains,
                                                      source_length)
from sizeup.workload.training.kernel_time import (adapter_traffic_bytes, eager_host_forward, eager_rest_time,
                                                  loss_time, offload_bytes, traffic_time)
from sizeup.workload.training.memory import TrainingMemory
from sizeup.workload.training.sharded_comm import data_parallel_time, exposed

__all__ = ["StepTime", "step_time", "utilization", "model_flops_per_token", "links", "exposed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepTime:
    step_s: Range
    """One optimizer step: every micro-batch, the bubble, exposed communication, the optimizer."""
    forward_s: Range
    """One micro-batch's forward pass on one pipeline stage; backward_s and recompute_s likewise."""
    backward_s: Range
    recompute_s: Range
    breakdown_s: dict[str, float]
    """Typical seconds per step by part (forward, backward, recompute, tensor_parallel, …)."""
    intra: Link | None
    """The link within a node (None: the catalog lists none), and between nodes (None: one node)."""
    inter: Link | None
    notes: tuple[str, ...] = ()


def step_time(arch: ModelArch, device: DeviceSpec, cfg: TrainingConfig, micro: int, accumulation: int,
              memory: TrainingMemory, trainable: Trainable, offer: Offer | None) -> StepTime:
    """Seconds per optimizer step of `accumulation` micro-batches of `micro` sequences per GPU."""
    par = cfg.parallel
    notes: list[str] = []
    precision = PRECISIONS[cfg.precision]
    weights = "nf4" if cfg.finetune.method == Method.QLORA else precision.compute if precision.compute != "fp8" else "fp8"
    weights = {"fp32": "fp32", "bf16": "bf16"}.get(weights, weights)
    act_dtype = "fp32" if cfg.precision == "fp32" else "fp16" if precision.compute == "fp16" else "bf16"
    decoder = replace(arch, cross_source=source_length(arch, cfg)) if arch.cross_source else arch
    forward = transformer_ledger(decoder, Step(batch=micro, new_tokens=cfg.seq, context=cfg.seq, logits="all"),
                                 weights=weights, act_dtype=act_dtype, tp=par.tp, per_layer=False)
    eff = device_efficiency(device)
    fa2 = flash2_fraction(device) if cfg.flash_attention and cfg.attention == "flash2" else None
    if fa2 is not None and eff.origin.startswith("defaults"):  # a calibrated profile measured its own kernels
        eff = replace(eff, tensor={**eff.tensor, "attention": fa2[0]})
        notes.append(f"attention: FlashAttention-2 on {device.id} at {fa2[0].typical:.0%} of the tensor peak, its own "
                     f"fraction on this compute capability (attention_kernels.yaml flash2_fraction)")
    pinned = matmul_fraction(cfg.framework, compute_capability(device)) if precision.compute in ("bf16", "fp16") else None
    if pinned is not None and eff.origin.startswith("defaults"):
        eff = replace(eff, tensor={**eff.tensor, "matmul": pinned})
        notes.append(f"weight products: {cfg.framework}'s pinned cuBLAS on {device.id} at {pinned.typical:.0%} of the "
                     f"tensor peak (frameworks.yaml matmul_fraction)")
    roof = price(forward, device, eff)
    by_kind = {k: v["time_s"].scale(1 / par.pp) for k, v in roof.by("kind").items()}
    zero = Range.exact(0.0)
    t_fwd = roof.total_s.scale(1 / par.pp)
    t_attn = by_kind.get("attention", zero)
    t_weights = by_kind.get("matmul", zero)  # products with a weight matrix (the projections, the head)
    if precision.compute == "fp8":  # each FP8 product first quantizes its operands (cast, scale, transpose)
        quantize = engine_profile("transformer-engine").range("fp8_quantize_overhead_fraction") or zero
        t_quantize = Range(*(getattr(t_weights, lv) * getattr(quantize, lv) for lv in ("low", "typical", "high")))
        t_fwd, t_weights = t_fwd + t_quantize, t_weights + t_quantize
        notes.append(f"FP8 products pay Transformer Engine's operand quantization, +{quantize.typical:.0%} "
                           f"of their kernel time (current scaling)")
    t_rest = sum((t for k, t in by_kind.items() if k not in ("attention", "matmul")), zero)  # norms, activations…
    # what the framework's kernels add: eager multi-kernel ops, PEFT's adapter kernels, the loss's passes (forward;
    # their backward is priced at twice that)
    t_eager = eager_rest_time(roof.by("op"), cfg, par.pp)
    t_adapters = traffic_time(adapter_traffic_bytes(arch, cfg, micro, cfg.seq), device, eff.memory)
    t_loss = loss_time(arch, cfg, micro, cfg.seq, device, eff.memory).scale(1 / par.pp)
    t_extra_fwd = t_eager + t_adapters + t_loss.scale(1 / 3)  # the loss's traffic is a third forward, two backward
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
    if cfg.recompute in ("full", "offload"):
        t_recompute = t_fwd
    elif cfg.recompute == "selective-op":  # the even-numbered products and every non-product op, not attention
        t_recompute = t_weights.scale(recomputed_product_share(arch)) + t_rest
    elif cfg.recompute == "selective" and not cfg.flash_attention:
        t_recompute = t_attn
    else:
        t_recompute = zero
    if arch.is_recurrent and cfg.ssm_scan == "fused" and cfg.recompute != "full":
        # mamba_ssm's backward kernels rerun the conv and the scan's forward (checkpoint level 1; Gu & Dao
        # 2023 §3.3: the states are recomputed in backward, not stored)
        by_op = roof.by("op")
        t_recompute = t_recompute + sum((by_op[op]["time_s"].scale(1 / par.pp) for op in ("selective_scan", "conv1d")
                                         if op in by_op), zero)
        notes.append("state-space layers: the fused scan's backward reruns the conv and the scan forward "
                     "(states recomputed, not stored)")
    if arch.encoder_layers:
        enc = encoder_time(arch, device, cfg, micro, eff, weights=weights, act_dtype=act_dtype)
        t_fwd, t_bwd, t_recompute = t_fwd + enc.forward_s, t_bwd + enc.backward_s, t_recompute + enc.recompute_s
        notes.append(f"encoder-decoder: the encoder runs over {source_length(arch, cfg):,} source positions per "
                     f"sequence{'' if encoder_trains(arch, cfg) else ' (forward only: no gradient reaches it)'}; tokens/s "
                     "counts target tokens; MFU counts the encoder's weights over the source positions (2·N where "
                     "it only runs forward) and the decoder's over the target")
    intra, inter = links(device, cfg, offer)
    # tensor-parallel collectives: 2 per layer forward, 2 backward (and 2 more with full recompute)
    t_tp = Range.exact(0.0)
    if par.tp > 1:
        if intra is None:
            notes.append(f"{device.id}: no link bandwidth in the catalog: tensor-parallel traffic not priced")
        else:
            size = micro * cfg.seq * arch.hidden * 2
            per_layer = collective_time("all_reduce", size, par.tp, intra)
            count = (4 + (2 if cfg.recompute in ("full", "offload") else 0)) * -(-arch.num_layers // par.pp)
            t_tp = per_layer.scale(count)
            if arch.encoder_layers:  # the encoder's, over the source: 2 forward, 2 more backward where it trains
                enc_size = micro * source_length(arch, cfg) * arch.hidden * 2
                passes = (4 + (2 if cfg.recompute in ("full", "offload") else 0)) if encoder_trains(arch, cfg) else 2
                t_tp = t_tp + collective_time("all_reduce", enc_size, par.tp, intra).scale(
                    passes * len(arch.encoder_layers))
            if par.tp_overlap:  # hidden behind the products it is split into, only the excess exposed
                t_tp = exposed(t_tp, t_weights + t_weights.scale(weight_factor * reach))
    # qlora: each pass over a 4-bit weight (forward, recompute, the backward input gradient) first writes
    # a 16-bit copy of it (finetune.dequant_traffic_bytes), a memory-bound kernel the matmul waits on
    dequant_bytes = dequant_traffic_bytes(arch, cfg.finetune) / (par.tp * par.pp)
    passes = 1 + reach + (1 if cfg.recompute in ("full", "offload") else 0)
    t_dequant = Range(*(dequant_bytes * passes / (device.memory_bandwidth_bytes_per_s * getattr(eff.memory, lv))
                        for lv in ("high", "typical", "low"))) if dequant_bytes else zero
    if dequant_bytes:
        notes.append(f"QLoRA: every 4-bit weight is dequantized to a 16-bit copy before each of its {passes:g} "
                     f"products per micro-step (+{dequant_bytes * passes / 1e9:.1f} GB memory traffic)")
    t_extra = t_eager.scale(3) + t_adapters.scale(3) + t_loss  # forward + 2x backward; the loss as counted
    # an eager framework launches each forward op from Python: where that takes longer than the GPU's forward, the
    # GPU waits (per forward pass, and once more for each recomputed forward)
    host = eager_host_forward(forward.ops, arch, cfg).scale(1 / par.pp)
    stall = exposed(host, t_fwd + t_extra_fwd).scale(2 if cfg.recompute in ("full", "offload") else 1)
    if stall.typical > 0:
        notes.append(f"eager dispatch: launching one forward from Python takes {host.typical * 1e3:.1f} ms (PyTorch eager's "
                     f"per-op host cost), {stall.typical * 1e3:.1f} ms more than the GPU needs per micro-step")
    t_extra = t_extra + stall
    if cfg.recompute in ("full", "offload"):
        t_extra = t_extra + t_eager + t_adapters
    t_offload = zero
    transfer = offload_bytes(arch, cfg, micro, cfg.seq)
    if transfer and device.pcie_bytes_per_s:  # layer inputs out during forward, back during backward, overlapped
        one_way = Range.exact(transfer / device.pcie_bytes_per_s)
        t_offload = exposed(one_way, t_fwd) + exposed(one_way, t_bwd)
        notes.append(f"offloaded checkpointing: {transfer / 1e9:.2f} GB of layer inputs each way over PCIe per "
                     "micro-step, hidden behind the forward and the backward where they are longer")
    if t_extra.typical > 0:
        notes.append(f"{cfg.kernels} kernels, {cfg.loss} loss"
                     + (", PEFT adapters as separate kernels" if t_adapters.typical else "")
                     + f": {t_extra.typical * 1e3:.1f} ms of memory-bound passes per micro-step beyond the fused "
                       "ledger (eager multi-kernel norms / rotary / activations, adapter kernels, the loss)")
    micro_step = t_fwd + t_bwd + t_recompute + t_tp + t_dequant + t_extra + t_offload
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
            notes.append(f"{device.id}: no link bandwidth in the catalog: data-parallel traffic not priced")
        else:
            # ZeRO-3 gathers the 16-bit trainable weights and the frozen base in its storage format
            gather_bytes = (arch.params * precision.weight if method in (Method.FULL, Method.FREEZE) else
                            memory.weights_bytes * par.dp * (par.tp * par.pp)) / (par.tp * par.pp)
            t_dp, note = data_parallel_time(cfg, -(-arch.num_layers // par.pp), gather_bytes, grad_bytes,
                                            t_fwd + t_extra_fwd, t_bwd + t_extra_fwd.scale(2), accumulation,
                                            dp_collective, expert_share, trained_expert_share)
            notes.append(note)
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
    breakdown = {"forward": t_fwd.typical * accumulation, "backward": t_bwd.typical * accumulation,
                 "framework_kernels": t_extra.typical * accumulation, "offload": t_offload.typical * accumulation,
                 "recompute": t_recompute.typical * accumulation,
                 "dequantize": t_dequant.typical * accumulation, "tensor_parallel": t_tp.typical * accumulation,
                 "pipeline_bubble": micro_step.typical * accumulation * bubble, "data_parallel_exposed": t_dp.typical,
                 "expert_parallel": t_ep.typical, "optimizer": t_opt.typical}
    return StepTime(step_s=step, forward_s=t_fwd, backward_s=t_bwd, recompute_s=t_recompute, breakdown_s=breakdown,
                    intra=intra, inter=inter, notes=tuple(notes))


def utilization(arch: ModelArch, device: DeviceSpec, cfg: TrainingConfig, time: StepTime,
                tokens_per_step: int) -> tuple[Range, Range, tuple[str, ...]]:
    """Model and hardware FLOPs utilisation (MFU, HFU: recomputed FLOPs counted too) of the step, and a
    note when the device lists no peak for the precision."""
    precision = PRECISIONS[cfg.precision]
    peak = tensor_precision(device, "matmul", precision.compute)
    if arch.encoder_layers:
        factor = 6 if cfg.finetune.method in (Method.FULL, Method.FREEZE) else 4
        model_flops = encoder_decoder_flops_per_sequence(arch, cfg.seq, source_length(arch, cfg), factor,
                                                         factor if encoder_trains(arch, cfg) else 2) * (tokens_per_step // cfg.seq)
    else:
        model_flops = model_flops_per_token(arch, cfg.seq, cfg.finetune.method) * tokens_per_step
    recompute_factor = 1 + time.recompute_s.typical / max((time.forward_s + time.backward_s).typical, 1e-30)
    if peak is None:
        zero = Range.exact(0.0)
        return zero, zero, (f"{device.id} lists no {precision.compute} peak: MFU not computed",)
    mfu = time.step_s.inverse(model_flops / (peak[2] * cfg.parallel.gpus))
    return mfu, mfu.scale(recompute_factor), ()


def links(device: DeviceSpec, cfg: TrainingConfig, offer: Offer | None) -> tuple[Link | None, Link | None]:
    """(the GPU link inside a node; the network each GPU sees between nodes, None on one node). The network per node:
    `--network-gbps`, else the offer's stated one, else comm.yaml's per-GPU figure (workload/nodes.py) times the GPUs
    per node, as inference across nodes takes it."""
    intra = device_link(device)
    if cfg.parallel.nodes == 1:
        return intra, None
    per_node = cfg.network_gbit_per_s or (offer.network_bytes_per_s * 8 / 1e9 if offer and offer.network_bytes_per_s
                                          else network_gbit_per_gpu() * cfg.parallel.gpus_per_node)
    return intra, network_link(per_node * 1e9 / 8 / cfg.parallel.gpus_per_node)


def model_flops_per_token(arch: ModelArch, seq: int, method: Method) -> float:
    """6·N + 12·L·H·Q·T per token (PaLM appendix B; N without the embedding lookup), with 4·N for
    adapter methods, which compute no weight gradients for the frozen base."""
    n = arch.active_params - (0 if arch.image else arch.vocab * arch.hidden * (0 if arch.tie_embeddings else 1))
    attention = sum(12 * layer.attention.heads * layer.attention.head_dim * seq for layer in arch.layers)
    factor = 6 if method in (Method.FULL, Method.FREEZE) else 4
    return factor * n + attention


def recomputed_product_share(arch: ModelArch) -> float:
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
