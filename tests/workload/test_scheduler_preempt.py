"""A preempting engine's KV pool in the step simulator (workload/scheduler.py `kv_tokens`): requests admitted on
their prompts' tokens, the latest admitted preempted when the next decode step's tokens do not fit, recomputed
(prompt + generated tokens) when readmitted. Step prices as tests/workload/test_scheduler.py: a decode step of b
sequences takes 0.1 + 0.001 b s, a step with p prompt tokens 0.1 + 0.001 b + 0.01 p s."""

from __future__ import annotations

import pytest

from sizeup.workload.scheduler import run


def decode(b: int) -> float:
    return 0.1 + 0.001 * b


def step(b: int, p: int) -> float:
    return 0.1 + 0.001 * b + 0.01 * p


def test_a_pool_that_holds_everything_changes_nothing():
    requests = [(40 + 7 * k, 5 + 3 * k) for k in range(12)]
    plain = run(requests, limit=4, budget=64, mixes=True, step=step, decode=decode)
    pooled = run(requests, limit=4, budget=64, mixes=True, step=step, decode=decode, kv_tokens=10**9)
    assert pooled.done == pytest.approx(plain.done) and pooled.first == pytest.approx(plain.first)
    assert pooled.preempted == 0


def test_the_latest_admitted_is_preempted_and_recomputed_when_the_pool_runs_out():
    # two prompts of 4 tokens fit a pool of 10 (8 held); after one decode step (2 more tokens) the pool is full, so
    # the next step preempts request 1 (admitted last): its 4 + 1 tokens freed, its prompt and the 2 tokens it made
    # (6) computed again once request 0 has finished and freed its pages
    trace = run([(4, 5), (4, 5)], limit=8, budget=None, mixes=False, step=step, decode=decode, kv_tokens=10)
    prompt = step(0, 8)
    assert trace.preempted == 1
    assert trace.first == pytest.approx([prompt, prompt])  # its first token was sent before the preemption
    assert trace.done[0] == pytest.approx(prompt + decode(2) + 3 * decode(1))
    # readmitted after request 0: a prompt step of 4 + 2 tokens (its third token), then 2 decode steps alone
    assert trace.done[1] == pytest.approx(trace.done[0] + step(0, 6) + 2 * decode(1))
    assert trace.order == [0, 1]


def test_the_watermark_keeps_a_share_of_the_pool_free_at_admission():
    requests = [(10, 2)] * 4
    free = run(requests, limit=8, budget=None, mixes=False, step=step, decode=decode, kv_tokens=40)
    kept = run(requests, limit=8, budget=None, mixes=False, step=step, decode=decode, kv_tokens=40, watermark=0.1)
    assert free.first[3] == pytest.approx(free.first[0])  # all four prompts (40 tokens) in the first step
    assert kept.first[3] > kept.first[0]  # 4 free tokens kept: the fourth prompt waits


def test_every_request_finishes_once_however_often_the_pool_preempts():
    requests = [(50, 60)] * 16
    thrash = run(requests, limit=16, budget=None, mixes=True, step=step, decode=decode, kv_tokens=1000)
    assert thrash.preempted > 0
    assert all(d >= f for d, f in zip(thrash.done, thrash.first))
    assert len(thrash.order) == 16 and sorted(thrash.order) == list(range(16))


def test_in_mixed_steps_the_running_requests_next_tokens_come_before_a_new_prompt():
    # request 0 runs holding 5 of a 9-token pool when request 1 (a 4-token prompt) arrives: its prompt fits what is
    # free (4) but not beside request 0's next token, so it waits for request 0 to finish rather than preempt it
    trace = run([(4, 5), (4, 5)], arrivals=[0.0, 0.15], limit=8, budget=None, mixes=True, step=step, decode=decode,
                kv_tokens=9)
    assert trace.preempted == 0
    assert trace.done[0] == pytest.approx(step(0, 4) + 4 * decode(1))
    assert trace.first[1] == pytest.approx(trace.done[0] + step(0, 4))
