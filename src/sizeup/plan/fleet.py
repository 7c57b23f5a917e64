"""Costs as they will be billed: the month's load from the traffic profile, the replicas an autoscaler
keeps at each load level (between its floor and the peak fleet, the spare always on), and what that fleet
costs on each basis.

The month's load (`month_levels`):
- with a 24-hour `profile`: each hour of the day at its share of the day's requests
  (rate_h = mean × 24 × w_h / Σw), 730/24 hours a month each;
- without one: a two-level day — `peak_hours_per_day` hours (default 1, the busiest hour) at the busiest
  hour's rate and the rest of the day at the rate that makes the day's total the scenario's mean;
- events: `burst_hours_per_month` of those peak hours at the event rate (peak × peak_factor), by default
  all of them (conservative: the peak hours are billed at the event fleet).

The fleet at a level of r requests/s: max(1, ⌈r / (rate per replica × (1 − headroom))⌉) replicas plus the
spare, packed into whole instances (replicas per instance from the offer). Billed per basis:
- on-demand, spot: the instance-hours the autoscaled fleet runs;
- reserved-1y: the peak fleet all month (a reservation is paid whether used or not);
- mixed: the floor's instances reserved all month, the rest on-demand (spot where the scenario allows it);
- owned (`owned_mix`): the owned cards carry what they can, all month; rented instances the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sizeup.errors import ConfigError
from sizeup.plan.cost import HOURS_PER_MONTH

__all__ = ["LoadLevel", "FleetLevel", "Fleet", "OwnedMix", "month_levels", "fleet_for", "owned_mix", "replicas_at",
           "lower_bound_usd"]

HOURS_PER_DAY_SLOT = HOURS_PER_MONTH / 24
"""Hours a month in one hour-of-day slot (30.4)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadLevel:
    label: str
    hours: float
    """Hours a month at this rate."""
    requests_per_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetLevel:
    level: LoadLevel
    replicas: int
    """Replicas running at this level, the spare included."""
    instances: int

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.level.label, "hours": self.level.hours, "requests_per_s": self.level.requests_per_s,
                "replicas": self.replicas, "instances": self.instances}


@dataclass(frozen=True, slots=True, kw_only=True)
class Fleet:
    levels: tuple[FleetLevel, ...]
    spare: int
    per_instance: int
    """Replicas one instance holds."""
    instance_hours: float
    """Instance-hours a month the autoscaled fleet is billed for."""
    floor_instances: int
    peak_instances: int
    costs: dict[str, float]
    """Basis ("on-demand", "spot", "reserved-1y", "mixed") -> USD a month; a basis the offer has no price on
    is left out."""
    burst_basis: str
    """What the mixed fleet's burst runs on: on-demand, or spot where the scenario allows it."""
    method: str
    """How the month's load was derived (the profile, or the two-level day)."""
    arithmetic: str

    @property
    def floor_replicas(self) -> int:
        return min(lv.replicas for lv in self.levels)

    @property
    def peak_replicas(self) -> int:
        return max(lv.replicas for lv in self.levels)

    def to_dict(self) -> dict[str, Any]:
        return {"levels": [lv.to_dict() for lv in self.levels], "spare": self.spare, "per_instance": self.per_instance,
                "instance_hours": self.instance_hours, "floor_instances": self.floor_instances,
                "peak_instances": self.peak_instances, "costs_usd": dict(self.costs), "burst_basis": self.burst_basis,
                "method": self.method, "arithmetic": self.arithmetic}


def month_levels(traffic) -> tuple[tuple[LoadLevel, ...], str]:
    """The month's load as (levels, how it was derived); the hours add up to HOURS_PER_MONTH."""
    peak = traffic.peak_requests_per_s
    factor = max(traffic.peak_factor, 1.0)
    busiest = peak / factor
    mean = traffic.base_requests_per_s
    if traffic.profile:
        total = sum(traffic.profile)
        rates = [mean * 24 * w / total for w in traffic.profile]
        top = max(rates)
        busiest_hours = sum(HOURS_PER_DAY_SLOT for r in rates if r >= top * (1 - 1e-12))
        levels = [LoadLevel(label=f"{h:02d}:00", hours=HOURS_PER_DAY_SLOT, requests_per_s=r * busiest / top)
                  for h, r in enumerate(rates)]
        method = "24-hour profile of the scenario: each hour at its share of the day's requests"
    else:
        hours = traffic.peak_hours_per_day or 1.0
        day = 24 * mean
        if hours * busiest > day * (1 + 1e-9):
            raise ConfigError(f"scenario key 'traffic.peak_hours_per_day' = {hours:g}: {hours:g} hours at the busiest "
                              f"hour's {busiest:.4g} req/s carry more than the day's {day * 3600:,.0f} requests; "
                              f"expected at most {day / busiest:.3g}")
        off = (day - hours * busiest) / (24 - hours) if hours < 24 else 0.0
        levels = [LoadLevel(label="peak hours", hours=hours * HOURS_PER_DAY_SLOT, requests_per_s=busiest)]
        if hours < 24:
            levels.append(LoadLevel(label="off-peak", hours=(24 - hours) * HOURS_PER_DAY_SLOT,
                                    requests_per_s=max(off, 0.0)))
        busiest_hours = hours * HOURS_PER_DAY_SLOT
        method = (f"two-level day: {hours:g} h at the busiest hour's {busiest:.4g} req/s"
                  f"{'' if traffic.peak_hours_per_day else ' (traffic.peak_hours_per_day not given: the busiest hour alone)'}"
                  + (f", the other {24 - hours:g} h at {max(off, 0.0):.4g} req/s so the day averages {mean:.4g} req/s"
                     if hours < 24 else ""))
    if factor > 1:
        bursts = busiest_hours if traffic.burst_hours_per_month is None else min(traffic.burst_hours_per_month,
                                                                                 busiest_hours)
        method += (f"; events (×{factor:g}) for {bursts:,.0f} h a month"
                   + (" (traffic.burst_hours_per_month not given: every peak hour)"
                      if traffic.burst_hours_per_month is None else ""))
        levels = _carve_bursts(levels, busiest, bursts, peak)
    return tuple(lv for lv in levels if lv.hours > 0), method


def _carve_bursts(levels: list[LoadLevel], busiest: float, bursts: float, peak: float) -> list[LoadLevel]:
    """Move `bursts` hours of the busiest levels to the event rate."""
    out, left = [], bursts
    for lv in levels:
        if left > 0 and lv.requests_per_s >= busiest * (1 - 1e-12):
            moved = min(left, lv.hours)
            left -= moved
            out.append(LoadLevel(label=f"{lv.label}, events", hours=moved, requests_per_s=peak))
            out.append(LoadLevel(label=lv.label, hours=lv.hours - moved, requests_per_s=lv.requests_per_s))
        else:
            out.append(lv)
    return out


def replicas_at(rate_per_s: float, usable_per_replica: float) -> int:
    """Replicas serving `rate_per_s` at `usable_per_replica` each; at least one (a service stays up)."""
    return max(1, math.ceil(rate_per_s / usable_per_replica - 1e-9))


def fleet_for(levels: tuple[LoadLevel, ...], method: str, usable_per_replica: float, spare: int, offer,
              per_instance: int, spot_allowed: bool) -> Fleet:
    """The autoscaled fleet of replicas on `offer` (`per_instance` replicas to an instance) over the month."""
    rows = []
    for lv in levels:
        replicas = replicas_at(lv.requests_per_s, usable_per_replica) + spare
        rows.append(FleetLevel(level=lv, replicas=replicas, instances=math.ceil(replicas / per_instance)))
    hours = sum(r.level.hours * r.instances for r in rows)
    floor = min(r.instances for r in rows)
    peak = max(r.instances for r in rows)
    costs = {"on-demand": hours * offer.on_demand_usd_per_hour}
    if offer.spot_usd_per_hour:
        costs["spot"] = hours * offer.spot_usd_per_hour
    burst_price, burst = ((offer.spot_usd_per_hour, "spot") if spot_allowed and offer.spot_usd_per_hour
                          else (offer.on_demand_usd_per_hour, "on-demand"))
    if offer.reserved_1y_usd_per_hour:
        costs["reserved-1y"] = peak * HOURS_PER_MONTH * offer.reserved_1y_usd_per_hour
        costs["mixed"] = (floor * HOURS_PER_MONTH * offer.reserved_1y_usd_per_hour
                          + (hours - floor * HOURS_PER_MONTH) * burst_price)
    text = ("; ".join(f"{r.level.label}: {r.level.hours:,.0f} h × {r.instances} instance{'s' if r.instances != 1 else ''}"
                      f" ({r.replicas} replica{'s' if r.replicas != 1 else ''} at {r.level.requests_per_s:.3g} req/s)"
                      for r in rows) + f" = {hours:,.0f} instance-hours a month")
    return Fleet(levels=tuple(rows), spare=spare, per_instance=per_instance, instance_hours=hours,
                 floor_instances=floor, peak_instances=peak, costs=costs, burst_basis=burst, method=method,
                 arithmetic=text)


def lower_bound_usd(levels: tuple[LoadLevel, ...], upper_rate: float, spare: int, per_replica_hourly: float) -> float:
    """A lower bound on any billing of the fleet: replica-hours at each level's replicas (at the replica's
    throughput bound) × the cheapest hourly price of one replica (instances hold whole replicas)."""
    return sum(lv.hours * (replicas_at(lv.requests_per_s, upper_rate) + spare) for lv in levels) * per_replica_hourly


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnedMix:
    cost_usd: float
    owned_replicas: int
    """Owned replicas the plan uses (all month)."""
    rented_instance_hours: float
    rented_basis: str
    arithmetic: str


def owned_mix(levels: tuple[LoadLevel, ...], usable_per_replica: float, held_replicas: int, owned_replica_usd: float,
              spares: tuple[int, int], offer, per_instance: int, rented: tuple[float, str]) -> OwnedMix | None:
    """Owned cards carry the load up to `held_replicas` replicas all month; rented instances on `offer` (at
    the hourly price and basis `rented`) carry the rest at each level. `spares`: (spare with owned cards
    alone, spare once renting). None when the owned cards are not enough and there is no offer."""
    needs = [(lv, replicas_at(lv.requests_per_s, usable_per_replica)) for lv in levels]
    peak = max(n for _, n in needs)
    alone, renting = spares
    if peak + alone <= held_replicas:
        used = peak + alone
        return OwnedMix(cost_usd=used * owned_replica_usd, owned_replicas=used, rented_instance_hours=0.0,
                        rented_basis="", arithmetic=f"{used} owned replica{'s' if used != 1 else ''} carry the peak "
                                                    f"({peak} for the load + {alone} spare)")
    if offer is None or held_replicas < 1:
        return None
    hours = sum(lv.hours * math.ceil(max(0, n + renting - held_replicas) / per_instance) for lv, n in needs)
    price, basis = rented
    cost = held_replicas * owned_replica_usd + hours * price
    return OwnedMix(cost_usd=cost, owned_replicas=held_replicas, rented_instance_hours=hours, rented_basis=basis,
                    arithmetic=(f"{held_replicas} owned replica{'s' if held_replicas != 1 else ''} all month "
                                f"(${held_replicas * owned_replica_usd:,.0f}) + {hours:,.0f} instance-hours of "
                                f"{offer.id} {basis} for the rest (${hours * price:,.0f}), {renting} spare once renting"))
