"""Convolutions of any dimensionality, groups, stride, padding, dilation, transposed or not.

Convention: every output element of a direct convolution is a dot product of length
(C_in / groups) · prod(kernel), so FLOPs = 2 · N · C_out · prod(out_spatial) · (C_in / groups) ·
prod(kernel), plus N · C_out · prod(out_spatial) for a bias. A transposed convolution scatters each
*input* element over the kernel: 2 · N · C_in · prod(in_spatial) · (C_out / groups) · prod(kernel).
Padding and stride change only the output size (zero-padded taps are counted, as cuDNN computes them).
"""

from __future__ import annotations

import math

from sizeup.ledger import OpKind, TensorSpec
from sizeup.ops.registry import OpCall, OpCost, op_cost


def conv_forward_flops(x: TensorSpec, w: TensorSpec, out: TensorSpec, transposed: bool) -> int:
    kernel = math.prod(w.shape[2:])
    if transposed:
        # weight is [C_in, C_out / groups, *kernel]
        n, c_in = x.shape[0], x.shape[1]
        return 2 * n * c_in * math.prod(x.shape[2:]) * w.shape[1] * kernel
    # weight is [C_out, C_in / groups, *kernel]
    n, c_out = out.shape[0], out.shape[1]
    return 2 * n * c_out * math.prod(out.shape[2:]) * w.shape[1] * kernel


def conv_window(call: OpCall) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(filter size, stride) per spatial dimension of a dense, undilated, forward convolution call; ((), ())
    for a grouped, dilated or transposed one (whose algorithms differ: no Winograd path)."""
    if call.op not in _FORWARD_CONVS:
        return (), ()
    x, w = call.arg(0, "input"), call.arg(1, "weight")
    dims = len(w.shape) - 2
    general = call.op in ("aten.convolution", "aten._convolution")
    transposed = bool(call.arg(6, "transposed", False)) if general else False
    groups = int(call.arg(8 if general else 6, "groups", 1) or 1)

    def per_dim(value) -> tuple[int, ...]:
        values = tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),)
        return values * dims if len(values) == 1 else values

    stride = per_dim(call.arg(3, "stride", 1))
    dilation = per_dim(call.arg(5, "dilation", 1))
    if transposed or groups != 1 or any(d != 1 for d in dilation) or x.shape[1] != w.shape[1]:
        return (), ()
    return tuple(int(k) for k in w.shape[2:]), stride


_FORWARD_CONVS = ("aten.convolution", "aten._convolution", "aten.conv2d", "aten.conv1d", "aten.conv3d")
"""Forward convolutions whose schema puts stride, dilation and groups where `conv_window` reads them."""


@op_cost("aten.convolution", "aten._convolution", "aten.conv2d", "aten.conv1d", "aten.conv3d",
         "aten.mkldnn_convolution", "aten.cudnn_convolution", "conv", kind=OpKind.CONV)
def convolution_cost(call: OpCall) -> OpCost:
    """aten.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)."""
    x, w, bias = call.arg(0, "input"), call.arg(1, "weight"), call.arg(2, "bias")
    transposed = bool(call.arg(6, "transposed", False)) if call.op in ("aten.convolution", "aten._convolution", "conv") else False
    product = conv_forward_flops(x, w, call.out, transposed)
    flops = product + (call.out.numel if bias is not None else 0)
    return OpCost(flops=flops, bytes_read=call.input_bytes, bytes_written=call.output_bytes, matmul_flops=product)


@op_cost("aten.convolution_backward", kind=OpKind.CONV)
def convolution_backward_cost(call: OpCall) -> OpCost:
    """Gradient w.r.t. input and w.r.t. weight each cost one forward convolution (without bias);
    the bias gradient sums grad_output (1 FLOP per element). `output_mask` says which are computed."""
    grad_out, x, w = call.arg(0, "grad_output"), call.arg(1, "input"), call.arg(2, "weight")
    transposed = bool(call.arg(7, "transposed", False))
    mask = call.arg(10, "output_mask", [True, True, True])
    one = conv_forward_flops(x, w, grad_out, transposed)
    product = (one if mask[0] else 0) + (one if mask[1] else 0)
    flops = product + (grad_out.numel if mask[2] else 0)
    return OpCost(flops=flops, bytes_read=call.input_bytes, bytes_written=call.output_bytes, matmul_flops=product)
