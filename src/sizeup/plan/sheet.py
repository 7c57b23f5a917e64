"""The compute requirement sheet: typed content that every renderer (terminal, Markdown, JSON, HTML,
XLSX) formats without recomputing.

A `Cell` holds a value and, for the key figures, an Excel formula over other cells' keys written as
`{key}` placeholders (e.g. "=ROUNDUP({peak_rps}/{rps_per_replica},0)+1"); the XLSX renderer turns the
placeholders into cell references, so a user who edits an input sees the sheet update. The Python
value of a formula cell is the same arithmetic, so both agree.
"""

from __future__ import annotations

from sizeup.plan.headline import build_headline
from sizeup.plan.sheet_load import sla_load, target_note
from sizeup.plan.sheet_types import Cell, Section, Sheet
from sizeup.units import spoken_metric

__all__ = ["Cell", "Section", "Sheet"]


# ---- building the sheet from a plan ---------------------------------------------------------

def build_sheet(result) -> Sheet:
    """The four sections of the compute requirement sheet for a `PlanResult`."""
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
        if profile:  # the engine's start-up profile of the vision tower, ahead of the KV pool
            hw.insert(-1, Cell(key="multimodal_profile", label="of which the engine's multimodal profile",
                               value=chosen.detail["memory_parts"].get("multimodal profile", 0), unit="bytes",
                               note=f"{profile['items']} dummy image(s) of {profile['image_hw'][0]} × "
                                    f"{profile['image_hw'][1]}, encoder budget {profile['encoder_budget_tokens']:,} "
                                    f"tokens"))
    job = chosen is not None and "hours" in chosen.latency
    if chosen is not None and job and scenario.job is not None and scenario.task in ("finetune", "pretrain"):
        hw.append(Cell(key="method", label="method", value=scenario.job.method))
    period = "per job" if job else "/month"
    basis = chosen.pricing_basis if chosen is not None else "on-demand"
    runners = tuple((c.label, _priced(c.cost_usd, c.pricing_basis, period, basis), _latencies(c.latency))
                    for c in result.ranked[1:6])
    rejected = tuple((r.family, r.reason) for r in result.rejected[:12])
    sections.append(Section(title="Hardware selection", cells=tuple(hw),
                            table_headers=("runner-up", f"cost ({basis} unless marked)",
                                           "run time" if job else f"latency {sla_load(scenario, chosen).phrase}")
                            if runners else (),
                            table_rows=runners,
                            notes=tuple(f"rejected {f}: {why}" for f, why in rejected)))
    # cost budget, with live formulas over the inputs
    from sizeup.plan.regions import cheapest_by_group
    from sizeup.plan.sheet_cost import buy_cells, job_cost, region_rows, serving_cost

    cost_cells: list[Cell] = []
    headers: tuple[str, ...] = ()
    rows: tuple[tuple, ...] = ()
    if serving:
        more, cost_cells, headers, rows = serving_cost(scenario, chosen)
        inputs += more
    elif chosen is not None and job and chosen.offer is not None:
        more, cost_cells = job_cost(scenario, chosen)
        inputs += more
    comparison = tuple((m, label, round(hours, 2), round(cost, 2)) for m, label, hours, cost in result.method_comparison)
    if comparison:
        headers = ("method", "cheapest configuration", "run time (h)", f"job cost (USD, {basis})")
        rows = comparison
    regions = cheapest_by_group(result.ranked)
    if len(regions) > 1 or (regions and chosen is not None and chosen.offer is None):
        cost_cells += region_rows(regions, period)
    if result.buy is not None and scenario.task == "edge":  # a device bought once: its price, energy, break-even
        from sizeup.plan.cost import HOURS_PER_MONTH

        inputs.append(Cell(key="hours_per_month", label="hours per month", value=HOURS_PER_MONTH, unit="h"))
        cost_cells += buy_cells(result.buy)
    if cost_cells or rows:
        sections.append(Section(title="Cost budget", cells=tuple(cost_cells), table_headers=headers, table_rows=rows))
    if result.buy is not None and scenario.task != "edge":
        sections.append(Section(title="Buy vs rent", cells=tuple(buy_cells(result.buy)),
                                notes=("the fleet's peak GPUs bought as the catalog's items; energy at full load all "
                                       "month",)))
    if scenario.task == "edge" and chosen is not None:
        sections.append(_edge_section(scenario, chosen))
    # SLA commitment: each latency row says at which load it holds (plan.sheet_load) and, against its target,
    # whether it meets it or by how much it misses
    sla_cells: list[Cell] = []
    load = sla_load(scenario, chosen)
    if chosen is not None and chosen.simulation is not None:
        sim = chosen.simulation
        for metric in ("e2e",) if scenario.task == "vision" else ("ttft", "tpot", "e2e"):
            for point in ("p50", "p95", "p99", "p999"):
                value = sim.metric(f"{metric}_{point}")
                if value == value:  # not NaN
                    target = scenario.sla.targets.get(f"{metric}_{point}")
                    name = ("per-request latency " + point.replace("p999", "p99.9") if scenario.task == "vision"
                            else spoken_metric(f"{metric}_{point}"))
                    sla_cells.append(Cell(key=f"{metric}_{point}", label=f"{name} {load.phrase}",
                                          value=round(value, 6), unit="s", load=load.kind,
                                          note=target_note(value, target, load) if target else ""))
    elif chosen is not None and job:
        deadline = scenario.job.deadline_hours if scenario.job else None
        sla_cells.append(Cell(key="commit_hours", label="run time", value=round(chosen.latency["hours"], 3), unit="h",
                              note=f"deadline {deadline:g} h" if deadline else "no deadline given"))
    elif chosen is not None:
        for k, v in chosen.latency.items():
            target = scenario.edge.latency_s if scenario.edge is not None and k == "tpot" else None
            label = _METRIC_LABELS.get(k, k) + (f", {load.phrase}" if load else "")
            sla_cells.append(Cell(key=f"commit_{k}", label=label, value=round(v, 6), unit="s",
                                  load=load.kind if load else "",
                                  note=target_note(v, target, load) if target else ""))
    if chosen is not None and "overhead_bound_s" in chosen.detail:  # vision: one image per forward
        d = chosen.detail
        sla_cells += [Cell(key="latency_per_image", label="latency per image, unloaded (batch 1)",
                           value=round(d["latency_per_image_s"], 6), unit="s", load="unloaded",
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
    sla_notes = (f"latency {load.phrase}: {load.detail}",) if load else ()
    if scenario.task == "vision" and chosen is not None and chosen.simulation is not None:
        sla_notes += ("percentiles from a simulation of a queue of single-image requests; the priced latency of one "
                      "image carries the assumptions below",)
    elif chosen is not None and chosen.simulation is not None:
        sla_notes += ("percentiles from a discrete-event simulation of continuous batching; the priced step times "
                      "carry the assumptions below",)
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
        fault.append(_recovery_cell(plan.with_redundancy > plan.for_load))
    if result.ranked[1:]:
        fault.append(Cell(key="fallback", label="fallback configuration", value=result.ranked[1].label))
    if chosen is not None and "thermal_cut_c" in chosen.detail:  # edge: the module's first throttling trip
        fault.append(Cell(key="thermal_cut", label=f"cut the batch or drop a power mode before "
                                                    f"{chosen.detail['thermal_sensor'].split(' ')[0]} reaches",
                          value=chosen.detail["thermal_cut_c"], unit="°C",
                          note=chosen.detail["thermal_basis"] + "; watch it with sizeup watch --util --trip "
                               f"{chosen.detail['thermal_cut_c']:g}"))
    if scenario.task in ("finetune", "pretrain") and chosen is not None and result.arch is not None:
        fault += _checkpoint_cells(scenario, result.arch, chosen)
    sections.append(Section(title="Fault plan", cells=tuple(fault)))
    from sizeup.plan.envelope import envelope_checks
    from sizeup.plan.recipe import recipe_section

    checks = envelope_checks(result)
    if checks:
        sections.append(_envelope_section(checks))
    recipe = recipe_section(result)
    if recipe is not None:
        sections.append(recipe)
    tripped = [c for c in checks if c.tripped]
    if tripped:
        verdict += " — NOT PROMISED: " + "; ".join(f"{c.name} beyond its bound" for c in tripped)
    cells = {c.key: c.value for c in inputs} | {c.key: c.value for sec in sections for c in sec.cells}
    headline = build_headline(result, cells, envelope=tuple(tripped))
    return Sheet(title=f"Compute requirement sheet: {scenario.name}", scenario=scenario.name, meets=result.meets,
                 verdict=verdict, inputs=tuple(inputs), sections=tuple(sections),
                 assumptions=tuple(result.assumptions), headline=headline)


def _recovery_cell(spare: bool) -> Cell:
    """The recovery promised when one replica fails (plan/fault.py); `sizeup load --chaos --sla` tests it."""
    from sizeup.plan.fault import recovery_promise

    promise = recovery_promise(spare)
    return Cell(key="recovery_s", label="recovery when a replica fails, within",
                value=promise.seconds if promise.seconds is not None else "not bounded", unit="s" if spare else "",
                note=promise.basis + "; test it with sizeup load --chaos")


def _envelope_section(checks) -> Section:
    """Each envelope check: the prediction, the bound, and what the plan is at the bound when it trips."""
    cells = []
    for i, c in enumerate(checks):
        value = round(c.predicted, 6) if c.unit in ("s", "fraction") else round(c.predicted, 1)
        bound = (f"{c.bound * 1e3:,.3g} ms" if c.unit == "s" else f"{c.bound:.0%}" if c.unit == "fraction"
                 else f"{c.bound:,.0f} {c.unit}")
        relation = "at least" if c.unit == "s" else "at most"
        cells.append(Cell(key=f"envelope_{i}", label=c.name, value=value,
                          unit={"s": "s", "fraction": "%"}.get(c.unit, c.unit),
                          note=(f"BEYOND THE BOUND ({relation} {bound}): not promised; {c.consequence}. " if c.tripped
                                else f"within the bound ({relation} {bound}). ") + c.basis))
    return Section(title="Envelope check", cells=tuple(cells),
                   notes=("no predicted figure beyond a physical or best-published bound is promised",))


_METRIC_LABELS = {"tpot": "time per output token (thermally derated)", "ttft": "time to first token (derated)"}
"""An edge board's figures (plan.edge: one request at a time, after the thermal derate)."""


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


WRITE_BYTES_PER_S_PER_INSTANCE = 1e9
"""Checkpoint write bandwidth of one instance to shared storage: assumed (1 GB/s), stated on the sheet."""


def _checkpoint_cells(scenario, arch, chosen) -> list[Cell]:
    """Jobs: the checkpoint size and write time, and the Young/Daly interval τ = √(2·δ·M) with M the job's mean
    time between interruptions from a published per-GPU failure rate (plan.reliability), shortened on spot
    capacity by preemptions (every 6 h assumed)."""
    from sizeup.plan.cost import checkpoint_plan
    from sizeup.plan.reliability import failure_rate, job_mtbf_s
    from sizeup.workload.finetune import FinetuneSpec, trainable_parameters

    job = scenario.job
    trainable = arch.params if job.method == "full" else \
        trainable_parameters(arch, FinetuneSpec(method=job.method, rank=job.rank)).trainable_params
    state = trainable * CHECKPOINT_BYTES_PER_PARAM
    instances = chosen.detail.get("instances") or 1
    rate = failure_rate()
    failures = job_mtbf_s(chosen.gpus)
    spot = chosen.pricing_basis == "spot"
    preemption = 6 * 3600.0
    mtbf = 1 / (1 / failures + 1 / preemption) if spot else failures
    plan = checkpoint_plan(state, WRITE_BYTES_PER_S_PER_INSTANCE * instances, mtbf, rate.restart_s)
    hours = chosen.latency.get("hours", 0.0)
    cells = [Cell(key="checkpoint_bytes", label="checkpoint size", value=int(state), unit="bytes",
                  note=f"{trainable:,} trainable parameters × {CHECKPOINT_BYTES_PER_PARAM} bytes (weights, fp32 master, "
                       "Adam moments)"),
             Cell(key="checkpoint_write", label="checkpoint write time", value=round(plan.write_s, 3), unit="s",
                  note=f"sharded: each of {instances} instance(s) writes its share at 1 GB/s to storage (assumed)"),
             Cell(key="job_mtbf", label="mean time between interruptions", value=round(mtbf / 3600, 2), unit="h",
                  note=f"{rate.gpu_hours_per_interruption:,.0f} GPU-hours per unexpected interruption ÷ {chosen.gpus} "
                       f"GPUs ({rate.source})" + ("; with a spot preemption every 6 h (assumed)" if spot else "")),
             Cell(key="checkpoint_interval", label="checkpoint every", value=round(plan.interval_s, 1), unit="s",
                  note=plan.arithmetic + f"; restart {rate.restart_s / 60:.0f} min (assumed)"
                       + (f"; the run ({hours:,.1f} h) is shorter than one interval: checkpoint at the end, and at "
                          "least hourly if a restart from zero would hurt" if hours * 3600 < plan.interval_s else ""))]
    return cells


def _edge_section(scenario, chosen) -> Section:
    """Edge: how the model fits next to the OS, and the thermal derate (price and power: the cost section)."""
    device, edge = chosen.device, scenario.edge
    cells = [Cell(key="edge_device", label="device", value=device.name),
             Cell(key="edge_memory_needed", label="memory needed", value=chosen.memory_bytes, unit="bytes"),
             Cell(key="edge_memory_usable", label="memory usable after the OS share", value=int(chosen.usable_bytes),
                  unit="bytes")]
    if edge is not None:
        cells.append(Cell(key="thermal_derate", label="thermal derate on sustained speed", value=edge.thermal_derate,
                          note="assumption, not measured"))
    return Section(title="Device", cells=tuple(cells), notes=("the model runs on the device",))
