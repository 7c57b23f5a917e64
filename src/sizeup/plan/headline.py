"""The headline of the compute requirement sheet: what to buy or rent, what it costs on the plan's one
pricing basis (the others beside it), its share of the budget, the SLA it meets and by what margin, and
the assumptions a quick plan made. Every renderer puts it first; the JSON carries it as `headline`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sizeup.plan.sheet_load import sla_load

__all__ = ["Headline", "build_headline", "COST_KEYS", "headline_rows"]

COST_KEYS = {"month": {"on-demand": "monthly_on_demand", "spot": "monthly_spot", "reserved-1y": "monthly_reserved",
                       "mixed": "monthly_mixed", "owned": "monthly_owned"},
             "job": {"on-demand": "job_on_demand", "spot": "job_spot", "reserved-1y": "job_reserved"}}
"""Period -> basis -> key of the cost-section cell holding that cost (the headline quotes one of them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Headline:
    meets: bool
    action: str
    """"rent", "buy" (owned hardware already held is "use") or "none"."""
    count: int
    """Devices in all (GPUs per replica × replicas, or per job)."""
    device: str
    device_id: str
    gpus_per_unit: int
    replicas: int | None
    instances: int | None
    provider: str | None
    region: str | None
    instance: str | None
    engine: str
    format: str
    period: str
    """"month" (serving), "job" (fine-tune, pre-train, batch) or "device" (edge: no running cost)."""
    cost_usd: float | None
    pricing_basis: str | None
    costs_by_basis: dict[str, float] = field(default_factory=dict)
    """The same configuration on every basis the offer prices, for comparison."""
    cost_key: str | None = None
    """The cost-section cell that holds `cost_usd`."""
    budget_usd: float | None = None
    budget_share: float | None = None
    sla: dict[str, dict[str, float]] = field(default_factory=dict)
    """metric -> {"value": achieved, "target": target, "margin": 1 - value/target} (seconds or hours)."""
    sla_load: str = ""
    """The load the SLA figures hold at (plan.sheet_load): "peak", "unloaded", or "" (a job's run time)."""
    sla_at: str = ""
    """The same in words: "at the peak", "unloaded", "even unloaded" (a miss), "unloaded (one request at a time)"."""
    margin: float | None = None
    """The smallest margin over the SLA targets (or the deadline), as a fraction of the target."""
    power_w: float | None = None
    device_price_usd: float | None = None
    """Edge: the purchase price the scenario gives (the catalog holds none)."""
    buy_vs_rent: str = ""
    """Buy vs rent in one sentence (plan.buy): the break-even months, or why there is none."""
    envelope: tuple[str, ...] = ()
    """Figures beyond a physical or best-published bound (plan.envelope): stated, not promised."""
    fleet: str = ""
    """Serving: how the fleet scales over the month (floor to peak instances, instance-hours billed)."""
    by_region: dict[str, dict] = field(default_factory=dict)
    """Region group -> the cheapest option there ({"label", "offer", "region", "cost_usd", "pricing_basis"}),
    cheapest first: beside the choice, so a plan sent far away still says what is cheapest nearer home."""
    assumptions: tuple[str, ...] = ()
    text: str = ""
    """The headline as one sentence."""

    @property
    def monthly_cost_usd(self) -> float | None:
        return self.cost_usd if self.period == "month" else None

    def to_dict(self) -> dict[str, Any]:
        return {"meets": self.meets, "action": self.action, "count": self.count, "device": self.device,
                "device_id": self.device_id, "gpus_per_unit": self.gpus_per_unit, "replicas": self.replicas,
                "instances": self.instances, "provider": self.provider, "region": self.region,
                "instance": self.instance, "engine": self.engine, "format": self.format, "period": self.period,
                "monthly_cost_usd": self.monthly_cost_usd,
                "job_cost_usd": self.cost_usd if self.period == "job" else None,
                "cost_usd": self.cost_usd, "pricing_basis": self.pricing_basis,
                "costs_by_basis": dict(self.costs_by_basis), "cost_key": self.cost_key,
                "budget_usd": self.budget_usd, "budget_share": self.budget_share, "sla": dict(self.sla),
                "sla_load": self.sla_load, "margin": self.margin, "power_w": self.power_w,
                "device_price_usd": self.device_price_usd, "fleet": self.fleet, "envelope": list(self.envelope),
                "buy_vs_rent": self.buy_vs_rent,
                "by_region": {k: dict(v) for k, v in self.by_region.items()}, "assumptions": list(self.assumptions),
                "text": self.text}


def _dollars(v: float) -> str:
    return f"${v:,.0f}" if abs(v) >= 100 else f"${v:,.2f}"


def _duration(v: float, unit: str) -> str:
    if unit == "h":
        return f"{v:,.1f} h"
    return f"{v * 1e3:,.0f} ms" if v < 1 else f"{v:,.2f} s"


def _targets(result, chosen) -> dict[str, dict[str, float]]:
    scenario = result.scenario
    out: dict[str, dict[str, float]] = {}
    if "hours" in chosen.latency:
        deadline = scenario.job.deadline_hours if scenario.job else None
        if deadline:
            hours = chosen.latency["hours"]
            out["hours"] = {"value": hours, "target": deadline, "margin": 1 - hours / deadline}
        return out
    if scenario.task == "edge" and scenario.edge is not None and "tpot" in chosen.latency:
        v, t = chosen.latency["tpot"], scenario.edge.latency_s
        return {"tpot": {"value": v, "target": t, "margin": 1 - v / t}}
    targets = scenario.sla.targets or ({"ttft_p95": 2.0} if scenario.task in ("chat", "api") else {})
    for k, v in chosen.latency.items():
        t = targets.get(k)
        if t:
            out[k] = {"value": v, "target": t, "margin": 1 - v / t}
    return out


def _metric(key: str) -> str:
    """"ttft_p95" -> "TTFT p95", "hours" -> "run time"."""
    if key == "hours":
        return "run time"
    name, _, point = key.partition("_")
    point = "p99.9" if point == "p999" else point
    return f"{name.upper()} {point}".strip()


def _sla_text(sla: dict[str, dict[str, float]]) -> str:
    unit = "h" if "hours" in sla else "s"
    parts = []
    for k, m in sla.items():
        value, target = _duration(m["value"], unit), _duration(m["target"], unit)
        what = "deadline " if k == "hours" else ""
        parts.append(f"{_metric(k)} {value} ≤ {what}{target} ({m['margin']:.0%} margin)" if m["margin"] >= 0 else
                     f"{_metric(k)} {value} > {what}{target}")
    return "; ".join(parts)


def headline_rows(h: Headline) -> list[tuple[str, str]]:
    """The headline as (label, text) rows, for the renderers (they format, never recompute)."""
    where = "owned" if h.action == "use owned" else \
        f"{h.provider} {h.instance}, region {h.region}" if h.provider else "bought"
    rows = [("configuration", f"{h.count} × {h.device} ({where})" if h.device else "none"),
            ("engine and weights", f"{h.engine}, {h.format}" if h.engine else "")]
    if h.replicas is not None:
        rows.append(("replicas", f"{h.replicas} of {h.gpus_per_unit} GPU{'s' if h.gpus_per_unit > 1 else ''}"
                                 + (f" on {h.instances} instance{'s' if h.instances != 1 else ''}" if h.instances else "")))
    if h.cost_usd is not None:
        per = "/month" if h.period == "month" else " per job"
        rows.append(("cost", f"{_dollars(h.cost_usd)}{per}, {h.pricing_basis} pricing"))
        others = ", ".join(f"{b} {_dollars(v)}" for b, v in h.costs_by_basis.items() if b != h.pricing_basis)
        if others:
            rows.append(("on other bases", others))
        if h.budget_share is not None:
            rows.append(("share of the budget", f"{h.budget_share:.0%} of {_dollars(h.budget_usd)}"))
    if h.fleet:
        rows.append(("fleet", h.fleet))
    if len(h.by_region) > 1:
        per = "/month" if h.period == "month" else " per job"
        rows.append(("cheapest by region group", "; ".join(
            f"{g}: {_dollars(e['cost_usd'])}{per} ({e['label']})" for g, e in h.by_region.items())))
    if h.period == "device":
        rows.append(("device price", _dollars(h.device_price_usd) if h.device_price_usd is not None else
                     "unknown (not in the catalog; give edge.price_usd)"))
    if h.power_w:
        rows.append(("power", f"{h.power_w:,.0f} W at TDP"))
    if h.buy_vs_rent:
        rows.append(("buy vs rent", h.buy_vs_rent))
    if h.sla:
        rows.append(("SLA" if "hours" not in h.sla else "deadline",
                     (f"{h.sla_at}: " if h.sla_at else "") + _sla_text(h.sla)))
    rows += [("NOT PROMISED", text) for text in h.envelope]
    rows += [("assumption", a) for a in h.assumptions]
    return [(k, v) for k, v in rows if v]


def _quick_assumptions(result) -> tuple[str, ...]:
    """What a plan assumed about its traffic and where it may run (a quick plan states them up front)."""
    scenario, out = result.scenario, [result.weights_note] if getattr(result, "weights_note", "") else []
    traffic = scenario.traffic
    if traffic is not None and scenario.task in ("chat", "api", "vision"):
        text = traffic.description or f"{traffic.peak_requests_per_s:g} requests/s at the peak"
        if scenario.task == "vision":
            out.append(f"traffic: {text}; one input of {scenario.input_shape} per request")
        else:
            out.append(f"traffic: {text}; prompt {traffic.prompt_tokens:,} / output {traffic.output_tokens:,} tokens "
                       "on average")
    c = scenario.constraints
    if scenario.task == "edge":
        return tuple(out)
    out.append(f"regions: {', '.join(c.regions)}" if c.regions else "regions: any (none required by the scenario)")
    if c.providers:
        out.append(f"providers: {', '.join(c.providers)}")
    if not scenario.sla.targets and scenario.task in ("chat", "api"):
        out.append("no SLA given: p95 TTFT of 2 s assumed")
    return tuple(out)


def build_headline(result, cost_cells: dict[str, float] | None = None, envelope=()) -> Headline:
    """The headline of a `PlanResult` (the chosen configuration, else the closest miss)."""
    scenario = result.scenario
    chosen = result.chosen or result.closest
    assumptions = _quick_assumptions(result)
    if chosen is None:
        return Headline(meets=False, action="none", count=0, device="", device_id="", gpus_per_unit=0, replicas=None,
                        instances=None, provider=None, region=None, instance=None, engine="", format="",
                        period="month", cost_usd=None, pricing_basis=None, assumptions=assumptions,
                        text=_none_text(result.rejected))
    offer = chosen.offer
    replicas = chosen.replicas.with_redundancy if chosen.replicas is not None else None
    count = chosen.gpus * (replicas or chosen.detail.get("job_replicas") or 1)
    sla = _targets(result, chosen)
    margin = min((m["margin"] for m in sla.values()), default=None)
    power = chosen.device.tdp_w * count if chosen.device.tdp_w else None
    costs: dict[str, float] = {}
    instances = None
    buy = getattr(result, "buy", None)
    device_price = buy.price_usd if buy is not None and scenario.edge is not None else \
        scenario.edge.price_usd if scenario.edge is not None else None
    unloaded_miss = chosen.detail.get("unloaded_miss")
    if scenario.task == "edge":
        period, cost, basis = "device", None, None
    elif unloaded_miss is not None:  # a serving family that misses the SLA with no load: no fleet to price
        period, cost, basis = "month", (chosen.cost_usd if offer is not None else None), chosen.pricing_basis
        instances = 1 if offer is not None else None
    elif chosen.monthly is not None or chosen.owned:
        period = "month"
        if chosen.monthly is not None:
            instances = chosen.monthly.instances
            costs = {b: v for b, v in (("on-demand", chosen.monthly.on_demand_usd), ("spot", chosen.monthly.spot_usd),
                                       ("reserved-1y", chosen.monthly.reserved_usd),
                                       ("mixed", chosen.monthly.mixed_usd)) if v is not None}
        if chosen.detail.get("owned_monthly_usd"):
            costs["owned"] = chosen.detail["owned_monthly_usd"]
        cost, basis = chosen.cost_usd, chosen.pricing_basis
    else:
        period, cost, basis = "job", chosen.cost_usd, chosen.pricing_basis
        if offer is not None:
            instances = -(-chosen.gpus // offer.gpu_count)
            hours = chosen.latency.get("hours", 0.0)
            costs = {b: hours * instances * p for b, p in (("on-demand", offer.on_demand_usd_per_hour),
                                                           ("spot", offer.spot_usd_per_hour),
                                                           ("reserved-1y", offer.reserved_1y_usd_per_hour)) if p}
            costs[basis] = cost
    cost_key = COST_KEYS.get(period, {}).get(basis) if basis else None
    if cost_cells is not None and cost_key is not None and cost_key not in cost_cells:
        cost_key = None
    budget = scenario.budget.monthly_usd if period == "month" else scenario.budget.job_usd if period == "job" else None
    share = cost / budget if budget and cost is not None else None
    action = "use owned" if chosen.owned else "rent" if offer is not None else "buy"
    provider = offer.provider if offer is not None and not chosen.owned else None
    region = offer.region if offer is not None and not chosen.owned else None
    what = f"{count} × {chosen.device.name}"
    if offer is not None and not chosen.owned:
        what += f" as {instances or 1} × {offer.provider} {offer.instance} (region {offer.region})"
    what += f", {chosen.engine_label} with {chosen.quant} weights"
    if replicas is not None:
        what += f" ({replicas} replica{'s' if replicas != 1 else ''} of {chosen.gpus} GPU{'s' if chosen.gpus > 1 else ''})"
    parts = [("Closest option (does NOT meet the scenario): " if not result.meets else "")
             + f"{action.capitalize()} {what}."]
    fleet = _fleet_text(chosen)
    if unloaded_miss is not None:
        fleet = (f"none sized: it misses {unloaded_miss} with no load, so no number of replicas meets the SLA"
                 + ("; the price is one instance all month" if offer is not None else ""))
        parts.append("No number of replicas meets the SLA: one misses it even unloaded"
                     + (f"; one instance costs {_dollars(cost)}/month {basis}." if cost is not None else "."))
    elif cost is not None:
        per = "/month" if period == "month" else " per job"
        others = ", ".join(f"{b} {_dollars(v)}" for b, v in costs.items() if b != basis)
        parts.append(f"{_dollars(cost)}{per} {basis}" + (f" ({others})" if others else "")
                     + (f", {share:.0%} of the {_dollars(budget)} budget." if share is not None else "."))
    elif period == "device":
        price = f"device price {_dollars(device_price)}" if device_price is not None else \
            "device price unknown (not in the catalog; give edge.price_usd)"
        parts.append(f"Power {power:,.0f} W at TDP; {price}." if power else f"Power not in the catalog; {price}.")
    load = sla_load(scenario, chosen)
    missed = any(m["margin"] < 0 for m in sla.values())
    at = "" if load is None or not sla else ("even " if missed and load.kind == "unloaded" else "") + load.brief
    if sla:
        verb = "Meets" if result.meets else "Misses" if missed else "Reaches"
        parts.append(f"{verb}{' ' + at + ':' if at else ''} {_sla_text(sla)}.")
    if buy is not None:
        parts.append(buy.text[0].upper() + buy.text[1:] + ".")
    beyond = tuple(f"{c.name} {c.predicted:.3g} is beyond its bound {c.bound:.3g}"
                   + (f" ({c.consequence})" if c.consequence else "") for c in envelope)
    if beyond:
        parts.append("NOT PROMISED — " + "; ".join(beyond) + ".")
    by_region = _by_region(result)
    if len(by_region) > 1:
        per = "/month" if period == "month" else " per job"
        parts.append("Cheapest by region group: " + "; ".join(
            f"{g} {_dollars(e['cost_usd'])}{per}" for g, e in by_region.items()) + ".")
    return Headline(meets=result.meets, action=action, count=count, device=chosen.device.name,
                    device_id=chosen.device.id, gpus_per_unit=chosen.gpus, replicas=replicas, instances=instances,
                    provider=provider, region=region, instance=offer.instance if offer is not None else None,
                    engine=chosen.engine_label, format=chosen.quant, period=period, cost_usd=cost, pricing_basis=basis,
                    costs_by_basis=costs, cost_key=cost_key, budget_usd=budget, budget_share=share, sla=sla,
                    sla_load=load.kind if at else "", sla_at=at,
                    margin=margin, power_w=power, device_price_usd=device_price, fleet=fleet,
                    buy_vs_rent=buy.text if buy is not None else "",
                    envelope=beyond, by_region=by_region, assumptions=assumptions, text=" ".join(parts))


_WHY = (("does not fit", "family", ("does not fit in memory", "do not fit in memory")),
        ("misses the SLA", "family", ("misses the SLA even unloaded", "miss the SLA even unloaded")),
        ("no offer holds", "family", ("needs more GPUs than one instance holds",
                                      "need more GPUs than one instance holds")),
        ("costs at least", "family", ("costs more than the choice", "cost more than the choice")),
        ("no cloud offer", "device", ("has no cloud offer and none is owned", "have no cloud offer and none is owned")))
"""Rejection reasons (plan/serving.py) by how they start: what is counted, and the verb for one and for several."""


def _none_text(rejected) -> str:
    """When nothing is left to show: how many families (or devices) were rejected for what, largest group first."""
    counts: dict[tuple, int] = {}
    for r in rejected:
        key = next(((noun, verbs) for start, noun, verbs in _WHY if r.reason.startswith(start)),
                   ("family", ("is refused by its engine or format", "are refused by their engine or format")))
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "No configuration meets the scenario: no device, engine and format was left to try."
    plural = {"family": "families", "device": "devices"}
    said = "; ".join(f"{n} {plural[noun] if n > 1 else noun} {verbs[n > 1]}"
                     for (noun, verbs), n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"No configuration meets the scenario and none came close: {said} (see the rejected families)."


def _by_region(result) -> dict[str, dict]:
    from sizeup.plan.regions import cheapest_by_group

    return cheapest_by_group(result.ranked)


def _fleet_text(chosen) -> str:
    """"autoscaled: 2 instances at the quietest hour to 3 at the peak, 1,490 instance-hours a month"."""
    fleet = chosen.detail.get("fleet")
    if chosen.owned:
        return chosen.detail.get("owned_mix") or ""
    if not fleet:
        return ""
    low, high = fleet["floor_instances"], fleet["peak_instances"]
    span = f"{low} instance{'s' if low != 1 else ''}" + (f" at the quietest hour to {high} at the peak" if high != low
                                                          else " all month")
    text = f"autoscaled: {span}, {fleet['instance_hours']:,.0f} instance-hours a month"
    if chosen.pricing_basis == "mixed":
        text += f"; the {low} of the floor reserved for a year, the rest {fleet['burst_basis']}"
    return text
