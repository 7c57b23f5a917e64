"""Per-op runtime overhead (data/efficiency/overheads.yaml): the third bound beside compute and memory.

A runtime fixes three things about the fixed cost of a forward pass:
- the host time per kernel (Python module call, dispatcher, launch) — on an asynchronous device the
  host queues kernel i+1 while kernel i runs, so an op takes max(compute, memory, host time): the GPU
  waits for the host only where the host is slower (small batches of small kernels);
- how many kernels run and what they move: fused runtimes (TensorRT, ONNX Runtime, inductor) fold norm
  and elementwise ops into the preceding matrix kernel, so those ops launch nothing and move no bytes of
  their own (inductor's separate pointwise epilogue reads and writes the matrix output once, after the
  matrix kernel: its time adds); autocast
  adds one weight-cast kernel per conv/linear call;
- one graph launch per forward where kernels are replayed from a captured graph (CUDA graphs).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from sizeup.errors import CatalogError, ConfigError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ledger import OpKind
from sizeup.price.efficiency import Efficiency, parse_entry
from sizeup.ranges import Range

__all__ = ["Runtime", "LAYOUTS", "runtime_names", "get_runtime", "apply_runtime", "epilogue_bytes", "ZERO"]

ZERO = Range(0.0, 0.0, 0.0)
_MATRIX = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION})
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


def _folded(runtime: Runtime, op) -> bool:
    """Whether `runtime` folds `op` into the matrix kernel before it. Elementwise ops go into the epilogue.
    Of the norms only an inference batch norm does: a per-channel affine map, folded into the conv's
    weights. Layer, RMS and group norms reduce over a whole row that one output tile does not hold, so
    they stay kernels of their own. TensorRT's BERT runs them as its SkipLayerNorm plugin, one kernel
    that also takes the residual add (TensorRT demo/BERT README, plugins)."""
    if op.kind not in runtime.fuses:
        return False
    return op.kind != OpKind.NORM or "batch_norm" in op.op or op.op.endswith("BatchNormalization")


def launches_under(runtime: Runtime, ledger, launches: list[float]) -> list[float]:
    """Kernels per op when `runtime` runs the ledger: fused kinds launch nothing of their own, matrix
    ops launch their casts and fused epilogue as extra kernels."""
    extra = runtime.casts_per_matrix_op + (runtime.epilogue_kernels_per_matrix_op if runtime.fuses else 0)
    out = []
    for o, n in zip(ledger.ops, launches):
        if n and _folded(runtime, o):
            out.append(0.0)
        elif n and o.kind in _MATRIX:
            out.append(n + extra * o.count)
        else:
            out.append(n)
    return out


def bytes_under(runtime: Runtime, ledger, moved: list[float]) -> list[float]:
    """Bytes through memory per op when `runtime` runs the ledger: a fused op works on the matrix
    kernel's output in registers and moves nothing of its own."""
    if not runtime.fuses:
        return moved
    return [0.0 if b and _folded(runtime, o) else b for o, b in zip(ledger.ops, moved)]


def epilogue_bytes(runtime: Runtime, ledger) -> list[float]:
    """Per op, the bytes of the kernels that run after it on their own: where the fusion is a separate
    epilogue kernel (inductor's pointwise kernel after an extern conv: batch norm, relu, add), that kernel
    reads and writes the matrix op's output once. It runs after the matrix kernel, not beside it, so its
    time adds to the op's (roofline `serial_bytes`) instead of overlapping its compute."""
    n = runtime.epilogue_kernels_per_matrix_op if runtime.fuses else 0
    return [2.0 * o.bytes_written * o.count * n if n and o.kind in _MATRIX else 0.0 for o in ledger.ops]


def apply_runtime(arrays, eff: Efficiency, runtime: Runtime | None, synchronous: bool):
    """(arrays, efficiency, fixed time per forward) under `runtime`; None leaves all as they are."""
    if runtime is None:
        return arrays, eff, ZERO
    import numpy as np

    launches = np.asarray(launches_under(runtime, arrays.ledger, list(arrays.launches)), dtype=float)
    moved = np.asarray(bytes_under(runtime, arrays.ledger, list(arrays.bytes)), dtype=float)
    serial = np.asarray(epilogue_bytes(runtime, arrays.ledger), dtype=float)
    arrays = replace(arrays, launches=launches, bytes=moved, serial_bytes=serial, groups={})
    per_op = runtime.per_op_on(synchronous)
    if per_op is not None:
        eff = replace(eff, overhead_s=per_op, sources=eff.sources + runtime.sources,
                      origin=f"{eff.origin}; per-op overhead of {runtime.id}")
    return arrays, eff, runtime.per_graph_s
