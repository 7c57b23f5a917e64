"""Edge: one device, llama.cpp formats from high to low precision; the first that fits and meets the
per-token latency (after the thermal derate) is kept."""

from __future__ import annotations

import math

from sizeup.engines.defaults import default_engine
from sizeup.hardware.catalog import Catalog
from sizeup.ingest.hf_config import ModelArch
from sizeup.plan.scenario import Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection, memory_parts, ranked_result
from sizeup.workload.inference import InferenceConfig, estimate_inference

__all__ = ["EDGE_FORMATS", "plan_edge"]


EDGE_FORMATS = ("bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")


def plan_edge(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    edge = scenario.edge
    device = catalog.device(edge.device)
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, closest_gap = None, "", math.inf
    prompt = scenario.traffic.prompt_tokens if scenario.traffic else 256
    output = scenario.traffic.output_tokens if scenario.traffic else 128
    engine, why = default_engine("edge")
    for quant in EDGE_FORMATS:
        evaluated += 1
        e = estimate_inference(arch, device, InferenceConfig(prompt=prompt, output=output, weights=quant,
                                                             engine=engine))
        tpot = e.decode.latency_s.typical / edge.thermal_derate
        family = f"{device.id} {quant} {engine}"
        candidate = Candidate(device=device, gpus=1, quant=quant, engine=engine, offer=None,
                              engine_version=e.execution.version,
                              latency={"tpot": tpot, "ttft": e.prefill.latency_s.typical / edge.thermal_derate},
                              memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                              max_batch=1, detail={"tokens_per_s": 1 / tpot,
                                                    "memory_parts": memory_parts(e.memory),
                                                    "context": prompt + output})
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
    assumptions = [f"engine {engine}: an edge scenario's engine (data/engines/defaults.yaml: {why})",
                   f"thermal derate ×{edge.thermal_derate:g} on sustained speed (assumption, not measured)",
                   "shared memory: the OS and runtime share is kept free (usable-memory class)"]
    return ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "tpot")
