"""An admission rule that keeps KV room for outputs to come (workload/kv_reserve.py Ledger, stepped by
workload/scheduler.py `output_reserve`). Step prices as tests/workload/test_scheduler_preempt.py: a decode step of b
sequences takes 0.1 + 0.001 b s, a step with p prompt tokens 0.1 + 0.001 b + 0.01 p s."""

from __future__ import annotations

import pytest

from sizeup.engines.policies import OutputReserve
from sizeup.workload.kv_reserve import Ledger
from sizeup.workload.scheduler import run


def decode(b: int) -> float:
    return 0.1 + 0.001 * b


def step(b: int, p: int) -> float:
    return 0.1 + 0.001 * b + 0.01 * p


def test_a_new_request_keeps_its_whole_output_and_the_held_ones_a_ratio_of_theirs():
    books = Ledger(OutputReserve(init=0.5, floor=0.1, decay_steps=4), [10, 20, 30])
    books.admit(0, 10)
    assert books.need(0, 20) == pytest.approx(20 + 10)  # admitted this round: its output whole
    books.new_round()
    assert books.need(0, 20) == pytest.approx(20 + 0.5 * 10)  # a later round: ratio x its output
    books.start(0, 10, 0)  # first token out at step 0: 9 left
    assert books.outstanding(0) == 9 and books.outstanding(5) == 4
    books.stop(0)
    assert books.outstanding(5) == 0


def test_the_ratio_falls_per_decode_step_to_its_floor_and_returns_when_idle():
    books = Ledger(OutputReserve(init=0.7, floor=0.1, decay_steps=600), [5])
    books.decoded(300)
    assert books.ratio == pytest.approx(0.4)
    assert books.recheck() is not None
    books.decoded(10_000)
    assert books.ratio == pytest.approx(0.1) and books.recheck() is None
    books.idle()
    assert books.ratio == pytest.approx(0.7)


def test_after_a_preemption_the_ratio_is_set_from_the_requests_kept():
    books = Ledger(OutputReserve(init=0.7, floor=0.1, decay_steps=600, headroom_steps=20), [100, 100])
    books.retracted(generated=60, count=2, whole=200)  # (60 + 20 x 2) / 200
    assert books.ratio == pytest.approx(0.5)
    books.retracted(generated=190, count=2, whole=200)
    assert books.ratio == 1.0
    # 0.5.2 on: retract until one step fits, but the new ratio still allows 20 steps a kept request
    late = Ledger(OutputReserve(init=0.7, floor=0.1, decay_steps=600, headroom_steps=1, ratio_steps=20), [100, 100])
    late.retracted(generated=60, count=2, whole=200)
    assert late.ratio == pytest.approx(0.5) and late.headroom == 1


def test_outputs_are_clipped_in_the_reserve():
    books = Ledger(OutputReserve(init=1.0, floor=1.0, decay_steps=1, clip=100), [1000, 50])
    assert books.need(0, 1000) == 100
    books.admit(0, 1000)
    books.new_round()
    books.start(0, 1000, 0)
    assert books.outstanding(0) == 100 and books.outstanding(950) == 49


def test_a_prompt_that_fits_waits_while_the_outputs_do_not():
    requests = [(10, 10), (10, 10)]
    prompts_only = run(requests, limit=8, budget=None, mixes=False, step=step, decode=decode, kv_tokens=30)
    rule = OutputReserve(init=1.0, floor=1.0, decay_steps=1)
    kept = run(requests, limit=8, budget=None, mixes=False, step=step, decode=decode, kv_tokens=30,
               output_reserve=rule)
    assert prompts_only.first[1] == pytest.approx(prompts_only.first[0])  # both prompts in the first step
    assert kept.first[1] >= kept.done[0]  # 10 + 10 held and 10 kept for request 0's output: request 1 waits
    assert kept.preempted == 0


def test_a_falling_ratio_admits_a_request_before_the_running_one_finishes():
    # request 0 (10 in, 40 out) runs in a pool of 45; request 1 (10 in, 5 out) needs its 15 tokens beside request
    # 0's held tokens and ratio x its remaining output: at a ratio held at 0.7 that never fits before request 0 ends
    # (52 + 0.3 s tokens at decode step s); falling to 0.1 over 10 steps it fits after about 10 steps
    requests = [(10, 40), (10, 5)]
    common = dict(limit=8, budget=None, mixes=False, step=step, decode=decode, kv_tokens=45)
    held = run(requests, output_reserve=OutputReserve(init=0.7, floor=0.7, decay_steps=10), **common)
    falls = run(requests, output_reserve=OutputReserve(init=0.7, floor=0.1, decay_steps=10), **common)
    assert held.first[1] >= held.done[0]
    assert falls.first[1] < falls.done[0]


def test_every_request_finishes_once_when_the_reserve_preempts():
    requests = [(50, 60 + 5 * (k % 4)) for k in range(16)]
    rule = OutputReserve(init=0.0, floor=0.0, decay_steps=1, headroom_steps=20)
    trace = run(requests, limit=16, budget=None, mixes=True, step=step, decode=decode, kv_tokens=1000,
                output_reserve=rule)
    assert len(trace.order) == 16 and sorted(trace.order) == list(range(16))
    assert all(d >= f for d, f in zip(trace.done, trace.first))


def test_without_a_pool_the_rule_changes_nothing():
    requests = [(40 + 7 * k, 5 + 3 * k) for k in range(12)]
    plain = run(requests, limit=4, budget=64, mixes=True, step=step, decode=decode)
    ruled = run(requests, limit=4, budget=64, mixes=True, step=step, decode=decode,
                output_reserve=OutputReserve(init=0.7, floor=0.1, decay_steps=600))
    assert ruled.done == pytest.approx(plain.done)
