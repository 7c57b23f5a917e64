"""Per-op runtime overhead (data/efficiency/overheads.yaml): the third bound beside compute and memory.

A runtime fixes three things about the fixed cost of a forward pass:
- the host time per kernel (Python module call, dispatcher, launch) — on an asynchronous device the
  host queues kernel i+1 while kernel i runs, so an op takes max(compute, memory, host time): the GPU
  waits for the host only where the host is slower (small batches of small kernels);
- how many kernels run and what they move: fused runtimes (inference compilers, ONNX Runtime, inductor) fold norm
  and elementwise ops into the preceding matrix kernel, so those ops launch nothing and move no bytes of
  their own (inductor's separate pointwise epilogue reads and writes the matrix output once, after the
  matrix kernel: its time adds); autocast
  adds one weight-cast kernel per conv/linear call;
- one graph launch per forward where kernels are replayed from a captured graph (CUDA graphs).
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.engines.runtimes import MATRIX_KINDS as _MATRIX, ZERO, Runtime
from sizeup.ledger import OpKind
from sizeup.price.efficiency import Efficiency

__all__ = ["launches_under", "bytes_under", "apply_runtime", "epilogue_bytes"]


def _folded(runtime: Runtime, op) -> bool:
    """Whether `runtime` folds `op` into the matrix kernel before it. Elementwise ops go into the epilogue.
    Of the norms only an inference batch norm does: a per-channel affine map, folded into the conv's
    weights. Layer, RMS and group norms reduce over a whole row that one output tile does not hold, so
    they stay kernels of their own. A compiled BERT runs them as a SkipLayerNorm plugin, one kernel
    that also takes the residual add (the inference compiler's demo/BERT README, plugins)."""
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
