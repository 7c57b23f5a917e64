"""Edge: one device; for each engine the scenario allows (llama.cpp by default), its weight formats from
high to low precision (`constraints.quantizations`, else plan.scenario.EDGE_FORMATS); the first that fits and
meets the per-token latency (after the thermal derate) is kept."""

from __future__ import annotations

import math

from sizeup.engines.defaults import planned_engines
from sizeup.errors import SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.ingest.hf_config import ModelArch
from sizeup.plan.scenario import EDGE_FORMATS, Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection, memory_parts, precision_rank, ranked_result
from sizeup.workload.inference import InferenceConfig, estimate_inference

__all__ = ["EDGE_FORMATS", "plan_edge"]


def plan_edge(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    edge, c = scenario.edge, scenario.constraints
    device = catalog.device(edge.device)
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, closest_gap = None, "", math.inf
    prompt = scenario.traffic.prompt_tokens if scenario.traffic else 256
    output = scenario.traffic.output_tokens if scenario.traffic else 128
    formats = sorted(c.quantizations, key=precision_rank)  # the highest precision first
    engines, note = planned_engines(c.engines, "edge")
    for engine in engines:
        for quant in formats:
            evaluated += 1
            family = f"{device.id} {quant} {engine}"
            try:
                e = estimate_inference(arch, device, InferenceConfig(prompt=prompt, output=output, weights=quant,
                                                                     engine=engine))
            except SizeupError as err:
                rejected.append(Rejection(family=family, reason=str(err)))
                continue
            if e.decode is None or e.decode.tokens_per_s is None:
                rejected.append(Rejection(family=family, reason="decode speed unknown on this device"))
                continue
            tpot = e.decode.latency_s.typical / edge.thermal_derate
            candidate = Candidate(device=device, gpus=1, quant=quant, engine=e.execution.name, offer=None,
                                  engine_version=e.execution.version,
                                  latency={"tpot": tpot, "ttft": e.prefill.latency_s.typical / edge.thermal_derate},
                                  memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                  max_batch=1, detail={"tokens_per_s": 1 / tpot, "memory_parts": memory_parts(e.memory),
                                                        "context": prompt + output})
            if not e.memory.fits:
                rejected.append(Rejection(family=family, reason=(
                    f"does not fit: {e.memory.total_bytes / 2**30:,.2f} GiB, "
                    f"{e.memory.usable_bytes.typical / 2**30:,.2f} GiB usable after the OS share")))
                continue
            if tpot > edge.latency_s:
                rejected.append(Rejection(family=family, reason=f"{tpot * 1e3:,.0f} ms per token > "
                                                                f"{edge.latency_s * 1e3:,.0f} ms"))
                if tpot / edge.latency_s < closest_gap:
                    closest_gap, closest, closest_miss = tpot / edge.latency_s, candidate, \
                        f"{(tpot - edge.latency_s) * 1e3:,.0f} ms per token too slow"
                continue
            candidates.append(candidate)
            break  # formats run from high to low precision: the first that meets the latency is kept
    assumptions = [*([note] if note else []),
                   f"thermal derate ×{edge.thermal_derate:g} on sustained speed (assumption, not measured)",
                   "shared memory: the OS and runtime share is kept free (usable-memory class)"]
    return ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "tpot")
