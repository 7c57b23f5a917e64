"""The hourly price of an offer on a pricing basis, and the cheapest price of one replica among offers:
shared by the planner and the device table (`workload.device_fit`), so it sits with the offers."""

from __future__ import annotations

import math

from sizeup.hardware.schema import Offer

__all__ = ["hourly_price", "replica_price"]


def hourly_price(offer: Offer, basis: str) -> tuple[float, str]:
    """(USD per hour of the instance, basis used) on `basis`; on-demand when the offer has no such price."""
    value = {"spot": offer.spot_usd_per_hour, "reserved-1y": offer.reserved_1y_usd_per_hour}.get(basis)
    return (value, basis) if value else (offer.on_demand_usd_per_hour, "on-demand")


def replica_price(offers: list[Offer], gpus: int, basis: str) -> tuple[Offer | None, float]:
    """Cheapest hourly price of one replica of `gpus` GPUs on the pricing `basis` (on-demand, spot or reserved-1y):
    a replica lives inside one instance (its tensor-parallel group shares the instance's link), so only
    offers of at least `gpus` GPUs count, and an instance holding ⌊GPUs / gpus⌋ replicas is split between
    them. (None, inf) when no offer holds a replica."""
    best, best_price = None, math.inf
    for o in offers:
        if o.gpu_count < gpus:
            continue
        instance, _ = hourly_price(o, basis)
        hourly = instance / (o.gpu_count // gpus)
        if hourly < best_price:
            best, best_price = o, hourly
    return best, best_price
