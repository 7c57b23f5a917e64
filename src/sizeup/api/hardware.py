"""`hw`, `hw_list`, `offers`, `local`: the hardware catalog and this machine, as `sizeup hw show|list|offers|local`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sizeup.errors import ConfigError

__all__ = ["DeviceInfo", "DeviceList", "KINDS", "OfferList", "device_summary", "hw", "hw_list", "local", "offers"]

KINDS = ("gpu", "tpu", "npu", "soc", "cpu")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceInfo:
    """One catalog device in full (`sizeup.hardware.schema.DeviceSpec`), its usable memory and offers."""

    device: Any
    usable: Any
    """`sizeup.hardware.usable.UsableMemory`: what a framework can allocate, with its basis."""
    summary: dict[str, Any]
    offers: tuple[str, ...]
    extras: dict[str, Any]
    """Variants, power-mode clocks, thermal trip points, purchase prices and wall power (`device_extras`)."""

    def to_dict(self) -> dict[str, Any]:
        return self.summary | self.device.to_dict() | {
            "usable_memory_bytes": self.usable.bytes.typical, "usable_memory": self.usable.to_dict(),
            "offers": list(self.offers)} | self.extras


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceList:
    devices: tuple[Any, ...]
    """`DeviceSpec`s, by kind, vendor, memory (largest first) and id."""
    summaries: tuple[dict[str, Any], ...]
    variants_hidden: int = 0
    """Memory-size and power-mode variants left out (listed with `variants=True`)."""

    def to_dict(self) -> dict[str, Any]:
        return {"devices": list(self.summaries), "variants_hidden": self.variants_hidden}


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferList:
    offers: tuple[Any, ...]
    """`sizeup.hardware.schema.Offer`s, cheapest per GPU-hour first."""

    def to_dict(self) -> dict[str, Any]:
        return {"offers": [o.to_dict() for o in self.offers]}


def hw(name: str, *, catalog: Sequence[str | Path] = ()) -> DeviceInfo:
    """One device, by id, name or alias ('4090', 'H100 SXM', 'a100-80g'); a miss lists the closest names."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.usable import usable_memory

    cat = load_catalog(catalog)
    device = cat.device(name)
    return DeviceInfo(device=device, usable=usable_memory(device), summary=device_summary(device),
                      offers=tuple(o.id for o in cat.offers_for(device.id)), extras=device_extras(device, cat))


def hw_list(kind: str | None = None, *, variants: bool = False, catalog: Sequence[str | Path] = ()) -> DeviceList:
    """Every catalog device, or those of one kind (gpu, tpu, npu, soc, cpu); memory-size and power-mode variants
    only with `variants`."""
    from sizeup.hardware.catalog import load_catalog

    if kind is not None and kind not in KINDS:
        raise ConfigError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    cat = load_catalog(catalog)
    devices = [d for d in cat.devices.values() if kind is None or d.kind == kind]
    hidden = 0 if variants else sum(1 for d in devices if d.variant_of)
    devices = [d for d in devices if variants or not d.variant_of]
    devices.sort(key=lambda d: (d.kind, d.vendor, -d.memory_bytes, d.id))
    return DeviceList(devices=tuple(devices), summaries=tuple(device_summary(d) for d in devices),
                      variants_hidden=hidden)


def offers(device: str | None = None, *, provider: str | None = None,
           catalog: Sequence[str | Path] = ()) -> OfferList:
    """Cloud offers and their dated prices, of one device and / or one provider."""
    from sizeup.hardware.catalog import load_catalog

    cat = load_catalog(catalog)
    gpu = cat.device(device).id if device else None
    providers = sorted({o.provider for o in cat.offers.values()})
    if provider is not None and provider not in providers:
        raise ConfigError(f"--provider {provider!r}: not a provider in the catalog; expected one of "
                          f"{', '.join(providers)}")
    found = [o for o in cat.offers_for(gpu) if provider is None or o.provider == provider]
    found.sort(key=lambda o: (o.on_demand_usd_per_hour / o.gpu_count, o.id))
    return OfferList(offers=tuple(found))


def local(*, catalog: Sequence[str | Path] = ()):
    """This machine's CPU and GPUs, mapped to the catalog (`sizeup.hardware.local.LocalMachine`)."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.local import detect_local

    return detect_local(load_catalog(catalog))


def device_summary(device) -> dict[str, Any]:
    from sizeup.hardware.usable import usable_memory

    return {
        "id": device.id, "name": device.name, "kind": device.kind, "vendor": device.vendor,
        "memory_bytes": device.memory_bytes, "usable_memory_bytes": usable_memory(device).bytes.typical,
        "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
        "peak_flops_per_s": dict(device.peak_flops_per_s),
        "interconnect_bytes_per_s": device.interconnect_bytes_per_s, "tdp_w": device.tdp_w,
        "derived_peaks": dict(device.derived_peaks), "compute_known": bool(device.peak_flops_per_s or
                                                                           device.vector_flops_per_s),
        "resolved_as": device.resolved_as,
    }


def device_extras(device, catalog) -> dict[str, Any]:
    """Variants, power-mode clocks, thermal trip points, purchase prices and wall power of `device`."""
    from sizeup.hardware.purchase import purchases_for, wall_power
    from sizeup.hardware.thermal import thermal_profile

    variants = sorted((d for d in catalog.devices.values() if d.variant_of == device.id),
                      key=lambda d: (d.memory_bytes, d.tdp_w or 0, d.id))
    profile = thermal_profile(device, tuple(catalog.folders))
    return {
        "variant_of": device.variant_of, "power_mode": device.power_mode,
        "power_mode_clocks": dict(device.power_mode_clocks),
        "variants": [{"id": d.id, "power_mode": d.power_mode, "memory_bytes": d.memory_bytes} for d in variants],
        "thermal": None if profile is None else profile.to_dict(),
        "purchases": [p.to_dict() | {"wall_power": wall_power(p, catalog).to_dict()}
                      for p in purchases_for(catalog, device)],
    }
