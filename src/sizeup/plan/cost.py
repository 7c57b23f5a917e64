"""Cost: monthly serving cost on-demand, spot, reserved and owned; job cost with spot checkpointing.

- Owned hardware: purchase price amortised over its months of use, plus power at TDP × utilisation.
- Spot jobs checkpoint every τ = √(2·C·M) (Young 1974 / Daly 2006), C the checkpoint write time and M
  the mean time between preemptions; the expected overhead is C/τ + (τ/2 + R)/M of the run (lost work
  since the last checkpoint, plus a restart R), i.e. about √(2C/M) for small C.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.plan.scenario import Owned

__all__ = ["HOURS_PER_MONTH", "PRICING_BASES", "pricing_basis", "MonthlyCost", "monthly_cost", "owned_monthly_cost", "CheckpointPlan",
           "checkpoint_plan", "cost_per_million_tokens"]

HOURS_PER_MONTH = 730.0
"""365 × 24 / 12."""

PRICING_BASES = ("on-demand", "reserved-1y", "spot", "mixed", "owned")
"""The bases a cost can be quoted on; a plan ranks and quotes every option on one of them ("mixed": the
autoscaling floor reserved for a year, the rest on-demand or spot, plan.fleet)."""


def pricing_basis(scenario) -> str:
    """The scenario's pricing basis: `budget.pricing` when given, else spot when spot is allowed, else
    on-demand (a reserved price needs a one-year commitment, so it is used only when asked for)."""
    if scenario.budget.pricing:
        return scenario.budget.pricing
    return "spot" if scenario.constraints.spot else "on-demand"


@dataclass(frozen=True, slots=True, kw_only=True)
class MonthlyCost:
    instances: int
    """At the peak."""
    on_demand_usd: float
    spot_usd: float | None
    reserved_usd: float | None
    owned_usd: float | None = None
    mixed_usd: float | None = None
    """The autoscaling floor on 1-year reserved capacity, the rest on-demand (or spot), plan.fleet."""
    instance_hours: float | None = None
    """Instance-hours a month the on-demand and spot figures bill (None: every instance all month)."""

    def on(self, basis: str) -> float | None:
        """The cost on `basis` ("on-demand", "reserved-1y", "spot", "mixed", "owned"); None when the offer has
        no such price."""
        return {"on-demand": self.on_demand_usd, "reserved-1y": self.reserved_usd, "spot": self.spot_usd,
                "mixed": self.mixed_usd, "owned": self.owned_usd}[basis]

    def priced(self, basis: str) -> tuple[float, str]:
        """(cost, basis used): the cost on `basis`, or on-demand when the offer lacks that price."""
        value = self.on(basis)
        return (value, basis) if value is not None else (self.on_demand_usd, "on-demand")

    def to_dict(self) -> dict[str, Any]:
        return {"instances": self.instances, "on_demand_usd": self.on_demand_usd, "spot_usd": self.spot_usd,
                "reserved_1y_usd": self.reserved_usd, "mixed_usd": self.mixed_usd, "owned_usd": self.owned_usd,
                "instance_hours": self.instance_hours}


def monthly_cost(offer: Offer, instances: int, hours: float = HOURS_PER_MONTH) -> MonthlyCost:
    return MonthlyCost(
        instances=instances, on_demand_usd=instances * offer.on_demand_usd_per_hour * hours,
        spot_usd=None if offer.spot_usd_per_hour is None else instances * offer.spot_usd_per_hour * hours,
        reserved_usd=None if offer.reserved_1y_usd_per_hour is None else
        instances * offer.reserved_1y_usd_per_hour * hours)


def owned_monthly_cost(owned: Owned, device: DeviceSpec, gpus: int, utilisation: float = 0.6) -> float:
    """Amortised purchase of `gpus` owned cards plus their power at TDP × utilisation."""
    if gpus > owned.count:
        raise ConfigError(f"only {owned.count} owned {owned.device} GPUs, {gpus} needed")
    if device.tdp_w is None:
        raise ConfigError(f"device {device.id} lists no TDP: cannot price its power")
    power = gpus * device.tdp_w / 1000 * utilisation * HOURS_PER_MONTH * owned.power_usd_per_kwh
    return gpus * owned.purchase_usd / owned.amortize_months + power


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointPlan:
    interval_s: float
    write_s: float
    mtbf_s: float
    overhead_fraction: float
    arithmetic: str

    def to_dict(self) -> dict[str, Any]:
        return {"interval_s": self.interval_s, "write_s": self.write_s, "mtbf_s": self.mtbf_s,
                "overhead_fraction": self.overhead_fraction, "arithmetic": self.arithmetic}


def checkpoint_plan(state_bytes: float, write_bytes_per_s: float, mtbf_s: float, restart_s: float = 300.0) -> CheckpointPlan:
    """Young/Daly interval τ = √(2·C·M) and the expected overhead of checkpoints and lost work."""
    if write_bytes_per_s <= 0 or mtbf_s <= 0:
        raise ConfigError("checkpoint write bandwidth and time between preemptions must be positive")
    write = state_bytes / write_bytes_per_s
    tau = math.sqrt(2 * write * mtbf_s)
    overhead = write / tau + (tau / 2 + restart_s) / mtbf_s
    text = (f"δ = {write:,.0f} s to write {state_bytes / 1e9:,.1f} GB, M = {mtbf_s / 3600:,.1f} h between interruptions: "
            f"τ = √(2·δ·M) = {tau / 60:,.0f} min, overhead ≈ {overhead:.1%}")
    return CheckpointPlan(interval_s=tau, write_s=write, mtbf_s=mtbf_s, overhead_fraction=overhead, arithmetic=text)


def cost_per_million_tokens(monthly_usd: float, tokens_per_s: float, utilisation: float) -> float:
    """USD per million generated tokens at the average utilisation of the fleet."""
    tokens = tokens_per_s * utilisation * HOURS_PER_MONTH * 3600
    return monthly_usd / tokens * 1e6 if tokens else float("inf")
