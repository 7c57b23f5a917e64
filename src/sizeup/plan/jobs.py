"""Jobs: fine-tuning and pre-training (device × GPU count, the cheapest run within the deadline and
budget), and offline batch generation (the largest batch that fits, the cheapest run within the deadline)."""

from __future__ import annotations

import math
from dataclasses import replace

from sizeup.engines.defaults import planned_engines
from sizeup.errors import SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.ingest.hf_config import ModelArch
from sizeup.plan.cost import pricing_basis
from sizeup.plan.offers import cheapest_per_group, devices_for, hourly_price, offers_for
from sizeup.plan.regions import region_group
from sizeup.plan.topology import installed, place_job
from sizeup.plan.scenario import Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection, memory_parts, ranked_result
from sizeup.workload.finetune import FinetuneSpec
from sizeup.workload.inference import InferenceConfig, estimate_inference
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.device_fit import training_fit_verdict
from sizeup.workload.frameworks import framework_for, resolve_settings
from sizeup.workload.training import TrainingConfig, estimate_training, with_settings

__all__ = ["plan_job", "plan_batch"]


def plan_job(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    """Fine-tuning or pre-training: for each device, the fewest GPUs (1, 2, 4, … up to max_gpus) at which the
    job fits and meets the deadline and budget, placed on offers that can hold it (plan.topology: one
    instance, or whole instances on a stated network), in every region group."""
    job, c = scenario.job, scenario.constraints
    basis = pricing_basis(scenario)
    rejected, candidates = [], []
    closest, closest_miss, closest_gap = None, "", math.inf
    evaluated = 0
    for device in devices_for(catalog, scenario):
        offers = offers_for(catalog, scenario, device)
        if not offers:
            continue
        for gpus in JOB_GPU_COUNTS:
            if gpus > max(c.max_gpus, 1):
                break
            family = f"{gpus}x {device.id} {job.method}"
            placed = _placements(device, gpus, offers, basis)
            if not placed:
                rejected.append(Rejection(family=family, reason=place_job(device, gpus, offers, basis)[1]))
                continue
            try:
                by_region = {g: (p, _estimate(arch, device, job, gpus, p)) for g, p in placed.items()}
            except SizeupError as err:
                rejected.append(Rejection(family=family, reason=str(err)))
                continue
            evaluated += 1
            group = min(by_region, key=lambda g: (by_region[g][1].time_to_train_s.typical / 3600
                                                  * by_region[g][0].hourly_usd, g))
            placement, e = by_region[group]
            if not e.memory.fits or e.max_micro_batch < 1:
                rejected.append(Rejection(family=family, reason=(
                    f"does not fit: {e.memory.total_bytes / 2**30:,.1f} GiB needed per GPU, "
                    f"{e.memory.usable_bytes.typical / 2**30:,.1f} GiB usable")))
                continue
            verdict = training_fit_verdict(e)
            if not verdict.comfortable and e.max_micro_batch_in_range >= 1:
                # the largest micro-batch fits at the typical figure only: the one whose range fits instead
                by_region = {g: (p, _estimate(arch, device, job, gpus, p, e.max_micro_batch_in_range))
                             for g, p in placed.items()}
                placement, e = by_region[group]
                verdict = training_fit_verdict(e)
            if not verdict.comfortable:  # the typical total fits, the range's high end does not (as plan/edge.py)
                rejected.append(Rejection(family=family, reason=f"may not fit: {verdict.why}"))
                continue
            hours = e.time_to_train_s.typical / 3600
            cost = hours * placement.hourly_usd
            regions = {g: {"offer": p.offer.id, "region": p.offer.region, "pricing_basis": p.basis,
                           "cost_usd": est.time_to_train_s.typical / 3600 * p.hourly_usd}
                       for g, (p, est) in by_region.items()}
            par = e.config.parallel
            candidate = Candidate(device=installed(device, placement.offer), gpus=gpus,
                                  quant="bf16" if job.method != "qlora" else "nf4", engine="train",
                                  offer=placement.offer, cost_usd=cost, pricing_basis=placement.basis,
                                  latency={"hours": hours},
                                  memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                  detail={"mfu": e.mfu.typical, "tokens_per_s": e.tokens_per_s.typical,
                                          "micro_batch": e.micro_batch, "memory_parts": memory_parts(e.memory),
                                          "hours_range": e.time_to_train_s.scale(1 / 3600).to_dict(),
                                          "instances": placement.instances, "placement": placement.text,
                                          "by_region": regions, "step_s": e.step_s.typical,
                                          "layout": {"tp": par.tp, "pp": par.pp, "dp": par.dp, "zero": par.zero,
                                                     "nodes": par.nodes, "micro_batch": e.micro_batch,
                                                     "grad_accumulation": e.grad_accumulation,
                                                     "global_batch": e.global_batch,
                                                     "recompute": e.config.recompute, "seq": job.seq,
                                                     "network_gbit_per_s": placement.network_gbit_per_s}})
            if job.deadline_hours is not None and hours > job.deadline_hours:
                rejected.append(Rejection(family=family, reason=f"{hours:,.1f} h, past the {job.deadline_hours:g} h "
                                                                f"deadline"))
                gap = hours / job.deadline_hours
                if gap < closest_gap:
                    closest_gap, closest, closest_miss = gap, candidate, f"misses the deadline by " \
                                                                         f"{hours - job.deadline_hours:,.1f} h"
                continue
            budget = scenario.budget.job_usd
            if budget is not None and cost > budget:
                rejected.append(Rejection(family=family, reason=over_budget(cost, budget, placement.basis)))
                if cost / budget < closest_gap:
                    closest_gap, closest = cost / budget, candidate
                    closest_miss = f"over the job budget: {over_budget(cost, budget, placement.basis)}"
                continue
            candidates.append(candidate)
            if placement.instances > 1 or gpus >= placement.offer.gpu_count:
                break  # more GPUs of this device only cost more for the same work
            # else the instance is billed whole for GPUs the job leaves idle: the next count uses them, at the
            # same hourly price, and the cheaper of the two is chosen
    assumptions = [f"{job.method} on {job.tokens:,} tokens at sequence {job.seq}; ZeRO-3 across GPUs",
                   "a job spans instances only on offers that state their network, and is priced on it"]
    return ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "hours")


def over_budget(cost: float, budget: float, basis: str) -> str:
    """Why a job was turned down on cost, with both numbers: "$1,234 on-demand, $234 over the $1,000 job budget"."""
    return f"${cost:,.0f} {basis}, ${cost - budget:,.0f} over the ${budget:,.0f} job budget"


JOB_GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _placements(device, gpus: int, offers, basis: str) -> dict:
    """Region group -> the cheapest placement of the job there."""
    by_group: dict[str, list] = {}
    for o in offers:
        by_group.setdefault(region_group(o.region), []).append(o)
    out = {}
    for group, members in by_group.items():
        placement, _ = place_job(device, gpus, members, basis)
        if placement is not None:
            out[group] = placement
    return out


def _estimate(arch: ModelArch, device, job, gpus: int, placement, micro_batch: int | None = None):
    """The training estimate of the job on its placement: the offer's link inside an instance, its stated
    network between instances; `micro_batch` None: the largest that fits. A LoRA / QLoRA job runs the default
    fine-tuning framework's profile (workload/frameworks.py framework_for), as `sizeup train` does."""
    framework, note = framework_for(None, job.method)
    cfg = TrainingConfig(finetune=FinetuneSpec(method=job.method, rank=job.rank), seq=job.seq, micro_batch=micro_batch,
                         parallel=ParallelConfig(gpus=gpus, nodes=placement.nodes, zero=3 if gpus > 1 else 0),
                         global_batch=job.global_batch, tokens=job.tokens,
                         recompute="full" if job.method in ("lora", "qlora") else "selective",
                         offer=placement.offer.id, network_gbit_per_s=placement.network_gbit_per_s,
                         framework_note=note)
    if framework is not None:
        cfg = with_settings(cfg, resolve_settings(framework, job.seq, recompute=cfg.recompute), framework)
    return estimate_training(arch, installed(device, placement.offer), cfg, [placement.offer])


def plan_batch(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    """Offline generation of `job.tokens` output tokens: the largest batch that fits, the cheapest run
    within the deadline."""
    job, c = scenario.job, scenario.constraints
    basis = pricing_basis(scenario)
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, closest_gap = None, "", math.inf
    prompt = scenario.traffic.prompt_tokens if scenario.traffic else 512
    output = scenario.traffic.output_tokens if scenario.traffic else 256
    engines, note = planned_engines(c.engines, "batch")
    for device in devices_for(catalog, scenario):
        offers = offers_for(catalog, scenario, device)
        for gpus in (1, 2, 4, 8):
            a0 = arch.layers[0].attention
            if gpus > c.max_gpus or a0.heads % gpus:
                continue
            groups = cheapest_per_group(offers, gpus, basis)  # a replica inside one instance
            if not groups:
                continue
            for quant in c.quantizations:
                for engine in engines:
                    family = f"{gpus}x {device.id} {quant} {engine}"
                    cfg = InferenceConfig(prompt=prompt, output=output, weights=quant, engine=engine, gpus=gpus)
                    group = min(groups, key=lambda g: groups[g][1])
                    offer, hourly = groups[group]
                    dev = installed(device, offer)
                    try:
                        first = estimate_inference(arch, dev, cfg)
                    except SizeupError as err:
                        rejected.append(Rejection(family=family, reason=str(err)))
                        continue
                    evaluated += 1
                    if not first.memory.fits:
                        rejected.append(Rejection(family=family, reason="does not fit"))
                        continue
                    e = estimate_inference(arch, dev, replace(cfg, batch=first.max_batch))
                    if e.decode.tokens_per_s is None:
                        rejected.append(Rejection(family=family, reason="compute unknown on this device"))
                        continue
                    rate = e.decode.tokens_per_s.typical * output / (output + e.prefill.latency_s.typical
                                                                     / e.decode.latency_s.typical)
                    # the instance is billed whole: each of its ⌊GPUs / gpus⌋ replicas takes a share of the job, so
                    # the run is that many times shorter and costs one replica's share of the price per replica-hour
                    replicas = offer.gpu_count // gpus
                    hours = job.tokens / (rate * replicas) / 3600
                    cost = hours * hourly * replicas
                    regions = {g: {"offer": o.id, "region": o.region, "pricing_basis": hourly_price(o, basis)[1],
                                   "cost_usd": job.tokens / rate / 3600 * h} for g, (o, h) in groups.items()}
                    candidate = Candidate(device=dev, gpus=gpus, quant=quant, engine=e.execution.name, offer=offer,
                                          engine_version=e.execution.version,
                                          cost_usd=cost, pricing_basis=hourly_price(offer, basis)[1],
                                          latency={"hours": hours}, max_batch=first.max_batch,
                                          memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                          detail={"tokens_per_s": rate, "memory_parts": memory_parts(e.memory),
                                                  "context": prompt + output, "by_region": regions, "instances": 1,
                                                  "job_replicas": replicas,
                                                  "placement": f"1 × {offer.id}" + (
                                                      f", {replicas} replicas of {gpus} GPU{'s' if gpus > 1 else ''} "
                                                      "sharing the job" if replicas > 1 else "")})
                    if job.deadline_hours is not None and hours > job.deadline_hours:
                        rejected.append(Rejection(family=family, reason=f"{hours:,.1f} h, past the deadline"))
                        if hours / job.deadline_hours < closest_gap:
                            closest_gap, closest = hours / job.deadline_hours, candidate
                            closest_miss = f"misses the deadline by {hours - job.deadline_hours:,.1f} h"
                        continue
                    budget = scenario.budget.job_usd
                    if budget is not None and cost > budget:
                        why = over_budget(cost, budget, candidate.pricing_basis)
                        rejected.append(Rejection(family=family, reason=why))
                        if cost / budget < closest_gap:
                            closest_gap, closest = cost / budget, candidate
                            closest_miss = f"over the job budget: {why}"
                        continue
                    candidates.append(candidate)
    assumptions = [f"offline generation of {job.tokens:,} output tokens, prompt {prompt}, output {output} per request",
                   "the instance is billed whole: one replica per group of the plan's GPUs on it, each generating its "
                   "share of the tokens",
                   *([note] if note else [])]
    return ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "hours")
