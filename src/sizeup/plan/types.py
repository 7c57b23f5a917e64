"""What a plan is made of: a candidate configuration, a rejected family and why, and the result of a
search (the chosen candidate, the ranking, the Pareto front of cost against latency)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.plan.capacity import ReplicaPlan, SimulationResult
from sizeup.plan.cost import MonthlyCost
from sizeup.plan.scenario import Scenario

if TYPE_CHECKING:  # a plan of a traced torch model (vision) has no architecture and need not load the reader
    from sizeup.ingest.hf_config import ModelArch

__all__ = ["Candidate", "Rejection", "PlanResult", "ranked_result", "memory_parts", "precision_rank"]


def memory_parts(memory) -> dict[str, int]:
    """Bytes per GPU by part, in the order a stacked chart draws them: an InferenceMemory (weights, KV
    cache, activations, an engine's multimodal profile where there is one, overhead) or a TrainingMemory (weights,
    gradients, optimizer, activations, overhead). The parts sum to `memory.total_bytes`."""
    parts = {"weights": memory.weights_bytes}
    for name, attr in (("KV cache", "kv_cache_bytes"), ("gradients", "gradients_bytes"),
                       ("optimizer", "optimizer_bytes")):
        if hasattr(memory, attr):
            parts[name] = getattr(memory, attr)
    parts["activations"] = memory.activations_bytes
    if getattr(memory, "multimodal_profile_bytes", 0):  # an engine's vision profile ahead of the KV pool
        parts["multimodal profile"] = memory.multimodal_profile_bytes
    return parts | {"overhead": memory.overhead_bytes}


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    device: DeviceSpec
    gpus: int
    """Per replica (tensor parallel), or per job."""
    quant: str
    engine: str
    offer: Offer | None
    engine_version: str = ""
    """The engine release the plan was priced for (empty for training jobs and vision runtimes)."""
    owned: bool = False
    replicas: ReplicaPlan | None = None
    simulation: SimulationResult | None = None
    monthly: MonthlyCost | None = None
    cost_usd: float = 0.0
    """Monthly for serving, per run for jobs, on `pricing_basis`."""
    pricing_basis: str = "on-demand"
    """The basis of `cost_usd` (plan.cost.PRICING_BASES): the scenario's, or on-demand where the offer
    has no price on it, or "owned" for the scenario's own hardware."""
    latency: dict[str, float] = field(default_factory=dict)
    memory_bytes: int = 0
    usable_bytes: float = 0.0
    max_batch: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def engine_ref(self) -> str:
        """'NAME@0.34': the engine at the release the plan priced, as --engine takes it."""
        return f"{self.engine}@{self.engine_version}" if self.engine_version else self.engine

    @property
    def engine_label(self) -> str:
        """'NAME 0.34': the engine and the release it was priced for."""
        return f"{self.engine.partition('@')[0]} {self.engine_version}" if self.engine_version else self.engine

    @property
    def label(self) -> str:
        where = "owned" if self.owned else (self.offer.id if self.offer else "no offer")
        return f"{self.gpus}x {self.device.id} {self.quant} {self.engine} ({where})"

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device.id, "gpus": self.gpus, "quant": self.quant, "engine": self.engine,
                "engine_version": self.engine_version or None,
                "offer": None if self.offer is None else self.offer.id, "owned": self.owned,
                "replicas": None if self.replicas is None else self.replicas.to_dict(),
                "simulation": None if self.simulation is None else self.simulation.to_dict(),
                "monthly": None if self.monthly is None else self.monthly.to_dict(), "cost_usd": self.cost_usd,
                "pricing_basis": self.pricing_basis,
                "latency_s": dict(self.latency), "latency_range_s": self.latency_ranges(),
                "memory_bytes": self.memory_bytes, "usable_bytes": self.usable_bytes,
                "max_batch": self.max_batch, "detail": dict(self.detail)}

    def latency_ranges(self) -> dict[str, dict[str, Any]]:
        """Each latency as a calibrated range with what backs it (price/ranges_table.latency_ranges)."""
        from sizeup.price.ranges_table import latency_ranges

        return latency_ranges(self.latency, self.engine, self.device)


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
    weights_note: str = ""
    """Why the weights were priced in the format they were, where the model file stores one (a GGUF file):
    also the first of `assumptions`, and put in the headline."""
    method_comparison: tuple[tuple[str, str, float, float], ...] = ()
    """Fine-tuning: (method, cheapest configuration, hours, cost) for full, LoRA and QLoRA."""
    buy: Any = None
    """Buy vs rent (plan.buy.BuyVsRent): the edge device, or a rented fleet's GPUs bought; None where it does
    not apply."""

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
                                      for m, c, h, u in self.method_comparison],
                "buy_vs_rent": None if self.buy is None else self.buy.to_dict()}


_PRECISION_ORDER = ("fp32", "bf16", "fp16", "f16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "q5_k_s", "q5_0",
                    "gptq-int4", "awq-int4", "q4_k_m", "q4_k_s", "q4_0", "nf4", "q3_k_m", "q2_k")


def precision_rank(quant: str) -> int:
    """0 for the highest precision: fp32, bf16, … q2_k; a format not listed ranks after them all."""
    return _PRECISION_ORDER.index(quant) if quant in _PRECISION_ORDER else len(_PRECISION_ORDER)




def ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions,
                  latency_key: str) -> PlanResult:
    """The result of a search: candidates cheapest first (at equal cost the higher-precision weights,
    then the lower `latency_key`), the Pareto front, and the closest miss only when nothing met the
    scenario."""
    ranked = sorted(candidates, key=lambda c: (round(c.cost_usd, 2), precision_rank(c.quant),
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
