"""`count_flops` / `count_onnx`: FLOPs, bytes and peak memory of a PyTorch model (traced on fake tensors) or
an ONNX graph, as `sizeup flops`; and `report_at`, the cost report of a measured target at one batch size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError
from sizeup.ingest.trace_inputs import InputSpec, parse_input_specs, parse_shape
from sizeup.ledger import CostTotals, Ledger, MemoryPeak, OpKind, Phase, scope_depth

__all__ = ["FlopsReport", "ParsedInput", "count_flops", "count_onnx", "parse_input_specs", "parse_shape", "report_at"]

ParsedInput = InputSpec
"""One model input (shape, dtype, name): what `parse_input_specs` returns and `count_flops` takes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FlopsReport:
    """FLOPs, bytes and peak memory of one traced model."""

    ledger: Ledger
    mode: str
    dtype: str
    memory: MemoryPeak
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total(self) -> CostTotals:
        return self.ledger.totals()

    def scopes(self, depth: int | None = None) -> dict[str, CostTotals]:
        return self.ledger.by_scope(depth)

    def to_dict(self, depth: int | None = None) -> dict[str, Any]:
        total = self.total
        scopes = []
        for scope, t in self.scopes(depth).items():
            row = {"scope": scope, "depth": scope_depth(scope), **t.to_dict()}
            row["share_of_flops"] = t.flops / total.flops if total.flops else 0.0
            scopes.append(row)
        return {
            "model": self.ledger.name,
            "mode": self.mode,
            "dtype": self.dtype,
            "total": total.to_dict(),
            "by_phase": {k: v.to_dict() for k, v in self.ledger.by_phase().items()},
            "by_kind": {k: v.to_dict() for k, v in self.ledger.by_kind().items()},
            "scopes": scopes,
            "ops": [o.to_dict() for o in self.ledger.ops if o.kind != OpKind.VIEW],
            "uncounted_ops": self.ledger.uncounted_ops(),
            "memory": self.memory.to_dict(),
            "assumptions": list(self.assumptions),
        }


def count_flops(
    target: str | Callable[[], Any],
    inputs: Sequence[ParsedInput],
    *,
    dtype: str = "fp32",
    mode: str = "inference",
    optimizer: str = "adamw",
) -> FlopsReport:
    """Trace a PyTorch model (a "file.py:factory" / "module:factory" target or a factory) on fake
    tensors and count every op. `mode`: inference, backward or train (forward + backward + optimizer)."""
    from sizeup.ingest.target import load_factory
    from sizeup.ingest.torch_trace import TraceMode, trace_module

    try:
        trace_mode = TraceMode(mode)
    except ValueError:
        raise ConfigError(f"mode {mode!r}: expected inference, backward or train") from None
    factory = load_factory(target) if isinstance(target, str) else target
    ledger = trace_module(factory, list(inputs), dtype=dtype, mode=trace_mode, optimizer=optimizer,
                          name=target.rpartition(":")[2] if isinstance(target, str) else None)
    phases = [Phase.FORWARD] if trace_mode == TraceMode.INFERENCE else None
    return FlopsReport(ledger=ledger, mode=trace_mode.value, dtype=dtype, memory=ledger.memory_peak(phases),
                       assumptions=tuple(ledger.assumptions))


def count_onnx(path: str, *, dims: dict[str, int] | None = None) -> FlopsReport:
    """Read an ONNX graph (inference only) and cost every node; `dims` binds its symbolic input sizes,
    e.g. {"batch": 8}. The precision is the graph's own (shown as the dtype doing most FLOPs)."""
    from sizeup.ingest.onnx_graph import onnx_ledger

    return _onnx_report(onnx_ledger(path, dims=dims, name=Path(path).stem))


def _onnx_report(ledger: Ledger) -> FlopsReport:
    """An ONNX graph's report: inference only, at the dtype doing most FLOPs."""
    by_dtype: dict[str, int] = {}
    for o in ledger.ops:
        by_dtype[o.dtype] = by_dtype.get(o.dtype, 0) + o.flops
    dtype = max(by_dtype, key=by_dtype.__getitem__) if by_dtype else "fp32"
    return FlopsReport(ledger=ledger, mode="inference", dtype=str(dtype), memory=ledger.memory_peak([Phase.FORWARD]),
                       assumptions=tuple(ledger.assumptions))


def report_at(target: str, config: dict, batch: int, train: bool = False) -> FlopsReport:
    """The cost report of a measured target at one batch size (`config` as the run store keeps it): its ledger
    (measure.ledgers.run_ledger: the torch trace at the batch, or the ONNX graph with its batch bound) with the
    peak memory of what it timed."""
    from sizeup.measure.ledgers import run_ledger

    ledger = run_ledger(target, config, batch, train)
    if config.get("onnx"):
        return _onnx_report(ledger)
    mode = "train" if train else "inference"
    return FlopsReport(ledger=ledger, mode=mode, dtype=config.get("dtype", "fp32"),
                       memory=ledger.memory_peak(None if train else [Phase.FORWARD]),
                       assumptions=tuple(ledger.assumptions))
