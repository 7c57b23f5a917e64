"""Throughput under load: a server's steady state at a concurrency or a request rate, with prefill and decode
interleaved as the engine's batching policy (engines/base.py `Batching`) schedules them.

Each step of a continuous-batching engine carries one decode token for each of the B running requests and, in
steady state, the prompt tokens of the requests that replace those finishing: B x I / O per step for mean input
I and output O. Its time is priced from two estimates of workload/inference.py (the decode step of B sequences at
the mean context, the prefill of those prompt tokens) and, for a decode or mixed step of M tokens, what its matrix
products pay beyond max(weight read, compute) near their ridge point (price/streaming.py, `serving_steps.Steps.streaming`).
- mixed steps (chunked prefill mixed into decode steps, in-flight batching): the prompt tokens ride in the decode
  step, one GEMM per weight matrix over its M rows (decodes and prompt tokens): the weights read once a step, the
  prompt tokens adding max(R(M), M x c) - max(R(B), B x c), and the engine's kernel chosen at M (`serving_steps.Steps.joined`);
- prompt steps of their own (`Batching.mixed_steps` off): their whole prefill time added per decode step in proportion;
  static batching (a library's generate(), a compiled engine of fixed batch): a batch runs prompt to its longest output.
A step holds at most the engine's max_batched_tokens (B + B x I / O) and max_sequences; the KV pool bounds B too.
Offline (`concurrency None` and no rate: every request queued) runs at that bound; a closed loop at its
concurrency; Poisson arrivals as a processor-sharing queue whose rate depends on the running batch (a birth-death
chain over the number in the system: the mean batch, TPOT by Little's law, the wait for a free slot); a rate over
the saturated one is reported saturated, at the saturated throughput. A beam search (a dataset's `beams`) decodes
that many sequences per request, its prompt's cache shared. Waves, finite runs: workload/serving_runs.py."""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import Any

from sizeup.errors import ConfigError
from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.arch import ModelArch
from sizeup.price import streaming
from sizeup.ranges import Range
from sizeup.workload import front_batcher, host_floor, serving_runs as runs
from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for
from sizeup.workload.request_mix import RequestMix, dataset_mix, dataset_names  # re-exported
from sizeup.workload.serving_steps import Steps as _Steps

__all__ = ["Load", "RequestMix", "ServingEstimate", "dataset_mix", "dataset_names", "serving_load"]

CORNERS = ("low", "typical", "high")
MAX_PROMPTS = 1_000_000
"""The most requests a finite run steps (--num-prompts): its time grows with them, about 10 s a 100,000 here."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Load:
    """How requests arrive: a closed loop of `concurrency` requests, Poisson arrivals at `rate` per second, or
    (neither) every request queued at once (offline: MLPerf Offline, an engine's offline throughput benchmark)."""

    concurrency: int | None = None
    rate: float | None = None
    replicas: int = 1
    """Independent copies of the server (data parallel: each on its own GPUs), requests spread evenly over them;
    `concurrency` and `rate` are the whole load's."""
    num_prompts: int | None = None
    """A finite run of N requests (--num-prompts): sent at `rate` (Poisson, as a serving benchmark's client), fed at
    `concurrency`, or all at once; staggered: fixed lengths priced staggered, not as a closed loop's stepped run."""
    staggered: bool = False
    batcher_s: float | None = None
    """A front end holding arrivals up to this many seconds (or `batcher_max` requests) before it sends them on
    (--batcher-window; workload/front_batcher.py): its wait adds to TTFT and end-to-end latency."""
    batcher_max: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.replicas <= 100_000:
            raise ConfigError(f"--replicas {self.replicas}: expected a positive number of server copies")
        if self.concurrency is not None and self.rate is not None:
            raise ConfigError("--concurrency and --rps: give one (a closed loop or an arrival rate)")
        if self.concurrency is not None and not 1 <= self.concurrency <= MAX_PROMPTS:
            raise ConfigError(f"--concurrency {self.concurrency}: expected 1 to {MAX_PROMPTS:,} requests in flight "
                              f"or 'inf'")
        if self.rate is not None and not (0 < self.rate < 1e9):
            raise ConfigError(f"--rps {self.rate}: expected a positive request rate per second")
        if self.num_prompts is not None and not 1 <= self.num_prompts <= MAX_PROMPTS:
            raise ConfigError(f"--num-prompts {self.num_prompts}: expected 1 to {MAX_PROMPTS:,} requests (each is "
                              f"stepped through the scheduler: about 10 s of sizeup's time a 100,000)")
        if self.num_prompts is not None and self.batcher_s is not None:
            raise ConfigError(f"--batcher-window {self.batcher_s:g}: a steady state of Poisson arrivals, not a finite "
                              f"run (--num-prompts {self.num_prompts})")
        if self.batcher_max is not None and self.batcher_s is None:
            raise ConfigError(f"--batcher-max {self.batcher_max}: needs --batcher-window S (the seconds the front end "
                              f"holds arrivals before the count can send them early)")
        if self.batcher_s is not None and not self.batcher_s > 0:
            raise ConfigError(f"--batcher-window {self.batcher_s:g}: expected a positive number of seconds, "
                              f"e.g. 0.3 or 300ms")
        if self.batcher_s is not None and self.rate is None:
            given = ("--concurrency inf" if self.concurrency is None and self.num_prompts is None else
                     f"--concurrency {self.concurrency}" if self.concurrency is not None else "offline")
            raise ConfigError(f"--batcher-window {self.batcher_s:g}: needs --rps R (a front end batching Poisson "
                              f"arrivals), not {given}")

    @property
    def label(self) -> str:
        copies = f" over {self.replicas} replicas" if self.replicas > 1 else ""
        if self.rate is not None:
            held = (f", through a batcher holding them up to {self.batcher_s:g} s"
                    + (f" or {self.batcher_max:,} requests" if self.batcher_max else "")) if self.batcher_s else ""
            count = f"{self.num_prompts:,} requests sent as " if self.num_prompts else ""
            return f"{count}Poisson arrivals at {self.rate:g} requests/s{copies}{held}"
        if self.concurrency is not None:
            return f"{self.concurrency} concurrent requests (closed loop){copies}"
        return f"every request queued at once (offline){copies}"

    def per_replica(self) -> Load:
        """One replica's share of the load."""
        if self.replicas == 1:
            return self
        return Load(concurrency=None if self.concurrency is None else max(1, math.ceil(self.concurrency / self.replicas)),
                    rate=None if self.rate is None else self.rate / self.replicas, staggered=self.staggered,
                    num_prompts=None if self.num_prompts is None else math.ceil(self.num_prompts / self.replicas))


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingEstimate:
    load: Load
    mix: RequestMix
    running: Range
    """Requests running at once (the batch of a decode step)."""
    capacity: int
    """The most requests the engine runs at once here: max_sequences, max_batched_tokens and the KV pool."""
    output_tokens_per_s: Range
    total_tokens_per_s: Range
    requests_per_s: Range
    decode_only_tokens_per_s: Range
    """The decode steps alone at the same batch (what batch / TPOT would say)."""
    ttft_s: Range
    tpot_s: Range
    e2e_latency_s: Range
    saturated: bool
    utilization: float | None
    bound: str
    policy: str
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"load": {"concurrency": self.load.concurrency, "requests_per_s": self.load.rate,
                         "replicas": self.load.replicas, "num_prompts": self.load.num_prompts,
                         "batcher_window_s": self.load.batcher_s, "batcher_max": self.load.batcher_max,
                         "label": self.load.label},
                "requests": {"input_tokens": self.mix.input_tokens, "output_tokens": self.mix.output_tokens,
                             "input_spread": self.mix.input_spread, "output_spread": self.mix.output_spread,
                             "source": self.mix.source},
                "policy": self.policy, "running": self.running.to_dict(), "capacity": self.capacity,
                "output_tokens_per_s": self.output_tokens_per_s.to_dict(),
                "total_tokens_per_s": self.total_tokens_per_s.to_dict(),
                "input_tokens_per_s": self.requests_per_s.scale(self.mix.input_tokens).to_dict(),
                "requests_per_s": self.requests_per_s.to_dict(),
                "decode_only_tokens_per_s": self.decode_only_tokens_per_s.to_dict(),
                "ttft_s": self.ttft_s.to_dict(), "tpot_s": self.tpot_s.to_dict(),
                "e2e_latency_s": self.e2e_latency_s.to_dict(), "saturated": self.saturated,
                "utilization": self.utilization, "bound": self.bound, "assumptions": list(self.assumptions)}


# --- the steady state ----------------------------------------------------------------------------------------------

def serving_load(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, mix: RequestMix, load: Load, *,
                 execution=None, kv_capacity: int | None = None) -> ServingEstimate:
    """The steady state of serving requests of lengths `mix` under `load` with `cfg`'s engine, format and GPUs
    (`cfg.gpus` per replica, tensor parallel); `load.replicas` copies share the load evenly. `kv_capacity`: the
    sequences the KV cache holds where the caller knows it (a planner's family), else searched here."""
    one = _one_replica(arch, device, cfg, mix, load.per_replica(), execution, kv_capacity, front_batcher.burst(load))
    if load.batcher_s:
        one = front_batcher.held(one, load)
    if load.replicas == 1:
        return one
    n = load.replicas
    return replace(one, load=load, output_tokens_per_s=one.output_tokens_per_s.scale(n),
                   total_tokens_per_s=one.total_tokens_per_s.scale(n), requests_per_s=one.requests_per_s.scale(n),
                   decode_only_tokens_per_s=one.decode_only_tokens_per_s.scale(n), running=one.running.scale(n),
                   capacity=one.capacity * n,
                   assumptions=(f"{n} replicas of {cfg.gpus} GPU(s) each, requests spread evenly: every figure per "
                                f"request is one replica's, throughputs are summed", *one.assumptions))


def _one_replica(arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, mix: RequestMix, load: Load,
                 execution, kv_capacity: int | None, burst: float | None = None) -> ServingEstimate:
    if arch.encoder:
        raise ConfigError(f"{arch.name} is an encoder: it generates no tokens to serve under load")
    model = (execution or execution_for(device, cfg)).at_gpus(cfg.gpus // cfg.pp)  # settings by TP size
    if load.rate is not None and model.offline:
        raise ConfigError(f"--rps {load.rate:g}: the offline entry point (--engine-opt offline: every prompt handed "
                          f"over in one call) has no arrival process; drop --rps, or drop offline to load a server")
    policy = model.load_policy
    if cfg.pp > 1 and policy.limits_per_micro_batch:  # each of the pp micro-batches in flight within the limits
        policy = replace(policy, max_sequences=policy.max_sequences and policy.max_sequences * cfg.pp,
                         max_batched_tokens=policy.max_batched_tokens and policy.max_batched_tokens * cfg.pp)
    steps = _Steps(arch, device, cfg, model, mix)
    first = steps.at(1)
    if first.decode is None or not first.decode.compute_priced or not first.prefill.compute_priced:
        raise ConfigError(f"{arch.name} on {device.id}: compute unknown, no throughput under load can be given")
    I, O = mix.input_tokens, mix.output_tokens
    notes = [f"throughput under load: {load.label}; requests of {I:,} input / {O:,} output tokens ({mix.source})",
             *mix.notes]
    capacity, pool, why = _capacity(arch, device, cfg, model, policy, mix, kv_capacity)
    notes.extend([why, *(model.request_overhead() or ("",))[1:], *host_floor.notes(model, cfg.gpus), streaming.note()])
    if policy.scheduling == "static":
        return _static(steps, mix, load, capacity, policy, notes + runs.static_notes(load))
    kind = runs.regime(mix, load, policy.scheduling, load.staggered)  # waves or a finite run: stepped there
    rows = {c: runs.run_row(kind, mix, load, capacity, policy, steps, c, lambda *a: _step(steps, policy, *a)[0],
                            kv_tokens=pool) if kind else _continuous(steps, policy, mix, load, capacity, c, burst)
            for c in CORNERS}
    notes += [runs.note(kind, mix, load, policy), *runs.preempt_notes(rows, policy, pool, capacity)] if kind else []
    if kind and policy.preempts:  # admitted on their prompts: as many as the pool holds prompts, up to max_sequences
        capacity = min(policy.max_sequences or pool, max(capacity, pool // max(I, 1)))
    saturated, mixes = rows["typical"]["saturated"], policy.mixes
    notes.append("continuous batching: " + (
        "prompt tokens ride in the decode steps (mixed steps): one GEMM per weight matrix over the decodes and prompt "
        "tokens, the weights read once a step and the engine's kernel chosen at the step's rows; the prompt tokens "
        "add only the compute the weight read does not hide" if mixes else
        "prompts run in prefill steps of their own between decode steps, their whole time added in proportion")
        + (f"; chunked prefill, at most {policy.max_batched_tokens:,} tokens a step" if policy.chunked_prefill
           and policy.max_batched_tokens else ""))
    if load.rate is not None and not kind:
        notes.append("Poisson arrivals: a processor-sharing queue at the completion rate of each running batch "
                     "(requests running, TPOT and the wait for a free slot from its stationary law; TPOT = mean "
                     "running / (rate x output tokens))")
        if saturated:
            notes.append(f"--rps {load.rate:g} is over the saturated rate of {rows['typical']['x_max']:.3g} "
                         f"requests/s: throughput is the saturated one and TTFT grows while the queue does (given "
                         f"for a request admitted at once)")
    elif load.concurrency is None and not kind:
        notes.append("offline: every request queued at once, so TTFT (time in queue) is given for a request "
                     "admitted at once")
    notes += runs.front_notes(model, rows, load, kind)
    out = _ranges(rows, ("x", "out", "total", "ttft", "tpot", "e2e", "running", "decode_only"))
    bound = first.decode.bound if rows["typical"]["prefill_share"] < 0.5 else first.prefill.bound
    util = rows["typical"].get("rho")
    return ServingEstimate(load=load, mix=mix, running=out["running"], capacity=capacity,
                           output_tokens_per_s=out["out"], total_tokens_per_s=out["total"], requests_per_s=out["x"],
                           decode_only_tokens_per_s=out["decode_only"], ttft_s=out["ttft"], tpot_s=out["tpot"],
                           e2e_latency_s=out["e2e"], saturated=saturated, utilization=util, bound=bound,
                           policy=policy.scheduling + (" + chunked prefill" if policy.chunked_prefill else "")
                           + (", mixed steps" if mixes else ", prefill steps apart"),
                           assumptions=tuple(dict.fromkeys(notes)))


def _capacity(arch, device, cfg, model, policy, mix: RequestMix, kv: int | None) -> tuple[int, int, str]:
    """The most requests running at once: the engine's max_sequences, the KV pool at the mean context of a request
    (paged caches hold what a request has reached: I + O / 2 tokens on average; I + O where the engine reserves a
    request's whole output; each beam its own output), and for mixed steps the step's token budget (B decodes +
    B x I / O prompt tokens <= max_batched_tokens). `kv`, where the caller gives it, is taken as it is. (the count,
    the KV pool in tokens (at the held context's bytes per token) for a policy that admits and preempts token by
    token, the sentence that says which bound binds)."""
    I, O = mix.input_tokens, mix.output_tokens
    w, held = mix.beams, O if policy.reserve_to_completion else max(O // 2, 1)
    if kv is None:  # probed at the tokens a request holds: the prompt once, each beam's output (whole or half)
        # the probe's count is the engine's, capped at its max_sequences: probed at the held context itself, not
        # scaled from the mean context, so a cap is not scaled down with the KV fit
        probe = estimate_inference(arch, device, replace(cfg, batch=1, prompt=I, output=max(w * held, 1),
                                                         context=None), limits=True, execution=model)
        kv = probe.memory.max_concurrent_sequences or probe.max_batch
        per_token = probe.memory.kv_cache_needed_bytes / (I + w * held) if probe.memory.kv_cache_needed_bytes else 0
        pool = int(probe.memory.kv_cache_bytes / per_token) if per_token and probe.memory.kv_cache_bytes else (
            kv * (I + w * held))
    else:
        pool = kv * (I + w * held)
    parts = {"max_sequences": policy.max_sequences} if policy.max_sequences else {}  # a tie: the engine's cap
    parts["the KV cache"] = max(kv, 1)
    if policy.max_batched_tokens and policy.mixes:
        parts["max_batched_tokens"] = max(1, int(policy.max_batched_tokens * O / (I + w * O)))
    limit = min(parts, key=parts.get)
    held_as = (f"{I + w * held:,} tokens a request, its whole output reserved before it starts"
               if policy.reserve_to_completion else f"the mean context of {I + w * held:,} tokens"
               + (f" ({w} beams' outputs)" if w > 1 else ""))
    return parts[limit], pool, (f"at most {parts[limit]:,} requests run at once ({limit}; KV cache at {held_as}: "
                          f"{parts['the KV cache']:,}"
                          + (f", max_sequences {policy.max_sequences:,}" if policy.max_sequences else "")
                          + (f", max_batched_tokens {policy.max_batched_tokens:,}" if policy.max_batched_tokens
                             else "") + ")")


def _step(steps: _Steps, policy, batch: float, prompt_tokens: float, corner: str) -> tuple[float, float]:
    """(step time, its prefill part) of a step with `batch` decodes and `prompt_tokens` prompt tokens per step."""
    decode = steps.decode(batch, corner)
    if prompt_tokens <= 0:
        return decode, 0.0
    if not policy.mixes:
        extra = steps.prefill(prompt_tokens, corner)
        if batch <= 0:  # a prompt-only step: no decode runs in it (the prefill carries its own weight read)
            return extra, extra
        return decode + extra, extra
    # mixed: one GEMM per weight matrix over the decodes and the prompt tokens a step carries (`joined`): a whole
    # prompt, or its chunk where the token budget is smaller (`lump`); fewer a step on average: that share of steps
    decodes = batch * steps.beams
    lump = min(steps.cfg.prompt, max((policy.max_batched_tokens or steps.cfg.prompt + decodes) - decodes, 1))
    share = min(prompt_tokens / lump, 1.0)
    extra = (share * steps.joined(decodes, max(prompt_tokens, lump), corner)
             + steps.streaming(decodes, corner, prompt_tokens, lump))
    return host_floor.mixed(steps, batch, extra, corner), extra


def _loaded_step(steps: _Steps, policy, batch: float, prompt_rate: float, corner: str) -> float:
    """The step time at `batch` decodes while prompts arrive at `prompt_rate` tokens/s: each step carries the
    prompt tokens that arrived during it (rate x the whole step, its prefill part included), so the step solves
    t = step(batch, rate x t): a fixed point, found by iteration from the decode step alone (the map is monotone
    and, below saturation, a contraction: a prompt token costs less time than it takes to arrive)."""
    step = _step(steps, policy, batch, 0, corner)[0]
    for _ in range(60):
        new = _step(steps, policy, batch, prompt_rate * step, corner)[0]
        if abs(new - step) <= 1e-4 * step:
            return new
        step = new
    return step


def _continuous(steps: _Steps, policy, mix: RequestMix, load: Load, capacity: int, corner: str,
                burst: float | None = None) -> dict:
    I, O = mix.input_tokens, mix.output_tokens

    def at(batch: float) -> dict:
        step, extra = _step(steps, policy, batch, batch * I / O, corner)
        decode = steps.decode(batch, corner)
        # its first step carries the prompts of the requests replacing those that finish meanwhile, batch x I / O
        # tokens a step on average whatever the tagged request (as `_poisson`'s arrivals; prefill steps apart count
        # them in `_ttft` already)
        ttft = _ttft(steps, policy, batch, step, I, corner, batch * I / O if policy.mixes else 0.0)
        return {"running": batch, "tpot": step, "x": batch / (O * step), "ttft": ttft, "e2e": ttft + (O - 1) * step,
                "decode_only": batch / decode, "prefill_share": extra / step}

    full = at(capacity)
    service = runs.intake(steps.execution, corner)  # the front end's process: one request after another
    cap = 1.0 / service if service > 0 else math.inf
    x_max = min(full["x"], cap)
    if load.rate is None:
        n = min(load.concurrency, capacity) if load.concurrency is not None else capacity
        row = dict(full) if n == capacity else at(n)  # at the capacity: `full`, priced once (a plan asks per family)
        if row["x"] > cap:  # the front end passes fewer requests than the engine would run
            row = _front_bound(at, n, cap, service if load.concurrency is not None else 0.0)
        row["saturated"] = False
    elif load.rate >= x_max:
        row = dict(_front_bound(at, capacity, cap, 0.0) if full["x"] > cap else full, saturated=True, rho=1.0)
    else:
        rho = load.rate / x_max
        row = _poisson(steps, policy, mix, load.rate, capacity, corner, burst)
        wait = runs.md1_wait(load.rate, service)
        row.update(rho=rho, ttft=row["ttft"] + wait, e2e=row["e2e"] + wait)
    row["x_max"], row["front_bound"] = x_max, full["x"] > cap
    row["out"], row["total"] = row["x"] * O, row["x"] * (I + O)
    return row


def _front_bound(at, n: float, cap: float, service: float) -> dict:
    """The engine's figures where its front end (one API-server process, `1 / cap` s a request) passes fewer
    requests than `n` running would finish: the batch b at which the engine finishes `cap` requests a second
    (bisection; the completion rate grows with the batch), at least 1. A closed loop of `n` (`service` > 0) keeps
    the other n - b waiting at the front end: (n - b) x service more TTFT (Little's law at rate `cap`)."""
    low, high = 1.0, float(n)
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if at(mid)["x"] < cap else (low, mid)
    row = at(low)
    wait = max(n - low, 0.0) * service
    row.update(x=cap, ttft=row["ttft"] + wait, e2e=row["e2e"] + wait)
    return row


def _poisson(steps: _Steps, policy, mix: RequestMix, rate: float, capacity: int, corner: str,
             burst: float | None = None) -> dict:
    """Poisson arrivals at `rate` below saturation. Continuous batching serves every running request one token
    per step: processor sharing at a total rate that depends on how many run. Requests complete at
    mu(n) = n / (O x step(n)) with n running (step(n): the decode step of n sequences carrying the prompt tokens
    that arrive meanwhile), arrivals over `capacity` wait. The number in the system is then a birth-death chain
    (pi(n) ~ prod rate / mu(k)); its stationary law does not depend on the spread of output lengths (processor
    sharing is a symmetric queue: Kelly, Reversibility and Stochastic Networks, 1979, ch. 3), so it holds for any
    length distribution of mean O. From it: the mean running batch E[n]; TPOT = E[n] / (rate x O) (time spent
    running per generated token, Little's law over the running requests); the wait for a free slot
    E[queue] / rate; TTFT = that wait + admission at the next step + the prompt's own prefill. `burst`: requests
    released with it by a front-end batcher (workload/front_batcher.py `burst`), whose prompts its first step carries
    in place of those of the arrivals during the step."""
    I, O = mix.input_tokens, mix.output_tokens
    grid = sorted({max(1, min(capacity, round(capacity ** (i / 40)))) for i in range(41)} | {1, capacity})
    times = [_loaded_step(steps, policy, n, rate * I, corner) for n in grid]

    def step_at(n: float) -> float:  # linear between the priced batches
        if len(grid) == 1:
            return times[0]
        j = min(max(bisect_left(grid, n) - 1, 0), len(grid) - 2)
        lo, hi = grid[j], grid[j + 1]
        return times[j] + (times[j + 1] - times[j]) * (n - lo) / (hi - lo)

    log_pi, total, running, z = 0.0, 0.0, 0.0, 1.0  # state 0 has weight 1
    weights = []
    for n in range(1, capacity + 1):
        log_pi += math.log(rate * O * step_at(n) / n)
        weights.append(log_pi)
    top = max(weights + [0.0])
    z = math.exp(-top)
    for n, w in enumerate(weights, start=1):
        p = math.exp(w - top)
        z += p
        running += n * p
    r = rate * O * step_at(capacity) / capacity  # beyond capacity the completion rate stays mu(capacity)
    tail = math.exp(weights[-1] - top) if weights else 0.0
    queue = 0.0
    if r < 1:
        z += tail * r / (1 - r)
        running += capacity * tail * r / (1 - r)
        queue = tail * r / (1 - r) ** 2
    running, queue = running / z, queue / z
    batch = max(running, 1e-9)
    step = step_at(max(batch, 1.0))
    tpot = batch / (rate * O)
    extra = _step(steps, policy, batch, rate * I * step, corner)[1]
    others = rate * I * step if burst is None else burst * I
    ttft = queue / rate + _ttft(steps, policy, max(batch, 1.0), step, I, corner, others, burst or 0.0)
    return {"running": batch, "tpot": tpot, "x": rate, "ttft": ttft, "e2e": ttft + (O - 1) * tpot,
            "decode_only": batch / steps.decode(max(batch, 1.0), corner), "prefill_share": extra / step,
            "saturated": False}


def _ttft(steps: _Steps, policy, batch: float, step: float, prompt: int, corner: str, others: float = 0.0,
          burst: float = 0.0) -> float:
    """A request admitted at once: the engine's host time per request and the steps its first token reaches the
    client late (ExecutionModel.request_overhead, Batching.first_token_lag_steps), half a scheduling run's wait
    (one step, or the engine's steps per schedule: a Poisson arrival lands mid-run), then its prompt (in chunks
    where a step's token budget is smaller than it) in mixed steps, or its own prefill step. `others`: the prompt
    tokens of the requests admitted with it (Poisson arrivals: those that came during the same step, rate x input
    x step on average whatever the tagged arrival, Palm's theorem), which its first mixed step carries too. `burst`:
    requests a front-end batcher released with it, whose prompts its own prefill step runs too where prompts run in
    steps of their own."""
    front = runs.front(steps.execution, policy, step, corner, batch)
    step = step * max(policy.steps_per_schedule, 1)
    if policy.mixes:
        decodes = batch * steps.beams
        budget = max((policy.max_batched_tokens or prompt + decodes) - decodes, 1)
        chunks = max(1, math.ceil(prompt / budget))
        own = _step(steps, policy, batch, min(prompt + others, budget), corner)[0]
        return front + step / 2 + chunks * own
    return front + step / 2 + steps.prefill(max(prompt * (1 + burst), batch * prompt / max(steps.cfg.output, 1)),
                                            corner)


def _static(steps: _Steps, mix: RequestMix, load: Load, capacity: int, policy, notes: list[str]) -> ServingEstimate:
    """Static batches: B prompts, then decode until the longest output of the batch (mean + spread x
    sqrt(2 ln B) for B outputs of that spread: the expected maximum of B normal draws)."""
    I, O = mix.input_tokens, mix.output_tokens
    if load.rate is not None:
        raise ConfigError(f"--rps {load.rate:g}: {steps.execution.label} batches statically (one batch of requests "
                          f"per run); give --concurrency N (the batch)")
    batch = min(load.concurrency, capacity) if load.concurrency is not None else capacity
    spread = mix.output_spread
    longest = O + (spread or 0.0) * math.sqrt(2 * math.log(batch)) if batch > 1 else float(O)
    if spread is None and batch > 1:
        notes.append("static batching runs to the longest output of a batch; no output spread given "
                     "(--output-len-spread), so every output is taken as the mean")
    else:
        notes.append(f"static batching: a batch of {batch} runs to its longest output, {longest:,.0f} tokens expected "
                     f"(mean + spread x sqrt(2 ln B))")
    rows = {}
    for c in CORNERS:
        prefill = getattr(steps.at(batch).prefill.latency_s, c)
        decode = steps.decode(batch, c)
        run = prefill + longest * decode
        rows[c] = {"x": batch / run, "out": batch * O / run, "total": batch * (I + O) / run, "ttft": prefill,
                   "tpot": decode, "e2e": prefill + (O - 1) * decode, "running": float(batch),
                   "decode_only": batch / decode}
    out = _ranges(rows, ("x", "out", "total", "ttft", "tpot", "e2e", "running", "decode_only"))
    return ServingEstimate(load=load, mix=mix, running=out["running"], capacity=capacity,
                           output_tokens_per_s=out["out"], total_tokens_per_s=out["total"], requests_per_s=out["x"],
                           decode_only_tokens_per_s=out["decode_only"], ttft_s=out["ttft"], tpot_s=out["tpot"],
                           e2e_latency_s=out["e2e"], saturated=False, utilization=None,
                           bound=steps.at(batch).decode.bound, policy="static",
                           assumptions=tuple(dict.fromkeys(notes)))


def _ranges(rows: dict[str, dict], keys: tuple[str, ...]) -> dict[str, Range]:
    """Each figure over the three corners (low / typical / high step times) as a Range, ordered."""
    out = {}
    for key in keys:
        lo, ty, hi = (rows[c][key] for c in CORNERS)
        out[key] = Range(min(lo, ty, hi), ty, max(lo, ty, hi))
    return out
