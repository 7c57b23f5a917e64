"""Matrix products. Convention: C[..., m, n] = A[..., m, k] @ B[..., k, n] costs 2·m·n·k FLOPs per
batch element (one multiply and one add per term); an added bias or C term costs 1 FLOP per output."""

from __future__ import annotations

import math

from sizeup.ledger import OpKind
from sizeup.ops.registry import OpCall, OpCost, io_cost, op_cost


def _matmul_flops(call: OpCall, k: int) -> int:
    return 2 * call.out.numel * k


@op_cost("aten.mm", "aten.bmm", "aten.matmul", "aten._int_mm", "matmul", kind=OpKind.MATMUL)
def matmul_cost(call: OpCall) -> OpCost:
    """A[..., m, k] @ B[..., k, n]: 2·(batch·m·n)·k; the contraction length k is A's last dim."""
    a = call.arg(0, "self")
    flops = _matmul_flops(call, a.shape[-1])
    return io_cost(call, flops, matmul_flops=flops)


@op_cost("aten.mv", "aten.dot", "aten.vdot", kind=OpKind.MATMUL)
def matvec_cost(call: OpCall) -> OpCost:
    """A[m, k] @ v[k] -> 2·m·k; u·v -> 2·k."""
    a = call.arg(0, "self")
    flops = 2 * max(call.out.numel, 1) * a.shape[-1]
    return io_cost(call, flops, matmul_flops=flops)


@op_cost("aten.addmm", "aten.baddbmm", "aten.addbmm", "aten.addmv", kind=OpKind.MATMUL)
def addmm_cost(call: OpCall) -> OpCost:
    """beta·C + alpha·(A @ B): 2·m·n·k for the product + 1 per output for the addition of C."""
    a = call.arg(1, "mat1", call.arg(1, "batch1"))
    k = a.shape[-1]
    product = 2 * call.out.numel * k
    if call.op == "aten.addbmm":  # sums the batch of products into one [m, n]
        product = 2 * math.prod(a.shape[:-1]) * call.arg(2, "batch2").shape[-1] * k
    return io_cost(call, product + call.out.numel, matmul_flops=product)


@op_cost("aten.linear", "linear", kind=OpKind.MATMUL)
def linear_cost(call: OpCall) -> OpCost:
    """y[..., n] = x[..., k] @ W[n, k]^T (+ b): 2·numel(y)·k (+ numel(y) with a bias)."""
    x = call.arg(0, "input")
    bias = call.arg(2, "bias")
    product = 2 * call.out.numel * x.shape[-1]
    return io_cost(call, product + (call.out.numel if bias is not None else 0), matmul_flops=product)
