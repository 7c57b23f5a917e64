"""Frozen value types for devices and offers, and the one place data-file units convert to SI.

Data files say `memory_gib: 80` or `dense_tflops: {bf16: 989.4}`; code sees bytes, bytes/s and
FLOP/s. A precision missing from a file is unsupported on that device, never extrapolated.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizeup.errors import CatalogError
from sizeup.units import GIB, GIGA, MIB, TERA

__all__ = ["DeviceSpec", "Interconnect", "Offer", "NETWORK_KINDS", "parse_device", "parse_offers", "parse_fx", "DEVICE_KINDS", "PRECISIONS",
           "FLOAT_PRECISIONS"]

DEVICE_KINDS = ("gpu", "tpu", "npu", "soc", "cpu")
FLOAT_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4")
INT_PRECISIONS = ("int8", "int4")
PRECISIONS = FLOAT_PRECISIONS + INT_PRECISIONS
INTERCONNECT_KINDS = ("nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "pcie", "infinity-fabric", "ici",
                      "roce", "infiniband", "ethernet", "none")
NETWORK_KINDS = ("infiniband", "roce", "efa", "tcpx", "ethernet")
"""Node-to-node networks an offer may state (`network_kind`): InfiniBand, RDMA over Converged Ethernet, AWS's
Elastic Fabric Adapter, Google's GPUDirect-TCPX, plain Ethernet."""
# PCIe x16 one-direction bandwidth per generation (GB/s, after encoding), PCI-SIG specifications.
PCIE_X16_GB_PER_S = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class Interconnect:
    kind: str
    bytes_per_s: float
    """Total bidirectional per-device bandwidth as the vendor quotes it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceSpec:
    id: str
    name: str
    vendor: str
    kind: str
    aliases: tuple[str, ...]
    memory_bytes: int
    memory_bandwidth_bytes_per_s: float
    peak_flops_per_s: dict[str, float]
    """Dense peak of the tensor/matrix unit per precision (int8/int4 in OP/s)."""
    vector_flops_per_s: dict[str, float]
    """Non-tensor (CUDA core / SIMD) peak per precision."""
    fp16_acc16_flops_per_s: float | None = None
    """GeForce: FP16 tensor rate with FP16 accumulate; peak_flops_per_s['fp16'] is the FP32-accumulate rate."""
    interconnect: Interconnect | None = None
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    tdp_w: float | None = None
    l2_bytes: int | None = None
    compute_units: int | None = None
    compute_unit_name: str | None = None
    boost_clock_hz: float | None = None
    sustained_clock_hz: float | None = None
    """The SM clock the part holds under sustained dense compute when its board power limit binds below
    the clock its peaks are rated at (measured, or derived by a stated method, with a source in the data
    file); compute peaks scale by it over the rated clock (price.rates.sustained_factor). None: the rated
    clock holds."""
    rated_clock_hz: float | None = None
    """The clock the vendor's dense tensor peaks imply when it is below the boost clock (a power-capped card
    such as the H100 NVL: 835.5 TF / (132 SMs x 4,096) = 1,545 MHz, boost 1,785): the clock a sustained clock
    is set against. None: the peaks are rated at the boost clock."""
    memory_type: str | None = None
    ecc_default: bool = False
    architecture: str | None = None
    """Key into data/architectures.yaml: the per-unit rates a peak is derived from when none is published."""
    memory_channels: int | None = None
    """CPUs: populated DRAM channels (bandwidth = channels x transfer rate x 8 bytes)."""
    variant_group: str | None = None
    """Devices sharing it are variants of one product (memory size, core count, power limit)."""
    preferred_variant: bool = False
    """The variant a bare product name resolves to (the one most bought for this work)."""
    fp32_accumulate: str | None = None
    """'half' or 'full': overrides the architecture's consumer-part rule for FP32-accumulate tensor rates."""
    tensor_rate_scale: float = 1.0
    """Fraction of the architecture's per-unit tensor rates this part runs at (China-market or
    datacenter SKUs whose matrix rate is limited below the die's, e.g. L20 and L40 at 0.5)."""
    host_cpu: str | None = None
    """Device id of the CPU of the same machine (an SoC's CPU cluster): where llama.cpp layers kept off
    the GPU run."""
    core_types: tuple[tuple[str, str, int, float], ...] = ()
    """Hybrid CPUs (P- and E-cores): (label, architecture id, cores, all-core clock in Hz) per core type;
    a missing peak is the sum over the types of cores x clock x the architecture's per-core rate."""
    derived_peaks: dict[str, str] = field(default_factory=dict)
    """Peaks not published but derived from the architecture table: {"tensor.fp16": method}."""
    derived_range: tuple[float, float] | None = None
    """(low, high) multipliers that widen the efficiency range of a derived peak."""
    variant_of: str | None = None
    """The catalog device this one was generated from (hardware.variants): one of its unified-memory sizes
    or power modes, with the base's figures changed as the data file's `memory_options` / `power_modes` say."""
    power_mode: str | None = None
    """The power mode the figures describe (Jetson nvpmodel name, e.g. 'MAXN_SUPER', '15W'), when the file
    lists power modes."""
    power_mode_clocks: dict[str, float] = field(default_factory=dict)
    """That mode's caps in SI units: budget_w, gpu_max_hz, gpu_units (active SMs), cpu_online, cpu_max_hz,
    emc_max_hz (the memory controller clock; bandwidth scales with it)."""
    resolved_as: str | None = None
    """Set by name resolution when a bare product name picked the preferred variant: what it chose and
    how to pick another (an assumption the estimate shows)."""
    notes: tuple[str, ...] = ()
    source: str
    retrieved: str
    path: str = ""

    @property
    def pcie_bytes_per_s(self) -> float | None:
        """One-direction PCIe bandwidth of the host link."""
        if self.pcie_gen is None or self.pcie_gen not in PCIE_X16_GB_PER_S:
            return None
        return PCIE_X16_GB_PER_S[self.pcie_gen] * GIGA * (self.pcie_lanes or 16) / 16

    @property
    def interconnect_bytes_per_s(self) -> float | None:
        if self.interconnect is not None:
            return self.interconnect.bytes_per_s
        return self.pcie_bytes_per_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "vendor": self.vendor, "kind": self.kind,
            "aliases": list(self.aliases), "memory_bytes": self.memory_bytes,
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
            "peak_flops_per_s": dict(self.peak_flops_per_s),
            "vector_flops_per_s": dict(self.vector_flops_per_s),
            "fp16_acc16_flops_per_s": self.fp16_acc16_flops_per_s,
            "interconnect": None if self.interconnect is None else
            {"kind": self.interconnect.kind, "bytes_per_s": self.interconnect.bytes_per_s},
            "interconnect_bytes_per_s": self.interconnect_bytes_per_s,
            "pcie_gen": self.pcie_gen, "pcie_lanes": self.pcie_lanes, "tdp_w": self.tdp_w,
            "l2_bytes": self.l2_bytes, "compute_units": self.compute_units,
            "compute_unit_name": self.compute_unit_name, "boost_clock_hz": self.boost_clock_hz,
            "sustained_clock_hz": self.sustained_clock_hz, "rated_clock_hz": self.rated_clock_hz,
            "memory_type": self.memory_type, "ecc_default": self.ecc_default,
            "architecture": self.architecture, "memory_channels": self.memory_channels,
            "variant_group": self.variant_group, "preferred_variant": self.preferred_variant,
            "fp32_accumulate": self.fp32_accumulate, "tensor_rate_scale": self.tensor_rate_scale,
            "host_cpu": self.host_cpu,
            "core_types": [{"name": n, "architecture": a, "cores": c, "all_core_clock_hz": h}
                           for n, a, c, h in self.core_types],
            "derived_peaks": dict(self.derived_peaks), "resolved_as": self.resolved_as,
            "variant_of": self.variant_of, "power_mode": self.power_mode,
            "power_mode_clocks": dict(self.power_mode_clocks),
            "derived_range": None if self.derived_range is None else
            {"low": self.derived_range[0], "high": self.derived_range[1]},
            "notes": list(self.notes),
            "source": self.source, "retrieved": self.retrieved,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    """A cloud instance type and its hourly prices (whole instance, in USD after conversion)."""

    id: str
    provider: str
    instance: str
    gpu: str
    gpu_count: int
    region: str
    on_demand_usd_per_hour: float
    spot_usd_per_hour: float | None = None
    reserved_1y_usd_per_hour: float | None = None
    currency: str = "USD"
    on_demand_per_hour_local: float = 0.0
    """The price as published, in `currency`."""
    vcpus: int | None = None
    ram_bytes: int | None = None
    interconnect: Interconnect | None = None
    """The GPU-to-GPU link inside one instance as the provider states it; None: not stated (PCIe is assumed)."""
    network_bytes_per_s: float | None = None
    """Node-to-node network of one instance as the provider states it; None: not stated (no multi-node jobs)."""
    network_kind: str | None = None
    """One of NETWORK_KINDS, stated with the bandwidth."""
    link_source: str = ""
    """Where the link and network figures were read (the price has its own `source`)."""
    price_date: str = ""
    source: str = ""
    retrieved: str = ""
    notes: tuple[str, ...] = ()
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "provider": self.provider, "instance": self.instance, "gpu": self.gpu,
            "gpu_count": self.gpu_count, "region": self.region,
            "on_demand_usd_per_hour": self.on_demand_usd_per_hour, "spot_usd_per_hour": self.spot_usd_per_hour,
            "reserved_1y_usd_per_hour": self.reserved_1y_usd_per_hour, "currency": self.currency,
            "on_demand_per_hour_local": self.on_demand_per_hour_local, "vcpus": self.vcpus,
            "ram_bytes": self.ram_bytes, "network_bytes_per_s": self.network_bytes_per_s,
            "network_kind": self.network_kind, "link_source": self.link_source,
            "interconnect": None if self.interconnect is None else
            {"kind": self.interconnect.kind, "bytes_per_s": self.interconnect.bytes_per_s},
            "price_date": self.price_date, "source": self.source, "retrieved": self.retrieved,
            "notes": list(self.notes),
        }


# ---- validation -------------------------------------------------------------------------------

MAX_DATA_NUMBER = 1e9
"""Largest magnitude of any number in a data file, in the file's own unit (GiB, GB/s, TFLOP/s, MHz, W, USD per
hour): far above any real part (a wafer-scale engine's 21 PB/s of SRAM bandwidth is 2.1e7 GB/s) and far below
where a conversion to bytes or FLOP/s would overflow to infinity. NaN and infinities are refused too."""
MIN_POSITIVE_NUMBER = 1e-6
"""Smallest value of a field that must be positive, in the file's unit (1 kB/s, 1 MFLOP/s, a ten-thousandth of a
cent per hour): a bandwidth or peak of 1e-300 is zero in all but name, and priced a step that lasts 1e297 days."""


def _number_text(value: int | float) -> str:
    """A number for a one-line error: a huge integer by its digit count."""
    if isinstance(value, int) and abs(value) >= 10**24:
        return f"a {len(str(abs(value))) if abs(value) < 10**4000 else 4000}-digit number"
    return repr(value)


class _Fields:
    """Typed access to a mapping from a data file; every error names the file and the field."""

    def __init__(self, data: Any, path: str, prefix: str = "") -> None:
        if not isinstance(data, dict):
            raise CatalogError(f"{path}: {prefix or 'top level'} must be a mapping, got {type(data).__name__}")
        self.data, self.path, self.prefix = data, path, prefix

    def _name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def fail(self, key: str, expected: str) -> CatalogError:
        return CatalogError(f"{self.path}: field '{self._name(key)}' = {self.data.get(key)!r}: expected {expected}")

    def check_keys(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            raise CatalogError(f"{self.path}: unknown field '{self._name(unknown[0])}' "
                               f"(expected one of: {', '.join(sorted(allowed))})")

    def text(self, key: str, required: bool = True) -> str | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise CatalogError(f"{self.path}: missing field '{self._name(key)}'")
            return None
        if isinstance(value, (dt.date, dt.datetime)):
            return value.isoformat()
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "a non-empty string")
        return value

    def number(self, key: str, required: bool = True, positive: bool = True) -> float | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise CatalogError(f"{self.path}: missing field '{self._name(key)}'")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, "a number")
        if not (isinstance(value, int) or math.isfinite(value)) or not -MAX_DATA_NUMBER <= value <= MAX_DATA_NUMBER:
            raise CatalogError(f"{self.path}: field '{self._name(key)}' = {_number_text(value)}: expected a finite "
                               f"number of at most {MAX_DATA_NUMBER:.0e} in the field's unit")
        if positive and not value > 0:
            raise self.fail(key, "a positive number")
        if positive and value < MIN_POSITIVE_NUMBER:
            raise self.fail(key, f"a positive number of at least {MIN_POSITIVE_NUMBER:g} in the field's unit")
        return float(value)

    def integer(self, key: str, required: bool = False) -> int | None:
        value = self.number(key, required)
        if value is not None and value != int(value):
            raise self.fail(key, "a whole number")
        return None if value is None else int(value)

    def mapping(self, key: str) -> _Fields | None:
        value = self.data.get(key)
        if value is None:
            return None
        return _Fields(value, self.path, f"{self._name(key)}.")

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
            raise self.fail(key, "a list of strings")
        return tuple(str(v) for v in value)

    def date(self, key: str) -> str:
        text = self.text(key)
        try:
            dt.date.fromisoformat(text[:10])
        except ValueError:
            raise self.fail(key, "a date YYYY-MM-DD") from None
        return text[:10]


def _rates(fields: _Fields | None, allowed: tuple[str, ...], scale: float) -> dict[str, float]:
    if fields is None:
        return {}
    fields.check_keys(set(allowed))
    return {k: fields.number(k) * scale for k in allowed if k in fields.data}


def _interconnect(fields: _Fields | None) -> Interconnect | None:
    if fields is None:
        return None
    fields.check_keys({"kind", "gb_per_s"})
    kind = fields.text("kind")
    if kind not in INTERCONNECT_KINDS:
        raise fields.fail("kind", f"one of {', '.join(INTERCONNECT_KINDS)}")
    return Interconnect(kind=kind, bytes_per_s=fields.number("gb_per_s") * GIGA)


_DEVICE_KEYS = {
    "id", "name", "vendor", "kind", "aliases", "memory_gib", "memory_bandwidth_gb_per_s", "dense_tflops",
    "dense_tops", "vector_tflops", "fp16_acc16_dense_tflops", "interconnect", "pcie", "tdp_w", "l2_mib",
    "compute_units", "compute_unit_name", "boost_clock_mhz", "rated_clock_mhz", "sustained_clock_mhz", "memory_type", "ecc_default", "notes", "source",
    "retrieved", "architecture", "memory_channels", "variant_group", "preferred_variant",
    "fp32_accumulate", "host_cpu", "tensor_rate_scale", "core_types",
    "memory_options", "power_modes",  # variants of the device: validated and expanded by hardware.variants
}


def _core_types(f: _Fields) -> tuple[tuple[str, str, int, float], ...]:
    items = f.data.get("core_types")
    if items is None:
        return ()
    if not isinstance(items, list) or not items:
        raise f.fail("core_types", "a non-empty list of {name, architecture, cores, all_core_clock_mhz}")
    out = []
    for i, item in enumerate(items):
        c = _Fields(item, f.path, f"core_types[{i}].")
        c.check_keys({"name", "architecture", "cores", "all_core_clock_mhz"})
        out.append((c.text("name"), c.text("architecture"), c.integer("cores", required=True),
                    c.number("all_core_clock_mhz") * 1e6))
    return tuple(out)


def parse_device(data: Any, path: str | Path) -> DeviceSpec:
    """Validate one device file's mapping and convert it to SI units."""
    path = str(path)
    f = _Fields(data, path)
    f.check_keys(_DEVICE_KEYS)
    device_id = f.text("id")
    stem = Path(path).stem
    if Path(path).suffix in (".yaml", ".yml") and stem != device_id:
        raise f.fail("id", f"the file name without extension ({stem!r})")
    kind = f.text("kind")
    if kind not in DEVICE_KINDS:
        raise f.fail("kind", f"one of {', '.join(DEVICE_KINDS)}")
    pcie = f.mapping("pcie")
    if pcie is not None:
        pcie.check_keys({"gen", "lanes"})
    ecc = f.data.get("ecc_default", False)
    if not isinstance(ecc, bool):
        raise f.fail("ecc_default", "true or false")
    preferred = f.data.get("preferred_variant", False)
    if not isinstance(preferred, bool):
        raise f.fail("preferred_variant", "true or false")
    peak = _rates(f.mapping("dense_tflops"), FLOAT_PRECISIONS, TERA)
    peak |= _rates(f.mapping("dense_tops"), INT_PRECISIONS, TERA)
    vector = _rates(f.mapping("vector_tflops"), FLOAT_PRECISIONS, TERA)
    acc16 = f.number("fp16_acc16_dense_tflops", required=False)
    l2 = f.number("l2_mib", required=False)
    clock = f.number("boost_clock_mhz", required=False)
    rated = f.number("rated_clock_mhz", required=False)
    if rated is not None and (clock is None or rated > clock):
        raise f.fail("rated_clock_mhz", "a clock in MHz at most boost_clock_mhz (which must be given)")
    sustained = f.number("sustained_clock_mhz", required=False)
    if sustained is not None and (clock is None or sustained > (rated or clock)):
        raise f.fail("sustained_clock_mhz", "a clock in MHz at most rated_clock_mhz, or boost_clock_mhz where no "
                     "rated clock is given (boost_clock_mhz must be given)")
    accumulate = f.text("fp32_accumulate", required=False)
    if accumulate not in (None, "half", "full"):
        raise f.fail("fp32_accumulate", "'half' or 'full'")
    scale = f.number("tensor_rate_scale", required=False)
    if scale is not None and scale > 1:
        raise f.fail("tensor_rate_scale", "a fraction in (0, 1]")
    return DeviceSpec(
        id=device_id, name=f.text("name"), vendor=f.text("vendor"), kind=kind, aliases=f.strings("aliases"),
        memory_bytes=int(f.number("memory_gib") * GIB),
        memory_bandwidth_bytes_per_s=f.number("memory_bandwidth_gb_per_s") * GIGA,
        peak_flops_per_s=peak, vector_flops_per_s=vector,
        fp16_acc16_flops_per_s=None if acc16 is None else acc16 * TERA,
        interconnect=_interconnect(f.mapping("interconnect")),
        pcie_gen=None if pcie is None else pcie.integer("gen"),
        pcie_lanes=None if pcie is None else pcie.integer("lanes"),
        tdp_w=f.number("tdp_w", required=False),
        l2_bytes=None if l2 is None else int(l2 * MIB),
        compute_units=f.integer("compute_units"), compute_unit_name=f.text("compute_unit_name", required=False),
        boost_clock_hz=None if clock is None else clock * 1e6,
        sustained_clock_hz=None if sustained is None else sustained * 1e6,
        rated_clock_hz=None if rated is None else rated * 1e6,
        memory_type=f.text("memory_type", required=False), ecc_default=ecc,
        architecture=f.text("architecture", required=False), memory_channels=f.integer("memory_channels"),
        variant_group=f.text("variant_group", required=False), preferred_variant=preferred,
        fp32_accumulate=accumulate, host_cpu=f.text("host_cpu", required=False),
        tensor_rate_scale=1.0 if scale is None else scale, core_types=_core_types(f),
        notes=f.strings("notes"),
        source=f.text("source"), retrieved=f.date("retrieved"), path=path,
    )


_OFFER_KEYS = {
    "id", "instance", "gpu", "gpu_count", "vcpus", "ram_gib", "region", "on_demand_per_hour", "spot_per_hour",
    "reserved_1y_per_hour", "interconnect", "network_gbit_per_s", "network_kind", "link_source", "price_date", "source",
    "retrieved", "notes",
}


def parse_offers(data: Any, path: str | Path, usd_per_unit: dict[str, float]) -> list[Offer]:
    """Validate one provider file (`provider`, `currency`, `offers: [...]`)."""
    path = str(path)
    f = _Fields(data, path)
    f.check_keys({"provider", "currency", "offers"})
    provider = f.text("provider")
    currency = f.text("currency")
    if currency != "USD" and currency not in usd_per_unit:
        raise f.fail("currency", f"USD or a currency with a rate in fx.yaml ({', '.join(usd_per_unit) or 'none'})")
    rate = 1.0 if currency == "USD" else usd_per_unit[currency]
    items = f.data.get("offers")
    if not isinstance(items, list) or not items:
        raise f.fail("offers", "a non-empty list of offers")
    offers = []
    for i, item in enumerate(items):
        o = _Fields(item, path, f"offers[{i}].")
        o.check_keys(_OFFER_KEYS)
        on_demand = o.number("on_demand_per_hour")
        spot = o.number("spot_per_hour", required=False)
        reserved = o.number("reserved_1y_per_hour", required=False)
        ram = o.number("ram_gib", required=False)
        network = o.number("network_gbit_per_s", required=False)
        kind = o.text("network_kind", required=False)
        if kind is not None and kind not in NETWORK_KINDS:
            raise o.fail("network_kind", f"one of {', '.join(NETWORK_KINDS)}")
        if (kind is None) != (network is None):
            raise o.fail("network_kind" if kind is None else "network_gbit_per_s",
                         "both network_gbit_per_s and network_kind (a network is stated with its kind)")
        link_source = o.text("link_source", required=False)
        if (o.data.get("interconnect") is not None or network is not None) and not link_source:
            raise o.fail("link_source", "where the interconnect / network figures were read")
        offers.append(Offer(
            id=o.text("id"), provider=provider, instance=o.text("instance"), gpu=o.text("gpu"),
            gpu_count=o.integer("gpu_count", required=True), region=o.text("region"),
            on_demand_usd_per_hour=on_demand * rate,
            spot_usd_per_hour=None if spot is None else spot * rate,
            reserved_1y_usd_per_hour=None if reserved is None else reserved * rate,
            currency=currency, on_demand_per_hour_local=on_demand, vcpus=o.integer("vcpus"),
            ram_bytes=None if ram is None else int(ram * GIB),
            interconnect=_interconnect(o.mapping("interconnect")),
            network_bytes_per_s=None if network is None else network * GIGA / 8, network_kind=kind,
            link_source=link_source or "",
            price_date=o.date("price_date"), source=o.text("source"), retrieved=o.date("retrieved"),
            notes=o.strings("notes"), path=path,
        ))
    return offers


def parse_fx(data: Any, path: str | Path) -> dict[str, float]:
    f = _Fields(data, str(path))
    f.check_keys({"usd_per_unit", "source", "retrieved"})
    f.text("source")
    f.date("retrieved")
    rates = f.mapping("usd_per_unit")
    if rates is None:
        raise CatalogError(f"{path}: missing field 'usd_per_unit'")
    return {k: rates.number(k) for k in rates.data}
