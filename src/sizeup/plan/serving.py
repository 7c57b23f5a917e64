"""Serving search: device × GPUs per replica (tensor parallel) × weight format × engine × the link the
replica's GPUs share inside one instance (plan.topology: a replica never spans instances).

Families that do not fit are dropped first (memory only, no pricing); the rest are ranked by a lower
bound on the fleet cost (the month's load levels at each replica's throughput bound) and simulated in that
order, stopping once the bound of the next family exceeds the best fleet found in every region group it is
offered in — so the catalog can grow without the search growing with it, and the cheapest of each region
group is still exact. Each survivor is billed as the autoscaled fleet of plan.fleet.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

from sizeup.engines.base import ExecutionModel
from sizeup.engines.defaults import planned_engines
from sizeup.errors import ConfigError, SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.ingest.hf_config import ModelArch
from sizeup.ingest.transformer_ops import Step, transformer_ledger
from sizeup.plan.capacity import ReplicaModel, rate_at_sla, replicas_needed, simulate
from sizeup.plan.cost import HOURS_PER_MONTH, MonthlyCost, owned_monthly_cost, pricing_basis
from sizeup.plan.fleet import fleet_for, lower_bound_usd, month_levels, owned_mix, replicas_at
from sizeup.plan.offers import cheapest_per_group, devices_for, hourly_price, offers_for
from sizeup.plan.replica import replica_model
from sizeup.plan.scenario import Scenario
from sizeup.plan.topology import installed, link_class, link_text, replica_offers
from sizeup.plan.types import Candidate, PlanResult, Rejection, memory_parts, ranked_result
from sizeup.price.memory import MemoryConfig, inference_memory
from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for
from sizeup.workload.quantize import get_format
from sizeup.workload.serving import Load, RequestMix, serving_load
from sizeup.workload.towers import decoder_arch, decoder_cache_tokens, decoder_prompt, tower_input

__all__ = ["plan_serving", "replica_model"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Family:
    device: DeviceSpec
    """As installed in the family's offers (their link)."""
    gpus: int
    quant: str
    engine: str
    cfg: InferenceConfig
    execution: ExecutionModel
    """The engine on `device`, resolved once for the family."""
    memory: object
    groups: dict[str, tuple[Offer, float]]
    """Region group -> (cheapest offer of the family there, hourly price of one replica on the basis)."""
    owned_replica_usd: float | None
    held_replicas: int
    link_kind: str

    @property
    def name(self) -> str:
        return f"{self.gpus}x {self.device.id} {self.quant} {self.engine}" + (f" over {self.link}" if self.gpus > 1
                                                                            else "")

    @property
    def link(self) -> str:
        """The link class of the family's offers: "nvlink4" as stated, or PCIe (stated or assumed)."""
        return self.link_kind if self.link_kind != "pcie" else "PCIe (no NVLink stated)"


def plan_serving(scenario: Scenario, catalog: Catalog, arch: ModelArch, prune: bool = True) -> PlanResult:
    traffic, c = scenario.traffic, scenario.constraints
    basis = pricing_basis(scenario)
    targets = scenario.sla.targets or {"ttft_p95": 2.0}
    levels, method = month_levels(traffic)
    assumptions = [f"traffic: {traffic.description}; prompt {traffic.prompt_tokens}, output {traffic.output_tokens} "
                   f"tokens on average", "each replica serves its share of Poisson arrivals (load balanced)",
                   f"month billed as the autoscaled fleet: {method}",
                   "a replica's GPUs share one instance and its link (NVLink where the offer states it, else PCIe)"]
    if not scenario.sla.targets:
        assumptions.append("no SLA given: p95 TTFT of 2 s assumed")
    engines, note = planned_engines(c.engines, "serving")
    assumptions += [note] if note else []
    rejected: list[Rejection] = []
    families = _families(scenario, catalog, arch, basis, rejected, engines)
    spares = (_spare(c, True), _spare(c, False))
    # a lower bound on each family's fleet cost per region group from its throughput bound; simulate cheapest-first.
    # Two bounds, lazily: the tensor peak's (cheap, looser) orders the heap first; a family is priced under load
    # (serving_load, the tight bound) only when it reaches the top, so a dominated family is pruned unpriced. The
    # order of simulation and every choice are those of the tight bounds alone: a cheap key never exceeds its tight
    # one, and a family pruned on its cheap bound would be pruned on its tight bound (best only falls).
    peak_flops = _request_matmul_flops(arch, traffic)
    heap: list[tuple] = []
    batches: dict[tuple, int] = {}  # the largest batch that fits, per device x GPUs x format x engine (not the link)
    for fam in families:
        quick = _compute_rate(fam, peak_flops)
        bounds = None if quick is None else _bounds(fam, quick, levels, spares, traffic)
        heapq.heappush(heap, (min(bounds.values()) if bounds else 0.0, fam.name, 0, len(heap), fam, bounds, 0))
    candidates, best, evaluated = [], {}, 0
    closest, closest_miss, closest_gap = None, "", math.inf
    while heap:
        lower, _, tight, order, fam, bounds, max_batch = heapq.heappop(heap)
        if prune and bounds and len(candidates) >= 3 and all(v > best.get(k, math.inf) for k, v in bounds.items()):
            rejected.append(Rejection(family=fam.name, reason=f"costs at least ${lower:,.0f}/month {basis}, more than "
                                                              f"the chosen ${min(best.values()):,.0f}/month"))
            continue
        if not tight:
            max_batch = fam.memory.max_concurrent_sequences
            if not max_batch:
                key = (fam.device.id, fam.gpus, fam.quant, fam.engine)
                if key not in batches:  # memory does not read the link, so families of one key share it
                    batches[key] = _max_batch(arch, fam.device, fam.cfg, fam.execution)
                max_batch = batches[key]
            if not max_batch:
                rejected.append(Rejection(family=fam.name, reason=(
                    f"does not fit: not one request of {fam.cfg.cache_tokens:,} tokens (the mean prompt and output) "
                    f"fits a replica's memory as {fam.execution.label} runs {arch.name}")))
                continue
            upper = _saturated_rate(arch, fam, traffic, max_batch)
            if upper is None:  # compute unknown: no speed to plan on
                continue
            bounds = _bounds(fam, upper, levels, spares, traffic)
            heapq.heappush(heap, (min(bounds.values()), fam.name, 1, order, fam, bounds, max_batch))
            continue
        evaluated += 1
        model = replica_model(arch, fam.device, fam.cfg, max_batch, fam.execution)
        rate, sim = rate_at_sla(model, traffic.prompt_tokens, traffic.output_tokens, targets, requests=1200)
        if rate <= 0:
            miss = ", ".join(f"{k} {sim.metric(k):.3g} s > {v:g} s" for k, v in targets.items() if sim.metric(k) > v)
            rejected.append(Rejection(family=fam.name, reason=f"misses the SLA even unloaded: {miss}"))
            gap = max(sim.metric(k) / v for k, v in targets.items())
            if gap < closest_gap:
                closest_gap, closest_miss = gap, miss
                offer = min(fam.groups.values(), key=lambda t: t[1])[0] if fam.groups else None
                # no fleet is sized for a miss: its price is one instance of the offer all month, said so
                hourly, used = hourly_price(offer, basis) if offer is not None else (0.0, basis)
                closest = Candidate(device=fam.device, gpus=fam.gpus, quant=fam.quant, engine=fam.execution.name,
                                    offer=offer, engine_version=fam.execution.version,
                                    simulation=sim, latency={k: sim.metric(k) for k in targets},
                                    memory_bytes=fam.memory.total_bytes, usable_bytes=fam.memory.usable_bytes.typical,
                                    max_batch=max_batch, cost_usd=hourly * HOURS_PER_MONTH, pricing_basis=used,
                                    detail={"link": _link(fam, offer), "unloaded_miss": miss})
            continue
        candidate = _billed(scenario, fam, model, rate, max_batch, basis, levels, method, spares, rejected)
        if candidate is None:
            continue
        if scenario.budget.monthly_usd is not None and candidate.cost_usd > scenario.budget.monthly_usd:
            rejected.append(Rejection(family=fam.name, reason=f"${candidate.cost_usd:,.0f}/month "
                                                              f"{candidate.pricing_basis} is over the budget of "
                                                              f"${scenario.budget.monthly_usd:,.0f}"))
            if closest is None or candidate.cost_usd < closest.cost_usd:
                closest = candidate
                closest_miss = f"over budget by ${candidate.cost_usd - scenario.budget.monthly_usd:,.0f}/month"
            continue
        candidates.append(candidate)
        for g, entry in candidate.detail["by_region"].items():
            best[g] = min(best.get(g, math.inf), entry["cost_usd"])
        if candidate.owned:
            best["owned"] = min(best.get("owned", math.inf), candidate.cost_usd)
    result = ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions,
                           latency_key=next(iter(targets)))
    return _with_saturation(result, arch, traffic)


def _families(scenario: Scenario, catalog: Catalog, arch: ModelArch, basis: str, rejected: list[Rejection],
              engines: tuple[str, ...]) -> list:
    """Every device × GPUs per replica × format × engine × link class that fits, with its offers by region."""
    traffic, c = scenario.traffic, scenario.constraints
    search_basis = "reserved-1y" if basis == "mixed" else basis
    families = []
    a0 = arch.layers[0].attention
    for device in devices_for(catalog, scenario):
        owned = next((o for o in c.owned if catalog.device(o.device).id == device.id), None)
        offers = offers_for(catalog, scenario, device)
        if not offers and owned is None:
            rejected.append(Rejection(family=device.id, reason=(
                "no cloud offer of it in the catalog" + (" within the scenario's providers and regions"
                                                         if c.providers or c.regions else "")
                + " and none owned (constraints.owned)")))
            continue
        for gpus in (1, 2, 4, 8):
            if gpus > c.max_gpus or a0.heads % gpus or (a0.kv_heads % gpus and gpus % a0.kv_heads):
                continue
            fitting = replica_offers(offers, gpus)
            held = owned.count // gpus if owned else 0
            if not fitting and not held:
                if offers and gpus > 1 and any(o.gpu_count >= gpus // 2 for o in offers):
                    rejected.append(Rejection(family=f"{gpus}x {device.id}", reason=(
                        f"no offer holds {gpus} {device.id} GPUs in one instance (largest: "
                        f"{max(o.gpu_count for o in offers)}): a tensor-parallel replica is not split across "
                        "instances")))
                continue
            classes: dict[str, list[Offer]] = {}
            for o in fitting:
                classes.setdefault(link_class(o) if gpus > 1 else "-", []).append(o)
            if not classes:
                classes["owned"] = []
            for quant in c.quantizations:
                for engine in engines:
                    try:
                        cfg = InferenceConfig(batch=1, prompt=traffic.prompt_tokens, output=traffic.output_tokens,
                                              weights=quant, engine=engine, gpus=gpus, images=traffic.images,
                                              image_hw=traffic.image_hw)
                        execution = execution_for(device, cfg)  # resolved once per family
                        memory = _p95_memory(arch, execution, quant, gpus, traffic)
                    except SizeupError as e:
                        rejected.append(Rejection(family=f"{gpus}x {device.id} {quant} {engine}", reason=str(e)))
                        continue
                    if not memory.fits:
                        rejected.append(Rejection(family=f"{gpus}x {device.id} {quant} {engine}",
                                                  reason=_does_not_fit(memory)))
                        continue
                    owned_usd = owned_monthly_cost(owned, device, gpus) if held else None
                    for members in classes.values():
                        sample = members[0] if members else None
                        installed_device = installed(device, sample)
                        families.append(_Family(
                            device=installed_device, gpus=gpus, quant=quant, engine=engine, cfg=cfg,
                            execution=execution.on(installed_device),
                            memory=memory, groups=cheapest_per_group(members, gpus, search_basis),
                            owned_replica_usd=owned_usd, held_replicas=held,
                            link_kind=link_class(sample) if sample is not None else "owned"))
    return families


def _billed(scenario, fam: _Family, model: ReplicaModel, rate: float, max_batch: int, basis: str, levels, method,
            spares: tuple[int, int], rejected: list[Rejection]) -> Candidate | None:
    """The family's fleet billed in every region group and on the owned cards; the cheapest is the candidate."""
    traffic, c = scenario.traffic, scenario.constraints
    plan = replicas_needed(traffic.peak_requests_per_s, traffic.base_requests_per_s, rate, c.headroom, spares[1])
    usable = rate * (1 - c.headroom)
    by_region, fleets = {}, {}
    for group, (offer, _) in fam.groups.items():
        fleet = fleet_for(levels, method, usable, spares[1], offer, offer.gpu_count // fam.gpus, c.spot)
        cost, used = (fleet.costs[basis], basis) if basis in fleet.costs else (fleet.costs["on-demand"], "on-demand")
        by_region[group] = {"offer": offer.id, "region": offer.region, "cost_usd": cost, "pricing_basis": used}
        fleets[group] = fleet
    group = min(by_region, key=lambda g: by_region[g]["cost_usd"]) if by_region else None
    offer = fam.groups[group][0] if group else None
    fleet = fleets.get(group)
    cost, used = (by_region[group]["cost_usd"], by_region[group]["pricing_basis"]) if group else (math.inf, basis)
    mix = None
    if fam.owned_replica_usd is not None:
        rented = hourly_price(offer, "spot" if c.spot else "on-demand") if offer is not None else (0.0, "")
        mix = owned_mix(levels, usable, fam.held_replicas, fam.owned_replica_usd, spares, offer,
                        offer.gpu_count // fam.gpus if offer is not None else 1, rented)
    owned = mix is not None and mix.cost_usd <= cost
    if owned:
        cost, used = mix.cost_usd, "owned"
        plan = replicas_needed(traffic.peak_requests_per_s, traffic.base_requests_per_s, rate, c.headroom,
                               spares[0] if not mix.rented_instance_hours else spares[1])
    if cost == math.inf:
        rejected.append(Rejection(family=fam.name, reason=f"{(plan.for_load + spares[0]) * fam.gpus} GPUs needed, "
                                                          f"{fam.held_replicas * fam.gpus} owned and no cloud offer"))
        return None
    monthly = None if fleet is None else MonthlyCost(
        instances=fleet.peak_instances, on_demand_usd=fleet.costs["on-demand"], spot_usd=fleet.costs.get("spot"),
        reserved_usd=fleet.costs.get("reserved-1y"), mixed_usd=fleet.costs.get("mixed"),
        owned_usd=None if mix is None else mix.cost_usd, instance_hours=fleet.instance_hours)
    peak_sim = simulate(model, traffic.peak_requests_per_s / plan.for_load, traffic.prompt_tokens,
                        traffic.output_tokens, requests=1500, seed=1)
    targets = scenario.sla.targets or {"ttft_p95": 2.0}
    return Candidate(device=fam.device, gpus=fam.gpus, quant=fam.quant, engine=fam.execution.name, offer=offer,
                     owned=owned, engine_version=fam.execution.version,
                     replicas=plan, simulation=peak_sim, monthly=monthly, cost_usd=cost, pricing_basis=used,
                     latency={k: peak_sim.metric(k) for k in targets}, memory_bytes=fam.memory.total_bytes,
                     usable_bytes=fam.memory.usable_bytes.typical, max_batch=max_batch,
                     detail={"rate_per_replica": rate, "owned_monthly_usd": None if mix is None else mix.cost_usd,
                             "owned_mix": None if mix is None else mix.arithmetic,
                             "owned_replicas": None if mix is None else mix.owned_replicas,
                             "fleet": None if fleet is None else fleet.to_dict(), "by_region": by_region,
                             "link": _link(fam, None if owned else offer), "floor_replicas": _floor(fleet, levels, usable, spares, owned),
                             "decode_batches": list(model.decode_batches),
                             "decode_step_s": list(model.decode_step_s),
                             "memory_parts": memory_parts(fam.memory),
                             **({"multimodal_profile": fam.memory.multimodal_profile.to_dict()}
                                if fam.memory.multimodal_profile else {})})


def _bounds(fam: _Family, upper: float, levels, spares: tuple[int, int], traffic) -> dict[str, float]:
    """A lower bound on the family's monthly cost per region group (and on its owned cards) at `upper` req/s."""
    bounds = {g: lower_bound_usd(levels, upper, spares[1], hourly) for g, (_, hourly) in fam.groups.items()}
    if fam.owned_replica_usd is not None:
        at_bound = math.ceil(traffic.peak_requests_per_s / max(upper, 1e-9))
        bounds["owned"] = min(at_bound + spares[0], fam.held_replicas) * fam.owned_replica_usd
    return bounds


def _request_matmul_flops(arch: ModelArch, traffic) -> float | None:
    """Matrix FLOPs one request needs at the least: its prompt as one prefill and each output token as a decode
    step at the prompt's context (attention grows past it), none of the elementwise work. None for models whose
    decoder sees a tower or an encoder (their own work is left out here)."""
    if arch.encoder or arch.tower is not None or arch.cross_source:
        return None
    prompt, output = max(traffic.prompt_tokens, 1), max(traffic.output_tokens, 1)
    prefill = transformer_ledger(arch, Step(batch=1, new_tokens=prompt, context=prompt), per_layer=False)
    decode = transformer_ledger(arch, Step(batch=1, new_tokens=1, context=prompt), per_layer=False)
    return float(prefill.totals().matmul_flops + (output - 1) * decode.totals().matmul_flops)


def _compute_rate(fam: _Family, request_flops: float | None) -> float | None:
    """Requests/s no replica of the family exceeds: its GPUs' highest dense tensor peak over a request's matrix
    FLOPs (the cheap bound that orders the search before a family is priced under load). None: no bound known."""
    device = fam.device
    peak = max([*device.peak_flops_per_s.values(), device.fp16_acc16_flops_per_s or 0.0], default=0.0)
    if not request_flops or peak <= 0:
        return None
    return fam.gpus * peak / request_flops


def _saturated_rate(arch: ModelArch, fam: _Family, traffic, max_batch: int) -> float | None:
    """An upper bound on a replica's requests/s: the throughput under load of every request queued at once
    (workload/serving.py: prefill and decode interleaved as the engine's batching policy schedules them, at the
    highest step times' low end), not batch / TPOT; None where compute is unknown."""
    if arch.encoder:
        e = estimate_inference(arch, fam.device, replace(fam.cfg, batch=max(max_batch, 1)), limits=False,
                               execution=fam.execution)
        return None if e.decode is not None and e.decode.tokens_per_s is None else 1.0
    mix = RequestMix(input_tokens=max(traffic.prompt_tokens, 1), output_tokens=max(traffic.output_tokens, 1))
    try:
        load = serving_load(arch, fam.device, fam.cfg, mix, Load(), execution=fam.execution, kv_capacity=max_batch)
    except ConfigError:
        return None
    return load.requests_per_s.high


def _link(fam: _Family, offer: Offer | None) -> str:
    return link_text(fam.device, offer) if fam.gpus > 1 else "one GPU per replica"


def _floor(fleet, levels, usable: float, spares: tuple[int, int], owned: bool) -> int:
    """Replicas at the quietest level of the month (the autoscaler's floor), the spare included."""
    if fleet is not None and not owned:
        return fleet.floor_replicas
    return min(replicas_at(lv.requests_per_s, usable) for lv in levels) + spares[0 if owned else 1]


def _with_saturation(result: PlanResult, arch: ModelArch, traffic) -> PlanResult:
    """The chosen option with its saturation point: the highest rate at which queues stay bounded."""
    chosen = result.chosen
    if chosen is None or not chosen.detail.get("decode_batches"):
        return result
    cfg = InferenceConfig(prompt=traffic.prompt_tokens, output=traffic.output_tokens, weights=chosen.quant,
                          engine=chosen.engine, gpus=chosen.gpus, images=traffic.images, image_hw=traffic.image_hw)
    model = replica_model(arch, chosen.device, cfg, chosen.max_batch)
    saturation, _ = rate_at_sla(model, traffic.prompt_tokens, traffic.output_tokens, {}, requests=1200)
    chosen = replace(chosen, detail={**chosen.detail, "saturation_rps": saturation})
    return replace(result, chosen=chosen, ranked=(chosen,) + result.ranked[1:],
                   pareto=tuple(chosen if c is result.chosen else c for c in result.pareto))


def _spare(c, owned: bool) -> int:
    """Spare replicas: the scenario's `redundancy`, else one when renting and none on owned hardware."""
    if c.redundancy is not None:
        return int(c.redundancy)
    return 0 if owned else 1


def _does_not_fit(memory) -> str:
    """Why a replica's memory does not fit: its total over the usable memory, or, where the total is under it, the
    engine's KV-cache pool (what its memory budget leaves after weights and its profiling run) short of one p95
    request's cache."""
    total, usable = memory.total_bytes / 2**30, memory.usable_bytes.typical / 2**30
    if total > usable or memory.kv_cache_bytes >= memory.kv_cache_needed_bytes:
        return f"does not fit: {total:,.1f} GiB needed per GPU, {usable:,.1f} GiB usable"
    return (f"does not fit: the engine's KV-cache pool holds {memory.kv_cache_bytes / 2**30:,.2f} GiB of the "
            f"{memory.kv_cache_needed_bytes / 2**30:,.2f} GiB one p95 request needs (its memory budget, not the "
            f"{usable:,.1f} GiB usable, bounds it)")


def _p95_memory(arch: ModelArch, execution: ExecutionModel, quant: str, gpus: int, traffic):
    """One request at the p95 prompt and output on one replica, its tower included, as `estimate` counts it: the
    model as the engine runs it on `gpus` tensor-parallel GPUs (ExecutionModel.as_run)."""
    prompt = traffic.prompt_p95_tokens
    model, arch, _ = execution.as_run(arch, gpus)
    feed = tower_input(arch, batch=1, prompt=prompt, images=traffic.images, image_hw=traffic.image_hw)
    return inference_memory(decoder_arch(arch, prompt), model, MemoryConfig(
        batch=1, context=decoder_cache_tokens(arch, prompt, prompt + traffic.output_p95_tokens),
        prompt=decoder_prompt(arch, prompt), weights=get_format(quant), tp=gpus, tower=feed))


def _max_batch(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, execution: ExecutionModel) -> int:
    """The largest batch of mean requests that fits one replica, at most 256; 0 where not even one does."""
    e = estimate_inference(arch, device, cfg, execution=execution, search_context=False)  # the batch is all it reads
    return min(e.max_batch, 256)
