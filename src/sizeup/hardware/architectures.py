"""The architecture table (data/architectures.yaml) and the peaks derived from it.

A device file that publishes no peak for a precision gets one derived: from a published peak of the
same unit (tensor or vector) times the architecture's rate ratio when there is one, else as
    compute_units x boost clock x the architecture's dense rate per unit per clock,
marked `derived` (DeviceSpec.derived_peaks names the method) and priced with a wider efficiency
range (DeviceSpec.derived_range). A published figure always wins over a derived one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sizeup.errors import CatalogError
from sizeup.hardware.schema import FLOAT_PRECISIONS, PRECISIONS, DeviceSpec, _Fields

__all__ = ["Architecture", "ArchitectureTable", "parse_architectures", "derivable_peaks", "hybrid_peaks",
           "complete_device"]

_CLOCK_SOURCES = (("vector", "fp32"), ("vector", "fp16"), ("tensor", "bf16"), ("tensor", "fp16"), ("tensor", "int8"),
                  ("tensor", "tf32"), ("tensor", "fp8"))
"""Published peaks a clock may be implied from, in order of trust (no fp64)."""
_RATIO_REFERENCES = ("bf16", "fp16", "fp32", "int8", "tf32", "fp8")
"""A published peak that missing ones of the same unit are scaled from, in order of preference."""

_ARCH_KEYS = {"vendor", "unit", "tensor", "vector", "fp16_acc16", "consumer_marker", "halved_on_consumer",
              "typical_clock_mhz", "notes", "source", "retrieved"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Architecture:
    id: str
    vendor: str
    unit: str
    tensor: dict[str, float]
    """Dense matrix-unit FLOPs (or int ops) per unit per clock, FP32 accumulate at the full rate."""
    vector: dict[str, float]
    fp16_acc16: float | None = None
    consumer_marker: str | None = None
    """A word of the device name that marks a consumer part (GeForce): FP32-accumulate rates halve."""
    halved_on_consumer: tuple[str, ...] = ()
    typical_clock_hz: float | None = None
    source: str
    retrieved: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "vendor": self.vendor, "unit": self.unit, "tensor": dict(self.tensor),
                "vector": dict(self.vector), "fp16_acc16": self.fp16_acc16, "consumer_marker": self.consumer_marker,
                "halved_on_consumer": list(self.halved_on_consumer), "typical_clock_hz": self.typical_clock_hz,
                "source": self.source, "retrieved": self.retrieved}


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchitectureTable:
    architectures: dict[str, Architecture]
    device_clock_range: tuple[float, float]
    """(low, high) multipliers on the efficiency range of a peak derived with the device's own clock."""
    architecture_clock_range: tuple[float, float]
    """The same when the clock comes from the architecture's typical_clock_mhz."""

    def get(self, arch_id: str, path: str) -> Architecture:
        if arch_id not in self.architectures:
            raise CatalogError(f"{path}: field 'architecture' = {arch_id!r}: expected one of "
                               f"{', '.join(sorted(self.architectures))}")
        return self.architectures[arch_id]


def _rates(f: _Fields, key: str, allowed: tuple[str, ...]) -> dict[str, float]:
    sub = f.mapping(key)
    if sub is None:
        return {}
    sub.check_keys(set(allowed))
    return {k: sub.number(k) for k in allowed if k in sub.data}


def _range(f: _Fields, key: str) -> tuple[float, float]:
    sub = f.mapping(key)
    if sub is None:
        raise CatalogError(f"{f.path}: missing field '{f.prefix}{key}'")
    sub.check_keys({"low", "high"})
    low, high = sub.number("low"), sub.number("high")
    if not low <= 1.0 <= high:
        raise sub.fail("low", "low <= 1 <= high")
    return low, high


def parse_architectures(data: Any, path: str | Path) -> ArchitectureTable:
    path = str(path)
    f = _Fields(data, path)
    f.check_keys({"derivation_range", "architectures"})
    dr = f.mapping("derivation_range")
    if dr is None:
        raise CatalogError(f"{path}: missing field 'derivation_range'")
    dr.check_keys({"device_clock", "architecture_clock", "source", "retrieved"})
    dr.text("source")
    dr.date("retrieved")
    table = f.mapping("architectures")
    if table is None:
        raise CatalogError(f"{path}: missing field 'architectures'")
    out: dict[str, Architecture] = {}
    for arch_id in table.data:
        a = table.mapping(arch_id)
        a.check_keys(_ARCH_KEYS)
        halved = a.strings("halved_on_consumer")
        bad = [p for p in halved if p not in FLOAT_PRECISIONS]
        if bad:
            raise a.fail("halved_on_consumer", f"precisions among {', '.join(FLOAT_PRECISIONS)}")
        clock = a.number("typical_clock_mhz", required=False)
        out[str(arch_id)] = Architecture(
            id=str(arch_id), vendor=a.text("vendor"), unit=a.text("unit"),
            tensor=_rates(a, "tensor", PRECISIONS), vector=_rates(a, "vector", FLOAT_PRECISIONS),
            fp16_acc16=a.number("fp16_acc16", required=False),
            consumer_marker=a.text("consumer_marker", required=False), halved_on_consumer=halved,
            typical_clock_hz=None if clock is None else clock * 1e6,
            source=a.text("source"), retrieved=a.date("retrieved"))
    return ArchitectureTable(architectures=out, device_clock_range=_range(dr, "device_clock"),
                             architecture_clock_range=_range(dr, "architecture_clock"))


def _is_consumer(device: DeviceSpec, arch: Architecture) -> bool:
    if device.fp32_accumulate is not None:
        return device.fp32_accumulate == "half"
    marker = arch.consumer_marker
    return bool(marker) and marker.lower() in device.name.lower()


def derivable_peaks(device: DeviceSpec, arch: Architecture) -> tuple[dict[str, tuple[float, str]], str | None]:
    """Every peak the table gives for `device`, published or not: {"tensor.fp16": (FLOP/s, method)},
    and which clock was used: "device" (its boost_clock_mhz), "implied" (by one of its published peaks),
    "architecture" (the table's typical clock), or None when nothing is derivable."""
    units = device.compute_units
    if not units:
        return {}, None
    consumer = _is_consumer(device, arch)

    def rate_of(table: str, precision: str, rate: float) -> float:
        if table != "tensor":
            return rate
        half = consumer and precision in arch.halved_on_consumer
        return rate * (0.5 if half else 1.0) * device.tensor_rate_scale

    clock, basis = device.boost_clock_hz, "device"
    clock_text = f"{(clock or 0) / 1e6:,.0f} MHz boost"
    if clock is None:  # the clock a published peak implies (e.g. a Xeon's AMX figure at its base clock)
        # vector fp32 first: its rate does not depend on the accumulate mode or a limited matrix rate;
        # never fp64, which export-limited parts cut far below the die's rate (H20: 1 TF)
        for table, precision in _CLOCK_SOURCES:
            rates = arch.tensor if table == "tensor" else arch.vector
            published = device.peak_flops_per_s if table == "tensor" else device.vector_flops_per_s
            if precision in rates and precision in published:
                clock, basis = published[precision] / (units * rate_of(table, precision, rates[precision])), "implied"
                clock_text = f"{clock / 1e6:,.0f} MHz (the clock its published {table} {precision} peak implies)"
                break
    if clock is None and arch.typical_clock_hz is not None:
        clock, basis = arch.typical_clock_hz, "architecture"
        clock_text = f"{clock / 1e6:,.0f} MHz (typical {arch.id} clock: the device file gives none)"
    if not clock:
        return {}, None
    unit_name = device.compute_unit_name or arch.unit
    out: dict[str, tuple[float, str]] = {}
    has_fp64 = "fp64" in device.peak_flops_per_s or "fp64" in device.vector_flops_per_s
    for table, rates in (("tensor", arch.tensor), ("vector", arch.vector)):
        for precision, rate in rates.items():
            if precision == "fp64" and has_fp64 and precision not in (
                    device.peak_flops_per_s if table == "tensor" else device.vector_flops_per_s):
                continue  # a part that publishes one fp64 figure has its fp64 rate set by product class
            effective = rate_of(table, precision, rate)
            # a power-capped card's low-precision tensor peaks are rated at its `rated_clock_mhz`, below the boost
            # clock (the H100 NVL's FP64 tensor 60 TF is at the boost clock)
            at, at_text = ((device.rated_clock_hz, f"{device.rated_clock_hz / 1e6:,.0f} MHz rated")
                           if table == "tensor" and precision != "fp64" and basis == "device" and device.rated_clock_hz
                           else (clock, clock_text))
            half = table == "tensor" and consumer and precision in arch.halved_on_consumer
            limits = ([", halved: FP32 accumulate on a consumer part"] if half else []) + (
                [f", x{device.tensor_rate_scale:g}: this part's limited matrix rate"]
                if table == "tensor" and device.tensor_rate_scale != 1 else [])
            value = units * at * effective
            method = (f"derived: {units} {unit_name} x {at_text} x {rate:g} {precision} FLOPs per "
                      f"{unit_name} per clock ({arch.id}{''.join(limits)})")
            out[f"{table}.{precision}"] = (value, method)
    if arch.fp16_acc16 is not None and consumer:
        value = units * clock * arch.fp16_acc16 * device.tensor_rate_scale
        out["fp16_acc16"] = (value, f"derived: {units} {unit_name} x {clock_text} x {arch.fp16_acc16:g} "
                                    f"fp16 FLOPs with fp16 accumulate per {unit_name} per clock ({arch.id})")
    return out, basis


def _scaled_from_published(device: DeviceSpec, arch: Architecture,
                           peaks: dict[str, tuple[float, str]]) -> dict[str, tuple[float, str]]:
    """Where the file publishes a peak of the same unit (tensor or vector), a missing one is that figure
    times the architecture's rate ratio: robust to the clock and to parts whose matrix rate is cut
    (H20, L20) in a way the clock product is not."""
    out = dict(peaks)
    consumer = _is_consumer(device, arch)
    for unit, rates, published in (("tensor", arch.tensor, device.peak_flops_per_s),
                                   ("vector", arch.vector, device.vector_flops_per_s)):
        ref = next((p for p in _RATIO_REFERENCES if p in published and p in rates), None)
        if ref is None:
            continue

        def eff(precision: str) -> float:
            half = unit == "tensor" and consumer and precision in arch.halved_on_consumer
            return rates[precision] * (0.5 if half else 1.0)

        for precision in rates:
            if precision in published or precision == "fp64":  # fp64 is cut per product class, not scaled
                continue
            ratio = eff(precision) / eff(ref)
            out[f"{unit}.{precision}"] = (published[ref] * ratio, (
                f"derived: its published {unit} {ref} peak {published[ref] / 1e12:,.1f} T x {ratio:g} "
                f"({arch.id}: {eff(precision):g} {precision} vs {eff(ref):g} {ref} per {arch.unit} per clock)"))
        if unit == "tensor" and arch.fp16_acc16 is not None and consumer and device.fp16_acc16_flops_per_s is None:
            ratio = arch.fp16_acc16 / eff(ref)
            out["fp16_acc16"] = (published[ref] * ratio, (
                f"derived: its published tensor {ref} peak {published[ref] / 1e12:,.1f} T x {ratio:g} "
                f"({arch.id}: fp16 with fp16 accumulate at {arch.fp16_acc16:g} per {arch.unit} per clock)"))
    return out


def hybrid_peaks(device: DeviceSpec, table: ArchitectureTable) -> dict[str, tuple[float, str]]:
    """A hybrid CPU's vector and matrix peaks: the sum over its core types (P- and E-cores) of
    cores x all-core clock x that core's rate, for each precision every core type has."""
    archs = [table.get(arch_id, device.path) for _, arch_id, _, _ in device.core_types]
    out: dict[str, tuple[float, str]] = {}
    for unit in ("tensor", "vector"):
        rate_sets = [a.tensor if unit == "tensor" else a.vector for a in archs]
        common = [p for p in rate_sets[0] if all(p in r for r in rate_sets)]
        for precision in common:
            value, parts = 0.0, []
            for (name, arch_id, cores, clock), rates in zip(device.core_types, rate_sets):
                value += cores * clock * rates[precision]
                parts.append(f"{cores} {name} x {clock / 1e6:,.0f} MHz all-core x {rates[precision]:g} "
                             f"({arch_id})")
            out[f"{unit}.{precision}"] = (value, f"derived: sum over core types of {' + '.join(parts)} "
                                                 f"{precision} FLOPs per core per clock")
    return out


def complete_device(device: DeviceSpec, table: ArchitectureTable) -> DeviceSpec:
    """`device` with every peak its file leaves out derived from its architecture (when it names one),
    or for a hybrid CPU from its core types (always with the wider architecture-clock range: all-core
    clocks under sustained vector load depend on the board's power limits)."""
    if device.core_types:
        peaks = hybrid_peaks(device, table)
        tensor, vector = dict(device.peak_flops_per_s), dict(device.vector_flops_per_s)
        derived: dict[str, str] = {}
        for key, (value, method) in peaks.items():
            kind, _, precision = key.partition(".")
            target = tensor if kind == "tensor" else vector
            if precision not in target:
                target[precision] = value
                derived[key] = method
        if not derived:
            return device
        return replace(device, peak_flops_per_s=tensor, vector_flops_per_s=vector, derived_peaks=derived,
                       derived_range=table.architecture_clock_range)
    if device.architecture is None:
        return device
    arch = table.get(device.architecture, device.path)
    peaks, basis = derivable_peaks(device, arch)
    peaks = _scaled_from_published(device, arch, peaks)
    if not peaks:
        return device
    tensor, vector = dict(device.peak_flops_per_s), dict(device.vector_flops_per_s)
    acc16 = device.fp16_acc16_flops_per_s
    derived: dict[str, str] = {}
    for key, (value, method) in peaks.items():
        kind, _, precision = key.partition(".")
        if kind == "tensor" and precision not in tensor:
            tensor[precision] = value
        elif kind == "vector" and precision not in vector:
            vector[precision] = value
        elif key == "fp16_acc16" and acc16 is None:
            acc16 = value
        else:
            continue
        derived[key] = method
    if not derived:
        return device
    widen = table.architecture_clock_range if basis == "architecture" else table.device_clock_range
    return replace(device, peak_flops_per_s=tensor, vector_flops_per_s=vector, fp16_acc16_flops_per_s=acc16,
                   derived_peaks=derived, derived_range=widen)
