"""Training an encoder-decoder (T5, Whisper): the encoder stack over the source, the decoder over the target,
and the cross-attention between them.

`ModelArch.layers` are the decoder's and `ModelArch.encoder_layers` the encoder's (bidirectional). A step runs
the encoder once per sequence over the source (`TrainingConfig.source_seq`, default the model's
`cross_source`: T5's n_positions, Whisper's 1,500 frames), every decoder layer's cross-attention reads the
encoder output through its own K and V projections, and the loss is over the target (`TrainingConfig.seq`).

Activations: each encoder layer keeps what the transformer count keeps (Korthikanti et al. 2022 §4,
sizeup.workload.training.activations) at the source length; the encoder output is kept once, as the input of
every decoder layer's K/V products; each decoder layer adds its cross-attention block (below). The encoder
trains, and so keeps its activations, under full fine-tuning and wherever an adapter sits on one of its
linears: a LoRA target names a module in every stack, as PEFT matches it (q_proj, v_proj adapt the encoder's
self-attention as well as the decoder's self- and cross-attention), so under the adapter methods backward runs
through the whole encoder (its frozen weights need no input kept; sizeup.workload.training.activations counts
what the adapters keep). Freezing keeps the last decoder layers: no gradient reaches the encoder and autograd
records nothing there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.arch import LayerSpec, ModelArch
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.ledger import OpKind, OpRecord
from sizeup.price.efficiency import Efficiency
from sizeup.price.roofline import price
from sizeup.ranges import Range
from sizeup.workload.finetune import FinetuneSpec, Method, adapts_encoder, targeted
from sizeup.workload.quantize import get_format, tensor_bytes_map
from sizeup.workload.training.config import TrainingConfig

__all__ = ["EncoderTime", "source_length", "encoder_trains", "encoder_arch", "cross_attention_activation_bytes",
           "encoder_note", "relative_bias_bytes", "relative_bias_note", "MASK_ALIGNMENT", "encoder_ledger", "encoder_time", "encoder_decoder_flops_per_sequence"]

MASK_ALIGNMENT = 8
"""PyTorch's SDPA pads a float attn_mask whose last dimension is not a multiple of 8 elements before the
memory-efficient kernel (aten/src/ATen/native/transformers/attention.cpp, preprocess_mask: mem_eff_alignment 8,
pad_bias, then expand to batch × heads × queries × keys)."""


def source_length(arch: ModelArch, cfg: TrainingConfig) -> int:
    """Encoder positions per sequence: --source-seq, else the model's own (`cross_source`)."""
    return cfg.source_seq or arch.cross_source


def encoder_trains(arch: ModelArch, cfg: TrainingConfig) -> bool:
    """Whether gradients reach the encoder (its weights under full fine-tuning, or adapters on its linears)."""
    return adapts_encoder(arch, cfg.finetune)


def encoder_note(arch: ModelArch, cfg: TrainingConfig) -> str:
    """What the encoder does in the step, for the estimate's assumptions."""
    spec = cfg.finetune
    if not encoder_trains(arch, cfg):
        return ("the encoder is frozen (no adapters on it, or --method freeze): it keeps only its output, the input "
                "of the cross-attention K/V")
    if spec.method == Method.FULL:
        return "the encoder trains: its layers keep their activations"
    targets = ", ".join(spec.targets)
    return (f"adapters on the encoder too ({targets} match its modules as PEFT matches them, in the encoder's "
            "self-attention and the decoder's self- and cross-attention): backward runs through the encoder, whose "
            "layers keep what the adapters' backward reads")


def encoder_arch(arch: ModelArch) -> ModelArch:
    """The encoder stack as an encoder-only model (no LM head), for pricing and counting its layers.

    Its own tensors follow `encoder_layers` (the same shapes as the `encoder.*` tensors of `arch`); an
    embedding LayerNorm stands in for the encoder's final norm (the same cost)."""
    return ModelArch(name=f"{arch.name} (encoder)", model_type=arch.model_type, hidden=arch.hidden, vocab=arch.vocab,
                     layers=arch.encoder_layers, norm=arch.norm, encoder=True, lm_head=False, dropout=arch.dropout,
                     tie_embeddings=True, final_norm=False)


def cross_attention_activation_bytes(arch: ModelArch, layer: LayerSpec, micro_batch: int, target: int, source: int,
                                     *, tp: int = 1, sequence_parallel: bool = False, recompute: str = "none",
                                     flash: bool = True, act_bytes: int = 2, finetune: FinetuneSpec | None = None,
                                     adapter_cast: str = "none") -> int:
    """Bytes one decoder layer's cross-attention block keeps for backward (Korthikanti et al. 2022's terms,
    with queries over the target and keys and values over the source):

    - replicated (÷ tp only with sequence parallelism): the norm's input and q_proj's input (target × h), and
      with dropout the 1-byte mask after o_proj;
    - split across tensor-parallel ranks: Q (target), K and V (source), the attention output (target, which
      is also o_proj's input) and, without a fused kernel (sizeup.price.attention_kernels decides), the
      target × source softmax output, with dropout its 1-byte mask and the dropped copy.

    "selective" recomputes the target × source scores; "selective-op" keeps the attention output with its
    fp32 log-sum-exp and the outputs of q_proj and v_proj (the 1st and 3rd of the block's products);
    "full" keeps nothing here (the layer's input and the encoder output are counted elsewhere).

    Under adapters (`finetune`, none/selective recomputation) the frozen q_proj and o_proj keep no input: q_proj's
    is kept for an adapter on it (without dropout), o_proj's (the attention output) where a fused kernel keeps it
    or for an adapter on o_proj; K and V stay (the attention's backward reads them) whether or not an adapter
    sits on k_proj / v_proj; an adapter over the encoder output reads the copy the encoder side keeps once; each
    adapter keeps its r-wide A output, and with dropout its dropped input and mask (3 bytes per element). QLoRA's
    4-bit products keep their inputs (bnb's MatMul4Bit), as the full count does. Checked against autograd's
    saved tensors with PEFT adapters in tests/workload/test_encoder_decoder_training_torch.py."""
    a, h, b = layer.attention, arch.hidden, micro_batch
    tgt, src = b * target, b * source
    if recompute in ("full", "offload"):
        return 0
    if recompute == "selective-op":
        return (act_bytes * (tgt * a.heads * (a.head_dim + a.v_head_dim) + src * a.heads * a.v_head_dim)
                + 4 * tgt * a.heads) // tp
    dropout = arch.dropout > 0
    replicated = act_bytes * tgt * h * 2 + (tgt * h if dropout else 0)
    split = act_bytes * (tgt * a.heads * a.head_dim + src * a.heads * (a.head_dim + a.v_head_dim)
                         + tgt * a.heads * a.v_head_dim)
    if not flash and recompute == "none":
        split += b * target * source * a.heads * (act_bytes + (1 + act_bytes if dropout else 0))
    spec = finetune
    if spec is not None and spec.uses_adapters and recompute in ("none", "selective"):
        out_width = a.heads * a.v_head_dim

        # fp32 adapters (sizeup.workload.training.activations.adapter_cast): each keeps its own cast of its input
        own_copy = adapter_cast == "cast" or (adapter_cast == "autocast" and spec.method != Method.QLORA)
        elem = 4 if adapter_cast == "cast" else 2

        def reads(name: str) -> bool:
            return targeted(name, spec) and spec.dropout == 0 and not own_copy

        if spec.method != Method.QLORA:
            replicated -= 0 if reads("q_proj") else act_bytes * tgt * h
            split -= 0 if flash or reads("o_proj") else act_bytes * tgt * out_width
        widths = {"q_proj": (tgt, h), "k_proj": (src, h), "v_proj": (src, h), "o_proj": (tgt, out_width)}
        outs = {"q_proj": a.heads * a.head_dim, "k_proj": a.heads * a.head_dim, "v_proj": out_width, "o_proj": h}
        for name, (tokens, width) in widths.items():
            if targeted(name, spec):
                copy = (elem if own_copy else 2) + (1 if spec.dropout > 0 else 0)
                replicated += elem * tokens * spec.rank + (copy * tokens * width if spec.dropout > 0 or own_copy else 0)
                if adapter_cast == "autocast":  # autocast's bf16 copies of the fp32 A and B weights
                    replicated += 2 * spec.rank * (width + outs[name])
    return replicated // (tp if sequence_parallel else 1) + split // tp


def relative_bias_bytes(arch: ModelArch, cfg: TrainingConfig, act_bytes: int = 2) -> int:
    """What T5's relative-position bias keeps for backward, beyond the layers' own count.

    transformers' T5 (5.x) computes the bias once per stack, 1 × heads × queries × keys (an embedding of the
    bucket index of every query-key pair), and hands it to every layer. Eager attention adds it to the scores,
    which saves nothing. Under SDPA it is the kernel's float attn_mask (integrations/sdpa_attention.py,
    create_position_bias_mask): flash refuses a mask, so the memory-efficient kernel runs, and its autograd node
    keeps the mask (ScaledDotProductEfficientAttentionBackward0 saves attn_bias). Each layer makes its own copy
    (`.contiguous()` of the permuted encoder bias; `torch.where` with the causal mask in the decoder), kept per
    layer, heads × queries × keys padded to MASK_ALIGNMENT, not per sequence (it broadcasts over the batch), and
    the decoder's `where` keeps its queries × keys boolean condition;
    the cross-attention's bias is one shared zero tensor, copied per layer only when the source needs padding.
    With full fine-tuning the bias tables train: each stack's embedding keeps its int64 bucket indices.

    Unpadded batches: with a padding mask (batch × keys) the bias becomes per sequence (× micro-batch)."""
    t = arch.tower
    if t is None or not t.relative_bias or not arch.layers or cfg.recompute not in ("none", "selective"):
        return 0
    source, target, decoder = source_length(arch, cfg), cfg.seq, len(arch.layers)
    heads = arch.layers[0].attention.heads // cfg.parallel.tp
    encoder = encoder_trains(arch, cfg)
    kept = 0
    if cfg.flash_attention:  # SDPA's memory-efficient kernel, the bias as its mask
        def padded(n: int) -> int:
            return -(-n // MASK_ALIGNMENT) * MASK_ALIGNMENT

        elements = decoder * heads * target * padded(target)
        elements += heads * target * padded(source) * (1 if source % MASK_ALIGNMENT == 0 else decoder)
        if encoder:
            elements += len(arch.encoder_layers) * heads * source * padded(source)
        kept += elements * act_bytes + decoder * target * target  # + the causal `where`'s 1-byte condition
    if cfg.finetune.method == Method.FULL:
        kept += 8 * (target * target + (source * source if encoder else 0))
    return kept


def relative_bias_note(arch: ModelArch, cfg: TrainingConfig, reason: str = "") -> str | None:
    """The attention note of a T5-style model under SDPA's fused path, in place of the kernel's own (None: not one,
    or the math path runs); FlashAttention-2 is refused (transformers' T5 has `_supports_flash_attn = False`).
    `reason`: the device and dtype the fused kernel was chosen for."""
    t = arch.tower
    if t is None or not t.relative_bias:
        return None
    if cfg.attention == "flash2":
        raise ConfigError(f"--attention flash2 with {arch.name}: transformers' {arch.model_type} has no "
                          "FlashAttention-2 path (its relative-position bias is added to the scores); use sdpa or eager")
    if cfg.attention == "sdpa" and cfg.flash_attention:
        where = f"{reason}; " if reason else ""
        return (f"attention: SDPA's memory-efficient kernel ({where}{arch.model_type}'s relative-position bias is a "
                "float mask, which flash refuses): no s² softmax kept; each layer keeps its own heads × q × k copy "
                "of the bias (unpadded batches; with a padding mask, one per sequence)")
    return None


def encoder_ledger(arch: ModelArch, cfg: TrainingConfig, micro: int, *, weights: str, act_dtype: str):
    """One micro-batch's forward over the source: the encoder stack, and the K/V products of every decoder
    layer's cross-attention over the encoder output (the decoder ledger prices only their use)."""
    source, tp = source_length(arch, cfg), cfg.parallel.tp
    enc = encoder_arch(arch)
    ledger = transformer_ledger(enc, Step(batch=micro, new_tokens=source, context=source), weights=weights,
                                act_dtype=act_dtype, tp=tp, per_layer=False)
    fmt = get_format(weights)
    sizes = tensor_bytes_map(arch, fmt)
    a_bytes = 4 if act_dtype == "fp32" else 2
    tokens = micro * source
    for i, layer in enumerate(arch.layers):
        a = layer.attention
        width = a.heads * (a.head_dim + a.v_head_dim) // tp
        product = 2 * tokens * arch.hidden * width
        weight_bytes = sum(sizes.get(f"layers.{i}.cross.{p}_proj.{k}", 0) for p in "kv" for k in ("weight", "bias"))
        ledger.add(OpRecord(op="linear", kind=OpKind.MATMUL, scope=f"model.layers.{i}.cross_attn.kv_proj",
                            flops=product, matmul_flops=product, bytes_read=weight_bytes // tp + tokens * arch.hidden
                            * a_bytes, bytes_written=tokens * width * a_bytes,
                            dtype=fmt.compute_dtype if fmt.family != "plain" else act_dtype))
    return ledger


@dataclass(frozen=True, slots=True, kw_only=True)
class EncoderTime:
    forward_s: Range
    backward_s: Range
    recompute_s: Range


def encoder_time(arch: ModelArch, device: DeviceSpec, cfg: TrainingConfig, micro: int, eff: Efficiency, *,
                 weights: str, act_dtype: str) -> EncoderTime:
    """The encoder's share of one micro-step on `device`: its forward, and where it trains its backward
    (weight products 2× forward with their weight gradients, 1× under adapters: frozen weights need the input
    gradient only; attention 2.5× under a fused kernel that recomputes the scores, 2× materialised, everything
    else 2×, as step_time counts the decoder) and what
    the recomputation policy reruns ("selective-op": the 2nd, 4th… product of each layer and every
    non-product op). Without a trained encoder nothing flows back into it, and the cross K/V products
    need no input gradient: no backward is counted (the weight gradients of the K/V products of decoder
    layers that train under --method freeze are left out)."""
    roof = price(encoder_ledger(arch, cfg, micro, weights=weights, act_dtype=act_dtype), device, eff)
    by_kind = {k: v["time_s"] for k, v in roof.by("kind").items()}
    zero = Range.exact(0.0)
    forward = roof.total_s
    if not encoder_trains(arch, cfg):
        return EncoderTime(forward_s=forward, backward_s=zero, recompute_s=zero)
    weights_s, attention_s = by_kind.get("matmul", zero), by_kind.get("attention", zero)
    rest = sum((t for k, t in by_kind.items() if k not in ("attention", "matmul")), zero)
    weight_factor = 2.0 if cfg.finetune.method == Method.FULL else 1.0  # frozen weights: the input gradient only
    backward = weights_s.scale(weight_factor) + attention_s.scale(2.5 if cfg.flash_attention else 2.0) + rest.scale(2.0)
    if cfg.recompute in ("full", "offload"):
        recompute = forward
    elif cfg.recompute == "selective" and not cfg.flash_attention:
        recompute = attention_s
    elif cfg.recompute == "selective-op":
        recompute = weights_s.scale(_even_product_share(arch.encoder_layers[0], arch.hidden)) + rest
    else:
        recompute = zero
    return EncoderTime(forward_s=forward, backward_s=backward, recompute_s=recompute)


def _even_product_share(layer: LayerSpec, h: int) -> float:
    """Share of a dense layer's product FLOPs in its 2nd, 4th… product (q, k, v, o, [gate], up, down)."""
    a, m = layer.attention, layer.mlp
    products = [a.heads * a.head_dim * h, a.kv_heads * a.head_dim * h, a.kv_heads * a.v_head_dim * h,
                h * a.heads * a.v_head_dim] + ([m.intermediate * h] if m.gated else []) + [m.intermediate * h] * 2
    return sum(products[1::2]) / sum(products)


def encoder_decoder_flops_per_sequence(arch: ModelArch, target: int, source: int, factor: int,
                                       encoder_factor: int | None = None) -> float:
    """Model FLOPs of one training sequence (PaLM appendix B's 6·N + 12·L·H·Q·T, split by where each weight
    runs): `factor`·N per token for the encoder's weights and the cross K/V products over the source, and
    for the decoder's other weights over the target; attention 12·H·Q per query-key pair width: the
    encoder's self-attention over source², the decoder's over target², its cross-attention over target ×
    source. `factor` is 6 with weight gradients, 4 without; `encoder_factor` (default `factor`) 2 where the
    encoder only runs forward."""
    lookups = ("embedding", "position")  # embedding and position tables are read, not multiplied
    cross_kv = sum(t.numel for t in arch.tensors() if ".cross.k_proj" in t.name or ".cross.v_proj" in t.name)
    encoder = sum(t.numel for t in arch.tensors() if t.name.startswith("encoder.") and t.role not in lookups)
    encoder += cross_kv
    decoder = sum(t.numel for t in arch.tensors() if not t.name.startswith("encoder.") and t.role not in lookups)
    decoder -= cross_kv
    if arch.lm_head and arch.tie_embeddings:
        decoder += arch.vocab * arch.hidden  # the tied head is a product on every target token
    attention = sum(12 * l.attention.heads * l.attention.head_dim * source * source for l in arch.encoder_layers)
    attention += sum(12 * l.attention.heads * l.attention.head_dim * target * (target + source) for l in arch.layers)
    encoder_factor = factor if encoder_factor is None else encoder_factor
    return encoder_factor * encoder * source + factor * decoder * target + attention
