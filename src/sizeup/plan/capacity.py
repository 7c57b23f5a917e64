"""Serving capacity: a discrete-event simulation of one replica scheduling requests as its engine's batching
policy does (engines/base.py `Batching`; continuous batching stepped by workload/scheduler.py, the simulator the
estimate's finite runs step too), driven by the priced prefill and decode step times, and the replica count for
a traffic level.

The replica runs one step at a time. Continuous batching with mixed steps (chunked prefill mixed into decode
steps, in-flight batching): every step decodes one token of each running sequence and carries the prompt
tokens of admitted requests up to the step's token budget. Prompt steps apart (`Batching.mixed_steps` off): when
requests wait and a slot is free, their prompts run as a step of their own. Static batching: the waiting requests
run prompt to last token as one batch. The KV pool and the engine's max_sequences bound the sequences held at once.
A prompt step is priced as workload/serving.py prices it, so the simulation's steady state agrees with
`serving_load` at the same load. Arrivals are Poisson (or a given trace); percentiles come from the simulated
requests.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from sizeup.errors import ConfigError
from sizeup.price import streaming
from sizeup.workload import scheduler

__all__ = ["ReplicaModel", "SimulationResult", "simulate", "rate_at_sla", "replicas_needed", "Percentiles"]

PERCENTILE_POINTS = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaModel:
    """Step times of one replica (seconds): prefill of `tokens` prompt tokens, and one decode step at a
    batch of `b` running sequences."""

    prefill_fixed_s: float
    prefill_per_token_s: float
    decode_batches: tuple[int, ...]
    decode_step_s: tuple[float, ...]
    max_batch: int
    """Sequences running at once: the KV pool and the engine's max_sequences."""
    scheduling: str = "continuous"
    """The engine's batching policy (engines/base.py `Batching`): 'continuous' or 'static'."""
    mixed_steps: bool = False
    """Prompt tokens ride in the decode steps (chunked prefill, in-flight batching), else prefill steps apart."""
    chunked_prefill: bool = False
    """A prompt longer than a step's token budget is split over several steps."""
    max_step_tokens: int | None = None
    """Tokens one step computes at most (decodes included in mixed steps); None: no cap."""
    steps_per_schedule: int = 1
    """Decode steps run per scheduling decision (a waiting prompt is admitted only between such runs)."""
    front_s: float = 0.0
    """Time a request's first token takes outside the simulated steps and the front end's queue (the steps its
    output reaches the client late, and the rest of a lone request's host time beyond the front end's busy time:
    workload/serving_runs.py `service` less `intake`), added to TTFT."""
    request_s: float = 0.0
    """The engine's front end's busy time per request (API server, tokenization, hand-off: `ExecutionModel
    .request_intake`), served one request after another before the scheduler (workload/scheduler.py): it adds
    to TTFT, with a wait where requests come faster than it serves them (no more than 1 / request_s a second)."""
    token_compute_s: float | None = None
    """A step's compute per token, from a compute-bound prefill (price/streaming.py `compute_batch`), for the step's
    excess near the ridge point; None: `prefill_per_token_s`."""
    read_s: float | None = None
    """R of one token for the step's excess near the ridge point (price/streaming.py `weight_read`); None: the
    single-sequence decode step."""
    read_terms: tuple[float, float, float] = (1.0, 0.0, 0.0)
    """How the weights a step reads grow with its tokens (price/streaming.py `read_terms`: a mixture of experts reads
    more of its experts the more tokens a step routes), for the step's excess near the ridge point."""
    joined: Callable[[int, int], float] | None = field(default=None, compare=False)
    """What the prompt tokens of a mixed step of `rows` rows add to a decode step of `batch` sequences (plan/serving.py:
    the estimate's workload/serving_steps.py `Steps.joined`, the decodes at the step's kernel); None: price/streaming.py
    `joined` at the decodes' own kernel and `token_compute_s`. Left out of equality and hash: a function of the
    configuration the decode table is priced from, so that a plan's equal replica models share their priced steps
    (`_step_pricing`)."""

    kv_tokens: int | None = None
    """The KV pool in tokens where the engine admits against room kept for outputs to come (`output_reserve`): the
    scheduler admits and preempts over it as the estimate does (workload/scheduler.py); None: `max_batch` alone."""
    kv_watermark: float = 0.0
    """The share of `kv_tokens` a prompt must leave free to be admitted (engines/policies.py `Batching`)."""
    output_reserve: object = field(default=None, compare=False)
    """The engine's admission rule that keeps room for outputs to come (engines/policies.py OutputReserve), with
    `kv_tokens`; None: none."""
    gpu_step_s: tuple[float, ...] = ()
    """The decode steps' GPU time at `decode_batches`, before the engine's host time; empty: `decode_step_s` is."""
    host_s: tuple[tuple[float, float], ...] = ()
    """Per decode batch, the engine's host time for the iteration (workload/host_floor.py `raised`): (added to the
    step where no overlap scheduler hides it, the floor under the step: the overlapped host time or a front process),
    so a mixed step is raised as a whole as the estimate raises it; empty: none."""

    def __post_init__(self) -> None:
        if self.max_batch < 1 or not self.decode_batches or len(self.decode_batches) != len(self.decode_step_s):
            raise ConfigError("replica model needs max_batch >= 1 and decode step times per batch size")
        if self.request_s < 0 or self.front_s < 0:
            raise ConfigError("replica model needs front-end times >= 0")
        if self.scheduling not in ("continuous", "static"):
            raise ConfigError(f"batching {self.scheduling!r}: expected 'continuous' or 'static'")

    def decode_table(self) -> list[float]:
        """Decode step time for every batch size 0..max_batch (interpolated once)."""
        return [float(v) for v in np.interp(np.arange(self.max_batch + 1), self.decode_batches, self.decode_step_s)]

    def host_tables(self) -> tuple[list[float], list[float], list[float]]:
        """(GPU step, host time added, host floor) for every batch 0..max_batch, interpolated once; a model without
        host times: zeros for them (and without GPU steps, the decode table as the GPU's)."""
        grid = np.arange(self.max_batch + 1)
        gpu = (self.decode_table() if len(self.gpu_step_s) != len(self.decode_batches) else
               [float(v) for v in np.interp(grid, self.decode_batches, self.gpu_step_s)])
        if len(self.host_s) != len(self.decode_batches):
            return gpu, [0.0] * len(grid), [0.0] * len(grid)
        return (gpu, [float(v) for v in np.interp(grid, self.decode_batches, [h[0] for h in self.host_s])],
                [float(v) for v in np.interp(grid, self.decode_batches, [h[1] for h in self.host_s])])

    def prefill_s(self, tokens: int) -> float:
        return self.prefill_fixed_s + self.prefill_per_token_s * tokens

    def decode_s(self, batch: int) -> float:
        return float(np.interp(batch, self.decode_batches, self.decode_step_s))


@dataclass(frozen=True, slots=True, kw_only=True)
class Percentiles:
    values: dict[str, float]

    def __getitem__(self, key: str) -> float:
        return self.values[key]

    @classmethod
    def of(cls, samples: Sequence[float]) -> Percentiles:
        arr = np.asarray(samples, dtype=float)
        if arr.size == 0:
            return cls(values={k: float("nan") for k in PERCENTILE_POINTS} | {"mean": float("nan")})
        points = np.percentile(arr, list(PERCENTILE_POINTS.values()))  # one sort for all of them
        return cls(values={k: float(v) for k, v in zip(PERCENTILE_POINTS, points)} | {"mean": float(arr.mean())})


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationResult:
    rate_per_s: float
    requests: int
    ttft: Percentiles
    tpot: Percentiles
    e2e: Percentiles
    throughput_requests_per_s: float
    output_tokens_per_s: float
    mean_batch: float
    stable: bool
    """False when waiting times keep growing: the replica is past saturation."""
    ttft_samples: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    def metric(self, name: str) -> float:
        """"ttft_p95" -> seconds."""
        metric, _, point = name.partition("_")
        return getattr(self, metric)[point]

    def meets(self, targets: dict[str, float]) -> bool:
        return self.stable and all(self.metric(k) <= v for k, v in targets.items())

    def to_dict(self) -> dict[str, Any]:
        return {"rate_per_s": self.rate_per_s, "requests": self.requests, "ttft_s": self.ttft.values,
                "tpot_s": self.tpot.values, "e2e_s": self.e2e.values,
                "throughput_requests_per_s": self.throughput_requests_per_s,
                "output_tokens_per_s": self.output_tokens_per_s, "mean_batch": self.mean_batch, "stable": self.stable}


def simulate(model: ReplicaModel, rate_per_s: float, prompt_tokens: int, output_tokens: int, *,
             requests: int = 3000, seed: int = 0, arrivals: Sequence[float] | None = None,
             lengths: Callable[[random.Random], tuple[int, int]] | None = None,
             give_up: dict[str, float] | None = None) -> SimulationResult | None:
    """Simulate `requests` requests arriving at `rate_per_s` (Poisson, or the `arrivals` times), scheduled as the
    model's batching policy says (static batches, prompt steps of their own, or mixed steps). `give_up`: SLA targets;
    None is returned as soon as so many TTFTs are over a `ttft_pXX` target that the run's percentile is sure to be
    (`_ttft_miss`), for a caller that only needs to know the run misses them (continuous batching)."""
    if rate_per_s <= 0 and arrivals is None:
        raise ConfigError(f"arrival rate {rate_per_s}: expected a positive rate")
    rng = random.Random(seed)
    if arrivals is None:
        draws, state = _exponentials(seed, requests)  # what rng.expovariate(rate) draws, divided by the rate
        arrive = np.cumsum(draws / rate_per_s)  # add.accumulate: the running sum in order, as itertools.accumulate
        times = arrive.tolist()
        rng.setstate(state)
    else:
        times = sorted(float(a) for a in arrivals)
        requests = len(times)
        arrive = np.asarray(times)
    sizes = [lengths(rng) for _ in range(requests)] if lengths else [(prompt_tokens, output_tokens)] * requests
    if model.scheduling == "static":
        first, done, batch_time, busy = _static(model, times, sizes)
    else:
        stop = _ttft_miss(give_up, times, model.front_s) if give_up else None
        ran = _continuous(model, times, sizes, stop)
        if ran is None:
            return None
        first, done, batch_time, busy = ran
    first, done = first + model.front_s, done + model.front_s
    ttft = first - arrive
    outputs = np.asarray([max(s[1] - 1, 0) for s in sizes]) if lengths else np.full(requests, max(output_tokens - 1, 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outputs > 0, (done - first) / np.maximum(outputs, 1), np.nan)
    e2e = done - arrive
    # stability: TTFT of the last quarter of arrivals far above the first quarter means a growing queue
    quarter = max(requests // 4, 1)
    early, late = np.median(ttft[:quarter]), np.median(ttft[-quarter:])
    stable = late <= max(3 * early, early + 2 * model.prefill_s(prompt_tokens) + 0.05)
    span = max(done.max() - arrive.min(), 1e-12)
    return SimulationResult(rate_per_s=rate_per_s if arrivals is None else requests / max(arrive[-1], 1e-12),
                            requests=requests, ttft=Percentiles.of(ttft), tpot=Percentiles.of(tpot[~np.isnan(tpot)]),
                            e2e=Percentiles.of(e2e), throughput_requests_per_s=requests / span,
                            output_tokens_per_s=float(sum(s[1] for s in sizes) if lengths
                                                      else output_tokens * requests) / span,
                            mean_batch=batch_time / max(busy, 1e-12), stable=bool(stable), ttft_samples=ttft)


@lru_cache(maxsize=16)
def _exponentials(seed: int, requests: int) -> tuple[np.ndarray, tuple]:
    """`requests` unit exponential draws of random.Random(seed), as its expovariate takes them (-ln(1 - u)), and the
    generator's state after them: a plan simulates the same seed at many rates. Read-only: the cache shares it."""
    rng = random.Random(seed)
    draws = np.array([-math.log(1.0 - rng.random()) for _ in range(requests)])
    draws.flags.writeable = False
    return draws, rng.getstate()


def _static(model: ReplicaModel, times: list[float], sizes: list[tuple[int, int]]):
    """Static batches: the waiting requests (up to max_batch, through the front end as workload/scheduler.py has it) run prompt to their longest output together; the next
    batch starts when that one ends. Each request's tokens come out as the batch generates them."""
    n = len(times)
    first, done = [0.0] * n, [0.0] * n  # Python floats, made arrays once at the end (the same values)
    decode_time = model.decode_table()
    request_s, max_batch = model.request_s, model.max_batch
    entry, last = [], 0.0
    for t in times:  # through the front end one after another: max(t, last) + request_s
        last = (t if t > last else last) + request_s
        entry.append(last)
    now, nxt, batch_time, busy = 0.0, 0, 0.0, 0.0
    while nxt < n:
        now = max(now, entry[nxt])
        start = nxt
        while nxt - start < max_batch and nxt < n and entry[nxt] <= now:
            nxt += 1
        batch = range(start, nxt)
        prefill = model.prefill_s(sum(sizes[i][0] for i in batch))
        step = decode_time[nxt - start]
        longest = max(sizes[i][1] for i in batch)
        out = now + prefill
        for i in batch:
            first[i] = out
            done[i] = out + max(sizes[i][1] - 1, 0) * step
        run = prefill + max(longest - 1, 0) * step
        batch_time += (nxt - start) * max(longest - 1, 0) * step
        busy += run
        now += run
    return np.array(first), np.array(done), batch_time, busy


def _continuous(model: ReplicaModel, times: list[float], sizes: list[tuple[int, int]],
                stop: Callable[[int, float], bool] | None = None):
    """Continuous batching, stepped by the engine's scheduler (workload/scheduler.py) at the arrival times, its steps
    priced by `_step_pricing`; None where `stop` ended the run."""
    decode_time, step = _step_pricing(model)
    pool = model.kv_tokens
    if pool is not None:  # a pool that holds max_batch of the largest requests, and each one's output again beside
        # them, never blocks an admission nor runs dry: stepped without it (the same run, without its books)
        largest, longest = max(i + o for i, o in sizes), max(o for _, o in sizes)
        if pool * (1 - model.kv_watermark) >= model.max_batch * (largest + longest) + largest:
            pool = None
    trace = scheduler.run(sizes, arrivals=times, limit=model.max_batch, budget=model.max_step_tokens,
                          mixes=model.mixed_steps, chunked=model.chunked_prefill,
                          per_schedule=model.steps_per_schedule, step=step, decode=decode_time.__getitem__,
                          front=model.request_s, stop=stop, kv_tokens=pool, watermark=model.kv_watermark,
                          output_reserve=model.output_reserve)
    if trace.stopped:
        return None
    return np.asarray(trace.first), np.asarray(trace.done), trace.decoding, trace.busy


def _ttft_miss(targets: dict[str, float], times: list[float], front_s: float) -> Callable[[int, float], bool] | None:
    """A `stop` for workload/scheduler.py: True at the first token that makes more TTFTs over a `ttft_pXX` target than
    the percentile leaves room for. Of n samples, np.percentile's q-th lies at or above the sorted sample at
    floor((n - 1) q / 100) (less one for the rounding of its index), so once n - floor((n - 1) q / 100) + 1 samples
    are over the target, so is the percentile, whatever the rest of the run. A TTFT is computed as simulate computes
    it: (first token + front_s) - arrival. None: no TTFT percentile among the targets."""
    n = len(times)
    limits = []
    for key, target in targets.items():
        metric, _, point = key.partition("_")
        if metric == "ttft" and point in PERCENTILE_POINTS:
            limits.append((target, n - math.floor((n - 1) * PERCENTILE_POINTS[point] / 100) + 1))
    if not limits:
        return None
    if len(limits) == 1:  # one TTFT target (the common SLA): the test without the loop (a plan calls it ~10^5 times)
        (target, allowed), = limits
        missed = 0

        def stop_one(k: int, now: float) -> bool:
            nonlocal missed
            if (now + front_s) - times[k] > target:
                missed += 1
                return missed >= allowed
            return False

        return stop_one
    over = [0] * len(limits)

    def stop(k: int, now: float) -> bool:
        ttft = (now + front_s) - times[k]
        for i, (target, allowed) in enumerate(limits):
            if ttft > target:
                over[i] += 1
                if over[i] >= allowed:
                    return True
        return False

    return stop


@lru_cache(maxsize=64)
def _step_pricing(model: ReplicaModel) -> tuple[list[float], Callable[[int, int], float]]:
    """(decode step time per batch 0..max_batch, the time of a step of `batch` decodes carrying `chunk` prompt
    tokens) of `model`. A step with prompt tokens is priced as workload/serving.py prices it: a mixed step of b decodes
    and p prompt tokens runs one GEMM per weight matrix at b + p rows: what its prompt tokens add is the estimate's
    (`ReplicaModel.joined`: workload/serving_steps.py `Steps.joined`, the decodes at that kernel, over
    price/streaming.py `joined`, the one formula of both); a prompt step of its
    own adds its prefill. A step of many tokens pays what price/streaming.py adds beyond max(weight read, compute),
    as serving.py's steps do.

    Both are pure functions of the (frozen, hashable) model: kept per model, and each step's time
    kept by (batch, chunk), since a plan simulates one replica model at many rates (rate_at_sla's bisection) and a
    simulation prices the same few steps thousands of times."""
    table = model.decode_table()
    gpu, added, floor = model.host_tables()  # a step is raised to the engine's host time as a whole, as the estimate
    single = table[1]
    fixed, per_token = model.prefill_fixed_s, model.prefill_per_token_s
    compute, read = model.token_compute_s or per_token, model.read_s or single

    def streamed(tokens: int) -> float:
        return streaming.excess(read * streaming.read_growth(model.read_terms, tokens), tokens * compute, "typical")

    decode_time = [max(g + streamed(b) + a, f) for b, (g, a, f) in enumerate(zip(gpu, added, floor))]
    memo: dict[tuple[int, int], float] = {}

    def priced(batch: int, chunk: int) -> float:
        if not model.mixed_steps:
            return fixed + per_token * chunk
        rows = batch + chunk  # one GEMM per weight matrix over decodes and prompt tokens: the weights read once
        joined = (model.joined(batch, rows) if model.joined
                  else streaming.joined(read, compute, batch, rows, model.read_terms))
        return max(gpu[batch] + added[batch] + joined + streamed(rows), floor[batch])

    def step(batch: int, chunk: int) -> float:
        key = (batch, chunk)
        got = memo.get(key)
        if got is None:
            got = priced(batch, chunk)
            if len(memo) < 4096:  # bounded (a plan keeps ~600 at most): a step outside them is priced again
                memo[key] = got
        return got

    return decode_time, step


def rate_at_sla(model: ReplicaModel, prompt_tokens: int, output_tokens: int, targets: dict[str, float], *,
                requests: int = 2000, seed: int = 0) -> tuple[float, SimulationResult | None]:
    """The highest Poisson rate one replica sustains while meeting `targets` (0 if none), found by
    bisection between an idle replica and its throughput bound."""
    best_step = min(model.decode_s(b) / b for b in range(1, model.max_batch + 1, max(model.max_batch // 64, 1)))
    upper = 1.0 / (output_tokens * best_step + model.prefill_s(prompt_tokens) / model.max_batch)
    low, high, best = 0.0, upper * 1.05, None
    probe = simulate(model, upper * 0.01, prompt_tokens, output_tokens, requests=min(requests, 400), seed=seed)
    if not probe.meets(targets):
        return 0.0, probe
    for _ in range(10):
        mid = (low + high) / 2
        # a run sure to miss its TTFT target stops there (None): only the verdict of a missing rate is read
        result = simulate(model, mid, prompt_tokens, output_tokens, requests=requests, seed=seed, give_up=targets)
        if result is not None and result.meets(targets):
            low, best = mid, result
        else:
            high = mid
        if high - low < 0.02 * high:
            break
    return low, best


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaPlan:
    peak_requests_per_s: float
    base_requests_per_s: float
    rate_per_replica: float
    headroom: float
    for_load: int
    """Replicas the peak needs at (1 − headroom) of each replica's rate at the SLA."""
    with_redundancy: int
    """N + spare (N + 1 unless the scenario turns redundancy off, or for owned hardware, unless asked)."""
    at_base: int
    scale_out_utilisation: float
    """Scale out when a replica's request rate passes this fraction of its rate at the SLA."""
    arithmetic: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("peak_requests_per_s", "base_requests_per_s", "rate_per_replica",
                                              "headroom", "for_load", "with_redundancy", "at_base",
                                              "scale_out_utilisation", "arithmetic")}


def replicas_needed(peak_rps: float, base_rps: float, rate_per_replica: float, headroom: float = 0.0,
                    spare: int = 1) -> ReplicaPlan:
    """ceil(peak / (rate × (1 − headroom))) replicas for the load, plus `spare` for redundancy (1: N + 1)."""
    if rate_per_replica <= 0:
        raise ConfigError("a replica that meets the SLA at no load cannot serve any traffic")
    usable = rate_per_replica * (1 - headroom)
    for_load = max(1, math.ceil(peak_rps / usable - 1e-9))
    at_base = max(1, math.ceil(base_rps / usable - 1e-9))
    text = (f"peak {peak_rps:,.1f} req/s ÷ ({rate_per_replica:,.1f} req/s per replica at the SLA"
            f"{f' × {1 - headroom:.0%} headroom' if headroom else ''}) = {peak_rps / usable:,.2f} → {for_load} "
            f"replica{'s' if for_load > 1 else ''} for load"
            + (f", {for_load + spare} with N+{spare}" if spare else ", no spare (redundancy not asked for)"))
    return ReplicaPlan(peak_requests_per_s=peak_rps, base_requests_per_s=base_rps, rate_per_replica=rate_per_replica,
                       headroom=headroom, for_load=for_load, with_redundancy=for_load + spare, at_base=at_base,
                       scale_out_utilisation=1 - headroom, arithmetic=text)
