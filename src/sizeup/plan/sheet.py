"""The compute requirement sheet: typed content that every renderer (terminal, Markdown, JSON, HTML,
XLSX) formats without recomputing.

A `Cell` holds a value and, for the key figures, an Excel formula over other cells' keys written as
`{key}` placeholders (e.g. "=ROUNDUP({peak_rps}/{rps_per_replica},0)+1"); the XLSX renderer turns the
placeholders into cell references, so a user who edits an input sees the sheet update. The Python
value of a formula cell is the same arithmetic, so both agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sizeup.units import spoken_metric
from sizeup.plan.headline import Headline, build_headline

__all__ = ["Cell", "Section", "Sheet"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    key: str
    """Unique within the sheet; letters, digits and underscores."""
    label: str
    value: float | int | str | bool | None
    unit: str = ""
    """"USD", "USD/h", "req/s", "s", "bytes", "%", "" …"""
    formula: str | None = None
    """Excel formula with {key} placeholders; None for plain values."""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "value": self.value, "unit": self.unit,
                "formula": self.formula, "note": self.note}


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    title: str
    cells: tuple[Cell, ...] = ()
    table_headers: tuple[str, ...] = ()
    table_rows: tuple[tuple[Any, ...], ...] = ()
    """An optional table (e.g. the runners-up and why each lost)."""
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "cells": [c.to_dict() for c in self.cells],
                "table": {"headers": list(self.table_headers), "rows": [list(r) for r in self.table_rows]},
                "notes": list(self.notes)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sheet:
    title: str
    scenario: str
    meets: bool
    """False when no configuration meets the scenario (the sheet then shows the closest option)."""
    verdict: str
    inputs: tuple[Cell, ...]
    """Editable inputs (traffic, prices, SLA targets) that the XLSX formulas refer to."""
    sections: tuple[Section, ...]
    """Hardware selection, cost budget, SLA commitment, fault plan — in that order."""
    assumptions: tuple[str, ...] = ()
    plots: dict[str, str] = field(default_factory=dict)
    """Plot name -> PNG path, when plots were drawn."""
    headline: Headline | None = None
    """What to buy or rent and what it costs on one pricing basis: every renderer shows it first."""

    def cells(self) -> dict[str, Cell]:
        out = {c.key: c for c in self.inputs}
        for section in self.sections:
            out.update({c.key: c for c in section.cells})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "scenario": self.scenario, "meets": self.meets, "verdict": self.verdict,
                "inputs": [c.to_dict() for c in self.inputs], "sections": [s.to_dict() for s in self.sections],
                "assumptions": list(self.assumptions), "plots": dict(self.plots),
                "headline": None if self.headline is None else self.headline.to_dict()}


# ---- building the sheet from a plan ---------------------------------------------------------

def _money(key: str, label: str, value: float, formula: str | None = None, note: str = "") -> Cell:
    return Cell(key=key, label=label, value=value, unit="USD", formula=formula, note=note)


def build_sheet(result) -> Sheet:
    """The four sections of the compute requirement sheet for a `PlanResult`."""
    from sizeup.plan.cost import HOURS_PER_MONTH

    scenario = result.scenario
    chosen = result.chosen or result.closest
    inputs: list[Cell] = []
    sections: list[Section] = []
    if result.meets:
        verdict = f"meets the scenario with {chosen.label}"
    elif chosen is not None:
        verdict = f"NO configuration meets the scenario; closest: {chosen.label} — {result.closest_miss}"
    else:
        verdict = "NO configuration meets the scenario and none came close (see the rejected families)"
    serving = scenario.task in ("chat", "api", "vision") and chosen is not None and chosen.replicas is not None
    # hardware selection
    hw: list[Cell] = []
    if chosen is not None:
        hw += [Cell(key="device", label="device", value=chosen.device.name),
               Cell(key="gpus_per_unit", label="GPUs per replica" if serving else "GPUs", value=chosen.gpus),
               Cell(key="quantization", label="weights", value=chosen.quant),
               Cell(key="engine", label="engine", value=chosen.engine_label)]
        if chosen.offer is not None:
            hw.append(Cell(key="offer", label="cloud offer", value=f"{chosen.offer.provider} {chosen.offer.instance}",
                           note=f"price of {chosen.offer.price_date}, {chosen.offer.region}"))
        if chosen.memory_bytes:
            hw += [Cell(key="memory_needed", label="memory needed per GPU", value=chosen.memory_bytes, unit="bytes"),
                   Cell(key="memory_usable", label="memory usable per GPU", value=int(chosen.usable_bytes), unit="bytes")]
        profile = chosen.detail.get("multimodal_profile")
        if profile:  # vLLM's start-up profile of the vision tower, ahead of the KV pool
            hw.insert(-1, Cell(key="multimodal_profile", label="of which vLLM multimodal profile",
                               value=chosen.detail["memory_parts"].get("multimodal profile", 0), unit="bytes",
                               note=f"{profile['items']} dummy image(s) of {profile['image_hw'][0]} × "
                                    f"{profile['image_hw'][1]}, encoder budget {profile['encoder_budget_tokens']:,} "
                                    f"tokens"))
    job = chosen is not None and "hours" in chosen.latency
    if chosen is not None and job and scenario.job is not None:
        hw.append(Cell(key="method", label="method", value=scenario.job.method))
    period = "per job" if job else "/month"
    basis = chosen.pricing_basis if chosen is not None else "on-demand"
    runners = tuple((c.label, _priced(c.cost_usd, c.pricing_basis, period, basis), _latencies(c.latency))
                    for c in result.ranked[1:6])
    rejected = tuple((r.family, r.reason) for r in result.rejected[:12])
    sections.append(Section(title="Hardware selection", cells=tuple(hw),
                            table_headers=("runner-up", f"cost ({basis} unless marked)",
                                           "run time" if job else "latency at the peak") if runners else (),
                            table_rows=runners,
                            notes=tuple(f"rejected {f}: {why}" for f, why in rejected)))
    # cost budget, with live formulas over the inputs
    cost_cells: list[Cell] = []
    if serving:
        plan, offer = chosen.replicas, chosen.offer
        inputs += [Cell(key="peak_rps", label="peak requests per second", value=plan.peak_requests_per_s,
                        unit="req/s"),
                   Cell(key="base_rps", label="mean requests per second", value=plan.base_requests_per_s,
                        unit="req/s"),
                   Cell(key="rate_per_replica", label="requests per second per replica at the SLA",
                        value=plan.rate_per_replica, unit="req/s"),
                   Cell(key="headroom", label="capacity kept free at the peak", value=plan.headroom, unit="%"),
                   Cell(key="hours_per_month", label="hours per month", value=HOURS_PER_MONTH, unit="h")]
        spare = plan.with_redundancy - plan.for_load
        replicas_formula = "=ROUNDUP({peak_rps}/({rate_per_replica}*(1-{headroom})),0)"
        cost_cells += [Cell(key="replicas_for_load", label="replicas for the peak load", value=plan.for_load,
                            formula=replicas_formula, note=plan.arithmetic),
                       Cell(key="replicas", label=f"replicas with N+{spare}" if spare else
                            "replicas (no spare: redundancy not asked for)", value=plan.with_redundancy,
                            formula=f"={{replicas_for_load}}+{spare}"),
                       Cell(key="replicas_at_base", label="replicas at the mean load (autoscaling floor)",
                            value=plan.at_base, formula="=ROUNDUP({base_rps}/({rate_per_replica}*(1-{headroom})),0)")]
        if offer is not None and chosen.monthly is not None:
            per_instance = max(1, offer.gpu_count // chosen.gpus) if offer.gpu_count >= chosen.gpus else 1
            gpus_factor = 1 if offer.gpu_count >= chosen.gpus else -(-chosen.gpus // offer.gpu_count)
            inputs += [Cell(key="instance_price", label=f"{offer.instance} on-demand price",
                            value=offer.on_demand_usd_per_hour, unit="USD/h", note=f"price of {offer.price_date}"),
                       Cell(key="replicas_per_instance", label="replicas per instance", value=per_instance),
                       Cell(key="instances_per_replica", label="instances per replica", value=gpus_factor)]
            instances = chosen.monthly.instances
            cost_cells += [Cell(key="instances", label="instances", value=instances,
                                formula="=ROUNDUP({replicas}/{replicas_per_instance},0)*{instances_per_replica}"),
                           _money("monthly_on_demand", "monthly cost, on-demand", chosen.monthly.on_demand_usd,
                                  "={instances}*{instance_price}*{hours_per_month}")]
            if offer.spot_usd_per_hour is not None:
                inputs.append(Cell(key="spot_price", label=f"{offer.instance} spot price", value=offer.spot_usd_per_hour,
                                   unit="USD/h"))
                cost_cells.append(_money("monthly_spot", "monthly cost, spot (preemptible)", chosen.monthly.spot_usd,
                                         "={instances}*{spot_price}*{hours_per_month}",
                                         "spot capacity can be reclaimed: keep the N+1 replica on-demand"))
            if offer.reserved_1y_usd_per_hour is not None:
                inputs.append(Cell(key="reserved_price", label=f"{offer.instance} 1-year reserved price",
                                   value=offer.reserved_1y_usd_per_hour, unit="USD/h"))
                cost_cells.append(_money("monthly_reserved", "monthly cost, 1-year reserved", chosen.monthly.reserved_usd,
                                         "={instances}*{reserved_price}*{hours_per_month}"))
        if chosen.detail.get("owned_monthly_usd"):
            cost_cells.append(_money("monthly_owned", "monthly cost, owned (amortised + power)",
                                     chosen.detail["owned_monthly_usd"]))
        traffic = scenario.traffic
        if traffic is not None and chosen.monthly is not None and scenario.task != "vision":
            inputs.append(Cell(key="output_tokens", label="output tokens per request", value=traffic.output_tokens))
            tokens_month = plan.base_requests_per_s * traffic.output_tokens * 3600 * HOURS_PER_MONTH
            cost_cells.append(_money("usd_per_million_tokens", "cost per million output tokens (on-demand, mean load)",
                                     chosen.monthly.on_demand_usd / tokens_month * 1e6,
                                     "={monthly_on_demand}/({base_rps}*{output_tokens}*3600*{hours_per_month})*1000000"))
        if scenario.budget.monthly_usd is not None:
            inputs.append(Cell(key="budget", label="monthly budget", value=scenario.budget.monthly_usd, unit="USD"))
    elif chosen is not None and job and chosen.offer is not None:
        offer = chosen.offer
        hours = chosen.latency["hours"]
        instances = -(-chosen.gpus // offer.gpu_count)  # whole instances, as the estimate rents them
        inputs += [Cell(key="job_hours", label="run time", value=hours, unit="h"),
                   Cell(key="instance_price", label=f"{offer.instance} on-demand price",
                        value=offer.on_demand_usd_per_hour, unit="USD/h", note=f"price of {offer.price_date}"),
                   Cell(key="instances", label="instances", value=instances)]
        cost_cells.append(_money("job_on_demand", "job cost, on-demand", hours * instances * offer.on_demand_usd_per_hour,
                                 "={job_hours}*{instances}*{instance_price}"))
        for key, label, price in (("spot", "spot", offer.spot_usd_per_hour),
                                  ("reserved", "1-year reserved", offer.reserved_1y_usd_per_hour)):
            if price:
                inputs.append(Cell(key=f"{key}_price", label=f"{offer.instance} {label} price", value=price,
                                   unit="USD/h"))
                cost_cells.append(_money(f"job_{key}", f"job cost, {label}", hours * instances * price,
                                         f"={{job_hours}}*{{instances}}*{{{key}_price}}"))
        if scenario.budget.job_usd is not None:
            inputs.append(Cell(key="budget", label="job budget", value=scenario.budget.job_usd, unit="USD"))
    comparison = tuple((m, label, round(hours, 2), round(cost, 2)) for m, label, hours, cost in result.method_comparison)
    if cost_cells or comparison:  # an edge device has no running cost: its section says what it draws instead
        sections.append(Section(title="Cost budget", cells=tuple(cost_cells),
                                table_headers=("method", "cheapest configuration", "run time (h)",
                                               f"job cost (USD, {basis})") if comparison else (),
                                table_rows=comparison))
    if scenario.task == "edge" and chosen is not None:
        sections.append(_edge_section(scenario, chosen))
    # SLA commitment
    sla_cells: list[Cell] = []
    if chosen is not None and chosen.simulation is not None:
        sim = chosen.simulation
        for metric in ("e2e",) if scenario.task == "vision" else ("ttft", "tpot", "e2e"):
            for point in ("p50", "p95", "p99", "p999"):
                value = sim.metric(f"{metric}_{point}")
                if value == value:  # not NaN
                    target = scenario.sla.targets.get(f"{metric}_{point}")
                    name = ("per-request latency " + point.replace("p999", "p99.9") if scenario.task == "vision"
                            else spoken_metric(f"{metric}_{point}"))
                    sla_cells.append(Cell(key=f"{metric}_{point}", label=f"{name} at the peak",
                                          value=round(value, 6), unit="s",
                                          note=f"target {target:g} s" if target else ""))
    elif chosen is not None and job:
        deadline = scenario.job.deadline_hours if scenario.job else None
        sla_cells.append(Cell(key="commit_hours", label="run time", value=round(chosen.latency["hours"], 3), unit="h",
                              note=f"deadline {deadline:g} h" if deadline else "no deadline given"))
    elif chosen is not None:
        for k, v in chosen.latency.items():
            target = scenario.edge.latency_s if scenario.edge is not None and k == "tpot" else None
            sla_cells.append(Cell(key=f"commit_{k}", label=_METRIC_LABELS.get(k, k), value=round(v, 6), unit="s",
                                  note=f"target {target:g} s" if target else ""))
    if chosen is not None and "overhead_bound_s" in chosen.detail:  # vision: one image per forward
        d = chosen.detail
        sla_cells += [Cell(key="latency_per_image", label="latency per image, unloaded (batch 1)",
                           value=round(d["latency_per_image_s"], 6), unit="s",
                           note=f"runtime {d['runtime']}, including the per-op overhead below"),
                      Cell(key="overhead_per_image", label="of which per-op overhead (host-bound ops)",
                           value=round(d["overhead_bound_s"], 6), unit="s",
                           note=f"{d['kernels']} kernels x {d['overhead_per_kernel_s'] * 1e6:.3g} us host time")]
    if chosen is not None and chosen.detail.get("saturation_rps"):
        sla_cells.append(Cell(key="saturation_rps", label="saturation point per replica (queues grow beyond)",
                              value=chosen.detail["saturation_rps"], unit="req/s"))
    if scenario.task == "vision" and serving:
        plan = chosen.replicas
        sla_cells.append(Cell(key="images_per_s", label="images per second, fleet at the SLA",
                              value=plan.rate_per_replica * plan.for_load, unit="img/s",
                              formula="={rate_per_replica}*{replicas_for_load}"))
        sla_notes = ("percentiles from a simulation of a queue of single-image requests at the peak rate per replica; "
                     "the priced latency of one image carries the assumptions below",)
    elif serving:
        sla_notes = ("percentiles from a discrete-event simulation of continuous batching at the peak rate per "
                     "replica; the priced step times carry the assumptions below",)
    else:
        sla_notes = ()
    sections.append(Section(title="SLA commitment", cells=tuple(sla_cells), notes=sla_notes))
    # fault plan
    fault: list[Cell] = []
    if chosen is not None and chosen.memory_bytes and chosen.usable_bytes:
        margin = chosen.usable_bytes - chosen.memory_bytes
        fault.append(Cell(key="oom_margin", label="OOM margin per GPU", value=int(margin), unit="bytes",
                          note=f"{margin / chosen.usable_bytes:.0%} of usable memory"))
        fault.append(Cell(key="leak_threshold", label="memory-leak alert: growth per hour above", value=int(margin / 24),
                          unit="bytes", note="the margin would be gone within a day"))
    if serving:
        plan = chosen.replicas
        fault.append(Cell(key="scale_out_at", label="scale out when requests per replica exceed",
                          value=plan.rate_per_replica * plan.scale_out_utilisation, unit="req/s",
                          formula="={rate_per_replica}*(1-{headroom})"))
        for k, v in scenario.sla.targets.items():
            fault.append(Cell(key=f"alert_{k}", label=f"alert: {k} above", value=v, unit="s",
                              note="a sustained breach at normal load suggests a CPU fallback or a slow node"))
    if result.ranked[1:]:
        fault.append(Cell(key="fallback", label="fallback configuration", value=result.ranked[1].label))
    if scenario.task in ("finetune", "pretrain") and chosen is not None and result.arch is not None:
        fault += _checkpoint_cells(scenario, result.arch)
    sections.append(Section(title="Fault plan", cells=tuple(fault)))
    cells = {c.key: c.value for c in inputs} | {c.key: c.value for sec in sections for c in sec.cells}
    headline = build_headline(result, cells)
    return Sheet(title=f"Compute requirement sheet: {scenario.name}", scenario=scenario.name, meets=result.meets,
                 verdict=verdict, inputs=tuple(inputs), sections=tuple(sections),
                 assumptions=tuple(result.assumptions), headline=headline)


_METRIC_LABELS = {"tpot": "time per output token (thermally derated)", "ttft": "time to first token (derated)"}


def _latencies(latency: dict[str, float]) -> str:
    """"ttft_p95 232 ms, tpot_p95 42 ms" or "2.7 h"."""
    if "hours" in latency:
        return f"{latency['hours']:,.2f} h"
    return ", ".join(f"{k} {v * 1e3:,.0f} ms" if v < 1 else f"{k} {v:,.2f} s" for k, v in latency.items())


def _priced(cost: float, basis: str, period: str, plan_basis: str) -> str:
    """"$975/month" on the plan's basis; a row on another basis (an owned card, an offer without that
    price) names its own."""
    text = f"${cost:,.0f}" if cost >= 100 else f"${cost:,.2f}"
    text = f"{text}{period}" if period.startswith("/") else f"{text} {period}"
    return text if basis == plan_basis else f"{text} {basis}"


CHECKPOINT_BYTES_PER_PARAM = 14
"""A resumable checkpoint per trainable parameter: bf16 weights (2) + fp32 master copy (4) + Adam's two fp32
moments (8); frozen base weights are not rewritten."""


def _checkpoint_cells(scenario, arch) -> list[Cell]:
    """Jobs: the checkpoint size and write time, and the Young/Daly interval (spot: preemption every 6 h
    assumed; on-demand: no preemption, so the interval is set by the nodes' failure rate, not known here)."""
    from sizeup.plan.cost import checkpoint_plan
    from sizeup.workload.finetune import FinetuneSpec, trainable_parameters

    job = scenario.job
    trainable = arch.params if job.method == "full" else \
        trainable_parameters(arch, FinetuneSpec(method=job.method, rank=job.rank)).trainable_params
    state = trainable * CHECKPOINT_BYTES_PER_PARAM
    plan = checkpoint_plan(state, 1e9, 6 * 3600)
    cells = [Cell(key="checkpoint_bytes", label="checkpoint size", value=int(state), unit="bytes",
                  note=f"{trainable:,} trainable parameters × {CHECKPOINT_BYTES_PER_PARAM} bytes (weights, fp32 master, "
                       "Adam moments)"),
             Cell(key="checkpoint_write", label="checkpoint write time", value=round(plan.write_s, 3), unit="s",
                  note="at 1 GB/s to storage (assumed)")]
    if scenario.constraints.spot:
        cells.append(Cell(key="checkpoint_interval", label="checkpoint every", value=round(plan.interval_s, 1),
                          unit="s", note=plan.arithmetic + " (preemption every 6 h assumed)"))
    else:
        cells.append(Cell(key="checkpoint_interval", label="checkpoint every", value="by the failure rate",
                          note="on-demand capacity is not preempted: τ = √(2·C·M) with M the nodes' mean time "
                               "between failures (not known here); at least once before the run ends"))
    return cells


def _edge_section(scenario, chosen) -> Section:
    """Edge: what the device draws, how the model fits next to the OS, and the thermal derate."""
    device, edge = chosen.device, scenario.edge
    cells = [Cell(key="edge_device", label="device", value=device.name),
             Cell(key="edge_power", label="device power (TDP)", value=device.tdp_w, unit="W" if device.tdp_w else "",
                  note="" if device.tdp_w else "not in the catalog"),
             Cell(key="edge_price", label="device price", value=edge.price_usd, unit="USD", note="from the scenario")
             if edge is not None and edge.price_usd is not None else
             Cell(key="edge_price", label="device price", value="unknown",
                  note="the catalog holds no purchase price: give edge.price_usd in the scenario"),
             Cell(key="edge_memory_needed", label="memory needed", value=chosen.memory_bytes, unit="bytes"),
             Cell(key="edge_memory_usable", label="memory usable after the OS share", value=int(chosen.usable_bytes),
                  unit="bytes")]
    if edge is not None:
        cells.append(Cell(key="thermal_derate", label="thermal derate on sustained speed", value=edge.thermal_derate,
                          note="assumption, not measured"))
    return Section(title="Device", cells=tuple(cells), notes=("no cloud cost: the model runs on the device",))
