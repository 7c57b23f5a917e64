"""The search: the cheapest configuration that fits and meets the SLA (or the deadline), the Pareto
front of cost against latency, and why every rejected family lost.

Serving: device × GPUs per replica (tensor parallel) × weight format × engine. Families that do not
fit are dropped first (memory only, no pricing); the rest are ranked by a lower bound on the fleet
cost (replicas at each replica's throughput bound) and simulated in that order, stopping once the
bound of the next family exceeds the best fleet found — so the catalog can grow without the search
growing with it. Jobs (fine-tuning, pre-training): device × GPU count, cheapest run within the
deadline and budget. Edge: the highest-precision format that fits and meets the latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sizeup.errors import ConfigError, ResolveError, SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.ingest.hf_config import ModelArch, load_model
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.plan.capacity import ReplicaModel, ReplicaPlan, SimulationResult, rate_at_sla, replicas_needed, simulate
from sizeup.plan.cost import HOURS_PER_MONTH, MonthlyCost, monthly_cost, owned_monthly_cost
from sizeup.plan.scenario import Scenario
from sizeup.price.engines import get_engine
from sizeup.price.memory import MemoryConfig, inference_memory
from sizeup.price.roofline import price
from sizeup.workload.inference import InferenceConfig, estimate_inference
from sizeup.workload.quantize import get_format

__all__ = ["Candidate", "Rejection", "PlanResult", "plan_scenario"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    device: DeviceSpec
    gpus: int
    """Per replica (tensor parallel), or per job."""
    quant: str
    engine: str
    offer: Offer | None
    owned: bool = False
    replicas: ReplicaPlan | None = None
    simulation: SimulationResult | None = None
    monthly: MonthlyCost | None = None
    cost_usd: float = 0.0
    """Monthly for serving, per run for jobs; the cheapest allowed pricing."""
    latency: dict[str, float] = field(default_factory=dict)
    memory_bytes: int = 0
    usable_bytes: float = 0.0
    max_batch: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        where = "owned" if self.owned else (self.offer.id if self.offer else "no offer")
        return f"{self.gpus}x {self.device.id} {self.quant} {self.engine} ({where})"

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device.id, "gpus": self.gpus, "quant": self.quant, "engine": self.engine,
                "offer": None if self.offer is None else self.offer.id, "owned": self.owned,
                "replicas": None if self.replicas is None else self.replicas.to_dict(),
                "simulation": None if self.simulation is None else self.simulation.to_dict(),
                "monthly": None if self.monthly is None else self.monthly.to_dict(), "cost_usd": self.cost_usd,
                "latency_s": dict(self.latency), "memory_bytes": self.memory_bytes, "usable_bytes": self.usable_bytes,
                "max_batch": self.max_batch, "detail": dict(self.detail)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    family: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"family": self.family, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanResult:
    scenario: Scenario
    arch: ModelArch | None
    chosen: Candidate | None
    ranked: tuple[Candidate, ...]
    """Every family that meets the scenario, cheapest first."""
    pareto: tuple[Candidate, ...]
    rejected: tuple[Rejection, ...]
    closest: Candidate | None = None
    closest_miss: str = ""
    evaluated: int = 0
    assumptions: tuple[str, ...] = ()
    method_comparison: tuple[tuple[str, str, float, float], ...] = ()
    """Fine-tuning: (method, cheapest configuration, hours, cost) for full, LoRA and QLoRA."""

    @property
    def meets(self) -> bool:
        return self.chosen is not None

    def to_dict(self) -> dict[str, Any]:
        return {"meets": self.meets, "chosen": None if self.chosen is None else self.chosen.to_dict(),
                "ranked": [c.to_dict() for c in self.ranked], "pareto": [c.to_dict() for c in self.pareto],
                "rejected": [r.to_dict() for r in self.rejected],
                "closest": None if self.closest is None else self.closest.to_dict(), "closest_miss": self.closest_miss,
                "evaluated": self.evaluated, "assumptions": list(self.assumptions),
                "method_comparison": [{"method": m, "configuration": c, "hours": h, "cost_usd": u}
                                      for m, c, h, u in self.method_comparison]}


# ---- devices and offers -------------------------------------------------------------------

def _devices(catalog: Catalog, scenario: Scenario) -> list[DeviceSpec]:
    names = scenario.constraints.devices
    if names:
        return [catalog.device(n) for n in names]
    with_offers = {o.gpu for o in catalog.offers.values()}
    owned = {catalog.device(o.device).id for o in scenario.constraints.owned}
    return [d for d in catalog.devices.values() if d.kind == "gpu" and (d.id in with_offers or d.id in owned)]


def _offers(catalog: Catalog, scenario: Scenario, device: DeviceSpec, gpus: int) -> list[Offer]:
    c = scenario.constraints
    out = []
    for o in catalog.offers_for(device.id):
        if c.providers and o.provider not in c.providers:
            continue
        if c.regions and o.region not in c.regions:
            continue
        if o.gpu_count >= gpus and o.gpu_count % gpus == 0 or gpus % o.gpu_count == 0:
            out.append(o)
    return out


def _replica_price(offers: list[Offer], gpus: int, spot: bool) -> tuple[Offer | None, float]:
    """Cheapest hourly price of one replica of `gpus` GPUs: instances holding several replicas are
    split between them."""
    best, best_price = None, math.inf
    for o in offers:
        if o.gpu_count >= gpus:
            share = gpus / o.gpu_count
            hourly = o.on_demand_usd_per_hour * share
            if spot and o.spot_usd_per_hour:
                hourly = min(hourly, o.spot_usd_per_hour * share)
        else:
            hourly = o.on_demand_usd_per_hour * math.ceil(gpus / o.gpu_count)
        if hourly < best_price:
            best, best_price = o, hourly
    return best, best_price


# ---- serving ------------------------------------------------------------------------------

def replica_model(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, max_batch: int) -> ReplicaModel:
    """Prefill as fixed + per-token time (two priced prompts), decode step time at batch sizes up to
    `max_batch` (priced ledgers at the mean context of a generation)."""
    engine = get_engine(cfg.engine)
    step = engine.range("step_overhead_s")
    step_s = step.typical if step else 0.0
    p = cfg.prompt
    t1 = estimate_inference(arch, device, InferenceConfig(**{**_cfg_dict(cfg), "prompt": p, "output": 1}),
                            limits=False).prefill
    t2 = estimate_inference(arch, device, InferenceConfig(**{**_cfg_dict(cfg), "prompt": 2 * p, "output": 1}),
                            limits=False).prefill
    per_token = max((t2.latency_s.typical - t1.latency_s.typical) / p, 1e-9)
    fixed = max(t1.latency_s.typical - per_token * p, 0.0)
    batches = sorted({1, *[2 ** k for k in range(1, 12) if 2 ** k < max_batch], max_batch})
    times = []
    fmt = get_format(cfg.weights)
    context = cfg.prompt + max(cfg.output // 2, 1)
    from sizeup.workload.inference import _phase_efficiency  # the engine's decode efficiencies

    eff = _phase_efficiency(device, engine, True, fmt)
    for b in batches:
        ledger = transformer_ledger(arch, Step(batch=b, new_tokens=1, context=context), weights=fmt,
                                    kv_dtype=cfg.kv_dtype, tp=cfg.gpus, per_layer=False)
        times.append(price(ledger, device, eff).total_s.typical + step_s)
    return ReplicaModel(prefill_fixed_s=fixed, prefill_per_token_s=per_token, decode_batches=tuple(batches),
                        decode_step_s=tuple(times), max_batch=max_batch)


def _cfg_dict(cfg: InferenceConfig) -> dict[str, Any]:
    return {k: getattr(cfg, k) for k in ("batch", "prompt", "output", "context", "weights", "kv_dtype", "engine",
                                         "gpus", "gpu_layers")}


def _serving(scenario: Scenario, catalog: Catalog, arch: ModelArch, prune: bool = True) -> PlanResult:
    traffic, c = scenario.traffic, scenario.constraints
    targets = scenario.sla.targets or {"ttft_p95": 2.0}
    assumptions = [f"traffic: {traffic.description}; prompt {traffic.prompt_tokens}, output {traffic.output_tokens} "
                   f"tokens on average", "each replica serves its share of Poisson arrivals (load balanced)"]
    if not scenario.sla.targets:
        assumptions.append("no SLA given: p95 TTFT of 2 s assumed")
    rejected: list[Rejection] = []
    families = []
    a0 = arch.layers[0].attention
    for device in _devices(catalog, scenario):
        owned = next((o for o in c.owned if catalog.device(o.device).id == device.id), None)
        for gpus in (1, 2, 4, 8):
            if gpus > c.max_gpus or a0.heads % gpus or (a0.kv_heads % gpus and gpus % a0.kv_heads):
                continue
            offers = _offers(catalog, scenario, device, gpus)
            if not offers and not (owned and owned.count >= gpus):
                continue
            for quant in c.quantizations:
                for engine in c.engines:
                    family = f"{gpus}x {device.id} {quant} {engine}"
                    cfg = InferenceConfig(batch=1, prompt=traffic.prompt_tokens, output=traffic.output_tokens,
                                          weights=quant, engine=engine, gpus=gpus)
                    try:
                        memory = inference_memory(arch, device, get_engine(engine), MemoryConfig(
                            batch=1, context=traffic.prompt_p95_tokens + traffic.output_p95_tokens,
                            prompt=traffic.prompt_p95_tokens, weights=get_format(quant), tp=gpus))
                    except SizeupError as e:
                        rejected.append(Rejection(family=family, reason=str(e)))
                        continue
                    if not memory.fits:
                        rejected.append(Rejection(family=family, reason=(
                            f"does not fit: {memory.total_bytes / 2**30:,.1f} GiB needed per GPU, "
                            f"{memory.usable_bytes.typical / 2**30:,.1f} GiB usable")))
                        continue
                    offer, hourly = _replica_price(offers, gpus, c.spot)
                    owned_cost = None
                    if owned and owned.count >= gpus:
                        owned_cost = owned_monthly_cost(owned, device, gpus)
                    families.append((device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost))
    # a lower bound on each family's fleet cost, from its throughput bound; simulate cheapest-first
    bounded = []
    for device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost in families:
        max_batch = memory.max_concurrent_sequences or _max_batch(arch, device, cfg, traffic)
        e = estimate_inference(arch, device, InferenceConfig(**{**_cfg_dict(cfg), "batch": max(max_batch, 1)}),
                               limits=False)
        if e.decode is not None and e.decode.tokens_per_s is None:  # compute unknown: no speed to plan on
            continue
        upper = e.decode.tokens_per_s.high / max(traffic.output_tokens, 1) if e.decode else 1.0
        cheapest_hourly = hourly
        if offer is not None and offer.reserved_1y_usd_per_hour is not None:
            cheapest_hourly = min(cheapest_hourly, hourly * offer.reserved_1y_usd_per_hour / offer.on_demand_usd_per_hour)
        monthly_replica = min(cheapest_hourly * HOURS_PER_MONTH, owned_cost or math.inf)
        # at the throughput bound, plus the N+1 replica
        lower = (math.ceil(traffic.peak_requests_per_s / max(upper, 1e-9)) + 1) * monthly_replica
        bounded.append((lower, device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost, max_batch))
    bounded.sort(key=lambda t: t[0])
    candidates, best_cost, evaluated = [], math.inf, 0
    closest, closest_miss, closest_gap = None, "", math.inf
    for lower, device, gpus, quant, engine, cfg, memory, offer, hourly, owned_cost, max_batch in bounded:
        family = f"{gpus}x {device.id} {quant} {engine}"
        if prune and lower > best_cost and len(candidates) >= 3:
            rejected.append(Rejection(family=family, reason=f"costs at least ${lower:,.0f}/month, more than the "
                                                            f"chosen ${best_cost:,.0f}"))
            continue
        evaluated += 1
        model = replica_model(arch, device, cfg, max_batch)
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
                                    simulation=probe, latency={k: probe.metric(k) for k in targets},
                                    memory_bytes=memory.total_bytes, usable_bytes=memory.usable_bytes.typical,
                                    max_batch=max_batch)
            continue
        plan = replicas_needed(traffic.peak_requests_per_s, traffic.base_requests_per_s, rate, c.headroom)
        replicas = plan.with_redundancy
        peak_sim = simulate(model, traffic.peak_requests_per_s / plan.for_load, traffic.prompt_tokens,
                            traffic.output_tokens, requests=1500, seed=1)
        monthly = None
        if offer is not None:
            per_instance = max(1, offer.gpu_count // gpus)
            monthly = monthly_cost(offer, math.ceil(replicas / per_instance) if offer.gpu_count >= gpus
                                   else replicas * math.ceil(gpus / offer.gpu_count))
        owned_total = owned_cost * replicas if owned_cost is not None else None
        options = [m for m in (monthly.cheapest(c.spot) if monthly else None, owned_total) if m is not None]
        cost = min(options)
        candidate = Candidate(device=device, gpus=gpus, quant=quant, engine=engine, offer=offer,
                              owned=owned_total is not None and owned_total == cost, replicas=plan,
                              simulation=peak_sim, monthly=monthly, cost_usd=cost,
                              latency={k: peak_sim.metric(k) for k in targets}, memory_bytes=memory.total_bytes,
                              usable_bytes=memory.usable_bytes.typical, max_batch=max_batch,
                              detail={"rate_per_replica": rate, "owned_monthly_usd": owned_total,
                                      "decode_batches": list(model.decode_batches),
                                      "decode_step_s": list(model.decode_step_s)})
        if scenario.budget.monthly_usd is not None and cost > scenario.budget.monthly_usd:
            rejected.append(Rejection(family=family, reason=f"${cost:,.0f}/month is over the budget of "
                                                            f"${scenario.budget.monthly_usd:,.0f}"))
            if closest is None or cost < closest.cost_usd:
                closest, closest_miss = candidate, f"over budget by ${cost - scenario.budget.monthly_usd:,.0f}/month"
            continue
        candidates.append(candidate)
        best_cost = min(best_cost, cost)
    result = _result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions,
                     latency_key=next(iter(targets)))
    if result.chosen is not None:  # the saturation point: the highest rate at which queues stay bounded
        chosen = result.chosen
        model = ReplicaModel(prefill_fixed_s=0, prefill_per_token_s=0, decode_batches=(1,), decode_step_s=(1,),
                             max_batch=1)
        detail = chosen.detail
        if detail.get("decode_batches"):
            cfg = InferenceConfig(prompt=traffic.prompt_tokens, output=traffic.output_tokens, weights=chosen.quant,
                                  engine=chosen.engine, gpus=chosen.gpus)
            model = replica_model(arch, chosen.device, cfg, chosen.max_batch)
            saturation, _ = rate_at_sla(model, traffic.prompt_tokens, traffic.output_tokens, {}, requests=1200)
            from dataclasses import replace

            chosen = replace(chosen, detail={**detail, "saturation_rps": saturation})
            result = replace(result, chosen=chosen, ranked=(chosen,) + result.ranked[1:],
                             pareto=tuple(chosen if c is result.chosen else c for c in result.pareto))
    return result


def _max_batch(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, traffic) -> int:
    e = estimate_inference(arch, device, cfg)
    return max(1, min(e.max_batch, 256))


_PRECISION_ORDER = ("fp32", "bf16", "fp16", "f16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "gptq-int4",
                    "awq-int4", "q4_k_m", "nf4", "q3_k_m", "q2_k")


def _precision_rank(quant: str) -> int:
    return _PRECISION_ORDER.index(quant) if quant in _PRECISION_ORDER else len(_PRECISION_ORDER)


def _result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions,
            latency_key: str) -> PlanResult:
    # cheapest first; at equal cost the higher-precision weights, then the lower latency
    ranked = sorted(candidates, key=lambda c: (round(c.cost_usd, 2), _precision_rank(c.quant),
                                               c.latency.get(latency_key, 0.0)))
    pareto, best_latency = [], math.inf
    for c in ranked:  # cheapest first: keep each that is faster than every cheaper one
        latency = c.latency.get(latency_key, 0.0)
        if latency < best_latency:
            pareto.append(c)
            best_latency = latency
    chosen = ranked[0] if ranked else None
    return PlanResult(scenario=scenario, arch=arch, chosen=chosen, ranked=tuple(ranked), pareto=tuple(pareto),
                      rejected=tuple(rejected), closest=None if chosen else closest,
                      closest_miss="" if chosen else closest_miss, evaluated=evaluated,
                      assumptions=tuple(assumptions))


# ---- jobs -----------------------------------------------------------------------------------

def _job(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    from sizeup.workload.finetune import FinetuneSpec
    from sizeup.workload.parallel import ParallelConfig
    from sizeup.workload.training import TrainingConfig, estimate_training

    job, c = scenario.job, scenario.constraints
    rejected, candidates = [], []
    closest, closest_miss, closest_gap = None, "", math.inf
    evaluated = 0
    for device in _devices(catalog, scenario):
        for gpus in (1, 2, 4, 8, 16, 32, 64):
            if gpus > max(c.max_gpus, 1):
                break
            nodes = max(1, gpus // 8)
            offers = _offers(catalog, scenario, device, min(gpus, 8))
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
            cost = min(e.cost_usd["on_demand"].typical,
                       e.cost_usd["spot"].typical if c.spot and "spot" in e.cost_usd else math.inf)
            candidate = Candidate(device=device, gpus=gpus, quant="bf16" if job.method != "qlora" else "nf4",
                                  engine="train", offer=e.offer, cost_usd=cost, latency={"hours": hours},
                                  memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                  detail={"mfu": e.mfu.typical, "tokens_per_s": e.tokens_per_s.typical,
                                          "micro_batch": e.micro_batch, "hours_range": e.time_to_train_s.scale(
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
                rejected.append(Rejection(family=family, reason=f"${cost:,.0f} is over the budget of "
                                                                f"${scenario.budget.job_usd:,.0f}"))
                continue
            candidates.append(candidate)
            break  # more GPUs of this device only cost more for the same work
    assumptions = [f"{job.method} on {job.tokens:,} tokens at sequence {job.seq}; ZeRO-3 across GPUs"]
    return _result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "hours")


def _batch(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    """Offline generation of `job.tokens` output tokens: the largest batch that fits, the cheapest run
    within the deadline."""
    job, c = scenario.job, scenario.constraints
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, closest_gap = None, "", math.inf
    prompt = scenario.traffic.prompt_tokens if scenario.traffic else 512
    output = scenario.traffic.output_tokens if scenario.traffic else 256
    for device in _devices(catalog, scenario):
        for gpus in (1, 2, 4, 8):
            a0 = arch.layers[0].attention
            if gpus > c.max_gpus or a0.heads % gpus:
                continue
            offers = _offers(catalog, scenario, device, gpus)
            if not offers:
                continue
            offer, hourly = _replica_price(offers, gpus, c.spot)
            for quant in c.quantizations:
                family = f"{gpus}x {device.id} {quant}"
                cfg = InferenceConfig(prompt=prompt, output=output, weights=quant, engine="vllm", gpus=gpus)
                first = estimate_inference(arch, device, cfg)
                evaluated += 1
                if not first.memory.fits:
                    rejected.append(Rejection(family=family, reason="does not fit"))
                    continue
                e = estimate_inference(arch, device, InferenceConfig(**{**_cfg_dict(cfg), "batch": first.max_batch}))
                if e.decode.tokens_per_s is None:
                    rejected.append(Rejection(family=family, reason="compute unknown on this device"))
                    continue
                rate = e.decode.tokens_per_s.typical * output / (output + e.prefill.latency_s.typical
                                                                 / e.decode.latency_s.typical)
                hours = job.tokens / rate / 3600
                cost = hours * hourly
                candidate = Candidate(device=device, gpus=gpus, quant=quant, engine="vllm", offer=offer,
                                      cost_usd=cost, latency={"hours": hours}, max_batch=first.max_batch,
                                      memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                      detail={"tokens_per_s": rate})
                if job.deadline_hours is not None and hours > job.deadline_hours:
                    rejected.append(Rejection(family=family, reason=f"{hours:,.1f} h, past the deadline"))
                    if hours / job.deadline_hours < closest_gap:
                        closest_gap, closest = hours / job.deadline_hours, candidate
                        closest_miss = f"misses the deadline by {hours - job.deadline_hours:,.1f} h"
                    continue
                candidates.append(candidate)
    assumptions = [f"offline generation of {job.tokens:,} output tokens, prompt {prompt}, output {output} per request"]
    return _result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "hours")


# ---- edge -----------------------------------------------------------------------------------

EDGE_FORMATS = ("bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")


def _edge(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    edge = scenario.edge
    device = catalog.device(edge.device)
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, closest_gap = None, "", math.inf
    prompt = scenario.traffic.prompt_tokens if scenario.traffic else 256
    output = scenario.traffic.output_tokens if scenario.traffic else 128
    for quant in EDGE_FORMATS:
        evaluated += 1
        e = estimate_inference(arch, device, InferenceConfig(prompt=prompt, output=output, weights=quant,
                                                             engine="llama.cpp"))
        tpot = e.decode.latency_s.typical / edge.thermal_derate
        family = f"{device.id} {quant} llama.cpp"
        candidate = Candidate(device=device, gpus=1, quant=quant, engine="llama.cpp", offer=None,
                              latency={"tpot": tpot, "ttft": e.prefill.latency_s.typical / edge.thermal_derate},
                              memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                              max_batch=1, detail={"tokens_per_s": 1 / tpot})
        if not e.memory.fits:
            rejected.append(Rejection(family=family, reason=(f"does not fit: {e.memory.total_bytes / 2**30:,.2f} GiB, "
                                                             f"{e.memory.usable_bytes.typical / 2**30:,.2f} GiB usable "
                                                             f"after the OS share")))
            continue
        if tpot > edge.latency_s:
            rejected.append(Rejection(family=family, reason=f"{tpot * 1e3:,.0f} ms per token > {edge.latency_s * 1e3:,.0f} ms"))
            if tpot / edge.latency_s < closest_gap:
                closest_gap, closest, closest_miss = tpot / edge.latency_s, candidate, \
                    f"{(tpot - edge.latency_s) * 1e3:,.0f} ms per token too slow"
            continue
        candidates.append(candidate)
        break  # formats run from high to low precision: the first that meets the latency is kept
    assumptions = [f"thermal derate ×{edge.thermal_derate:g} on sustained speed (assumption, not measured)",
                   "shared memory: the OS and runtime share is kept free (usable-memory class)"]
    return _result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "tpot")


def plan_scenario(scenario: Scenario, catalog: Catalog, *, prune: bool = True) -> PlanResult:
    """The plan for `scenario`; `prune=False` simulates every family that fits (for checking the
    pruning, slower)."""
    if scenario.task == "vision":
        from sizeup.plan.vision import plan_vision

        return plan_vision(scenario, catalog)
    try:
        arch = load_model(scenario.model)
    except ResolveError as e:
        raise ConfigError(f"scenario key 'model': {e}") from None
    if scenario.task in ("chat", "api"):
        return _serving(scenario, catalog, arch, prune)
    if scenario.task == "pretrain":
        return _job(scenario, catalog, arch)
    if scenario.task == "finetune":
        from dataclasses import replace

        result = _job(scenario, catalog, arch)
        rows = []
        for method in ("full", "lora", "qlora"):
            other = result if method == scenario.job.method else _job(
                replace(scenario, job=replace(scenario.job, method=method)), catalog, arch)
            best = other.chosen or other.closest
            if best is not None:
                rows.append((method, best.label, best.latency.get("hours", 0.0), best.cost_usd))
        return replace(result, method_comparison=tuple(rows))
    if scenario.task == "batch":
        return _batch(scenario, catalog, arch)
    return _edge(scenario, catalog, arch)
