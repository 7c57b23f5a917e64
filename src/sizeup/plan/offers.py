"""Which devices a scenario may use and which cloud offers carry them; the hourly price of one replica
(`hourly_price`, `replica_price`) lives with the offers in `sizeup.hardware.offer_price`."""

from __future__ import annotations

from sizeup.hardware.catalog import Catalog
from sizeup.hardware.offer_price import hourly_price, replica_price
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
