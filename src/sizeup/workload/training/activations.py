"""Activations a training step keeps for its backward pass, per layer and for the first pipeline stage.

Activations per layer follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", §4), generalised from their GPT-3 layer (s·b·h·(34 + 5·a·s/h) bytes) to
grouped-query attention, gated MLPs and any intermediate size: every tensor a backward pass reads is
counted at 2 bytes, dropout masks at 1 byte, the a·s² softmax terms only without a fused (flash)
kernel. Tensor parallelism divides the inner terms by t, sequence parallelism the rest; selective
recomputation drops the s² terms, full recomputation keeps only each layer's input. What adapters
(LoRA, QLoRA) and op-by-op (eager) kernels change is counted on top. State-space layers are counted by
sizeup.workload.training.ssm_activations; an encoder-decoder's encoder stack and cross-attention by
sizeup.workload.training.encoder_decoder.
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.ingest.hf_config import LayerSpec, ModelArch
from sizeup.workload.finetune import Method, targeted
from sizeup.workload.training.config import PRECISIONS, TrainingConfig, kbit_upcast
from sizeup.workload.training.loss import loss_peak_bytes
from sizeup.workload.training.encoder_decoder import (cross_attention_activation_bytes, encoder_arch, encoder_trains,
                                                      relative_bias_bytes, source_length)
from sizeup.workload.training.ssm_activations import ssm_layer_activation_bytes

__all__ = ["layer_projections", "layer_activation_bytes", "adapter_cast", "adapter_activation_bytes", "eager_activation_bytes",
           "bnb_held_input_bytes", "kept_layer_bytes", "encoder_activation_bytes", "activation_bytes",
           "fp32_residual_bytes"]


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
    if recompute in ("full", "offload"):
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
    # gate, up, act(gate), product | act in, act out; ReLU's backward reads its output only (PyTorch's relu saves
    # its result, which is also the next product's input): its input is not kept
    mlp = act_bytes * s * b * inter * ((4 if m.gated else 2) - (1 if m.act == "relu" else 0))
    split = q + kv + out + scores + mlp
    return replicated // shard + split // tp


def adapter_cast(cfg: TrainingConfig) -> str:
    """How fp32 adapters meet a 16-bit base (FinetuneSpec.adapter_dtype "fp32", PEFT's default): "none" where the
    adapters are in the base's dtype (or the run is fp32); "cast" in a pure 16-bit run: PEFT casts each adapted
    module's input to fp32 and the adapter computes in fp32; "autocast" under mixed precision (transformers
    Trainer bf16=True runs the forward in torch.autocast): autocast casts PEFT's fp32 input back to a new bf16
    copy and the fp32 adapter weights to bf16 copies, which the adapter products keep."""
    spec = cfg.finetune
    if not spec.uses_adapters or spec.adapter_dtype != "fp32" or PRECISIONS[cfg.precision].compute == "fp32":
        return "none"
    return "cast" if cfg.precision == "bf16" else "autocast"


def adapter_activation_bytes(arch: ModelArch, layer: LayerSpec, cfg: TrainingConfig, micro_batch: int) -> int:
    """What adapters change in one layer's saved activations (none/selective recomputation, dense layers).

    The Korthikanti count keeps every projection's input, as full training does. A frozen weight needs
    no input for its own gradient: PyTorch's autograd saves an input of a matrix product only for the
    gradient that needs it, so under LoRA the attention and MLP inputs and the MLP product are kept only
    where an adapter reads them without dropout; the attention output stays where a fused kernel keeps it,
    and without one only for an adapter on the output projection. Each adapter keeps its r-wide A output
    (B's input). bitsandbytes' 4-bit product (QLoRA) keeps its input whenever gradients flow (MatMul4Bit saves
    ctx.tensors = (A, B)), so QLoRA keeps them all. With dropout p > 0 each adapter keeps its own dropped
    input (2 bytes) and mask (1 byte) per element.

    fp32 adapters on a 16-bit base (adapter_cast): the adapters no longer read the base's input. PEFT's
    LoraLayer Linear.forward casts it (x.to(float32)) for each adapted module in turn, so q and v on one input
    make two copies: in a pure 16-bit run each adapter keeps its fp32 copy (4 bytes; with dropout the fp32
    dropped copy and the mask, 5) and a 4-byte r-wide A output; under autocast each keeps the bf16 copy
    autocast makes of that fp32 input (2 bytes, 3 with dropout), its r-wide output in bf16, and the bf16 copies
    of its A and B weights. PEFT's 4-bit layer (bnb.py Linear4bit.forward) casts only when autocast is off:
    under autocast its adapters read the bf16 input bitsandbytes keeps. DoRA (PEFT's DoraLinearLayer, dropout
    0) keeps two more tensors of the product's output width per adapter: the base product's output (read for
    the magnitude's gradient, 16-bit) and B's output (the adapter's dtype; bf16 under autocast); its weight
    norm is detached (Liu et al. 2024 §4.3) and keeps nothing of size tokens. Checked against autograd's saved
    tensors in tests/workload/test_peft_adapter_dtype_torch.py.
    """
    spec = cfg.finetune
    if not spec.uses_adapters or cfg.recompute not in ("none", "selective") or layer.attention.mla is not None \
            or layer.ssm is not None:  # a state-space layer: its fused scan function keeps the same under adapters
        return 0
    par = cfg.parallel
    tokens = micro_batch * cfg.seq
    cast = adapter_cast(cfg)
    qlora = spec.method == Method.QLORA
    own_copy = cast == "cast" or (cast == "autocast" and not qlora)  # each adapter reads its own cast of the input
    elem = 4 if cast == "cast" else 2  # bytes of an adapter's own input copy and of its outputs
    h = arch.hidden // (par.tp if par.sequence_parallel and par.tp > 1 else 1)  # as the base count shards it
    a, m = layer.attention, layer.mlp
    attn_out = a.heads * a.v_head_dim // par.tp
    outs = {"q_proj": a.heads * a.head_dim // par.tp, "k_proj": a.kv_heads * a.head_dim // par.tp,
            "v_proj": a.kv_heads * a.v_head_dim // par.tp, "o_proj": h, "gate_proj": m.intermediate // par.tp,
            "up_proj": m.intermediate // par.tp, "down_proj": h}
    mlp = [] if m.is_moe else [("mlp_in", h, "gate_proj"), ("mlp_in", h, "up_proj"),
                               ("mlp_mid", m.intermediate // par.tp, "down_proj")]
    if not m.gated:
        mlp = [x for x in mlp if x[2] != "gate_proj"]
    inputs = [("attn_in", h, "q_proj"), ("attn_in", h, "k_proj"), ("attn_in", h, "v_proj")] + mlp + \
        [("attn_out", attn_out, "o_proj")]
    # kept whatever the adapters do: ReLU keeps its output (the down input) itself; a fused attention kernel keeps
    # its output (the o_proj input); bitsandbytes keeps every 4-bit product's input
    anyway = {"attn_in": False, "mlp_in": False, "mlp_mid": m.act == "relu", "attn_out": cfg.flash_attention}
    change = 0
    for group in ("attn_in", "mlp_in", "mlp_mid", "attn_out"):
        members = [(width, name) for g, width, name in inputs if g == group]
        if not members:
            continue
        width = members[0][0]
        hit = [name for _, name in members if targeted(name, spec)]
        reads_base = bool(hit) and spec.dropout == 0 and not own_copy
        if not (qlora or reads_base or anyway[group]):
            change -= 2 * tokens * width  # the base count keeps it; nothing does now
        if hit and (spec.dropout > 0 or own_copy):
            copies = 1 if group == "attn_in" and spec.fused_qkv else len(hit)
            per = (elem if own_copy else 2) + (1 if spec.dropout > 0 else 0)
            change += per * tokens * width * copies
    names = [name for _, _, name in inputs]
    adapters = sum(1 for name in names if targeted(name, spec))
    if spec.fused_qkv:  # one adapter over the fused q/k/v product
        adapters -= max(0, sum(1 for name in ("q_proj", "k_proj", "v_proj") if targeted(name, spec)) - 1)
    change += elem * tokens * spec.rank * adapters  # each adapter's r-wide A output, B's input
    if cast == "autocast":  # the bf16 copies of the fp32 A and B weights the adapter products keep
        change += 2 * spec.rank * sum(_in_width(arch, layer, name) + outs[name] for name in names
                                      if targeted(name, spec))
    if spec.method == Method.DORA and spec.dropout == 0:  # the base output (16-bit) and B's output
        change += sum((2 + elem) * tokens * outs[name] for name in names if targeted(name, spec))
    return change


def _in_width(arch: ModelArch, layer: LayerSpec, name: str) -> int:
    """The input width of module `name` of a dense layer (unsharded: an adapter's A over a row-parallel product
    is split, a column-parallel one's B; counted whole, as these weights are small)."""
    a = layer.attention
    return {"o_proj": a.heads * a.v_head_dim, "down_proj": layer.mlp.intermediate}.get(name, arch.hidden)


def eager_activation_bytes(arch: ModelArch, layer: LayerSpec, cfg: TrainingConfig, micro_batch: int,
                            recompute: str) -> int:
    """What one layer keeps beyond the fused count when PyTorch runs its modules op by op (kernels 'eager').

    - RMSNorm computes in fp32 (x.float(), x * rsqrt(mean(x²))): it keeps the 4-byte copy of its input instead
      of the 2-byte input, and the 2-byte normalized output too when its weight trains. LayerNorm runs as one
      kernel (native_layer_norm) and keeps what the fused count says.
    - Grouped K and V are repeated to the query heads before scaled_dot_product_attention (transformers'
      repeat_kv, litgpt's repeat_interleave), which keeps the repeated copies.
    - With one fused qkv product and as many K/V heads as query heads, V is a view of that product's output
      (q and k are new tensors after RoPE), so the whole output stays alive.
    - T5's RMSNorm (transformers' T5LayerNorm) squares an fp32 copy of its input but multiplies the 16-bit
      input itself by the fp32 reciprocal root: it keeps both, and the root (4 bytes per token): 2 bytes per
      element more than the other RMSNorms. An encoder-decoder's decoder layer has a third norm, before its
      cross-attention.
    - T5's gated-gelu MLP runs gelu_new as transformers' NewGELUActivation, Python ops (0.5·x·(1 + tanh(√(2/π)·
      (x + 0.044715·x³)))): beyond its input it keeps the tanh output, 0.5·x and 1 + tanh, three 16-bit tensors of
      the MLP width (GPT-2, GPT-J and Phi-2 call the same module; only T5 is checked and counted here).
    - Without a fused attention kernel the output of probabilities × V is not kept: the output projection's
      input (a reshaped copy) is the attention output the fused count holds, so nothing is added (T5, checked
      against autograd's saved tensors in tests/workload/test_encoder_decoder_training_torch.py).
    """
    if cfg.kernels != "eager" or recompute not in ("none", "selective"):
        return 0
    par, spec = cfg.parallel, cfg.finetune
    tokens = micro_batch * cfg.seq
    a = layer.attention
    h = arch.hidden // (par.tp if par.sequence_parallel and par.tp > 1 else 1)
    weights_train = spec.method in (Method.FULL, Method.FREEZE)
    extra = 0
    norms = layer.norms + (1 if arch.cross_source else 0)
    if arch.norm == "rms":
        extra += norms * tokens * h * (4 if weights_train else 2)
        if arch.model_type == "t5":
            extra += norms * tokens * (2 * h + 4)
    m = layer.mlp
    if arch.model_type == "t5" and m.act == "gelu_tanh" and not m.is_moe:
        extra += 3 * 2 * tokens * m.intermediate // par.tp
    if a.mla is None:
        if a.kv_heads < a.heads:
            extra += 2 * tokens * (a.heads - a.kv_heads) * (a.head_dim + a.v_head_dim) // par.tp
        elif spec.fused_qkv:
            extra += 2 * tokens * (a.heads + a.kv_heads) * a.head_dim // par.tp
    return extra


def bnb_held_input_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int) -> int:
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



def kept_layer_bytes(arch: ModelArch, layer: LayerSpec, cfg: TrainingConfig, micro_batch: int, recompute: str,
                     act_bytes: int, seq: int | None = None) -> int:
    """What one layer keeps under `recompute`, with its adapter and eager terms: a state-space layer by its
    own count, a decoder layer of an encoder-decoder with its cross-attention block; `seq` defaults to the
    run's (the encoder's layers pass the source length)."""
    par = cfg.parallel
    sp = par.sequence_parallel and par.tp > 1
    seq = seq or cfg.seq
    if layer.ssm is not None:
        kept = ssm_layer_activation_bytes(arch, layer, micro_batch, seq, recompute=recompute, scan=cfg.ssm_scan,
                                          act_bytes=act_bytes)
    else:
        kept = layer_activation_bytes(arch, layer, micro_batch, seq, tp=par.tp, sequence_parallel=sp,
                                      recompute=recompute, flash=cfg.flash_attention, act_bytes=act_bytes)
    if arch.cross_source:
        kept += cross_attention_activation_bytes(arch, layer, micro_batch, seq, source_length(arch, cfg), tp=par.tp,
                                                 sequence_parallel=sp, recompute=recompute,
                                                 flash=cfg.flash_attention, act_bytes=act_bytes,
                                                 finetune=cfg.finetune if recompute == cfg.recompute else None,
                                                 adapter_cast=adapter_cast(cfg))
    run = cfg if seq == cfg.seq else replace(cfg, seq=seq)
    extra = eager_activation_bytes(arch, layer, run, micro_batch, recompute)
    if recompute == cfg.recompute:
        extra += adapter_activation_bytes(arch, layer, run, micro_batch)
    elif recompute == "none":  # the layer rematerialised in backward keeps what an unrecomputed one does
        extra += adapter_activation_bytes(arch, layer, replace(run, recompute="none"), micro_batch)
    return kept + extra * act_bytes // 2


def encoder_activation_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int, act_bytes: int) -> int:
    """An encoder-decoder's encoder side: its layers at the source length where it trains, and its output,
    the input of every decoder layer's cross K/V products, kept once for all of them."""
    source = source_length(arch, cfg)
    kept = act_bytes * micro_batch * source * arch.hidden
    if encoder_trains(arch, cfg):
        enc = encoder_arch(arch)
        kept += sum(kept_layer_bytes(enc, layer, cfg, micro_batch, cfg.recompute, act_bytes, seq=source)
                    for layer in enc.layers)
    return kept


def activation_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int, trainable_from: int,
                      in_flight: int) -> int:
    """Saved activations on the first pipeline stage: its layers (only those at or above the lowest
    trainable layer need them), pp micro-batches in flight under 1F1B, plus the logits."""
    par = cfg.parallel
    per_stage = -(-arch.num_layers // par.pp)
    layers = [layer for i, layer in enumerate(arch.layers) if i < per_stage and i >= trainable_from]
    # an fp32 run keeps 4-byte activations; the adapter and eager terms are counted at 2 bytes, so scale
    act_bytes = 4 if PRECISIONS[cfg.precision].compute == "fp32" else 2
    if cfg.recompute == "offload" and layers:  # the layer inputs wait in CPU memory: two in flight on the GPU
        act = 2 * kept_layer_bytes(arch, layers[0], cfg, micro_batch, "full", act_bytes)
    else:
        act = sum(kept_layer_bytes(arch, layer, cfg, micro_batch, cfg.recompute, act_bytes) for layer in layers)
    act += len(layers) * fp32_residual_bytes(arch, layers[0], cfg, micro_batch) if layers else 0
    if arch.encoder_layers:
        act += encoder_activation_bytes(arch, cfg, micro_batch, act_bytes) + relative_bias_bytes(arch, cfg, act_bytes)
    act *= max(1, min(par.pp, in_flight))
    rematerialised = 0
    if cfg.recompute in ("full", "offload", "selective-op") and layers:  # one layer rematerialised at a time
        rerun = [(arch, layers[0], cfg.seq)]
        if arch.encoder_layers and encoder_trains(arch, cfg):
            rerun.append((encoder_arch(arch), arch.encoder_layers[0], source_length(arch, cfg)))
        rematerialised = max(kept_layer_bytes(a, layer, cfg, micro_batch, "none", act_bytes, seq=seq)
                             for a, layer, seq in rerun)
    if cfg.finetune.method == Method.QLORA and cfg.keeps_last_graph and cfg.recompute in ("none", "selective"):
        # the previous step's graph is still referenced during this forward: its 4-bit products' inputs too
        act += bnb_held_input_bytes(arch, cfg, micro_batch)
    # the logits and the loss (vocab-parallel ÷ tp) as the framework runs them (workload/training/loss.py). The loss's
    # peak is at the start of backward; a layer is rematerialised only after the loss's backward has freed its
    # tensors, so under recomputation the two do not coexist: the larger of them sits on the kept layer inputs
    loss = loss_peak_bytes(arch, cfg, micro_batch)
    return act + (max(rematerialised, loss) if rematerialised else loss)


def fp32_residual_bytes(arch: ModelArch, layer: LayerSpec, cfg: TrainingConfig, micro_batch: int) -> int:
    """QLoRA through PEFT's prepare_model_for_kbit_training (TrainingConfig.kbit_fp32_params): the embeddings are
    upcast to fp32, so the residual stream is fp32 and every tensor it feeds is 2 bytes wider than the count has it:
    each checkpointed layer input under recomputation, each norm's input otherwise (peft utils/other.py
    prepare_model_for_kbit_training: param.data.to(torch.float32) for every fp16 / bf16 parameter)."""
    if not kbit_upcast(cfg):
        return 0
    tokens_h = micro_batch * cfg.seq * arch.hidden
    if cfg.recompute in ("full", "offload", "selective-op"):
        return 2 * tokens_h
    return 2 * tokens_h * layer.norms
