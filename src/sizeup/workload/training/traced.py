"""A training step of a traced torch module, priced: the trace's own peak memory by category and the
roofline time of its forward, backward and optimizer phases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sizeup.hardware.schema import DeviceSpec
from sizeup.hardware.usable import usable_memory
from sizeup.price.roofline import price
from sizeup.ranges import Range

__all__ = ["TracedTrainingEstimate", "estimate_traced_training"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TracedTrainingEstimate:
    """A training step of a traced torch module: the exact saved-tensor bytes from the trace, priced."""

    name: str
    device: DeviceSpec
    memory_peak_bytes: int
    memory_by_category: dict[str, int]
    usable_bytes: Range
    step_s: Range
    samples_per_step: int
    by_phase_s: dict[str, float]
    assumptions: tuple[str, ...]

    @property
    def fits(self) -> bool:
        return self.memory_peak_bytes <= self.usable_bytes.typical

    def to_dict(self) -> dict[str, Any]:
        return {"model": {"name": self.name}, "device": {"id": self.device.id, "name": self.device.name},
                "memory": {"per_gpu": {"total_bytes": self.memory_peak_bytes, "by_category": self.memory_by_category,
                                       "usable_bytes": self.usable_bytes.typical}},
                "fits": self.fits, "step": {"latency_s": self.step_s.to_dict(), "by_phase_s": self.by_phase_s},
                "throughput": {"samples_per_s": self.step_s.inverse(self.samples_per_step).to_dict()},
                "assumptions": list(self.assumptions)}


def estimate_traced_training(ledger, device: DeviceSpec, samples_per_step: int) -> TracedTrainingEstimate:
    """Price a traced training ledger (forward, backward and optimizer phases) on `device`; its peak
    memory is the trace's own, by category (parameters, gradients, optimizer state, activations…)."""
    peak = ledger.memory_peak()
    roof = price(ledger, device)
    phases = {k: v["time_s"].typical for k, v in roof.by("phase").items()}
    return TracedTrainingEstimate(name=ledger.name, device=device, memory_peak_bytes=peak.peak_bytes,
                                  memory_by_category=dict(peak.by_category), usable_bytes=usable_memory(device).bytes,
                                  step_s=roof.total_s, samples_per_step=samples_per_step, by_phase_s=phases,
                                  assumptions=tuple(ledger.assumptions) + tuple(roof.notes))
