"""The engine's host time per iteration that grows with the requests in the batch, as a floor under a step.

An engine driven from Python (a Python executor or engine core around the GPU kernels) spends host time on every
request of every iteration: the scheduler walks the running requests, the sampler's update loop appends each
request's token and checks its stop conditions, the output processor detokenizes and streams it. Overlap / async
scheduling runs that host work for step n+1 while the GPU runs step n, so it costs nothing while the GPU step is
longer; once the GPU step is shorter (a mixture of experts at large batch: few active weights per token, so a
cheap GPU step for many requests), the iteration waits for the host and the step takes the host's time:
step = max(GPU step, requests x host time per request); an engine without overlap (`host_overlapped` False) runs
that host work between steps, so it adds to the step. The per-request figure is the engine's profile
(`host_per_request_s`, engines/base.py ExecutionModel.host_floor); an engine without one is priced as before.
A process of the engine's own beside the scheduler (ExecutionModel.front_floor: a served engine's HTTP process that
streams every running request's token) is pipelined with the steps either way: step = max(step, its time).
"""

from __future__ import annotations

__all__ = ["floored", "host_terms", "mixed", "notes", "raised"]


def floored(steps, requests: float, step: float, corner: str) -> float:
    """`step` (seconds, at the `corner` 'low' / 'typical' / 'high' of the ranges) raised to the engine's host
    time for an iteration holding `requests` requests (serving_steps.Steps `steps`: the engine and the replica's GPUs)."""
    return raised(steps.execution, requests, steps.cfg.gpus, step, corner)


def host_terms(model, requests: float, gpus: int, corner: str) -> tuple[float, float]:
    """(host time added to a step, the floor under it) of `model` for an iteration of `requests` requests: `raised`
    is max(step + added, floor)."""
    if model is None:
        return 0.0, 0.0
    floor, front = model.host_floor(requests, gpus), model.front_floor(requests)
    added = getattr(floor, corner) if floor is not None and not model.host_overlapped else 0.0
    under = getattr(floor, corner) if floor is not None and model.host_overlapped else 0.0
    return added, max(under, getattr(front, corner) if front is not None else 0.0)


def raised(model, requests: float, gpus: int, step: float, corner: str) -> float:
    """`step` raised to (or, without an overlap scheduler, added to) the host time of execution model `model` for an
    iteration of `requests` requests on a replica of `gpus` GPUs, then floored at its front process's time: one
    function for the estimate's steps (`floored`) and the planner's (plan/serving.py replica_model, `host_terms`)."""
    added, floor = host_terms(model, requests, gpus, corner)
    return max(step + added, floor)


def mixed(steps, requests: float, prompt_part: float, corner: str) -> float:
    """A mixed step of `requests` decodes whose prompt tokens add `prompt_part` seconds of GPU time: the GPU's
    decode and prefill work together against the host's time for the iteration (serving_steps.Steps `steps`)."""
    gpu = steps.sequences(requests * steps.beams, corner) + prompt_part
    return floored(steps, requests, gpu, corner)


def notes(model, gpus: int = 1) -> tuple[str, ...]:
    """The assumptions an estimate under load states where the engine has a per-request host time."""
    front = model.front_floor(1.0) if model is not None else None
    return _scheduler_notes(model, gpus) + ((
        f"{model.label}: its HTTP process streams every running request's token of an iteration "
        f"({front.typical * 1e6:,.0f} µs each, {front.low * 1e6:,.0f}-{front.high * 1e6:,.0f}), beside the "
        f"scheduler: an iteration lasts at least that long (workload/host_floor.py)",) if front is not None else ())


def _scheduler_notes(model, gpus: int) -> tuple[str, ...]:
    floor = model.host_floor(1.0) if model is not None else None
    if floor is None:
        return ()
    split = gpus > 1 and model.host_floor(gpus, gpus).typical < model.host_floor(gpus, 1).typical
    return (f"{model.label}: host time per iteration grows with the requests it holds ({floor.typical * 1e6:,.0f} µs "
            f"each, {floor.low * 1e6:,.0f}-{floor.high * 1e6:,.0f}: scheduler, sampler and output bookkeeping in "
            + ("Python), overlapped with the GPU step: a step lasts at least that long (workload/host_floor.py)"
               if model.host_overlapped else "Python), run between GPU steps (no overlap scheduler): added to each "
               "step (workload/host_floor.py)")
            + (f"; each of the {gpus} GPUs' loops holds its share of the requests" if split else ""),)
