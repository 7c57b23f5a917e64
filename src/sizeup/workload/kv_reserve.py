"""The books of an admission rule that keeps KV room for outputs still to come (engines/policies.py OutputReserve),
kept for the step simulator (workload/scheduler.py `reserve`). A request is admitted where the pool holds the tokens
in use, its prompt and its whole output (clipped), those admitted earlier in the same scheduling round whole, and
`ratio` x the outputs every request already held still has to generate (each clipped). The ratio falls by the
rule's decay each decode step to its floor, returns to its start when the engine is idle, and after a preemption
is set from the requests left running: (tokens they generated + ratio_steps x their count) / their whole outputs.

Sums are kept as running totals (the simulator prices runs of decode steps at once): a running request's remaining
output at decode step s is base - s with base = its outputs still to generate at its first token + that step - 1.
Where any output exceeds the clip the running requests are summed one by one instead.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Ledger"]

RECHECK_STEPS = 16
"""Decode steps between admission checks while the ratio still falls (a request blocked by the reserve may fit a
few steps later, before the next finish): a cadence of the simulator, not an engine figure."""


class Ledger:
    """The reserve's state over one simulated run (`rule`: an OutputReserve; `outputs`: each request's output)."""

    __slots__ = ("clip", "decay", "extra", "floor", "headroom", "init", "ratio_steps", "pending", "ratio", "running", "sum_base",
                 "sum_pending", "whole")

    def __init__(self, rule, outputs: Sequence[int]) -> None:
        self.init, self.floor, self.decay = rule.init, min(rule.floor, rule.init), rule.decay
        self.headroom, self.clip = max(int(rule.headroom_steps), 1), int(rule.clip)
        self.ratio_steps = max(int(rule.ratio_steps), 1)
        self.ratio = self.init
        self.whole = not outputs or max(outputs) <= self.clip  # no output clipped: the totals are exact
        self.running: dict[int, int] = {}  # request -> base (remaining output at step s: base - s)
        self.pending: dict[int, int] = {}  # admitted, prompt not done -> its clipped output
        self.sum_base = 0
        self.sum_pending = 0
        self.extra = 0.0  # this round's admissions reserve their outputs whole: the part beyond ratio x output

    def outstanding(self, step: int) -> float:
        """The outputs the held requests still have to generate (each clipped) at decode step `step`."""
        if self.whole:
            run = self.sum_base - len(self.running) * step
        else:
            run = sum(min(max(base - step, 0), self.clip) for base in self.running.values())
        return run + self.sum_pending

    def need(self, step: int, left: int) -> float:
        """Tokens kept beside a new request's prompt: its output whole, the round's, the held ones' x ratio."""
        return min(left, self.clip) + self.extra + self.ratio * self.outstanding(step)

    def admit(self, k: int, left: int) -> None:
        out = min(left, self.clip)
        self.pending[k] = out
        self.sum_pending += out
        self.extra += (1.0 - self.ratio) * out

    def new_round(self) -> None:
        self.extra = 0.0

    def start(self, k: int, left: int, step: int) -> None:
        """Request `k`'s prompt is done at decode step `step` (its first token out), `left` outputs counted from it."""
        self.sum_pending -= self.pending.pop(k, 0)
        if left > 1:
            base = left - 1 + step
            self.running[k] = base
            self.sum_base += base

    def stop(self, k: int) -> None:
        """Request `k` finished or was preempted."""
        base = self.running.pop(k, None)
        if base is not None:
            self.sum_base -= base

    def decoded(self, steps: int) -> None:
        self.ratio = max(self.ratio - steps * self.decay, self.floor)

    def idle(self) -> None:
        self.ratio = self.init

    def retracted(self, generated: int, count: int, whole: int) -> None:
        """After a preemption: `count` requests left running, `generated` of their `whole` outputs made."""
        if count:
            self.ratio = min(1.0, (generated + self.ratio_steps * count) / max(whole, 1))

    def recheck(self) -> int | None:
        """Decode steps after which a blocked admission is tried again while the ratio falls; None: at its floor."""
        return RECHECK_STEPS if self.ratio > self.floor else None
