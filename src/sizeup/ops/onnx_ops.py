"""Cost formulas of standard ONNX operators, registered as "onnx.<OpType>".

Every formula follows the convention of its aten counterpart, so that a model costs the same FLOPs
whether it is traced or read from its ONNX export: convolution 2·N·C_out·prod(out_spatial)·
(C_in/groups)·prod(kernel) (+ 1 per output for a bias, see `sizeup.ops.conv`); MatMul and Gemm
2·m·n·k (Gemm + 1 per output for C, see `sizeup.ops.matmul`); elementwise ops per output element
from `sizeup.ops.elementwise.FLOPS_PER_ELEMENT`; softmax 5 per element; normalisations as in
`sizeup.ops.norm`; pooling and resizing as in `sizeup.ops.pool`. Reshape, Transpose, Squeeze, Shape,
Constant, Identity and inference-mode Dropout are free views; Concat, Split, Slice, Pad, Cast and
friends move bytes only.

A call's positional arguments are the node's inputs in ONNX order (a skipped optional input is None);
its keyword arguments are the node's attributes, plus `input_values`: the value of each
single-element constant input, else None (Pow needs its exponent).

Operator definitions: https://onnx.ai/onnx/operators/
"""

from __future__ import annotations

import math

from sizeup.ledger import OpKind, TensorSpec
from sizeup.ops.attention import SOFTMAX_FLOPS_PER_ELEMENT
from sizeup.ops.conv import conv_forward_flops
from sizeup.ops.copy import gather_cost
from sizeup.ops.elementwise import FLOPS_PER_ELEMENT, REDUCE_FLOPS_PER_INPUT
from sizeup.ops.pool import INTERPOLATION_FLOPS_PER_OUTPUT
from sizeup.ops.registry import OpCall, OpCost, io_cost, register_many

__all__ = ["ONNX_ELEMENTWISE"]


def _onnx(*op_types: str) -> list[str]:
    return [f"onnx.{t}" for t in op_types]


def _free(call: OpCall) -> OpCost:
    """Views and metadata: nothing computed, nothing moved."""
    return OpCost(flops=0, bytes_read=0, bytes_written=0)


def _copy(call: OpCall) -> OpCost:
    return io_cost(call)


# ---- convolution and matrix products -----------------------------------------------------------

def _conv(call: OpCall, x_at: int, w_at: int, bias_at: int | None, transposed: bool) -> OpCost:
    x, w = call.args[x_at], call.args[w_at]
    bias = call.arg(bias_at, "B") if bias_at is not None else None
    product = conv_forward_flops(x, w, call.out, transposed)
    return io_cost(call, product + (call.out.numel if bias is not None else 0), matmul_flops=product)


def conv_cost(call: OpCall) -> OpCost:
    """Conv(X, W, B): 2·N·C_out·prod(out_spatial)·(C_in/group)·prod(kernel) + numel(Y) with B."""
    return _conv(call, 0, 1, 2, transposed=False)


def conv_transpose_cost(call: OpCall) -> OpCost:
    """ConvTranspose(X, W[C_in, C_out/group, *k], B): 2·N·C_in·prod(in_spatial)·(C_out/group)·prod(k)."""
    return _conv(call, 0, 1, 2, transposed=True)


def conv_integer_cost(call: OpCall) -> OpCost:
    """ConvInteger(x, w, x_zero_point, w_zero_point): the product only."""
    return _conv(call, 0, 1, None, transposed=False)


def qlinear_conv_cost(call: OpCall) -> OpCost:
    """QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): product + bias; requantisation
    not counted."""
    x, w, bias = call.args[0], call.args[3], call.arg(8, "B")
    product = conv_forward_flops(x, w, call.out, transposed=False)
    return io_cost(call, product + (call.out.numel if bias is not None else 0), matmul_flops=product,
                   notes=("requantisation of the output not counted",))


register_many(_onnx("Conv"), OpKind.CONV, conv_cost)
register_many(_onnx("ConvTranspose"), OpKind.CONV, conv_transpose_cost)
register_many(_onnx("ConvInteger"), OpKind.CONV, conv_integer_cost)
register_many(_onnx("QLinearConv"), OpKind.CONV, qlinear_conv_cost)


def matmul_cost(call: OpCall) -> OpCost:
    """MatMul(A[..., m, k], B[..., k, n]): 2·numel(Y)·k, k = A's last dim (1-D operands as numpy)."""
    product = 2 * call.out.numel * call.args[0].shape[-1]
    return io_cost(call, product, matmul_flops=product)


def qlinear_matmul_cost(call: OpCall) -> OpCost:
    """QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): 2·numel(Y)·k."""
    product = 2 * call.out.numel * call.args[0].shape[-1]
    return io_cost(call, product, matmul_flops=product, notes=("requantisation of the output not counted",))


def gemm_cost(call: OpCall) -> OpCost:
    """Gemm(A, B, C): Y = alpha·A'·B' + beta·C with A' = Aᵀ when transA: 2·M·N·K + numel(Y) with C
    (alpha and beta scaling not counted, as for aten.addmm)."""
    a = call.args[0]
    k = a.shape[0] if call.kwargs.get("transA", 0) else a.shape[-1]
    product = 2 * call.out.numel * k
    c = call.arg(2, "C")
    return io_cost(call, product + (call.out.numel if c is not None else 0), matmul_flops=product)


register_many(_onnx("MatMul", "MatMulInteger"), OpKind.MATMUL, matmul_cost)
register_many(_onnx("QLinearMatMul"), OpKind.MATMUL, qlinear_matmul_cost)
register_many(_onnx("Gemm"), OpKind.MATMUL, gemm_cost)


_BROADCAST_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_terms(equation: str, operands: list[TensorSpec]) -> tuple[list[str], str]:
    """Operand subscripts and the output subscript, each "..." expanded to upper-case letters
    aligned from the right (numpy broadcasting)."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    spans = [t.ndim - (len(term) - 3) if "..." in term else 0 for term, t in zip(terms, operands)]
    width = max(spans, default=0)
    broadcast = _BROADCAST_LETTERS[:width]
    terms = [term.replace("...", broadcast[width - n:]) for term, n in zip(terms, spans)]
    if not arrow:  # implicit output: the broadcast dims, then the letters seen once, alphabetically
        letters = "".join(terms)
        rhs = broadcast + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c.islower()))
    return terms, rhs.replace("...", broadcast)


def einsum_cost(call: OpCall) -> OpCost:
    """Einsum, contracted pairwise left to right as torch does: a pair with a summed index costs
    2·prod(all index sizes) (a batched matmul), without one prod(all index sizes) (a multiply); a single
    operand summed over an index costs 1 per input element, a pure permutation nothing."""
    operands = [t for t in call.args if isinstance(t, TensorSpec)]
    terms, out = _einsum_terms(str(call.kwargs.get("equation", "")), operands)
    sizes: dict[str, int] = {}
    for term, t in zip(terms, operands):
        for letter, d in zip(term, t.shape):
            sizes[letter] = max(sizes.get(letter, 1), d)
    if len(operands) == 1:
        reduced = set(terms[0]) - set(out)
        return io_cost(call, operands[0].numel if reduced else 0)
    flops = product = 0
    left = terms[0]
    for i, right in enumerate(terms[1:], start=1):
        later = set(out).union(*terms[i + 1:])
        letters = set(left) | set(right)
        keep = "".join(c for c in dict.fromkeys(left + right) if c in later)
        work = math.prod(sizes[c] for c in letters)
        if letters - set(keep):
            flops += 2 * work
            product += 2 * work
        else:
            flops += work
        left = keep
    notes = ("einsum of more than two operands: contracted left to right",) if len(operands) > 2 else ()
    return io_cost(call, flops, notes, matmul_flops=product)


register_many(_onnx("Einsum"), OpKind.MATMUL, einsum_cost)


def attention_cost(call: OpCall) -> OpCost:
    """Attention(Q, K, V, mask…) (opset 23): 2·S·D + 5·S + 2·S·Dv with S = batch·query heads·Lq·Lk,
    as `sizeup.ops.attention`; 3-D inputs [batch, seq, heads·dim] use q_num_heads / kv_num_heads."""
    q, k, v = call.args[0], call.args[1], call.args[2]
    if q.ndim == 4:  # [batch, heads, seq, dim]
        rows, lk, d, dv = math.prod(q.shape[:-1]), k.shape[-2], q.shape[-1], v.shape[-1]
    else:
        heads = int(call.kwargs.get("q_num_heads", 1))
        kv_heads = int(call.kwargs.get("kv_num_heads", heads))
        rows, lk = q.shape[0] * q.shape[1] * heads, k.shape[1]
        d, dv = q.shape[2] // heads, v.shape[2] // kv_heads
    scores = rows * lk
    product = 2 * scores * d + 2 * scores * dv
    notes = ["fused attention: scores are not written to memory"]
    if call.kwargs.get("is_causal", 0):
        notes.append("causal mask counted as the full Lq×Lk scores; kernels that skip masked blocks do about half")
    return io_cost(call, product + SOFTMAX_FLOPS_PER_ELEMENT * scores, tuple(notes), matmul_flops=product)


register_many(_onnx("Attention"), OpKind.ATTENTION, attention_cost)


# ---- elementwise -------------------------------------------------------------------------------

ONNX_ELEMENTWISE: dict[str, str] = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Neg": "neg", "Abs": "abs", "Sign": "sign",
    "Reciprocal": "reciprocal", "Relu": "relu", "LeakyRelu": "leaky_relu", "ThresholdedRelu": "threshold",
    "PRelu": "prelu", "Clip": "clamp", "Where": "where", "Equal": "eq", "Greater": "gt", "Less": "lt",
    "GreaterOrEqual": "ge", "LessOrEqual": "le", "And": "logical_and", "Or": "logical_or",
    "Not": "logical_not", "Xor": "logical_xor", "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or",
    "BitwiseNot": "bitwise_not", "BitwiseXor": "bitwise_xor", "Floor": "floor", "Ceil": "ceil",
    "Round": "round", "Mod": "fmod", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Sin": "sin",
    "Cos": "cos", "Tan": "tan", "Tanh": "tanh", "Erf": "erf", "Atan": "atan", "Asin": "asin",
    "Acos": "acos", "Sinh": "sinh", "Cosh": "cosh", "IsNaN": "isnan", "IsInf": "isinf",
    "Sigmoid": "sigmoid", "HardSigmoid": "hardsigmoid", "HardSwish": "hardswish", "Selu": "selu",
    "Elu": "elu", "Celu": "celu", "Softplus": "softplus", "Mish": "mish", "Swish": "silu",
}
"""ONNX elementwise op type -> the aten name whose per-element FLOPs it shares."""

_PER_ELEMENT = {name: per for per, names in FLOPS_PER_ELEMENT.items() for name in names}


def _per_element(per: int):
    def cost(call: OpCall) -> OpCost:
        return io_cost(call, per * call.out.numel)

    cost.__name__ = f"onnx_elementwise_{per}_flops"
    return cost


for _per in sorted({_PER_ELEMENT[a] for a in ONNX_ELEMENTWISE.values()}):
    register_many(_onnx(*(o for o, a in ONNX_ELEMENTWISE.items() if _PER_ELEMENT[a] == _per)),
                  OpKind.ELEMENTWISE, _per_element(_per))


def softsign_cost(call: OpCall) -> OpCost:
    """x / (1 + |x|): abs, add, divide = 3 per element."""
    return io_cost(call, 3 * call.out.numel)


def gelu_cost(call: OpCall) -> OpCost:
    """Gelu (opset 20): 5 per element with erf, 9 with approximate="tanh", as aten.gelu."""
    return io_cost(call, (9 if call.kwargs.get("approximate", "none") == "tanh" else 5) * call.out.numel)


def pow_cost(call: OpCall) -> OpCost:
    """Pow(X, Y): a constant exponent of 2, 0.5, 1 or -1 is 1 per element, any other exp(y·log x) = 3."""
    values = call.kwargs.get("input_values") or ()
    exponent = values[1] if len(values) > 1 else None
    return io_cost(call, (1 if exponent in (0.5, 1, 2, -1) else 3) * call.out.numel)


def variadic_cost(call: OpCall) -> OpCost:
    """Sum, Max, Min of n inputs: n - 1 per output element; Mean adds 1 per output for the divide."""
    n = sum(isinstance(t, TensorSpec) for t in call.args)
    per = max(n - 1, 0) + (1 if call.op == "onnx.Mean" else 0)
    return io_cost(call, per * call.out.numel)


register_many(_onnx("Softsign"), OpKind.ELEMENTWISE, softsign_cost)
register_many(_onnx("Gelu"), OpKind.ELEMENTWISE, gelu_cost)
register_many(_onnx("Pow"), OpKind.ELEMENTWISE, pow_cost)
register_many(_onnx("Sum", "Max", "Min", "Mean"), OpKind.ELEMENTWISE, variadic_cost)


# ---- softmax, normalisation, reductions ---------------------------------------------------------

def softmax_cost(call: OpCall) -> OpCost:
    """5 per element: max, subtract, exp, sum, divide (LogSoftmax: log instead of divide)."""
    return io_cost(call, SOFTMAX_FLOPS_PER_ELEMENT * call.out.numel)


def layer_norm_cost(call: OpCall) -> OpCost:
    """LayerNormalization(X, Scale, B) / GroupNormalization(X, scale, bias): 6 per element, + 1 for the
    scale, + 1 for the bias (`sizeup.ops.norm`)."""
    per = 6 + (call.arg(1, "scale") is not None) + (call.arg(2, "bias") is not None)
    return io_cost(call, per * call.out.numel)


def batch_norm_cost(call: OpCall) -> OpCost:
    """BatchNormalization: 4 per element with running statistics; 8 with training_mode=1."""
    return io_cost(call, (8 if call.kwargs.get("training_mode", 0) else 4) * call.out.numel)


def rms_norm_cost(call: OpCall) -> OpCost:
    """RMSNormalization (opset 23): square, sum, multiply by rstd, weight = 4 per element."""
    return io_cost(call, 4 * call.out.numel)


register_many(_onnx("Softmax", "LogSoftmax"), OpKind.NORM, softmax_cost)
register_many(_onnx("LayerNormalization", "GroupNormalization", "InstanceNormalization"), OpKind.NORM,
              layer_norm_cost)
register_many(_onnx("BatchNormalization"), OpKind.NORM, batch_norm_cost)
register_many(_onnx("RMSNormalization"), OpKind.NORM, rms_norm_cost)

_ONNX_REDUCE: dict[str, str] = {
    "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin", "ReduceProd": "prod", "ArgMax": "argmax",
    "ArgMin": "argmin", "CumSum": "cumsum", "ReduceL1": "norm", "ReduceL2": "norm", "ReduceSumSquare": "norm",
    "ReduceLogSumExp": "logsumexp",
}
"""ONNX reduction -> the aten reduction whose per-input FLOPs it shares."""
_PER_INPUT = {name: per for per, names in REDUCE_FLOPS_PER_INPUT.items() for name in names}


def _per_input(per: int, divide: bool = False):
    def cost(call: OpCall) -> OpCost:
        return io_cost(call, per * call.args[0].numel + (call.out.numel if divide else 0))

    cost.__name__ = f"onnx_reduce_{per}_flops"
    return cost


for _per in sorted({_PER_INPUT[a] for a in _ONNX_REDUCE.values()}):
    register_many(_onnx(*(o for o, a in _ONNX_REDUCE.items() if _PER_INPUT[a] == _per)),
                  OpKind.REDUCE, _per_input(_per))
register_many(_onnx("ReduceMean"), OpKind.REDUCE, _per_input(1, divide=True))


# ---- pooling and resizing -----------------------------------------------------------------------

def _pool(average: bool):
    def cost(call: OpCall) -> OpCost:
        """MaxPool: prod(kernel_shape) per output; AveragePool: prod(kernel_shape) + 1."""
        per = math.prod(call.kwargs.get("kernel_shape", ())) + (1 if average else 0)
        return io_cost(call, per * call.out.numel)

    cost.__name__ = f"onnx_{'average' if average else 'max'}_pool_cost"
    return cost


def global_average_pool_cost(call: OpCall) -> OpCost:
    """Adds every input element, divides once per output (as adaptive average pooling)."""
    return io_cost(call, call.args[0].numel + call.out.numel)


def global_max_pool_cost(call: OpCall) -> OpCost:
    return io_cost(call, call.args[0].numel)


register_many(_onnx("MaxPool"), OpKind.POOL, _pool(average=False))
register_many(_onnx("AveragePool"), OpKind.POOL, _pool(average=True))
register_many(_onnx("GlobalAveragePool"), OpKind.POOL, global_average_pool_cost)
register_many(_onnx("GlobalMaxPool"), OpKind.POOL, global_max_pool_cost)


_INTERPOLATION_NAMES = {("linear", 1): "linear", ("linear", 2): "bilinear", ("linear", 3): "trilinear",
                        ("cubic", 2): "bicubic"}


def resize_cost(call: OpCall) -> OpCost:
    """Resize / Upsample per output element, as aten's upsample ops: nearest 0, linear 3, bilinear 7,
    trilinear 15, bicubic 31; other axis counts k by the same rule, 2·tapsᵏ - 1 (taps 2 or 4).
    The resized axes are the spatial ones of an [N, C, ...] tensor, else those whose size changes."""
    x, out = call.args[0], call.out
    if x.ndim >= 3 and x.shape[:2] == out.shape[:2]:
        axes = x.ndim - 2
    else:
        axes = sum(a != b for a, b in zip(x.shape, out.shape))
    mode = str(call.kwargs.get("mode", "nearest"))
    name = _INTERPOLATION_NAMES.get((mode, axes))
    taps = {"linear": 2, "cubic": 4}.get(mode, 0)
    per = INTERPOLATION_FLOPS_PER_OUTPUT[name] if name else (2 * taps**axes - 1 if taps and axes else 0)
    notes = ("interpolation weights per output position not counted",) if per else ()
    return io_cost(call, per * out.numel, notes)


register_many(_onnx("Resize", "Upsample"), OpKind.ELEMENTWISE, resize_cost)


# ---- data movement -------------------------------------------------------------------------------

VIEW_OPS = ("Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Shape", "Size", "Constant",
            "Identity", "Dropout")
"""Free: views, metadata and constants (Dropout is the identity in an inference graph)."""
register_many(_onnx(*VIEW_OPS), OpKind.VIEW, _free)

COPY_OPS = ("Concat", "Split", "Slice", "Pad", "Tile", "Expand", "Cast", "CastLike", "DepthToSpace",
            "SpaceToDepth", "Trilu", "TopK", "NonZero", "Compress", "ReverseSequence", "ScatterND",
            "ScatterElements", "Scatter", "OneHot", "Unique", "SplitToSequence")
"""Bytes only: each reads its inputs and writes its outputs once."""
register_many(_onnx(*COPY_OPS), OpKind.COPY, _copy)
register_many(_onnx("Gather", "GatherElements", "GatherND"), OpKind.COPY, gather_cost)


def creation_cost(call: OpCall) -> OpCost:
    """ConstantOfShape, Range, EyeLike: nothing read but a shape, the output written."""
    return OpCost(flops=0, bytes_read=0, bytes_written=call.output_bytes)


register_many(_onnx("ConstantOfShape", "Range", "EyeLike"), OpKind.COPY, creation_cost)



def grid_sample_cost(call: OpCall) -> OpCost:
    """GridSample(X, grid): the aten grid_sampler formula, its mode from the `mode` attribute."""
    from sizeup.ops.pool import grid_sampler_cost

    mode = {"bilinear": 0, "linear": 0, "nearest": 1, "bicubic": 2, "cubic": 2}[str(call.kwargs.get("mode", "linear"))]
    return grid_sampler_cost(OpCall(op="grid_sample", args=(call.args[0], call.args[1], mode), outputs=call.outputs))


register_many(_onnx("GridSample"), OpKind.ELEMENTWISE, grid_sample_cost)
