"""Runs priced by stepping the engine's scheduler over the requests: a closed loop of fixed-length requests and a
finite run of N requests (a benchmark's --num-prompts).

- a closed loop of C requests of the same lengths ('waves' in the code), its steady state: what a benchmark at
  max concurrency C averages over (ignoring end-of-sequence) once the run has lost its start. Started together,
  the C requests would queue their prompts in the step's token budget (chunks of the engine's max_batched_tokens,
  the decodes of prompts already done riding in the same steps where steps mix) and finish as staggered as those
  chunks, the loop losing that start only over tens of rounds in a deterministic step model (a real run's jitter
  does it sooner); so the loop is stepped from its slots' first requests sent at independent uniform phases of one
  cycle (`_phases`, the cycle from two rounds stepped from a start together), each finish sending the next, for
  `rounds` requests a slot, and measured over its later rounds, before the drain (`_steady`), averaged over several
  such phase draws (`configurations`). Jitter leaves each slot at a phase of its own, independent of the others': a
  long run passes through their draws, so its means are their average (an even spread is one particular draw, the
  one where prompts land farthest apart). A prompt then shares steps with the others' decodes and queues behind the
  prompts that land near it, as often as independent phases bring them together.
- a finite run: N requests queued at t=0 (rate inf), fed at concurrency C, or sent at rate R (Poisson, as a serving
  benchmark's client: `arrivals`); the engine admits as many as it holds, a finished request's slot goes to the
  next. TTFT includes the wait for the prompts ahead; the run ends with its longest outputs (the drain tail, the
  batch shrinking), so throughput = output tokens / makespan (the benchmark's duration, from its first sending).

Request lengths are deterministic: with a spread, request k takes the quantile u_k of a log-normal of the mix's
mean and standard deviation, u_k = frac(0.5 + k x phi) (a low-discrepancy sequence: the lengths of N draws in an
order unrelated to their size); no RNG, the same estimate every time. The scheduler is stepped by
workload/scheduler.py, the planner's simulator too.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from statistics import NormalDist
from typing import Callable

from sizeup.workload import scheduler

__all__ = ["regime", "lengths", "simulate", "run_row", "configurations", "front", "service", "intake", "note",
           "static_notes", "md1_wait", "front_notes", "preempt_notes", "streaming"]

_PHI = (math.sqrt(5) - 1) / 2
_SQRT2 = math.sqrt(2) - 1
_SQRT3 = math.sqrt(3) - 1
ROUNDS = 6
"""Requests per slot a closed loop of fixed lengths is stepped over to reach its steady state (`_steady`)."""
PHASE_SAMPLES = 384
"""Slot phases a closed loop's steady state is drawn over in all (`configurations`): ceil(384 / (C - 1)) draws of the
C - 1 slots' phases (the first slot's at 0: only the others' relative to it count), at most MAX_DRAWS; a loop of
hundreds of slots samples many meetings of prompts within one draw."""
MAX_DRAWS = 16
STEADY_REQUESTS = 24_000
"""The most requests a closed loop's steady state is stepped over (3 a slot at the least, plus the 2 a slot its phases
take): a window above STEADY_REQUESTS // 3 is priced as one wave of it from a start together (`stepped_steady`)."""


def regime(mix, load, scheduling: str, staggered: bool = False) -> str | None:
    """'finite' for N requests (load.num_prompts: at once, at a concurrency or at a rate), 'waves' for a closed loop
    of fixed lengths (--prompt / --output and no spread, or both spreads 0; a dataset's lengths vary even where its
    spread is not stated), priced in its stepped steady state, None for the staggered steady state (a spread, Poisson
    arrivals without a count, offline, static batching)."""
    if scheduling == "static":
        return None
    if load.num_prompts is not None:
        return "finite"
    if load.rate is not None:
        return None
    spreads = (mix.input_spread, mix.output_spread)
    fixed = spreads == (0, 0) or (not any(spreads) and not mix.source.startswith("--dataset"))  # a dataset varies
    if load.concurrency is not None and fixed and not staggered:
        return "waves"
    return None


def static_notes(load) -> list[str]:
    """What a static-batching engine makes of a finite run: its batches run as before, the count not stepped."""
    if load.num_prompts is None:
        return []
    return [f"--num-prompts {load.num_prompts:,}: this engine batches statically, so the run is priced as its "
            f"batches (each to its longest output), not stepped request by request"]


def _quantile(mean: float, spread: float | None, u: float) -> int:
    """The u-quantile of a log-normal of `mean` and standard deviation `spread` (lengths are positive and
    right-skewed), at least 1 token; `mean` itself without a spread."""
    if not spread:
        return max(1, round(mean))
    sigma2 = math.log1p((spread / mean) ** 2)
    mu = math.log(mean) - sigma2 / 2
    return max(1, round(math.exp(mu + math.sqrt(sigma2) * NormalDist().inv_cdf(u))))


def lengths(mix, n: int) -> list[tuple[int, int]]:
    """(input, output) tokens of `n` requests: the mix's means, or log-normal quantiles at a low-discrepancy
    sequence where it has a spread."""
    out = []
    for k in range(n):
        u_in, u_out = (0.5 + k * _SQRT2) % 1.0, (0.5 + k * _PHI) % 1.0
        out.append((_quantile(mix.input_tokens, mix.input_spread, min(max(u_in, 1e-6), 1 - 1e-6)),
                    _quantile(mix.output_tokens, mix.output_spread, min(max(u_out, 1e-6), 1 - 1e-6))))
    return out


def arrivals(n: int, rate: float) -> list[float]:
    """Sending times of `n` requests at `rate` a second as a serving benchmark's client sends them (vLLM's
    benchmarks/benchmark_serving.py at burstiness 1 and SGLang's bench_serving: the first at once, then exponential
    gaps of mean 1 / rate: Poisson arrivals). Deterministic: gap k is the exponential's quantile at
    u_k = frac(0.5 + k x (sqrt 3 - 1)), a low-discrepancy sequence (no RNG, unrelated to the lengths' sequences), so
    the gaps have the exponential's spread and their mean tends to 1 / rate."""
    out, t = [], 0.0
    for k in range(n):
        out.append(t)
        u = min(max((0.5 + k * _SQRT3) % 1.0, 1e-6), 1 - 1e-6)
        t += -math.log1p(-u) / rate
    return out


def simulate(requests: list[tuple[int, int]], *, limit: int, window: int | None, budget: int | None, beams: int,
             mixes: bool, step: Callable[[float, float], float], decode: Callable[[float], float],
             front: float = 0.0, kv_tokens: int | None = None, watermark: float = 0.0, reserve=None,
             stream: float = 0.0, arrivals: list[float] | None = None, steady: bool = False) -> dict:
    """Step the engine's scheduler (workload/scheduler.py) over `requests` (input, output), sent by a client that
    keeps `window` of them in flight (None: all sent at t=0), at most `limit` running on the server. `budget`: tokens
    one step computes (decodes first, then prompt chunks in arrival order; None: whole prompts). `mixes`: a step
    carries prompt chunks beside the decodes (else a prompt step of its own, the decodes waiting). `step(decodes,
    prompt_tokens)` prices a step, `decode(batch)` a pure decode step; `front` the engine's front end's time per
    request (served one after another: workload/scheduler.py). Returns the means, from each request's
    sending, of TTFT, TPOT ((e2e - TTFT) / (O - 1), over requests of O > 1) and e2e, the makespan and the mean
    running batch. `kv_tokens` / `watermark`: the KV pool a preempting engine admits and preempts over
    (workload/scheduler.py), None: `limit` stands for it; `reserve`: room it keeps for outputs to come. `arrivals`:
    the requests' sending times (an open loop, `window` None). `steady`: a closed loop's steady state, not the whole
    run (`_steady`)."""
    def run(requests, arrivals):
        return scheduler.run(requests, limit=limit, window=window, budget=budget, beams=beams, mixes=mixes, step=step,
                             decode=decode, front=front, kv_tokens=kv_tokens, watermark=watermark,
                             output_reserve=reserve, stream=stream, arrivals=arrivals)

    if steady and window and len(requests) >= 3 * window:
        start = run(requests[:2 * window], None)
        draws = configurations(window)
        rows = [_steady(run(requests, _phases(start, window, len(requests), j)), requests, window)
                for j in range(draws)]
        return {k: sum(r[k] for r in rows) / draws for k in rows[0]}
    return _whole(run(requests, arrivals), requests)


def configurations(window: int) -> int:
    """How many draws of its slots' phases a closed loop of `window` is stepped over (`PHASE_SAMPLES`): one for a
    single slot (nothing to meet), at most MAX_DRAWS."""
    return 1 if window < 2 else max(1, min(MAX_DRAWS, math.ceil(PHASE_SAMPLES / (window - 1))))


def _phases(start, window: int, n: int, draw: int = 0) -> list[float]:
    """Sending times of a closed loop's first `window` requests (then each request sent as a finish frees its slot):
    draw `draw` of independent uniform phases over one cycle of a slot, the first slot's at 0 (only the others'
    relative to it count), the others' from a generator seeded with the draw (random.Random(draw), whose random()
    sequence for a given seed the standard library keeps reproducible: the same estimate every time). The loop as it
    runs once jitter (the clients, the network, the host) has made it lose its start: each slot at a phase of its own,
    independent of the others'. The cycle is the mean e2e of the second round of `start` (the loop stepped from a
    synchronised start for two rounds)."""
    second = range(window, 2 * window)
    cycle = sum(start.done[k] - start.sent[k] for k in second) / window
    draws = random.Random(draw)
    times = sorted([0.0] + [draws.random() * cycle for _ in range(window - 1)])
    return times + [times[-1]] * (n - window)


def _whole(trace, requests: list[tuple[int, int]]) -> dict:
    """The whole run's figures: means from each request's sending, rates over the makespan."""
    ttft, tpot, e2e = [], [], []
    for k in trace.order:  # summed in the order requests finish
        out = requests[k][1]
        e2e.append(trace.done[k] - trace.sent[k])
        ttft.append(trace.first[k] - trace.sent[k])
        if out > 1:
            tpot.append((trace.done[k] - trace.first[k]) / (out - 1))
    t, count = trace.makespan, len(requests)
    out_tokens = sum(o for _, o in requests)
    return {"ttft": sum(ttft) / count, "tpot": sum(tpot) / len(tpot) if tpot else 0.0, "e2e": sum(e2e) / count,
            "makespan": t, "running": trace.held / t if t else 0.0, "x": count / t, "out": out_tokens / t,
            "total": (out_tokens + sum(i for i, _ in requests)) / t,
            "prefill_share": trace.prefill / t if t else 0.0, "preempted": trace.preempted}


def stepped_steady(window: int) -> bool:
    """Whether a closed loop of `window` is stepped to its steady state (`_steady`); a larger one is priced as one
    wave from a start together (its time in sizeup grows with the requests stepped; `note` says which)."""
    return 3 * window <= STEADY_REQUESTS


def rounds(window: int) -> int:
    """Requests per slot a closed loop's steady state is stepped over (`ROUNDS`, fewer where the window is so large
    that `STEADY_REQUESTS` would be passed, at least 3: a first round, a measured one, a last one)."""
    return max(3, min(ROUNDS, STEADY_REQUESTS // max(window, 1)))


def _steady(trace, requests: list[tuple[int, int]], window: int) -> dict:
    """A closed loop's steady state from a run of R requests per slot (`rounds`), the last round draining: measured
    over the rounds before it, the last third of them (at least one round: m = max(1, (R - 1) // 3)): TTFT, TPOT and
    e2e their requests' means, the rates their finishes (a closed loop sends its requests in the order the earlier
    ones finish) over the time from the finish before them to their last."""
    n = len(requests)
    r = n // window
    m = max(1, (r - 1) // 3)
    lo, hi = (r - 1 - m) * window, (r - 1) * window
    kept = range(lo, hi)
    ttft = [trace.first[k] - trace.sent[k] for k in kept]
    e2e = [trace.done[k] - trace.sent[k] for k in kept]
    tpot = [(trace.done[k] - trace.first[k]) / (requests[k][1] - 1) for k in kept if requests[k][1] > 1]
    span = trace.done[trace.order[hi - 1]] - trace.done[trace.order[lo - 1]]
    finished = trace.order[lo:hi]
    if span <= 0:
        return _whole(trace, requests)
    x, mean_e2e, t = len(finished) / span, sum(e2e) / len(e2e), trace.makespan
    return {"ttft": sum(ttft) / len(ttft), "tpot": sum(tpot) / len(tpot) if tpot else 0.0, "e2e": mean_e2e,
            "makespan": t, "running": min(float(window), x * mean_e2e), "x": x,
            "out": sum(requests[k][1] for k in finished) / span,
            "total": sum(requests[k][0] + requests[k][1] for k in finished) / span,
            "prefill_share": trace.prefill / t if t else 0.0, "preempted": trace.preempted}


def _drawn(mix, kind: str):
    """The lengths a finite run draws: a dataset whose output spread is not stated takes a coefficient of variation
    of 1 (the standard deviation of an exponential law, the maximum-entropy law of a positive length of known mean),
    marked derived in the note; otherwise the mix as given."""
    if kind == "finite" and mix.output_spread is None and mix.source.startswith("--dataset"):
        return replace(mix, output_spread=float(mix.output_tokens)), True
    return mix, False


def service(execution, corner: str) -> float:
    """The engine's host time per request at `corner` (ExecutionModel.request_overhead: its API server's
    handling, one request after another), 0 where the data gives none."""
    host = execution.request_overhead() if execution is not None else None
    return getattr(host[0], corner) if host else 0.0


def intake(execution, corner: str) -> float:
    """The front end's busy time per request it takes in at `corner` (ExecutionModel.request_intake): the service
    time of its queue, no more than the request's host time outside the steps (`service`); 0 where none."""
    busy = execution.request_intake() if execution is not None else None
    return min(getattr(busy, corner), service(execution, corner)) if busy is not None else 0.0


def streaming(execution, corner: str) -> float:
    """The front process's time per token it streams at `corner` (ExecutionModel.front_floor of one request: the
    process that also takes requests in, workload/front_process.py); 0 where the engine prices none or streams in
    processes apart from its intake (ExecutionModel.front_streams)."""
    per = execution.front_floor(1.0) if execution is not None and execution.front_streams else None
    return getattr(per, corner) if per is not None else 0.0


def front(execution, policy, step: float, corner: str, running: float = 1.0) -> float:
    """What a request's first token pays outside its own steps: the engine's host time per request (`service`),
    the steps its output reaches the client late (Batching.first_token_lag_steps) and the steps formed ahead of
    the one running (Batching.schedule_ahead_steps, `ahead`) at step time `step`."""
    return step * (policy.first_token_lag_steps + ahead(policy, running)) + service(execution, corner)


def ahead(policy, running: float) -> float:
    """The steps a request waits because the engine formed its next batch before it came (Batching.
    schedule_ahead_steps), over `running` requests on average: paid where another request keeps the engine stepping
    when it arrives, taken as the share min(1, running - 1) of arrivals (none with one request running: an idle
    engine schedules it at once)."""
    return policy.schedule_ahead_steps * min(1.0, max(running - 1.0, 0.0))


def run_row(kind: str, mix, load, capacity: int, policy, steps, corner: str,
            step: Callable[[float, float, str], float], kv_tokens: int | None = None) -> dict:
    """One corner's figures of a closed loop of fixed lengths (`kind` 'waves': its steady state, `_steady` over a run
    of `rounds` requests a slot from independent uniform phases, averaged over `configurations` draws) or of a finite
    run (`kind` 'finite': load.num_prompts requests, sent at load.rate (`arrivals`), fed at load.concurrency or all at
    once).
    `steps` prices decode steps (serving_steps.Steps), `step(decodes, prompt_tokens, corner)` a step with prompt tokens;
    the requests pass the engine's front end one after another (`intake`, its busy time a request, stepped by the
    scheduler: of N sent at once the k-th waits k of them); TTFT and e2e add the rest of the request's host time
    outside the steps (`service` less `intake`: what a lone request waits beyond the process's own work) and the
    steps the first token reaches the client late. A policy that preempts (Batching.preempts) is stepped over its KV
    pool of `kv_tokens` tokens, at most its max_sequences running, in place of `capacity`."""
    def decode(batch: float) -> float:
        return steps.decode(batch, corner)

    waves = kind == "waves" and stepped_steady(load.concurrency)
    requests = lengths(_drawn(mix, kind)[0], load.concurrency * rounds(load.concurrency) if waves
                       else load.concurrency if kind == "waves" else load.num_prompts)
    pooled = policy.preempts and kv_tokens is not None
    limit = (policy.max_sequences or len(requests)) if pooled else capacity
    row = simulate(requests, limit=limit, window=load.concurrency, budget=policy.max_batched_tokens,
                   beams=mix.beams, mixes=policy.mixes, step=lambda b, p: step(b, p, corner), decode=decode,
                   front=intake(steps.execution, corner), kv_tokens=kv_tokens if pooled else None,
                   watermark=policy.kv_watermark, reserve=policy.output_reserve,
                   stream=streaming(steps.execution, corner), steady=waves,
                   arrivals=arrivals(len(requests), load.rate) if load.rate is not None else None)
    batch = max(row["running"], 1.0)
    lag = (decode(batch) * (policy.first_token_lag_steps + ahead(policy, batch)) + service(steps.execution, corner)
           - intake(steps.execution, corner))
    row.update(decode_only=batch / decode(batch), saturated=False, ttft=row["ttft"] + lag, e2e=row["e2e"] + lag)
    return row


def preempt_notes(rows: dict, policy, kv_tokens: int | None, capacity: int) -> list[str]:
    """What a preempting engine's KV pool did to the run (Batching.preempts)."""
    if not policy.preempts or kv_tokens is None:
        return []
    count = rows["typical"].get("preempted", 0)
    reserve = f", {policy.kv_watermark:.0%} of it kept free" if policy.kv_watermark else ""
    kept = policy.output_reserve
    rule = (f"its prompt's and its whole output's tokens (at most {kept.clip:,}) fit in the KV pool of "
            f"{kv_tokens:,} tokens beside {kept.init:g} x the outputs the held requests still have to generate (the "
            f"ratio falling to {kept.floor:g} over {kept.decay_steps:,} decode steps, reset when idle and after a "
            f"preemption)" if kept else
            f"its prompt's tokens fit in the KV pool of {kv_tokens:,} tokens{reserve} (no room kept for its output)")
    after = (f"running requests are preempted (the latest admitted first) until {kept.headroom_steps:,} decode step(s) "
             f"of the rest fit" if kept else "the latest admitted is preempted")
    return [f"KV admission: a request is admitted once {rule}; when the running requests' next tokens do not fit, "
            f"{after} and its prompt and generated tokens recomputed when readmitted: "
            + (f"{count:,} preemptions in this run (their wait and recompute in TPOT and e2e)" if count else
               "no preemption in this run")
            + f" (the steady state's {capacity:,} running at the mean context is not used as a cap here)"]


def note(kind: str, mix, load, policy) -> str:
    """The assumption line that says which run was priced."""
    budget = (f"chunks of at most {policy.max_batched_tokens:,} tokens a step" if policy.max_batched_tokens
              else "whole prompts")
    if kind == "waves" and not stepped_steady(load.concurrency):
        return (f"fixed request lengths at a closed-loop concurrency of {load.concurrency:,}: one wave of them from a "
                f"start together, stepped through the engine's scheduler ({budget}); TTFT, TPOT, e2e its means. A "
                f"window above {STEADY_REQUESTS // 3:,} is not stepped to its steady state (sizeup's own time), so "
                f"TTFT counts the queue of the whole wave's prompts")
    if kind == "waves":
        c = load.concurrency
        return (f"fixed request lengths at a closed-loop concurrency of {c}, in its steady state: stepped through "
                f"the engine's scheduler over {rounds(c)} requests a slot ({c * rounds(c):,} requests), each finish "
                f"sending the next, the slots' first requests sent at independent uniform phases of one cycle (the "
                f"cycle from {2 * c:,} requests stepped from a start together; {configurations(c)} seeded draw(s) of "
                f"the phases, their means averaged): a run that jitter has made lose its start, so a prompt "
                f"({budget}) shares steps with the others' decodes and queues behind the prompts that land near it "
                f"as often as independent phases bring them together, not a wave of {c}; TTFT, TPOT, e2e the means "
                f"over the last third of the rounds before the last, throughput their finishes over the time they "
                f"span. Give --num-prompts N for the "
                f"whole run of N requests from a start together, --input-len-spread / --output-len-spread for varied "
                f"lengths")
    mix, derived = _drawn(mix, kind)
    fed = (f"sent at {load.rate:g} requests/s (Poisson: exponential gaps at low-discrepancy quantiles, deterministic; "
           f"the first at t=0)" if load.rate is not None else
           f"fed at a concurrency of {load.concurrency}" if load.concurrency else "all queued at t=0")
    spread = ("lengths as log-normal quantiles of the mix's mean and spread" if mix.input_spread or mix.output_spread
              else "every request at the mean lengths (no spread given)")
    if derived:
        spread += (f"; the dataset states no output spread: derived as {mix.output_spread:,.0f} tokens, a coefficient "
                   f"of variation of 1 (an exponential law, the maximum-entropy law of a positive length of known "
                   f"mean; give --output-len-spread where it is known)")
    return (f"a finite run of {load.num_prompts:,} requests, {fed} ({spread}): TTFT includes the wait for the "
            f"prompts ahead ({budget}), the run ends with its longest outputs as the batch drains; throughput = "
            f"output tokens / makespan")


def md1_wait(rate: float, service: float) -> float:
    """The mean wait at the front end for Poisson arrivals at `rate` served one at a time in `service` seconds each
    (M/D/1, Pollaczek-Khinchine: rho x service / (2 (1 - rho)), rho = rate x service); the service itself is in
    TTFT already (`front`)."""
    rho = rate * service
    return rho * service / (2 * (1 - rho)) if 0 < rho < 1 else 0.0


def front_notes(model, rows: dict, load, kind: str | None) -> list[str]:
    """What the engine's front end (one API-server process serving requests one after another) does to the run."""
    s = intake(model, "typical")
    if s <= 0:
        return []
    latency = service(model, "typical")
    cap = (f"at most {1 / s:,.0f} requests/s ({s * 1e3:.3g} ms of its time each"
           + (f"; a lone request's {latency * 1e3:.3g} ms outside the steps is in TTFT once" if latency > s else "")
           + ")")
    per = streaming(model, "typical")
    shared = ([f"{model.label}'s front end streams every token from the same process ({per * 1e6:,.0f} µs each): "
               "taking requests in and streaming queue in the order they come (workload/front_process.py), so a request "
               "sent while it streams waits behind that work and a token made while it takes a burst in reaches its "
               "client after the requests queued before it (TTFT, TPOT and the makespan as the client sees them)"]
              if per > 0 and kind in ("finite", "waves") else [])
    if kind == "finite" and load.rate is not None:
        return [f"{model.label}'s front end (one API-server process) takes the requests in as they are sent, {cap}: "
                f"stepped with the run (its queue in TTFT)", *shared]
    if kind == "finite" and load.concurrency is None:
        return [f"{model.label}'s front end (one API-server process) takes the {load.num_prompts:,} requests sent at "
                f"once one after another, {cap}: the k-th reaches the scheduler after k x {s * 1e3:.3g} ms, in TTFT",
                *shared]
    if shared:
        return shared
    if load.rate is not None:
        rho = load.rate * s
        return [] if rho < 0.3 else [
            f"{model.label}'s front end (one API-server process) passes {cap}: at --rps {load.rate:g} it is "
            f"{rho:.0%} busy, its queue (M/D/1) adds {md1_wait(load.rate, s) * 1e3:.3g} ms to TTFT" if rho < 1 else
            f"{model.label}'s front end (one API-server process) passes {cap}: --rps {load.rate:g} is over it, "
            f"throughput is capped there"]
    if kind is None and rows["typical"].get("front_bound"):
        return [f"{model.label}'s front end (one API-server process) passes {cap}, fewer than the engine would "
                f"finish: throughput is capped there, the engine running the batch that finishes that many"
                + (", the rest of the concurrency waiting at the front end (in TTFT)" if load.concurrency else "")]
    return []
