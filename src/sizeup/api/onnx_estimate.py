"""`estimate("MODEL.onnx", device=...)`: memory and latency of one inference of an ONNX graph, from its own
ledger, at a batch size and over a batch sweep."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sizeup.errors import ConfigError

if TYPE_CHECKING:
    from sizeup.api.flops import FlopsReport
    from sizeup.hardware.schema import DeviceSpec
    from sizeup.ranges import Range

__all__ = ["OnnxEstimate", "OnnxPoint", "estimate_onnx", "onnx_point"]

ONNX_MAX_AUTO_BATCH = 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class OnnxPoint:
    """One inference of the graph at `batch`."""

    batch: int
    report: FlopsReport
    roofline: Any
    """The priced ledger (`sizeup.price.roofline.Roofline`)."""
    usable: Range
    """Usable memory on the device."""
    fits: bool
    bound: str
    latency_s: Range
    """The calibrated range (price/ranges_table.traced)."""
    throughput_per_s: Range
    backing: Any = None
    """What backs the latency's range (price/ranges_table.Backing)."""

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "peak_memory_bytes": self.report.memory.peak_bytes, "fits": self.fits,
                "latency_s": self.latency_s.to_dict(), "throughput_per_s": self.throughput_per_s.to_dict(),
                "bound": self.bound, "backing": None if self.backing is None else self.backing.to_dict()}


@dataclass(frozen=True, slots=True, kw_only=True)
class OnnxEstimate:
    model: str
    device: DeviceSpec
    dims: dict[str, int]
    batch_dim: str | None
    point: OnnxPoint
    batch_sweep: tuple[OnnxPoint, ...] = ()
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    @property
    def fits(self) -> bool:
        return self.point.fits

    def to_dict(self) -> dict[str, Any]:
        report = self.point.report
        return {"model": report.ledger.name, "device": self.device.id, "dims": self.dims, "batch_dim": self.batch_dim,
                **self.point.to_dict(), "flops": report.total.flops, "params": report.total.params,
                "memory": report.memory.to_dict() | {"usable_bytes": self.point.usable.to_dict()},
                "batch_sweep": [p.to_dict() for p in self.batch_sweep], "assumptions": list(self.assumptions)}


def onnx_point(path: str, device: DeviceSpec, dims: dict[str, int], batch_name: str | None, batch: int,
               runtime=None) -> OnnxPoint:
    """Memory and latency of one inference of the ONNX graph at `batch` on `device`."""
    from sizeup.api.flops import count_onnx
    from sizeup.hardware.usable import usable_memory
    from sizeup.price.ranges_table import traced
    from sizeup.price.roofline import price

    report = count_onnx(path, dims={**dims, batch_name: batch} if batch_name else dims)
    roof = price(report.ledger, device, runtime=runtime)
    latency, backing = traced(roof.total_s, roof.runtime, device)
    usable = usable_memory(device).bytes
    parts = {b: sum(v["time_by_bound_s"][b] for v in roof.by("kind").values()) for b in ("compute", "memory",
                                                                                        "overhead")}
    return OnnxPoint(batch=batch, report=report, roofline=roof, usable=usable,
                     fits=report.memory.peak_bytes <= usable.typical, bound=max(parts, key=parts.get),
                     latency_s=latency, throughput_per_s=latency.inverse(batch), backing=backing)


def estimate_onnx(path: str, device: DeviceSpec, o, notes: list[str]) -> OnnxEstimate:
    """The graph at `o.batch` (`o`: the estimate's options; its symbolic batch dimension bound), and over
    `o.sweep`: powers of two while they fit, or the given batch sizes."""
    from sizeup.ingest.onnx_graph import batch_dim

    if o.gpus != 1:
        raise ConfigError(f"--gpus {o.gpus}: an ONNX graph is estimated on one device")
    dims = dict(o.dims or {})
    name = batch_dim(path)
    if name in dims:
        raise ConfigError(f"--dim {name}=…: '{name}' is the batch dimension of {path}: use --batch")
    runtime = None
    if o.runtime:
        from sizeup.engines.runtimes import get_runtime

        runtime = get_runtime(o.runtime)
    if name is None and (o.batch != 1 or o.sweep):
        raise ConfigError(f"{path} has a fixed batch (its first input's leading dimension is not symbolic): "
                          "--batch and --sweep do not apply")
    point = onnx_point(path, device, dims, name, o.batch, runtime)
    sweep = []
    if o.sweep:
        auto = o.sweep is True
        batches = [2 ** k for k in range(ONNX_MAX_AUTO_BATCH.bit_length())] if auto else list(o.sweep)
        for b in batches:
            p = onnx_point(path, device, dims, name, b, runtime)
            sweep.append(p)
            if auto and not p.fits:
                break
    report, usable = point.report, point.usable
    assumptions = [*notes, *report.assumptions, *point.roofline.notes,
                   "memory: parameters and live tensors of one inference (ideal allocator); the runtime's own "
                   "arena and workspace are not modelled",
                   f"usable memory: {device.name} after the framework's reserve ({usable.typical / 2**30:.1f} GiB)"]
    return OnnxEstimate(model=report.ledger.name, device=device, dims=dims, batch_dim=name, point=point,
                        batch_sweep=tuple(sweep), assumptions=tuple(assumptions))
