"""The front process of a served engine as one server of two kinds of work, in the order it arrives: taking a request
in (HTTP/JSON, chat template, tokenization, the hand-off to the scheduler: `intake` seconds, ExecutionModel.
request_intake) and streaming an iteration's tokens (detokenizing, building and writing a chunk per running request:
`per_token` seconds each, ExecutionModel.front_floor) — one Python thread (an asyncio event loop) that does both, as
a served engine's HTTP process does where its engine says so (docs/engines.md). workload/scheduler.py asks it when a
request may be admitted (its intake done) and when a step's tokens reach the client (the process has streamed them): a request sent while the process is
streaming earlier iterations waits behind that work, and a token made while the process is still taking a burst in
reaches its client only after the requests ahead of it in the process's queue.

The process's clock `last` is when it has done all the work queued so far: a request sent at t enters the scheduler at
max(t, last) + intake; a step ending at T with m tokens to stream is streamed by max(last, T) + m x per_token. A run of
`count` decode steps of `dt` each, ending at T_1 .. T_count, each with m tokens (s = m x per_token), is streamed by
max(last + count x s, T_count + s, T_1 + count x s) (the first term: the work queued before it; the second: the last
step's own where the process keeps up, s <= dt; the third: where it does not), the requests that arrive during the run
taken in between the steps that ended before them. Open-loop requests (sent at given times) are taken in lazily, each
once every step that ended before its sending is queued, so the order holds without a pass over every request at the
start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["FrontProcess"]


class FrontProcess:
    """One front-end process (module docstring). `times`: the open loop's sending times (None: a closed loop, whose
    requests are sent by `send`); `intake`, `per_token`: its busy time per request taken in and per token streamed."""

    def __init__(self, times: Sequence[float] | None, enters: list[float], intake: float, per_token: float):
        self.times, self.enters, self.intake, self.per_token = times, enters, intake, per_token
        self.last = 0.0  # when the process has done the work queued so far
        self.queued = 0  # open loop: requests [0, queued) taken in (their entries set)

    def send(self, k: int, t: float) -> float:
        """Request `k` sent at `t`: its entry into the scheduler."""
        self.last = self.enters[k] = max(t, self.last) + self.intake
        return self.last

    def _take_in(self, until: float) -> None:  # open loop: the requests sent by `until`, in order
        times = self.times
        if times is None:
            return
        while self.queued < len(times) and times[self.queued] <= until:
            self.send(self.queued, times[self.queued])
            self.queued += 1

    def entry(self, k: int, now: float) -> float:
        """When request `k` enters the scheduler. Open loop: taken in (with those sent before it) once it is sent by
        `now`; one sent later is not queued yet (the steps until its sending come first): its entry were the process
        to stream nothing more (a lower bound, for the scheduler's look-ahead)."""
        times = self.times
        if times is None or k < self.queued:
            return self.enters[k]
        if times[k] <= now:
            self._take_in(times[k])
            return self.enters[k]
        return max(times[k], self.last) + self.intake

    def stream(self, end: float, tokens: float) -> float:
        """A step ending at `end` with `tokens` tokens to stream: when the last of them reaches its client."""
        self._take_in(end)
        self.last = max(self.last, end) + tokens * self.per_token
        return self.last

    def stream_run(self, start: float, dt: float, count: int, tokens: float) -> float:
        """`count` decode steps of `dt` from `start`, each with `tokens` tokens to stream: when the last step's reach
        their clients; requests sent during the run are taken in after the steps that ended before their sending."""
        s = tokens * self.per_token
        done = 0  # steps whose streaming is queued
        times = self.times
        while times is not None and self.queued < len(times) and times[self.queued] <= start + count * dt:
            ended = min(count, max(math.floor((times[self.queued] - start) / dt), 0))
            self._steps(start, dt, done, ended, s)
            done = ended
            self.send(self.queued, times[self.queued])
            self.queued += 1
        self._steps(start, dt, done, count, s)
        return self.last

    def _steps(self, start: float, dt: float, after: int, upto: int, s: float) -> None:
        """Queue the streaming of steps after+1 .. upto (module docstring's closed form)."""
        n = upto - after
        if n > 0:
            self.last = max(self.last + n * s, start + upto * dt + s, start + (after + 1) * dt + n * s)
