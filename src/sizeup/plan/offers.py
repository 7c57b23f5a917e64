"""Which devices a scenario may use, which cloud offers carry them, and the hourly price of one replica."""

from __future__ import annotations

import math

from sizeup.hardware.catalog import Catalog
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.plan.scenario import Scenario

__all__ = ["devices_for", "offers_for", "hourly_price", "replica_price"]


def devices_for(catalog: Catalog, scenario: Scenario) -> list[DeviceSpec]:
    names = scenario.constraints.devices
    if names:
        return [catalog.device(n) for n in names]
    with_offers = {o.gpu for o in catalog.offers.values()}
    owned = {catalog.device(o.device).id for o in scenario.constraints.owned}
    return [d for d in catalog.devices.values() if d.kind == "gpu" and (d.id in with_offers or d.id in owned)]


def offers_for(catalog: Catalog, scenario: Scenario, device: DeviceSpec, gpus: int) -> list[Offer]:
    c = scenario.constraints
    out = []
    for o in catalog.offers_for(device.id):
        if c.providers and o.provider not in c.providers:
            continue
        if c.regions and o.region not in c.regions:
            continue
        if o.gpu_count >= gpus and o.gpu_count % gpus == 0 or gpus % o.gpu_count == 0:
            out.append(o)
    return out


def hourly_price(offer: Offer, basis: str) -> tuple[float, str]:
    """(USD per hour of the instance, basis used) on `basis`; on-demand when the offer has no such price."""
    value = {"spot": offer.spot_usd_per_hour, "reserved-1y": offer.reserved_1y_usd_per_hour}.get(basis)
    return (value, basis) if value else (offer.on_demand_usd_per_hour, "on-demand")


def replica_price(offers: list[Offer], gpus: int, basis: str) -> tuple[Offer | None, float]:
    """Cheapest hourly price of one replica of `gpus` GPUs on the pricing `basis` (plan.cost.PRICING_BASES):
    instances holding several replicas are split between them."""
    best, best_price = None, math.inf
    for o in offers:
        instance, _ = hourly_price(o, basis)
        if o.gpu_count >= gpus:
            hourly = instance * gpus / o.gpu_count
        else:
            hourly = instance * math.ceil(gpus / o.gpu_count)
        if hourly < best_price:
            best, best_price = o, hourly
    return best, best_price
