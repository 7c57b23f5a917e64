"""workload/scheduler.py `run` without a KV pool (`kv_tokens` None: the planner's runs whose pool cannot bind and the
estimate's runs that bound the batch by `limit` alone) and without a streaming front process (`stream` 0), written for
speed: nothing blocks admission, no request is preempted, so no heap entry goes stale and no token is counted held.
It takes the decisions the general loop takes, step for step, and returns the same figures
(tests/workload/test_scheduler_lean.py compares the two on random runs); a change to the scheduling rules goes into
both.

What it drops against the general loop: the pool's books (tokens used, the watermark, the output reserve, preemption
and the requeued requests), the heap's epochs (a heap entry is one integer, the finishing step times n plus the
request: the same order as the general loop's (step, epoch 0, request) tuples), and a step's price is kept by
(batch, prompt tokens) for the run (`step` is a pure function of them, as its callers price it).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from math import ceil

__all__ = ["run_lean"]


def run_lean(requests: Sequence[tuple[int, int]], *, limit: int, budget: int | None, mixes: bool,
             step: Callable[[int, int], float], decode: Callable[[int], float], arrivals: Sequence[float] | None,
             window: int | None, beams: int, chunked: bool, per_schedule: int, front: float,
             stop: Callable[[int, float], bool] | None) -> dict:
    """workload/scheduler.py `run` with `kv_tokens` None: its arguments, the Trace's fields as a dict."""
    n = len(requests)
    times = list(arrivals) if arrivals is not None else [0.0] * n
    window = window or n
    bounded = window < n  # a closed loop: a request is sent when one in flight finishes
    sent, first, done, order = list(times), [0.0] * n, [0.0] * n, []
    enters = [0.0] * n  # when a request has passed the front end and may be admitted
    last = 0.0
    if not bounded:
        for k, t in enumerate(times):
            last = enters[k] = (last if last > t else t) + front
    per_run = max(per_schedule, 1)
    every = per_run == 1
    append = order.append
    # (decode step at which it finishes) * n + request, smallest first: a heap; where every request is alike (the
    # planner's runs) the requests are pushed in that order (prompts finish in admission order, the step count never
    # falls), so a queue holds them in heap order at less cost
    if n and requests.count(requests[0]) == n:
        running, push, pop = deque(), deque.append, deque.popleft
    else:
        running, push, pop = [], heapq.heappush, heapq.heappop
    priced: dict = {}  # by chunk * (limit + 1) + batch (batch <= limit): (step, what it adds to the decodes) / step
    span_key = limit + 1
    pending: list[list[int]] = []  # admitted, prompt not done: [request, prompt tokens left]
    adm, sent_to = 0, 0 if bounded else n
    now, steps_done, held, decoding, busy, prefill = 0.0, 0, 0.0, 0.0, 0.0, 0.0
    holding = npend = 0  # admitted requests; of them, those whose prompt is not done (len(pending))
    inf = math.inf
    while adm < n or holding:
        if bounded:
            if not holding and adm == sent_to and times[adm] > now:
                now = times[adm]
            while sent_to < n and times[sent_to] <= now and sent_to - adm + holding < window:
                # with arrival times: at its time, or when the finish that frees its slot came (the window-th before it)
                sent[sent_to] = now if arrivals is None else max(times[sent_to], (
                    done[order[sent_to - window]] if 0 <= sent_to - window < len(order) else 0.0))
                last = enters[sent_to] = max(sent[sent_to], last) + front  # from its sending, not the wake-up
                sent_to += 1
        if not holding and enters[adm] > now:
            now = enters[adm]
        boundary = every or not running or steps_done % per_run == 0
        if boundary:
            while holding < limit and adm < sent_to and enters[adm] <= now:
                tokens = requests[adm][0]
                pending.append([adm, tokens if tokens > 1 else 1])
                adm += 1
                holding += 1
                npend += 1
        batch = holding - npend
        if npend and (mixes or boundary):
            if npend == 1:  # one prompt (the planner's usual step): the loop below, unrolled
                entry = pending[0]
                left = entry[1]
                if chunked:
                    room = (budget - (batch * beams if mixes else 0)) if budget else inf
                    if room < 1:
                        room = 1
                    chunk = left if left <= room else room
                else:
                    chunk = left
                left -= chunk
                entry[1] = left
                finished = 1 if left <= 0 else 0
            else:
                room = (budget - (batch * beams if mixes else 0)) if budget else inf
                if room < 1:
                    room = 1
                chunk = finished = 0
                for entry in pending:
                    space = room - chunk
                    if space <= 0:
                        break
                    take = min(entry[1], space) if chunked else entry[1]
                    if take > space and chunk:
                        break
                    chunk += take
                    entry[1] -= take
                    if entry[1] <= 0:
                        finished += 1
            if mixes:
                key = chunk * span_key + batch
                got = priced.get(key)
                if got is None:
                    dt = step(batch, chunk)
                    got = priced[key] = (dt, dt - decode(batch) if batch else dt)
                dt, extra = got
                if extra > 0:
                    prefill += extra
            else:
                key = chunk * span_key
                dt = priced.get(key)
                if dt is None:
                    dt = priced[key] = step(0, chunk)
                prefill += dt
            now += dt
            busy += dt
            held += dt * holding  # the decodes and the prompts: batch + len(pending)
            if mixes and batch:
                decoding += batch * dt
                steps_done += 1
                top = (steps_done + 1) * n
                while running and running[0] < top:
                    k = pop(running) % n
                    done[k] = now
                    append(k)
                    holding -= 1
            if not finished:
                continue
            base = steps_done * n - n
            taken = pending if finished == npend else pending[:finished]
            for k, _ in taken:
                first[k] = now
                if stop is not None and stop(k, now):
                    return dict(sent=sent, first=first, done=done, order=order, makespan=now, held=held,
                                decoding=decoding, busy=busy, prefill=prefill, stopped=True, preempted=0)
                out = requests[k][1]
                if out <= 1:
                    done[k] = now
                    append(k)
                    holding -= 1
                else:
                    push(running, base + out * n + k)
            if taken is pending:
                pending = []
            else:
                del pending[:finished]
            npend -= finished
            continue
        dt = decode(batch)
        count = running[0] // n - steps_done
        if npend:  # prompts wait for the next scheduling point (steps per schedule)
            wait = (-steps_done) % per_run if per_run > 1 else 0
            if wait < count:
                count = wait
        elif holding < limit and (adm < sent_to or bounded and sent_to < n and sent_to - adm + holding < window):
            # the next request sent (open loop: due) may enter at its entry; a free slot of the closed loop sends one
            nxt = enters[adm] if adm < sent_to else max(times[sent_to], now) + front
            wait = 1 if nxt <= now else ceil((nxt - now) / dt)
            if wait < 1:
                wait = 1
            if per_run > 1:
                wait += (-(steps_done + wait)) % per_run
            if wait < count:
                count = wait
        if count < 1:
            count = 1
        span = count * dt
        now += span
        busy += span
        held += span * batch
        decoding += batch * dt * count
        steps_done += count
        top = (steps_done + 1) * n
        while running and running[0] < top:
            k = pop(running) % n
            done[k] = now
            append(k)
            holding -= 1
    return dict(sent=sent, first=first, done=done, order=order, makespan=now, held=held, decoding=decoding,
                busy=busy, prefill=prefill, preempted=0)
