"""Serving search: device × GPUs per replica (tensor parallel) × weight format × engine.

Families that do not fit are dropped first (memory only, no pricing); the rest are ranked by a lower
bound on the fleet cost (replicas at each replica's throughput bound) and simulated in that order,
stopping once the bound of the next family exceeds the best fleet found — so the catalog can grow
without the search growing with it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from sizeup.errors import SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.hf_config import ModelArch
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.plan.capacity import ReplicaModel, rate_at_sla, replicas_needed, simulate
from sizeup.plan.cost import HOURS_PER_MONTH, monthly_cost, owned_monthly_cost, pricing_basis
from sizeup.plan.offers import devices_for, offers_for, replica_price
from sizeup.plan.scenario import Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection, memory_parts, ranked_result
from sizeup.engines.base import ExecutionModel
from sizeup.engines.defaults import default_engine
from sizeup.price.execution import phase_efficiency
from sizeup.price.memory import MemoryConfig, inference_memory
from sizeup.price.roofline import price
from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for
from sizeup.workload.quantize import get_format
from sizeup.workload.towers import decoder_arch, decoder_cache_tokens, decoder_prompt, tower_input

__all__ = ["plan_serving", "replica_model"]


def replica_model(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, max_batch: int,
                  execution: ExecutionModel | None = None) -> ReplicaModel:
    """Prefill as fixed + per-token time (two priced prompts), decode step time at batch sizes up to
    `max_batch` (priced ledgers at the mean context of a generation). `execution`: the engine on `device`,
    resolved once by the caller (default: from `cfg`)."""
    model = execution or execution_for(device, cfg)
    step = model.step_overhead(arch, decode=True)
    step_s = step.typical if step else 0.0
    p = cfg.prompt
    t1 = estimate_inference(arch, device, replace(cfg, prompt=p, output=1),
                            limits=False, execution=model).prefill
    t2 = estimate_inference(arch, device, replace(cfg, prompt=2 * p, output=1),
                            limits=False, execution=model).prefill
    per_token = max((t2.latency_s.typical - t1.latency_s.typical) / p, 1e-9)
    fixed = max(t1.latency_s.typical - per_token * p, 0.0)
    batches = sorted({1, *[2 ** k for k in range(1, 12) if 2 ** k < max_batch], max_batch})
    times = []
    fmt = get_format(cfg.weights)
    # the decoder as `estimate` runs it: T5's cross-attention over the prompt, its own tokens from one start token
    decoder = decoder_arch(arch, cfg.prompt)
    context = decoder_prompt(arch, cfg.prompt) + max(cfg.output // 2, 1)
    eff = phase_efficiency(model, True, fmt)  # the engine's decode efficiencies
    for b in batches:
        ledger = transformer_ledger(decoder, Step(batch=b, new_tokens=1, context=context), weights=fmt,
                                    kv_dtype=cfg.kv_dtype, tp=cfg.gpus, per_layer=False)
        eager = model.extra_launches(ledger, fmt.compute_dtype == "fp32")  # hf: as estimate prices it
        times.append(price(ledger, device, eff).total_s.typical + step_s + (eager[0].typical if eager else 0.0))
    return ReplicaModel(prefill_fixed_s=fixed, prefill_per_token_s=per_token, decode_batches=tuple(batches),
                        decode_step_s=tuple(times), max_batch=max_batch)


def plan_serving(scenario: Scenario, catalog: Catalog, arch: ModelArch, prune: bool = True) -> PlanResult:
    traffic, c = scenario.traffic, scenario.constraints
    basis = pricing_basis(scenario)
    targets = scenario.sla.targets or {"ttft_p95": 2.0}
    assumptions = [f"traffic: {traffic.description}; prompt {traffic.prompt_tokens}, output {traffic.output_tokens} "
                   f"tokens on average", "each replica serves its share of Poisson arrivals (load balanced)"]
    if not scenario.sla.targets:
        assumptions.append("no SLA given: p95 TTFT of 2 s assumed")
    engines = c.engines
    if not engines:
        engine, why = default_engine("serving")
        engines = (engine,)
        assumptions.append(f"engine {engine}: the scenario names none (data/engines/defaults.yaml: {why})")
    rejected: list[Rejection] = []
    families = []
    a0 = arch.layers[0].attention
    for device in devices_for(catalog, scenario):
        owned = next((o for o in c.owned if catalog.device(o.device).id == device.id), None)
        for gpus in (1, 2, 4, 8):
            if gpus > c.max_gpus or a0.heads % gpus or (a0.kv_heads % gpus and gpus % a0.kv_heads):
                continue
            offers = offers_for(catalog, scenario, device, gpus)
            if not offers and not (owned and owned.count >= gpus):
                continue
            for quant in c.quantizations:
                for engine in engines:
                    family = f"{gpus}x {device.id} {quant} {engine}"
                    try:
                        cfg = InferenceConfig(batch=1, prompt=traffic.prompt_tokens, output=traffic.output_tokens,
                                              weights=quant, engine=engine, gpus=gpus, images=traffic.images,
                                              image_hw=traffic.image_hw)
                        execution = execution_for(device, cfg)  # resolved once per family
                        memory = _p95_memory(arch, execution, quant, gpus, traffic)
                    except SizeupError as e:
                        rejected.append(Rejection(family=family, reason=str(e)))
                        continue
                    if not memory.fits:
                        rejected.append(Rejection(family=family, reason=(
                            f"does not fit: {memory.total_bytes / 2**30:,.1f} GiB needed per GPU, "
                            f"{memory.usable_bytes.typical / 2**30:,.1f} GiB usable")))
                        continue
                    offer, hourly = replica_price(offers, gpus, basis)
                    owned_cost = None
                    if owned and owned.count >= gpus:
                        owned_cost = owned_monthly_cost(owned, device, gpus)
                    families.append((device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost, execution))
    # a lower bound on each family's fleet cost, from its throughput bound; simulate cheapest-first
    bounded = []
    for device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost, execution in families:
        max_batch = memory.max_concurrent_sequences or _max_batch(arch, device, cfg, execution)
        e = estimate_inference(arch, device, replace(cfg, batch=max(max_batch, 1)), limits=False,
                               execution=execution)
        if e.decode is not None and e.decode.tokens_per_s is None:  # compute unknown: no speed to plan on
            continue
        upper = e.decode.tokens_per_s.high / max(traffic.output_tokens, 1) if e.decode else 1.0
        # at the throughput bound, plus the spare replica where there is one
        at_bound = math.ceil(traffic.peak_requests_per_s / max(upper, 1e-9))
        lower = min((at_bound + _spare(c, False)) * hourly * HOURS_PER_MONTH,
                    (at_bound + _spare(c, True)) * owned_cost if owned_cost is not None else math.inf)
        bounded.append((lower, device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost, max_batch,
                        execution))
    bounded.sort(key=lambda t: t[0])
    candidates, best_cost, evaluated = [], math.inf, 0
    closest, closest_miss, closest_gap = None, "", math.inf
    for lower, device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost, max_batch, execution in bounded:
        family = f"{gpus}x {device.id} {quant} {engine}"
        if prune and lower > best_cost and len(candidates) >= 3:
            rejected.append(Rejection(family=family, reason=f"costs at least ${lower:,.0f}/month {basis}, more "
                                                            f"than the chosen ${best_cost:,.0f}/month"))
            continue
        evaluated += 1
        model = replica_model(arch, device, cfg, max_batch, execution)
        rate, sim = rate_at_sla(model, traffic.prompt_tokens, traffic.output_tokens, targets, requests=1200)
        if rate <= 0:
            probe = sim
            miss = ", ".join(f"{k} {probe.metric(k):.3g} s > {v:g} s" for k, v in targets.items()
                             if probe.metric(k) > v)
            rejected.append(Rejection(family=family, reason=f"misses the SLA even unloaded: {miss}"))
            gap = max(probe.metric(k) / v for k, v in targets.items())
            if gap < closest_gap:
                closest_gap, closest_miss = gap, miss
                closest = Candidate(device=device, gpus=gpus, quant=quant, engine=engine, offer=offer,
                                    engine_version=execution.version,
                                    simulation=probe, latency={k: probe.metric(k) for k in targets},
                                    memory_bytes=memory.total_bytes, usable_bytes=memory.usable_bytes.typical,
                                    max_batch=max_batch)
            continue
        plan = replicas_needed(traffic.peak_requests_per_s, traffic.base_requests_per_s, rate, c.headroom,
                               _spare(c, False))
        replicas = plan.with_redundancy
        owned_plan = replicas_needed(traffic.peak_requests_per_s, traffic.base_requests_per_s, rate, c.headroom,
                                     _spare(c, True))
        held = next((o.count for o in c.owned if catalog.device(o.device).id == device.id), 0)
        if owned_cost is not None and owned_plan.with_redundancy * gpus > held:
            owned_cost = None  # not enough owned cards for this fleet
        peak_sim = simulate(model, traffic.peak_requests_per_s / plan.for_load, traffic.prompt_tokens,
                            traffic.output_tokens, requests=1500, seed=1)
        monthly = None
        if offer is not None:
            per_instance = max(1, offer.gpu_count // gpus)
            monthly = monthly_cost(offer, math.ceil(replicas / per_instance) if offer.gpu_count >= gpus
                                   else replicas * math.ceil(gpus / offer.gpu_count))
        owned_total = owned_cost * owned_plan.with_redundancy if owned_cost is not None else None
        cost, used = monthly.priced(basis) if monthly is not None else (math.inf, basis)
        if owned_total is not None and owned_total <= cost:
            cost, used = owned_total, "owned"
        if cost == math.inf:
            rejected.append(Rejection(family=family, reason=f"{owned_plan.with_redundancy * gpus} GPUs needed, "
                                                            f"{held} owned and no cloud offer"))
            continue
        candidate = Candidate(device=device, gpus=gpus, quant=quant, engine=engine, offer=offer,
                              engine_version=execution.version,
                              owned=used == "owned", replicas=owned_plan if used == "owned" else plan,
                              simulation=peak_sim, monthly=monthly, cost_usd=cost, pricing_basis=used,
                              latency={k: peak_sim.metric(k) for k in targets}, memory_bytes=memory.total_bytes,
                              usable_bytes=memory.usable_bytes.typical, max_batch=max_batch,
                              detail={"rate_per_replica": rate, "owned_monthly_usd": owned_total,
                                      "decode_batches": list(model.decode_batches),
                                      "decode_step_s": list(model.decode_step_s),
                                      "memory_parts": memory_parts(memory),
                                      **({"multimodal_profile": memory.multimodal_profile.to_dict()}
                                         if memory.multimodal_profile else {})})
        if scenario.budget.monthly_usd is not None and cost > scenario.budget.monthly_usd:
            rejected.append(Rejection(family=family, reason=f"${cost:,.0f}/month {used} is over the budget of "
                                                            f"${scenario.budget.monthly_usd:,.0f}"))
            if closest is None or cost < closest.cost_usd:
                closest, closest_miss = candidate, f"over budget by ${cost - scenario.budget.monthly_usd:,.0f}/month"
            continue
        candidates.append(candidate)
        best_cost = min(best_cost, cost)
    result = ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions,
                     latency_key=next(iter(targets)))
    if result.chosen is not None:  # the saturation point: the highest rate at which queues stay bounded
        chosen = result.chosen
        model = ReplicaModel(prefill_fixed_s=0, prefill_per_token_s=0, decode_batches=(1,), decode_step_s=(1,),
                             max_batch=1)
        detail = chosen.detail
        if detail.get("decode_batches"):
            cfg = InferenceConfig(prompt=traffic.prompt_tokens, output=traffic.output_tokens, weights=chosen.quant,
                                  engine=chosen.engine, gpus=chosen.gpus, images=traffic.images, image_hw=traffic.image_hw)
            model = replica_model(arch, chosen.device, cfg, chosen.max_batch)
            saturation, _ = rate_at_sla(model, traffic.prompt_tokens, traffic.output_tokens, {}, requests=1200)
            chosen = replace(chosen, detail={**detail, "saturation_rps": saturation})
            result = replace(result, chosen=chosen, ranked=(chosen,) + result.ranked[1:],
                             pareto=tuple(chosen if c is result.chosen else c for c in result.pareto))
    return result


def _spare(c, owned: bool) -> int:
    """Spare replicas: the scenario's `redundancy`, else one when renting and none on owned hardware."""
    if c.redundancy is not None:
        return int(c.redundancy)
    return 0 if owned else 1


def _p95_memory(arch: ModelArch, execution: ExecutionModel, quant: str, gpus: int, traffic):
    """One request at the p95 prompt and output on one replica, its tower included, as `estimate` counts it."""
    prompt = traffic.prompt_p95_tokens
    feed = tower_input(arch, batch=1, prompt=prompt, images=traffic.images, image_hw=traffic.image_hw)
    return inference_memory(decoder_arch(arch, prompt), execution, MemoryConfig(
        batch=1, context=decoder_cache_tokens(arch, prompt, prompt + traffic.output_p95_tokens),
        prompt=decoder_prompt(arch, prompt), weights=get_format(quant), tp=gpus, tower=feed))


def _max_batch(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, execution: ExecutionModel) -> int:
    e = estimate_inference(arch, device, cfg, execution=execution)
    return max(1, min(e.max_batch, 256))
