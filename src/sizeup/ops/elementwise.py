"""Elementwise arithmetic, activations and reductions.

Per-element FLOP convention (written once, used everywhere): an arithmetic operation or comparison
is 1 FLOP; a transcendental (exp, log, sqrt, rsqrt, tanh, erf, sin, …) is 1 FLOP; a composite
counts the sum of its parts — sigmoid = negate, exp, add, divide = 4; SiLU = sigmoid + multiply =
5; GELU (erf form) = 0.5·x·(1 + erf(x/√2)) = 5; GELU (tanh form) = 9. FLOPs are counted per
*output* element. Backward formulas follow the same rule and are approximate (noted).
Reductions cost 1 FLOP per *input* element (mean adds 1 per output for the divide).
"""

from __future__ import annotations

from sizeup.ledger import OpKind
from sizeup.ops.registry import OpCall, OpCost, io_cost, register_many

FLOPS_PER_ELEMENT: dict[int, tuple[str, ...]] = {
    1: (
        "add", "sub", "rsub", "mul", "div", "neg", "abs", "sign", "reciprocal", "relu", "relu6",
        "leaky_relu", "hardtanh", "threshold", "maximum", "minimum", "fmax", "fmin", "clamp",
        "clamp_min", "clamp_max", "where", "masked_fill", "eq", "ne", "lt", "le", "gt", "ge",
        "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or",
        "bitwise_not", "bitwise_xor", "floor", "ceil", "round", "trunc", "frac", "remainder",
        "fmod", "floor_divide", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
        "rsqrt", "sin", "cos", "tan", "tanh", "erf", "erfc", "erfinv", "atan", "asin", "acos",
        "sinh", "cosh", "atan2", "square", "isnan", "isinf", "nan_to_num", "threshold_backward",
        "heaviside", "prelu", "_prelu_kernel", "copysign", "hypot", "sgn", "signbit",
    ),
    2: ("addcmul", "addcdiv", "lerp", "leaky_relu_backward", "hardtanh_backward", "xlogy"),
    3: ("sigmoid_backward", "tanh_backward", "softplus", "hardsigmoid", "elu", "logit", "celu",
        "hardswish_backward", "hardsigmoid_backward"),
    4: ("sigmoid", "hardswish", "selu", "elu_backward", "log_sigmoid_forward"),
    5: ("silu", "gelu_erf", "mish", "softplus_backward", "log_sigmoid_backward"),
    8: ("silu_backward",),
    9: ("gelu_tanh",),
    10: ("gelu_backward",),
    12: ("mish_backward",),
}

_APPROXIMATE_BACKWARD = ("backward formula's per-element FLOPs are approximate",)


def _per_element(per: int):
    def cost(call: OpCall) -> OpCost:
        notes = _APPROXIMATE_BACKWARD if call.op.endswith("_backward") and per > 1 else ()
        return io_cost(call, per * call.out.numel, notes)

    cost.__name__ = f"elementwise_{per}_flops"
    return cost


for _per, _names in FLOPS_PER_ELEMENT.items():
    register_many([f"aten.{n}" for n in _names], OpKind.ELEMENTWISE, _per_element(_per))


def gelu_cost(call: OpCall) -> OpCost:
    """GELU: 5 per element with erf, 9 with the tanh approximation."""
    tanh = call.kwargs.get("approximate", call.arg(1, "approximate", "none")) == "tanh"
    return io_cost(call, (9 if tanh else 5) * call.out.numel)


register_many(["aten.gelu", "gelu"], OpKind.ELEMENTWISE, gelu_cost)


def pow_cost(call: OpCall) -> OpCost:
    """x**2 and x**0.5 are 1 FLOP per element (multiply, sqrt); other exponents exp(y·log x) = 3."""
    exponent = call.arg(1, "exponent")
    per = 1 if isinstance(exponent, (int, float)) and exponent in (0.5, 1, 2, -1) else 3
    return io_cost(call, per * call.out.numel)


register_many(["aten.pow"], OpKind.ELEMENTWISE, pow_cost)


def dropout_cost(call: OpCall) -> OpCost:
    """Inverted dropout: compare a random number and scale = 2 per element (mask generation not counted)."""
    return io_cost(call, 2 * call.out.numel, ("random number generation not counted",))


register_many(["aten.native_dropout", "aten.dropout", "aten.native_dropout_backward", "aten.bernoulli"],
              OpKind.ELEMENTWISE, dropout_cost)


# ---- reductions ---------------------------------------------------------------------------

REDUCE_FLOPS_PER_INPUT: dict[int, tuple[str, ...]] = {
    1: ("sum", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "all", "any", "cumsum",
        "cumprod", "nansum", "count_nonzero", "aminmax", "logcumsumexp", "_cummax_helper"),
    2: ("linalg_vector_norm", "norm", "frobenius_norm"),
    3: ("var", "std", "var_mean", "std_mean", "logsumexp"),
}


def _per_input(per: int, divide: bool = False):
    def cost(call: OpCall) -> OpCost:
        inp = call.arg(0, "self")
        flops = per * inp.numel + (call.out.numel if divide else 0)
        return io_cost(call, flops)

    cost.__name__ = f"reduce_{per}_flops"
    return cost


for _per, _names in REDUCE_FLOPS_PER_INPUT.items():
    register_many([f"aten.{n}" for n in _names], OpKind.REDUCE, _per_input(_per))
register_many(["aten.mean", "aten.nanmean"], OpKind.REDUCE, _per_input(1, divide=True))
