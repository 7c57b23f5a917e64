"""Vision serving: a torch model traced once per request shape (and kept in the trace cache), priced on
each device, served one image at a time (a queue with a deterministic service time), sized for the
traffic and the SLA."""

from __future__ import annotations

import math

from sizeup.errors import ConfigError
from sizeup.hardware.catalog import Catalog
from sizeup.ingest.trace_cache import traced_ledger
from sizeup.ingest.trace_inputs import parse_input_specs
from sizeup.plan.capacity import ReplicaModel, rate_at_sla, replicas_needed, simulate
from sizeup.plan.cost import HOURS_PER_MONTH, MonthlyCost, pricing_basis
from sizeup.plan.fleet import fleet_for, month_levels
from sizeup.plan.offers import cheapest_per_group, devices_for, offers_for
from sizeup.plan.scenario import Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection, ranked_result
from sizeup.engines.defaults import default_runtime
from sizeup.engines.runtimes import get_runtime
from sizeup.price.roofline import LedgerArrays, price

__all__ = ["plan_vision", "vision_ledger"]


def vision_ledger(scenario: Scenario, dtype: str):
    """The traced ledger of one request of the scenario's model at `dtype` (from the trace cache)."""
    inputs = parse_input_specs([scenario.input_shape])
    return traced_ledger(scenario.model, inputs, dtype=dtype, name=scenario.model.rpartition(":")[2])


def plan_vision(scenario: Scenario, catalog: Catalog) -> PlanResult:
    if not scenario.input_shape:
        raise ConfigError("scenario key 'input_shape' is missing (the input of one request, e.g. 1x3x640x640)")
    traffic, c = scenario.traffic, scenario.constraints
    basis = pricing_basis(scenario)
    targets = {k: v for k, v in scenario.sla.targets.items() if k.startswith("e2e")} or {"e2e_p99": 0.2}
    dtype = "fp16" if "fp16" in c.quantizations else "fp32"
    arrays = LedgerArrays.from_ledger(vision_ledger(scenario, dtype))
    runtime = get_runtime(scenario.runtime or default_runtime())
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, gap_best = None, "", math.inf
    levels, method = month_levels(traffic)
    for device in devices_for(catalog, scenario):
        groups = cheapest_per_group(offers_for(catalog, scenario, device), 1,
                                    "reserved-1y" if basis == "mixed" else basis)
        if not groups:
            continue
        evaluated += 1
        family = f"1x {device.id} {dtype}"
        roof = price(arrays, device, runtime=runtime)
        latency = roof.total_s.typical
        model = ReplicaModel(prefill_fixed_s=latency, prefill_per_token_s=0.0, decode_batches=(1,),
                             decode_step_s=(latency,), max_batch=1)
        rate, sim = rate_at_sla(model, 1, 1, targets, requests=1500)
        offer, hourly = min(groups.values(), key=lambda t: t[1])
        if rate <= 0:
            miss = ", ".join(f"{k} {sim.metric(k) * 1e3:,.1f} ms > {v * 1e3:,.0f} ms" for k, v in targets.items())
            rejected.append(Rejection(family=family, reason=f"misses the SLA even unloaded: {miss}"))
            gap = max(sim.metric(k) / v for k, v in targets.items())
            if gap < gap_best:
                gap_best, closest_miss = gap, miss
                closest = Candidate(device=device, gpus=1, quant=dtype, engine=runtime.id, offer=offer,
                                    latency={k: sim.metric(k) for k in targets})
            continue
        plan = replicas_needed(traffic.peak_requests_per_s, traffic.base_requests_per_s, rate, c.headroom,
                               0 if c.redundancy is False else 1)
        peak = simulate(model, traffic.peak_requests_per_s / plan.for_load, 1, 1, requests=1500, seed=1)
        spare = plan.with_redundancy - plan.for_load
        fleets = {g: fleet_for(levels, method, rate * (1 - c.headroom), spare, o, o.gpu_count, c.spot)
                  for g, (o, _) in groups.items()}
        by_region = {g: {"offer": groups[g][0].id, "region": groups[g][0].region,
                         **dict(zip(("cost_usd", "pricing_basis"), _on(f.costs, basis)))} for g, f in fleets.items()}
        group = min(by_region, key=lambda g: by_region[g]["cost_usd"])
        offer, fleet = groups[group][0], fleets[group]
        monthly = MonthlyCost(instances=fleet.peak_instances, on_demand_usd=fleet.costs["on-demand"],
                              spot_usd=fleet.costs.get("spot"), reserved_usd=fleet.costs.get("reserved-1y"),
                              mixed_usd=fleet.costs.get("mixed"), instance_hours=fleet.instance_hours)
        cost, used = by_region[group]["cost_usd"], by_region[group]["pricing_basis"]
        candidate = Candidate(device=device, gpus=1, quant=dtype, engine=runtime.id, offer=offer, replicas=plan,
                              simulation=peak, monthly=monthly, cost_usd=cost, pricing_basis=used,
                              latency={k: peak.metric(k) for k in targets}, max_batch=1,
                              detail={"rate_per_replica": rate, "latency_per_image_s": latency,
                                      "overhead_bound_s": roof.overhead_bound_s + roof.fixed_s.typical,
                                      "overhead_per_kernel_s": roof.efficiency.overhead_s.typical,
                                      "kernels": int(roof.arrays.launches.sum()), "runtime": runtime.id,
                                      "hourly_per_replica": hourly, "monthly_per_replica": hourly * HOURS_PER_MONTH,
                                      "fleet": fleet.to_dict(), "by_region": by_region, "link": "one GPU per replica",
                                      "floor_replicas": fleet.floor_replicas})
        if scenario.budget.monthly_usd is not None and cost > scenario.budget.monthly_usd:
            rejected.append(Rejection(family=family, reason=f"${cost:,.0f}/month {used} is over the budget of "
                                                            f"${scenario.budget.monthly_usd:,.0f}"))
            continue
        candidates.append(candidate)
    assumptions = [f"one image per request ({scenario.input_shape}, {dtype}), served one at a time",
                   f"runtime {runtime.id}: {runtime.name}; per op time = max(GPU time, host time per kernel)",
                   f"traffic: {traffic.description}"]
    assumptions.append(f"month billed as the autoscaled fleet: {method}")
    return ranked_result(scenario, None, candidates, rejected, closest, closest_miss, evaluated, assumptions,
                         latency_key=next(iter(targets)))


def _on(costs: dict[str, float], basis: str) -> tuple[float, str]:
    return (costs[basis], basis) if basis in costs else (costs["on-demand"], "on-demand")
