"""Normalisations. Per-element conventions (per-row or per-channel scalars like rsqrt are ignored):

- layer / group norm: mean 1, variance 3 (subtract, square, add), normalise 2 = 6, + 1 for a weight
  and + 1 for a bias;
- batch norm in eval mode: subtract mean, multiply by rstd, weight, bias = 4; in training mode the
  statistics add 4 (mean 1, variance 3);
- RMS norm: square 1, sum 1, multiply by rstd 1, weight 1 = 4;
- backward of any of them: 13 per element (recompute x̂ 2, input gradient 8, weight 2, bias 1).
"""

from __future__ import annotations

from sizeup.ledger import OpKind
from sizeup.ops.registry import OpCall, OpCost, io_cost, op_cost

NORM_BACKWARD_FLOPS_PER_ELEMENT = 13


@op_cost("aten.native_layer_norm", "aten.layer_norm", "aten.native_group_norm", "aten.group_norm",
         "layer_norm", kind=OpKind.NORM)
def layer_norm_cost(call: OpCall) -> OpCost:
    group = call.op.endswith("group_norm")
    weight = call.arg(1 if group else 2, "weight")
    bias = call.arg(2 if group else 3, "bias")
    per = 6 + (weight is not None) + (bias is not None)
    return io_cost(call, per * call.out.numel)


@op_cost("aten._native_batch_norm_legit_no_training", kind=OpKind.NORM)
def batch_norm_eval_cost(call: OpCall) -> OpCost:
    return io_cost(call, 4 * call.out.numel)


@op_cost("aten._native_batch_norm_legit", "aten._native_batch_norm_legit_functional",
         "aten.native_batch_norm", "aten._batch_norm_with_update", "aten.batch_norm", "batch_norm",
         kind=OpKind.NORM)
def batch_norm_cost(call: OpCall) -> OpCost:
    training = {"aten.native_batch_norm": call.arg(5, "training", True),
                "aten.batch_norm": call.arg(5, "training", True),
                "batch_norm": call.arg(5, "training", False)}.get(call.op, True)
    if call.op == "aten._native_batch_norm_legit":
        training = call.arg(5, "training", True)
    return io_cost(call, (8 if training else 4) * call.out.numel)


@op_cost("aten.rms_norm", "aten._fused_rms_norm", "rms_norm", kind=OpKind.NORM)
def rms_norm_cost(call: OpCall) -> OpCost:
    return io_cost(call, 4 * call.out.numel)


@op_cost("aten.native_layer_norm_backward", "aten.native_batch_norm_backward",
         "aten.native_group_norm_backward", "aten._fused_rms_norm_backward",
         "aten.batch_norm_backward", "aten.cudnn_batch_norm_backward", kind=OpKind.NORM)
def norm_backward_cost(call: OpCall) -> OpCost:
    grad_out = call.arg(0, "grad_out")
    return io_cost(call, NORM_BACKWARD_FLOPS_PER_ELEMENT * grad_out.numel)
