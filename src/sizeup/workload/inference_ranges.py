"""The calibrated ranges of an inference estimate (price/ranges_table.py): prefill (TTFT) and the tower's pass,
decode, the end-to-end throughput of the batch and the memory total, each around its typical value as the
published rows of its kind, engine and device class fell out of sample, with what backs it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.price.ranges_table import (Backing, backing, budget, calibrated_amount, calibrated_rate, calibrated_time,
                                       engine_key, peak_derived, release_of)
from sizeup.ranges import Range

__all__ = ["EstimateRanges", "calibrate_inference"]
# Bounds kept: the fast end of a time (and high end of a rate) never beyond the efficiency tables' best case, the low
# end of a memory total never below the weights and KV cache it counts.


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


def _no_faster(calibrated: Range, model: Range) -> Range:
    """A time range whose fast end is no faster than the efficiency tables' best case (`model.low`): the calibrated
    ratios widen the slow side freely, never past what the device's peaks allow."""
    return Range(max(calibrated.low, model.low), calibrated.typical, calibrated.high)


def _phase(phase, b: Backing):
    if phase is None or not phase.compute_priced:
        return phase
    latency = _no_faster(calibrated_time(phase.latency_s.typical, b), phase.latency_s)
    tokens = phase.tokens_per_s.typical * phase.latency_s.typical
    return replace(phase, latency_s=latency, tokens_per_s=latency.inverse(tokens))


def calibrate_inference(result):
    """`result` (an InferenceEstimate) with every predicted figure's range from the calibrated table."""
    from sizeup.hardware.segments import segment_of

    cfg, device = result.config, result.device
    named = result.execution.name if result.execution is not None else cfg.engine  # the canonical name
    key, cls = engine_key(named, cfg.backend, device), segment_of(device)

    def of(kind: str) -> Backing:
        return backing(kind, engine=key, device_class=cls, model_type=result.arch.model_type,
                       derived_peak=peak_derived(device), release=release_of(cfg.engine))

    preallocated = result.memory.max_concurrent_sequences is not None  # the engine takes a budget up front
    figures = {"prefill": of("prefill"),
               "memory": budget("memory", key, cls) if preallocated else of("memory")}
    prefill = _phase(result.prefill, figures["prefill"])
    tower = result.tower
    if tower is not None and tower.compute_priced:
        tower = replace(tower, latency_s=_no_faster(calibrated_time(tower.latency_s.typical, figures["prefill"]),
                                                    tower.latency_s),
                        decoder_latency_s=None if tower.decoder_latency_s is None else
                        _no_faster(calibrated_time(tower.decoder_latency_s.typical, figures["prefill"]),
                                   tower.decoder_latency_s))
    decode, throughput = result.decode, None
    if decode is not None:
        figures["decode"] = of("decode")
        decode = _phase(decode, figures["decode"])
        if decode.compute_priced and prefill.compute_priced and cfg.output > 0:
            figures["throughput"] = of("serving_throughput")
            tokens = cfg.batch * cfg.output
            fastest = tokens / (prefill.latency_s.low + cfg.output * decode.latency_s.low)
            rate = calibrated_rate(tokens / (prefill.latency_s.typical + cfg.output * decode.latency_s.typical),
                                   figures["throughput"])
            throughput = Range(rate.low, rate.typical, max(rate.typical, min(rate.high, fastest)))
    m = result.memory
    total = calibrated_amount(float(m.total_bytes), figures["memory"])
    counted = min(float(m.weights_bytes + m.kv_cache_bytes), total.typical)  # no less than what is counted
    ranges = EstimateRanges(memory_total_bytes=Range(max(total.low, counted), total.typical, total.high),
                            throughput_tokens_per_s=throughput, backing=figures)
    return replace(result, prefill=prefill, decode=decode, tower=tower, ranges=ranges)
