"""Runtimes (data/efficiency/overheads.yaml `runtimes:`): how an engine that runs a model kernel by kernel spends
its fixed cost: the host time per kernel (Python module call, dispatcher, launch), the op kinds it folds into the
matrix kernel before them (TensorRT, ONNX Runtime, inductor), the extra kernels per matrix op (autocast's weight
cast, inductor's epilogue), one graph launch per forward where kernels replay from a captured graph, and the layout
its convolutions reach cuDNN in. An engine names the runtime it runs with (engines.base.ExecutionModel.runtime);
price/overhead.py applies it to a ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ledger import OpKind
from sizeup.ranges import Range, parse_entry

__all__ = ["Runtime", "LAYOUTS", "MATRIX_KINDS", "runtime_names", "get_runtime", "ZERO"]

ZERO = Range(0.0, 0.0, 0.0)
MATRIX_KINDS = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION})
_FUSABLE = {k.value: k for k in (OpKind.NORM, OpKind.ELEMENTWISE)}
_KEYS = {"name", "per_op_s", "per_op_s_cpu", "per_graph_s", "fuses", "casts_per_matrix_op",
         "epilogue_kernels_per_matrix_op", "conv_layout"}
LAYOUTS = ("nchw", "channels_last")
"""The activation layout a runtime hands cuDNN: PyTorch's default contiguous NCHW, or channels-last (NHWC)."""


@dataclass(frozen=True, slots=True)
class Runtime:
    id: str
    name: str
    per_op_s: Range
    per_op_s_cpu: Range | None
    per_graph_s: Range
    fuses: frozenset[OpKind]
    casts_per_matrix_op: int
    epilogue_kernels_per_matrix_op: int
    sources: tuple[str, ...]
    conv_layout: str | None = None
    """'nchw' or 'channels_last' where the runtime hands its convolutions to cuDNN in that layout (eager
    PyTorch, inductor's extern convs); None where an engine picks its own (TensorRT, ONNX Runtime)."""

    def per_op_on(self, synchronous: bool) -> Range | None:
        """Host time per kernel on this device class; None: the device kind's default applies."""
        return self.per_op_s_cpu if synchronous else self.per_op_s


def _parse(rid: str, data: object, path) -> Runtime:
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: runtime '{rid}' must be a mapping")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise CatalogError(f"{path}: unknown field 'runtimes.{rid}.{unknown[0]}'")
    sources = []
    per_op, src = parse_entry(data.get("per_op_s"), path, f"runtimes.{rid}.per_op_s", False)
    sources.append(src)
    cpu = graph = None
    if "per_op_s_cpu" in data:
        cpu, src = parse_entry(data["per_op_s_cpu"], path, f"runtimes.{rid}.per_op_s_cpu", False)
        sources.append(src)
    if "per_graph_s" in data:
        graph, src = parse_entry(data["per_graph_s"], path, f"runtimes.{rid}.per_graph_s", False)
        sources.append(src)
    fuses = data.get("fuses") or []
    bad = [f for f in fuses if f not in _FUSABLE]
    if bad:
        raise CatalogError(f"{path}: runtimes.{rid}.fuses: {bad[0]!r} is not one of {', '.join(_FUSABLE)}")
    counts = {}
    for key in ("casts_per_matrix_op", "epilogue_kernels_per_matrix_op"):
        value = data.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CatalogError(f"{path}: runtimes.{rid}.{key} = {value!r}: expected a whole number >= 0")
        counts[key] = value
    layout = data.get("conv_layout")
    if layout is not None and layout not in LAYOUTS:
        raise CatalogError(f"{path}: runtimes.{rid}.conv_layout = {layout!r}: expected one of {', '.join(LAYOUTS)}")
    return Runtime(id=rid, name=str(data.get("name") or rid), per_op_s=per_op, per_op_s_cpu=cpu, conv_layout=layout,
                   per_graph_s=graph or ZERO, fuses=frozenset(_FUSABLE[f] for f in fuses),
                   sources=tuple(sources), **counts)


@lru_cache(maxsize=1)
def _runtimes() -> dict[str, Runtime]:
    path = builtin_data_dir() / "efficiency" / "overheads.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("runtimes"), dict):
        raise CatalogError(f"{path}: expected a mapping 'runtimes'")
    return {rid: _parse(rid, entry, path) for rid, entry in data["runtimes"].items()}


def runtime_names() -> list[str]:
    return list(_runtimes())


def get_runtime(name: str) -> Runtime:
    runtimes = _runtimes()
    if name not in runtimes:
        raise ConfigError(f"runtime {name!r} is unknown: expected one of {', '.join(runtimes)}")
    return runtimes[name]
