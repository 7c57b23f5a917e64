"""Jobs: fine-tuning and pre-training (device × GPU count, the cheapest run within the deadline and
budget), and offline batch generation (the largest batch that fits, the cheapest run within the deadline)."""

from __future__ import annotations

import math
from dataclasses import replace

from sizeup.engines.defaults import default_engine
from sizeup.errors import SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.ingest.hf_config import ModelArch
from sizeup.plan.cost import pricing_basis
from sizeup.plan.offers import devices_for, hourly_price, offers_for, replica_price
from sizeup.plan.scenario import Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection, memory_parts, ranked_result
from sizeup.workload.finetune import FinetuneSpec
from sizeup.workload.inference import InferenceConfig, estimate_inference
from sizeup.workload.parallel import ParallelConfig
from sizeup.workload.training import TrainingConfig, estimate_training

__all__ = ["plan_job", "plan_batch"]


def plan_job(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    job, c = scenario.job, scenario.constraints
    basis = pricing_basis(scenario)
    rejected, candidates = [], []
    closest, closest_miss, closest_gap = None, "", math.inf
    evaluated = 0
    for device in devices_for(catalog, scenario):
        for gpus in (1, 2, 4, 8, 16, 32, 64):
            if gpus > max(c.max_gpus, 1):
                break
            nodes = max(1, gpus // 8)
            offers = offers_for(catalog, scenario, device, min(gpus, 8))
            family = f"{gpus}x {device.id} {job.method}"
            if not offers:
                continue
            cfg = TrainingConfig(finetune=FinetuneSpec(method=job.method, rank=job.rank), seq=job.seq,
                                 parallel=ParallelConfig(gpus=gpus, nodes=nodes, zero=3 if gpus > 1 else 0),
                                 global_batch=job.global_batch, tokens=job.tokens,
                                 recompute="full" if job.method in ("lora", "qlora") else "selective")
            try:
                e = estimate_training(arch, device, cfg, offers)
            except SizeupError as err:
                rejected.append(Rejection(family=family, reason=str(err)))
                continue
            evaluated += 1
            if not e.memory.fits or e.max_micro_batch < 1:
                rejected.append(Rejection(family=family, reason=(
                    f"does not fit: {e.memory.total_bytes / 2**30:,.1f} GiB needed per GPU, "
                    f"{e.memory.usable_bytes.typical / 2**30:,.1f} GiB usable")))
                continue
            hours = e.time_to_train_s.typical / 3600
            instance_hourly, used = hourly_price(e.offer, basis)  # the estimate rents whole instances
            cost = e.cost_usd["on_demand"].typical * instance_hourly / e.offer.on_demand_usd_per_hour
            candidate = Candidate(device=device, gpus=gpus, quant="bf16" if job.method != "qlora" else "nf4",
                                  engine="train", offer=e.offer, cost_usd=cost, pricing_basis=used,
                                  latency={"hours": hours},
                                  memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                  detail={"mfu": e.mfu.typical, "tokens_per_s": e.tokens_per_s.typical,
                                          "micro_batch": e.micro_batch, "memory_parts": memory_parts(e.memory),
                                          "hours_range": e.time_to_train_s.scale(
                                              1 / 3600).to_dict()})
            if job.deadline_hours is not None and hours > job.deadline_hours:
                rejected.append(Rejection(family=family, reason=f"{hours:,.1f} h, past the {job.deadline_hours:g} h "
                                                                f"deadline"))
                gap = hours / job.deadline_hours
                if gap < closest_gap:
                    closest_gap, closest, closest_miss = gap, candidate, f"misses the deadline by " \
                                                                         f"{hours - job.deadline_hours:,.1f} h"
                continue
            if scenario.budget.job_usd is not None and cost > scenario.budget.job_usd:
                rejected.append(Rejection(family=family, reason=f"${cost:,.0f} {used} is over the budget of "
                                                                f"${scenario.budget.job_usd:,.0f}"))
                continue
            candidates.append(candidate)
            break  # more GPUs of this device only cost more for the same work
    assumptions = [f"{job.method} on {job.tokens:,} tokens at sequence {job.seq}; ZeRO-3 across GPUs"]
    return ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "hours")


def plan_batch(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    """Offline generation of `job.tokens` output tokens: the largest batch that fits, the cheapest run
    within the deadline."""
    job, c = scenario.job, scenario.constraints
    basis = pricing_basis(scenario)
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, closest_gap = None, "", math.inf
    prompt = scenario.traffic.prompt_tokens if scenario.traffic else 512
    output = scenario.traffic.output_tokens if scenario.traffic else 256
    engine, why = default_engine("batch")
    for device in devices_for(catalog, scenario):
        for gpus in (1, 2, 4, 8):
            a0 = arch.layers[0].attention
            if gpus > c.max_gpus or a0.heads % gpus:
                continue
            offers = offers_for(catalog, scenario, device, gpus)
            if not offers:
                continue
            offer, hourly = replica_price(offers, gpus, basis)
            used = hourly_price(offer, basis)[1]
            for quant in c.quantizations:
                family = f"{gpus}x {device.id} {quant}"
                cfg = InferenceConfig(prompt=prompt, output=output, weights=quant, engine=engine, gpus=gpus)
                first = estimate_inference(arch, device, cfg)
                evaluated += 1
                if not first.memory.fits:
                    rejected.append(Rejection(family=family, reason="does not fit"))
                    continue
                e = estimate_inference(arch, device, replace(cfg, batch=first.max_batch))
                if e.decode.tokens_per_s is None:
                    rejected.append(Rejection(family=family, reason="compute unknown on this device"))
                    continue
                rate = e.decode.tokens_per_s.typical * output / (output + e.prefill.latency_s.typical
                                                                 / e.decode.latency_s.typical)
                hours = job.tokens / rate / 3600
                cost = hours * hourly
                candidate = Candidate(device=device, gpus=gpus, quant=quant, engine=engine, offer=offer,
                                      engine_version=e.execution.version,
                                      cost_usd=cost, pricing_basis=used, latency={"hours": hours},
                                      max_batch=first.max_batch,
                                      memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                      detail={"tokens_per_s": rate, "memory_parts": memory_parts(e.memory)})
                if job.deadline_hours is not None and hours > job.deadline_hours:
                    rejected.append(Rejection(family=family, reason=f"{hours:,.1f} h, past the deadline"))
                    if hours / job.deadline_hours < closest_gap:
                        closest_gap, closest = hours / job.deadline_hours, candidate
                        closest_miss = f"misses the deadline by {hours - job.deadline_hours:,.1f} h"
                    continue
                candidates.append(candidate)
    assumptions = [f"offline generation of {job.tokens:,} output tokens, prompt {prompt}, output {output} per request",
                   f"engine {engine}: a batch job's engine (data/engines/defaults.yaml: {why})"]
    return ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "hours")
