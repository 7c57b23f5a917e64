"""The calibrated ranges of an inference estimate (price/ranges_table.py): prefill (TTFT) and the tower's pass,
decode, the end-to-end throughput of the batch and the memory total, each around its typical value as the
published rows of its kind, engine and device class fell out of sample, with what backs it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.price.ranges_table import (Backing, backing, budget, calibrated_amount, calibrated_rate, calibrated_time,
                                       engine_key, peak_derived)
from sizeup.ranges import Range

__all__ = ["EstimateRanges", "calibrate_inference"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EstimateRanges:
    memory_total_bytes: Range
    """The memory total per GPU as a range (memory.total_bytes stays its typical value)."""
    throughput_tokens_per_s: Range | None
    """Generated tokens per second of the batch end to end: batch x output / (TTFT + output x TPOT)."""
    backing: dict[str, Backing] = field(default_factory=dict)

    def update(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` (an estimate's to_dict) with the ranges and their backing added; nothing renamed."""
        data["memory"]["total_range_bytes"] = self.memory_total_bytes.to_dict()
        data["throughput"] = None if self.throughput_tokens_per_s is None else {
            "tokens_per_s": self.throughput_tokens_per_s.to_dict(),
            "basis": "static batch end to end: batch x output tokens / (TTFT + output x TPOT)"}
        data["backing"] = {figure: b.to_dict() for figure, b in self.backing.items()}
        return data

    def lines(self) -> list[str]:
        return [f"{figure}: {b.text}" for figure, b in self.backing.items()]


def _phase(phase, b: Backing):
    if phase is None or not phase.compute_priced:
        return phase
    return replace(phase, latency_s=calibrated_time(phase.latency_s.typical, b),
                   tokens_per_s=calibrated_rate(phase.tokens_per_s.typical, b))


def calibrate_inference(result):
    """`result` (an InferenceEstimate) with every predicted figure's range from the calibrated table."""
    from sizeup.hardware.segments import segment_of

    cfg, device = result.config, result.device
    key, cls = engine_key(cfg.engine, cfg.backend, device), segment_of(device)

    def of(kind: str) -> Backing:
        return backing(kind, engine=key, device_class=cls, model_type=result.arch.model_type,
                       derived_peak=peak_derived(device))

    preallocated = result.memory.max_concurrent_sequences is not None  # the engine takes a budget up front
    figures = {"prefill": of("prefill"),
               "memory": budget("memory", key, cls) if preallocated else of("memory")}
    prefill = _phase(result.prefill, figures["prefill"])
    tower = result.tower
    if tower is not None and tower.compute_priced:
        tower = replace(tower, latency_s=calibrated_time(tower.latency_s.typical, figures["prefill"]),
                        decoder_latency_s=None if tower.decoder_latency_s is None else
                        calibrated_time(tower.decoder_latency_s.typical, figures["prefill"]))
    decode, throughput = result.decode, None
    if decode is not None:
        figures["decode"] = of("decode")
        decode = _phase(decode, figures["decode"])
        if decode.compute_priced and prefill.compute_priced and cfg.output > 0:
            figures["throughput"] = of("serving_throughput")
            typical = cfg.batch * cfg.output / (prefill.latency_s.typical + cfg.output * decode.latency_s.typical)
            throughput = calibrated_rate(typical, figures["throughput"])
    ranges = EstimateRanges(memory_total_bytes=calibrated_amount(float(result.memory.total_bytes), figures["memory"]),
                            throughput_tokens_per_s=throughput, backing=figures)
    return replace(result, prefill=prefill, decode=decode, tower=tower, ranges=ranges)
