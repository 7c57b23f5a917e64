"""At which load a plan's latency figures hold, and how each compares with its target: every SLA row of the
sheet, the headline's SLA and the workbook's latency rows say it the same way.

- at the peak: the billed fleet's simulation, one of the replicas the peak needs receiving its share of the
  peak's Poisson arrivals (plan.serving, plan.vision: the peak rate ÷ the replicas for the load);
- unloaded: a serving family that misses the SLA before any load (plan.serving probes one replica far below its
  throughput, so no number of replicas meets it), and an edge board, which runs one request at a time.

No figure of a plan holds at the mean load; a job's run time has no load.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SlaLoad", "sla_load", "target_note"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SlaLoad:
    kind: str
    """"peak" or "unloaded" (JSON: each SLA cell's `load`, the headline's `sla_load`)."""
    phrase: str
    """What a row's label ends with: "at the peak", "unloaded"."""
    detail: str
    """The rate the figures hold at, in words: "0.139 req/s on each of the 2 replicas the peak needs"."""
    brief: str = ""
    """The headline's words for it: "at the peak", "unloaded", "unloaded (one request at a time)"."""
    if_missed: str = ""
    """What a miss at this load means, where it means more than the miss ("no number of replicas meets it")."""


def sla_load(scenario, candidate) -> SlaLoad | None:
    """The load `candidate`'s latency figures hold at; None for a job (its run time has no load) or a candidate
    without latency figures."""
    if candidate is None or "hours" in candidate.latency:
        return None
    if scenario.task == "edge":
        return SlaLoad(kind="unloaded", phrase="unloaded", brief="unloaded (one request at a time)",
                       detail="one request at a time on the board (batch 1)")
    sim, plan = candidate.simulation, candidate.replicas
    if sim is None:
        return None
    if plan is None:  # plan.serving's closest miss: no fleet is sized
        return SlaLoad(kind="unloaded", phrase="unloaded", brief="unloaded",
                       detail=f"one replica nearly idle (Poisson arrivals at {_rate(sim.rate_per_s)}, far below "
                              "its throughput: plan.capacity.rate_at_sla's first probe): the SLA is missed before "
                              "any load, so no number of replicas meets it",
                       if_missed="no number of replicas meets it")
    spare = "the spare replica and the headroom are on top"
    if plan.for_load == 1:
        detail = f"the whole peak, {_rate(sim.rate_per_s)}, on the one replica it needs ({spare})"
    else:
        detail = (f"{_rate(sim.rate_per_s)} on each of the {plan.for_load} replicas the peak needs (the peak "
                  f"{_rate(plan.peak_requests_per_s)} ÷ {plan.for_load}; {spare})")
    return SlaLoad(kind="peak", phrase="at the peak", brief="at the peak", detail=detail)


def target_note(value: float, target: float, load: SlaLoad | None) -> str:
    """"target 1.5 s: met, 68% margin" or "target 20 ms: MISSED by 2.45 ms even unloaded: no number of replicas
    meets it"."""
    head = f"target {_seconds(target)}"
    if value <= target:
        return f"{head}: met, {1 - value / target:.0%} margin"
    where = "" if load is None else f" {'even ' if load.kind == 'unloaded' else ''}{load.phrase}" \
        + (f": {load.if_missed}" if load.if_missed else "")
    return f"{head}: MISSED by {_seconds(value - target)}{where}"


def _rate(rps: float) -> str:
    return f"{rps:,.3g} req/s"


def _seconds(v: float) -> str:
    """3 significant figures in ms below a second (0.02245 -> "22.4 ms"), else seconds."""
    return f"{v * 1e3:,.3g} ms" if v < 1 else f"{v:,.3g} s"
