"""Edge: one device; for each engine the scenario allows (the edge task's default engine, data/engines/defaults.yaml,
by default), its weight formats from
high to low precision (`constraints.quantizations`, else plan.scenario.EDGE_FORMATS); the first that fits and
meets the per-token latency (after the thermal derate) is kept, at the lowest power mode that meets it.

Power modes (hardware/variants.py, from NVIDIA's nvpmodel tables): the device the scenario names is the power
ceiling; its module's other modes at or below it (lower budget, lower GPU clock) are tried from the lowest
up, so the plan names the least power that is just enough — less heat, a longer way to the throttle point.

Heat (hardware/thermal.py): where the module's thermal trip points are published, the sheet's fault plan names
the temperature at which to cut the batch or drop a power mode (the first throttling trip). The clock loss past
that trip is published for no Jetson; the sustained-speed derate stays the scenario's assumption and says so.
"""

from __future__ import annotations

import math

from sizeup.engines.defaults import planned_engines
from sizeup.errors import SizeupError
from sizeup.hardware.catalog import Catalog
from sizeup.ingest.hf_config import ModelArch
from sizeup.plan.scenario import EDGE_FORMATS, Scenario
from sizeup.plan.types import Candidate, PlanResult, Rejection, memory_parts, precision_rank, ranked_result
from sizeup.workload.device_fit import fit_verdict
from sizeup.workload.inference import InferenceConfig, estimate_inference

__all__ = ["EDGE_FORMATS", "plan_edge", "power_modes"]


def power_modes(catalog: Catalog, device) -> list:
    """`device` and the other power modes of its module (the same data file) that stay within it — budget and
    GPU clock at most its own — lowest first; just `device` when it has no power modes."""
    if device.power_mode is None:
        return [device]
    base = device.variant_of or device.id
    ceiling = (device.tdp_w or math.inf, device.power_mode_clocks.get("gpu_max_hz", math.inf))

    def rank(d):
        return (d.tdp_w or math.inf, d.power_mode_clocks.get("gpu_max_hz", math.inf))

    same = [d for d in catalog.devices.values() if d.power_mode is not None and (d.id == base or d.variant_of == base)
            and d.memory_bytes == device.memory_bytes and all(a <= b for a, b in zip(rank(d), ceiling))]
    return sorted({d.id: d for d in same + [device]}.values(), key=rank)


def _thermal(device) -> tuple[dict, list[str]]:
    """(candidate detail, assumptions) from the module's published trip points."""
    from sizeup.hardware.thermal import derate_at, thermal_profile

    profile = thermal_profile(device)
    if profile is None:
        return {}, [f"no published thermal trip points for {device.id}: the fault plan names no cut temperature"]
    first = profile.trips[0]
    at_trip = derate_at(device, first.temperature_c)
    loss = ("its clock loss there is not published" if at_trip.clock_fraction is None else
            f"{at_trip.clock_fraction:.0%} of the clocks remain there")
    detail = {"thermal_cut_c": first.temperature_c, "thermal_sensor": profile.sensor,
              "thermal_basis": f"{first.name}: {first.action} ({profile.name}, data/thermal/{profile.id}.yaml, "
                               f"read {profile.retrieved})"}
    return detail, [f"{profile.name}: {first.name} from {first.temperature_c:g} °C ({profile.sensor}); {loss}"]


def plan_edge(scenario: Scenario, catalog: Catalog, arch: ModelArch) -> PlanResult:
    edge, c = scenario.edge, scenario.constraints
    named = catalog.device(edge.device)
    modes = power_modes(catalog, named)
    rejected, candidates, evaluated = [], [], 0
    closest, closest_miss, closest_gap = None, "", math.inf
    prompt = scenario.traffic.prompt_tokens if scenario.traffic else 256
    output = scenario.traffic.output_tokens if scenario.traffic else 128
    thermal_detail, thermal_notes = _thermal(named)
    formats = sorted(c.quantizations, key=precision_rank)  # the highest precision first
    engines, note = planned_engines(c.engines, "edge")
    for engine in engines:
        found = False
        for quant in formats:
            for device in modes:  # the lowest power mode first
                evaluated += 1
                family = f"{device.id} {quant} {engine}"
                try:
                    e = estimate_inference(arch, device, InferenceConfig(prompt=prompt, output=output, weights=quant,
                                                                         engine=engine))
                except SizeupError as err:
                    rejected.append(Rejection(family=family, reason=str(err)))
                    break  # a format the engine or device cannot run: no power mode changes that
                if e.decode is None or e.decode.tokens_per_s is None:
                    rejected.append(Rejection(family=family, reason="decode speed unknown on this device"))
                    break
                tpot = e.decode.latency_s.typical / edge.thermal_derate
                candidate = Candidate(device=device, gpus=1, quant=quant, engine=e.execution.name, offer=None,
                                      engine_version=e.execution.version,
                                      latency={"tpot": tpot,
                                               "ttft": e.prefill.latency_s.typical / edge.thermal_derate},
                                      memory_bytes=e.memory.total_bytes, usable_bytes=e.memory.usable_bytes.typical,
                                      max_batch=1, detail={"tokens_per_s": 1 / tpot,
                                                            "memory_parts": memory_parts(e.memory),
                                                            "context": prompt + output} | thermal_detail)
                if not e.memory.fits:
                    rejected.append(Rejection(family=family, reason=(
                        f"does not fit: {e.memory.total_bytes / 2**30:,.2f} GiB, "
                        f"{e.memory.usable_bytes.typical / 2**30:,.2f} GiB usable after the OS share")))
                    break  # a power mode changes no memory: no other mode fits either
                verdict = fit_verdict(e)
                if not verdict.comfortable:  # the typical total fits, the range's high end does not
                    rejected.append(Rejection(family=family, reason=f"may not fit: {verdict.why}"))
                    break
                if tpot > edge.latency_s:
                    rejected.append(Rejection(family=family, reason=f"{tpot * 1e3:,.0f} ms per token > "
                                                                    f"{edge.latency_s * 1e3:,.0f} ms"))
                    if tpot / edge.latency_s < closest_gap:
                        closest_gap, closest, closest_miss = tpot / edge.latency_s, candidate, \
                            f"{(tpot - edge.latency_s) * 1e3:,.0f} ms per token too slow"
                    continue
                candidates.append(candidate)
                found = True
                break
            if found:
                break  # formats run from high to low precision: the first that meets the latency is kept
    assumptions = [*([note] if note else []),
                   f"one request at a time: prompt {prompt:,} and output {output:,} tokens (context {prompt + output:,}"
                   + ("" if scenario.traffic else "; traffic.prompt_tokens / output_tokens not given") + ")",
                   f"thermal derate ×{edge.thermal_derate:g} on sustained speed (assumption, not measured)",
                   "shared memory: the OS and runtime share is kept free (usable-memory class)", *thermal_notes]
    if len(modes) > 1:
        names = ", ".join(f"{d.power_mode} ({d.tdp_w:g} W)" if d.tdp_w else d.power_mode for d in modes)
        assumptions.append(f"power modes tried from the lowest up to {named.power_mode}, the one named: {names} "
                           "(nvpmodel caps; the lowest that meets the latency is kept)")
    return ranked_result(scenario, arch, candidates, rejected, closest, closest_miss, evaluated, assumptions, "tpot")
