"""The engine's host time per iteration that grows with the requests in the batch, as a floor under a step.

An engine driven from Python (TensorRT-LLM's PyTorch executor, vLLM's V1 engine core) spends host time on every
request of every iteration: the scheduler walks the running requests, the sampler's update loop appends each
request's token and checks its stop conditions, the output processor detokenizes and streams it. Overlap / async
scheduling runs that host work for step n+1 while the GPU runs step n, so it costs nothing while the GPU step is
longer; once the GPU step is shorter (a mixture of experts at large batch: few active weights per token, so a
cheap GPU step for many requests), the iteration waits for the host and the step takes the host's time:
step = max(GPU step, requests x host time per request). The per-request figure is the engine's profile
(`host_per_request_s`, engines/base.py ExecutionModel.host_floor); an engine without one is priced as before.
An engine whose loop processes a step's outputs before it schedules the next (no overlap) adds its per-request host
time to the step instead (`host_serial_per_request_s`, ExecutionModel.host_serial): step = GPU step + requests x
that time.
"""

from __future__ import annotations

__all__ = ["floored", "mixed", "notes"]


def floored(steps, requests: float, step: float, corner: str) -> float:
    """`step` (seconds, at the `corner` 'low' / 'typical' / 'high' of the ranges) plus the engine's host time per
    request that it does not overlap with the step (ExecutionModel.host_serial), raised to its overlapped host time
    for an iteration holding `requests` requests (serving._Steps `steps`: the engine and the replica's GPUs)."""
    model = steps.execution
    if model is None:
        return step
    serial = model.host_serial(requests, steps.cfg.gpus)
    step += getattr(serial, corner) if serial is not None else 0.0
    floor = model.host_floor(requests, steps.cfg.gpus)
    return step if floor is None else max(step, getattr(floor, corner))


def mixed(steps, requests: float, prompt_part: float, corner: str) -> float:
    """A mixed step of `requests` decodes whose prompt tokens add `prompt_part` seconds of GPU time: the GPU's
    decode and prefill work together against the host's time for the iteration (serving._Steps `steps`)."""
    gpu = steps.sequences(requests * steps.beams, corner) + prompt_part
    return floored(steps, requests, gpu, corner)


def notes(model, gpus: int = 1) -> tuple[str, ...]:
    """The assumptions an estimate under load states where the engine has a per-request host time."""
    serial = model.host_serial(1.0) if model is not None else None
    said = () if serial is None else (
        f"{model.label}: host time per iteration grows with the requests it holds ({serial.typical * 1e6:,.0f} µs "
        f"each, {serial.low * 1e6:,.0f}-{serial.high * 1e6:,.0f}: output processing, scheduling and input "
        f"preparation in Python) and is not overlapped with the GPU step: added to every step (workload/"
        f"host_floor.py)",)
    floor = model.host_floor(1.0) if model is not None else None
    if floor is None:
        return said
    split = gpus > 1 and model.host_floor(gpus, gpus).typical < model.host_floor(gpus, 1).typical
    return said + (
        f"{model.label}: host time per iteration grows with the requests it holds ({floor.typical * 1e6:,.0f} µs "
        f"each, {floor.low * 1e6:,.0f}-{floor.high * 1e6:,.0f}: scheduler, sampler and output bookkeeping in "
        f"Python), overlapped with the GPU step: a step lasts at least that long (workload/host_floor.py)"
        + (f"; each of the {gpus} GPUs' loops holds its share of the requests" if split else ""),)
