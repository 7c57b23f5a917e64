"""The search: the cheapest configuration that fits and meets the SLA (or the deadline), the Pareto
front of cost against latency, and why every rejected family lost.

`plan_scenario` hands each task to its search: serving (chat, api) to plan.serving, jobs (fine-tuning,
pre-training) and offline batch generation to plan.jobs, edge to plan.edge, vision to plan.vision.
The candidate and result types live in plan.types, the device and offer choice in plan.offers.
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError, ResolveError
from sizeup.hardware.catalog import Catalog
from sizeup.plan.scenario import Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection

__all__ = ["Candidate", "Rejection", "PlanResult", "plan_scenario"]


def plan_scenario(scenario: Scenario, catalog: Catalog, *, prune: bool = True) -> PlanResult:
    """The plan for `scenario`; `prune=False` simulates every family that fits (for checking the
    pruning, slower). Each search is imported when its task runs: a plan loads only what it needs.
    Unknown providers, regions, engines, formats and devices are refused first (plan.offers.check_constraints)."""
    from sizeup.plan.offers import check_constraints

    check_constraints(scenario, catalog)
    if scenario.task == "vision":
        from sizeup.plan.vision import plan_vision

        from sizeup.plan.buy import fleet_buy_vs_rent

        result = plan_vision(scenario, catalog)
        return replace(result, buy=fleet_buy_vs_rent(result, catalog))
    from sizeup.ingest.hf_config import load_model

    try:
        arch = load_model(scenario.model)
    except ResolveError as e:
        raise ConfigError(f"scenario key 'model': {e}") from None
    scenario, note = stored_weights(scenario, arch)
    result = _plan(scenario, catalog, arch, prune)
    return replace(result, assumptions=(note, *result.assumptions), weights_note=note) if note else result


def stored_weights(scenario: Scenario, arch) -> tuple[Scenario, str]:
    """A model file that stores its weights in one format (a GGUF file's general.file_type) is planned in that
    format unless the scenario names `constraints.quantizations`; the note says which was priced and why."""
    stored, source = getattr(arch, "stored_format", ""), getattr(arch, "stored_format_from", "")
    c = scenario.constraints
    if not source or scenario.task not in ("chat", "api", "batch", "edge"):
        return scenario, ""
    if c.quantizations_given:
        if stored in c.quantizations:
            return scenario, ""
        return scenario, (f"weights priced as {', '.join(c.quantizations)} (constraints.quantizations), not as the "
                          f"{stored or 'format'} the file stores ({source})")
    if not stored:
        raise ConfigError(f"scenario key 'model' = {scenario.model!r}: {source}, a weight format sizeup does not "
                          f"price: expected constraints.quantizations with one of its formats (e.g. q4_k_m, q8_0, f16)")
    return (replace(scenario, constraints=replace(c, quantizations=(stored,))),
            f"weights {stored}: the format the file stores ({source}; constraints.quantizations prices others)")


def _plan(scenario: Scenario, catalog: Catalog, arch, prune: bool) -> PlanResult:
    if scenario.task in ("chat", "api"):
        from sizeup.plan.buy import fleet_buy_vs_rent
        from sizeup.plan.serving import plan_serving

        result = plan_serving(scenario, catalog, arch, prune)
        return replace(result, buy=fleet_buy_vs_rent(result, catalog))
    if scenario.task in ("pretrain", "finetune", "batch"):
        from sizeup.plan.jobs import plan_batch, plan_job

        if scenario.task == "batch":
            return plan_batch(scenario, catalog, arch)
        result = plan_job(scenario, catalog, arch)
        if scenario.task == "pretrain":
            return result
        rows = []
        for method in ("full", "lora", "qlora"):
            other = result if method == scenario.job.method else plan_job(
                replace(scenario, job=replace(scenario.job, method=method)), catalog, arch)
            best = other.chosen or other.closest
            if best is not None:
                rows.append((method, best.label, best.latency.get("hours", 0.0), best.cost_usd))
        return replace(result, method_comparison=tuple(rows))
    from sizeup.plan.buy import edge_buy_vs_rent
    from sizeup.plan.edge import plan_edge

    result = plan_edge(scenario, catalog, arch)
    return replace(result, buy=edge_buy_vs_rent(result, catalog))
