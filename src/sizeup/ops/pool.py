"""Pooling, interpolation and grid sampling.

Conventions: max pooling compares each window element once (prod(kernel) FLOPs per output); average
pooling adds each window element and divides once (prod(kernel) + 1); adaptive average pooling adds
every input element once and divides once per output. Interpolation costs per output element:
nearest 0, linear 3, bilinear 7 (4 multiplies + 3 adds), trilinear 15, bicubic 31 (16 + 15), plus
the weights, which are per output position and approximate. Grid sampling: per sampling point,
4 FLOPs to unnormalise the coordinates and 8 for the bilinear weights; per output value 7
(bilinear), 0 (nearest) or 31 (bicubic).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sizeup.ledger import OpKind
from sizeup.ops.registry import OpCall, OpCost, io_cost, register_many


def _kernel(call: OpCall, spatial_dims: int) -> int:
    size = call.arg(1, "kernel_size")
    if isinstance(size, int):
        return size**spatial_dims
    size = list(size)
    if len(size) == 1:
        size = size * spatial_dims
    return math.prod(size)


def _pool_cost(spatial_dims: int, average: bool):
    def cost(call: OpCall) -> OpCost:
        per = _kernel(call, spatial_dims) + (1 if average else 0)
        return io_cost(call, per * call.out.numel)

    cost.__name__ = f"{'avg' if average else 'max'}_pool{spatial_dims}d_cost"
    return cost


for _d in (1, 2, 3):
    register_many([f"aten.max_pool{_d}d", f"aten.max_pool{_d}d_with_indices",
                   f"aten.mkldnn_max_pool{_d}d", f"aten.quantized_max_pool{_d}d"],
                  OpKind.POOL, _pool_cost(_d, average=False))
    register_many([f"aten.avg_pool{_d}d"], OpKind.POOL, _pool_cost(_d, average=True))


def _grad_scatter_cost(call: OpCall) -> OpCost:
    """Pooling backward: each grad_output element is added into its window (1 FLOP per window element
    for average pooling, 1 per output for max pooling's scatter)."""
    grad = call.arg(0, "grad_output")
    per = _kernel(call, len(grad.shape) - 2) if "avg_pool" in call.op else 1
    return io_cost(call, per * grad.numel, ("pooling backward FLOPs are approximate",))


register_many([f"aten.max_pool{d}d_with_indices_backward" for d in (2, 3)]
              + [f"aten.avg_pool{d}d_backward" for d in (2, 3)], OpKind.POOL, _grad_scatter_cost)


def adaptive_avg_pool_cost(call: OpCall) -> OpCost:
    inp = call.arg(0, "self")
    return io_cost(call, inp.numel + call.out.numel)


def adaptive_max_pool_cost(call: OpCall) -> OpCost:
    inp = call.arg(0, "self")
    return io_cost(call, inp.numel)


def adaptive_backward_cost(call: OpCall) -> OpCost:
    return io_cost(call, call.out.numel)


for _d in (1, 2, 3):
    register_many([f"aten.adaptive_avg_pool{_d}d", f"aten._adaptive_avg_pool{_d}d"], OpKind.POOL, adaptive_avg_pool_cost)
    register_many([f"aten.adaptive_max_pool{_d}d"], OpKind.POOL, adaptive_max_pool_cost)
register_many(["aten._adaptive_avg_pool2d_backward", "aten._adaptive_avg_pool3d_backward",
               "aten.adaptive_max_pool2d_backward"], OpKind.POOL, adaptive_backward_cost)


# ---- interpolation ------------------------------------------------------------------------

INTERPOLATION_FLOPS_PER_OUTPUT = {
    "nearest": 0, "nearest_exact": 0, "linear": 3, "bilinear": 7, "trilinear": 15, "bicubic": 31,
}


def _interp_cost(mode: str, backward: bool):
    per = INTERPOLATION_FLOPS_PER_OUTPUT[mode]

    def cost(call: OpCall) -> OpCost:
        elements = call.arg(0, "grad_output").numel if backward else call.out.numel
        notes = ("interpolation weights per output position not counted",) if per else ()
        return io_cost(call, per * elements, notes)

    cost.__name__ = f"upsample_{mode}_cost"
    return cost


_UPSAMPLE_OPS = {
    "nearest": ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d"),
    "nearest_exact": ("_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d"),
    "linear": ("upsample_linear1d",),
    "bilinear": ("upsample_bilinear2d", "_upsample_bilinear2d_aa"),
    "trilinear": ("upsample_trilinear3d",),
    "bicubic": ("upsample_bicubic2d", "_upsample_bicubic2d_aa"),
}
for _mode, _names in _UPSAMPLE_OPS.items():
    register_many([f"aten.{n}" for n in _names], OpKind.ELEMENTWISE, _interp_cost(_mode, backward=False))
    register_many([f"aten.{n}_backward" for n in _names], OpKind.ELEMENTWISE, _interp_cost(_mode, backward=True))


_GRID_MODES = {0: ("bilinear", 12, 7), 1: ("nearest", 6, 0), 2: ("bicubic", 84, 31)}


def _grid_flops(call: OpCall, spatial: Sequence[int], channels: int, batch: int) -> tuple[int, str]:
    mode = call.arg(2, "interpolation_mode", 0)
    name, per_point, per_value = _GRID_MODES.get(mode, _GRID_MODES[0])
    points = batch * math.prod(spatial)
    if len(spatial) == 3 and name == "bilinear":  # trilinear in 3-D: 8 corners
        per_point, per_value = 20, 15
    return points * per_point + points * channels * per_value, name


def grid_sampler_cost(call: OpCall) -> OpCost:
    out = call.out
    flops, name = _grid_flops(call, out.shape[2:], out.shape[1], out.shape[0])
    return io_cost(call, flops, (f"grid_sample {name}: coordinate and weight FLOPs are approximate",))


def grid_sampler_backward_cost(call: OpCall) -> OpCost:
    grad = call.arg(0, "grad_output")
    flops, name = _grid_flops(call, grad.shape[2:], grad.shape[1], grad.shape[0])
    return io_cost(call, 2 * flops, (f"grid_sample {name} backward: counted as 2x forward",))


register_many(["aten.grid_sampler_2d", "aten.grid_sampler_3d", "aten.cudnn_grid_sampler",
               "aten._grid_sampler_2d_cpu_fallback", "grid_sample"], OpKind.ELEMENTWISE, grid_sampler_cost)
register_many(["aten.grid_sampler_2d_backward", "aten.grid_sampler_3d_backward"], OpKind.ELEMENTWISE,
              grid_sampler_backward_cost)
