"""The LM head and the cross-entropy as a framework runs them: what they keep at the step's memory peak and the
memory traffic they add to the step beyond the head's matrix product (which the ledger prices).

Peak bytes per logit (L = micro-batch x positions x vocabulary / tensor parallel), at the start of backward, when
every layer's activations are still alive:
- chunked (litgpt, torchtune; sizeup's default): the 16-bit logits stay whole; each chunk is upcast to fp32 and
  keeps its fp32 log-softmax: 2 + 8 / chunks.
- upcast (transformers' ForCausalLMLoss, what Trainer, PEFT and TRL before 1.6 run): `logits.float()` then
  `cross_entropy` over every position at once. Forward: the 16-bit logits, the fp32 copy and the fp32 log-softmax
  it saves (2 + 4 + 4); backward starts from that saved log-softmax, nll_loss's dense fp32 gradient and
  log_softmax_backward's fp32 input gradient (4 + 4 + 4 = 12, the larger, when the Trainer has dropped the model's
  output and with it the 16-bit logits). transformers loss/loss_utils.py (ForCausalLMLoss, fixed_cross_entropy);
  torch nll_loss_backward / _log_softmax_backward_data each return a new tensor of the input's shape.
- native: cross-entropy in the logits' own dtype (no upcast): output, its gradient and the input gradient, 3 x the
  logits' width.
- inplace (the Triton cross-entropy of Unsloth 2024 that fms-acceleration's fused ops patch into transformers'
  CrossEntropyLoss): transformers (<= 4.45) upcasts the logits to fp32 and makes the shifted contiguous copy the
  kernel reads; the kernel keeps that copy (save_for_backward) and writes its gradient into it in place, with an
  fp32 log-sum-exp per row: 4 + 4 bytes per logit, no separate log-softmax or gradient (fms-acceleration
  plugins/fused-ops-and-kernels kernels/unsloth/cross_entropy_loss.py Fast_CrossEntropyLoss).
- fused-linear (Liger's LigerFusedLinearCrossEntropy, Unsloth's unsloth_fused_ce_loss, TRL >= 1.6's chunked_nll,
  Cut Cross-Entropy): the head runs over a chunk of positions at a time and only that chunk's logits exist (upcast
  to fp32, with their gradient: 12 bytes per logit of the chunk), beside the head input's gradient.
"""

from __future__ import annotations

import math

from sizeup.ingest.hf_config import ModelArch
from sizeup.workload.finetune import Method, targeted
from sizeup.workload.frameworks import LOSSES
from sizeup.workload.training.config import TrainingConfig

__all__ = ["LOSSES", "loss_peak_bytes", "loss_traffic_bytes", "fused_chunk_tokens", "loss_note"]

UPCAST_PEAK_BYTES = 12
"""transformers' upcast loss: the fp32 log-softmax, its gradient and the input gradient at the start of backward."""
TRL_CHUNK_TOKENS = 256
"""TRL's _CHUNKED_LM_HEAD_CHUNK_SIZE (trl/trainer/sft_trainer.py, main of 2026-07-24, chunked_nll: the default loss
since v1.6.0): positions per head-and-loss chunk."""


def fused_chunk_tokens(arch: ModelArch, cfg: TrainingConfig, tokens: int) -> int:
    """Positions per chunk of a fused linear cross-entropy. Liger (ops/fused_linear_cross_entropy.py): chunk_size =
    next_power_of_2(ceil(BT / ceil(V / H))), so one chunk of logits is about the size of the hidden states;
    TRL's chunked_nll: 256 positions."""
    if cfg.framework == "trl":
        return min(tokens, TRL_CHUNK_TOKENS)
    factor = max(1, -(-arch.vocab // arch.hidden))
    return min(tokens, 2 ** math.ceil(math.log2(max(1, -(-tokens // factor)))))


def loss_peak_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int) -> int:
    """Bytes the head and the loss hold at the step's peak (the layers' activations are counted apart)."""
    if not arch.lm_head:
        return 0
    tp = cfg.parallel.tp
    tokens = micro_batch * cfg.seq
    logits = tokens * arch.vocab / tp
    width = 4 if cfg.precision == "fp32" else 2
    kind = cfg.loss
    if kind == "upcast":
        out = logits * UPCAST_PEAK_BYTES
    elif kind == "native":
        out = logits * 3 * width
    elif kind == "inplace":  # transformers' fp32 logits and their shifted copy, the gradient written in place
        out = logits * 8 + tokens * 4
    elif kind == "fused-linear":
        chunk = fused_chunk_tokens(arch, cfg, tokens)
        out = chunk * arch.vocab / tp * UPCAST_PEAK_BYTES + tokens * arch.hidden * width
        if cfg.finetune.method in (Method.FULL, Method.FREEZE):  # the head's weight gradient, accumulated in fp32
            out += arch.vocab * arch.hidden / tp * 4
    else:  # chunked: the 16-bit logits whole, one fp32 chunk with its log-softmax at a time
        out = logits * (2 + 8 / min(cfg.loss_chunks, cfg.seq))
    if cfg.finetune.uses_adapters and cfg.finetune.dropout > 0 and targeted("lm_head", cfg.finetune):
        out += 3 * tokens * arch.hidden  # the head adapter's dropped input and mask
    return int(out)


def loss_traffic_bytes(arch: ModelArch, cfg: TrainingConfig, micro_batch: int, seq: int) -> float:
    """Bytes the loss moves through memory per micro-step (forward and backward) beyond the head's product: the
    upcast copy, the log-softmax and its backward, the cast back (upcast: 6 + 8 + 12 + 6 per logit); in place, one
    read and one write of the 16-bit logits each way; a fused kernel keeps its chunks in cache-sized pieces and
    rereads only the hidden states."""
    if not arch.lm_head:
        return 0.0
    logits = micro_batch * seq * arch.vocab / cfg.parallel.tp
    width = 4 if cfg.precision == "fp32" else 2
    per_logit = {"upcast": 32.0, "native": 6.0 * width, "inplace": 20.0, "fused-linear": 0.0}.get(
        cfg.loss, 2.0 * width + 16.0)
    return logits * per_logit


def loss_note(arch: ModelArch, cfg: TrainingConfig, micro_batch: int) -> str:
    """The assumption line naming the loss path and what it keeps."""
    if not arch.lm_head:
        return ""
    peak = loss_peak_bytes(arch, cfg, micro_batch)
    return (f"loss: {cfg.loss} ({LOSSES[cfg.loss]}); {peak / 2**30:.2f} GiB at the peak for "
            f"{micro_batch * cfg.seq:,} positions x {arch.vocab:,} vocabulary")
