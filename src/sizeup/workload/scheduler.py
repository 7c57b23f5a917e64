"""The one step simulator of an engine's scheduler: requests are sent (a closed loop of `window` in flight, or at
given arrival times), admitted while the engine holds fewer than `limit` sequences, and run one step at a time as
its batching policy (engines/base.py `Batching`) says. Both the estimate (workload/serving_runs.py: closed loops of
fixed lengths and finite `--num-prompts` runs) and the planner (plan/capacity.py: Poisson arrivals against an SLA)
step it; they differ only in how they price a step.

A step decodes one token of every running sequence. Prompt tokens of admitted requests, decodes first and then
prompts in arrival order up to the step's token budget, either ride in it (`mixes`: chunked prefill mixed into
decode steps, in-flight batching) or run as a step of their own, the decodes waiting (prefill steps apart). A prompt
longer than what is left of the budget is split over steps where the engine chunks prefill, else waits for a step
it fits (the first prompt of a step is always taken). A request's first token comes out at the end of the step
that computes its last prompt token. Runs of pure decode steps are priced at once up to the next finish, the next
admissible arrival or the next scheduling point (`per_schedule` decode steps between scheduling decisions).

Requests reach the scheduler through the engine's front end (its API server: HTTP/JSON, chat template,
tokenization, the hand-off to the engine), one process that handles them one after another: a single server of
service time `front` (ExecutionModel.request_intake: the process's busy time per request; the rest of a lone
request's time outside the steps, request_overhead, its caller adds to TTFT). A request enters the scheduler at
max(its sending, the previous request's entry) + `front`, so of N requests sent at once the k-th enters after
k x `front`; a sparse stream passes with `front` each and no wait. No more than 1 / `front` requests a second get
through. Where the same process also streams every running request's token (`stream` seconds a token: an engine's
front_floor), intake and streaming queue in it in the order they come (workload/front_process.py): a request waits
behind the streaming queued before its sending, a step's tokens reach their clients when the process has streamed
them (first, done and the makespan are those times), and a closed loop sends its next request then.

A KV pool of `kv_tokens` (Batching.preempts: pages taken as tokens are generated, no room kept for a request's
output) changes admission and adds preemption: a request is admitted while its prompt's tokens fit in what is free
beyond a reserve (`watermark`, a share of the pool); every decode step takes one more token per running sequence,
and where the pool cannot hold the next step's tokens the most recently admitted running request is preempted: its
cache freed, it goes back to the head of the queue, and when readmitted its prompt and the tokens it has generated
are computed again as one prompt (recompute), its first token already sent. Without `kv_tokens` the caller's
`limit` (sequences at a mean context) stands for the pool.

An engine that keeps room for outputs to come (`output_reserve`, engines/policies.py OutputReserve; its books in
workload/kv_reserve.py) admits a request only where its prompt, its whole output and a share of the held requests'
remaining outputs fit beside the tokens in use; when a decode step finds no room it preempts (the latest admitted:
the fewest outputs made) until the rule's headroom of decode steps fits, and resets the share. This touches
admission and preemption only, not how a step is priced.

Without a KV pool (`kv_tokens` None: the planner's runs whose pool cannot bind) and without a streaming front process
(`stream` 0) `run` steps workload/scheduler_lean.py's loop, the same decisions without their books
(tests/workload/test_scheduler_lean.py holds the two equal on random runs): a change to the rules here goes into both.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sizeup.workload.front_process import FrontProcess
from sizeup.workload.kv_reserve import Ledger
from sizeup.workload.scheduler_lean import run_lean

__all__ = ["Trace", "run"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """What a simulated run did: per request (in the order given) when it was sent, its first token and its last
    token; the order requests finished in; and totals over the run."""

    sent: list[float]
    first: list[float]
    done: list[float]
    order: list[int]
    """Requests in the order they finished (ties: decodes before prompts finishing in the same step)."""
    makespan: float
    held: float
    """Integral over time of the sequences held (decoding and prefilling): / makespan = the mean running batch."""
    decoding: float
    """Integral over time of the decoding batch, over the steps that decode."""
    busy: float
    """Time the engine ran steps (the makespan less idle waits for arrivals)."""
    prefill: float
    """Time spent on prompt tokens: prompt steps whole, mixed steps less their decodes alone."""
    stopped: bool = False
    """The caller's `stop` ended the run at a first token: the other figures cover only what ran until then."""
    preempted: int = 0
    """Requests preempted because the KV pool (`kv_tokens`) ran out, each counted once per preemption."""


def run(requests: Sequence[tuple[int, int]], *, limit: int, budget: int | None, mixes: bool,
        step: Callable[[int, int], float], decode: Callable[[int], float], arrivals: Sequence[float] | None = None,
        window: int | None = None, beams: int = 1, chunked: bool = True, per_schedule: int = 1,
        front: float = 0.0, stop: Callable[[int, float], bool] | None = None, kv_tokens: int | None = None,
        watermark: float = 0.0, output_reserve=None, stream: float = 0.0) -> Trace:
    """Step the scheduler over `requests` (input, output tokens). `arrivals`: sorted send times (None: all at t=0,
    sent as `window` allows: a closed loop that keeps that many in flight; None: no bound; with both, a request is
    sent at its time or at the finish that frees its slot, the later). `limit`: sequences held
    at once. `budget`: tokens one step computes (in mixed steps the decodes, `beams` each, count against it; None:
    whole prompts). `step(decodes, prompt_tokens)` prices a step with prompt tokens, `decode(batch)` a pure decode
    step. `front`: the front end's service time per request (seconds; TTFT is timed from the sending). `stop(request,
    time)`, called at each first token, ends the run where it returns True (a caller that only needs to know an SLA is
    missed: the Trace says `stopped`). `kv_tokens`: the KV pool in tokens where it admits and preempts (module
    docstring), `watermark` the share of it a prompt must leave free to be admitted; None: `limit` alone.
    `output_reserve` (an OutputReserve, with `kv_tokens`): room kept for outputs to come (module docstring).
    `stream`: the front process's time per token it streams (seconds; 0: none priced): the same process takes requests
    in, so intake and streaming queue in one process (workload/front_process.py) and a token reaches its client (first,
    done, makespan) when the process has streamed it."""
    if kv_tokens is None and stream <= 0:  # no KV pool, no front process streaming: the same decisions by a loop
        # without their books (workload/scheduler_lean.py)
        return Trace(**run_lean(requests, limit=limit, budget=budget, mixes=mixes, step=step, decode=decode,
                                arrivals=arrivals, window=window, beams=beams, chunked=chunked,
                                per_schedule=per_schedule, front=front, stop=stop))
    return _run_pool(requests, limit=limit, budget=budget, mixes=mixes, step=step, decode=decode, arrivals=arrivals,
                     window=window, beams=beams, chunked=chunked, per_schedule=per_schedule, front=front, stop=stop,
                     kv_tokens=kv_tokens, watermark=watermark, output_reserve=output_reserve, stream=stream)


def _run_pool(requests: Sequence[tuple[int, int]], *, limit: int, budget: int | None, mixes: bool,
              step: Callable[[int, int], float], decode: Callable[[int], float], arrivals: Sequence[float] | None,
              window: int | None, beams: int, chunked: bool, per_schedule: int, front: float,
              stop: Callable[[int, float], bool] | None, kv_tokens: int | None, watermark: float,
              output_reserve, stream: float = 0.0) -> Trace:
    """`run`'s general loop, the KV pool's and the front process's books kept (with `kv_tokens` None and no `stream`
    it runs as workload/scheduler_lean.py does: tests/workload/test_scheduler_lean.py compares them)."""
    n = len(requests)
    times = list(arrivals) if arrivals is not None else [0.0] * n
    window = window or n
    bounded = window < n  # a closed loop: a request is sent when one in flight finishes
    outputs = [o for _, o in requests]
    prompts = [i if i > 1 else 1 for i, _ in requests]
    left = list(outputs)  # outputs not yet generated (less after a preemption)
    started, start, epoch = [False] * n, [0] * n, [0] * n  # first token sent; step it joined the decodes; heap tag
    pool = kv_tokens if kv_tokens is not None else math.inf
    reserve = watermark * pool if kv_tokens is not None else 0.0
    used, preempted, live, resumed = 0.0, 0, [], []  # tokens held; preemptions; running by admission; requeued
    kv = kv_tokens is not None  # without a pool nothing blocks admission and no entry goes stale (the planner's runs)
    books = Ledger(output_reserve, outputs) if kv and output_reserve is not None else None
    sent, first, done, order = list(times), [0.0] * n, [0.0] * n, []
    enters = [0.0] * n  # when a request has passed the front end and may be admitted
    last = 0.0  # the front end's previous entry
    proc = FrontProcess(None if bounded else times, enters, front, stream) if stream > 0 else None
    shown = 0.0  # when the latest step's tokens reach their clients (the step's end without a front process)
    if not bounded and proc is None:  # open loop: every request sent at its time, through the front end in order
        for k, t in enumerate(times):
            last = enters[k] = (last if last > t else t) + front  # max(t, last): a plan steps ~10^5 requests
    per_run = max(per_schedule, 1)
    push, pop = heapq.heappush, heapq.heappop
    running: list[tuple[int, int, int]] = []  # heap of (decode step at which it finishes, epoch, request)
    is_running = [False] * n

    def finish() -> None:  # running requests whose last decode step is done; stale (preempted) entries dropped
        nonlocal holding, used
        while running and (running[0][0] <= steps_done or running[0][1] != epoch[running[0][2]]):
            _, tag, k = pop(running)
            if tag != epoch[k]:
                continue
            done[k] = shown
            order.append(k)
            holding -= 1
            is_running[k] = False
            used -= prompts[k] + beams * (steps_done - start[k])
            if books is not None:
                books.stop(k)

    def preempt(k: int) -> None:  # request k leaves the batch, its cache freed; requeued to be recomputed
        nonlocal holding, used, preempted
        made = 1 + steps_done - start[k]  # tokens generated, the first at its prefill
        used -= prompts[k] + beams * (steps_done - start[k])
        prompts[k] += made  # recomputed as one prompt when readmitted
        left[k] -= made
        epoch[k] += 1
        is_running[k] = False
        if books is not None:
            books.stop(k)
        holding -= 1
        preempted += 1
        resumed.append(k)

    def make_room(tokens: int) -> None:  # preempt the latest admitted until the next step's tokens fit
        if books is not None:
            retract(tokens)
            return
        while live and used + tokens * beams > pool and tokens > 1:
            k = live.pop()
            if not is_running[k]:
                continue
            preempt(k)
            tokens -= 1
        finish()

    def retract(tokens: int) -> None:  # the reserve's rule: where the next step does not fit, preempt until its
        # headroom of decode steps for the rest fits (at least one preempted), then set the ratio from those left
        if used + tokens * beams <= pool:
            return
        first_pass = True
        while live and tokens > 1 and (first_pass or used + tokens * beams * books.headroom > pool):
            k = live.pop()
            if not is_running[k]:
                continue
            first_pass = False
            preempt(k)
            tokens -= 1
        finish()
        whole = generated = count = 0
        for k in live:
            if is_running[k]:
                count += 1
                whole += outputs[k]
                generated += outputs[k] - (left[k] - 1 - steps_done + start[k])
        books.retracted(generated, count, whole)

    def blocked(k: int) -> bool:  # its prompt does not fit beside the reserve: it waits for pages to free; in mixed
        # steps the running requests' next tokens are placed first (a step schedules its decodes before new prompts)
        growth = (holding - len(pending)) * beams if mixes else 0
        kept = books.need(steps_done, left[k]) * beams if books is not None else 0.0
        return bool(holding) and used + growth + prompts[k] + kept > pool - reserve
    pending: list[list[int]] = []  # admitted, prompt not done: [request, prompt tokens left]
    # requests are sent and admitted in order: [adm, sent_to) are sent and waiting (open loop: every request is sent
    # at its arrival time, so those of [adm, n) that have arrived)
    adm, sent_to = 0, 0 if bounded else n
    now, steps_done, held, decoding, busy, prefill = 0.0, 0, 0.0, 0.0, 0.0, 0.0
    holding = 0  # sequences held: len(pending) + len(running)
    while adm < n or holding or resumed:
        if not holding and not resumed and bounded and adm == sent_to and times[adm] > now:
            now = times[adm]  # idle until the next sending (closed loop: only with arrival times)
        while bounded and sent_to < n and times[sent_to] <= now and sent_to - adm + holding < window:
            # with arrival times: at its time, or when the finish that frees its slot came (the window-th before it)
            sent[sent_to] = now if arrivals is None else max(times[sent_to], (
                done[order[sent_to - window]] if 0 <= sent_to - window < len(order) else 0.0))
            if proc is None:
                last = enters[sent_to] = max(sent[sent_to], last) + front  # from its sending, not the wake-up
            else:  # the client sends it once it has the last token of the one that finished
                sent[sent_to] = max(sent[sent_to], shown)
                proc.send(sent_to, sent[sent_to])
            sent_to += 1
        if not holding and not resumed and (enters[adm] if proc is None else proc.entry(adm, now)) > now:
            now = enters[adm] if proc is None else proc.entry(adm, now)  # idle until it is through the front end
        boundary = per_run == 1 or not running or steps_done % per_run == 0
        if boundary:
            if books is not None and not holding:
                books.idle()  # nothing running: the reserve's ratio back at its start
            while holding < limit and (resumed or adm < sent_to and (enters[adm] if proc is None
                                                                     else proc.entry(adm, now)) <= now):
                k = resumed[-1] if resumed else adm
                if kv and blocked(k):
                    break
                pending.append([k, prompts[k]])
                used += prompts[k]
                if books is not None:
                    books.admit(k, left[k])
                if resumed:
                    resumed.pop()
                else:
                    adm += 1
                holding += 1
            if books is not None:
                books.new_round()
        batch = holding - len(pending)
        if kv_tokens is not None and batch and (mixes or not pending):
            make_room(batch)
            batch = holding - len(pending)
        if pending and (mixes or boundary):
            room = (budget - (batch * beams if mixes else 0)) if budget else math.inf
            if room < 1:
                room = 1
            chunk = finished = 0
            for entry in pending:
                space = room - chunk
                if space <= 0:
                    break
                take = min(entry[1], space) if chunked else entry[1]
                if take > space and chunk:  # a whole prompt that does not fit waits for the next step
                    break
                chunk += take
                entry[1] -= take
                if entry[1] <= 0:
                    finished += 1
            if mixes:
                dt = step(batch, chunk)
                extra = dt - decode(batch) if batch else dt
                if extra > 0:
                    prefill += extra
            else:
                dt = step(0, chunk)
                prefill += dt
            now += dt
            shown = now if proc is None else proc.stream(now, (batch if mixes else 0) + finished)
            busy += dt
            held += dt * (batch + len(pending))
            if mixes and batch:
                decoding += batch * dt
                used += batch * beams
                steps_done += 1
                if books is not None:
                    books.decoded(1)
                if kv or running and running[0][0] <= steps_done:
                    finish()
            for k, _ in pending[:finished]:  # prompts finish in the order they were taken
                if not started[k]:
                    started[k] = True
                    first[k] = shown
                    if stop is not None and stop(k, shown):
                        return Trace(sent=sent, first=first, done=done, order=order, makespan=now, held=held,
                                     decoding=decoding, busy=busy, prefill=prefill, stopped=True,
                                     preempted=preempted)
                if books is not None:
                    books.start(k, left[k], steps_done)
                if left[k] <= 1:
                    done[k] = shown
                    order.append(k)
                    holding -= 1
                    used -= prompts[k]
                else:
                    start[k] = steps_done
                    is_running[k] = True
                    live.append(k)
                    push(running, (steps_done + left[k] - 1, epoch[k], k))
            del pending[:finished]
            continue
        # decode steps at a constant batch until the next finish, the next admissible arrival or scheduling point
        dt = decode(batch)
        count = running[0][0] - steps_done
        if kv_tokens is not None:  # until the pool cannot take the next step's tokens
            count = min(count, max(int((pool - used) // (batch * beams)), 1))
        nxt: float | None
        if resumed:
            nxt = None if kv and blocked(resumed[-1]) else now
        elif adm < sent_to:  # sent (open loop: due): it may enter at its entry
            nxt = None if kv and blocked(adm) else enters[adm] if proc is None else proc.entry(adm, now)
        elif bounded and sent_to < n and sent_to - adm + holding < window:  # a slot to send the next one
            nxt = max(times[sent_to], now, proc.last if proc is not None else 0.0) + front
        else:
            nxt = None
        if nxt is None and books is not None and (resumed or adm < sent_to) and holding < limit:
            again = books.recheck()  # blocked by the reserve while its ratio falls: tried again a few steps on
            if again is not None and again < count:
                count = again
        if pending or (nxt is not None and holding < limit):
            wait = 0 if pending or nxt <= now else math.ceil((nxt - now) / dt)
            if wait < 1 and not pending:
                wait = 1
            if per_run > 1:
                wait += (-(steps_done + wait)) % per_run  # admitted only between scheduling runs
            if wait < count:
                count = wait
        if count < 1:
            count = 1
        span = count * dt
        shown = now + span if proc is None else proc.stream_run(now, dt, count, batch)
        now += span
        busy += span
        held += span * batch
        decoding += batch * dt * count
        used += batch * beams * count
        steps_done += count
        if books is not None:
            books.decoded(count)
        if kv:
            finish()
        else:  # without a pool nothing goes stale and nothing counts held tokens: the finishes alone, inline (hot)
            while running and running[0][0] <= steps_done:
                k = pop(running)[2]
                done[k] = shown
                order.append(k)
                holding -= 1
                is_running[k] = False
    return Trace(sent=sent, first=first, done=done, order=order, makespan=now if proc is None else max(now, shown),
                 held=held, decoding=decoding, busy=busy, prefill=prefill, preempted=preempted)
