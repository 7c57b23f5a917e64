"""Fused attention kernels and softmax.

Forward convention, per (batch, query head): S = Q Kᵀ costs 2·Lq·Lk·D, P = softmax(S) costs 5 per
score (max, subtract, exp, sum, divide), O = P V costs 2·Lq·Lk·Dv. Grouped-query attention uses the
*query* head count (each query head attends over its shared KV head). A causal mask is counted as the
full Lq×Lk rectangle, the same as the unfused matmul + softmax path computes; kernels that skip
masked blocks do about half, which the note says. Bytes are those of a fused kernel: Q, K, V (and a
mask) read once, O (and the log-sum-exp) written once — the score matrix never reaches memory.
"""

from __future__ import annotations

import math

from sizeup.ledger import OpKind, TensorSpec
from sizeup.ops.registry import OpCall, OpCost, io_cost, op_cost

SOFTMAX_FLOPS_PER_ELEMENT = 5
"""max, subtract, exp, sum, divide."""

_BMHK_LAYOUT = {"aten._efficient_attention_forward", "aten._flash_attention_forward",
                "aten._efficient_attention_backward", "aten._flash_attention_backward"}


def _dims(call: OpCall, q: TensorSpec, k: TensorSpec, v: TensorSpec) -> tuple[int, int, int, int]:
    """(scores, query_rows, D, Dv): scores = batch·heads·Lq·Lk over the query heads."""
    if call.op in _BMHK_LAYOUT:  # [batch, seq, heads, dim]
        lq, lk = q.shape[1], k.shape[1]
        rows = q.shape[0] * q.shape[2] * lq
    else:  # [batch, heads, seq, dim]
        lq, lk = q.shape[-2], k.shape[-2]
        rows = math.prod(q.shape[:-1])
    return rows * lk, rows, q.shape[-1], v.shape[-1]


def _causal_note(call: OpCall, index: int) -> tuple[str, ...]:
    if call.arg(index, "is_causal", False) or call.kwargs.get("causal"):
        return ("causal mask counted as the full Lq×Lk scores; kernels that skip masked blocks do about half",)
    return ()


_FORWARD_CAUSAL_ARG = {
    "aten._scaled_dot_product_flash_attention": 4,
    "aten._scaled_dot_product_flash_attention_for_cpu": 4,
    "aten._scaled_dot_product_efficient_attention": 6,
    "aten._scaled_dot_product_cudnn_attention": 6,
    "aten._scaled_dot_product_fused_attention_overrideable": 5,
    "aten.scaled_dot_product_attention": 5,
    "aten._flash_attention_forward": 8,
    "aten._efficient_attention_forward": 99,
    "attention": 5,
}


@op_cost(*_FORWARD_CAUSAL_ARG, kind=OpKind.ATTENTION)
def attention_forward_cost(call: OpCall) -> OpCost:
    """softmax(Q Kᵀ · scale + mask) V: 2·S·D + 5·S + 2·S·Dv with S = batch·query heads·Lq·Lk."""
    q, k, v = call.arg(0, "query"), call.arg(1, "key"), call.arg(2, "value")
    scores, _, d, dv = _dims(call, q, k, v)
    product = 2 * scores * d + 2 * scores * dv
    notes = ("fused attention: scores are not written to memory",) + _causal_note(call, _FORWARD_CAUSAL_ARG[call.op])
    return io_cost(call, product + SOFTMAX_FLOPS_PER_ELEMENT * scores, notes, matmul_flops=product)


_BACKWARD_CAUSAL_ARG = {
    "aten._scaled_dot_product_flash_attention_backward": 8,
    "aten._scaled_dot_product_flash_attention_for_cpu_backward": 7,
    "aten._scaled_dot_product_efficient_attention_backward": 9,
    "aten._scaled_dot_product_cudnn_attention_backward": 99,
    "aten._scaled_dot_product_fused_attention_overrideable_backward": 99,
    "aten._flash_attention_backward": 99,
    "aten._efficient_attention_backward": 99,
    "attention_backward": 99,
}


@op_cost(*_BACKWARD_CAUSAL_ARG, kind=OpKind.ATTENTION)
def attention_backward_cost(call: OpCall) -> OpCost:
    """Recompute S = Q Kᵀ (2·S·D) and P (2 per score), then dV = Pᵀ dO (2·S·Dv), dP = dO Vᵀ (2·S·Dv),
    dS = P ⊙ (dP − rowsum(dO ⊙ O)) (3 per score + 2 per output), dQ = dS K and dK = dSᵀ Q (2·S·D each)."""
    q, k, v = call.arg(1, "query"), call.arg(2, "key"), call.arg(3, "value")
    scores, rows, d, dv = _dims(call, q, k, v)
    product = 2 * scores * (3 * d + 2 * dv)
    notes = ("attention backward includes recomputing Q·Kᵀ, as flash kernels do",) + _causal_note(
        call, _BACKWARD_CAUSAL_ARG[call.op])
    return io_cost(call, product + 5 * scores + 2 * rows * dv, notes, matmul_flops=product)


@op_cost("aten._softmax", "aten.softmax", "aten._log_softmax", "aten.log_softmax", "aten._safe_softmax",
         "softmax", kind=OpKind.NORM)
def softmax_cost(call: OpCall) -> OpCost:
    """5 FLOPs per element: max, subtract, exp, sum, divide (log_softmax: log instead of divide)."""
    return io_cost(call, SOFTMAX_FLOPS_PER_ELEMENT * call.out.numel)


@op_cost("aten._softmax_backward_data", "aten._log_softmax_backward_data", kind=OpKind.NORM)
def softmax_backward_cost(call: OpCall) -> OpCost:
    """y ⊙ (g − Σ g ⊙ y): multiply, sum, subtract, multiply = 4 per element (log-softmax likewise)."""
    return io_cost(call, 4 * call.out.numel)
