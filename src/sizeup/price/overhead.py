"""Per-op runtime overhead (data/efficiency/overheads.yaml): the third bound beside compute and memory.

A runtime fixes three things about the fixed cost of a forward pass:
- the host time per kernel (Python module call, dispatcher, launch) — on an asynchronous device the
  host queues kernel i+1 while kernel i runs, so an op takes max(compute, memory, host time): the GPU
  waits for the host only where the host is slower (small batches of small kernels);
- how many kernels run and what they move: fused runtimes (TensorRT, ONNX Runtime, inductor) fold norm
  and elementwise ops into the preceding matrix kernel, so those ops launch nothing and move no bytes of
  their own (inductor's separate pointwise epilogue reads and writes the matrix output once); autocast
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

__all__ = ["Runtime", "runtime_names", "get_runtime", "apply_runtime", "ZERO"]

ZERO = Range(0.0, 0.0, 0.0)
_MATRIX = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION})
_FUSABLE = {k.value: k for k in (OpKind.NORM, OpKind.ELEMENTWISE)}
_KEYS = {"name", "per_op_s", "per_op_s_cpu", "per_graph_s", "fuses", "casts_per_matrix_op",
         "epilogue_kernels_per_matrix_op"}


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
    return Runtime(id=rid, name=str(data.get("name") or rid), per_op_s=per_op, per_op_s_cpu=cpu,
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
    kernel's output in registers and moves nothing of its own; where the fusion runs as a separate
    epilogue kernel (inductor's pointwise kernel after an extern conv), that kernel reads and writes the
    matrix op's output once."""
    if not runtime.fuses:
        return moved
    out = []
    for o, b in zip(ledger.ops, moved):
        if b and _folded(runtime, o):
            out.append(0.0)
        elif o.kind in _MATRIX and runtime.epilogue_kernels_per_matrix_op:
            out.append(b + 2.0 * o.bytes_written * o.count * runtime.epilogue_kernels_per_matrix_op)
        else:
            out.append(b)
    return out


def apply_runtime(arrays, eff: Efficiency, runtime: Runtime | None, synchronous: bool):
    """(arrays, efficiency, fixed time per forward) under `runtime`; None leaves all as they are."""
    if runtime is None:
        return arrays, eff, ZERO
    import numpy as np

    launches = np.asarray(launches_under(runtime, arrays.ledger, list(arrays.launches)), dtype=float)
    moved = np.asarray(bytes_under(runtime, arrays.ledger, list(arrays.bytes)), dtype=float)
    arrays = replace(arrays, launches=launches, bytes=moved, groups={})
    per_op = runtime.per_op_on(synchronous)
    if per_op is not None:
        eff = replace(eff, overhead_s=per_op, sources=eff.sources + runtime.sources,
                      origin=f"{eff.origin}; per-op overhead of {runtime.id}")
    return arrays, eff, runtime.per_graph_s
