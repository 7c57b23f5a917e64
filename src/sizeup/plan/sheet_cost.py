"""The sheet's cost section: serving billed as the autoscaled fleet of plan.fleet (instance-hours at each
load level of the month, with live formulas over the inputs), the mixed fleet and the owned cards beside
it, the cheapest per region group; jobs billed on the instances of their placement."""

from __future__ import annotations

from sizeup.plan.cost import HOURS_PER_MONTH
from sizeup.plan.sheet_types import Cell

__all__ = ["serving_cost", "job_cost", "region_rows", "buy_cells"]


def _money(key: str, label: str, value: float, formula: str | None = None, note: str = "") -> Cell:
    return Cell(key=key, label=label, value=value, unit="USD", formula=formula, note=note)


def serving_cost(scenario, chosen) -> tuple[list[Cell], list[Cell], tuple[str, ...], tuple[tuple, ...]]:
    """(inputs, cost cells, table headers, table rows: the month's load levels) of a serving plan."""
    plan, offer = chosen.replicas, chosen.offer
    fleet = chosen.detail.get("fleet")
    spare = plan.with_redundancy - plan.for_load
    inputs = [Cell(key="peak_rps", label="peak requests per second", value=plan.peak_requests_per_s, unit="req/s"),
              Cell(key="base_rps", label="mean requests per second", value=plan.base_requests_per_s, unit="req/s"),
              Cell(key="rate_per_replica", label="requests per second per replica at the SLA",
                   value=plan.rate_per_replica, unit="req/s"),
              Cell(key="headroom", label="capacity kept free at the peak", value=plan.headroom, unit="%"),
              Cell(key="hours_per_month", label="hours per month", value=HOURS_PER_MONTH, unit="h")]
    cells = [Cell(key="replicas_for_load", label="replicas for the peak load", value=plan.for_load,
                  formula="=ROUNDUP({peak_rps}/({rate_per_replica}*(1-{headroom})),0)", note=plan.arithmetic),
             Cell(key="replicas", label=f"replicas with N+{spare}" if spare else
                  "replicas (no spare: redundancy not asked for)", value=plan.with_redundancy,
                  formula=f"={{replicas_for_load}}+{spare}"),
             Cell(key="replicas_floor", label="replicas at the quietest hour (autoscaling floor, spare included)",
                  value=chosen.detail.get("floor_replicas", plan.at_base + spare))]
    headers: tuple[str, ...] = ()
    rows: tuple[tuple, ...] = ()
    if offer is not None and chosen.monthly is not None and fleet is not None:
        per_instance = fleet["per_instance"]
        inputs += [Cell(key="instance_price", label=f"{offer.instance} on-demand price",
                        value=offer.on_demand_usd_per_hour, unit="USD/h", note=f"price of {offer.price_date}"),
                   Cell(key="replicas_per_instance", label="replicas per instance", value=per_instance,
                        note=f"{offer.gpu_count} GPUs per instance, {chosen.gpus} per replica; {chosen.detail['link']}")]
        cells += [Cell(key="instances", label="instances at the peak", value=chosen.monthly.instances,
                       formula="=ROUNDUP({replicas}/{replicas_per_instance},0)"),
                  Cell(key="instance_hours", label="instance-hours billed a month (autoscaled)",
                       value=fleet["instance_hours"], unit="h", note=fleet["arithmetic"]),
                  _money("monthly_on_demand", "monthly cost, on-demand (autoscaled)", chosen.monthly.on_demand_usd,
                         "={instance_hours}*{instance_price}", fleet["method"])]
        if offer.spot_usd_per_hour is not None:
            inputs.append(Cell(key="spot_price", label=f"{offer.instance} spot price", value=offer.spot_usd_per_hour,
                               unit="USD/h"))
            cells.append(_money("monthly_spot", "monthly cost, spot (autoscaled, preemptible)", chosen.monthly.spot_usd,
                                "={instance_hours}*{spot_price}",
                                "spot capacity can be reclaimed: keep the N+1 replica on-demand"))
        if offer.reserved_1y_usd_per_hour is not None:
            inputs.append(Cell(key="reserved_price", label=f"{offer.instance} 1-year reserved price",
                               value=offer.reserved_1y_usd_per_hour, unit="USD/h"))
            cells.append(_money("monthly_reserved", "monthly cost, 1-year reserved (the peak fleet all month)",
                                chosen.monthly.reserved_usd, "={instances}*{reserved_price}*{hours_per_month}"))
            burst = "spot_price" if fleet["burst_basis"] == "spot" else "instance_price"
            cells += [Cell(key="floor_instances", label="instances at the autoscaling floor",
                           value=fleet["floor_instances"]),
                      _money("monthly_mixed", f"monthly cost, mixed fleet: the floor reserved, the rest "
                                              f"{fleet['burst_basis']}", chosen.monthly.mixed_usd,
                             "={floor_instances}*{reserved_price}*{hours_per_month}+({instance_hours}-"
                             f"{{floor_instances}}*{{hours_per_month}})*{{{burst}}}",
                             f"{fleet['floor_instances']} reserved instance(s) all month; up to "
                             f"{fleet['peak_instances'] - fleet['floor_instances']} more {fleet['burst_basis']} at "
                             "the busy hours")]
        headers = ("load level", "hours a month", "requests/s", "replicas", "instances")
        rows = tuple((lv["label"], round(lv["hours"], 1), round(lv["requests_per_s"], 4), lv["replicas"],
                      lv["instances"]) for lv in fleet["levels"])
    if chosen.detail.get("owned_monthly_usd") is not None:
        cells.append(_money("monthly_owned", "monthly cost, owned cards (amortised + power)"
                            + (" and rented burst" if "instance-hours" in (chosen.detail.get("owned_mix") or "")
                               else ""), chosen.detail["owned_monthly_usd"], note=chosen.detail.get("owned_mix") or ""))
    traffic = scenario.traffic
    if traffic is not None and chosen.monthly is not None and scenario.task != "vision":
        inputs.append(Cell(key="output_tokens", label="output tokens per request", value=traffic.output_tokens))
        tokens_month = plan.base_requests_per_s * traffic.output_tokens * 3600 * HOURS_PER_MONTH
        cells.append(_money("usd_per_million_tokens", "cost per million output tokens (on-demand, mean load)",
                            chosen.monthly.on_demand_usd / tokens_month * 1e6,
                            "={monthly_on_demand}/({base_rps}*{output_tokens}*3600*{hours_per_month})*1000000"))
    if scenario.budget.monthly_usd is not None:
        inputs.append(Cell(key="budget", label="monthly budget", value=scenario.budget.monthly_usd, unit="USD"))
    return inputs, cells, headers, rows


def job_cost(scenario, chosen) -> tuple[list[Cell], list[Cell]]:
    """(inputs, cost cells) of a job on the instances of its placement."""
    offer = chosen.offer
    hours = chosen.latency["hours"]
    instances = chosen.detail.get("instances") or -(-chosen.gpus // offer.gpu_count)
    inputs = [Cell(key="job_hours", label="run time", value=hours, unit="h"),
              Cell(key="instance_price", label=f"{offer.instance} on-demand price",
                   value=offer.on_demand_usd_per_hour, unit="USD/h", note=f"price of {offer.price_date}"),
              Cell(key="instances", label="instances", value=instances,
                   note=chosen.detail.get("placement") or "")]
    cells = [_money("job_on_demand", "job cost, on-demand", hours * instances * offer.on_demand_usd_per_hour,
                    "={job_hours}*{instances}*{instance_price}")]
    for key, label, price in (("spot", "spot", offer.spot_usd_per_hour),
                              ("reserved", "1-year reserved", offer.reserved_1y_usd_per_hour)):
        if price:
            inputs.append(Cell(key=f"{key}_price", label=f"{offer.instance} {label} price", value=price, unit="USD/h"))
            cells.append(_money(f"job_{key}", f"job cost, {label}", hours * instances * price,
                                f"={{job_hours}}*{{instances}}*{{{key}_price}}"))
    if scenario.budget.job_usd is not None:
        inputs.append(Cell(key="budget", label="job budget", value=scenario.budget.job_usd, unit="USD"))
    return inputs, cells


def region_rows(cheapest: dict[str, dict], period: str) -> list[Cell]:
    """One cell per region group: the cheapest option there (the headline puts them beside the choice)."""
    return [Cell(key=f"cheapest_{''.join(ch if ch.isalnum() else '_' for ch in group)}",
                 label=f"cheapest in {group}", value=entry["cost_usd"], unit="USD",
                 note=f"{entry['label']}, {entry['pricing_basis']}{period if period.startswith('/') else ' ' + period}")
            for group, entry in cheapest.items()]


def buy_cells(buy) -> list[Cell]:
    """Buy vs rent (plan.buy): the purchase, its power and energy, the rental beside it, the break-even."""
    cells = [Cell(key="buy_price", label=f"buy {buy.what}", value=buy.price_usd if buy.price_usd is not None
                  else "unknown", unit="USD" if buy.price_usd is not None else "", note=buy.price_note),
             Cell(key="buy_power", label="power drawn at full load", value=round(buy.power_w) if buy.power_w is not None
                  else "unknown", unit="W" if buy.power_w is not None else "", note=buy.power_note),
             Cell(key="electricity_price", label="electricity price", value=buy.electricity_usd_per_kwh,
                  unit="USD/kWh", note=buy.electricity_note)]
    if buy.energy_usd_per_month is not None:
        cells.append(_money("buy_energy_monthly", "electricity a month (full load all month, an upper bound)",
                            buy.energy_usd_per_month, "={buy_power}/1000*{hours_per_month}*{electricity_price}"
                            if buy.power_w is not None else None))
    cells.append(Cell(key="rent_monthly", label=f"rent instead: {buy.rent}" if buy.rent else "rent instead",
                      value=buy.rent_usd_per_month if buy.rent_usd_per_month is not None else "none found",
                      unit="USD" if buy.rent_usd_per_month is not None else "", note=buy.rent_note))
    cells.append(Cell(key="break_even_months", label="buying breaks even after",
                      value=round(buy.break_even_months, 2) if buy.break_even_months is not None else "never / unknown",
                      unit="months" if buy.break_even_months is not None else "", note=buy.text,
                      formula="={buy_price}/({rent_monthly}-{buy_energy_monthly})"
                      if buy.break_even_months is not None and buy.energy_usd_per_month is not None else None))
    return cells
